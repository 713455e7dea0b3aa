//! A Rust value as one of libcdt's custom types (`cdt_type_create_custom_advanced`): the
//! library pulls the packed stream out of the value fragment by fragment, at any offset,
//! straight into the frame head or the transport's copy, and pushes received fragments into
//! the receiving value as they arrive.
//!
//! Sending: [`SendObj`] holds what [`Pack`] wrote: the in-line bytes of the stream and the
//! deferred blocks (a `Vec` of fixed-size elements, packed only when the library asks for
//! those bytes: element `i` is at `i * FIXED_SIZE` of its block), and the regions. No Rust
//! stream of the whole value is built.
//!
//! Receiving: [`RecvState`] takes the header's lengths (regions are allocated from them before
//! their bytes arrive) and a receive plan of the type ([`Plan`]): the stream bytes of a
//! `Vec` of fixed-size derived structs are unpacked into that `Vec` (allocated once from the
//! sequence length) as they arrive, the rest is kept for [`Unpacker`]. Frames are the same
//! bytes either way.
use std::any::Any;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::OnceLock;

use cdtypes_sys as sys;

use crate::error::{check, Error, Result};
use crate::pack::{
    give_buffer, take_buffer, Deferred, Pack, Packer, Plan, PlanItem, RegionBuf, Schema, SeqSink,
    Unpack, Unpacker,
};
use crate::types::Kind;

struct TypeHandle(sys::cdt_type);
// SAFETY: committed types may be used from any thread (cdt.h); the handle is never freed
unsafe impl Send for TypeHandle {}
unsafe impl Sync for TypeHandle {}

fn make_type(params: sys::cdt_custom_params) -> Option<TypeHandle> {
    let mut t = ptr::null_mut();
    // SAFETY: valid params with static callbacks
    let rc = unsafe { sys::cdt_type_create_custom_advanced(&params, &mut t) };
    (rc == sys::CDT_SUCCESS && !t.is_null()).then_some(TypeHandle(t))
}

fn or_no_memory(t: &Option<TypeHandle>) -> Result<sys::cdt_type> {
    t.as_ref()
        .map(|t| t.0)
        .ok_or_else(|| Error::from_code(sys::CDT_ERR_NO_MEMORY))
}

/// The custom type of a value being sent (buf: a [`SendObj`]; lives for the whole program).
pub(crate) fn send_type() -> Result<sys::cdt_type> {
    static T: OnceLock<Option<TypeHandle>> = OnceLock::new();
    or_no_memory(T.get_or_init(|| {
        make_type(sys::cdt_custom_params {
            field_mask: (sys::CDT_CUSTOM_PARAM_QUERY
                | sys::CDT_CUSTOM_PARAM_PACK
                | sys::CDT_CUSTOM_PARAM_REGIONS) as u64,
            query_fn: Some(send_query),
            pack_fn: Some(send_pack),
            region_count_fn: Some(send_region_count),
            region_fn: Some(send_regions),
            ..Default::default()
        })
    }))
}

/// The custom type of a value being received (buf: a [`RecvState`]). In order: the plan reads
/// the stream front to back (the engine holds early fragments, which a transport rarely
/// delivers).
pub(crate) fn recv_type() -> Result<sys::cdt_type> {
    static T: OnceLock<Option<TypeHandle>> = OnceLock::new();
    or_no_memory(T.get_or_init(|| {
        make_type(sys::cdt_custom_params {
            field_mask: (sys::CDT_CUSTOM_PARAM_QUERY
                | sys::CDT_CUSTOM_PARAM_PACK
                | sys::CDT_CUSTOM_PARAM_UNPACK
                | sys::CDT_CUSTOM_PARAM_REGIONS
                | sys::CDT_CUSTOM_PARAM_INORDER) as u64,
            query_fn: Some(recv_query),
            pack_fn: Some(recv_pack),
            unpack_fn: Some(recv_unpack),
            region_count_fn: Some(recv_region_count),
            region_fn: Some(recv_regions),
            inorder: 1,
            ..Default::default()
        })
    }))
}

