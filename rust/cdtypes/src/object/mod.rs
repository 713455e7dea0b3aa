//! A Rust value as one of libcdt's custom types (`cdt_type_create_custom_advanced`): the
//! library pulls the packed stream out of the value fragment by fragment, at any offset,
//! straight into the frame head or the transport's copy, and pushes received fragments into
//! the receiving value as they arrive.
//!
//! Sending: [`SendObj`] holds what [`Pack`] wrote: the in-line bytes of the stream and the
//! deferred blocks (a `Vec` of fixed-size elements, packed only when the library asks for
//! those bytes: element `i` is at `i * FIXED_SIZE` of its block), and the regions. No Rust
//! stream of the whole value is built.
//!
//! Receiving: [`RecvState`] takes the header's lengths (regions are allocated from them before
//! their bytes arrive) and a receive plan of the type ([`Plan`]): the stream bytes of a
//! `Vec` of fixed-size derived structs are unpacked into that `Vec` (allocated once from the
//! sequence length) as they arrive, the rest is kept for [`Unpacker`]. Frames are the same
//! bytes either way.
//!
//! [`Pack`]: crate::Pack
//! [`Plan`]: crate::pack::Plan
//! [`Unpacker`]: crate::Unpacker
mod recv;
mod send;

use std::os::raw::c_void;
use std::ptr;
use std::sync::OnceLock;

use cdtypes_sys as sys;

use crate::error::{Error, Result};

pub use recv::Limits;
use recv::{recv_pack, recv_query, recv_region_count, recv_regions, recv_unpack};
pub(crate) use recv::{ucx_prepare, RecvState};
pub(crate) use send::SendObj;
use send::{send_pack, send_query, send_region_count, send_regions};

struct TypeHandle(sys::cdt_type);
// SAFETY: committed types may be used from any thread (cdt.h); the handle is never freed
unsafe impl Send for TypeHandle {}
unsafe impl Sync for TypeHandle {}

fn make_type(params: sys::cdt_custom_params) -> Option<TypeHandle> {
    let mut t = ptr::null_mut();
    // SAFETY: valid params with static callbacks
    let rc = unsafe { sys::cdt_type_create_custom_advanced(&params, &mut t) };
    (rc == sys::CDT_SUCCESS && !t.is_null()).then_some(TypeHandle(t))
}

fn or_no_memory(t: &Option<TypeHandle>) -> Result<sys::cdt_type> {
    t.as_ref()
        .map(|t| t.0)
        .ok_or_else(|| Error::from_code(sys::CDT_ERR_NO_MEMORY))
}

/// The custom type of a value being sent (buf: a [`SendObj`]; lives for the whole program).
pub(crate) fn send_type() -> Result<sys::cdt_type> {
    static T: OnceLock<Option<TypeHandle>> = OnceLock::new();
    or_no_memory(T.get_or_init(|| {
        make_type(sys::cdt_custom_params {
            field_mask: (sys::CDT_CUSTOM_PARAM_QUERY
                | sys::CDT_CUSTOM_PARAM_PACK
                | sys::CDT_CUSTOM_PARAM_REGIONS) as u64,
            query_fn: Some(send_query),
            pack_fn: Some(send_pack),
            region_count_fn: Some(send_region_count),
            region_fn: Some(send_regions),
            ..Default::default()
        })
    }))
}

/// The custom type of a value being received (buf: a [`RecvState`]). In order: the plan reads
/// the stream front to back (the engine holds early fragments, which a transport rarely
/// delivers). It reads each byte once (`CDT_CUSTOM_FLAG_UNPACK_READS_ONCE`): a local lane
/// hands it fragments straight out of its segment, and [`RecvState`] copies what it checks
/// (docs/TRANSPORT.md §10.4).
pub(crate) fn recv_type() -> Result<sys::cdt_type> {
    static T: OnceLock<Option<TypeHandle>> = OnceLock::new();
    or_no_memory(T.get_or_init(|| {
        make_type(sys::cdt_custom_params {
            field_mask: (sys::CDT_CUSTOM_PARAM_QUERY
                | sys::CDT_CUSTOM_PARAM_PACK
                | sys::CDT_CUSTOM_PARAM_UNPACK
                | sys::CDT_CUSTOM_PARAM_REGIONS
                | sys::CDT_CUSTOM_PARAM_INORDER
                | sys::CDT_CUSTOM_PARAM_FLAGS) as u64,
            query_fn: Some(recv_query),
            pack_fn: Some(recv_pack),
            unpack_fn: Some(recv_unpack),
            region_count_fn: Some(recv_region_count),
            region_fn: Some(recv_regions),
            inorder: 1,
            flags: sys::CDT_CUSTOM_FLAG_UNPACK_READS_ONCE as u64,
            ..Default::default()
        })
    }))
}

/// One region as the library wants it: elements of the region's kind (bytes when its length
/// is not a whole number of them), as cdt_sobj does.
///
/// # Safety
/// The three pointers are valid for one entry each.
unsafe fn put_region(
    base: *mut c_void,
    len: usize,
    kind: sys::cdt_kind,
    bases: *mut *mut c_void,
    lens: *mut sys::cdt_count,
    types: *mut sys::cdt_type,
) {
    let esize = sys::cdt_kind_size(kind);
    let kind = if esize > 0 && len as i64 % esize == 0 {
        kind
    } else {
        sys::CDT_KIND_BYTE
    };
    let esize = sys::cdt_kind_size(kind).max(1);
    *bases = base;
    *lens = len as i64 / esize;
    *types = sys::cdt_type_predefined(kind);
}
