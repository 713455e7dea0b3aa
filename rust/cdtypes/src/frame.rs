//! Frames: one value = one message (header + packed stream + regions, docs/FORMAT.md).
//!
//! [`Frame::encode`] packs a value and lists its regions by reference: [`Frame::iov`] gives
//! the whole frame as slices for vectored I/O without copying a region. [`from_bytes`]
//! validates a received frame, sizes the value's containers from the header, and rebuilds it.
use std::io::IoSlice;
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr;

use cdtypes_sys as sys;

use crate::error::{check, Error, Result};
use crate::object::{send_type, Limits, RecvState, SendObj};
use crate::pack::{Pack, Unpack};
use crate::types::{Datatype, Kind};

/// What the header says about one region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    /// Bytes of the region.
    pub len: u64,
    /// Element kind (`None` for a kind this crate does not know).
    pub kind: Option<Kind>,
    /// Offset of the region in the frame.
    pub offset: u64,
}

/// What a valid header says (`cdt_frame_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    /// Frame format version.
    pub version: u32,
    /// Header flags.
    pub flags: u32,
    /// Bytes of the header (fixed part and region table).
    pub header_size: u64,
    /// Bytes of the packed stream.
    pub packed_size: u64,
    /// Regions in the frame.
    pub region_count: u64,
    /// Sum of the region lengths.
    pub region_bytes: u64,
    /// Total bytes of the frame.
    pub frame_size: u64,
    /// The sender's object count; `None` for a frame of an earlier writer, which carries none
    /// (docs/FORMAT.md §4).
    pub object_count: Option<u64>,
}

impl From<sys::cdt_frame_info> for FrameInfo {
    fn from(i: sys::cdt_frame_info) -> Self {
        FrameInfo {
            version: i.version,
            flags: i.flags,
            header_size: i.header_size as u64,
            packed_size: i.packed_size as u64,
            region_count: i.region_count as u64,
            region_bytes: i.region_bytes as u64,
            frame_size: i.frame_size as u64,
            object_count: u64::try_from(i.object_count).ok(),
        }
    }
}

/// An encoded frame (`cdt_frame`). It borrows the value it was encoded from: regions are
/// read from the value's own memory when the frame is sent or copied.
pub struct Frame<'a> {
    raw: sys::cdt_frame,
    _obj: Option<SendObj<'a>>,
    _borrow: PhantomData<&'a [u8]>,
}

// SAFETY: the frame is only read through &self after encoding; the memory it points at is
// owned by it or borrowed from a value the caller shares (T: Sync for &T across threads is the
// caller's: a frame of a value borrows it immutably)
unsafe impl Send for Frame<'_> {}
unsafe impl Sync for Frame<'_> {}

impl<'a> Frame<'a> {
    /// Encode `value`: its packed stream is copied into the frame's head, its regions are
    /// referenced (no copy).
    pub fn encode<T: Pack + ?Sized>(value: &'a T) -> Result<Self> {
        let obj = SendObj::new(value)?;
        let mut raw = ptr::null_mut();
        // SAFETY: the object and everything it points at live as long as the frame
        check(unsafe {
            sys::cdt_frame_encode(obj.as_ptr(), 1, send_type()?, ptr::null(), &mut raw)
        })?;
        Ok(Frame {
            raw,
            _obj: Some(obj),
            _borrow: PhantomData,
        })
    }

    /// Encode `count` elements of a predefined or derived `datatype` laid out in `buf`
    /// (byte displacements from the start of `buf`). Errors with `CDT_ERR_TRUNCATED` when the
    /// type reaches outside `buf`.
    pub fn encode_typed(buf: &'a [u8], count: i64, datatype: &Datatype) -> Result<Self> {
        datatype.check_span(count, buf.len())?;
        let mut raw = ptr::null_mut();
        // SAFETY: the type touches only bytes of buf, which the frame borrows
        check(unsafe {
            sys::cdt_frame_encode(
                buf.as_ptr().cast(),
                count,
                datatype_raw(datatype),
                ptr::null(),
                &mut raw,
            )
        })?;
        Ok(Frame {
            raw,
            _obj: None,
            _borrow: PhantomData,
        })
    }

    /// Total bytes of the frame.
    pub fn size(&self) -> usize {
        let mut n = 0;
        // SAFETY: valid frame
        unsafe { sys::cdt_frame_size(self.raw, &mut n) };
        n as usize
    }

    /// Header and packed stream (the frame's first, contiguous piece).
    pub fn head(&self) -> &[u8] {
        let mut data = ptr::null();
        let mut len = 0;
        // SAFETY: valid frame; the head lives as long as the frame
        unsafe {
            sys::cdt_frame_head(self.raw, &mut data, &mut len);
            std::slice::from_raw_parts(data.cast(), len as usize)
        }
    }

