//! Tasks that other pages on the same storage run (SPEC §21.2). A page hears of them through
//! its memory's watchers (another tab's task records) and tells the manager here, so that its
//! `untilIdle` streams on that thread wait for them and get their ends; each end is answered
//! (a continuation) by the one page that claimed it, and only shown by the others.

use super::manager::Manager;
use super::task::{TaskEvent, TaskEventKind, TaskRecord};
use crate::core::env::LocalFuture;

impl Manager {
    /// A task record another page wrote. Still going: remembered. Ended: forgotten, and its end
    /// published to this page's listeners of its scope; `answered_here` says whether this page
    /// answers it (an `untilIdle` continuation) or only shows it. Tasks this manager runs are
    /// ignored (it knows them better).
    pub fn note_foreign(&self, task: TaskRecord, answered_here: bool) {
        {
            let mut st = self.state.borrow_mut();
            if st.tasks.iter().any(|e| e.record.id == task.id) {
                return;
            }
            st.foreign.retain(|t| t.id != task.id);
            if !task.status.is_terminal() {
                st.foreign.push(task);
                return;
            }
        }
        let kind = TaskEventKind::Ended { status: task.status, completed_at: task.completed_at.clone().unwrap_or_default(), result: task.result.clone(), error: task.error.clone() };
        let mut event = TaskEvent::of(&task, kind);
        event.answered_elsewhere = !answered_here;
        self.publish_event(&task, event);
    }

    /// The tasks other pages run, of one thread (or all).
    pub fn foreign(&self, thread_id: Option<&str>) -> Vec<TaskRecord> {
        self.state.borrow().foreign.iter().filter(|t| thread_id.is_none_or(|id| t.thread_id.as_deref() == Some(id))).cloned().collect()
    }

    /// Claims the answer to a task's end for this page (see `TaskRuntime::claim`).
    pub fn claim(&self, task_id: &str) -> LocalFuture<'static, bool> {
        self.runtime.claim(task_id)
    }
}
