//! The UCX transport (cdt_ucx.h): one value = one matched message; regions of at least the
//! worker's zero-copy threshold move without a copy on both ends (the receiver allocates them
//! from the frame header, before their bytes arrive).
//!
//! ```no_run
//! use std::time::Duration;
//! use cdtypes::ucx::Worker;
//!
//! # fn main() -> cdtypes::Result<()> {
//! let worker = Worker::new()?;
//! let listener = worker.listen("127.0.0.1", 13337)?;        // process A
//! let ep = listener.accept(Some(Duration::from_secs(30)))?;
//! let v: Vec<f64> = worker.recv(1, None)?;
//! ep.send(&v, 2, None)?;
//!
//! let worker = Worker::new()?;                                // process B
//! let ep = worker.connect("127.0.0.1", 13337, Some(Duration::from_secs(30)))?;
//! ep.send(&vec![1.0f64; 1 << 20], 1, None)?;
//! let back: Vec<f64> = worker.recv(2, None)?;
//! # Ok(()) }
//! ```
//!
//! Timeouts are `Option<Duration>` (`None` waits without bound). Receives match on the worker
//! (any endpoint of it) by tag and mask. All handles here are `Send + Sync` (every transport
//! function may be called from any thread); requests are `Send`.
//!
//! What the transport reads, it reads from whichever thread progresses the worker (a blocking
//! call of another thread, [`Worker::progress`], a request's test or wait): it packs a value
//! (a `Vec` of fixed-size structs through their [`Pack`] impl, late, straight into its copy)
//! and reads its regions there. Hence the bounds: [`Endpoint::send`] lends `&T` to those
//! threads while it waits (`T: Sync`); [`Endpoint::isend`] moves the value into the request
//! (`V: Send + 'static`: the worker's mutex orders every read of it, and nothing else can reach
//! it until the send completed).
//!
//! Lifetimes: a request keeps its worker (and a send its endpoint) alive. A request dropped
//! while pending is handed to its endpoint (sends: they still go out) or worker (receives:
//! canceled), which frees it and its memory once it completed, and waits for it (up to 5 s,
//! progressing) before the endpoint closes or the worker is destroyed, so that no request
//! outlives its worker.
use std::any::Any;
use std::ffi::{CStr, CString};
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use cdtypes_sys as sys;

use crate::error::{check, Error, Result};
use crate::frame::datatype_raw;
use crate::object::{send_type, ucx_prepare, Limits, RecvState, SendObj};
use crate::pack::{Pack, Unpack};
use crate::types::Datatype;

/// A message tag: 63 bits (`0..=TAG_MAX`).
pub type Tag = u64;
/// The largest tag.
pub const TAG_MAX: Tag = sys::CDT_UCX_TAG_MAX;
/// Mask that matches the exact tag.
pub const TAG_MASK_FULL: Tag = sys::CDT_UCX_TAG_MASK_FULL;
/// Mask that matches any tag.
pub const TAG_MASK_ANY: Tag = sys::CDT_UCX_TAG_MASK_ANY;

fn ms(timeout: Option<Duration>) -> i64 {
    match timeout {
        None => sys::CDT_UCX_INFINITE,
        Some(d) => d.as_millis().min(i64::MAX as u128) as i64,
    }
}

/// How long an endpoint's close waits for what was sent to be flushed, and a closing
/// endpoint or a worker being destroyed for the requests dropped while pending.
const CLOSE_FLUSH: Duration = Duration::from_secs(5);

#[derive(Clone, Copy)]
struct RawReq(sys::cdt_ucx_request);
// SAFETY: cdt_ucx.h: every function may be called from any thread
unsafe impl Send for RawReq {}

/// Requests dropped while pending, each with the memory the library may still use (a send's
/// packed form and value, a receive's state). A request is freed, and its memory with it,
/// once it completed; the memory of one still pending when the worker is destroyed is dropped
/// after the worker (UCX reads it no more).
#[derive(Default)]
struct Abandoned(Mutex<Vec<(RawReq, Box<dyn Send>)>>);

