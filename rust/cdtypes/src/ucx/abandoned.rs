//! Requests dropped while pending: kept, with their memory, until they completed.
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cdtypes_sys as sys;

#[derive(Clone, Copy)]
pub(super) struct RawReq(pub(super) sys::cdt_ucx_request);
// SAFETY: cdt_ucx.h: every function may be called from any thread
unsafe impl Send for RawReq {}

/// Requests dropped while pending, each with the memory the library may still use (a send's
/// packed form and value, a receive's state). A request is freed, and its memory with it,
/// once it completed; the memory of one still pending when the worker is destroyed is dropped
/// after the worker (UCX reads it no more).
#[derive(Default)]
pub(super) struct Abandoned(Mutex<Vec<(RawReq, Box<dyn Send>)>>);

impl Abandoned {
    fn list(&self) -> std::sync::MutexGuard<'_, Vec<(RawReq, Box<dyn Send>)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn push(&self, req: RawReq, keep: Box<dyn Send>) {
        self.sweep();
        self.list().push((req, keep));
    }

    /// Free the requests that completed; whether none is left.
    pub(super) fn sweep(&self) -> bool {
        let mut list = self.list();
        list.retain(|(req, _)| {
            // SAFETY: a valid request, freed once (it leaves the list)
            unsafe {
                if sys::cdt_ucx_request_test(req.0) == sys::CDT_INPROGRESS {
                    return true;
                }
                sys::cdt_ucx_request_free(req.0);
            }
            false
        });
        list.is_empty()
    }

    /// Progress until every request completed, at most `limit`.
    pub(super) fn settle(&self, limit: Duration) {
        let start = Instant::now();
        while !self.sweep() && start.elapsed() < limit {
            std::thread::yield_now();
        }
    }

    pub(super) fn take(&self) -> Vec<(RawReq, Box<dyn Send>)> {
        std::mem::take(&mut *self.list())
    }
}
