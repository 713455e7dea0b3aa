//! The [`Packer`] a value writes itself to, and the blocks of its stream packed late.
use std::marker::PhantomData;
use std::mem::{size_of, size_of_val};

use cdtypes_sys as sys;

use crate::error::Error;
use crate::types::Kind;

use super::derived::__fixed_size;
use super::memory::take_buffer;
use super::traits::{Pack, PlainData};

/// The bytes a `Vec` of fixed-size elements must take in the stream before it is packed late
/// (by the library, straight into the frame or the transport's copy) instead of into the
/// packer's in-line bytes.
pub(super) const DEFER_MIN_BYTES: usize = 1024;

/// A block of the stream packed late: `count` elements of `size` bytes at `base`.
pub(crate) struct Deferred {
    /// Offset in the in-line bytes before which the block stands.
    pub(crate) at: usize,
    pub(crate) count: usize,
    pub(crate) size: usize,
    base: *const u8,
    pack: unsafe fn(*const u8, usize, usize, &mut [u8]),
    pack_window: unsafe fn(*const u8, usize, usize, &mut [u8]),
}

/// Bytes [skip, skip + out.len()) of element `i` of the slice at `base`.
///
/// # Safety
/// `base` points at a live `[T]` of more than `i` elements.
unsafe fn pack_window<T: Pack>(base: *const u8, i: usize, skip: usize, out: &mut [u8]) {
    // SAFETY: the caller's contract
    let x = unsafe { &*(base as *const T).add(i) };
    x.pack_fixed_window(skip, out);
}

/// Elements [from, to) of the slice at `base` in their fixed-size forms into `out`.
///
/// # Safety
/// `base` points at a live `[T]` of at least `to` elements.
unsafe fn pack_range<T: Pack>(base: *const u8, from: usize, to: usize, out: &mut [u8]) {
    // SAFETY: the caller's contract
    let items = unsafe { std::slice::from_raw_parts((base as *const T).add(from), to - from) };
    let size = __fixed_size(T::FIXED_SIZE);
    for (x, o) in items.iter().zip(out.chunks_exact_mut(size)) {
        x.pack_fixed(o);
    }
}

impl Deferred {
    /// Bytes [rel, rel + out.len()) of the block into `out`.
    pub(crate) fn pack_bytes(&self, rel: usize, out: &mut [u8]) {
        let size = self.size;
        let mut first = rel / size;
        let mut at = 0;
        let skip = rel % size;
        // element i's bytes [from, from + n) where a fragment cuts it
        let part = |i: usize, from: usize, out: &mut [u8]| {
            let n = out.len().min(size - from);
            // SAFETY: i < count, the block's slice is borrowed by the packed value
            unsafe { (self.pack_window)(self.base, i, from, &mut out[..n]) };
            n
        };
        if first >= self.count {
            return;
        }
        if skip != 0 || out.len() < size {
            // the rest of an element cut by the previous fragment (or this one)
            at += part(first, skip, out);
            first += 1;
        }
        let whole = ((out.len() - at) / size).min(self.count.saturating_sub(first));
        if whole > 0 {
            // SAFETY: first + whole <= count
            unsafe {
                (self.pack)(
                    self.base,
                    first,
                    first + whole,
                    &mut out[at..at + whole * size],
                )
            };
            at += whole * size;
            first += whole;
        }
        if at < out.len() && first < self.count {
            part(first, 0, &mut out[at..]);
        }
    }
}

/// Where a value writes itself: the packed stream and the list of regions.
pub struct Packer<'a> {
    pub(crate) stream: Vec<u8>,
    // blocks of the stream packed late (pointing into the value, borrowed for 'a)
    pub(crate) deferred: Vec<Deferred>,
    deferred_bytes: usize,
    pub(crate) regions: Vec<sys::cdt_sobj_buffer>,
    // regions the packer owns (copies made while packing); their heap memory does not move
    pub(crate) owned: Vec<Vec<u8>>,
    pub(crate) error: Option<Error>,
    _borrow: PhantomData<&'a [u8]>,
}

impl<'a> Packer<'a> {
    pub(crate) fn new(fingerprint: u64) -> Self {
        let mut p = Packer {
            stream: take_buffer(64),
            deferred: Vec::new(),
            deferred_bytes: 0,
            regions: Vec::new(),
            owned: Vec::new(),
            error: None,
            _borrow: PhantomData,
        };
        p.write(fingerprint);
        p
    }

