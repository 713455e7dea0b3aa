//! The mapping onto libcdt's serialized-object adapter (bindings/cdt_sobj.h): the packed
//! stream is the in-band bytes, each region an out-of-band buffer with its kind.
use std::marker::PhantomData;
use std::os::raw::{c_int, c_void};
use std::ptr;

use cdtypes_sys as sys;

use crate::error::{check, Error, Result};
use crate::pack::{give_buffer, take_buffer, Pack, Packer, RegionBuf, Schema, Unpack, Unpacker};
use crate::types::Kind;

/// The adapter's custom type (lives for the whole program).
pub(crate) fn sobj_type() -> Result<sys::cdt_type> {
    // SAFETY: no arguments; NULL only without memory
    let t = unsafe { sys::cdt_sobj_type() };
    if t.is_null() {
        Err(Error::from_code(sys::CDT_ERR_NO_MEMORY))
    } else {
        Ok(t)
    }
}

/// A packed value ready to send: the `cdt_sobj` points into the stream and at the value's
/// regions (borrowed for `'a`). Every address stays put while it moves.
pub(crate) struct SendObj<'a> {
    sobj: Box<sys::cdt_sobj>,
    _stream: Vec<u8>,
    _buffers: Vec<sys::cdt_sobj_buffer>,
    _owned: Vec<Vec<u8>>,
    _borrow: PhantomData<&'a [u8]>,
}

// SAFETY: the memory it points at is the value's (Sync, borrowed) and its own
unsafe impl Send for SendObj<'_> {}

impl<'a> SendObj<'a> {
    /// Pack `value`; the error a [`Pack`] impl recorded with [`Packer::fail`], if any.
    pub(crate) fn new<T: Pack + ?Sized>(value: &'a T) -> Result<Self> {
        let mut p = Packer::new(Schema::of_pack::<T>());
        value.pack(&mut p);
        let Packer {
            mut stream,
            mut regions,
            owned,
            error,
            ..
        } = p;
        if let Some(e) = error {
            return Err(e);
        }
        let sobj = Box::new(sys::cdt_sobj {
            inband: stream.as_mut_ptr().cast(),
            inband_len: stream.len() as i64,
            buffers: regions.as_mut_ptr(),
            nbuffers: regions.len() as i64,
            ..Default::default()
        });
        Ok(SendObj {
            sobj,
            _stream: stream,
            _buffers: regions,
            _owned: owned,
            _borrow: PhantomData,
        })
    }

    /// The object to pass as `buf` (count 1) with [`sobj_type`].
    pub(crate) fn as_ptr(&self) -> *const c_void {
        &*self.sobj as *const sys::cdt_sobj as *const c_void
    }
}

impl Drop for SendObj<'_> {
    fn drop(&mut self) {
        // the library no longer reads the stream (the frame or request is gone)
        give_buffer(std::mem::take(&mut self._stream));
    }
}

/// Limits on what a received frame may make the receiver allocate (frames from peers that are
/// not trusted). `Default`: no limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame accepted, in bytes (header, stream, padding and regions).
    pub max_frame_bytes: Option<u64>,
    /// Most regions accepted.
    pub max_regions: Option<u64>,
}

impl Limits {
    pub(crate) fn check(&self, info: &sys::cdt_frame_info) -> Result<()> {
        let over = |what: &str, got: i64, max: u64| {
            Error::with_detail(
                sys::CDT_ERR_LIMIT,
                format!("{what} {got} over the limit {max}"),
            )
        };
        if let Some(max) = self.max_frame_bytes {
            if info.frame_size as u64 > max {
                return Err(over("frame of", info.frame_size, max));
            }
        }
        if let Some(max) = self.max_regions {
            if info.region_count as u64 > max {
                return Err(over("region count", info.region_count, max));
            }
        }
        Ok(())
    }
}

/// Memory of a receive, handed out by `alloc_part` to `cdt_sobj_recv_prepare`.
#[derive(Default)]
struct Store {
    /// Reserved for `inband_len` bytes but kept at length 0 until the decoder finished: the
    /// decoder writes every byte, so zero-filling it first would be one more pass over it.
    inband: Vec<u8>,
    inband_len: usize,
    regions: Vec<RegionBuf>,
}

