//! Pack and Unpack of arrays and tuples.

use crate::error::{Error, Result};

use super::derived::{__fixed_sum, __pack_field, __pack_field_window, __unpack_field};
use super::packer::Packer;
use super::plan::__Plan;
use super::schema::Schema;
use super::traits::{Pack, Unpack};
use super::unpacker::Unpacker;

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
    const ANY_BYTES: bool = <T as Unpack>::ANY_BYTES;
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
            const ANY_BYTES: bool = true $(&& <$name as Unpack>::ANY_BYTES)+;
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
