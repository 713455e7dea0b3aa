//! Memory the packer and unpacker reuse or advise the kernel about: `Vec`s handed back with
//! [`recycle`], spare stream buffers, and huge pages for large received memory.
use std::any::Any;
use std::collections::VecDeque;
use std::mem::size_of;

use super::plan::{__Plan, PlanItem};
use super::traits::Unpack;

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
/// fresh memory. Any other `Vec` whose elements need no drop (plain data, `#[cdtypes(padded)]`
/// structs) becomes the memory of the next received region of exactly its capacity in bytes
/// and its alignment (a `Vec<f64>`, a `Vec` of a padded struct: the region is that `Vec`).
/// Fresh memory costs a page fault and the kernel's zeroing per 4 KiB on its first write, which for an object of a few MiB takes longer than the transfer itself; receiving into
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
    // types whose Vec a receive unpacks on arrival take it as it is; the memory of others
    // whose elements need no drop may become a region
    let mut plan = __Plan::empty();
    T::vec_plan(&mut plan);
    if !matches!(plan.items.first(), Some(PlanItem::Seq { .. })) {
        if !std::mem::needs_drop::<T>() && size_of::<T>() > 0 {
            v.clear();
            let v = std::mem::ManuallyDrop::new(v);
            keep_block(RawBlock {
                ptr: v.as_ptr() as *mut u8,
                bytes,
                align: std::mem::align_of::<T>(),
            });
        }
        return;
    }
    v.clear();
    let _ = RECYCLED.try_with(|r| push_bounded(r, (bytes, Box::new(v)), |(b, _)| *b));
}

/// Append `item` to a thread's pool and drop its oldest entries while it holds more than
/// RECYCLE_MAX_COUNT of them or RECYCLE_MAX_BYTES in all (`bytes` of each). A pool in use
/// further up the stack is left alone (the item is dropped).
fn push_bounded<X>(pool: &std::cell::RefCell<VecDeque<X>>, item: X, bytes: impl Fn(&X) -> usize) {
    let Ok(mut pool) = pool.try_borrow_mut() else {
        return;
    };
    pool.push_back(item);
    let mut total: usize = pool.iter().map(&bytes).sum();
    while pool.len() > RECYCLE_MAX_COUNT || total > RECYCLE_MAX_BYTES {
        let Some(x) = pool.pop_front() else { break };
        total -= bytes(&x);
    }
}

/// The memory of a recycled `Vec` whose elements need no drop: `bytes` allocated by the global
/// allocator with alignment `align` (its `Vec`'s layout), freed with it unless taken.
struct RawBlock {
    ptr: *mut u8,
    bytes: usize,
    align: usize,
}

impl Drop for RawBlock {
    fn drop(&mut self) {
        // SAFETY: the allocation of a Vec of capacity bytes / size with this alignment
        unsafe {
            std::alloc::dealloc(
                self.ptr,
                std::alloc::Layout::from_size_align_unchecked(self.bytes, self.align),
            )
        };
    }
}

thread_local! {
    // memory of recycled Vecs for regions, oldest first
    static BLOCKS: std::cell::RefCell<VecDeque<RawBlock>> =
        const { std::cell::RefCell::new(VecDeque::new()) };
}

fn keep_block(block: RawBlock) {
    // a thread being torn down frees the block (the closure's drop of it)
    let _ = BLOCKS.try_with(|b| push_bounded(b, block, |x| x.bytes));
}

/// Recycled memory of exactly `bytes` with alignment `align` (a region's), if this thread has
/// some: the caller owns it, allocated with `Layout(bytes, align)`.
pub(super) fn take_block(bytes: usize, align: usize) -> Option<std::ptr::NonNull<u8>> {
    if bytes < RECYCLE_MIN_BYTES {
        return None;
    }
    BLOCKS
        .try_with(|b| {
            let mut b = b.try_borrow_mut().ok()?;
            let i = b
                .iter()
                .position(|x| x.bytes == bytes && x.align == align)?;
            let block = std::mem::ManuallyDrop::new(b.remove(i)?);
            std::ptr::NonNull::new(block.ptr)
        })
        .ok()
        .flatten()
}

/// A recycled `Vec<T>` with room for `n` to `2n` elements (`n` > 0), if this thread has one.
pub(super) fn take_recycled<T: 'static>(n: usize) -> Option<Vec<T>> {
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
/// libcdt's own receive memory, libcdt/src/sobj/cdt_receive_memory.h).
const HUGE_MIN_BYTES: usize = 4 << 20;

/// Mark the whole pages of fresh receive memory `[p, p + len)` for transparent huge pages
/// (`madvise(MADV_HUGEPAGE)`; only advice, ignored where the kernel has none). Where the kernel
/// gives huge pages only on request (THP "madvise", a common default), the first write of each
/// 4 KiB of fresh memory is a page fault, and the receiver's unpack (or the kernel's
/// cross-process copy) takes them one by one: a 2 MiB page is one fault instead of 512.
pub(super) fn advise_huge_pages(p: *mut u8, len: usize) {
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