impl Abandoned {
    fn list(&self) -> std::sync::MutexGuard<'_, Vec<(RawReq, Box<dyn Send>)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, req: RawReq, keep: Box<dyn Send>) {
        self.sweep();
        self.list().push((req, keep));
    }

    /// Free the requests that completed; whether none is left.
    fn sweep(&self) -> bool {
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
    fn settle(&self, limit: Duration) {
        let start = Instant::now();
        while !self.sweep() && start.elapsed() < limit {
            std::thread::yield_now();
        }
    }

    fn take(&self) -> Vec<(RawReq, Box<dyn Send>)> {
        std::mem::take(&mut *self.list())
    }
}

/// The UCX library version in use.
pub fn version() -> String {
    // SAFETY: static string
    unsafe { CStr::from_ptr(sys::cdt_ucx_version_string()) }
        .to_string_lossy()
        .into_owned()
}

struct ContextInner(sys::cdt_ucx_context);
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

struct WorkerInner {
    raw: sys::cdt_ucx_worker,
    limits: Limits,
    /// Receives dropped while pending, and sends left over by their closed endpoint.
    abandoned: Abandoned,
    _ctx: Arc<ContextInner>,
}
// SAFETY: cdt_ucx.h: every function may be called from any thread
unsafe impl Send for WorkerInner {}
unsafe impl Sync for WorkerInner {}
impl Drop for WorkerInner {
    fn drop(&mut self) {
        // requests dropped while pending finish first (their peers may still be there): UCX
        // warns about every request it holds when its worker is destroyed
        self.abandoned.settle(CLOSE_FLUSH);
        let left = self.abandoned.take();
        // SAFETY: endpoints, listeners and live requests hold an Arc to this: all are gone; the
        // abandoned requests are freed here (pending ones: invalid after the destroy)
        unsafe {
            for (req, _) in &left {
                sys::cdt_ucx_request_free(req.0);
            }
            sys::cdt_ucx_worker_destroy(self.raw);
        }
        // UCX reads their memory no more
        drop(left);
    }
}

/// What a completed receive matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvInfo {
    /// The sender's tag.
    pub tag: Tag,
    /// Bytes of the frame.
    pub frame_size: u64,
    /// Bytes of the packed stream.
    pub packed_size: u64,
    /// Regions in the frame.
    pub region_count: u64,
    /// Sum of their lengths.
    pub region_bytes: u64,
}

impl From<sys::cdt_ucx_recv_info> for RecvInfo {
    fn from(i: sys::cdt_ucx_recv_info) -> Self {
        RecvInfo {
            tag: i.tag,
            frame_size: i.frame_size as u64,
            packed_size: i.packed_size as u64,
            region_count: i.region_count as u64,
            region_bytes: i.region_bytes as u64,
        }
    }
}

/// A UCX worker (progress engine) with its context. Cloning gives another handle to the same
/// worker; it is destroyed with its last handle, endpoint, listener and request.
#[derive(Clone)]
pub struct Worker {
    inner: Arc<WorkerInner>,
}

impl Worker {
    /// A worker on a context of its own, with default options.
    pub fn new() -> Result<Self> {
        Context::new()?.worker(&WorkerOptions::default())
    }

    /// A worker on a context of its own.
    pub fn with_options(options: &WorkerOptions) -> Result<Self> {
        Context::new()?.worker(options)
    }

    /// Run completions once; the number of UCX events.
    pub fn progress(&self) -> i32 {
        // SAFETY: valid worker
        unsafe { sys::cdt_ucx_worker_progress(self.inner.raw) }
    }

    /// The worker's event fd (a worker of a [`Context::with_wakeup`] context): readable when
    /// there is something to progress, for poll/epoll or an async runtime's fd readiness.
    /// Wait on it only after [`Worker::arm`] returned `Ok(true)`, and progress on a timer too
    /// (every 100 ms) while requests are pending: receive timeouts and keepalives run inside
    /// progress. The worker owns the fd: only watch it.
    pub fn event_fd(&self) -> Result<std::os::fd::RawFd> {
        let mut fd = -1;
        // SAFETY: valid worker
        check(unsafe { sys::cdt_ucx_worker_fd(self.inner.raw, &mut fd) })?;
        Ok(fd)
    }

