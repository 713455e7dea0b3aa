//! The Serde-like traits: a value describes itself to a [`Packer`] (fixed-size fields go into
//! the packed stream, slices of plain data become zero-copy regions) and is rebuilt from an
//! [`Unpacker`], whose regions were allocated from the frame header's lengths before their
//! bytes arrived and become the received `Vec`s without a copy.
//!
//! Stream layout (all integers in the sender's byte order, which the frame records): an 8-byte
//! type fingerprint ([`Schema`]), then the fields in declaration order; a sequence is its length
//! as `u64` followed by its elements, except a sequence of [`PlainData`] (and `String`), which
//! is one region and nothing in the stream.
use std::alloc::{self, Layout};
use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::mem::{align_of, size_of, size_of_val};
use std::ptr::NonNull;

use cdtypes_sys as sys;

use crate::error::{Error, Result};
use crate::types::Kind;

/// A type fingerprint: a 64-bit FNV-1a hash of a description of the type, written first in
/// the stream and checked by the receiver, so that receiving a frame as another type is an
/// error. Derived types describe themselves by name, field names and field types as written
/// (and their generic parameters); std types by their structure.
#[derive(Clone, Debug)]
pub struct Schema {
    hash: u64,
}

impl Default for Schema {
    fn default() -> Self {
        Schema {
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }
}

impl Schema {
    /// Mix `part` (and a separator) into the fingerprint.
    pub fn push(&mut self, part: &str) {
        for b in part.bytes().chain(std::iter::once(0xff)) {
            self.hash ^= u64::from(b);
            self.hash = self.hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The fingerprint so far.
    pub fn finish(&self) -> u64 {
        self.hash
    }

    /// The fingerprint of `T` as a sender describes it.
    pub fn of_pack<T: Pack + ?Sized>() -> u64 {
        Self::cached(<T as Pack>::describe)
    }

    /// The fingerprint of `T` as a receiver describes it.
    pub fn of_unpack<T: Unpack>() -> u64 {
        Self::cached(<T as Unpack>::describe)
    }

    /// The fingerprint a `describe` function makes, remembered by the thread (every message
    /// needs it, and describing a type hashes its text and may allocate). Keyed by the
    /// function's address: two functions at one address are the same code, which describes
    /// the same way (`describe` is a pure function of the type).
    fn cached(describe: fn(&mut Schema)) -> u64 {
        const N: usize = 8;
        thread_local! {
            static CACHE: std::cell::Cell<([(usize, u64); N], usize)> =
                const { std::cell::Cell::new(([(0, 0); N], 0)) };
        }
        let key = describe as usize;
        let compute = || {
            let mut s = Schema::default();
            describe(&mut s);
            s.finish()
        };
        CACHE
            .try_with(|c| {
                let (mut entries, next) = c.get();
                if let Some((_, h)) = entries.iter().find(|(k, _)| *k == key) {
                    return *h;
                }
                let h = compute();
                entries[next % N] = (key, h);
                c.set((entries, next + 1));
                h
            })
            .unwrap_or_else(|_| compute())
    }
}

/// Plain data: a `Copy` type with no padding and no pointers whose bytes are sent as they are
/// in memory, with a frame element [`Kind`]. A slice of it travels as one zero-copy region.
///
/// # Safety
/// `Self` must have no padding bytes, no pointers, `align_of::<Self>()` equal to the kind's
/// element alignment, and every byte pattern for which [`valid`](PlainData::valid) returns true
/// must be a valid value.
pub unsafe trait PlainData: Copy + 'static {
    /// The element kind recorded in the frame.
    const KIND: Kind;
    /// Whether `bytes` (a whole number of elements) are valid values (e.g. bool is 0 or 1).
    fn valid(bytes: &[u8]) -> bool {
        let _ = bytes;
        true
    }
}

/// A value that can be sent: it writes its fields to the [`Packer`].
pub trait Pack {
    /// Write `self`: fixed-size fields into the stream, plain-data slices as regions (which
    /// borrow `self` for `'a`: they are not copied).
    fn pack<'a>(&'a self, p: &mut Packer<'a>);

    /// Describe the type for the fingerprint (see [`Schema`]). Must match the receiving
    /// type's [`Unpack::describe`], and always describe the same way (it is remembered).
    fn describe(s: &mut Schema) {
        s.push(std::any::type_name::<Self>());
    }

    /// Write a slice of `Self` (a `Vec<Self>`): by default its length and each element;
    /// plain-data types override it to send the slice as one region.
    #[doc(hidden)]
    fn pack_slice<'a>(items: &'a [Self], p: &mut Packer<'a>)
    where
        Self: Sized,
    {
        p.write_len(items.len());
        if let Some(size) = Self::FIXED_SIZE.filter(|s| *s > 0) {
            if let Some(total) = items.len().checked_mul(size) {
                if total >= DEFER_MIN_BYTES {
                    // packed later, straight into the frame or the transport's copy
                    p.defer_fixed(items, size);
                    return;
                }
                // one block of the stream, each element written at its offset
                let start = p.stream.len();
                p.stream.resize(start + total, 0);
                for (x, out) in items.iter().zip(p.stream[start..].chunks_exact_mut(size)) {
                    x.pack_fixed(out);
                }
                return;
            }
        }
        // about what the elements take in the stream (their size in memory): one allocation
        // instead of a doubling stream
        p.stream.reserve(std::mem::size_of_val(items));
        for x in items {
            x.pack(p);
        }
    }

    /// Bytes this type always writes to the stream when it writes no region (integers,
    /// floats, arrays and tuples of them, derived structs of such fields); `None` otherwise.
    /// A slice of such a type is written through [`pack_fixed`](Pack::pack_fixed) into one
    /// block of the stream (the same bytes as [`pack`](Pack::pack) of each element).
    #[doc(hidden)]
    const FIXED_SIZE: Option<usize> = None;

    /// Write exactly `FIXED_SIZE` bytes into `out` (as [`pack`](Pack::pack) would append them).
    #[doc(hidden)]
    #[inline]
    fn pack_fixed(&self, out: &mut [u8]) {
        let _ = out;
    }

    /// Bytes [skip, skip + out.len()) of the fixed-size form into `out` (a fragment of the
    /// stream that cuts the value): by default the whole form into a scratch buffer and the
    /// part copied; arrays and derived structs write only the fields the window covers.
    #[doc(hidden)]
    #[inline]
    fn pack_fixed_window(&self, skip: usize, out: &mut [u8]) {
        let size = __fixed_size(Self::FIXED_SIZE);
        if skip == 0 && out.len() == size {
            return self.pack_fixed(out);
        }
        let mut small = [0u8; 64];
        let mut big = Vec::new();
        let tmp: &mut [u8] = if size <= small.len() {
            &mut small[..size]
        } else {
            big.resize(size, 0);
            &mut big
        };
        self.pack_fixed(tmp);
        if let Some(src) = tmp.get(skip..skip + out.len()) {
            out.copy_from_slice(src);
        }
    }

