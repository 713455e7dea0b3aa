//! Sending: the value's packed stream, pulled by the library in fragments at any offset,
//! and its regions.
use std::marker::PhantomData;
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use cdtypes_sys as sys;

use crate::error::Result;
use crate::pack::{give_buffer, Deferred, Pack, Packer, Schema};

use super::put_region;

/// A piece of the packed stream: in-line bytes of the packer, or a deferred block.
#[derive(Clone, Copy)]
struct Piece {
    /// Offset in the stream.
    start: usize,
    len: usize,
    /// In-line: offset in the in-line bytes; deferred: index in `deferred`.
    src: usize,
    deferred: bool,
}

/// What the library reads while packing (boxed: its address is the object passed to it).
struct SendInner {
    stream: Vec<u8>,
    deferred: Vec<Deferred>,
    pieces: Vec<Piece>,
    total: usize,
    regions: Vec<sys::cdt_sobj_buffer>,
}

/// A packed value ready to send: the stream's in-line bytes, its deferred blocks and its
/// regions, which point into the value (borrowed for `'a`). Every address stays put while it
/// moves.
pub(crate) struct SendObj<'a> {
    inner: Box<SendInner>,
    _owned: Vec<Vec<u8>>,
    _borrow: PhantomData<&'a [u8]>,
}

// SAFETY: the memory it points at is the value's (Sync, borrowed) and its own; the deferred
// blocks are packed only through &self
unsafe impl Send for SendObj<'_> {}

impl<'a> SendObj<'a> {
    /// Pack `value`; the error a [`Pack`] impl recorded with [`Packer::fail`], if any.
    // inline: a codegen unit holds one module's items, so without the hint a caller in another
    // module (Frame::encode, the transport's sends) may not inline this one; inlined, a small
    // value's send takes the instructions it took when this code and its callers' were one file
    #[inline]
    pub(crate) fn new<T: Pack + ?Sized>(value: &'a T) -> Result<Self> {
        let mut p = Packer::new(Schema::of_pack::<T>());
        value.pack(&mut p);
        let Packer {
            stream,
            deferred,
            regions,
            owned,
            error,
            ..
        } = p;
        if let Some(e) = error {
            give_buffer(stream);
            return Err(e);
        }
        // the stream in order: in-line bytes up to each deferred block's position, the block
        // (none without deferred blocks: the stream is the in-line bytes)
        let mut pieces = Vec::new();
        if deferred.is_empty() {
            let total = stream.len();
            return Ok(SendObj {
                inner: Box::new(SendInner {
                    stream,
                    deferred,
                    pieces,
                    total,
                    regions,
                }),
                _owned: owned,
                _borrow: PhantomData,
            });
        }
        pieces.reserve_exact(2 * deferred.len() + 1);
        let (mut at, mut inline_at) = (0usize, 0usize);
        for (i, d) in deferred.iter().enumerate() {
            if d.at > inline_at {
                pieces.push(Piece {
                    start: at,
                    len: d.at - inline_at,
                    src: inline_at,
                    deferred: false,
                });
                at += d.at - inline_at;
                inline_at = d.at;
            }
            let len = d.count * d.size;
            if len > 0 {
                pieces.push(Piece {
                    start: at,
                    len,
                    src: i,
                    deferred: true,
                });
                at += len;
            }
        }
        if stream.len() > inline_at {
            pieces.push(Piece {
                start: at,
                len: stream.len() - inline_at,
                src: inline_at,
                deferred: false,
            });
            at += stream.len() - inline_at;
        }
        Ok(SendObj {
            inner: Box::new(SendInner {
                stream,
                deferred,
                pieces,
                total: at,
                regions,
            }),
            _owned: owned,
            _borrow: PhantomData,
        })
    }

    /// The object to pass as `buf` (count 1) with [`send_type`].
    ///
    /// [`send_type`]: super::send_type
    pub(crate) fn as_ptr(&self) -> *const c_void {
        &*self.inner as *const SendInner as *const c_void
    }

    /// Bytes of the packed stream.
    pub(crate) fn stream_len(&self) -> usize {
        self.inner.total
    }

    /// Stream bytes [offset, offset + out.len()) into `out` (what the pack callback does).
    pub(crate) fn pack_at(&self, offset: usize, out: &mut [u8]) -> usize {
        self.inner.pack_at(offset, out)
    }
}

