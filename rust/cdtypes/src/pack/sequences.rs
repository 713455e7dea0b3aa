//! Sequences on receive: read from the stream, or unpacked into their `Vec` as their bytes
//! arrive (a receive's plan names them).
use std::any::Any;
use std::mem::size_of;

use cdtypes_sys as sys;

use crate::error::{Error, Result};

use super::memory::{advise_huge_pages, take_recycled};
use super::plan::{__Plan, PlanItem};
use super::traits::Unpack;
use super::unpacker::Unpacker;

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
            any_bytes: T::ANY_BYTES,
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
