//! Values over MPI (feature `mpi`): any [`Pack`] / [`Unpack`] value, serde value
//! ([`crate::serde::Serde`]), predefined or derived layout ([`Datatype`]) or raw serialized
//! object ([`RawObject`]) sent on an rsmpi communicator as **one object** of libcdt's MPI
//! protocol (docs/MPI.md, version 2): a head message on the communicator under the
//! application's tag, and the regions of at least 64 KiB in one parts message on a private
//! duplicate, read in place and received straight into the memory allocated for them. The
//! receiver matches the head with `MPI_Mprobe` (any source and any tag allowed), allocates the
//! whole value from the frame header, and checks every count against the head before a byte
//! lands in it. Python's `cdtypes.mpi`, C's `cdt_mpi.h` and Julia's extension speak the same
//! protocol, so the ranks of one job may be written in any of them.
//!
//! The protocol itself is libcdt's header-only C implementation, `cdt_mpi.h`, compiled by this
//! crate's build script against the MPI library rsmpi links (so there is one implementation
//! for C and Rust): building needs that MPI's `mpicc` (or `MPICC`, or pkg-config `mpich` /
//! `ompi`), as rsmpi does. Choose the MPI with `MPICC=mpicc.mpich` (or `mpicc.openmpi`); every
//! rank of a job must use one MPI.
//!
//! ```no_run
//! use mpi::traits::*;
//! use cdtypes::mpi as cmpi;
//!
//! # fn main() -> cdtypes::Result<()> {
//! let universe = mpi::initialize().unwrap();
//! let world = universe.world();
//! cmpi::attach(&world)?; // collective, once per communicator (docs/MPI.md 2.2)
//! if world.rank() == 0 {
//!     cmpi::send(&world, &(7u32, vec![1.5f64; 1 << 20]), 1, 3)?;
//! } else if world.rank() == 1 {
//!     let ((n, v), status): ((u32, Vec<f64>), _) = cmpi::recv(&world, Some(0), Some(3), &cmpi::RecvLimits::default())?;
//!     assert_eq!((n, v.len(), status.source), (7, 1 << 20, 0));
//! }
//! # Ok(()) }
//! ```
//!
//! Errors are [`Error`]s with libcdt's codes (docs/MPI.md section 10): `CDT_ERR_FRAME_*` for a
//! head or parts message that breaks the protocol (the detail names the peer, the object id and
//! the counts), `CDT_ERR_LIMIT` over [`RecvLimits`], `CDT_ERR_TIMEOUT` when an untrusted
//! receive's parts do not come, `CDT_ERR_TRANSPORT` when MPI fails. A failed receive consumes
//! the object's parts (docs/MPI.md 8.3), so the sender's send completes.
//!
//! Threads: as MPI's thread level allows (`MPI_THREAD_MULTIPLE` for calls from several
//! threads at once).
use std::os::raw::{c_char, c_int, c_void};
use std::ptr;

use ::mpi::ffi::MPI_Comm;
use ::mpi::raw::AsRaw;
use ::mpi::topology::Communicator;
use cdtypes_sys as sys;

use crate::error::{Error, Result};
use crate::frame::datatype_raw;
use crate::object::{send_type, RecvState, SendObj};
use crate::pack::{Pack, Unpack};
use crate::types::{Datatype, Kind};
use crate::Limits;

type Message = *mut c_void;

