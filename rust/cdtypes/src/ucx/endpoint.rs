//! Listeners and endpoints: accept, connect's result, send (blocking and not), close.
use std::ffi::CString;
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use cdtypes_sys as sys;

use crate::error::{check, Error, Result};
use crate::frame::datatype_raw;
use crate::object::{send_type, SendObj};
use crate::pack::{Pack, Unpack};
use crate::types::Datatype;

use super::abandoned::Abandoned;
use super::context::Protocol;
use super::requests::SendRequest;
use super::worker::{Worker, WorkerInner};
use super::{check_detail, ms, Tag, CLOSE_FLUSH};

pub(super) fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::with_detail(sys::CDT_ERR_INVALID_ARG, "NUL in host name"))
}

/// Accepts connections on `host:port`.
pub struct Listener {
    pub(super) raw: sys::cdt_ucx_listener,
    pub(super) worker: Arc<WorkerInner>,
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
        check_detail(unsafe { sys::cdt_ucx_listener_accept(self.raw, ms(timeout), &mut raw) })?;
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
    pub(super) inner: Arc<EndpointInner>,
}

pub(super) struct EndpointInner {
    // NULL once closed; a send that timed out closes it (see `send`)
    raw: RwLock<RawEp>,
    /// Sends dropped while pending: they go out before the endpoint closes.
    pub(super) abandoned: Abandoned,
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
    pub(super) fn new(raw: sys::cdt_ucx_ep, worker: Arc<WorkerInner>) -> Self {
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
        check_detail(unsafe { sys::cdt_ucx_isend(ep.0, buf, count, ty, tag, &mut req) })?;
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
                None if rc == sys::CDT_SUCCESS => Ok(()),
                None => Err(self.failed_send(rc)),
            }
        }
    }

    /// The error of a send that failed, naming the peer, the UCX version and the lanes
    /// (`cdt_ucx_ep_describe`).
    pub(super) fn failed_send(&self, rc: i32) -> Error {
        match self.describe() {
            Ok(d) => Error::with_detail(rc, format!("send to {d}")),
            Err(_) => Error::from_code(rc),
        }
    }

    /// One line that names the peer, the UCX version in use and the endpoint's lanes (the
    /// lanes it had at its first send, once it failed), as `cdt_ucx_ep_describe` writes it:
    /// `"127.0.0.1:13337 (UCX 1.13.1; lanes: am=tcp/lo rma=cma/memory)"`. Failed connects,
    /// accepts and sends carry the same in their [`Error::detail`].
    pub fn describe(&self) -> Result<String> {
        let ep = self.inner.raw.read().unwrap_or_else(|e| e.into_inner());
        if ep.0.is_null() {
            return Err(Self::closed());
        }
        let mut buf = vec![0u8; 512];
        // SAFETY: valid endpoint; buf is writable for its length
        let rc = unsafe { sys::cdt_ucx_ep_describe(ep.0, buf.as_mut_ptr().cast(), buf.len()) };
        if rc != sys::CDT_SUCCESS && rc != sys::CDT_ERR_TRUNCATED {
            return Err(Error::from_code(rc));
        }
        let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        buf.truncate(len);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// This endpoint's id (`cdt_ucx_ep_id`): written in every split-mode object sent on it;
    /// the receiver's [`RecvInfo::sender`](super::RecvInfo::sender) names it.
    pub fn id(&self) -> u64 {
        // SAFETY: valid endpoint or NULL (0)
        unsafe { sys::cdt_ucx_ep_id(self.as_raw()) }
    }

    /// The id of the peer's endpoint at the other end (`cdt_ucx_ep_peer_id`), once the peer
    /// sent its first object on it; 0 before.
    pub fn peer_id(&self) -> u64 {
        let ep = self.inner.raw.read().unwrap_or_else(|e| e.into_inner());
        // SAFETY: valid endpoint (held by the read lock) or NULL (0)
        unsafe { sys::cdt_ucx_ep_peer_id(ep.0) }
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
    /// `"am=tcp/lo rma=cma/memory"` between two processes of one machine (libcdt's default:
    /// messages over loopback TCP, large ones by cross-memory attach), `"am=tcp/eth0"` to
    /// another machine, `"am=sysv/memory rma=tcp/lo"` through shared segments
    /// (`CDT_UCX_SHARED_MEMORY=copy`), `"am=sysv/memory rma=cma/memory"` with cross-memory
    /// attach (`full`). Each ends with the lane libcdt's own shared memory gives the endpoint
    /// (on by default between local processes): `" lane=memfd"` (`" lane=memfd+heads"` once
    /// its small objects go through the lane's head ring too, the default: docs/TRANSPORT.md
    /// §10.6), or `" lane=none/<why>"` (another host, a peer with the lane off: §10.2).
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