/// One region as the library wants it: elements of the region's kind (bytes when its length
/// is not a whole number of them), as cdt_sobj does.
///
/// # Safety
/// The three pointers are valid for one entry each.
unsafe fn put_region(
    base: *mut c_void,
    len: usize,
    kind: sys::cdt_kind,
    bases: *mut *mut c_void,
    lens: *mut sys::cdt_count,
    types: *mut sys::cdt_type,
) {
    let esize = sys::cdt_kind_size(kind);
    let kind = if esize > 0 && len as i64 % esize == 0 {
        kind
    } else {
        sys::CDT_KIND_BYTE
    };
    let esize = sys::cdt_kind_size(kind).max(1);
    *bases = base;
    *lens = len as i64 / esize;
    *types = sys::cdt_type_predefined(kind);
}

// ---------------------------------------------------------------------------------------------
// sending

/// A piece of the packed stream: in-line bytes of the packer, or a deferred block.
#[derive(Clone, Copy)]
struct Piece {
    /// Offset in the stream.
    start: usize,
    len: usize,
    /// In-line: offset in the in-line bytes; deferred: index in `deferred`.
    src: usize,
    deferred: bool,
}

/// What the library reads while packing (boxed: its address is the object passed to it).
struct SendInner {
    stream: Vec<u8>,
    deferred: Vec<Deferred>,
    pieces: Vec<Piece>,
    total: usize,
    regions: Vec<sys::cdt_sobj_buffer>,
}

/// A packed value ready to send: the stream's in-line bytes, its deferred blocks and its
/// regions, which point into the value (borrowed for `'a`). Every address stays put while it
/// moves.
pub(crate) struct SendObj<'a> {
    inner: Box<SendInner>,
    _owned: Vec<Vec<u8>>,
    _borrow: PhantomData<&'a [u8]>,
}

// SAFETY: the memory it points at is the value's (Sync, borrowed) and its own; the deferred
// blocks are packed only through &self
unsafe impl Send for SendObj<'_> {}

impl<'a> SendObj<'a> {
    /// Pack `value`; the error a [`Pack`] impl recorded with [`Packer::fail`], if any.
    pub(crate) fn new<T: Pack + ?Sized>(value: &'a T) -> Result<Self> {
        let mut p = Packer::new(Schema::of_pack::<T>());
        value.pack(&mut p);
        let Packer {
            stream,
            deferred,
            regions,
            owned,
            error,
            ..
        } = p;
        if let Some(e) = error {
            give_buffer(stream);
            return Err(e);
        }
        // the stream in order: in-line bytes up to each deferred block's position, the block
        // (none without deferred blocks: the stream is the in-line bytes)
        let mut pieces = Vec::new();
        if deferred.is_empty() {
            let total = stream.len();
            return Ok(SendObj {
                inner: Box::new(SendInner {
                    stream,
                    deferred,
                    pieces,
                    total,
                    regions,
                }),
                _owned: owned,
                _borrow: PhantomData,
            });
        }
        pieces.reserve_exact(2 * deferred.len() + 1);
        let (mut at, mut inline_at) = (0usize, 0usize);
        for (i, d) in deferred.iter().enumerate() {
            if d.at > inline_at {
                pieces.push(Piece {
                    start: at,
                    len: d.at - inline_at,
                    src: inline_at,
                    deferred: false,
                });
                at += d.at - inline_at;
                inline_at = d.at;
            }
            let len = d.count * d.size;
            if len > 0 {
                pieces.push(Piece {
                    start: at,
                    len,
                    src: i,
                    deferred: true,
                });
                at += len;
            }
        }
        if stream.len() > inline_at {
            pieces.push(Piece {
                start: at,
                len: stream.len() - inline_at,
                src: inline_at,
                deferred: false,
            });
            at += stream.len() - inline_at;
        }
        Ok(SendObj {
            inner: Box::new(SendInner {
                stream,
                deferred,
                pieces,
                total: at,
                regions,
            }),
            _owned: owned,
            _borrow: PhantomData,
        })
    }

    /// The object to pass as `buf` (count 1) with [`send_type`].
    pub(crate) fn as_ptr(&self) -> *const c_void {
        &*self.inner as *const SendInner as *const c_void
    }

    /// Bytes of the packed stream.
    pub(crate) fn stream_len(&self) -> usize {
        self.inner.total
    }

    /// Stream bytes [offset, offset + out.len()) into `out` (what the pack callback does).
    pub(crate) fn pack_at(&self, offset: usize, out: &mut [u8]) -> usize {
        self.inner.pack_at(offset, out)
    }
}

