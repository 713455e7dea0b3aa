//! The [`Unpacker`] a value reads itself from, and the received regions' memory.
use std::alloc::{self, Layout};
use std::any::Any;
use std::collections::VecDeque;
use std::mem::{align_of, size_of};
use std::ptr::NonNull;

use cdtypes_sys as sys;

use crate::error::{Error, Result};
use crate::types::Kind;

use super::memory::{advise_huge_pages, give_buffer, take_block};
use super::schema::Schema;
use super::traits::{PlainData, Unpack};

/// Memory of one received region: allocated from the header's length with the alignment of
/// its kind, so that it becomes a `Vec<T>` without a copy.
pub(crate) struct RegionBuf {
    ptr: NonNull<u8>,
    len: usize,
    align: usize,
    kind: Kind,
}

// SAFETY: owned memory
unsafe impl Send for RegionBuf {}

impl RegionBuf {
    pub(crate) fn alloc(len: usize, kind: Kind) -> Result<Self> {
        let align = kind.align();
        let ptr = if len == 0 {
            NonNull::new(align as *mut u8).expect("non-zero alignment")
        } else {
            let layout = Layout::from_size_align(len, align)
                .map_err(|_| Error::from_code(sys::CDT_ERR_NO_MEMORY))?;
            match take_block(len, align) {
                // a recycled Vec's memory of this very layout (`recycle`)
                Some(p) => p,
                None => {
                    // SAFETY: non-zero size
                    let p = NonNull::new(unsafe { alloc::alloc(layout) })
                        .ok_or_else(|| Error::from_code(sys::CDT_ERR_NO_MEMORY))?;
                    advise_huge_pages(p.as_ptr(), len);
                    p
                }
            }
        };
        Ok(RegionBuf {
            ptr,
            len,
            align,
            kind,
        })
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn into_vec<T: PlainData>(self, kind: Kind) -> Result<Vec<T>> {
        self.check_layout::<T>(kind)?;
        // SAFETY: len bytes were allocated and written (the decoder finished)
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) };
        if !T::valid(bytes) {
            return Err(Error::mismatch(format!(
                "region holds values that are not valid {}",
                std::any::type_name::<T>()
            )));
        }
        // SAFETY: every element is valid (checked above) and plain data holds no pointers
        unsafe { self.into_memory_vec(kind) }
    }

    /// Whether the region can be a `Vec<T>` of `kind`: whole elements, `T`'s alignment (the
    /// allocation's, which the `Vec` frees).
    fn check_layout<T>(&self, kind: Kind) -> Result<()> {
        let size = size_of::<T>();
        if self.kind != kind || size == 0 || self.len % size != 0 || self.align != align_of::<T>() {
            return Err(Error::mismatch(format!(
                "region of {} bytes of {} received as {}",
                self.len,
                self.kind.name(),
                std::any::type_name::<T>()
            )));
        }
        Ok(())
    }

    /// The region as a `Vec<T>` of `len / size_of::<T>()` elements, without a copy (plain
    /// data, or a padded struct's memory, padding included).
    ///
    /// # Safety
    /// Every byte pattern of `T`'s non-padding bytes in the region is a valid `T`, and `T`
    /// holds no pointers (`__PlainMemory`, or checked `PlainData`).
    pub(super) unsafe fn into_memory_vec<T>(self, kind: Kind) -> Result<Vec<T>> {
        self.check_layout::<T>(kind)?;
        if self.len == 0 {
            return Ok(Vec::new());
        }
        let n = self.len / size_of::<T>();
        let ptr = self.ptr.as_ptr() as *mut T;
        std::mem::forget(self);
        // SAFETY: allocated by the global allocator with Layout (n * size_of T, align_of T),
        // exactly Layout::array::<T>(n); its bytes were written by the decoder, and they are
        // a T (the caller's contract)
        Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
    }
}

impl Drop for RegionBuf {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: allocated in alloc() with this layout
            unsafe {
                alloc::dealloc(
                    self.ptr.as_ptr(),
                    Layout::from_size_align_unchecked(self.len, self.align),
                )
            };
        }
    }
}

/// Where a value reads itself from: the received stream and regions.
pub struct Unpacker {
    stream: Vec<u8>,
    pos: usize,
    regions: Vec<Option<RegionBuf>>,
    next_region: usize,
    // sequences unpacked as they arrived, each with the stream offset where it stood
    unpacked: VecDeque<(usize, Box<dyn Any + Send>)>,
}

impl Drop for Unpacker {
    fn drop(&mut self) {
        give_buffer(std::mem::take(&mut self.stream));
    }
}

impl Unpacker {
    pub(crate) fn new(
        stream: Vec<u8>,
        regions: Vec<RegionBuf>,
        unpacked: VecDeque<(usize, Box<dyn Any + Send>)>,
    ) -> Self {
        Unpacker {
            stream,
            pos: 0,
            regions: regions.into_iter().map(Some).collect(),
            next_region: 0,
            unpacked,
        }
    }