extern "C" {
    fn cdtypes_mpi_attach(comm: MPI_Comm) -> c_int;
    fn cdtypes_mpi_is_attached(comm: MPI_Comm, flag: *mut c_int) -> c_int;
    fn cdtypes_mpi_send(
        buf: *const c_void,
        count: sys::cdt_count,
        ty: sys::cdt_type,
        dest: c_int,
        tag: c_int,
        comm: MPI_Comm,
        threshold: sys::cdt_count,
    ) -> c_int;
    fn cdtypes_mpi_mprobe(
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        params: *const RecvParamsC,
        msg: *mut Message,
        out_source: *mut c_int,
        out_tag: *mut c_int,
    ) -> c_int;
    fn cdtypes_mpi_message_decoder(msg: Message) -> sys::cdt_decoder;
    fn cdtypes_mpi_mrecv_bound(msg: *mut Message) -> c_int;
    fn cdtypes_mpi_mrecv(
        buf: *mut c_void,
        count: sys::cdt_count,
        ty: sys::cdt_type,
        msg: *mut Message,
    ) -> c_int;
    fn cdtypes_mpi_message_discard(msg: *mut Message) -> c_int;
    fn cdtypes_mpi_last_error() -> *const c_char;
    fn cdtypes_mpi_any_source() -> c_int;
    fn cdtypes_mpi_any_tag() -> c_int;
}

/// `cdt_mpi_recv_params` (cdt_mpi.h)
#[repr(C)]
struct RecvParamsC {
    field_mask: u64,
    max_frame_bytes: sys::cdt_count,
    max_regions: sys::cdt_count,
    parts_timeout: f64,
}

const PARAM_MAX_FRAME_BYTES: u64 = 1;
const PARAM_MAX_REGIONS: u64 = 2;
const PARAM_PARTS_TIMEOUT: u64 = 4;

/// A rank of the communicator.
pub type Rank = ::mpi::Rank;
/// An MPI tag (`0 ..= MPI_TAG_UB`).
pub type Tag = ::mpi::Tag;

/// The head's source and tag: which object was received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// The sender's rank in the communicator.
    pub source: Rank,
    /// The object's tag.
    pub tag: Tag,
}

/// Limits of a receive from peers that are not trusted (docs/MPI.md 8.1-8.2). `Default`: a
/// trusted receive without limits. With a limit set, the wait for the parts message is bounded
/// too (`parts_timeout`, default 10 s).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RecvLimits {
    /// Largest frame accepted, in bytes (`CDT_ERR_LIMIT` beyond, before anything is allocated).
    pub max_frame_bytes: Option<u64>,
    /// Most regions accepted.
    pub max_regions: Option<u64>,
    /// Seconds an untrusted receive waits for its parts message, and any drain waits.
    pub parts_timeout: Option<f64>,
}

impl RecvLimits {
    fn raw(&self) -> RecvParamsC {
        let mut p = RecvParamsC {
            field_mask: 0,
            max_frame_bytes: 0,
            max_regions: 0,
            parts_timeout: 0.0,
        };
        let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        if let Some(v) = self.max_frame_bytes {
            p.field_mask |= PARAM_MAX_FRAME_BYTES;
            p.max_frame_bytes = clamp(v);
        }
        if let Some(v) = self.max_regions {
            p.field_mask |= PARAM_MAX_REGIONS;
            p.max_regions = clamp(v);
        }
        if let Some(t) = self.parts_timeout {
            p.field_mask |= PARAM_PARTS_TIMEOUT;
            p.parts_timeout = t;
        }
        p
    }

    fn frame_limits(&self) -> Limits {
        Limits {
            max_frame_bytes: self.max_frame_bytes,
            max_regions: self.max_regions,
        }
    }
}

/// The error of a cdt_mpi status, with the words cdt_mpi.h recorded for it (peer, id, counts).
fn mpi_error(rc: c_int) -> Error {
    // SAFETY: a per-thread NUL-terminated buffer, valid until the next cdt_mpi call here
    let text = unsafe { std::ffi::CStr::from_ptr(cdtypes_mpi_last_error()) };
    let text = text.to_string_lossy();
    if text.is_empty() {
        Error::from_code(rc)
    } else {
        Error::with_detail(rc, text.into_owned())
    }
}

fn check_mpi(rc: c_int) -> Result<()> {
    if rc == sys::CDT_SUCCESS {
        Ok(())
    } else {
        Err(mpi_error(rc))
    }
}

