//! Element kinds and MPI-style derived datatypes.
//!
//! [`TypeBuilder`] is an uncommitted type made by the constructors (mirroring
//! `cdt_type_contiguous`, `cdt_type_vector`, ...); [`TypeBuilder::commit`] turns it into a
//! [`Datatype`], which is what frames and the transport use. A committed type may be shared by
//! any number of threads (cdt.h), so [`Datatype`] is `Send + Sync`; a [`TypeBuilder`] is
//! `Send` only.
use std::os::raw::c_int;
use std::ptr;

use cdtypes_sys as sys;

use crate::error::{check, Error, Result};

/// A predefined element kind (`cdt_kind`); the value also appears in frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
#[allow(missing_docs)]
pub enum Kind {
    Byte = sys::CDT_KIND_BYTE,
    Char = sys::CDT_KIND_CHAR,
    Int8 = sys::CDT_KIND_INT8,
    Int16 = sys::CDT_KIND_INT16,
    Int32 = sys::CDT_KIND_INT32,
    Int64 = sys::CDT_KIND_INT64,
    Uint8 = sys::CDT_KIND_UINT8,
    Uint16 = sys::CDT_KIND_UINT16,
    Uint32 = sys::CDT_KIND_UINT32,
    Uint64 = sys::CDT_KIND_UINT64,
    Float = sys::CDT_KIND_FLOAT,
    Double = sys::CDT_KIND_DOUBLE,
    ComplexFloat = sys::CDT_KIND_COMPLEX_FLOAT,
    ComplexDouble = sys::CDT_KIND_COMPLEX_DOUBLE,
    Bool = sys::CDT_KIND_BOOL,
}

impl Kind {
    const ALL: [Kind; 15] = [
        Kind::Byte,
        Kind::Char,
        Kind::Int8,
        Kind::Int16,
        Kind::Int32,
        Kind::Int64,
        Kind::Uint8,
        Kind::Uint16,
        Kind::Uint32,
        Kind::Uint64,
        Kind::Float,
        Kind::Double,
        Kind::ComplexFloat,
        Kind::ComplexDouble,
        Kind::Bool,
    ];

    /// The kind of a raw `cdt_kind` value; `None` for `CDT_KIND_MIXED` and invalid values.
    pub fn from_raw(raw: sys::cdt_kind) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| *k as u32 == raw)
    }

    /// The raw `cdt_kind` value.
    pub fn raw(self) -> sys::cdt_kind {
        self as sys::cdt_kind
    }

    /// Bytes of one element.
    pub fn size(self) -> usize {
        // SAFETY: plain query on a valid kind
        unsafe { sys::cdt_kind_size(self.raw()) as usize }
    }

    /// The library's name of the kind ("int32", "double", ...).
    pub fn name(self) -> &'static str {
        // SAFETY: cdt_kind_name returns a static string
        unsafe {
            std::ffi::CStr::from_ptr(sys::cdt_kind_name(self.raw()))
                .to_str()
                .unwrap_or("")
        }
    }

    /// Alignment that a Rust element of this kind has (used for received regions).
    pub(crate) fn align(self) -> usize {
        use std::mem::align_of;
        match self {
            Kind::Byte | Kind::Char | Kind::Int8 | Kind::Uint8 | Kind::Bool => 1,
            Kind::Int16 | Kind::Uint16 => align_of::<u16>(),
            Kind::Int32 | Kind::Uint32 => align_of::<u32>(),
            Kind::Float | Kind::ComplexFloat => align_of::<f32>(),
            Kind::Int64 | Kind::Uint64 => align_of::<u64>(),
            Kind::Double | Kind::ComplexDouble => align_of::<f64>(),
        }
    }

    /// The committed predefined type of this kind.
    pub fn datatype(self) -> Datatype {
        // SAFETY: predefined types are committed, live for the whole program and are never freed
        let raw = unsafe { sys::cdt_type_predefined(self.raw()) };
        Datatype { raw, owned: false }
    }
}

/// Anything that names a datatype: a committed [`Datatype`] or an uncommitted [`TypeBuilder`].
/// Constructors accept either as their old type.
pub trait AsType {
    /// The raw handle (borrowed).
    fn as_raw(&self) -> sys::cdt_type;
}

/// Storage order of [`TypeBuilder::subarray`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Row-major (`CDT_ORDER_C`).
    C,
    /// Column-major (`CDT_ORDER_FORTRAN`).
    Fortran,
}