    /// Before waiting on [`Worker::event_fd`]: `Ok(true)` when nothing is pending (wait
    /// now), `Ok(false)` when events are pending (progress, then arm again).
    pub fn arm(&self) -> Result<bool> {
        // SAFETY: valid worker
        let rc = unsafe { sys::cdt_ucx_worker_arm(self.inner.raw) };
        if rc == sys::CDT_ERR_BUSY {
            return Ok(false);
        }
        check(rc)?;
        Ok(true)
    }

    /// The `cdt_ucx_worker` handle, for programs that also call libcdt or UCX directly
    /// (`cdt_ucx_worker_handle` gives its `ucp_worker_h`). It stays valid while `self` (or
    /// a clone, endpoint or request of this worker) lives; the same rules as in cdt_ucx.h
    /// apply to what is done with it.
    pub fn as_raw(&self) -> sys::cdt_ucx_worker {
        self.inner.raw
    }

    /// The sender id in use.
    pub fn sender_id(&self) -> u32 {
        // SAFETY: valid worker
        unsafe { sys::cdt_ucx_worker_sender_id(self.inner.raw) }
    }

    /// This worker's address, for an exchange out of band ([`Worker::connect_address`]).
    pub fn address(&self) -> Result<Vec<u8>> {
        let mut p = ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: valid worker; the address is copied and freed
        unsafe {
            check(sys::cdt_ucx_worker_address(
                self.inner.raw,
                &mut p,
                &mut len,
            ))?;
            let v = std::slice::from_raw_parts(p as *const u8, len).to_vec();
            sys::cdt_ucx_worker_address_free(self.inner.raw, p);
            Ok(v)
        }
    }

    /// Listen on `host:port` (port 0: any free port, see [`Listener::port`]).
    pub fn listen(&self, host: &str, port: u16) -> Result<Listener> {
        let host = cstring(host)?;
        let p = sys::cdt_ucx_listener_params {
            field_mask: (sys::CDT_UCX_LISTENER_PARAM_HOST | sys::CDT_UCX_LISTENER_PARAM_PORT)
                as u64,
            host: host.as_ptr(),
            port,
        };
        let mut raw = ptr::null_mut();
        // SAFETY: valid worker and params
        check(unsafe { sys::cdt_ucx_listener_create(self.inner.raw, &p, &mut raw) })?;
        Ok(Listener {
            raw,
            worker: self.inner.clone(),
        })
    }

    /// Connect to a listener and wait until the connection is up.
    pub fn connect(&self, host: &str, port: u16, timeout: Option<Duration>) -> Result<Endpoint> {
        let host = cstring(host)?;
        let mut raw = ptr::null_mut();
        // SAFETY: valid worker and host string
        check(unsafe {
            sys::cdt_ucx_ep_connect(self.inner.raw, host.as_ptr(), port, ms(timeout), &mut raw)
        })?;
        Ok(Endpoint::new(raw, self.inner.clone()))
    }