    /// [`pack_fixed_window`](Pack::pack_fixed_window) of a fixed-size array's elements: by
    /// default each element the window covers; plain data copies the byte range.
    #[doc(hidden)]
    #[inline]
    fn pack_fixed_array_window(items: &[Self], skip: usize, out: &mut [u8])
    where
        Self: Sized,
    {
        let mut at = 0;
        for x in items {
            __pack_field_window(x, skip, out, &mut at);
        }
    }

    /// The fixed-size form of a fixed-size array's elements, one after another, into `out`
    /// (`items.len() * FIXED_SIZE` bytes): by default each element; plain-data types override
    /// it with one copy of the array's bytes. An element-wise loop over a `[i32; 2048]` field
    /// made a `Vec` of such structs move at under 1 GB/s over shared memory.
    #[doc(hidden)]
    #[inline]
    fn pack_fixed_array(items: &[Self], out: &mut [u8])
    where
        Self: Sized,
    {
        let mut at = 0;
        for x in items {
            __pack_field(x, out, &mut at);
        }
    }

    /// Write the elements of a fixed-size array: by default each one; plain-data types
    /// override it to copy the array's bytes at once (the same stream bytes).
    #[doc(hidden)]
    fn pack_array<'a>(items: &'a [Self], p: &mut Packer<'a>)
    where
        Self: Sized,
    {
        for x in items {
            x.pack(p);
        }
    }
}

/// A value that can be received: it reads its fields from the [`Unpacker`] in the order
/// [`Pack`] wrote them.
pub trait Unpack: Sized {
    /// Read a value.
    fn unpack(u: &mut Unpacker) -> Result<Self>;

    /// Describe the type for the fingerprint; must match the sender's [`Pack::describe`].
    fn describe(s: &mut Schema) {
        s.push(std::any::type_name::<Self>());
    }

    /// Read what [`Pack::pack_slice`] wrote.
    #[doc(hidden)]
    fn unpack_vec(u: &mut Unpacker) -> Result<Vec<Self>> {
        __unpack_vec_default(u)
    }

    /// Describe this type's stream for a receive that unpacks on arrival (see [`__Plan`]): by
    /// default its fixed size, or "the rest is read by [`unpack`](Unpack::unpack)".
    #[doc(hidden)]
    fn plan(p: &mut __Plan) {
        match Self::FIXED_SIZE {
            Some(n) => p.fixed(n),
            None => p.rest(),
        }
    }

    /// [`plan`](Unpack::plan) of a `Vec<Self>`: by default a length and fixed-size elements
    /// kept for [`unpack_vec`](Unpack::unpack_vec); derived structs unpack them on arrival,
    /// plain data is a region (nothing in the stream).
    #[doc(hidden)]
    fn vec_plan(p: &mut __Plan) {
        match Self::FIXED_SIZE {
            Some(size) if size > 0 => p.inline_seq(size),
            _ => {
                // elements with nothing in the stream (Strings, plain-data Vecs: regions)
                // leave only the length there
                let mut sub = __Plan::empty();
                Self::plan(&mut sub);
                if sub.items.is_empty() && !sub.ended {
                    p.fixed(8);
                } else {
                    p.rest();
                }
            }
        }
    }

    /// Bytes this type always reads from the stream when it reads no region; must equal the
    /// sending type's [`Pack::FIXED_SIZE`] when both are `Some` (see there).
    #[doc(hidden)]
    const FIXED_SIZE: Option<usize> = None;

    /// Read N values, one after another, from their fixed-size forms in `bytes` (what
    /// [`Pack::pack_fixed_array`] wrote): by default each element; plain-data types override
    /// it with one check and one copy.
    #[doc(hidden)]
    #[inline]
    fn unpack_fixed_array<const N: usize>(bytes: &[u8]) -> Result<[Self; N]> {
        let mut out = std::mem::MaybeUninit::<[Self; N]>::uninit();
        let first = out.as_mut_ptr() as *mut Self;
        let mut at = 0;
        for i in 0..N {
            // on an error the elements written so far are leaked, never read or dropped twice
            let x = __unpack_field::<Self>(bytes, &mut at)?;
            // SAFETY: i < N, inside the array; each slot written once
            unsafe { first.add(i).write(x) };
        }
        // SAFETY: all N elements were written
        Ok(unsafe { out.assume_init() })
    }

    /// [`unpack_fixed`](Unpack::unpack_fixed) written straight into `dst` (a large struct is
    /// not moved through the stack): derived structs write field by field, arrays of plain
    /// data copy once.
    ///
    /// # Safety
    /// `dst` is valid for writes of a `Self` (it may be uninitialised and unaligned: a field
    /// of a packed struct; it is not dropped). On success `*dst` is initialised; on an error,
    /// fields written so far are leaked.
    #[doc(hidden)]
    #[inline]
    unsafe fn unpack_fixed_into(bytes: &[u8], dst: *mut Self) -> Result<()> {
        let x = Self::unpack_fixed(bytes)?;
        // SAFETY: the caller's contract (unaligned: the field of a packed struct)
        unsafe { dst.write_unaligned(x) };
        Ok(())
    }

    /// [`unpack_fixed_into`](Unpack::unpack_fixed_into) of N consecutive values at `dst`.
    ///
    /// # Safety
    /// As `unpack_fixed_into`, for N values at `dst`.
    #[doc(hidden)]
    #[inline]
    unsafe fn unpack_fixed_array_into<const N: usize>(bytes: &[u8], dst: *mut Self) -> Result<()> {
        let mut at = 0;
        for i in 0..N {
            // SAFETY: i < N: inside the caller's N values
            unsafe { __unpack_field_into::<Self>(bytes, &mut at, dst.add(i))? };
        }
        Ok(())
    }

    /// Read a value from exactly `FIXED_SIZE` bytes (what [`Pack::pack_fixed`] wrote).
    #[doc(hidden)]
    #[inline]
    fn unpack_fixed(bytes: &[u8]) -> Result<Self> {
        let _ = bytes;
        Err(Error::mismatch(format!(
            "{} has no fixed-size form",
            std::any::type_name::<Self>()
        )))
    }