/// A committed datatype (`cdt_type`). Dropping it releases this handle; the layout lives on
/// while frames or other types use it.
pub struct Datatype {
    raw: sys::cdt_type,
    owned: bool,
}

// SAFETY: cdt.h: committed types may be shared by any number of threads and operations, and
// their reference counts are atomic.
unsafe impl Send for Datatype {}
unsafe impl Sync for Datatype {}

/// An uncommitted derived type, made by the constructors; [`commit`](TypeBuilder::commit) it.
pub struct TypeBuilder {
    raw: sys::cdt_type,
}

// SAFETY: a handle used from one thread at a time; only `&self` queries are offered (no Sync).
unsafe impl Send for TypeBuilder {}

impl AsType for Datatype {
    fn as_raw(&self) -> sys::cdt_type {
        self.raw
    }
}

impl AsType for TypeBuilder {
    fn as_raw(&self) -> sys::cdt_type {
        self.raw
    }
}

impl Drop for Datatype {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: our own reference; the library keeps the layout alive while in use
            unsafe { sys::cdt_type_free(&mut self.raw) };
        }
    }
}

impl Drop for TypeBuilder {
    fn drop(&mut self) {
        // SAFETY: our own reference
        unsafe { sys::cdt_type_free(&mut self.raw) };
    }
}

impl Clone for Datatype {
    /// A new handle to the same committed layout (`cdt_type_dup`).
    fn clone(&self) -> Self {
        if !self.owned {
            return Datatype {
                raw: self.raw,
                owned: false,
            };
        }
        let mut raw = ptr::null_mut();
        // SAFETY: valid committed type; only fails without memory
        let rc = unsafe { sys::cdt_type_dup(self.raw, &mut raw) };
        assert_eq!(
            rc,
            sys::CDT_SUCCESS,
            "cdt_type_dup: {}",
            Error::from_code(rc)
        );
        Datatype { raw, owned: true }
    }
}

impl std::fmt::Debug for Datatype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.describe() {
            Ok(d) => write!(f, "Datatype({d})"),
            Err(_) => write!(f, "Datatype({:p})", self.raw),
        }
    }
}

fn same_len(a: usize, b: usize) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(Error::with_detail(
            sys::CDT_ERR_INVALID_ARG,
            format!("arrays of different lengths ({a} and {b})"),
        ))
    }
}

fn make(f: impl FnOnce(*mut sys::cdt_type) -> c_int) -> Result<TypeBuilder> {
    let mut raw = ptr::null_mut();
    check(f(&mut raw))?;
    Ok(TypeBuilder { raw })
}

fn count(n: usize) -> i64 {
    n as i64
}

impl TypeBuilder {
    /// `count` copies of `old`, contiguous (`cdt_type_contiguous`).
    pub fn contiguous(count: i64, old: &impl AsType) -> Result<TypeBuilder> {
        // SAFETY: valid handle and output pointer
        make(|out| unsafe { sys::cdt_type_contiguous(count, old.as_raw(), out) })
    }

    /// `count` blocks of `blocklength` elements, `stride` elements apart (`cdt_type_vector`).
    pub fn vector(count: i64, blocklength: i64, stride: i64, old: &impl AsType) -> Result<Self> {
        // SAFETY: valid handle and output pointer
        make(|out| unsafe { sys::cdt_type_vector(count, blocklength, stride, old.as_raw(), out) })
    }

    /// As [`vector`](Self::vector) with the stride in bytes (`cdt_type_hvector`).
    pub fn hvector(
        count: i64,
        blocklength: i64,
        stride_bytes: i64,
        old: &impl AsType,
    ) -> Result<Self> {
        // SAFETY: valid handle and output pointer
        make(|out| unsafe {
            sys::cdt_type_hvector(count, blocklength, stride_bytes, old.as_raw(), out)
        })
    }

    /// Blocks of `blocklengths[i]` elements at `displacements[i]` elements (`cdt_type_indexed`).
    pub fn indexed(blocklengths: &[i64], displacements: &[i64], old: &impl AsType) -> Result<Self> {
        same_len(blocklengths.len(), displacements.len())?;
        // SAFETY: arrays of `count` entries each
        make(|out| unsafe {
            sys::cdt_type_indexed(
                count(blocklengths.len()),
                blocklengths.as_ptr(),
                displacements.as_ptr(),
                old.as_raw(),
                out,
            )
        })
    }

