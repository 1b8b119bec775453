//! Rust objects behind JavaScript ones, by number. A JavaScript object made here reports its
//! number through a hidden method (`__storeId`, `__memoryId`, `__agentRef`), so an object handed
//! back from JavaScript (`new Memory({ storage })`, `new Agent({ memory, agents })`) finds its Rust
//! side. Entries whose object is gone are dropped at the next registration.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use js_sys::{Function, Reflect};
use wasm_bindgen::{JsCast, JsValue};

pub struct Registry<T: ?Sized> {
    items: RefCell<Vec<(u32, Weak<T>)>>,
    next: Cell<u32>,
}

impl<T: ?Sized> Registry<T> {
    pub const fn new() -> Self {
        Registry { items: RefCell::new(Vec::new()), next: Cell::new(1) }
    }

    /// A number for an object about to be made (it keeps it, then `insert`s itself).
    pub fn reserve(&self) -> u32 {
        self.next.replace(self.next.get() + 1)
    }

    pub fn insert(&self, id: u32, item: &Rc<T>) {
        let mut items = self.items.borrow_mut();
        items.retain(|(_, w)| w.strong_count() > 0);
        items.push((id, Rc::downgrade(item)));
    }

    /// Registers `item`; returns the number its JavaScript object reports.
    pub fn add(&self, item: &Rc<T>) -> u32 {
        let id = self.reserve();
        self.insert(id, item);
        id
    }

    /// The Rust object behind `obj`, when `obj` reports a number (through its method `method`)
    /// this registry holds a live object for.
    pub fn lookup(&self, obj: &JsValue, method: &str) -> Option<Rc<T>> {
        if !obj.is_object() {
            return None;
        }
        let f = Reflect::get(obj, &method.into()).ok()?.dyn_into::<Function>().ok()?;
        let id = f.call0(obj).ok()?.as_f64()? as u32;
        self.items.borrow().iter().find(|(i, _)| *i == id).and_then(|(_, w)| w.upgrade())
    }
}

impl<T: ?Sized> Default for Registry<T> {
    fn default() -> Self {
        Self::new()
    }
}
