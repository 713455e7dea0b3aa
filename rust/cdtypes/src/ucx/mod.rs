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
//!
//! [`Pack`]: crate::Pack
mod abandoned;
mod context;
mod endpoint;
mod requests;
mod worker;

use std::ffi::CStr;
use std::time::Duration;

use cdtypes_sys as sys;

pub use context::{Context, Protocol, WorkerOptions};
pub use endpoint::{Endpoint, Listener};
pub use requests::{RecvRequest, SendRequest};
pub use worker::{RecvInfo, Worker, WorkerStats};

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

/// `Ok(())` for `CDT_SUCCESS`; otherwise the error with what the transport says about it
/// (`cdt_ucx_last_error`: the peer, the UCX version, the lanes and a hint), for a connect,
/// accept or send that failed on this thread.
fn check_detail(rc: std::os::raw::c_int) -> crate::Result<()> {
    if rc == sys::CDT_SUCCESS {
        return Ok(());
    }
    let mut buf = vec![0u8; 512];
    // SAFETY: buf is writable for its length; the text is NUL-terminated (cut short if long)
    unsafe { sys::cdt_ucx_last_error(buf.as_mut_ptr().cast(), buf.len()) };
    Err(with_text(rc, buf))
}

/// The error `rc` with the NUL-terminated text in `buf` as its detail (none when empty).
fn with_text(rc: std::os::raw::c_int, mut buf: Vec<u8>) -> crate::Error {
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    buf.truncate(len);
    if buf.is_empty() {
        return crate::Error::from_code(rc);
    }
    crate::Error::with_detail(rc, String::from_utf8_lossy(&buf).into_owned())
}

/// The UCX library version in use.
pub fn version() -> String {
    // SAFETY: static string
    unsafe { CStr::from_ptr(sys::cdt_ucx_version_string()) }
        .to_string_lossy()
        .into_owned()
}
