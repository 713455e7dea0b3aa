//! The seed's types and their hand-written packing (the `manual` method).

use cdtypes::{Pack, Unpack};
use cdtypes_sys as sys;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ffi::{struct_simple_no_gap_type, struct_simple_type, struct_vec_type};

#[repr(C)]
#[derive(cdtypes::Pack, cdtypes::Unpack, Serialize, Deserialize, Clone, Copy, PartialEq, Debug)]
pub(crate) struct StructSimple {
    a: i32,
    b: i32,
    c: i32,
    d: f64,
}

#[repr(C)]
#[derive(cdtypes::Pack, cdtypes::Unpack, Serialize, Deserialize, Clone, Copy, PartialEq, Debug)]
pub(crate) struct StructSimpleNoGap {
    a: i32,
    b: i32,
    c: f64,
}

const STRUCT_VEC_LEN: usize = 2048;

#[repr(C)]
#[derive(cdtypes::Pack, cdtypes::Unpack, Serialize, Deserialize, Clone, PartialEq, Debug)]
pub(crate) struct StructVec {
    a: i32,
    b: i32,
    c: i32,
    d: f64,
    #[serde(with = "big_array")]
    data: [i32; STRUCT_VEC_LEN],
}

/// StructSimple as its memory (`#[cdtypes(padded)]`): a Vec of it is one region of 24 bytes an
/// element, the Rust side of C's `cdt_type_padded` (docs/ENGINE.md, Padding declared).
#[repr(C)]
#[derive(cdtypes::Pack, cdtypes::Unpack, Serialize, Deserialize, Clone, Copy, PartialEq, Debug)]
#[cdtypes(padded)]
pub(crate) struct StructSimplePadded {
    a: i32,
    b: i32,
    c: i32,
    d: f64,
}

/// StructVec as its memory: a Vec of it is one region of 8,216 bytes an element.
#[repr(C)]
#[derive(cdtypes::Pack, cdtypes::Unpack, Serialize, Deserialize, Clone, PartialEq, Debug)]
#[cdtypes(padded)]
pub(crate) struct StructVecPadded {
    a: i32,
    b: i32,
    c: i32,
    d: f64,
    #[serde(with = "big_array")]
    data: [i32; STRUCT_VEC_LEN],
}

/// serde derives arrays up to 32 elements: a longer one as a tuple (what serde-big-array does).
mod big_array {
    use super::*;
    use serde::de::{Error, SeqAccess, Visitor};
    use serde::ser::SerializeTuple;

    pub fn serialize<S: Serializer, const N: usize>(v: &[i32; N], s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(N)?;
        for x in v {
            t.serialize_element(x)?;
        }
        t.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>, const N: usize>(
        d: D,
    ) -> Result<[i32; N], D::Error> {
        struct V<const N: usize>;
        impl<'de, const N: usize> Visitor<'de> for V<N> {
            type Value = [i32; N];
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "an array of {N} i32")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<[i32; N], A::Error> {
                let mut out = [0i32; N];
                for (i, x) in out.iter_mut().enumerate() {
                    *x = seq
                        .next_element()?
                        .ok_or_else(|| A::Error::invalid_length(i, &self))?;
                }
                Ok(out)
            }
        }
        d.deserialize_tuple(N, V::<N>)
    }
}

pub(crate) fn bytes_of<T: Copy>(s: &[T]) -> &[u8] {
    // SAFETY: plain integers / floats without padding (the callers' element types)
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast(), std::mem::size_of_val(s)) }
}

pub(crate) fn bytes_of_mut<T: Copy>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as bytes_of; every byte pattern is a valid i32
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast(), std::mem::size_of_val(s)) }
}

