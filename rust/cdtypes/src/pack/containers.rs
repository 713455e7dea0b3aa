//! Pack and Unpack of references, `Box`, `Option`, sequences, strings, sets and maps.
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash};

use crate::error::{Error, Result};
use crate::types::Kind;

use super::packer::Packer;
use super::plan::__Plan;
use super::schema::Schema;
use super::traits::{Pack, Unpack};
use super::unpacker::Unpacker;

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