    /// As [`indexed`](Self::indexed) with displacements in bytes (`cdt_type_hindexed`).
    pub fn hindexed(
        blocklengths: &[i64],
        byte_displacements: &[i64],
        old: &impl AsType,
    ) -> Result<Self> {
        same_len(blocklengths.len(), byte_displacements.len())?;
        // SAFETY: arrays of `count` entries each
        make(|out| unsafe {
            sys::cdt_type_hindexed(
                count(blocklengths.len()),
                blocklengths.as_ptr(),
                byte_displacements.as_ptr(),
                old.as_raw(),
                out,
            )
        })
    }

    /// Blocks of one length at element displacements (`cdt_type_indexed_block`).
    pub fn indexed_block(
        blocklength: i64,
        displacements: &[i64],
        old: &impl AsType,
    ) -> Result<Self> {
        // SAFETY: array of `count` entries
        make(|out| unsafe {
            sys::cdt_type_indexed_block(
                count(displacements.len()),
                blocklength,
                displacements.as_ptr(),
                old.as_raw(),
                out,
            )
        })
    }

    /// Blocks of one length at byte displacements (`cdt_type_hindexed_block`).
    pub fn hindexed_block(
        blocklength: i64,
        byte_displacements: &[i64],
        old: &impl AsType,
    ) -> Result<Self> {
        // SAFETY: array of `count` entries
        make(|out| unsafe {
            sys::cdt_type_hindexed_block(
                count(byte_displacements.len()),
                blocklength,
                byte_displacements.as_ptr(),
                old.as_raw(),
                out,
            )
        })
    }

    /// Blocks of `blocklengths[i]` elements of `types[i]` at byte displacements
    /// (`cdt_type_struct`).
    pub fn structure(
        blocklengths: &[i64],
        byte_displacements: &[i64],
        types: &[&dyn AsType],
    ) -> Result<Self> {
        same_len(blocklengths.len(), byte_displacements.len())?;
        same_len(blocklengths.len(), types.len())?;
        let raws: Vec<sys::cdt_type> = types.iter().map(|t| t.as_raw()).collect();
        // SAFETY: arrays of `count` entries each
        make(|out| unsafe {
            sys::cdt_type_struct(
                count(blocklengths.len()),
                blocklengths.as_ptr(),
                byte_displacements.as_ptr(),
                raws.as_ptr(),
                out,
            )
        })
    }

    /// A subarray of an n-dimensional array (`cdt_type_subarray`).
    pub fn subarray(
        sizes: &[i64],
        subsizes: &[i64],
        starts: &[i64],
        order: Order,
        old: &impl AsType,
    ) -> Result<Self> {
        same_len(sizes.len(), subsizes.len())?;
        same_len(sizes.len(), starts.len())?;
        let ndims = c_int::try_from(sizes.len())
            .map_err(|_| Error::with_detail(sys::CDT_ERR_INVALID_ARG, "too many dimensions"))?;
        let order = match order {
            Order::C => sys::CDT_ORDER_C,
            Order::Fortran => sys::CDT_ORDER_FORTRAN,
        } as c_int;
        // SAFETY: arrays of `ndims` entries each
        make(|out| unsafe {
            sys::cdt_type_subarray(
                ndims,
                sizes.as_ptr(),
                subsizes.as_ptr(),
                starts.as_ptr(),
                order,
                old.as_raw(),
                out,
            )
        })
    }

    /// `old` with a new lower bound and extent (`cdt_type_resized`).
    pub fn resized(old: &impl AsType, lb: i64, extent: i64) -> Result<Self> {
        // SAFETY: valid handle and output pointer
        make(|out| unsafe { sys::cdt_type_resized(old.as_raw(), lb, extent, out) })
    }

    /// `old`'s elements moved as their memory, gaps included (`cdt_type_padded`): for an
    /// element whose gaps are padding (a `#[repr(C)]` struct described field by field and
    /// resized to its size). Its packed form is the bytes of `[lb, lb + extent)` of each
    /// element, so an array of them packs as one copy and travels as one region. Both ends
    /// use it; every byte of the buffer's `count * extent` belongs to it.
    pub fn padded(old: &impl AsType) -> Result<Self> {
        // SAFETY: valid handle and output pointer
        make(|out| unsafe { sys::cdt_type_padded(old.as_raw(), out) })
    }

    /// A new handle to the same layout (`cdt_type_dup`).
    pub fn dup(old: &impl AsType) -> Result<Self> {
        // SAFETY: valid handle and output pointer
        make(|out| unsafe { sys::cdt_type_dup(old.as_raw(), out) })
    }

