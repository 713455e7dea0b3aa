//! C side: raw UCX messages (shim.c) and the C twins of the seed types (seed_types.c).
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::time::Duration;

use cdtypes::ucx::Worker;
use cdtypes_sys as sys;

#[repr(C)]
pub(crate) struct CDoubleVec {
    pub(crate) n: i64,
    pub(crate) lens: *mut i64,
    pub(crate) data: *mut *mut i32,
}

extern "C" {
    pub(crate) fn bench_raw_isend(
        ep: sys::cdt_ucx_ep,
        buf: *const c_void,
        len: usize,
        tag: u64,
    ) -> *mut c_void;
    pub(crate) fn bench_raw_irecv(
        w: sys::cdt_ucx_worker,
        buf: *mut c_void,
        len: usize,
        tag: u64,
    ) -> *mut c_void;
    fn bench_raw_wait(w: sys::cdt_ucx_worker, req: *mut c_void, timeout_s: f64) -> c_int;
    fn bench_ucs_status_string(status: c_int) -> *const c_char;
    pub(crate) fn struct_vec_type() -> sys::cdt_type;
    pub(crate) fn struct_simple_type() -> sys::cdt_type;
    pub(crate) fn struct_simple_no_gap_type() -> sys::cdt_type;
    pub(crate) fn double_vec_type() -> sys::cdt_type;
    pub(crate) fn double_vec_clear(v: *mut CDoubleVec);
}

const WAIT_S: f64 = 120.0;
pub(crate) const LONG: Option<Duration> = Some(Duration::from_secs(120));
pub(crate) const TAG_PING: u64 = 7;
pub(crate) const TAG_PONG: u64 = 8;
pub(crate) const TAG_BW: u64 = 9;
pub(crate) const TAG_ACK: u64 = 1 << 30;

pub(crate) fn raw_wait(w: &Worker, req: *mut c_void) {
    // SAFETY: a request (or NULL / error pointer) of this worker's UCX worker
    let st = unsafe { bench_raw_wait(w.as_raw(), req, WAIT_S) };
    if st != 0 {
        // SAFETY: static string
        let msg = unsafe { CStr::from_ptr(bench_ucs_status_string(st)) };
        panic!("raw UCX request: {}", msg.to_string_lossy());
    }
}

pub(crate) fn cdt_ok(rc: c_int, what: &str) {
    if rc != sys::CDT_SUCCESS {
        panic!("{what}: {}", cdtypes::Error::from_code(rc));
    }
}