    /// Number of regions.
    pub fn region_count(&self) -> usize {
        let mut n = 0;
        // SAFETY: valid frame
        unsafe { sys::cdt_frame_region_count(self.raw, &mut n) };
        n as usize
    }

    /// Length, kind and offset of region `index`.
    pub fn region(&self, index: usize) -> Result<RegionInfo> {
        let (mut len, mut kind, mut off) = (0, 0, 0);
        // SAFETY: valid frame; the library checks the index
        check(unsafe {
            sys::cdt_frame_region_info(self.raw, index as i64, &mut len, &mut kind, &mut off)
        })?;
        Ok(RegionInfo {
            len: len as u64,
            kind: Kind::from_raw(kind),
            offset: off as u64,
        })
    }

    /// The whole frame as slices in order (head, padding, regions); their concatenation is
    /// the frame. Region slices point at the encoded value's memory.
    pub fn iov(&self) -> Result<Vec<IoSlice<'_>>> {
        let mut n = 0;
        // SAFETY: valid frame
        check(unsafe { sys::cdt_frame_iov_count(self.raw, &mut n) })?;
        let mut iov = vec![
            sys::cdt_iov {
                base: ptr::null_mut(),
                len: 0
            };
            n as usize
        ];
        let mut got = 0;
        // SAFETY: iov holds n entries
        check(unsafe { sys::cdt_frame_iov(self.raw, 0, n, iov.as_mut_ptr(), &mut got) })?;
        iov.truncate(got as usize);
        Ok(iov
            .iter()
            .filter(|v| v.len > 0)
            // SAFETY: each piece is frame or value memory that lives as long as &self
            .map(|v| {
                IoSlice::new(unsafe {
                    std::slice::from_raw_parts(v.base as *const u8, v.len as usize)
                })
            })
            .collect())
    }

    /// The frame's bytes in one buffer (a copy).
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut out = vec![0u8; self.size()];
        // SAFETY: out holds the frame's size
        check(unsafe {
            sys::cdt_frame_gather(self.raw, 0, out.as_mut_ptr().cast(), out.len() as i64)
        })?;
        Ok(out)
    }
}

impl Drop for Frame<'_> {
    fn drop(&mut self) {
        // SAFETY: our frame, freed once
        unsafe { sys::cdt_frame_free(self.raw) };
    }
}

pub(crate) fn datatype_raw(d: &Datatype) -> sys::cdt_type {
    crate::types::AsType::as_raw(d)
}

/// Encode `value` into one buffer (a frame, copied together).
pub fn to_vec<T: Pack + ?Sized>(value: &T) -> Result<Vec<u8>> {
    Frame::encode(value)?.to_vec()
}

/// Rebuild a value from a complete frame.
///
/// ```
/// let frame = cdtypes::to_vec(&(7u32, vec![1.5f64, 2.5])).unwrap();
/// let (n, v): (u32, Vec<f64>) = cdtypes::from_bytes(&frame).unwrap();
/// assert_eq!((n, v), (7, vec![1.5, 2.5]));
/// ```
pub fn from_bytes<T: Unpack>(bytes: &[u8]) -> Result<T> {
    from_bytes_with_limits(bytes, &Limits::default())
}

/// [`from_bytes`] with limits on what the header may make the receiver allocate.
pub fn from_bytes_with_limits<T: Unpack>(bytes: &[u8], limits: &Limits) -> Result<T> {
    let mut state = RecvState::new::<T>(*limits);
    let decoder = Decoder::new(bytes, limits)?;
    let info = decoder.info()?;
    if (bytes.len() as u64) < info.frame_size {
        return Err(Error::with_detail(
            sys::CDT_ERR_FRAME_TRUNCATED,
            format!("{} bytes of a frame of {}", bytes.len(), info.frame_size),
        ));
    }
    // SAFETY: state outlives the decoder (dropped below, before state)
    unsafe { state.prepare(decoder.raw)? };
    if let Err(e) = decoder.write(0, bytes) {
        return Err(state.write_error(e));
    }
    decoder.finish()?;
    drop(decoder);
    state.into_value()
}