impl Drop for SendObj<'_> {
    fn drop(&mut self) {
        // the library no longer reads the stream (the frame or request is gone)
        give_buffer(std::mem::take(&mut self.inner.stream));
    }
}

impl SendInner {
    /// Fill `out` with the stream from `offset` (up to its end); the bytes written.
    fn pack_at(&self, offset: usize, out: &mut [u8]) -> usize {
        let end = self.total.min(offset.saturating_add(out.len()));
        if offset >= end {
            return 0;
        }
        if self.deferred.is_empty() {
            out[..end - offset].copy_from_slice(&self.stream[offset..end]);
            return end - offset;
        }
        let mut i = self.pieces.partition_point(|p| p.start + p.len <= offset);
        let mut at = offset;
        while at < end {
            let Some(p) = self.pieces.get(i) else { break };
            let rel = at - p.start;
            let n = (p.len - rel).min(end - at);
            let dst = &mut out[at - offset..at - offset + n];
            if p.deferred {
                self.deferred[p.src].pack_bytes(rel, dst);
            } else {
                dst.copy_from_slice(&self.stream[p.src + rel..p.src + rel + n]);
            }
            at += n;
            i += 1;
        }
        at - offset
    }
}

pub(super) unsafe extern "C" fn send_query(
    _state: *mut c_void,
    buf: *const c_void,
    count: sys::cdt_count,
    packed_size: *mut sys::cdt_count,
) -> c_int {
    if count != 1 {
        return sys::CDT_ERR_INVALID_ARG;
    }
    // SAFETY: buf is the SendInner of a live SendObj (send_type is only used with one)
    let obj = &*(buf as *const SendInner);
    *packed_size = obj.total as i64;
    sys::CDT_SUCCESS
}

pub(super) unsafe extern "C" fn send_pack(
    _state: *mut c_void,
    buf: *const c_void,
    count: sys::cdt_count,
    offset: sys::cdt_count,
    dst: *mut c_void,
    dst_size: sys::cdt_count,
    used: *mut sys::cdt_count,
) -> c_int {
    if count != 1 || offset < 0 || dst_size < 0 || (dst.is_null() && dst_size > 0) {
        return sys::CDT_ERR_INVALID_ARG;
    }
    // SAFETY: as send_query
    let obj = &*(buf as *const SendInner);
    let out: &mut [u8] = if dst_size == 0 {
        &mut []
    } else {
        // SAFETY: the library gives dst_size writable bytes at dst
        std::slice::from_raw_parts_mut(dst.cast(), dst_size as usize)
    };
    // a panic in a Pack impl must not unwind into C
    match catch_unwind(AssertUnwindSafe(|| obj.pack_at(offset as usize, out))) {
        Ok(n) => {
            *used = n as i64;
            sys::CDT_SUCCESS
        }
        Err(_) => sys::CDT_ERR_CALLBACK,
    }
}

pub(super) unsafe extern "C" fn send_region_count(
    _state: *mut c_void,
    buf: *mut c_void,
    count: sys::cdt_count,
    n: *mut sys::cdt_count,
) -> c_int {
    if count != 1 {
        return sys::CDT_ERR_INVALID_ARG;
    }
    // SAFETY: as send_query
    let obj = &*(buf as *const SendInner);
    *n = obj.regions.len() as i64;
    sys::CDT_SUCCESS
}

pub(super) unsafe extern "C" fn send_regions(
    _state: *mut c_void,
    buf: *mut c_void,
    _count: sys::cdt_count,
    n: sys::cdt_count,
    bases: *mut *mut c_void,
    lens: *mut sys::cdt_count,
    types: *mut sys::cdt_type,
) -> c_int {
    // SAFETY: as send_query
    let obj = &*(buf as *const SendInner);
    if n < 0 || n as usize > obj.regions.len() {
        return sys::CDT_ERR_INVALID_ARG;
    }
    for (i, r) in obj.regions[..n as usize].iter().enumerate() {
        // SAFETY: the arrays hold n entries
        put_region(
            r.base,
            r.len as usize,
            r.kind,
            bases.add(i),
            lens.add(i),
            types.add(i),
        );
    }
    sys::CDT_SUCCESS
}