    /// Read what [`Pack::pack_array`] wrote.
    #[doc(hidden)]
    fn unpack_array<const N: usize>(u: &mut Unpacker) -> Result<[Self; N]> {
        let mut v = Vec::with_capacity(N);
        for _ in 0..N {
            v.push(Self::unpack(u)?);
        }
        Ok(v.try_into().ok().expect("N elements"))
    }
}

/// The default [`Unpack::unpack_vec`]: a length, then the elements (one block of fixed-size
/// forms when the element has one).
#[doc(hidden)]
pub fn __unpack_vec_default<T: Unpack>(u: &mut Unpacker) -> Result<Vec<T>> {
    let n = u.read_count()?;
    read_elements(u, n)
}

/// The `n` elements of a sequence whose length was read.
fn read_elements<T: Unpack>(u: &mut Unpacker, n: usize) -> Result<Vec<T>> {
    if let Some(size) = T::FIXED_SIZE.filter(|s| *s > 0) {
        // the elements are one block of n * size stream bytes (checked before allocating)
        let total = n
            .checked_mul(size)
            .ok_or_else(|| Error::mismatch(format!("sequence of {n} elements overflows")))?;
        let bytes = u.read_bytes(total)?;
        let mut v = Vec::with_capacity(n);
        for b in bytes.chunks_exact(size) {
            v.push(T::unpack_fixed(b)?);
        }
        return Ok(v);
    }
    // n is at most the stream bytes and regions left, so this reserves at most
    // size_of::<Self>() times what the frame holds; when even that cannot be had, the
    // vector grows as elements arrive
    let mut v = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        v.reserve(n.min(4096));
    }
    for _ in 0..n {
        v.push(T::unpack(u)?);
    }
    Ok(v)
}

/// [`Unpack::vec_plan`] of a derived fixed-size struct: its elements are unpacked into the
/// receiving `Vec` as they arrive ([`__unpack_fixed_vec`] takes them).
#[doc(hidden)]
pub fn __plan_fixed_vec<T: Unpack + Send + 'static>(p: &mut __Plan) {
    match T::FIXED_SIZE {
        Some(size) if size > 0 => p.push(PlanItem::Seq {
            size,
            make: make_sink::<T>,
        }),
        _ => p.rest(),
    }
}

/// [`Unpack::unpack_vec`] of a derived fixed-size struct: the elements unpacked on arrival
/// when the receive planned them, else from the stream.
#[doc(hidden)]
pub fn __unpack_fixed_vec<T: Unpack + Send + 'static>(u: &mut Unpacker) -> Result<Vec<T>> {
    if T::FIXED_SIZE.unwrap_or(0) == 0 {
        return __unpack_vec_default(u);
    }
    let n = u.read_len()?;
    if let Some(v) = u.take_unpacked::<T>()? {
        if v.len() != n {
            return Err(Error::mismatch(format!(
                "a sequence of {n} elements arrived as {}",
                v.len()
            )));
        }
        return Ok(v);
    }
    u.check_count(n)?;
    read_elements(u, n)
}

thread_local! {
    static ON_ARRIVAL: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Sequences this thread unpacked as their bytes arrived (tests: which path a receive took).
#[doc(hidden)]
pub fn __sequences_unpacked_on_arrival() -> u64 {
    ON_ARRIVAL.with(|c| c.get())
}

/// Elements of one planned sequence, unpacked as their bytes arrive (into a `Vec` allocated
/// once from the sequence's length).
pub(crate) trait SeqSink: Send {
    /// Unpack whole elements (`bytes` is a multiple of the element's fixed size).
    fn feed(&mut self, bytes: &[u8]) -> Result<()>;
    /// The `Vec` of the elements.
    fn finish(self: Box<Self>) -> Box<dyn Any + Send>;
}

struct VecSink<T> {
    v: Vec<T>,
    size: usize,
}

impl<T: Unpack + Send + 'static> SeqSink for VecSink<T> {
    fn feed(&mut self, bytes: &[u8]) -> Result<()> {
        let k = bytes.len() / self.size;
        let len = self.v.len();
        let spare = self.v.spare_capacity_mut();
        if spare.len() < k {
            return Err(Error::mismatch("more elements than the sequence announced"));
        }
        let mut written = 0;
        let mut result = Ok(());
        for (slot, b) in spare.iter_mut().zip(bytes.chunks_exact(self.size)) {
            // SAFETY: a spare slot of the Vec, valid for a write of T; counted only once
            // written whole
            match unsafe { T::unpack_fixed_into(b, slot.as_mut_ptr()) } {
                Ok(()) => written += 1,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        // SAFETY: the first `written` spare slots were initialised above (within capacity)
        unsafe { self.v.set_len(len + written) };
        result
    }
    fn finish(self: Box<Self>) -> Box<dyn Any + Send> {
        ON_ARRIVAL.with(|c| c.set(c.get() + 1));
        Box::new(self.v)
    }
}

fn make_sink<T: Unpack + Send + 'static>(n: usize) -> Result<Box<dyn SeqSink>> {
    let mut v: Vec<T> = match take_recycled::<T>(n) {
        Some(v) => v,
        None => {
            let mut v: Vec<T> = Vec::new();
            v.try_reserve_exact(n)
                .map_err(|_| Error::from_code(sys::CDT_ERR_NO_MEMORY))?;
            advise_huge_pages(v.as_mut_ptr().cast(), v.capacity() * size_of::<T>());
            v
        }
    };
    v.clear();
    Ok(Box::new(VecSink {
        v,
        size: T::FIXED_SIZE.unwrap_or(1),
    }))
}

/// Recycled `Vec`s smaller than this are not kept (fresh memory of that size is cheap).
const RECYCLE_MIN_BYTES: usize = 64 << 10;
/// At most this many recycled `Vec`s, and bytes in all, per thread.
const RECYCLE_MAX_COUNT: usize = 8;
const RECYCLE_MAX_BYTES: usize = 256 << 20;

thread_local! {
    // (capacity in bytes, the Vec) of Vecs handed back with `recycle`, oldest first
    static RECYCLED: std::cell::RefCell<VecDeque<(usize, Box<dyn Any>)>> =
        const { std::cell::RefCell::new(VecDeque::new()) };
}

/// Hand a `Vec` you no longer need to the receives of this thread: the next `Vec<T>` of a
/// derived fixed-size struct that a receive unpacks as it arrives (see the crate docs) takes
/// its memory when it holds between `n` and `2n` elements for `n` received ones, instead of
/// fresh memory. Fresh memory costs a page fault and the kernel's zeroing per 4 KiB on its first
/// write, which for an object of a few MiB takes longer than the transfer itself; receiving into
/// reused memory is what the C transport does with a buffer it receives into again.
///
/// Kept per thread (the thread whose waits progress the receives), at most 8 `Vec`s and
/// 256 MiB (the oldest go first); `Vec`s under 64 KiB, and `Vec`s of other element types, are
/// dropped at once.
///
/// ```
/// # use cdtypes::{Pack, Unpack};
/// #[derive(Pack, Unpack, Clone, Copy, PartialEq, Debug)]
/// struct P { x: f64, y: f64, id: u32 }
///
/// let frame = cdtypes::to_vec(&vec![P { x: 1.0, y: 2.0, id: 3 }; 10_000]).unwrap();
/// let first: Vec<P> = cdtypes::from_bytes(&frame).unwrap();
/// cdtypes::recycle(first);                         // done with it
/// let again: Vec<P> = cdtypes::from_bytes(&frame).unwrap();  // lands in its memory
/// assert_eq!(again.len(), 10_000);
/// ```
pub fn recycle<T: Unpack + Send + 'static>(mut v: Vec<T>) {
    let bytes = v.capacity().saturating_mul(size_of::<T>());
    if !(RECYCLE_MIN_BYTES..=RECYCLE_MAX_BYTES).contains(&bytes) {
        return;
    }
    // only types whose Vec a receive unpacks on arrival take recycled memory
    let mut plan = __Plan::empty();
    T::vec_plan(&mut plan);
    if !matches!(plan.items.first(), Some(PlanItem::Seq { .. })) {
        return;
    }
    v.clear();
    let _ = RECYCLED.try_with(|r| {
        let Ok(mut r) = r.try_borrow_mut() else {
            return;
        };
        r.push_back((bytes, Box::new(v)));
        let mut total: usize = r.iter().map(|(b, _)| *b).sum();
        while r.len() > RECYCLE_MAX_COUNT || total > RECYCLE_MAX_BYTES {
            let Some((b, _)) = r.pop_front() else { break };
            total -= b;
        }
    });
}