/// A struct element of the seed: its C twin and its hand-written pack.
pub(crate) trait Elem:
    Clone + 'static + Pack + Unpack + Serialize + DeserializeOwned + PartialEq + Send + Sync
{
    /// Bytes of the fields (what a hand-written pack writes per element).
    const PACKED: usize;
    fn c_type() -> sys::cdt_type;
    fn fill(i: usize) -> Self;
    fn pack_into(&self, out: &mut [u8]);
    fn unpack_from(b: &[u8]) -> Self;
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn f64_at(b: &[u8], at: usize) -> f64 {
    f64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The fields a, b, c (i32) and d (f64) packed into 20 bytes, as struct_simple and the head of
/// struct_vec are.
fn pack_abcd(a: i32, b: i32, c: i32, d: f64, o: &mut [u8]) {
    o[0..4].copy_from_slice(&a.to_ne_bytes());
    o[4..8].copy_from_slice(&b.to_ne_bytes());
    o[8..12].copy_from_slice(&c.to_ne_bytes());
    o[12..20].copy_from_slice(&d.to_ne_bytes());
}

/// The Elem of a struct_simple twin (the plain and the padded struct).
macro_rules! struct_simple_elem {
    ($t:ident) => {
        impl Elem for $t {
            const PACKED: usize = 20;
            fn c_type() -> sys::cdt_type {
                // SAFETY: created once by the C side
                unsafe { struct_simple_type() }
            }
            fn fill(i: usize) -> Self {
                let i = i as i32;
                $t {
                    a: i,
                    b: i + 1,
                    c: i + 2,
                    d: f64::from(i) * 0.5,
                }
            }
            fn pack_into(&self, o: &mut [u8]) {
                pack_abcd(self.a, self.b, self.c, self.d, o);
            }
            fn unpack_from(b: &[u8]) -> Self {
                $t {
                    a: i32_at(b, 0),
                    b: i32_at(b, 4),
                    c: i32_at(b, 8),
                    d: f64_at(b, 12),
                }
            }
        }
    };
}
struct_simple_elem!(StructSimple);
struct_simple_elem!(StructSimplePadded);

impl Elem for StructSimpleNoGap {
    const PACKED: usize = 16;
    fn c_type() -> sys::cdt_type {
        // SAFETY: created once by the C side
        unsafe { struct_simple_no_gap_type() }
    }
    fn fill(i: usize) -> Self {
        let i = i as i32;
        StructSimpleNoGap {
            a: i,
            b: i + 1,
            c: f64::from(i) * 0.5,
        }
    }
    fn pack_into(&self, o: &mut [u8]) {
        o[0..4].copy_from_slice(&self.a.to_ne_bytes());
        o[4..8].copy_from_slice(&self.b.to_ne_bytes());
        o[8..16].copy_from_slice(&self.c.to_ne_bytes());
    }
    fn unpack_from(b: &[u8]) -> Self {
        StructSimpleNoGap {
            a: i32_at(b, 0),
            b: i32_at(b, 4),
            c: f64_at(b, 8),
        }
    }
}

/// The Elem of a struct_vec twin (the plain and the padded struct).
macro_rules! struct_vec_elem {
    ($t:ident) => {
        impl Elem for $t {
            const PACKED: usize = 20 + 4 * STRUCT_VEC_LEN;
            fn c_type() -> sys::cdt_type {
                // SAFETY: created once by the C side
                unsafe { struct_vec_type() }
            }
            fn fill(i: usize) -> Self {
                let k = i as i32;
                let mut data = [0i32; STRUCT_VEC_LEN];
                for (j, x) in data.iter_mut().enumerate() {
                    *x = k.wrapping_mul(31).wrapping_add(j as i32);
                }
                $t {
                    a: k,
                    b: k + 1,
                    c: k + 2,
                    d: f64::from(k) * 0.5,
                    data,
                }
            }
            fn pack_into(&self, o: &mut [u8]) {
                pack_abcd(self.a, self.b, self.c, self.d, o);
                o[20..].copy_from_slice(bytes_of(&self.data));
            }
            fn unpack_from(b: &[u8]) -> Self {
                let mut v = $t {
                    a: i32_at(b, 0),
                    b: i32_at(b, 4),
                    c: i32_at(b, 8),
                    d: f64_at(b, 12),
                    data: [0; STRUCT_VEC_LEN],
                };
                bytes_of_mut(&mut v.data).copy_from_slice(&b[20..Self::PACKED]);
                v
            }
        }
    };
}
struct_vec_elem!(StructVec);
struct_vec_elem!(StructVecPadded);