fn raw_comm<C: Communicator + AsRaw<Raw = MPI_Comm>>(comm: &C) -> MPI_Comm {
    comm.as_raw()
}

/// Give `comm` its parts communicator (docs/MPI.md 2.2). Collective over `comm`: every process
/// calls it, in the same order relative to the other communicator-creating calls on `comm`.
/// Idempotent. A communicator that is not attached still carries objects, whole in the head.
/// In a job with Python ranks, attach the world communicator right after `mpi::initialize()`
/// (Python attaches it when `cdtypes.mpi` is imported).
pub fn attach<C: Communicator + AsRaw<Raw = MPI_Comm>>(comm: &C) -> Result<()> {
    // SAFETY: a valid communicator handle of an initialized MPI
    check_mpi(unsafe { cdtypes_mpi_attach(raw_comm(comm)) })
}

/// Whether `comm` was attached in this process.
pub fn is_attached<C: Communicator + AsRaw<Raw = MPI_Comm>>(comm: &C) -> Result<bool> {
    let mut flag = 0;
    // SAFETY: as attach
    check_mpi(unsafe { cdtypes_mpi_is_attached(raw_comm(comm), &mut flag) })?;
    Ok(flag != 0)
}

/// Options of a send. `Default`: the protocol's threshold (64 KiB).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendParams {
    /// Regions of at least this many bytes travel in the parts message; `Some(0)`: none (the
    /// whole frame in the head).
    pub threshold: Option<u64>,
}

impl SendParams {
    fn raw(&self) -> sys::cdt_count {
        self.threshold
            .map_or(-1, |t| i64::try_from(t).unwrap_or(i64::MAX))
    }
}

/// Send `value` to `dest` with `tag` on `comm` (blocking, as `MPI_Send`: returns once the
/// value's messages were sent; the value is read in place until then).
pub fn send<T, C>(comm: &C, value: &T, dest: Rank, tag: Tag) -> Result<()>
where
    T: Pack + ?Sized,
    C: Communicator + AsRaw<Raw = MPI_Comm>,
{
    send_with(comm, value, dest, tag, &SendParams::default())
}

/// [`send`] with options.
pub fn send_with<T, C>(comm: &C, value: &T, dest: Rank, tag: Tag, p: &SendParams) -> Result<()>
where
    T: Pack + ?Sized,
    C: Communicator + AsRaw<Raw = MPI_Comm>,
{
    let obj = SendObj::new(value)?;
    let ty = send_type()?;
    // SAFETY: obj and the value it borrows outlive the blocking send
    check_mpi(unsafe { cdtypes_mpi_send(obj.as_ptr(), 1, ty, dest, tag, raw_comm(comm), p.raw()) })
}

/// Send `count` elements of a predefined or derived `datatype` laid out in `buf` (byte
/// displacements from its start): a derived layout is packed into the head, a contiguous one
/// of at least 64 KiB travels in place.
pub fn send_typed<C>(
    comm: &C,
    buf: &[u8],
    count: i64,
    datatype: &Datatype,
    dest: Rank,
    tag: Tag,
    p: &SendParams,
) -> Result<()>
where
    C: Communicator + AsRaw<Raw = MPI_Comm>,
{
    datatype.check_span(count, buf.len())?;
    // SAFETY: the type touches only bytes of buf, which outlives the blocking send
    check_mpi(unsafe {
        cdtypes_mpi_send(
            buf.as_ptr().cast(),
            count,
            datatype_raw(datatype),
            dest,
            tag,
            raw_comm(comm),
            p.raw(),
        )
    })
}

/// A matched and checked head (cdt_mpi_message); discarded (drained) when dropped unused.
struct Matched {
    msg: Message,
    status: Status,
}