    /// Append bytes to the stream.
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        self.stream.extend_from_slice(bytes);
    }

    /// Append one plain value to the stream.
    pub fn write<T: PlainData>(&mut self, value: T) {
        // SAFETY: PlainData has no padding, so all its bytes are initialised
        let bytes =
            unsafe { std::slice::from_raw_parts(&value as *const T as *const u8, size_of::<T>()) };
        self.stream.extend_from_slice(bytes);
    }

    /// Append the bytes of a slice of plain values (as [`write`](Packer::write) of each).
    pub fn write_plain_slice<T: PlainData>(&mut self, values: &[T]) {
        // SAFETY: PlainData has no padding, so all its bytes are initialised
        let bytes = unsafe {
            std::slice::from_raw_parts(values.as_ptr() as *const u8, size_of_val(values))
        };
        self.stream.extend_from_slice(bytes);
    }

    /// Append a length (as `u64`).
    pub fn write_len(&mut self, n: usize) {
        self.write(n as u64);
    }

    /// Send `data` as one region (zero-copy: the frame points at it).
    pub fn region<T: PlainData>(&mut self, data: &'a [T]) {
        self.region_of_kind(data, T::KIND);
    }

    pub(crate) fn region_of_kind<T: PlainData>(&mut self, data: &'a [T], kind: Kind) {
        self.region_memory(data, kind);
    }

    /// Send the memory of `data`, padding included, as one region of `kind` (a padded
    /// struct's slice: the C library reads the bytes, no Rust reference to them is made).
    pub(crate) fn region_memory<T>(&mut self, data: &'a [T], kind: Kind) {
        self.regions.push(sys::cdt_sobj_buffer {
            base: data.as_ptr() as *mut std::os::raw::c_void,
            len: std::mem::size_of_val(data) as i64,
            kind: kind.raw(),
        });
    }

    /// Send `data` as one region that the packer keeps until the frame is gone (for bytes
    /// that do not live in the value, e.g. a copy made while serializing).
    #[cfg_attr(not(feature = "serde"), allow(dead_code))]
    pub(crate) fn region_owned(&mut self, data: Vec<u8>, kind: Kind) {
        self.regions.push(sys::cdt_sobj_buffer {
            // the Vec's heap memory stays where it is when the Vec moves into `owned`
            base: data.as_ptr() as *mut std::os::raw::c_void,
            len: data.len() as i64,
            kind: kind.raw(),
        });
        self.owned.push(data);
    }

    /// Record that the value cannot be packed: encoding (or sending) it fails with `error`
    /// (the first one recorded) instead of sending anything.
    pub fn fail(&mut self, error: Error) {
        self.error.get_or_insert(error);
    }

    /// Whether [`fail`](Packer::fail) was called.
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Overwrite in-line stream bytes written earlier at `offset` (from
    /// [`inline_len`](Packer::inline_len): a length known only afterwards).
    #[cfg_attr(not(feature = "serde"), allow(dead_code))]
    pub(crate) fn patch(&mut self, offset: usize, bytes: &[u8]) {
        if let Some(dst) = self.stream.get_mut(offset..offset + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
    }

    /// Bytes written to the stream so far (the fingerprint included).
    pub fn stream_len(&self) -> usize {
        self.stream.len() + self.deferred_bytes
    }

    /// Bytes written to the in-line part of the stream so far (offsets for `patch`).
    #[cfg_attr(not(feature = "serde"), allow(dead_code))]
    pub(crate) fn inline_len(&self) -> usize {
        self.stream.len()
    }

    /// A block of fixed-size elements packed late, when the library asks for its bytes.
    pub(super) fn defer_fixed<T: Pack>(&mut self, items: &'a [T], size: usize) {
        self.deferred.push(Deferred {
            at: self.stream.len(),
            count: items.len(),
            size,
            base: items.as_ptr().cast(),
            pack: pack_range::<T>,
            pack_window: pack_window::<T>,
        });
        self.deferred_bytes += items.len() * size;
    }

    /// Regions so far.
    pub fn region_count(&self) -> usize {
        self.regions.len()
    }
}
