//! The partial value of `JsonStream`, kept as one `serde_json::Value` tree that grows in place,
//! and the rule of what it shows: a container joins the visible tree when it starts as an object
//! member's value (or is the root), and as an array element once it is complete or, for an
//! object, once it has a member. Until then it is built aside in its frame.

use serde_json::{Map, Value};

/// The open objects and arrays, and the root once it is complete.
#[derive(Debug, Default)]
pub(super) struct Tree {
    /// The open containers, the root first.
    frames: Vec<Frame>,
    root: Option<Value>,
    /// The visible value changed since the caller last took this flag.
    pub(super) changed: bool,
    /// Units of work done: containers walked and key bytes copied (the parser adds the bytes it
    /// reads); the linearity test reads it.
    pub(super) work: u64,
}

#[derive(Debug)]
struct Frame {
    object: bool,
    /// Offset of the bracket, for messages.
    at: usize,
    /// The key of the member being read (objects).
    key: String,
    /// That key was already in the object, so its member is not the last entry.
    dup: bool,
    /// The container while it is not part of its parent yet (the root, or an array element not
    /// shown yet); `None` once it is (then it is the parent's current member or last element).
    own: Option<Value>,
}

impl Tree {
    /// The visible value: `None` before the root opens.
    pub(super) fn partial(&self) -> Option<&Value> {
        match self.frames.first() {
            Some(root) => root.own.as_ref(),
            None => self.root.as_ref(),
        }
    }

    /// The root, once it is complete.
    pub(super) fn complete(&self) -> Option<&Value> {
        self.root.as_ref()
    }

    pub(super) fn depth(&self) -> usize {
        self.frames.len()
    }

    /// Whether the innermost open container is an object.
    pub(super) fn in_object(&self) -> bool {
        self.frames.last().is_some_and(|f| f.object)
    }

    /// The open containers, innermost first: whether each is an object, and where it started.
    pub(super) fn open_containers(&self) -> impl Iterator<Item = (bool, usize)> + '_ {
        self.frames.iter().rev().map(|f| (f.object, f.at))
    }

    /// The key of the next member of the innermost object.
    pub(super) fn set_key(&mut self, key: String) {
        if let Some(frame) = self.frames.last_mut() {
            frame.key = key;
        }
    }

    /// Opens an object or array at byte `at`, as the root or in the innermost container.
    pub(super) fn open(&mut self, object: bool, at: usize) {
        let empty = if object { Value::Object(Map::new()) } else { Value::Array(Vec::new()) };
        let own = match self.frames.last().map(|f| f.object) {
            // The root is shown at once, and so is an object member's value.
            None => {
                self.changed = true;
                Some(empty)
            }
            Some(true) => {
                self.put(empty);
                None
            }
            // An array element is shown once complete (or, for an object, once it has a member).
            Some(false) => Some(empty),
        };
        self.frames.push(Frame { object, at, key: String::new(), dup: false, own });
    }

    /// Closes the innermost container: `true` if that was the root.
    pub(super) fn close(&mut self) -> bool {
        let Some(frame) = self.frames.pop() else { return false };
        match frame.own {
            Some(value) if self.frames.is_empty() => {
                self.root = Some(value);
                return true;
            }
            Some(value) => self.put(value),
            None => {}
        }
        false
    }

    /// Puts a value in the innermost container: the member under its key, or the next element.
    pub(super) fn put(&mut self, value: Value) {
        let key = match self.frames.last() {
            Some(frame) if frame.object => {
                self.work += frame.key.len() as u64;
                frame.key.clone()
            }
            Some(_) => String::new(),
            None => return,
        };
        let Some((container, visible)) = walk(&mut self.frames, false, &mut self.work) else { return };
        let mut dup = false;
        match container {
            Value::Object(map) => {
                dup = map.contains_key(&key);
                map.insert(key, value);
            }
            Value::Array(array) => array.push(value),
            _ => return,
        }
        self.changed |= visible;
        let n = self.frames.len();
        let Some(frame) = self.frames.last_mut() else { return };
        frame.dup = dup;
        // An object in an array is shown from its first member on: it joins the array now.
        if frame.object && n > 1 {
            if let Some(object) = frame.own.take() {
                if let Some((Value::Array(array), visible)) = walk(&mut self.frames[..n - 1], false, &mut self.work) {
                    array.push(object);
                    self.changed |= visible;
                }
            }
        }
    }

    /// Appends text to the string that is the innermost object's current member.
    pub(super) fn append(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.work += text.len() as u64;
        if let Some((Value::String(s), visible)) = walk(&mut self.frames, true, &mut self.work) {
            s.push_str(text);
            self.changed |= visible;
        }
    }

    /// The elements of the root array, or of the root object's array member `key`, that are
    /// complete, from index `from` on.
    pub(super) fn completed_elements(&self, key: Option<&str>, from: usize) -> (Vec<Value>, usize) {
        let (array, depth) = match (self.partial(), key) {
            (Some(Value::Array(a)), _) => (a, 0),
            (Some(Value::Object(m)), Some(key)) => match m.get(key) {
                Some(Value::Array(a)) => (a, 1),
                _ => return (Vec::new(), from),
            },
            _ => return (Vec::new(), from),
        };
        // The array's frame, if it is still open: the root, or the root's current member.
        let open = match self.frames.get(depth) {
            Some(frame) if depth == 0 => !frame.object,
            Some(frame) => !frame.object && self.frames.first().is_some_and(|root| Some(root.key.as_str()) == key),
            None => false,
        };
        // The last element is still being read when its frame has joined the array.
        let reading = open && self.frames.get(depth + 1).is_some_and(|f| f.own.is_none());
        let complete = array.len().saturating_sub(reading as usize);
        let new = array.get(from..complete).map(<[Value]>::to_vec).unwrap_or_default();
        (new, from.max(complete))
    }
}

/// The innermost container (with `member`, its current member or last element), and whether it
/// is part of the visible value: walked down from the innermost container that is not part of
/// its parent yet.
fn walk<'a>(frames: &'a mut [Frame], member: bool, work: &mut u64) -> Option<(&'a mut Value, bool)> {
    let from = frames.iter().rposition(|f| f.own.is_some())?;
    let (below, above) = frames.split_at_mut(from + 1);
    let Frame { own, key, dup, .. } = below.last_mut()?;
    let mut node = own.as_mut()?;
    let (mut key, mut dup): (&str, bool) = (key, *dup);
    for frame in above.iter() {
        *work += 1;
        node = child(node, key, dup)?;
        (key, dup) = (&frame.key, frame.dup);
    }
    if member {
        node = child(node, key, dup)?;
    }
    Some((node, from == 0))
}

/// A container's current member (the last one, unless its key was a duplicate) or last element.
fn child<'a>(node: &'a mut Value, key: &str, dup: bool) -> Option<&'a mut Value> {
    match node {
        Value::Array(array) => array.last_mut(),
        // With serde_json's `preserve_order` the last entry is the one inserted last.
        Value::Object(map) => {
            if dup {
                map.get_mut(key)
            } else {
                map.values_mut().next_back()
            }
        }
        _ => None,
    }
}