/// The state of one receive: the `cdt_sobj` the decoder writes through and the Rust-owned
/// memory it points at. Boxed so its address is stable while the library holds it.
pub(crate) struct RecvState {
    sobj: sys::cdt_sobj,
    store: Store,
    limits: Limits,
    pub(crate) error: Option<Error>,
}

// SAFETY: owns its memory; the raw pointers point into it
unsafe impl Send for RecvState {}

unsafe extern "C" fn alloc_part(
    user: *mut c_void,
    index: sys::cdt_count,
    len: sys::cdt_count,
    kind: sys::cdt_kind,
    base: *mut *mut c_void,
) -> c_int {
    // SAFETY: `user` is the Store of a live RecvState (set in prepare)
    let store = &mut *(user as *mut Store);
    let Ok(len) = usize::try_from(len) else {
        return sys::CDT_ERR_NO_MEMORY;
    };
    if index < 0 {
        if store.inband.capacity() == 0 {
            store.inband = take_buffer(0);
        }
        store.inband.clear();
        if store.inband.try_reserve_exact(len).is_err() {
            return sys::CDT_ERR_NO_MEMORY;
        }
        store.inband_len = len;
        *base = store.inband.as_mut_ptr().cast();
        return sys::CDT_SUCCESS;
    }
    let kind = Kind::from_raw(kind).unwrap_or(Kind::Byte);
    match RegionBuf::alloc(len, kind) {
        Ok(mut buf) => {
            *base = if len == 0 {
                ptr::null_mut()
            } else {
                buf.as_mut_ptr().cast()
            };
            store.regions.push(buf);
            sys::CDT_SUCCESS
        }
        Err(e) => e.code(),
    }
}

impl RecvState {
    pub(crate) fn new(limits: Limits) -> Box<Self> {
        Box::new(RecvState {
            sobj: sys::cdt_sobj::default(),
            store: Store::default(),
            limits,
            error: None,
        })
    }

    /// Size the object from the validated header and bind the decoder to it.
    ///
    /// # Safety
    /// `decoder` is a valid decoder; `self` stays at its address until the decoder is freed.
    pub(crate) unsafe fn prepare(&mut self, decoder: sys::cdt_decoder) -> Result<()> {
        let mut info = sys::cdt_frame_info {
            field_mask: sys::CDT_FRAME_INFO_ALL as u64,
            ..Default::default()
        };
        check(sys::cdt_decoder_info(decoder, &mut info))?;
        self.limits.check(&info)?;
        self.sobj.field_mask |= sys::CDT_SOBJ_FIELD_ALLOC as u64;
        self.sobj.alloc = Some(alloc_part);
        self.sobj.alloc_user = &mut self.store as *mut Store as *mut c_void;
        check(sys::cdt_sobj_recv_prepare(&mut self.sobj, decoder))?;
        check(sys::cdt_decoder_bind(
            decoder,
            &mut self.sobj as *mut sys::cdt_sobj as *mut c_void,
            1,
            sobj_type()?,
        ))
    }

    /// The received value. Only after the decoder finished successfully: that is what makes
    /// the in-band bytes initialised.
    pub(crate) fn into_value<T: Unpack>(mut self: Box<Self>) -> Result<T> {
        let mut store = std::mem::take(&mut self.store);
        drop(self);
        // SAFETY: capacity >= inband_len (reserved in alloc_part), and cdt_decoder_finish
        // succeeds only once every byte of the frame, the in-band part included, was written
        unsafe { store.inband.set_len(store.inband_len) };
        Unpacker::new(store.inband, store.regions).unpack_value()
    }
}

impl Drop for RecvState {
    fn drop(&mut self) {
        // SAFETY: frees only the buffers array recv_prepare allocated (the data is ours)
        unsafe { sys::cdt_sobj_release(&mut self.sobj) };
    }
}

/// `cdt_ucx_recv_prepare_func_t` over a RecvState.
pub(crate) unsafe extern "C" fn ucx_prepare(arg: *mut c_void, decoder: sys::cdt_decoder) -> c_int {
    // SAFETY: arg is the boxed RecvState of a pending receive
    let st = &mut *(arg as *mut RecvState);
    match st.prepare(decoder) {
        Ok(()) => sys::CDT_SUCCESS,
        Err(e) => {
            let code = e.code();
            st.error = Some(e);
            code
        }
    }
}