    /// An endpoint to the worker whose [`address`](Worker::address) was exchanged.
    pub fn connect_address(&self, address: &[u8]) -> Result<Endpoint> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid worker; the library validates the address bytes
        check(unsafe {
            sys::cdt_ucx_ep_create_from_address(
                self.inner.raw,
                address.as_ptr().cast(),
                address.len(),
                &mut raw,
            )
        })?;
        Ok(Endpoint::new(raw, self.inner.clone()))
    }

    /// Receive one value whose tag is `tag` (exactly).
    pub fn recv<T: Unpack>(&self, tag: Tag, timeout: Option<Duration>) -> Result<T> {
        self.recv_matching(tag, TAG_MASK_FULL, timeout)
            .map(|(v, _)| v)
    }

    /// Receive one value whose tag matches `(tag, mask)`, with what it matched.
    pub fn recv_matching<T: Unpack>(
        &self,
        tag: Tag,
        mask: Tag,
        timeout: Option<Duration>,
    ) -> Result<(T, RecvInfo)> {
        let mut req = self.irecv(tag, mask)?;
        let value = req.wait(timeout)?;
        Ok((value, req.info().expect("completed")))
    }

    /// Post a receive of one value whose tag matches `(tag, mask)`.
    pub fn irecv<T: Unpack>(&self, tag: Tag, mask: Tag) -> Result<RecvRequest<T>> {
        self.inner.abandoned.sweep();
        let state = Box::into_raw(RecvState::new::<T>(self.inner.limits));
        // the transport checks the limits on the head, before it sizes anything from it
        let limits = self.inner.limits;
        let mut field_mask = sys::CDT_UCX_RECV_PARAM_PREPARE as u64;
        if limits.max_frame_bytes.is_some() {
            field_mask |= sys::CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES as u64;
        }
        if limits.max_regions.is_some() {
            field_mask |= sys::CDT_UCX_RECV_PARAM_MAX_REGIONS as u64;
        }
        let params = sys::cdt_ucx_recv_params {
            field_mask,
            prepare: Some(ucx_prepare),
            prepare_arg: state.cast(),
            max_frame_bytes: limits
                .max_frame_bytes
                .map_or(0, |m| m.min(i64::MAX as u64) as i64),
            max_regions: limits
                .max_regions
                .map_or(0, |m| m.min(i64::MAX as u64) as i64),
            rest_timeout_ms: 0,
        };
        let mut raw = ptr::null_mut();
        // SAFETY: the state lives until the request completes (or is leaked with it)
        let rc = unsafe {
            sys::cdt_ucx_irecv(
                self.inner.raw,
                ptr::null_mut(),
                0,
                ptr::null_mut(),
                tag,
                mask,
                &params,
                &mut raw,
            )
        };
        if rc != sys::CDT_SUCCESS {
            // SAFETY: not posted: ours again
            drop(unsafe { Box::from_raw(state) });
            return Err(Error::from_code(rc));
        }
        Ok(RecvRequest {
            raw,
            state,
            info: None,
            worker: self.inner.clone(),
            _value: PhantomData,
        })
    }

    /// Receive `count` elements of a predefined or derived `datatype` into `buf` (byte
    /// displacements from its start).
    pub fn recv_typed(
        &self,
        buf: &mut [u8],
        count: i64,
        datatype: &Datatype,
        tag: Tag,
        mask: Tag,
        timeout: Option<Duration>,
    ) -> Result<RecvInfo> {
        datatype.check_span(count, buf.len())?;
        let mut raw = ptr::null_mut();
        // SAFETY: the type touches only bytes of buf; we wait for the request below
        check(unsafe {
            sys::cdt_ucx_irecv(
                self.inner.raw,
                buf.as_mut_ptr().cast(),
                count,
                datatype_raw(datatype),
                tag,
                mask,
                ptr::null(),
                &mut raw,
            )
        })?;
        // SAFETY: valid request, completed before buf is released
        unsafe {
            let mut rc = sys::cdt_ucx_request_wait(raw, ms(timeout));
            if rc == sys::CDT_ERR_TIMEOUT {
                // buf is borrowed: the request must be over before we return
                sys::cdt_ucx_request_cancel(raw);
                sys::cdt_ucx_request_wait(raw, sys::CDT_UCX_INFINITE);
                rc = sys::CDT_ERR_TIMEOUT;
            }
            let mut info = sys::cdt_ucx_recv_info {
                field_mask: sys::CDT_UCX_RECV_INFO_ALL as u64,
                ..Default::default()
            };
            if rc == sys::CDT_SUCCESS {
                sys::cdt_ucx_request_recv_info(raw, &mut info);
            }
            sys::cdt_ucx_request_free(raw);
            check(rc).map(|()| info.into())
        }
    }
}

fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::with_detail(sys::CDT_ERR_INVALID_ARG, "NUL in host name"))
}

/// Accepts connections on `host:port`.
pub struct Listener {
    raw: sys::cdt_ucx_listener,
    worker: Arc<WorkerInner>,
}
// SAFETY: cdt_ucx.h: every function may be called from any thread
unsafe impl Send for Listener {}
unsafe impl Sync for Listener {}

