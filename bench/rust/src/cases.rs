//! An object of a case: what every method needs to build, send, check and receive it.
use std::os::raw::c_void;
use std::ptr;
use std::sync::Arc;

use cdtypes::{Pack, Packer, Schema, Unpack, Unpacker};
use cdtypes_sys as sys;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ffi::{double_vec_clear, double_vec_type, CDoubleVec};
use crate::types::{bytes_of, bytes_of_mut, Elem};

/// Where a C-twin receive lands.
pub(crate) enum CSlot {
    /// struct arrays (8-byte aligned memory of the struct array's size)
    Structs(Vec<u64>),
    /// a double_vec the custom type allocates (cleared before each receive)
    Dv(Box<CDoubleVec>),
}

impl Drop for CSlot {
    fn drop(&mut self) {
        if let CSlot::Dv(v) = self {
            // SAFETY: a double_vec zeroed or allocated by the C type
            unsafe { double_vec_clear(&mut **v) };
        }
    }
}

/// The C twin of an object to send: its type, count and memory.
pub(crate) struct CSend {
    pub(crate) ty: sys::cdt_type,
    pub(crate) count: i64,
    pub(crate) buf: *const c_void,
    // double_vec: the C descriptor pointing at the Rust vectors
    _desc: Option<(Box<CDoubleVec>, Vec<i64>, Vec<*mut i32>)>,
}

pub(crate) trait Case:
    Pack + Unpack + Serialize + DeserializeOwned + PartialEq + Send + Sync + 'static
{
    /// The object of about `target` data bytes (sub-vectors of `sub` bytes); its data bytes.
    fn make(target: usize, sub: usize) -> Option<(Self, usize)>;
    fn manual_len(&self) -> usize;
    fn manual_pack(&self, out: &mut [u8]);
    /// Hand-written unpack; the receiver knows the element count (`like`) as the C bench's.
    fn manual_unpack(b: &[u8], like: &Self) -> Self;
    fn c_send(&self) -> CSend;
    fn c_slot(&self) -> CSlot;
    /// The C receive slot holds `self`.
    fn c_check(&self, slot: &CSlot) -> bool;
    /// Done with a received value (cdtypes-recycle).
    fn recycle(self) {}
}

impl<E: Elem> Case for Vec<E> {
    fn make(target: usize, _sub: usize) -> Option<(Self, usize)> {
        let es = std::mem::size_of::<E>();
        if target < es {
            return None;
        }
        let n = target / es;
        Some(((0..n).map(E::fill).collect(), n * es))
    }
    fn manual_len(&self) -> usize {
        self.len() * E::PACKED
    }
    fn manual_pack(&self, out: &mut [u8]) {
        for (e, o) in self.iter().zip(out.chunks_exact_mut(E::PACKED)) {
            e.pack_into(o);
        }
    }
    fn manual_unpack(b: &[u8], like: &Self) -> Self {
        let mut v = Vec::with_capacity(like.len());
        v.extend(b.chunks_exact(E::PACKED).map(E::unpack_from));
        v
    }
    fn c_send(&self) -> CSend {
        CSend {
            ty: E::c_type(),
            count: self.len() as i64,
            buf: self.as_ptr().cast(),
            _desc: None,
        }
    }
    fn c_slot(&self) -> CSlot {
        CSlot::Structs(vec![0u64; (std::mem::size_of_val(&self[..])).div_ceil(8)])
    }
    fn recycle(self) {
        cdtypes::recycle(self)
    }
    fn c_check(&self, slot: &CSlot) -> bool {
        match slot {
            CSlot::Structs(mem) => {
                // SAFETY: the C type wrote len elements of E (repr(C) twins) into mem
                let got =
                    unsafe { std::slice::from_raw_parts(mem.as_ptr() as *const E, self.len()) };
                got == &self[..]
            }
            CSlot::Dv(_) => false,
        }
    }
}

impl Case for Vec<Vec<i32>> {
    fn make(target: usize, sub: usize) -> Option<(Self, usize)> {
        let len = target.min(sub).max(4) / 4;
        let n = (target / (len * 4)).max(1);
        let v: Vec<Vec<i32>> = (0..n)
            .map(|i| (0..len).map(|j| (i * 7 + j) as i32).collect())
            .collect();
        Some((v, n * len * 4))
    }
    fn manual_len(&self) -> usize {
        8 * self.len() + self.iter().map(|v| 4 * v.len()).sum::<usize>()
    }
    fn manual_pack(&self, out: &mut [u8]) {
        let (lens, mut rest) = out.split_at_mut(8 * self.len());
        for (v, l) in self.iter().zip(lens.chunks_exact_mut(8)) {
            l.copy_from_slice(&(v.len() as u64).to_ne_bytes());
            let (d, r) = rest.split_at_mut(4 * v.len());
            d.copy_from_slice(bytes_of(v));
            rest = r;
        }
    }
    fn manual_unpack(b: &[u8], like: &Self) -> Self {
        let n = like.len();
        let (lens, mut rest) = b.split_at(8 * n);
        lens.chunks_exact(8)
            .map(|l| {
                let len = u64::from_ne_bytes(l.try_into().expect("8 bytes")) as usize;
                let mut v = vec![0i32; len];
                let (d, r) = rest.split_at(4 * len);
                bytes_of_mut(&mut v).copy_from_slice(d);
                rest = r;
                v
            })
            .collect()
    }
    fn c_send(&self) -> CSend {
        let mut lens: Vec<i64> = self.iter().map(|v| v.len() as i64).collect();
        let mut ptrs: Vec<*mut i32> = self.iter().map(|v| v.as_ptr() as *mut i32).collect();
        let desc = Box::new(CDoubleVec {
            n: self.len() as i64,
            lens: lens.as_mut_ptr(),
            data: ptrs.as_mut_ptr(),
        });
        CSend {
            // SAFETY: created once by the C side
            ty: unsafe { double_vec_type() },
            count: 1,
            buf: (&*desc as *const CDoubleVec).cast(),
            _desc: Some((desc, lens, ptrs)),
        }
    }
    fn c_slot(&self) -> CSlot {
        CSlot::Dv(Box::new(CDoubleVec {
            n: 0,
            lens: ptr::null_mut(),
            data: ptr::null_mut(),
        }))
    }
    fn c_check(&self, slot: &CSlot) -> bool {
        let CSlot::Dv(d) = slot else { return false };
        if d.n as usize != self.len() {
            return false;
        }
        self.iter().enumerate().all(|(i, v)| {
            // SAFETY: the C type allocated n arrays with their lengths
            unsafe {
                *d.lens.add(i) as usize == v.len()
                    && std::slice::from_raw_parts(*d.data.add(i), v.len()) == &v[..]
            }
        })
    }
}

/// An object shared by the sends of a window (Pack and Serialize as the object itself, so it
/// is received as the object).
pub(crate) struct Shared<T>(pub(crate) Arc<T>);

impl<T: Pack> Pack for Shared<T> {
    fn pack<'a>(&'a self, p: &mut Packer<'a>) {
        (*self.0).pack(p)
    }
    fn describe(s: &mut Schema) {
        T::describe(s)
    }
}

impl<T: Unpack> Unpack for Shared<T> {
    fn unpack(u: &mut Unpacker) -> cdtypes::Result<Self> {
        T::unpack(u).map(|v| Shared(Arc::new(v)))
    }
    fn describe(s: &mut Schema) {
        T::describe(s)
    }
}

impl<T: Serialize> Serialize for Shared<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (*self.0).serialize(s)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Shared<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|v| Shared(Arc::new(v)))
    }
}
