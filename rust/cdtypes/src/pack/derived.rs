//! Helpers that `#[derive(Pack, Unpack)]` code calls (hidden from the docs).

use crate::error::{Error, Result};

use super::traits::{Pack, Unpack};

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