    /// The sequence unpacked on arrival that stood here, if any.
    pub(super) fn take_unpacked<T: 'static>(&mut self) -> Result<Option<Vec<T>>> {
        if !matches!(self.unpacked.front(), Some((at, _)) if *at == self.pos) {
            return Ok(None);
        }
        let (_, v) = self.unpacked.pop_front().expect("front");
        match v.downcast::<Vec<T>>() {
            Ok(v) => Ok(Some(*v)),
            Err(_) => Err(Error::mismatch(format!(
                "a sequence unpacked on arrival is read as Vec<{}>",
                std::any::type_name::<T>()
            ))),
        }
    }

    /// Read the fingerprint, unpack a `T`, and check that everything was consumed.
    pub(crate) fn unpack_value<T: Unpack>(mut self) -> Result<T> {
        let want = Schema::of_unpack::<T>();
        let got: u64 = self.read().map_err(|_| {
            Error::mismatch(format!(
                "stream too short for a {}",
                std::any::type_name::<T>()
            ))
        })?;
        if got != want {
            return Err(Error::mismatch(format!(
                "the frame holds another type than {} (fingerprint {got:#x}, expected {want:#x})",
                std::any::type_name::<T>()
            )));
        }
        let value = T::unpack(&mut self)?;
        if self.pos != self.stream.len()
            || self.next_region != self.regions.len()
            || !self.unpacked.is_empty()
        {
            return Err(Error::mismatch(format!(
                "{} left {} stream bytes and {} regions unread",
                std::any::type_name::<T>(),
                self.stream.len() - self.pos,
                self.regions.len() - self.next_region
            )));
        }
        Ok(value)
    }

    /// Stream bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.stream.len() - self.pos
    }

    /// Regions not taken yet.
    pub fn remaining_regions(&self) -> usize {
        self.regions.len() - self.next_region
    }

    /// The next `n` bytes of the stream.
    pub fn read_bytes(&mut self, n: usize) -> Result<&[u8]> {
        if n > self.remaining() {
            return Err(Error::mismatch(format!(
                "stream ends: {n} bytes wanted, {} left",
                self.remaining()
            )));
        }
        let s = &self.stream[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// One plain value from the stream.
    pub fn read<T: PlainData>(&mut self) -> Result<T> {
        let bytes = self.read_bytes(size_of::<T>())?;
        if !T::valid(bytes) {
            return Err(Error::mismatch(format!(
                "stream holds an invalid {}",
                std::any::type_name::<T>()
            )));
        }
        // SAFETY: size_of::<T>() bytes that are a valid T (PlainData contract)
        Ok(unsafe { std::ptr::read_unaligned(bytes.as_ptr() as *const T) })
    }

    /// `N` plain values written by [`Packer::write_plain_slice`] (as [`read`](Unpacker::read)
    /// of each).
    ///
    /// [`Packer::write_plain_slice`]: super::Packer::write_plain_slice
    pub fn read_plain_array<T: PlainData, const N: usize>(&mut self) -> Result<[T; N]> {
        read_plain_array_from(self.read_bytes(N * size_of::<T>())?)
    }

    /// A length written by [`Packer::write_len`].
    ///
    /// [`Packer::write_len`]: super::Packer::write_len
    pub fn read_len(&mut self) -> Result<usize> {
        let n: u64 = self.read()?;
        usize::try_from(n).map_err(|_| Error::mismatch("length does not fit usize"))
    }

    /// A number of elements that follow: at most the bytes and regions left, so that a corrupt
    /// length cannot make the receiver allocate or loop without bound.
    pub fn read_count(&mut self) -> Result<usize> {
        let n = self.read_len()?;
        self.check_count(n)?;
        Ok(n)
    }

    pub(super) fn check_count(&self, n: usize) -> Result<()> {
        if n > self.remaining() + self.remaining_regions() {
            return Err(Error::mismatch(format!(
                "sequence of {n} elements in {} stream bytes and {} regions",
                self.remaining(),
                self.remaining_regions()
            )));
        }
        Ok(())
    }

    /// The next region as a `Vec<T>` (no copy).
    pub fn region<T: PlainData>(&mut self) -> Result<Vec<T>> {
        self.region_of_kind(T::KIND)
    }

    pub(crate) fn region_of_kind<T: PlainData>(&mut self, kind: Kind) -> Result<Vec<T>> {
        self.next_region(std::any::type_name::<T>())?.into_vec(kind)
    }

    /// The next region, for a `Vec<what>`.
    pub(super) fn next_region(&mut self, what: &str) -> Result<RegionBuf> {
        let slot = self
            .regions
            .get_mut(self.next_region)
            .and_then(Option::take);
        let buf =
            slot.ok_or_else(|| Error::mismatch(format!("no region left for a Vec<{what}>")))?;
        self.next_region += 1;
        Ok(buf)
    }
}

/// One plain value from exactly its bytes.
#[inline]
pub(super) fn read_plain<T: PlainData>(bytes: &[u8]) -> Result<T> {
    if bytes.len() != size_of::<T>() || !T::valid(bytes) {
        return Err(Error::mismatch(format!(
            "stream holds an invalid {}",
            std::any::type_name::<T>()
        )));
    }
    // SAFETY: size_of::<T>() bytes that are a valid T (PlainData contract)
    Ok(unsafe { std::ptr::read_unaligned(bytes.as_ptr() as *const T) })
}

/// N plain values from exactly `N * size_of::<T>()` bytes, checked once (PlainData::valid).
#[inline]
pub(super) fn read_plain_array_from<T: PlainData, const N: usize>(bytes: &[u8]) -> Result<[T; N]> {
    if bytes.len() != N * size_of::<T>() || !T::valid(bytes) {
        return Err(Error::mismatch(format!(
            "stream holds an invalid [{}; {N}]",
            std::any::type_name::<T>()
        )));
    }
    let mut out = std::mem::MaybeUninit::<[T; N]>::uninit();
    // SAFETY: N * size_of T bytes that are valid values of T (PlainData contract) fill the
    // array exactly; the destination is a separate local
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.as_mut_ptr() as *mut u8, bytes.len());
        Ok(out.assume_init())
    }
}