/// A recycled `Vec<T>` with room for `n` to `2n` elements (`n` > 0), if this thread has one.
fn take_recycled<T: 'static>(n: usize) -> Option<Vec<T>> {
    if n == 0 {
        return None;
    }
    RECYCLED
        .try_with(|r| {
            let mut r = r.try_borrow_mut().ok()?;
            let fits = |v: &Vec<T>| v.capacity() >= n && v.capacity() <= n.saturating_mul(2);
            let i = r
                .iter()
                .position(|(_, v)| v.downcast_ref::<Vec<T>>().is_some_and(fits))?;
            let (_, v) = r.remove(i)?;
            v.downcast::<Vec<T>>().ok().map(|v| *v)
        })
        .ok()
        .flatten()
}

/// Received memory of at least this many bytes is marked for transparent huge pages (as
/// libcdt's own receive memory, bindings/cdt_receive_memory.h).
const HUGE_MIN_BYTES: usize = 4 << 20;

/// Mark the whole pages of fresh receive memory `[p, p + len)` for transparent huge pages
/// (`madvise(MADV_HUGEPAGE)`; only advice, ignored where the kernel has none). Where the kernel
/// gives huge pages only on request (THP "madvise", a common default), the first write of each
/// 4 KiB of fresh memory is a page fault, and the receiver's unpack (or the kernel's
/// cross-process copy) takes them one by one: a 2 MiB page is one fault instead of 512.
fn advise_huge_pages(p: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        const MADV_HUGEPAGE: std::os::raw::c_int = 14;
        extern "C" {
            fn madvise(
                addr: *mut std::os::raw::c_void,
                len: usize,
                advice: std::os::raw::c_int,
            ) -> std::os::raw::c_int;
        }
        if len < HUGE_MIN_BYTES {
            return;
        }
        let start = (p as usize).next_multiple_of(PAGE);
        let end = (p as usize + len) / PAGE * PAGE;
        if end > start {
            // SAFETY: whole pages inside an allocation of ours; the advice changes no content
            unsafe {
                madvise(
                    start as *mut std::os::raw::c_void,
                    end - start,
                    MADV_HUGEPAGE,
                )
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (p, len);
}

/// One item of a receive plan.
#[derive(Clone, Copy)]
pub(crate) enum PlanItem {
    /// Bytes kept for the unpacker.
    Fixed(usize),
    /// A `u64` length (kept), then that many elements of `size` bytes unpacked on arrival.
    Seq {
        size: usize,
        make: fn(usize) -> Result<Box<dyn SeqSink>>,
    },
}

/// How a type's packed stream is laid out, as far as a receive can tell before it arrives:
/// fixed bytes, and sequences of fixed-size elements (a length, then the elements) that can
/// be unpacked as they arrive. Anything else ends the plan: the rest of the stream is kept
/// for [`Unpacker`]. A plan that disagrees with what [`Unpack::unpack`] reads makes the
/// receive fail with a mismatch, never anything worse.
#[doc(hidden)]
pub struct __Plan {
    items: Vec<PlanItem>,
    ended: bool,
}

pub(crate) type Plan = __Plan;

impl Default for __Plan {
    /// A plan of a whole stream: the fingerprint comes first.
    fn default() -> Self {
        __Plan {
            items: vec![PlanItem::Fixed(8)],
            ended: false,
        }
    }
}

/// Most items a plan takes (a struct of many fields of sequences); the rest is kept.
const PLAN_MAX_ITEMS: usize = 64;

impl __Plan {
    fn empty() -> Self {
        __Plan {
            items: Vec::new(),
            ended: false,
        }
    }

    /// `n` fixed bytes.
    pub fn fixed(&mut self, n: usize) {
        if self.ended || n == 0 {
            return;
        }
        // (the fingerprint, item 0, stays an item of its own: it is checked on arrival)
        let merge = self.items.len() > 1;
        match self.items.last_mut() {
            Some(PlanItem::Fixed(m)) if merge => *m += n,
            _ => self.push(PlanItem::Fixed(n)),
        }
    }

    /// A sequence of fixed-size elements read by the unpacker (no gain from planning it: the
    /// plan ends there).
    pub fn inline_seq(&mut self, _size: usize) {
        self.rest();
    }

    /// From here on the stream is read by the unpacker.
    pub fn rest(&mut self) {
        self.ended = true;
    }

    fn push(&mut self, item: PlanItem) {
        if self.ended {
            // after an item the plan cannot follow, the stream is the unpacker's
        } else if self.items.len() >= PLAN_MAX_ITEMS {
            self.ended = true;
        } else {
            self.items.push(item);
        }
    }

    /// Items up to the first sequence: a plan without one gains nothing.
    pub(crate) fn into_items(mut self) -> Vec<PlanItem> {
        if !self.items.iter().any(|i| matches!(i, PlanItem::Seq { .. })) {
            self.items.clear();
        }
        self.items
    }
}

/// The bytes a `Vec` of fixed-size elements must take in the stream before it is packed late
/// (by the library, straight into the frame or the transport's copy) instead of into the
/// packer's in-line bytes.
const DEFER_MIN_BYTES: usize = 1024;

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

// Stream buffers kept for reuse by the thread that last dropped them: a sent value's stream
// becomes the next stream or received in-band part, so large streams do not take fresh pages
// (and their page faults) on every message. At most SPARE_COUNT buffers of SPARE_BYTES each.
const SPARE_COUNT: usize = 2;
const SPARE_BYTES: usize = 64 << 20;

thread_local! {
    static SPARE: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// An empty buffer: a spare one when the thread has one, else a new one of `capacity`.
pub(crate) fn take_buffer(capacity: usize) -> Vec<u8> {
    let spare = SPARE
        .try_with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.pop()))
        .ok()
        .flatten();
    match spare {
        Some(mut v) => {
            v.clear();
            v
        }
        None => Vec::with_capacity(capacity),
    }
}

/// Keep `buf` for reuse (or free it when the thread keeps enough).
pub(crate) fn give_buffer(buf: Vec<u8>) {
    if buf.capacity() < 4096 || buf.capacity() > SPARE_BYTES {
        return;
    }
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if s.len() < SPARE_COUNT {
                s.push(buf);
            }
        }
    });
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
    fn defer_fixed<T: Pack>(&mut self, items: &'a [T], size: usize) {
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
            // SAFETY: non-zero size
            let p = NonNull::new(unsafe { alloc::alloc(layout) })
                .ok_or_else(|| Error::from_code(sys::CDT_ERR_NO_MEMORY))?;
            advise_huge_pages(p.as_ptr(), len);
            p
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
        let size = size_of::<T>();
        if self.kind != kind || size == 0 || self.len % size != 0 || self.align != align_of::<T>() {
            return Err(Error::mismatch(format!(
                "region of {} bytes of {} received as {}",
                self.len,
                self.kind.name(),
                std::any::type_name::<T>()
            )));
        }
        if self.len == 0 {
            return Ok(Vec::new());
        }
        // SAFETY: len bytes were allocated and written (the decoder finished)
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) };
        if !T::valid(bytes) {
            return Err(Error::mismatch(format!(
                "region holds values that are not valid {}",
                std::any::type_name::<T>()
            )));
        }
        let n = self.len / size;
        let ptr = self.ptr.as_ptr() as *mut T;
        std::mem::forget(self);
        // SAFETY: allocated by the global allocator with Layout (n * size_of T, align_of T),
        // which is exactly Layout::array::<T>(n); every element is initialised and valid
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
    fn take_unpacked<T: 'static>(&mut self) -> Result<Option<Vec<T>>> {
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
    pub fn read_plain_array<T: PlainData, const N: usize>(&mut self) -> Result<[T; N]> {
        read_plain_array_from(self.read_bytes(N * size_of::<T>())?)
    }

    /// A length written by [`Packer::write_len`].
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

    fn check_count(&self, n: usize) -> Result<()> {
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
        let slot = self
            .regions
            .get_mut(self.next_region)
            .and_then(Option::take);
        let buf = slot.ok_or_else(|| {
            Error::mismatch(format!(
                "no region left for a Vec<{}>",
                std::any::type_name::<T>()
            ))
        })?;
        self.next_region += 1;
        buf.into_vec(kind)
    }
}

