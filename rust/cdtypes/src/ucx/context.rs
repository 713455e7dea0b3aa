//! The UCX context, the protocol choice and the worker's options.
use std::ptr;
use std::sync::Arc;

use cdtypes_sys as sys;

use crate::error::{check, Result};
use crate::object::Limits;

use super::abandoned::Abandoned;
use super::worker::{Worker, WorkerInner};

pub(super) struct ContextInner(sys::cdt_ucx_context);
// SAFETY: cdt_ucx.h: every function may be called from any thread
unsafe impl Send for ContextInner {}
unsafe impl Sync for ContextInner {}
impl Drop for ContextInner {
    fn drop(&mut self) {
        // SAFETY: every worker holds an Arc to this, so all are destroyed
        unsafe { sys::cdt_ucx_context_destroy(self.0) };
    }
}

/// A UCX context (reads the `UCX_*` environment variables).
#[derive(Clone)]
pub struct Context {
    inner: Arc<ContextInner>,
}

impl Context {
    /// Create a context with default parameters.
    pub fn new() -> Result<Self> {
        let mut raw = ptr::null_mut();
        // SAFETY: NULL params: defaults
        check(unsafe { sys::cdt_ucx_context_create(ptr::null(), &mut raw) })?;
        Ok(Context {
            inner: Arc::new(ContextInner(raw)),
        })
    }

    /// Create a context whose workers sleep instead of spinning when `wakeup` is true
    /// (cdt_ucx.h, `CDT_UCX_CONTEXT_PARAM_WAKEUP`): blocking calls sleep on the worker's
    /// event fd after a short spin, and [`Worker::event_fd`] / [`Worker::arm`] serve an event
    /// loop. UCX then leaves out transports that cannot wake a sleeper (UCX 1.13: its
    /// shared-memory transports). [`Context::new`] follows the `CDT_UCX_WAKEUP` environment
    /// variable instead (default off).
    pub fn with_wakeup(wakeup: bool) -> Result<Self> {
        let p = sys::cdt_ucx_context_params {
            field_mask: sys::CDT_UCX_CONTEXT_PARAM_WAKEUP as u64,
            wakeup: i32::from(wakeup),
            ..Default::default()
        };
        let mut raw = ptr::null_mut();
        // SAFETY: params valid for the call
        check(unsafe { sys::cdt_ucx_context_create(&p, &mut raw) })?;
        Ok(Context {
            inner: Arc::new(ContextInner(raw)),
        })
    }

    /// Create a worker on this context.
    pub fn worker(&self, options: &WorkerOptions) -> Result<Worker> {
        let mut p = sys::cdt_ucx_worker_params::default();
        if let Some(id) = options.sender_id {
            p.field_mask |= sys::CDT_UCX_WORKER_PARAM_SENDER_ID as u64;
            p.sender_id = id;
        }
        if let Some(t) = options.zcopy_threshold {
            p.field_mask |= sys::CDT_UCX_WORKER_PARAM_ZCOPY_THRESHOLD as u64;
            p.zcopy_threshold = t.min(i64::MAX as u64) as i64;
        }
        if let Some(b) = options.buffer_cache_bytes {
            p.field_mask |= sys::CDT_UCX_WORKER_PARAM_BUFFER_CACHE as u64;
            p.buffer_cache_bytes = b;
        }
        if let Some(proto) = options.protocol {
            p.field_mask |= sys::CDT_UCX_WORKER_PARAM_PROTOCOL as u64;
            p.protocol = proto.raw();
        }
        if let Some(on) = options.lane {
            p.field_mask |= sys::CDT_UCX_WORKER_PARAM_LANE as u64;
            p.lane = on as i32;
        }
        let mut raw = ptr::null_mut();
        // SAFETY: valid context and params
        check(unsafe { sys::cdt_ucx_worker_create(self.inner.0, &p, &mut raw) })?;
        Ok(Worker {
            inner: Arc::new(WorkerInner {
                raw,
                limits: options.limits,
                abandoned: Abandoned::default(),
                _ctx: self.inner.clone(),
            }),
        })
    }
}

/// How objects sent on an endpoint travel (`cdt_ucx_protocol`, docs/TRANSPORT.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// Per endpoint: [`Protocol::Single`] over shared memory (except, where large messages
    /// move by cross-memory attach, for objects with regions of at least the zero-copy
    /// threshold), [`Protocol::Split`] otherwise.
    #[default]
    Auto,
    /// A head message, then the rest and every large region as their own messages (zero-copy
    /// on both ends): the fastest over TCP.
    Split,
    /// The whole object as one message, packed and unpacked inside UCX's copies: the fastest
    /// over shared memory.
    Single,
    /// As [`Protocol::Auto`], but every object is one message over shared memory, large
    /// regions included: for receivers that reuse their receive memory (UCX's copy then lands
    /// in pages already mapped).
    AutoSingle,
}

impl Protocol {
    fn raw(self) -> sys::cdt_ucx_protocol {
        match self {
            Protocol::Auto => sys::CDT_UCX_PROTOCOL_AUTO,
            Protocol::Split => sys::CDT_UCX_PROTOCOL_SPLIT,
            Protocol::Single => sys::CDT_UCX_PROTOCOL_SINGLE,
            Protocol::AutoSingle => sys::CDT_UCX_PROTOCOL_AUTO_SINGLE,
        }
    }
}

/// Worker options (`cdt_ucx_worker_params`); `Default` takes the library's defaults.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkerOptions {
    /// This worker's sender id (unique among the workers sending to one receiver).
    pub sender_id: Option<u32>,
    /// libcdt's lane between local processes (`cdt_ucx_worker_params.lane`, docs/TRANSPORT.md
    /// §10): `Some(true)` on, `Some(false)` off; `None`: the environment variable
    /// `CDT_UCX_LANE` ("on"/"off") when set, else off. [`Worker::stats`] says whether objects
    /// went through it.
    pub lane: Option<bool>,
    /// Regions of at least this many bytes move as their own zero-copy message.
    pub zcopy_threshold: Option<u64>,
    /// Bytes of staging memory kept for reuse between messages.
    pub buffer_cache_bytes: Option<usize>,
    /// How objects are sent (default: the `CDT_UCX_PROTOCOL` environment variable, else
    /// [`Protocol::Auto`]).
    pub protocol: Option<Protocol>,
    /// Limits every receive of this worker applies to incoming frame headers.
    pub limits: Limits,
}