impl Drop for Matched {
    fn drop(&mut self) {
        if !self.msg.is_null() {
            // SAFETY: a message of cdtypes_mpi_mprobe, not yet received
            unsafe { cdtypes_mpi_message_discard(&mut self.msg) };
        }
    }
}

fn mprobe<C: Communicator + AsRaw<Raw = MPI_Comm>>(
    comm: &C,
    source: Option<Rank>,
    tag: Option<Tag>,
    limits: &RecvLimits,
) -> Result<Matched> {
    let params = limits.raw();
    let mut m = Matched {
        msg: ptr::null_mut(),
        status: Status { source: 0, tag: 0 },
    };
    // SAFETY: constants, then a valid communicator and out-pointers
    let rc = unsafe {
        let source = source.unwrap_or_else(|| cdtypes_mpi_any_source());
        let tag = tag.unwrap_or_else(|| cdtypes_mpi_any_tag());
        cdtypes_mpi_mprobe(
            source,
            tag,
            raw_comm(comm),
            &params,
            &mut m.msg,
            &mut m.status.source,
            &mut m.status.tag,
        )
    };
    check_mpi(rc)?;
    Ok(m)
}

/// Receive one value sent by [`send`] (or by any language's implementation of docs/MPI.md)
/// from `source` with `tag` (`None`: any). Every region is allocated from the frame header and
/// becomes the received `Vec`s without a copy.
pub fn recv<T, C>(
    comm: &C,
    source: Option<Rank>,
    tag: Option<Tag>,
    limits: &RecvLimits,
) -> Result<(T, Status)>
where
    T: Unpack,
    C: Communicator + AsRaw<Raw = MPI_Comm>,
{
    let mut m = mprobe(comm, source, tag, limits)?;
    let mut state = RecvState::new::<T>(limits.frame_limits());
    // SAFETY: the decoder lives in the message; state outlives it (the message is received or
    // discarded, which frees the decoder, before state is dropped)
    unsafe { state.prepare(cdtypes_mpi_message_decoder(m.msg))? };
    // SAFETY: a message whose decoder was bound above; it is consumed (set to NULL)
    let rc = unsafe { cdtypes_mpi_mrecv_bound(&mut m.msg) };
    if rc != sys::CDT_SUCCESS {
        return Err(state.write_error(mpi_error(rc)));
    }
    Ok((state.into_value()?, m.status))
}

/// Receive into `count` elements of a predefined or derived `datatype` laid out in `out`.
pub fn recv_typed<C>(
    comm: &C,
    out: &mut [u8],
    count: i64,
    datatype: &Datatype,
    source: Option<Rank>,
    tag: Option<Tag>,
    limits: &RecvLimits,
) -> Result<Status>
where
    C: Communicator + AsRaw<Raw = MPI_Comm>,
{
    datatype.check_span(count, out.len())?;
    let mut m = mprobe(comm, source, tag, limits)?;
    // SAFETY: the type touches only bytes of out; the message is consumed
    check_mpi(unsafe {
        cdtypes_mpi_mrecv(
            out.as_mut_ptr().cast(),
            count,
            datatype_raw(datatype),
            &mut m.msg,
        )
    })?;
    Ok(m.status)
}

/// Send any `Serialize` value (feature `serde`; [`crate::serde::SerdeRef`]).
#[cfg(feature = "serde")]
pub fn send_serde<T, C>(comm: &C, value: &T, dest: Rank, tag: Tag) -> Result<()>
where
    T: ::serde::Serialize + ?Sized,
    C: Communicator + AsRaw<Raw = MPI_Comm>,
{
    send(comm, &crate::serde::SerdeRef(value), dest, tag)
}

/// Receive a value sent by [`send_serde`] (feature `serde`; [`crate::serde::Serde`]).
#[cfg(feature = "serde")]
pub fn recv_serde<T, C>(
    comm: &C,
    source: Option<Rank>,
    tag: Option<Tag>,
    limits: &RecvLimits,
) -> Result<(T, Status)>
where
    T: ::serde::de::DeserializeOwned,
    C: Communicator + AsRaw<Raw = MPI_Comm>,
{
    let (crate::serde::Serde(v), st) = recv(comm, source, tag, limits)?;
    Ok((v, st))
}