/// One plain value from exactly its bytes.
#[inline]
fn read_plain<T: PlainData>(bytes: &[u8]) -> Result<T> {
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
fn read_plain_array_from<T: PlainData, const N: usize>(bytes: &[u8]) -> Result<[T; N]> {
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

/// `FIXED_SIZE` as a number (0 for `None`), for derived code in constant expressions.
#[doc(hidden)]
pub const fn __fixed_size(size: Option<usize>) -> usize {
    match size {
        Some(n) => n,
        None => 0,
    }
}

/// The sum of `FIXED_SIZE`s when all are `Some`, for derived code and tuples.
#[doc(hidden)]
pub const fn __fixed_sum(sizes: &[Option<usize>]) -> Option<usize> {
    let mut total = 0usize;
    let mut i = 0;
    while i < sizes.len() {
        match sizes[i] {
            Some(n) => match total.checked_add(n) {
                Some(t) => total = t,
                None => return None,
            },
            None => return None,
        }
        i += 1;
    }
    Some(total)
}

/// Pack the fields of a fixed-size value into `out` at consecutive offsets (derived code).
#[doc(hidden)]
#[inline]
pub fn __pack_field<T: Pack + ?Sized>(value: &T, out: &mut [u8], at: &mut usize) {
    let size = __fixed_size(T::FIXED_SIZE);
    if let Some(o) = out.get_mut(*at..*at + size) {
        value.pack_fixed(o);
    }
    *at += size;
}

/// The part of the next field of a fixed-size value that the window [skip, skip + out.len())
/// of its fixed-size form covers (derived code).
#[doc(hidden)]
#[inline]
pub fn __pack_field_window<T: Pack + ?Sized>(
    value: &T,
    skip: usize,
    out: &mut [u8],
    at: &mut usize,
) {
    let size = __fixed_size(T::FIXED_SIZE);
    let (lo, hi) = ((*at).max(skip), (*at + size).min(skip + out.len()));
    if lo < hi {
        if let Some(o) = out.get_mut(lo - skip..hi - skip) {
            if hi - lo == size {
                value.pack_fixed(o);
            } else {
                value.pack_fixed_window(lo - *at, o);
            }
        }
    }
    *at += size;
}

/// Unpack the next field of a fixed-size value from `bytes` at `*at` into `dst` (derived
/// code).
///
/// # Safety
/// `dst` is valid for writes of a `T` (see [`Unpack::unpack_fixed_into`]).
#[doc(hidden)]
#[inline]
pub unsafe fn __unpack_field_into<T: Unpack>(
    bytes: &[u8],
    at: &mut usize,
    dst: *mut T,
) -> Result<()> {
    let size = __fixed_size(T::FIXED_SIZE);
    let b = bytes
        .get(*at..*at + size)
        .ok_or_else(|| Error::mismatch("fixed-size value cut short"))?;
    *at += size;
    // SAFETY: the caller's contract
    unsafe { T::unpack_fixed_into(b, dst) }
}

/// Unpack the next field of a fixed-size value from `bytes` at `*at` (derived code).
#[doc(hidden)]
#[inline]
pub fn __unpack_field<T: Unpack>(bytes: &[u8], at: &mut usize) -> Result<T> {
    let size = __fixed_size(T::FIXED_SIZE);
    let b = bytes
        .get(*at..*at + size)
        .ok_or_else(|| Error::mismatch("fixed-size value cut short"))?;
    *at += size;
    T::unpack_fixed(b)
}

// ---------------------------------------------------------------------------------------------
// impls: primitives (plain data)

/// Pack and Unpack of a primitive: fixed-size bytes in the stream, a slice as one region
/// (kinds with invalid bit patterns, bool and char, are checked on receive: PlainData::valid).
macro_rules! plain_checked {
    ($($t:ty, $name:literal;)*) => {$(
        impl Pack for $t {
            fn pack<'a>(&'a self, p: &mut Packer<'a>) {
                p.write(*self);
            }
            fn describe(s: &mut Schema) {
                s.push($name);
            }
            fn pack_slice<'a>(items: &'a [Self], p: &mut Packer<'a>) {
                p.region(items);
            }
            fn pack_array<'a>(items: &'a [Self], p: &mut Packer<'a>) {
                p.write_plain_slice(items);
            }
            const FIXED_SIZE: Option<usize> = Some(size_of::<$t>());
            #[inline]
            fn pack_fixed(&self, out: &mut [u8]) {
                // SAFETY: PlainData has no padding, so all its bytes are initialised
                let bytes = unsafe {
                    std::slice::from_raw_parts(self as *const $t as *const u8, size_of::<$t>())
                };
                if let Some(out) = out.get_mut(..size_of::<$t>()) {
                    out.copy_from_slice(bytes);
                }
            }
            #[inline]
            fn pack_fixed_array_window(items: &[Self], skip: usize, out: &mut [u8]) {
                let n = std::mem::size_of_val(items);
                // SAFETY: PlainData has no padding, so all the slice's bytes are initialised
                let bytes = unsafe { std::slice::from_raw_parts(items.as_ptr() as *const u8, n) };
                if let Some(src) = bytes.get(skip..skip + out.len()) {
                    out.copy_from_slice(src);
                }
            }
            #[inline]
            fn pack_fixed_array(items: &[Self], out: &mut [u8]) {
                let n = std::mem::size_of_val(items);
                // SAFETY: PlainData has no padding, so all the slice's bytes are initialised
                let bytes = unsafe { std::slice::from_raw_parts(items.as_ptr() as *const u8, n) };
                if let Some(out) = out.get_mut(..n) {
                    out.copy_from_slice(bytes);
                }
            }
        }
        impl Unpack for $t {
            fn unpack(u: &mut Unpacker) -> Result<Self> {
                u.read()
            }
            fn describe(s: &mut Schema) {
                s.push($name);
            }
            fn unpack_vec(u: &mut Unpacker) -> Result<Vec<Self>> {
                u.region()
            }
            fn vec_plan(_p: &mut __Plan) {
                // a region: nothing in the stream
            }
            fn unpack_array<const N: usize>(u: &mut Unpacker) -> Result<[Self; N]> {
                u.read_plain_array()
            }
            const FIXED_SIZE: Option<usize> = Some(size_of::<$t>());
            #[inline]
            fn unpack_fixed(bytes: &[u8]) -> Result<Self> {
                read_plain(bytes)
            }
            #[inline]
            fn unpack_fixed_array<const N: usize>(bytes: &[u8]) -> Result<[Self; N]> {
                read_plain_array_from(bytes)
            }
            #[inline]
            unsafe fn unpack_fixed_array_into<const N: usize>(
                bytes: &[u8],
                dst: *mut Self,
            ) -> Result<()> {
                if bytes.len() != N * size_of::<$t>() || !<$t as PlainData>::valid(bytes) {
                    return Err(Error::mismatch(format!(
                        "stream holds an invalid [{}; {N}]",
                        $name
                    )));
                }
                // SAFETY: N valid values (PlainData contract) into the caller's N slots
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst as *mut u8, bytes.len())
                };
                Ok(())
            }
        }
    )*};
}