/// [`from_bytes`] with the frame's bytes delivered as the given pieces `(offset, len)`, in the
/// given order, as a transport would (tests: streams cut anywhere, pieces out of order).
#[doc(hidden)]
pub fn __from_pieces<T: Unpack>(bytes: &[u8], pieces: &[(usize, usize)]) -> Result<T> {
    let limits = Limits::default();
    let mut state = RecvState::new::<T>(limits);
    let decoder = Decoder::new(bytes, &limits)?;
    // SAFETY: state outlives the decoder (dropped below, before state)
    unsafe { state.prepare(decoder.raw)? };
    for &(at, len) in pieces {
        let piece = bytes
            .get(at..at + len)
            .ok_or_else(|| Error::from_code(sys::CDT_ERR_INVALID_ARG))?;
        if let Err(e) = decoder.write(at as u64, piece) {
            return Err(state.write_error(e));
        }
    }
    decoder.finish()?;
    drop(decoder);
    state.into_value()
}

/// The packed stream of `value` from `offset` into `out` as the library pulls it (fragment by
/// fragment), and the stream's length (tests).
#[doc(hidden)]
pub fn __pack_stream_at<T: Pack + ?Sized>(
    value: &T,
    offset: usize,
    out: &mut [u8],
) -> Result<(usize, usize)> {
    let obj = SendObj::new(value)?;
    Ok((obj.pack_at(offset, out), obj.stream_len()))
}

/// Decode a frame of a predefined or derived type into `count` elements of `datatype` laid
/// out in `out` (`cdt_frame_decode`).
pub fn decode_typed(bytes: &[u8], out: &mut [u8], count: i64, datatype: &Datatype) -> Result<()> {
    datatype.check_span(count, out.len())?;
    // SAFETY: the type touches only bytes of out
    check(unsafe {
        sys::cdt_frame_decode(
            bytes.as_ptr().cast(),
            bytes.len() as i64,
            out.as_mut_ptr().cast(),
            count,
            datatype_raw(datatype),
        )
    })
}

/// A frame being received (`cdt_decoder`): its validated header. Used to inspect a frame
/// before deciding how to receive it.
pub struct Decoder<'b> {
    raw: sys::cdt_decoder,
    _bytes: PhantomData<&'b [u8]>,
}

impl<'b> Decoder<'b> {
    /// Validate the header at the start of `bytes` (`cdt_decoder_create_advanced`).
    pub fn new(bytes: &'b [u8], limits: &Limits) -> Result<Self> {
        let mut params = sys::cdt_decoder_params::default();
        if let Some(m) = limits.max_frame_bytes {
            params.field_mask |= sys::CDT_DECODER_PARAM_MAX_FRAME_BYTES as u64;
            params.max_frame_bytes = m.min(i64::MAX as u64) as i64;
        }
        if let Some(m) = limits.max_regions {
            params.field_mask |= sys::CDT_DECODER_PARAM_MAX_REGIONS as u64;
            params.max_regions = m.min(i64::MAX as u64) as i64;
        }
        let mut raw = ptr::null_mut();
        // SAFETY: bytes is readable for its length
        check(unsafe {
            sys::cdt_decoder_create_advanced(
                bytes.as_ptr().cast(),
                bytes.len() as i64,
                &params,
                &mut raw,
            )
        })?;
        Ok(Decoder {
            raw,
            _bytes: PhantomData,
        })
    }

    /// What the header says.
    pub fn info(&self) -> Result<FrameInfo> {
        let mut info = sys::cdt_frame_info {
            field_mask: sys::CDT_FRAME_INFO_ALL as u64,
            ..Default::default()
        };
        // SAFETY: valid decoder
        check(unsafe { sys::cdt_decoder_info(self.raw, &mut info) })?;
        Ok(info.into())
    }

    /// Length, kind and offset of region `index`.
    pub fn region(&self, index: usize) -> Result<RegionInfo> {
        let (mut len, mut kind, mut off) = (0, 0, 0);
        // SAFETY: valid decoder; the library checks the index
        check(unsafe {
            sys::cdt_decoder_region_info(self.raw, index as i64, &mut len, &mut kind, &mut off)
        })?;
        Ok(RegionInfo {
            len: len as u64,
            kind: Kind::from_raw(kind),
            offset: off as u64,
        })
    }

    fn write(&self, offset: u64, bytes: &[u8]) -> Result<()> {
        // SAFETY: bytes readable; the decoder was bound by the caller
        check(unsafe {
            sys::cdt_decoder_write(
                self.raw,
                offset as i64,
                bytes.as_ptr() as *const c_void,
                bytes.len() as i64,
            )
        })
    }

    fn finish(&self) -> Result<()> {
        // SAFETY: valid decoder
        check(unsafe { sys::cdt_decoder_finish(self.raw) })
    }
}

impl Drop for Decoder<'_> {
    fn drop(&mut self) {
        // SAFETY: our decoder, freed once
        unsafe { sys::cdt_decoder_free(self.raw) };
    }
}
