//! The worker: listen, connect, receive (blocking and not), progress.
use std::marker::PhantomData;
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

use cdtypes_sys as sys;

use crate::error::{check, Error, Result};
use crate::frame::datatype_raw;
use crate::object::{ucx_prepare, Limits, RecvState};
use crate::pack::Unpack;
use crate::types::Datatype;

use super::abandoned::Abandoned;
use super::context::{Context, ContextInner, WorkerOptions};
use super::endpoint::{cstring, Endpoint, Listener};
use super::requests::RecvRequest;
use super::{check_detail, ms, Tag, CLOSE_FLUSH, TAG_MASK_FULL};

pub(super) struct WorkerInner {
    pub(super) raw: sys::cdt_ucx_worker,
    pub(super) limits: Limits,
    /// Receives dropped while pending, and sends left over by their closed endpoint.
    pub(super) abandoned: Abandoned,
    pub(super) _ctx: Arc<ContextInner>,
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
    /// The id of the endpoint the value was sent on (split mode; 0 in single mode): the
    /// sender's [`Endpoint::id`](super::Endpoint::id), this side's
    /// [`Endpoint::peer_id`](super::Endpoint::peer_id).
    pub sender: u64,
}

impl From<sys::cdt_ucx_recv_info> for RecvInfo {
    fn from(i: sys::cdt_ucx_recv_info) -> Self {
        RecvInfo {
            tag: i.tag,
            frame_size: i.frame_size as u64,
            packed_size: i.packed_size as u64,
            region_count: i.region_count as u64,
            region_bytes: i.region_bytes as u64,
            sender: i.sender,
        }
    }
}

/// Counters of a worker (`cdt_ucx_worker_stats_get`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// Objects whose stream this worker packed into an endpoint's lane whole (docs/TRANSPORT.md
    /// §10): with the lane on, whether objects go through it.
    pub lane_sent: u64,
    /// Objects whose stream this worker unpacked from an endpoint's lane whole.
    pub lane_received: u64,
    /// Of `lane_sent`, the objects whose large regions both processes copied
    /// (docs/TRANSPORT.md §10.3, Regions moved by both cores).
    pub lane_split_sent: u64,
    /// Of `lane_received`, the same.
    pub lane_split_received: u64,
    /// Head buffers of sends over cross-memory attach held now for a peer that may still read
    /// them.
    pub quarantined: u64,
    /// Such buffers freed since the worker was made, no reader left.
    pub quarantine_released: u64,
    /// Such buffers freed at the bound (the oldest), a reader maybe left.
    pub quarantine_dropped: u64,
}

/// A UCX worker (progress engine) with its context. Cloning gives another handle to the same
/// worker; it is destroyed with its last handle, endpoint, listener and request.
#[derive(Clone)]
pub struct Worker {
    pub(super) inner: Arc<WorkerInner>,
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
    /// Wait on it only after [`Worker::arm`] returned `Ok(true)`. It also becomes readable at
    /// every request's completion (from any thread, a cancel included) and when a receive's
    /// deadline is due, so waiting on it without a timeout misses nothing
    /// (`cdt_ucx_worker_fd`). The worker owns the fd: only watch it.
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

    /// The worker's counters (`cdt_ucx_worker_stats_get`). A send's end is counted by the
    /// progress after it.
    pub fn stats(&self) -> Result<WorkerStats> {
        let mut s = sys::cdt_ucx_worker_stats {
            field_mask: sys::CDT_UCX_WORKER_STATS_ALL as u64,
            ..Default::default()
        };
        // SAFETY: valid worker, a stats struct of this header's size
        check(unsafe { sys::cdt_ucx_worker_stats_get(self.inner.raw, &mut s) })?;
        Ok(WorkerStats {
            lane_sent: s.lane_sent,
            lane_received: s.lane_received,
            lane_split_sent: s.lane_split_sent,
            lane_split_received: s.lane_split_received,
            quarantined: s.quarantined,
            quarantine_released: s.quarantine_released,
            quarantine_dropped: s.quarantine_dropped,
        })
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
        check_detail(unsafe {
            sys::cdt_ucx_ep_connect(self.inner.raw, host.as_ptr(), port, ms(timeout), &mut raw)
        })?;
        Ok(Endpoint::new(raw, self.inner.clone()))
    }

    /// An endpoint to the worker whose [`address`](Worker::address) was exchanged.
    pub fn connect_address(&self, address: &[u8]) -> Result<Endpoint> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid worker; the library validates the address bytes
        check_detail(unsafe {
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