impl Listener {
    /// The port actually bound.
    pub fn port(&self) -> Result<u16> {
        let mut port = 0;
        // SAFETY: valid listener
        check(unsafe { sys::cdt_ucx_listener_port(self.raw, &mut port) })?;
        Ok(port)
    }

    /// Wait for a connection and create its endpoint.
    pub fn accept(&self, timeout: Option<Duration>) -> Result<Endpoint> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid listener
        check(unsafe { sys::cdt_ucx_listener_accept(self.raw, ms(timeout), &mut raw) })?;
        Ok(Endpoint::new(raw, self.worker.clone()))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // SAFETY: ours, destroyed once, before the worker (Arc)
        unsafe { sys::cdt_ucx_listener_destroy(self.raw) };
    }
}

#[derive(Clone, Copy)]
struct RawEp(sys::cdt_ucx_ep);
// SAFETY: cdt_ucx.h: every function may be called from any thread
unsafe impl Send for RawEp {}
unsafe impl Sync for RawEp {}

/// A connection to one peer worker. Closed (flushed, then forced) when dropped, once the
/// sends started on it are over (a [`SendRequest`] keeps its endpoint open).
pub struct Endpoint {
    inner: Arc<EndpointInner>,
}

struct EndpointInner {
    // NULL once closed; a send that timed out closes it (see `send`)
    raw: RwLock<RawEp>,
    /// Sends dropped while pending: they go out before the endpoint closes.
    abandoned: Abandoned,
    worker: Arc<WorkerInner>,
}

impl EndpointInner {
    /// The sends left after the endpoint closed (ended by the close) go to the worker.
    fn hand_over_abandoned(&self) {
        for (req, keep) in self.abandoned.take() {
            self.worker.abandoned.push(req, keep);
        }
    }
}

impl Drop for EndpointInner {
    fn drop(&mut self) {
        self.abandoned.settle(CLOSE_FLUSH);
        let ep = self.raw.get_mut().unwrap_or_else(|e| e.into_inner());
        if !ep.0.is_null() {
            // SAFETY: ours; freed by the call, before the worker (Arc)
            unsafe { sys::cdt_ucx_ep_close(ep.0, ms(Some(CLOSE_FLUSH))) };
        }
        self.hand_over_abandoned();
    }
}

impl Endpoint {
    fn new(raw: sys::cdt_ucx_ep, worker: Arc<WorkerInner>) -> Self {
        Endpoint {
            inner: Arc::new(EndpointInner {
                raw: RwLock::new(RawEp(raw)),
                abandoned: Abandoned::default(),
                worker,
            }),
        }
    }

    fn closed() -> Error {
        Error::with_detail(
            sys::CDT_ERR_PEER,
            "endpoint closed (after a send timed out)",
        )
    }

    /// Start a send of the object (buf, 1, type) on this endpoint.
    fn isend_raw(
        &self,
        buf: *const c_void,
        count: i64,
        ty: sys::cdt_type,
        tag: Tag,
    ) -> Result<sys::cdt_ucx_request> {
        let ep = self.inner.raw.read().unwrap_or_else(|e| e.into_inner());
        if ep.0.is_null() {
            return Err(Self::closed());
        }
        let mut req = ptr::null_mut();
        // SAFETY: valid endpoint (not closed while we hold the read lock); the caller keeps
        // buf alive until the request completes
        check(unsafe { sys::cdt_ucx_isend(ep.0, buf, count, ty, tag, &mut req) })?;
        Ok(req)
    }

    /// Wait for a send whose memory is borrowed: on timeout the endpoint is closed by force
    /// so that the send fails and releases the memory before this returns.
    fn wait_borrowed(&self, req: sys::cdt_ucx_request, timeout: Option<Duration>) -> Result<()> {
        // SAFETY: valid request, freed once below
        unsafe {
            let mut rc = sys::cdt_ucx_request_wait(req, ms(timeout));
            let mut err = None;
            if rc == sys::CDT_ERR_TIMEOUT {
                self.force_close();
                sys::cdt_ucx_request_wait(req, sys::CDT_UCX_INFINITE);
                err = Some(Error::with_detail(
                    sys::CDT_ERR_TIMEOUT,
                    "send not completed in time; the endpoint was closed",
                ));
                rc = sys::CDT_ERR_TIMEOUT;
            }
            sys::cdt_ucx_request_free(req);
            match err {
                Some(e) => Err(e),
                None => check(rc),
            }
        }
    }