impl Drop for SendObj<'_> {
    fn drop(&mut self) {
        // the library no longer reads the stream (the frame or request is gone)
        give_buffer(std::mem::take(&mut self.inner.stream));
    }
}

impl SendInner {
    /// Fill `out` with the stream from `offset` (up to its end); the bytes written.
    fn pack_at(&self, offset: usize, out: &mut [u8]) -> usize {
        let end = self.total.min(offset.saturating_add(out.len()));
        if offset >= end {
            return 0;
        }
        if self.deferred.is_empty() {
            out[..end - offset].copy_from_slice(&self.stream[offset..end]);
            return end - offset;
        }
        let mut i = self.pieces.partition_point(|p| p.start + p.len <= offset);
        let mut at = offset;
        while at < end {
            let Some(p) = self.pieces.get(i) else { break };
            let rel = at - p.start;
            let n = (p.len - rel).min(end - at);
            let dst = &mut out[at - offset..at - offset + n];
            if p.deferred {
                self.deferred[p.src].pack_bytes(rel, dst);
            } else {
                dst.copy_from_slice(&self.stream[p.src + rel..p.src + rel + n]);
            }
            at += n;
            i += 1;
        }
        at - offset
    }
}

unsafe extern "C" fn send_query(
    _state: *mut c_void,
    buf: *const c_void,
    count: sys::cdt_count,
    packed_size: *mut sys::cdt_count,
) -> c_int {
    if count != 1 {
        return sys::CDT_ERR_INVALID_ARG;
    }
    // SAFETY: buf is the SendInner of a live SendObj (send_type is only used with one)
    let obj = &*(buf as *const SendInner);
    *packed_size = obj.total as i64;
    sys::CDT_SUCCESS
}

unsafe extern "C" fn send_pack(
    _state: *mut c_void,
    buf: *const c_void,
    count: sys::cdt_count,
    offset: sys::cdt_count,
    dst: *mut c_void,
    dst_size: sys::cdt_count,
    used: *mut sys::cdt_count,
) -> c_int {
    if count != 1 || offset < 0 || dst_size < 0 || (dst.is_null() && dst_size > 0) {
        return sys::CDT_ERR_INVALID_ARG;
    }
    // SAFETY: as send_query
    let obj = &*(buf as *const SendInner);
    let out: &mut [u8] = if dst_size == 0 {
        &mut []
    } else {
        // SAFETY: the library gives dst_size writable bytes at dst
        std::slice::from_raw_parts_mut(dst.cast(), dst_size as usize)
    };
    // a panic in a Pack impl must not unwind into C
    match catch_unwind(AssertUnwindSafe(|| obj.pack_at(offset as usize, out))) {
        Ok(n) => {
            *used = n as i64;
            sys::CDT_SUCCESS
        }
        Err(_) => sys::CDT_ERR_CALLBACK,
    }
}

unsafe extern "C" fn send_region_count(
    _state: *mut c_void,
    buf: *mut c_void,
    count: sys::cdt_count,
    n: *mut sys::cdt_count,
) -> c_int {
    if count != 1 {
        return sys::CDT_ERR_INVALID_ARG;
    }
    // SAFETY: as send_query
    let obj = &*(buf as *const SendInner);
    *n = obj.regions.len() as i64;
    sys::CDT_SUCCESS
}

unsafe extern "C" fn send_regions(
    _state: *mut c_void,
    buf: *mut c_void,
    _count: sys::cdt_count,
    n: sys::cdt_count,
    bases: *mut *mut c_void,
    lens: *mut sys::cdt_count,
    types: *mut sys::cdt_type,
) -> c_int {
    // SAFETY: as send_query
    let obj = &*(buf as *const SendInner);
    if n < 0 || n as usize > obj.regions.len() {
        return sys::CDT_ERR_INVALID_ARG;
    }
    for (i, r) in obj.regions[..n as usize].iter().enumerate() {
        // SAFETY: the arrays hold n entries
        put_region(
            r.base,
            r.len as usize,
            r.kind,
            bases.add(i),
            lens.add(i),
            types.add(i),
        );
    }
    sys::CDT_SUCCESS
}

// ---------------------------------------------------------------------------------------------
// receiving

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

/// Streams shorter than this are kept whole for the unpacker (no plan: its cost is not worth
/// it for a few elements).
const PLAN_MIN_STREAM: usize = 4096;

