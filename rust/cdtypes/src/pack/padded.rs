//! `#[cdtypes(padded)]`: a `Vec` of a `#[repr(C)]` struct that travels as its memory, padding
//! included, as one region (the Rust side of `cdt_type_padded`, docs/ENGINE.md).
//!
//! A derived struct's `Vec` normally travels in the stream as its fields' fixed-size forms:
//! the sender packs each element, the receiver unpacks each one (two copies, one on each side,
//! that skip the padding). A struct whose memory is its value (every field an integer, a float,
//! an array of them or another padded struct) can instead be sent as its memory: the `Vec`'s
//! length in the stream, its `len * size_of::<T>()` bytes as one region, taken in place by the
//! sender (zero-copy) and allocated by the receiver with `T`'s alignment to become the received
//! `Vec` without a copy. Between two processes of one host that region goes the local lane's
//! split (both cores copy it, docs/TRANSPORT.md §10.3).
use std::mem::{align_of, size_of};

use crate::error::{Error, Result};
use crate::types::Kind;

use super::packer::Packer;
use super::traits::{Pack, Unpack};
use super::unpacker::Unpacker;

/// Types whose memory, padding aside, is their value: integers, floats, arrays of them and
/// `#[cdtypes(padded)]` structs (`#[repr(C)]`, every field such a type, which the derive
/// checks). `Side` is [`__ForPack`] or [`__ForUnpack`]: the derive of each trait says it for
/// its own side, so that a struct may derive one of them or both. Implemented by the derive;
/// not meant to be implemented by hand.
///
/// # Safety
/// `Self` holds no pointers and no references; its layout is fixed by the platform's C ABI
/// (so that two programs of one platform agree on it); every byte pattern of its bytes that
/// are not padding is a valid value; and its alignment is at most 8.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a field of a `#[cdtypes(padded)]` struct",
    label = "not an integer, a float, an array of them or a padded struct",
    note = "a padded struct's memory travels as it is: pointers, bools, chars and enums cannot"
)]
pub unsafe trait __PlainMemory<Side>: Sized + 'static {}

/// The sending side of [`__PlainMemory`].
#[doc(hidden)]
pub enum __ForPack {}
/// The receiving side of [`__PlainMemory`].
#[doc(hidden)]
pub enum __ForUnpack {}

macro_rules! plain_memory {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive integer or float: no padding, any bytes are a value
        unsafe impl<Side> __PlainMemory<Side> for $t {}
    )*};
}
plain_memory!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);
#[cfg(target_pointer_width = "64")]
plain_memory!(usize, isize);

// SAFETY: N consecutive T without anything between them
unsafe impl<Side, T: __PlainMemory<Side>, const N: usize> __PlainMemory<Side> for [T; N] {}

/// The region kind of a padded struct's memory: the unsigned integer kind of its alignment, so
/// that the receiver allocates the region with `T`'s alignment and takes it as the `Vec`'s
/// memory (its layout must be the `Vec`'s to be freed as one).
const fn padded_kind(align: usize) -> Option<Kind> {
    match align {
        1 => Some(Kind::Byte),
        2 => Some(Kind::Uint16),
        4 => Some(Kind::Uint32),
        8 => Some(Kind::Uint64),
        _ => None,
    }
}

/// The derive's compile-time check of a padded struct's alignment and size.
#[doc(hidden)]
pub const fn __padded_layout_ok(size: usize, align: usize) -> bool {
    size > 0 && padded_kind(align).is_some()
}

/// [`Pack::pack_slice`] of a padded struct: the length in the stream, the memory as one region.
#[doc(hidden)]
pub fn __pack_padded_slice<'a, T: Pack + __PlainMemory<__ForPack>>(
    items: &'a [T],
    p: &mut Packer<'a>,
) {
    p.write_len(items.len());
    match padded_kind(align_of::<T>()) {
        Some(kind) => p.region_memory(items, kind),
        None => p.fail(Error::mismatch(format!(
            "{} is aligned to {} bytes: a padded struct may be aligned to at most 8",
            std::any::type_name::<T>(),
            align_of::<T>()
        ))),
    }
}

/// [`Unpack::unpack_vec`] of a padded struct: the length, then the region as the `Vec`'s
/// memory (its length checked against the count: a frame that disagrees is refused).
#[doc(hidden)]
pub fn __unpack_padded_vec<T: Unpack + __PlainMemory<__ForUnpack>>(
    u: &mut Unpacker,
) -> Result<Vec<T>> {
    let n = u.read_len()?;
    let name = std::any::type_name::<T>();
    let kind = padded_kind(align_of::<T>())
        .ok_or_else(|| Error::mismatch(format!("{name} is aligned to more than 8 bytes")))?;
    let buf = u.next_region(name)?;
    let want = n.checked_mul(size_of::<T>());
    if want != Some(buf.len()) {
        return Err(Error::mismatch(format!(
            "a Vec<{name}> of {n} elements arrived as a region of {} bytes",
            buf.len()
        )));
    }
    // SAFETY: T: __PlainMemory: any bytes are a T (its padding aside), no pointers
    unsafe { buf.into_memory_vec::<T>(kind) }
}

/// The layout a padded struct adds to its fingerprint: a receiver whose platform lays the
/// struct out otherwise (another alignment of `f64`, say) refuses the frame instead of reading
/// its memory wrongly.
#[doc(hidden)]
pub fn __padded_layout_text(size: usize, align: usize, offsets: &[usize]) -> String {
    format!("padded size {size} align {align} offsets {offsets:?}")
}
