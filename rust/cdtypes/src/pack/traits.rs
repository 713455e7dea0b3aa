//! The traits: [`PlainData`], [`Pack`] and [`Unpack`], with the default methods that
//! std types and derived code build on.

use crate::error::{Error, Result};
use crate::types::Kind;

use super::derived::{
    __fixed_size, __pack_field, __pack_field_window, __unpack_field, __unpack_field_into,
};
use super::packer::{Packer, DEFER_MIN_BYTES};
use super::plan::__Plan;
use super::schema::Schema;
use super::sequences::__unpack_vec_default;
use super::unpacker::Unpacker;

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

    /// Whether every byte pattern of this type's fixed-size form is a value, and
    /// [`unpack_fixed_into`](Unpack::unpack_fixed_into) checks none of its bytes (integers,
    /// floats, and arrays, tuples and derived structs of them). Elements of such a type are
    /// unpacked straight out of memory another process may write while they are read (a local
    /// lane's segment, docs/TRANSPORT.md §10.4): a byte changed meanwhile changes only that
    /// element's value. A type that checks its bytes (bool, char, enums) keeps the default,
    /// false: its bytes are copied into private memory first, so the value checked is the
    /// value used.
    #[doc(hidden)]
    const ANY_BYTES: bool = false;

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