macro_rules! plain {
    ($($t:ty => $kind:expr, $name:literal;)*) => {$(
        // SAFETY: primitive without padding; alignment equals the kind's (Kind::align)
        unsafe impl PlainData for $t {
            const KIND: Kind = $kind;
        }
        plain_checked! { $t, $name; }
    )*};
}

plain! {
    u8 => Kind::Uint8, "u8";
    u16 => Kind::Uint16, "u16";
    u32 => Kind::Uint32, "u32";
    u64 => Kind::Uint64, "u64";
    i8 => Kind::Int8, "i8";
    i16 => Kind::Int16, "i16";
    i32 => Kind::Int32, "i32";
    i64 => Kind::Int64, "i64";
    f32 => Kind::Float, "f32";
    f64 => Kind::Double, "f64";
}

// usize/isize travel as 64-bit values (the same bytes on 64-bit hosts)
#[cfg(target_pointer_width = "64")]
plain! {
    usize => Kind::Uint64, "usize";
    isize => Kind::Int64, "isize";
}

// SAFETY: one byte; only 0 and 1 are accepted
unsafe impl PlainData for bool {
    const KIND: Kind = Kind::Bool;
    fn valid(bytes: &[u8]) -> bool {
        bytes.iter().all(|b| *b <= 1)
    }
}

// SAFETY: four bytes; only Unicode scalar values are accepted
unsafe impl PlainData for char {
    const KIND: Kind = Kind::Uint32;
    fn valid(bytes: &[u8]) -> bool {
        bytes
            .chunks_exact(4)
            .all(|c| char::from_u32(u32::from_ne_bytes([c[0], c[1], c[2], c[3]])).is_some())
    }
}

plain_checked! {
    bool, "bool";
    char, "char";
}

// SAFETY: an array of plain data has no padding and the element's alignment
unsafe impl<T: PlainData, const N: usize> PlainData for [T; N] {
    const KIND: Kind = T::KIND;
    fn valid(bytes: &[u8]) -> bool {
        T::valid(bytes)
    }
}

macro_rules! wide {
    ($($t:ty, $name:literal;)*) => {$(
        impl Pack for $t {
            fn pack<'a>(&'a self, p: &mut Packer<'a>) {
                p.write_bytes(&self.to_ne_bytes());
            }
            fn describe(s: &mut Schema) {
                s.push($name);
            }
            const FIXED_SIZE: Option<usize> = Some(16);
            #[inline]
            fn pack_fixed(&self, out: &mut [u8]) {
                if let Some(out) = out.get_mut(..16) {
                    out.copy_from_slice(&self.to_ne_bytes());
                }
            }
        }
        impl Unpack for $t {
            fn unpack(u: &mut Unpacker) -> Result<Self> {
                let b = u.read_bytes(16)?;
                Self::unpack_fixed(b)
            }
            const FIXED_SIZE: Option<usize> = Some(16);
            #[inline]
            fn unpack_fixed(b: &[u8]) -> Result<Self> {
                let b: [u8; 16] = b
                    .try_into()
                    .map_err(|_| Error::mismatch("a 128-bit integer is not 16 bytes"))?;
                Ok(<$t>::from_ne_bytes(b))
            }
            fn describe(s: &mut Schema) {
                s.push($name);
            }
        }
    )*};
}