/// Where the next stream byte goes.
enum Step {
    /// The plan's item `item` (bytes of it consumed: `done`).
    Item { item: usize, done: usize },
    /// The elements of a planned sequence: `left` more, the partial one in `carry`.
    Elements {
        item: usize,
        left: usize,
        sink: Box<dyn SeqSink>,
        carry: Vec<u8>,
    },
    /// Everything from here on is kept for the unpacker.
    Rest,
}

/// The state of one receive: the memory the decoder writes through (the in-line stream bytes,
/// the regions, the sequences unpacked on arrival). Boxed so its address is stable while the
/// library holds it.
pub(crate) struct RecvState {
    limits: Limits,
    plan_fn: fn(&mut Plan),
    fingerprint: fn() -> u64,
    packed_size: usize,
    /// Stream bytes delivered so far (fragments come in order).
    fed: usize,
    /// The stream bytes not unpacked on arrival, for the unpacker.
    inline: Vec<u8>,
    regions: Vec<RegionBuf>,
    region_kinds: Vec<sys::cdt_kind>,
    plan: Vec<PlanItem>,
    /// The carry buffer of the last sequence, for the next one.
    carry: Vec<u8>,
    step: Step,
    /// Sequences unpacked on arrival, each with the in-line offset where its elements were.
    done: VecDeque<(usize, Box<dyn Any + Send>)>,
    pub(crate) error: Option<Error>,
}

// SAFETY: owns its memory (the regions' raw buffers included); sinks and sequences are Send
unsafe impl Send for RecvState {}

