//! Receiving: the header's lengths, the receive plan, fragments pushed as they arrive, and
//! the value rebuilt from them.
use std::any::Any;
use std::collections::VecDeque;
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use cdtypes_sys as sys;

use crate::error::{check, Error, Result};
use crate::pack::{take_buffer, Plan, PlanItem, RegionBuf, Schema, SeqSink, Unpack, Unpacker};
use crate::types::Kind;

use super::{put_region, recv_type};

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
    /// Whether a fragment is read where the library hands it (perhaps a local lane's segment,
    /// which the sending process may write meanwhile: the receiving type says it reads each
    /// byte once, CDT_CUSTOM_FLAG_UNPACK_READS_ONCE). True unless a sequence unpacked on
    /// arrival has elements that check their bytes (`Unpack::ANY_BYTES` false): those
    /// fragments are copied into `scratch` first. Everything else is copied before it is
    /// interpreted anyway: fixed bytes and lengths into `inline`, a cut element into `carry`.
    direct: bool,
    scratch: Vec<u8>,
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
            direct: true,
            scratch: Vec::new(),
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
            self.direct = self.plan.iter().all(|it| {
                !matches!(
                    it,
                    PlanItem::Seq {
                        any_bytes: false,
                        ..
                    }
                )
            });
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
        let PlanItem::Seq { size, make, .. } = self.plan[item] else {
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

pub(super) unsafe extern "C" fn recv_query(
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

pub(super) unsafe extern "C" fn recv_pack(
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

pub(super) unsafe extern "C" fn recv_unpack(
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
        // SAFETY: the library gives src_size readable bytes at src. They may be a local lane's
        // segment (recv_type says it reads each byte once): every byte is copied once into
        // this side's memory (inline, carry, scratch) or into an element whose every byte
        // pattern is a value (RecvState::direct), and nothing is decided on a byte read twice
        std::slice::from_raw_parts(src.cast(), src_size as usize)
    };
    // a panic in an Unpack impl must not unwind into C
    let r = catch_unwind(AssertUnwindSafe(|| {
        if st.direct {
            return st.unpack_fragment(offset as usize, bytes);
        }
        // elements that check their bytes read a private copy: the value checked is the value
        // used
        let mut scratch = std::mem::take(&mut st.scratch);
        scratch.clear();
        if scratch.try_reserve(bytes.len()).is_err() {
            return Err(Error::from_code(sys::CDT_ERR_NO_MEMORY));
        }
        scratch.extend_from_slice(bytes);
        let r = st.unpack_fragment(offset as usize, &scratch);
        st.scratch = scratch;
        r
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

pub(super) unsafe extern "C" fn recv_region_count(
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

pub(super) unsafe extern "C" fn recv_regions(
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