wide! {
    u128, "u128";
    i128, "i128";
}

impl Pack for () {
    fn pack<'a>(&'a self, _p: &mut Packer<'a>) {}
    const FIXED_SIZE: Option<usize> = Some(0);
    fn describe(s: &mut Schema) {
        s.push("()");
    }
}

impl Unpack for () {
    fn unpack(_u: &mut Unpacker) -> Result<Self> {
        Ok(())
    }
    const FIXED_SIZE: Option<usize> = Some(0);
    #[inline]
    fn unpack_fixed(_bytes: &[u8]) -> Result<Self> {
        Ok(())
    }
    fn describe(s: &mut Schema) {
        s.push("()");
    }
}

// ---------------------------------------------------------------------------------------------
// arrays

impl<T: Pack, const N: usize> Pack for [T; N] {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        T::pack_array(self, p)
    }
    const FIXED_SIZE: Option<usize> = match T::FIXED_SIZE {
        Some(n) => n.checked_mul(N),
        None => None,
    };
    #[inline]
    fn pack_fixed(&self, out: &mut [u8]) {
        T::pack_fixed_array(self, out)
    }
    #[inline]
    fn pack_fixed_window(&self, skip: usize, out: &mut [u8]) {
        T::pack_fixed_array_window(self, skip, out)
    }
    fn describe(s: &mut Schema) {
        s.push("[");
        T::describe(s);
        s.push(&N.to_string());
    }
    fn pack_slice<'a>(items: &'a [Self], p: &mut Packer<'a>) {
        if N == 0 {
            p.write_len(items.len());
        } else {
            T::pack_slice(items.as_flattened(), p);
        }
    }
}

impl<T: Unpack, const N: usize> Unpack for [T; N] {
    fn unpack(u: &mut Unpacker) -> Result<Self> {
        T::unpack_array(u)
    }
    const FIXED_SIZE: Option<usize> = match <T as Unpack>::FIXED_SIZE {
        Some(n) => n.checked_mul(N),
        None => None,
    };
    #[inline]
    fn unpack_fixed(bytes: &[u8]) -> Result<Self> {
        T::unpack_fixed_array::<N>(bytes)
    }
    #[inline]
    unsafe fn unpack_fixed_into(bytes: &[u8], dst: *mut Self) -> Result<()> {
        // SAFETY: [T; N] is N consecutive T
        unsafe { T::unpack_fixed_array_into::<N>(bytes, dst as *mut T) }
    }
    fn vec_plan(p: &mut __Plan) {
        // the stream of a Vec of the flattened elements (unpack_vec)
        if N == 0 {
            p.fixed(8);
        } else {
            T::vec_plan(p);
        }
    }
    fn describe(s: &mut Schema) {
        s.push("[");
        T::describe(s);
        s.push(&N.to_string());
    }
    fn unpack_vec(u: &mut Unpacker) -> Result<Vec<Self>> {
        if N == 0 {
            let n = u.read_len()?;
            let mut v: Vec<Self> = Vec::new();
            // SAFETY: [T; 0] is zero-sized with a single value that holds no T, so any length up
            // to the capacity (usize::MAX for zero-sized types) is initialised
            #[allow(clippy::uninit_vec)]
            unsafe {
                v.set_len(n)
            };
            return Ok(v);
        }
        let flat = T::unpack_vec(u)?;
        if flat.len() % N != 0 {
            return Err(Error::mismatch(format!(
                "{} elements are not a whole number of [_; {N}]",
                flat.len()
            )));
        }
        if flat.capacity() == flat.len() {
            let mut flat = std::mem::ManuallyDrop::new(flat);
            let n = flat.len() / N;
            // SAFETY: [T; N] has the layout of N consecutive T, so the allocation of n * N
            // elements of T is exactly Layout::array::<[T; N]>(n)
            return Ok(unsafe { Vec::from_raw_parts(flat.as_mut_ptr() as *mut [T; N], n, n) });
        }
        let mut out = Vec::with_capacity(flat.len() / N);
        let mut it = flat.into_iter();
        while it.len() > 0 {
            let chunk: Vec<T> = it.by_ref().take(N).collect();
            out.push(chunk.try_into().ok().expect("N elements"));
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------------------------------------
// tuples

macro_rules! tuple {
    ($($name:ident)+) => {
        impl<$($name: Pack),+> Pack for ($($name,)+) {
            #[allow(non_snake_case)]
            fn pack<'a>(&'a self, p: &mut Packer<'a>) {
                let ($($name,)+) = self;
                $($name.pack(p);)+
            }
            const FIXED_SIZE: Option<usize> = __fixed_sum(&[$(<$name as Pack>::FIXED_SIZE),+]);
            #[allow(non_snake_case)]
            #[inline]
            fn pack_fixed(&self, out: &mut [u8]) {
                let ($($name,)+) = self;
                let mut at = 0;
                $(__pack_field($name, out, &mut at);)+
            }
            #[allow(non_snake_case)]
            #[inline]
            fn pack_fixed_window(&self, skip: usize, out: &mut [u8]) {
                let ($($name,)+) = self;
                let mut at = 0;
                $(__pack_field_window($name, skip, out, &mut at);)+
            }
            fn describe(s: &mut Schema) {
                s.push("(");
                $($name::describe(s);)+
                s.push(")");
            }
        }
        impl<$($name: Unpack),+> Unpack for ($($name,)+) {
            fn unpack(u: &mut Unpacker) -> Result<Self> {
                Ok(($($name::unpack(u)?,)+))
            }
            fn plan(p: &mut __Plan) {
                $($name::plan(p);)+
            }
            const FIXED_SIZE: Option<usize> =
                __fixed_sum(&[$(<$name as Unpack>::FIXED_SIZE),+]);
            #[inline]
            fn unpack_fixed(bytes: &[u8]) -> Result<Self> {
                let mut at = 0;
                Ok(($(__unpack_field::<$name>(bytes, &mut at)?,)+))
            }
            fn describe(s: &mut Schema) {
                s.push("(");
                $(<$name as Unpack>::describe(s);)+
                s.push(")");
            }
        }
    };
}

tuple!(A);
tuple!(A B);
tuple!(A B C);
tuple!(A B C D);
tuple!(A B C D E);
tuple!(A B C D E F);
tuple!(A B C D E F G);
tuple!(A B C D E F G H);

// ---------------------------------------------------------------------------------------------
// references, Box, Option

impl<T: Pack + ?Sized> Pack for &T {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        (**self).pack(p)
    }
    const FIXED_SIZE: Option<usize> = T::FIXED_SIZE;
    #[inline]
    fn pack_fixed(&self, out: &mut [u8]) {
        (**self).pack_fixed(out)
    }
    #[inline]
    fn pack_fixed_window(&self, skip: usize, out: &mut [u8]) {
        (**self).pack_fixed_window(skip, out)
    }
    fn describe(s: &mut Schema) {
        T::describe(s)
    }
}

impl<T: Pack + ?Sized> Pack for Box<T> {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        (**self).pack(p)
    }
    fn describe(s: &mut Schema) {
        T::describe(s)
    }
}