    fn force_close(&self) {
        let mut ep = self.inner.raw.write().unwrap_or_else(|e| e.into_inner());
        if !ep.0.is_null() {
            // SAFETY: no other call uses it (write lock); freed here, then NULL
            unsafe { sys::cdt_ucx_ep_close(ep.0, 0) };
            ep.0 = ptr::null_mut();
        }
    }

    /// Send `value` as one message with `tag`. Regions are read from the value's memory
    /// (zero-copy). A posted send cannot be withdrawn: when it does not complete within
    /// `timeout`, the endpoint is closed by force (later calls fail) and `CDT_ERR_TIMEOUT` is
    /// returned.
    ///
    /// `T: Sync`: while this call waits, the transport packs the value (through its [`Pack`]
    /// impl) and reads its regions on whichever thread progresses the worker.
    pub fn send<T: Pack + Sync + ?Sized>(
        &self,
        value: &T,
        tag: Tag,
        timeout: Option<Duration>,
    ) -> Result<()> {
        let obj = SendObj::new(value)?;
        let req = self.isend_raw(obj.as_ptr(), 1, send_type()?, tag)?;
        self.wait_borrowed(req, timeout)
    }

    /// Start sending `value` (owned by the request until it completes).
    ///
    /// `V: Send + 'static`: the request owns the value, and the transport reads it (packs it
    /// through its [`Pack`] impl, reads its regions) on whichever thread progresses the
    /// worker, and a request dropped while pending hands it to the endpoint, which drops it
    /// on whichever thread frees the request. No `Sync`: nothing else can reach the value while
    /// the send is pending, and the worker's mutex orders the transport's reads.
    pub fn isend<V: Pack + Send + 'static>(&self, value: V, tag: Tag) -> Result<SendRequest<V>> {
        self.inner.abandoned.sweep();
        let value = Box::new(value);
        // SAFETY: the box's contents stay where they are while the box moves, and the packed
        // form is dropped before the value (`SendRequest::obj` before `value`, or together in
        // `Abandoned`, in that order)
        let obj: SendObj<'static> = SendObj::new(unsafe { &*(&*value as *const V) })?;
        let raw = self.isend_raw(obj.as_ptr(), 1, send_type()?, tag)?;
        Ok(SendRequest {
            raw,
            obj: Some(obj),
            value: Some(value),
            endpoint: self.inner.clone(),
            _value: PhantomData,
        })
    }

    /// Send `count` elements of a predefined or derived `datatype` laid out in `buf`.
    pub fn send_typed(
        &self,
        buf: &[u8],
        count: i64,
        datatype: &Datatype,
        tag: Tag,
        timeout: Option<Duration>,
    ) -> Result<()> {
        datatype.check_span(count, buf.len())?;
        let req = self.isend_raw(buf.as_ptr().cast(), count, datatype_raw(datatype), tag)?;
        self.wait_borrowed(req, timeout)
    }

    /// Receive one value with `tag` on this endpoint's worker (from any of its peers).
    pub fn recv<T: Unpack>(&self, tag: Tag, timeout: Option<Duration>) -> Result<T> {
        Worker {
            inner: self.inner.worker.clone(),
        }
        .recv(tag, timeout)
    }

    /// The `cdt_ucx_ep` handle (NULL once closed), for programs that also call libcdt or UCX
    /// directly (`cdt_ucx_ep_handle` gives its `ucp_ep_h`). It stays valid until the endpoint
    /// is closed or dropped.
    pub fn as_raw(&self) -> sys::cdt_ucx_ep {
        self.inner.raw.read().unwrap_or_else(|e| e.into_inner()).0
    }

    /// The worker this endpoint belongs to.
    pub fn worker(&self) -> Worker {
        Worker {
            inner: self.inner.worker.clone(),
        }
    }

    /// `Ok` while usable; `CDT_ERR_PEER` after a peer failure.
    pub fn status(&self) -> Result<()> {
        let ep = self.inner.raw.read().unwrap_or_else(|e| e.into_inner());
        if ep.0.is_null() {
            return Err(Self::closed());
        }
        // SAFETY: valid endpoint
        check(unsafe { sys::cdt_ucx_ep_status(ep.0) })
    }

    /// How objects sent on this endpoint travel: [`Protocol::Single`] or [`Protocol::Split`]
    /// (fixed at its first send, once UCX has chosen its transports).
    pub fn protocol(&self) -> Result<Protocol> {
        let ep = self.inner.raw.read().unwrap_or_else(|e| e.into_inner());
        if ep.0.is_null() {
            return Err(Self::closed());
        }
        let mut raw: sys::cdt_ucx_protocol = sys::CDT_UCX_PROTOCOL_AUTO;
        // SAFETY: valid endpoint and output
        check(unsafe { sys::cdt_ucx_ep_protocol(ep.0, &mut raw) })?;
        Ok(if raw == sys::CDT_UCX_PROTOCOL_SINGLE {
            Protocol::Single
        } else {
            Protocol::Split
        })
    }

    /// The transports UCX chose for this endpoint, as `cdt_ucx_ep_transports` prints them:
    /// `"am=tcp/lo rma=tcp/lo"` over loopback TCP (libcdt's default, also between two processes
    /// of one machine), `"am=sysv/memory rma=tcp/lo"` through shared segments
    /// (`CDT_UCX_SHARED_MEMORY=copy`), `"am=sysv/memory rma=cma/memory"` with cross-memory
    /// attach (`full`).
    pub fn transports(&self) -> Result<String> {
        let ep = self.inner.raw.read().unwrap_or_else(|e| e.into_inner());
        if ep.0.is_null() {
            return Err(Self::closed());
        }
        let mut buf = vec![0u8; 256];
        loop {
            // SAFETY: valid endpoint; buf is writable for its length
            let rc =
                unsafe { sys::cdt_ucx_ep_transports(ep.0, buf.as_mut_ptr().cast(), buf.len()) };
            if rc == sys::CDT_ERR_TRUNCATED && buf.len() < 1 << 16 {
                buf.resize(buf.len() * 4, 0);
                continue;
            }
            check(rc)?;
            let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            buf.truncate(len);
            return Ok(String::from_utf8_lossy(&buf).into_owned());
        }
    }

    /// Flush what was sent (at most `timeout`, then force) and close.
    pub fn close(self, timeout: Option<Duration>) -> Result<()> {
        // sends dropped while pending go out first, within the same time
        self.inner
            .abandoned
            .settle(timeout.unwrap_or(Duration::MAX));
        let rc = {
            let mut ep = self.inner.raw.write().unwrap_or_else(|e| e.into_inner());
            if ep.0.is_null() {
                return Ok(());
            }
            // SAFETY: ours; freed by the call
            let rc = unsafe { sys::cdt_ucx_ep_close(ep.0, ms(timeout)) };
            ep.0 = ptr::null_mut();
            rc
        };
        // sends dropped while pending were ended by the close
        self.inner.hand_over_abandoned();
        check(rc)
    }
}

/// A pending send that owns its value. It keeps its endpoint open. Dropped while pending,
/// the send still goes out: the endpoint keeps the value until the send completed, and waits
/// for it (up to 5 s) before it closes.
pub struct SendRequest<V> {
    // NULL once complete
    raw: sys::cdt_ucx_request,
    // the packed form, dropped before the value it points into
    obj: Option<SendObj<'static>>,
    value: Option<Box<dyn Any + Send>>,
    endpoint: Arc<EndpointInner>,
    _value: PhantomData<fn() -> V>,
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
        check(rc).map(|()| true)
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
    raw: sys::cdt_ucx_request,
    state: *mut RecvState,
    info: Option<RecvInfo>,
    worker: Arc<WorkerInner>,
    _value: PhantomData<fn() -> T>,
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