/// A serialized object as every language binding writes it (cdt_sobj): the serializer's
/// stream and the out-of-band regions, each with its element kind. What a frame carries,
/// independent of the language that wrote it (a pickle stream, a Rust [`Pack`] stream ...).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawObject {
    /// The packed stream.
    pub stream: Vec<u8>,
    /// The regions, in order.
    pub regions: Vec<(Kind, Vec<u8>)>,
}

/// Send a [`RawObject`] (its frame is the one the writer of the stream would send).
pub fn send_raw<C>(comm: &C, obj: &RawObject, dest: Rank, tag: Tag, p: &SendParams) -> Result<()>
where
    C: Communicator + AsRaw<Raw = MPI_Comm>,
{
    let mut bufs: Vec<sys::cdt_sobj_buffer> = obj
        .regions
        .iter()
        .map(|(k, v)| sys::cdt_sobj_buffer {
            base: if v.is_empty() {
                ptr::null_mut()
            } else {
                v.as_ptr() as *mut c_void
            },
            len: v.len() as i64,
            kind: k.raw(),
        })
        .collect();
    let so = sys::cdt_sobj {
        inband: obj.stream.as_ptr() as *mut c_void,
        inband_len: obj.stream.len() as i64,
        buffers: bufs.as_mut_ptr(),
        nbuffers: bufs.len() as i64,
        ..Default::default()
    };
    // SAFETY: so and the memory it names outlive the blocking send, which only reads it
    check_mpi(unsafe {
        cdtypes_mpi_send(
            (&so as *const sys::cdt_sobj).cast(),
            1,
            sys::cdt_sobj_type(),
            dest,
            tag,
            raw_comm(comm),
            p.raw(),
        )
    })
}

/// Receive any object as a [`RawObject`] (whatever language wrote its stream).
pub fn recv_raw<C>(
    comm: &C,
    source: Option<Rank>,
    tag: Option<Tag>,
    limits: &RecvLimits,
) -> Result<(RawObject, Status)>
where
    C: Communicator + AsRaw<Raw = MPI_Comm>,
{
    let mut m = mprobe(comm, source, tag, limits)?;
    let mut so = sys::cdt_sobj::default();
    // SAFETY: the message's decoder holds a validated header; so is sized from it, bound, and
    // released below whatever happens
    unsafe {
        let dec = cdtypes_mpi_message_decoder(m.msg);
        crate::error::check(sys::cdt_sobj_recv_prepare(&mut so, dec))?;
        let rc = sys::cdt_decoder_bind(
            dec,
            (&mut so as *mut sys::cdt_sobj).cast(),
            1,
            sys::cdt_sobj_type(),
        );
        let rc = if rc == sys::CDT_SUCCESS {
            cdtypes_mpi_mrecv_bound(&mut m.msg)
        } else {
            rc
        };
        let out = if rc == sys::CDT_SUCCESS {
            let bytes = |p: *const c_void, n: i64| -> Vec<u8> {
                if n == 0 {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(p.cast::<u8>(), n as usize).to_vec()
                }
            };
            let regions = (0..so.nbuffers as usize)
                .map(|i| {
                    let b = &*so.buffers.add(i);
                    (
                        Kind::from_raw(b.kind).unwrap_or(Kind::Byte),
                        bytes(b.base, b.len),
                    )
                })
                .collect();
            Ok(RawObject {
                stream: bytes(so.inband, so.inband_len),
                regions,
            })
        } else {
            Err(mpi_error(rc))
        };
        sys::cdt_sobj_release(&mut so);
        out.map(|o| (o, m.status))
    }
}