impl<T: Unpack> Unpack for Box<T> {
    fn unpack(u: &mut Unpacker) -> Result<Self> {
        T::unpack(u).map(Box::new)
    }
    fn plan(p: &mut __Plan) {
        T::plan(p)
    }
    fn describe(s: &mut Schema) {
        T::describe(s)
    }
}

impl<T: Pack> Pack for Option<T> {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        match self {
            None => p.write(0u8),
            Some(x) => {
                p.write(1u8);
                x.pack(p);
            }
        }
    }
    fn describe(s: &mut Schema) {
        s.push("Option");
        T::describe(s);
    }
}

impl<T: Unpack> Unpack for Option<T> {
    fn unpack(u: &mut Unpacker) -> Result<Self> {
        match u.read::<u8>()? {
            0 => Ok(None),
            1 => T::unpack(u).map(Some),
            t => Err(Error::mismatch(format!("Option tag {t}"))),
        }
    }
    fn describe(s: &mut Schema) {
        s.push("Option");
        T::describe(s);
    }
}

// ---------------------------------------------------------------------------------------------
// sequences and strings

impl<T: Pack> Pack for [T] {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        T::pack_slice(self, p)
    }
    fn describe(s: &mut Schema) {
        s.push("Vec");
        T::describe(s);
    }
}

impl<T: Pack> Pack for Vec<T> {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        T::pack_slice(self, p)
    }
    fn describe(s: &mut Schema) {
        s.push("Vec");
        T::describe(s);
    }
}

impl<T: Unpack> Unpack for Vec<T> {
    fn unpack(u: &mut Unpacker) -> Result<Self> {
        T::unpack_vec(u)
    }
    fn plan(p: &mut __Plan) {
        T::vec_plan(p)
    }
    fn describe(s: &mut Schema) {
        s.push("Vec");
        T::describe(s);
    }
}

impl Pack for str {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        p.region_of_kind(self.as_bytes(), Kind::Char);
    }
    fn describe(s: &mut Schema) {
        s.push("String");
    }
}

impl Pack for String {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        self.as_str().pack(p)
    }
    fn describe(s: &mut Schema) {
        s.push("String");
    }
}

impl Unpack for String {
    fn unpack(u: &mut Unpacker) -> Result<Self> {
        let bytes = u.region_of_kind::<u8>(Kind::Char)?;
        String::from_utf8(bytes).map_err(|_| Error::mismatch("a String region is not UTF-8"))
    }
    fn plan(_p: &mut __Plan) {
        // a region: nothing in the stream
    }
    fn describe(s: &mut Schema) {
        s.push("String");
    }
}

macro_rules! seq {
    ($name:literal, $ty:ident < T $(: $b0:ident $(+ $b:ident)*)? >, $insert:ident) => {
        impl<T: Pack> Pack for $ty<T> {
            fn pack<'a>(&'a self, p: &mut Packer<'a>) {
                p.write_len(self.len());
                for x in self {
                    x.pack(p);
                }
            }
            fn describe(s: &mut Schema) {
                s.push($name);
                T::describe(s);
            }
        }
        impl<T: Unpack $(+ $b0 $(+ $b)*)?> Unpack for $ty<T> {
            fn unpack(u: &mut Unpacker) -> Result<Self> {
                let n = u.read_count()?;
                let mut c = $ty::new();
                for _ in 0..n {
                    c.$insert(T::unpack(u)?);
                }
                Ok(c)
            }
            fn describe(s: &mut Schema) {
                s.push($name);
                T::describe(s);
            }
        }
    };
}

seq!("VecDeque", VecDeque<T>, push_back);
seq!("BTreeSet", BTreeSet<T: Ord>, insert);

impl<T: Pack, S> Pack for HashSet<T, S> {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        p.write_len(self.len());
        for x in self {
            x.pack(p);
        }
    }
    fn describe(s: &mut Schema) {
        s.push("HashSet");
        T::describe(s);
    }
}

impl<T: Unpack + Eq + Hash, S: BuildHasher + Default> Unpack for HashSet<T, S> {
    fn unpack(u: &mut Unpacker) -> Result<Self> {
        let n = u.read_count()?;
        let mut c = HashSet::with_capacity_and_hasher(n.min(4096), S::default());
        for _ in 0..n {
            c.insert(T::unpack(u)?);
        }
        Ok(c)
    }
    fn describe(s: &mut Schema) {
        s.push("HashSet");
        T::describe(s);
    }
}

impl<K: Pack, V: Pack, S> Pack for HashMap<K, V, S> {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        p.write_len(self.len());
        for (k, v) in self {
            k.pack(p);
            v.pack(p);
        }
    }
    fn describe(s: &mut Schema) {
        s.push("Map");
        K::describe(s);
        V::describe(s);
    }
}

impl<K: Unpack + Eq + Hash, V: Unpack, S: BuildHasher + Default> Unpack for HashMap<K, V, S> {
    fn unpack(u: &mut Unpacker) -> Result<Self> {
        let n = u.read_count()?;
        let mut m = HashMap::with_capacity_and_hasher(n.min(4096), S::default());
        for _ in 0..n {
            let k = K::unpack(u)?;
            m.insert(k, V::unpack(u)?);
        }
        Ok(m)
    }
    fn describe(s: &mut Schema) {
        s.push("Map");
        K::describe(s);
        V::describe(s);
    }
}

impl<K: Pack, V: Pack> Pack for BTreeMap<K, V> {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        p.write_len(self.len());
        for (k, v) in self {
            k.pack(p);
            v.pack(p);
        }
    }
    fn describe(s: &mut Schema) {
        s.push("Map");
        K::describe(s);
        V::describe(s);
    }
}

impl<K: Unpack + Ord, V: Unpack> Unpack for BTreeMap<K, V> {
    fn unpack(u: &mut Unpacker) -> Result<Self> {
        let n = u.read_count()?;
        let mut m = BTreeMap::new();
        for _ in 0..n {
            let k = K::unpack(u)?;
            m.insert(k, V::unpack(u)?);
        }
        Ok(m)
    }
    fn describe(s: &mut Schema) {
        s.push("Map");
        K::describe(s);
        V::describe(s);
    }
}
