//! Pending sends and receives: test, wait, cancel, and what dropping one does.
use std::any::Any;
use std::marker::PhantomData;
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

use cdtypes_sys as sys;

use crate::error::{check, Error, Result};
use crate::object::{RecvState, SendObj};
use crate::pack::Unpack;

use super::abandoned::RawReq;
use super::endpoint::EndpointInner;
use super::ms;
use super::worker::{RecvInfo, WorkerInner};

/// A pending send that owns its value. It keeps its endpoint open. Dropped while pending,
/// the send still goes out: the endpoint keeps the value until the send completed, and waits
/// for it (up to 5 s) before it closes.
pub struct SendRequest<V> {
    // NULL once complete
    pub(super) raw: sys::cdt_ucx_request,
    // the packed form, dropped before the value it points into
    pub(super) obj: Option<SendObj<'static>>,
    pub(super) value: Option<Box<dyn Any + Send>>,
    pub(super) endpoint: Arc<EndpointInner>,
    pub(super) _value: PhantomData<fn() -> V>,
}

// SAFETY: the request may be completed from any thread; the value is Send (isend)
unsafe impl<V: Send> Send for SendRequest<V> {}

impl<V> SendRequest<V> {
    fn done(&mut self, rc: i32) -> Result<bool> {
        if rc == sys::CDT_INPROGRESS {
            return Ok(false);
        }
        if rc == sys::CDT_ERR_TIMEOUT {
            return Err(Error::from_code(rc)); // still pending
        }
        // SAFETY: completed: freed once
        unsafe { sys::cdt_ucx_request_free(self.raw) };
        self.raw = ptr::null_mut();
        self.obj = None;
        if rc != sys::CDT_SUCCESS {
            // whom, over what (cdt_ucx_ep_describe)
            let ep = super::Endpoint {
                inner: self.endpoint.clone(),
            };
            return Err(ep.failed_send(rc));
        }
        Ok(true)
    }

    /// Progress once; `Ok(true)` when the send completed, `Ok(false)` while pending.
    pub fn test(&mut self) -> Result<bool> {
        if self.raw.is_null() {
            return Ok(true);
        }
        // SAFETY: valid pending request
        let rc = unsafe { sys::cdt_ucx_request_test(self.raw) };
        self.done(rc)
    }

    /// Wait until the send completes (`CDT_ERR_TIMEOUT`: still pending).
    pub fn wait(&mut self, timeout: Option<Duration>) -> Result<()> {
        if self.raw.is_null() {
            return Ok(());
        }
        // SAFETY: valid pending request
        let rc = unsafe { sys::cdt_ucx_request_wait(self.raw, ms(timeout)) };
        self.done(rc).map(|_| ())
    }

    /// Whether the send has completed (successfully or not).
    pub fn is_complete(&self) -> bool {
        self.raw.is_null()
    }

    /// The value back, once the send completed; `Err(self)` while pending.
    pub fn into_value(mut self) -> std::result::Result<V, Self>
    where
        V: 'static,
    {
        if !self.raw.is_null() {
            return Err(self);
        }
        self.obj = None;
        let value = self.value.take().expect("the value is taken once");
        Ok(*value.downcast::<V>().expect("the value isend boxed"))
    }
}

impl<V> Drop for SendRequest<V> {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        // SAFETY: valid request; progress a last time
        if unsafe { sys::cdt_ucx_request_test(self.raw) } == sys::CDT_INPROGRESS {
            // still read by the library: the endpoint frees it once it completed
            let keep = Box::new((self.obj.take(), self.value.take()));
            self.endpoint.abandoned.push(RawReq(self.raw), keep);
            return;
        }
        // SAFETY: completed; the value and its packed form go with self
        unsafe { sys::cdt_ucx_request_free(self.raw) };
    }
}

/// A pending receive of a `T`. It keeps its worker alive. Dropping it while pending cancels
/// it; a receive that already matched a message and is still arriving is handed to the worker,
/// which frees it (and its memory) once it completed.
pub struct RecvRequest<T> {
    pub(super) raw: sys::cdt_ucx_request,
    pub(super) state: *mut RecvState,
    pub(super) info: Option<RecvInfo>,
    pub(super) worker: Arc<WorkerInner>,
    pub(super) _value: PhantomData<fn() -> T>,
}

// SAFETY: the request may be completed from any thread; the state is owned
unsafe impl<T> Send for RecvRequest<T> {}

impl<T: Unpack> RecvRequest<T> {
    fn complete(&mut self, rc: i32) -> Result<T> {
        let mut info = sys::cdt_ucx_recv_info {
            field_mask: sys::CDT_UCX_RECV_INFO_ALL as u64,
            ..Default::default()
        };
        // SAFETY: the request completed: read, freed once; the state is ours again
        let state = unsafe {
            if rc == sys::CDT_SUCCESS {
                sys::cdt_ucx_request_recv_info(self.raw, &mut info);
            }
            sys::cdt_ucx_request_free(self.raw);
            self.raw = ptr::null_mut();
            Box::from_raw(std::mem::replace(&mut self.state, ptr::null_mut()))
        };
        if rc != sys::CDT_SUCCESS {
            return Err(match &state.error {
                Some(e) if e.code() == rc => e.clone(),
                _ => Error::from_code(rc),
            });
        }
        self.info = Some(info.into());
        state.into_value()
    }

    fn taken() -> Error {
        Error::with_detail(sys::CDT_ERR_INVALID_ARG, "the receive already completed")
    }

    /// Progress once; `Ok(Some(value))` when it completed, `Ok(None)` while pending.
    pub fn test(&mut self) -> Result<Option<T>> {
        if self.raw.is_null() {
            return Err(Self::taken());
        }
        // SAFETY: valid pending request
        let rc = unsafe { sys::cdt_ucx_request_test(self.raw) };
        if rc == sys::CDT_INPROGRESS {
            return Ok(None);
        }
        self.complete(rc).map(Some)
    }

    /// Wait for the value (`CDT_ERR_TIMEOUT`: still pending, wait or cancel again).
    pub fn wait(&mut self, timeout: Option<Duration>) -> Result<T> {
        if self.raw.is_null() {
            return Err(Self::taken());
        }
        // SAFETY: valid pending request
        let rc = unsafe { sys::cdt_ucx_request_wait(self.raw, ms(timeout)) };
        if rc == sys::CDT_ERR_TIMEOUT {
            return Err(Error::from_code(rc));
        }
        self.complete(rc)
    }
}

impl<T> RecvRequest<T> {
    /// Cancel a receive that has not matched yet (it then completes with
    /// `CDT_ERR_CANCELED`); `CDT_ERR_BUSY` when it has matched.
    pub fn cancel(&mut self) -> Result<()> {
        if self.raw.is_null() {
            return Ok(());
        }
        // SAFETY: valid request
        check(unsafe { sys::cdt_ucx_request_cancel(self.raw) })
    }

    /// What the receive matched, once it completed successfully.
    pub fn info(&self) -> Option<RecvInfo> {
        self.info
    }
}

impl<T> Drop for RecvRequest<T> {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        // SAFETY: valid request; freed only once complete, the state (ours: boxed in irecv)
        // only with it
        unsafe {
            sys::cdt_ucx_request_cancel(self.raw);
            let state = Box::from_raw(self.state);
            if sys::cdt_ucx_request_test(self.raw) == sys::CDT_INPROGRESS {
                // matched and still arriving into the state's memory
                self.worker.abandoned.push(RawReq(self.raw), state);
                return;
            }
            sys::cdt_ucx_request_free(self.raw);
        }
    }
}