    /// Compile to the canonical form (`cdt_type_commit`).
    pub fn commit(self) -> Result<Datatype> {
        let mut raw = self.raw;
        // SAFETY: our own handle; commit works in place
        check(unsafe { sys::cdt_type_commit(&mut raw) })?;
        std::mem::forget(self);
        Ok(Datatype { raw, owned: true })
    }

    /// Bytes of data in one element.
    pub fn size(&self) -> Result<i64> {
        size(self.raw)
    }

    /// `(lb, extent)`.
    pub fn extent(&self) -> Result<(i64, i64)> {
        extent(self.raw, false)
    }
}

fn size(raw: sys::cdt_type) -> Result<i64> {
    let mut s = 0;
    // SAFETY: valid handle
    check(unsafe { sys::cdt_type_size(raw, &mut s) })?;
    Ok(s)
}

fn extent(raw: sys::cdt_type, true_extent: bool) -> Result<(i64, i64)> {
    let (mut lb, mut ext) = (0, 0);
    // SAFETY: valid handle
    check(unsafe {
        if true_extent {
            sys::cdt_type_true_extent(raw, &mut lb, &mut ext)
        } else {
            sys::cdt_type_extent(raw, &mut lb, &mut ext)
        }
    })?;
    Ok((lb, ext))
}

impl Datatype {
    /// Bytes of data in one element.
    pub fn size(&self) -> Result<i64> {
        size(self.raw)
    }

    /// `(lb, extent)` as MPI (after resized).
    pub fn extent(&self) -> Result<(i64, i64)> {
        extent(self.raw, false)
    }

    /// `(true_lb, true_extent)`: the span of the bytes actually touched.
    pub fn true_extent(&self) -> Result<(i64, i64)> {
        extent(self.raw, true)
    }

    /// The single kind every byte belongs to, or `None` for mixed types.
    pub fn kind(&self) -> Result<Option<Kind>> {
        let mut k = 0;
        // SAFETY: valid handle
        check(unsafe { sys::cdt_type_kind(self.raw, &mut k) })?;
        Ok(Kind::from_raw(k))
    }

    /// Packed bytes of `count` elements (`cdt_pack_size`).
    pub fn pack_size(&self, count: i64) -> Result<i64> {
        let mut s = 0;
        // SAFETY: valid handle
        check(unsafe { sys::cdt_pack_size(count, self.raw, &mut s) })?;
        Ok(s)
    }

    /// The canonical form as text (`cdt_type_describe`): equal layouts print equally.
    pub fn describe(&self) -> Result<String> {
        let mut needed = 0usize;
        // SAFETY: NULL buffer of length 0 only asks for the length
        check(unsafe { sys::cdt_type_describe(self.raw, ptr::null_mut(), 0, &mut needed) })?;
        let mut buf = vec![0u8; needed + 1];
        // SAFETY: buf holds needed + 1 bytes
        check(unsafe {
            sys::cdt_type_describe(
                self.raw,
                buf.as_mut_ptr().cast(),
                buf.len(),
                ptr::null_mut(),
            )
        })?;
        buf.truncate(needed);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// Checks that `count` elements of this type at the start of a buffer of `len` bytes touch
    /// only bytes inside it, so that a safe call can hand the buffer to the library.
    pub(crate) fn check_span(&self, count: i64, len: usize) -> Result<()> {
        let bad = |what: &str| Error::with_detail(sys::CDT_ERR_TRUNCATED, what.to_string());
        if count < 0 {
            return Err(Error::with_detail(
                sys::CDT_ERR_INVALID_ARG,
                "negative count",
            ));
        }
        if count == 0 || self.size()? == 0 {
            return Ok(());
        }
        let (tlb, text) = self.true_extent()?;
        let (_, ext) = self.extent()?;
        let reach = ext
            .checked_mul(count - 1)
            .ok_or_else(|| bad("count overflows"))?;
        let lo = tlb + reach.min(0);
        let hi = tlb
            .checked_add(text)
            .and_then(|x| x.checked_add(reach.max(0)))
            .ok_or_else(|| bad("count overflows"))?;
        if lo < 0 || hi > len as i64 {
            return Err(bad(&format!(
                "{count} elements of the type touch bytes [{lo}, {hi}) of a buffer of {len}"
            )));
        }
        Ok(())
    }
}