impl RecvState {
    pub(crate) fn new<T: Unpack>(limits: Limits) -> Box<Self> {
        Box::new(RecvState {
            limits,
            plan_fn: T::plan,
            fingerprint: Schema::of_unpack::<T>,
            packed_size: 0,
            fed: 0,
            inline: Vec::new(),
            regions: Vec::new(),
            region_kinds: Vec::new(),
            plan: Vec::new(),
            carry: Vec::new(),
            step: Step::Rest,
            done: VecDeque::new(),
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
        let packed = usize::try_from(info.packed_size)
            .map_err(|_| Error::from_code(sys::CDT_ERR_NO_MEMORY))?;
        self.packed_size = packed;
        self.inline = take_buffer(0);
        if packed >= PLAN_MIN_STREAM {
            let mut plan = Plan::default();
            (self.plan_fn)(&mut plan);
            self.plan = plan.into_items();
            self.step = Step::Item { item: 0, done: 0 };
            // the in-line part is about what the plan does not unpack on arrival
            let _ = self.inline.try_reserve(PLAN_MIN_STREAM);
        } else if self.inline.try_reserve_exact(packed).is_err() {
            return Err(Error::from_code(sys::CDT_ERR_NO_MEMORY));
        }
        // the header was validated: region_count entries exist
        let n = usize::try_from(info.region_count)
            .map_err(|_| Error::from_code(sys::CDT_ERR_NO_MEMORY))?;
        self.regions.reserve_exact(n);
        self.region_kinds.reserve_exact(n);
        for i in 0..n {
            let (mut len, mut kind) = (0, 0);
            check(sys::cdt_decoder_region_info(
                decoder,
                i as i64,
                &mut len,
                &mut kind,
                ptr::null_mut(),
            ))?;
            let len = usize::try_from(len).map_err(|_| Error::from_code(sys::CDT_ERR_NO_MEMORY))?;
            let k = Kind::from_raw(kind).unwrap_or(Kind::Byte);
            self.regions.push(RegionBuf::alloc(len, k)?);
            self.region_kinds.push(kind);
        }
        check(sys::cdt_decoder_bind(
            decoder,
            self as *mut RecvState as *mut c_void,
            1,
            recv_type()?,
        ))
    }

    /// Stream bytes [self.fed, self.fed + src.len()) arrived.
    fn feed(&mut self, mut src: &[u8]) -> Result<()> {
        while !src.is_empty() {
            let step = std::mem::replace(&mut self.step, Step::Rest);
            match step {
                Step::Rest => {
                    self.keep(src)?;
                    self.fed += src.len();
                    return Ok(());
                }
                Step::Item { item, done } => {
                    let Some(it) = self.plan.get(item) else {
                        self.keep(src)?;
                        self.fed += src.len();
                        return Ok(());
                    };
                    // fixed bytes (the fingerprint, a length) go to the in-line part
                    let need = match *it {
                        PlanItem::Fixed(n) => n,
                        PlanItem::Seq { .. } => 8,
                    };
                    let k = (need - done).min(src.len());
                    self.keep(&src[..k])?;
                    self.fed += k;
                    src = &src[k..];
                    if done + k < need {
                        self.step = Step::Item {
                            item,
                            done: done + k,
                        };
                        continue;
                    }
                    self.step = self.next_step(item)?;
                }
                Step::Elements {
                    item,
                    mut left,
                    mut sink,
                    mut carry,
                } => {
                    let size = match self.plan[item] {
                        PlanItem::Seq { size, .. } => size,
                        PlanItem::Fixed(_) => unreachable!("elements of a sequence item"),
                    };
                    if !carry.is_empty() {
                        let k = (size - carry.len()).min(src.len());
                        carry.extend_from_slice(&src[..k]);
                        self.fed += k;
                        src = &src[k..];
                        if carry.len() == size {
                            sink.feed(&carry)?;
                            carry.clear();
                            left -= 1;
                        }
                    }
                    let whole = (src.len() / size).min(left);
                    if whole > 0 {
                        sink.feed(&src[..whole * size])?;
                        self.fed += whole * size;
                        src = &src[whole * size..];
                        left -= whole;
                    }
                    if left > 0 && !src.is_empty() {
                        // the start of an element cut by the fragment's end (room for the
                        // whole element at once: its rest comes with the next fragment)
                        let k = src.len().min(size);
                        carry.reserve_exact(size);
                        carry.extend_from_slice(&src[..k]);
                        self.fed += k;
                        src = &src[k..];
                    }
                    if left == 0 {
                        carry.clear();
                        self.carry = carry;
                        self.done.push_back((self.inline.len(), sink.finish()));
                        self.step = Step::Item {
                            item: item + 1,
                            done: 0,
                        };
                    } else {
                        self.step = Step::Elements {
                            item,
                            left,
                            sink,
                            carry,
                        };
                    }
                }
            }
        }
        Ok(())
    }

    /// After item `item`'s fixed bytes: the fingerprint checked, or a sequence begun.
    fn next_step(&mut self, item: usize) -> Result<Step> {
        if item == 0 {
            // the fingerprint: a frame of another type is left whole to the unpacker, which
            // reports it
            let got = self
                .inline
                .get(self.inline.len().wrapping_sub(8)..)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_ne_bytes);
            if got != Some((self.fingerprint)()) {
                return Ok(Step::Rest);
            }
        }
        let PlanItem::Seq { size, make } = self.plan[item] else {
            return Ok(Step::Item {
                item: item + 1,
                done: 0,
            });
        };
        let len = &self.inline[self.inline.len() - 8..];
        let n = u64::from_ne_bytes(len.try_into().expect("8 bytes"));
        // more elements than the stream has bytes left: the unpacker reports it
        let left = self.packed_size - self.fed;
        let Some(n) = usize::try_from(n)
            .ok()
            .filter(|n| n.checked_mul(size).is_some_and(|b| b <= left))
        else {
            return Ok(Step::Rest);
        };
        let sink = make(n)?;
        if n == 0 {
            self.done.push_back((self.inline.len(), sink.finish()));
            return Ok(Step::Item {
                item: item + 1,
                done: 0,
            });
        }
        Ok(Step::Elements {
            item,
            left: n,
            sink,
            carry: std::mem::take(&mut self.carry),
        })
    }

    /// Keep stream bytes for the unpacker.
    fn keep(&mut self, src: &[u8]) -> Result<()> {
        if self.inline.try_reserve(src.len()).is_err() {
            return Err(Error::from_code(sys::CDT_ERR_NO_MEMORY));
        }
        self.inline.extend_from_slice(src);
        Ok(())
    }

    /// The error to report for a failed decoder write `e`: what an Unpack impl found wrong
    /// while the stream arrived, when that was the error, else `e`.
    pub(crate) fn write_error(&mut self, e: Error) -> Error {
        self.error
            .take()
            .filter(|s| s.code() == e.code())
            .unwrap_or(e)
    }

    /// The received value. Only after the decoder finished successfully: that is what makes
    /// every stream byte and region written.
    pub(crate) fn into_value<T: Unpack>(mut self: Box<Self>) -> Result<T> {
        let inline = std::mem::take(&mut self.inline);
        let regions = std::mem::take(&mut self.regions);
        let done = std::mem::take(&mut self.done);
        if !matches!(self.step, Step::Rest | Step::Item { .. }) {
            return Err(Error::mismatch("the stream ended inside a sequence"));
        }
        drop(self);
        Unpacker::new(inline, regions, done).unpack_value()
    }

    fn unpack_fragment(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        if offset != self.fed || src.len() > self.packed_size - self.fed {
            return Err(Error::from_code(sys::CDT_ERR_TRUNCATED));
        }
        if self.plan.is_empty() {
            self.keep(src)?;
            self.fed += src.len();
            Ok(())
        } else {
            // advances fed as it goes (a sequence's length is checked against what is left)
            self.feed(src)
        }
    }
}

unsafe extern "C" fn recv_query(
    _state: *mut c_void,
    buf: *const c_void,
    count: sys::cdt_count,
    packed_size: *mut sys::cdt_count,
) -> c_int {
    if count != 1 {
        return sys::CDT_ERR_INVALID_ARG;
    }
    // SAFETY: buf is the RecvState bound in prepare (recv_type is only used with one)
    let st = &*(buf as *const RecvState);
    *packed_size = st.packed_size as i64;
    sys::CDT_SUCCESS
}

unsafe extern "C" fn recv_pack(
    _state: *mut c_void,
    _buf: *const c_void,
    _count: sys::cdt_count,
    _offset: sys::cdt_count,
    _dst: *mut c_void,
    _dst_size: sys::cdt_count,
    _used: *mut sys::cdt_count,
) -> c_int {
    sys::CDT_ERR_UNSUPPORTED // a receiving object is never sent
}

unsafe extern "C" fn recv_unpack(
    _state: *mut c_void,
    buf: *mut c_void,
    count: sys::cdt_count,
    offset: sys::cdt_count,
    src: *const c_void,
    src_size: sys::cdt_count,
) -> c_int {
    if count != 1 || offset < 0 || src_size < 0 || (src.is_null() && src_size > 0) {
        return sys::CDT_ERR_INVALID_ARG;
    }
    // SAFETY: as recv_query; the library holds no other reference to it while this runs
    let st = &mut *(buf as *mut RecvState);
    let bytes: &[u8] = if src_size == 0 {
        &[]
    } else {
        // SAFETY: the library gives src_size readable bytes at src
        std::slice::from_raw_parts(src.cast(), src_size as usize)
    };
    // a panic in an Unpack impl must not unwind into C
    let r = catch_unwind(AssertUnwindSafe(|| {
        st.unpack_fragment(offset as usize, bytes)
    }));
    match r {
        Ok(Ok(())) => sys::CDT_SUCCESS,
        Ok(Err(e)) => {
            let code = e.code();
            st.error.get_or_insert(e);
            code
        }
        Err(_) => sys::CDT_ERR_CALLBACK,
    }
}

unsafe extern "C" fn recv_region_count(
    _state: *mut c_void,
    buf: *mut c_void,
    count: sys::cdt_count,
    n: *mut sys::cdt_count,
) -> c_int {
    if count != 1 {
        return sys::CDT_ERR_INVALID_ARG;
    }
    // SAFETY: as recv_query
    let st = &*(buf as *const RecvState);
    *n = st.regions.len() as i64;
    sys::CDT_SUCCESS
}

unsafe extern "C" fn recv_regions(
    _state: *mut c_void,
    buf: *mut c_void,
    _count: sys::cdt_count,
    n: sys::cdt_count,
    bases: *mut *mut c_void,
    lens: *mut sys::cdt_count,
    types: *mut sys::cdt_type,
) -> c_int {
    // SAFETY: as recv_unpack
    let st = &mut *(buf as *mut RecvState);
    if n < 0 || n as usize > st.regions.len() {
        return sys::CDT_ERR_INVALID_ARG;
    }
    for i in 0..n as usize {
        let len = st.regions[i].len();
        let base = if len == 0 {
            ptr::null_mut()
        } else {
            st.regions[i].as_mut_ptr().cast()
        };
        // SAFETY: the arrays hold n entries
        put_region(
            base,
            len,
            st.region_kinds[i],
            bases.add(i),
            lens.add(i),
            types.add(i),
        );
    }
    sys::CDT_SUCCESS
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
