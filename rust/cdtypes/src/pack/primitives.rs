//! Pack and Unpack of the primitives (plain data) and `()`.
use std::mem::size_of;

use crate::error::{Error, Result};
use crate::types::Kind;

use super::packer::Packer;
use super::plan::__Plan;
use super::schema::Schema;
use super::traits::{Pack, PlainData, Unpack};
use super::unpacker::{read_plain, read_plain_array_from, Unpacker};

/// Pack and Unpack of a primitive: fixed-size bytes in the stream, a slice as one region
/// (kinds with invalid bit patterns, bool and char, are checked on receive: PlainData::valid).
macro_rules! plain_checked {
    ($($t:ty, $name:literal, $any:expr;)*) => {$(
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
            const ANY_BYTES: bool = $any;
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
        plain_checked! { $t, $name, true; }
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
    bool, "bool", false;
    char, "char", false;
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
            const ANY_BYTES: bool = true;
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
    const ANY_BYTES: bool = true;
    #[inline]
    fn unpack_fixed(_bytes: &[u8]) -> Result<Self> {
        Ok(())
    }
    fn describe(s: &mut Schema) {
        s.push("()");
    }
}
