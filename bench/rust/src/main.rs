//! Seed 000's Rust transfer benchmark (Figures 1-7): two processes on this machine over UCX,
//! the seed's Rust types, every method side by side in one run (interleaved per size, so the
//! ratios see the same machine load).
//!
//! Types: `Vec<Vec<i32>>` with sub-vectors of 64 B, 1 KiB, 4 KiB or 128 KiB (double-vec),
//! `Vec<StructVec>`, `Vec<StructSimple>`, `Vec<StructSimpleNoGap>` (all `#[repr(C)]`, as the
//! seed's Listings 6-8). Methods:
//!   cdtypes        `Endpoint::isend` / `Worker::irecv` of the value (Pack / Unpack, derived)
//!   cdtypes-recycle  as cdtypes, each received value handed back with `cdtypes::recycle` once
//!                  checked, so the next receive lands in its memory (as c-transport receives
//!                  into its slots again); the same as cdtypes for double-vec (regions)
//!   cdtypes-serde  the same value through the serde bridge (`cdtypes::serde::Serde`)
//!   manual         hand-written pack into one byte buffer, raw UCX send, hand-written unpack
//!   serde-bincode  `bincode::serialize`, raw UCX send, `bincode::deserialize`
//!   raw            one contiguous UCX message of the same byte count into a reused buffer
//!   c-transport    libcdt's C transport on the same memory with the C twin of the type
//!                  (examples/c/seed_types.c), as bench/transfer's `libcdt` method
//! The receivers of `manual` and `serde-bincode` are given the message length (a real one
//! would need a probe or a second message); cdtypes learns every length from the frame.
//!
//! Latency: half the median round trip of a ping-pong (the receiver sends back its own copy
//! of the object). Bandwidth: windows of non-blocking sends, each followed by a 1-byte
//! acknowledgement; the bytes of a window over the median window time. (The median, not the
//! mean: on a shared machine an iteration in which a process lost its core is an outlier.)
//! MB = 10^6 bytes. Usage: `cdtypes-bench [--quick] [--csv FILE] [--only CASE]` (starts the
//! second process itself; `--server` is that process). `BENCH_SERVER_CPU=N` runs the second
//! process on CPU N (bench/rust/run pins the two to CPUs 0 and 1); `BENCH_STATS=1` prints the
//! minimum and quartiles of each latency measurement to stderr.
use std::ffi::CStr;
use std::io::{BufRead, BufReader, Write};
use std::os::raw::{c_char, c_int, c_void};
use std::process::{Command, Stdio};
use std::ptr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cdtypes::serde::Serde;
use cdtypes::ucx::{Endpoint, RecvRequest, SendRequest, Worker, TAG_MASK_FULL};
use cdtypes::{Pack, Packer, Schema, Unpack, Unpacker};
use cdtypes_sys as sys;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

// ---------------------------------------------------------------------------------------------
// C side: raw UCX messages (shim.c) and the C twins of the seed types (seed_types.c)

#[repr(C)]
struct CDoubleVec {
    n: i64,
    lens: *mut i64,
    data: *mut *mut i32,
}

extern "C" {
    fn bench_raw_isend(
        ep: sys::cdt_ucx_ep,
        buf: *const c_void,
        len: usize,
        tag: u64,
    ) -> *mut c_void;
    fn bench_raw_irecv(
        w: sys::cdt_ucx_worker,
        buf: *mut c_void,
        len: usize,
        tag: u64,
    ) -> *mut c_void;
    fn bench_raw_wait(w: sys::cdt_ucx_worker, req: *mut c_void, timeout_s: f64) -> c_int;
    fn bench_ucs_status_string(status: c_int) -> *const c_char;
    fn struct_vec_type() -> sys::cdt_type;
    fn struct_simple_type() -> sys::cdt_type;
    fn struct_simple_no_gap_type() -> sys::cdt_type;
    fn double_vec_type() -> sys::cdt_type;
    fn double_vec_clear(v: *mut CDoubleVec);
}

const WAIT_S: f64 = 120.0;
const LONG: Option<Duration> = Some(Duration::from_secs(120));
const TAG_PING: u64 = 7;
const TAG_PONG: u64 = 8;
const TAG_BW: u64 = 9;
const TAG_ACK: u64 = 1 << 30;

fn raw_wait(w: &Worker, req: *mut c_void) {
    // SAFETY: a request (or NULL / error pointer) of this worker's UCX worker
    let st = unsafe { bench_raw_wait(w.as_raw(), req, WAIT_S) };
    if st != 0 {
        // SAFETY: static string
        let msg = unsafe { CStr::from_ptr(bench_ucs_status_string(st)) };
        panic!("raw UCX request: {}", msg.to_string_lossy());
    }
}

fn cdt_ok(rc: c_int, what: &str) {
    if rc != sys::CDT_SUCCESS {
        panic!("{what}: {}", cdtypes::Error::from_code(rc));
    }
}

// ---------------------------------------------------------------------------------------------
// the seed's types

#[repr(C)]
#[derive(cdtypes::Pack, cdtypes::Unpack, Serialize, Deserialize, Clone, Copy, PartialEq, Debug)]
struct StructSimple {
    a: i32,
    b: i32,
    c: i32,
    d: f64,
}

#[repr(C)]
#[derive(cdtypes::Pack, cdtypes::Unpack, Serialize, Deserialize, Clone, Copy, PartialEq, Debug)]
struct StructSimpleNoGap {
    a: i32,
    b: i32,
    c: f64,
}

const STRUCT_VEC_LEN: usize = 2048;

#[repr(C)]
#[derive(cdtypes::Pack, cdtypes::Unpack, Serialize, Deserialize, Clone, PartialEq, Debug)]
struct StructVec {
    a: i32,
    b: i32,
    c: i32,
    d: f64,
    #[serde(with = "big_array")]
    data: [i32; STRUCT_VEC_LEN],
}

/// serde derives arrays up to 32 elements: a longer one as a tuple (what serde-big-array does).
mod big_array {
    use super::*;
    use serde::de::{Error, SeqAccess, Visitor};
    use serde::ser::SerializeTuple;

    pub fn serialize<S: Serializer, const N: usize>(v: &[i32; N], s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(N)?;
        for x in v {
            t.serialize_element(x)?;
        }
        t.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>, const N: usize>(
        d: D,
    ) -> Result<[i32; N], D::Error> {
        struct V<const N: usize>;
        impl<'de, const N: usize> Visitor<'de> for V<N> {
            type Value = [i32; N];
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "an array of {N} i32")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<[i32; N], A::Error> {
                let mut out = [0i32; N];
                for (i, x) in out.iter_mut().enumerate() {
                    *x = seq
                        .next_element()?
                        .ok_or_else(|| A::Error::invalid_length(i, &self))?;
                }
                Ok(out)
            }
        }
        d.deserialize_tuple(N, V::<N>)
    }
}

fn bytes_of<T: Copy>(s: &[T]) -> &[u8] {
    // SAFETY: plain integers / floats without padding (the callers' element types)
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast(), std::mem::size_of_val(s)) }
}

fn bytes_of_mut<T: Copy>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as bytes_of; every byte pattern is a valid i32
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast(), std::mem::size_of_val(s)) }
}

/// A struct element of the seed: its C twin and its hand-written pack.
trait Elem:
    Clone + 'static + Pack + Unpack + Serialize + DeserializeOwned + PartialEq + Send + Sync
{
    /// Bytes of the fields (what a hand-written pack writes per element).
    const PACKED: usize;
    fn c_type() -> sys::cdt_type;
    fn fill(i: usize) -> Self;
    fn pack_into(&self, out: &mut [u8]);
    fn unpack_from(b: &[u8]) -> Self;
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn f64_at(b: &[u8], at: usize) -> f64 {
    f64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl Elem for StructSimple {
    const PACKED: usize = 20;
    fn c_type() -> sys::cdt_type {
        // SAFETY: created once by the C side
        unsafe { struct_simple_type() }
    }
    fn fill(i: usize) -> Self {
        let i = i as i32;
        StructSimple {
            a: i,
            b: i + 1,
            c: i + 2,
            d: f64::from(i) * 0.5,
        }
    }
    fn pack_into(&self, o: &mut [u8]) {
        o[0..4].copy_from_slice(&self.a.to_ne_bytes());
        o[4..8].copy_from_slice(&self.b.to_ne_bytes());
        o[8..12].copy_from_slice(&self.c.to_ne_bytes());
        o[12..20].copy_from_slice(&self.d.to_ne_bytes());
    }
    fn unpack_from(b: &[u8]) -> Self {
        StructSimple {
            a: i32_at(b, 0),
            b: i32_at(b, 4),
            c: i32_at(b, 8),
            d: f64_at(b, 12),
        }
    }
}

impl Elem for StructSimpleNoGap {
    const PACKED: usize = 16;
    fn c_type() -> sys::cdt_type {
        // SAFETY: created once by the C side
        unsafe { struct_simple_no_gap_type() }
    }
    fn fill(i: usize) -> Self {
        let i = i as i32;
        StructSimpleNoGap {
            a: i,
            b: i + 1,
            c: f64::from(i) * 0.5,
        }
    }
    fn pack_into(&self, o: &mut [u8]) {
        o[0..4].copy_from_slice(&self.a.to_ne_bytes());
        o[4..8].copy_from_slice(&self.b.to_ne_bytes());
        o[8..16].copy_from_slice(&self.c.to_ne_bytes());
    }
    fn unpack_from(b: &[u8]) -> Self {
        StructSimpleNoGap {
            a: i32_at(b, 0),
            b: i32_at(b, 4),
            c: f64_at(b, 8),
        }
    }
}

impl Elem for StructVec {
    const PACKED: usize = 20 + 4 * STRUCT_VEC_LEN;
    fn c_type() -> sys::cdt_type {
        // SAFETY: created once by the C side
        unsafe { struct_vec_type() }
    }
    fn fill(i: usize) -> Self {
        let k = i as i32;
        let mut data = [0i32; STRUCT_VEC_LEN];
        for (j, x) in data.iter_mut().enumerate() {
            *x = k.wrapping_mul(31).wrapping_add(j as i32);
        }
        StructVec {
            a: k,
            b: k + 1,
            c: k + 2,
            d: f64::from(k) * 0.5,
            data,
        }
    }
    fn pack_into(&self, o: &mut [u8]) {
        o[0..4].copy_from_slice(&self.a.to_ne_bytes());
        o[4..8].copy_from_slice(&self.b.to_ne_bytes());
        o[8..12].copy_from_slice(&self.c.to_ne_bytes());
        o[12..20].copy_from_slice(&self.d.to_ne_bytes());
        o[20..].copy_from_slice(bytes_of(&self.data));
    }
    fn unpack_from(b: &[u8]) -> Self {
        let mut v = StructVec {
            a: i32_at(b, 0),
            b: i32_at(b, 4),
            c: i32_at(b, 8),
            d: f64_at(b, 12),
            data: [0; STRUCT_VEC_LEN],
        };
        bytes_of_mut(&mut v.data).copy_from_slice(&b[20..Self::PACKED]);
        v
    }
}

// ---------------------------------------------------------------------------------------------
// an object of a case: what every method needs

/// Where a C-twin receive lands.
enum CSlot {
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
struct CSend {
    ty: sys::cdt_type,
    count: i64,
    buf: *const c_void,
    // double_vec: the C descriptor pointing at the Rust vectors
    _desc: Option<(Box<CDoubleVec>, Vec<i64>, Vec<*mut i32>)>,
}

trait Case: Pack + Unpack + Serialize + DeserializeOwned + PartialEq + Send + Sync + 'static {
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
struct Shared<T>(Arc<T>);

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

// ---------------------------------------------------------------------------------------------
// methods

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Method {
    Cdtypes,
    CdtypesRecycle,
    CdtypesSerde,
    Manual,
    SerdeBincode,
    Raw,
    CTransport,
}

const METHODS: [Method; 7] = [
    Method::Raw,
    Method::Cdtypes,
    Method::CTransport,
    Method::Manual,
    Method::SerdeBincode,
    Method::CdtypesSerde,
    Method::CdtypesRecycle,
];

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Cdtypes => "cdtypes",
            Method::CdtypesRecycle => "cdtypes-recycle",
            Method::CdtypesSerde => "cdtypes-serde",
            Method::Manual => "manual",
            Method::SerdeBincode => "serde-bincode",
            Method::Raw => "raw",
            Method::CTransport => "c-transport",
        }
    }
}

enum After {
    Nothing,
    Manual(usize),
    Bincode(usize),
}

enum Pend<T: Case> {
    Raw {
        req: *mut c_void,
        after: After,
        _keep: Option<Vec<u8>>,
    },
    Send(SendRequest<Shared<T>>),
    Recv(RecvRequest<T>),
    RecvRecycle(RecvRequest<T>),
    SerdeSend(SendRequest<Serde<Shared<T>>>),
    SerdeRecv(RecvRequest<Serde<Shared<T>>>),
    C {
        req: sys::cdt_ucx_request,
        slot: Option<usize>,
    },
}

/// A received value handed to `cdtypes::recycle` when dropped (cdtypes-recycle).
struct Recycled<T: Case>(Option<T>);

impl<T: Case> Drop for Recycled<T> {
    fn drop(&mut self) {
        if let Some(v) = self.0.take() {
            v.recycle();
        }
    }
}

/// What a receive got (for the check after a measurement).
enum Got<T: Case> {
    Value(T),
    Recycled(Recycled<T>),
    CSlot(usize),
    RawSlot,
}

struct Bench<'e, T: Case> {
    worker: &'e Worker,
    ep: &'e Endpoint,
    value: Arc<T>,
    bytes: usize,
    raw_send: Vec<u8>,
    raw_recv: Vec<Vec<u8>>,
    pack: Vec<Vec<u8>>,
    bin_recv: Vec<Vec<u8>>,
    c_send: CSend,
    c_recv: Vec<CSlot>,
    window: usize,
}

impl<'e, T: Case> Bench<'e, T> {
    fn new(worker: &'e Worker, ep: &'e Endpoint, value: T, bytes: usize, window: usize) -> Self {
        let bin_len = bincode::serialized_size(&value).expect("bincode size") as usize;
        let manual = value.manual_len();
        let c_send = value.c_send();
        let c_recv = (0..window).map(|_| value.c_slot()).collect();
        Bench {
            worker,
            ep,
            bytes,
            raw_send: vec![1u8; bytes],
            raw_recv: (0..window).map(|_| vec![0u8; bytes]).collect(),
            pack: (0..window).map(|_| vec![0u8; manual]).collect(),
            bin_recv: (0..window).map(|_| vec![0u8; bin_len]).collect(),
            c_send,
            c_recv,
            window,
            value: Arc::new(value),
        }
    }

    fn raw_isend(&self, buf: &[u8], tag: u64) -> *mut c_void {
        // SAFETY: buf outlives the request (waited for before it is dropped or reused)
        unsafe { bench_raw_isend(self.ep.as_raw(), buf.as_ptr().cast(), buf.len(), tag) }
    }

    fn raw_irecv(&self, buf: &mut [u8], tag: u64) -> *mut c_void {
        // SAFETY: as raw_isend
        unsafe {
            bench_raw_irecv(
                self.worker.as_raw(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                tag,
            )
        }
    }

    fn send(&mut self, m: Method, slot: usize, tag: u64) -> Pend<T> {
        match m {
            Method::Raw => Pend::Raw {
                req: self.raw_isend(&self.raw_send, tag),
                after: After::Nothing,
                _keep: None,
            },
            Method::Cdtypes | Method::CdtypesRecycle => Pend::Send(
                self.ep
                    .isend(Shared(self.value.clone()), tag)
                    .expect("isend"),
            ),
            Method::CdtypesSerde => Pend::SerdeSend(
                self.ep
                    .isend(Serde(Shared(self.value.clone())), tag)
                    .expect("isend"),
            ),
            Method::Manual => {
                let mut buf = std::mem::take(&mut self.pack[slot]);
                self.value.manual_pack(&mut buf);
                let req = self.raw_isend(&buf, tag);
                self.pack[slot] = buf;
                Pend::Raw {
                    req,
                    after: After::Nothing,
                    _keep: None,
                }
            }
            Method::SerdeBincode => {
                let bytes = bincode::serialize(&*self.value).expect("bincode");
                Pend::Raw {
                    req: self.raw_isend(&bytes, tag),
                    after: After::Nothing,
                    _keep: Some(bytes),
                }
            }
            Method::CTransport => {
                let mut req = ptr::null_mut();
                // SAFETY: the object outlives the request
                cdt_ok(
                    unsafe {
                        sys::cdt_ucx_isend(
                            self.ep.as_raw(),
                            self.c_send.buf,
                            self.c_send.count,
                            self.c_send.ty,
                            tag,
                            &mut req,
                        )
                    },
                    "cdt_ucx_isend",
                );
                Pend::C { req, slot: None }
            }
        }
    }

    fn recv(&mut self, m: Method, slot: usize, tag: u64) -> Pend<T> {
        match m {
            Method::Raw => {
                let mut buf = std::mem::take(&mut self.raw_recv[slot]);
                let req = self.raw_irecv(&mut buf, tag);
                self.raw_recv[slot] = buf;
                Pend::Raw {
                    req,
                    after: After::Nothing,
                    _keep: None,
                }
            }
            Method::Cdtypes => Pend::Recv(self.worker.irecv(tag, TAG_MASK_FULL).expect("irecv")),
            Method::CdtypesRecycle => {
                Pend::RecvRecycle(self.worker.irecv(tag, TAG_MASK_FULL).expect("irecv"))
            }
            Method::CdtypesSerde => {
                Pend::SerdeRecv(self.worker.irecv(tag, TAG_MASK_FULL).expect("irecv"))
            }
            Method::Manual => {
                let mut buf = std::mem::take(&mut self.pack[slot]);
                let req = self.raw_irecv(&mut buf, tag);
                self.pack[slot] = buf;
                Pend::Raw {
                    req,
                    after: After::Manual(slot),
                    _keep: None,
                }
            }
            Method::SerdeBincode => {
                let mut buf = std::mem::take(&mut self.bin_recv[slot]);
                let req = self.raw_irecv(&mut buf, tag);
                self.bin_recv[slot] = buf;
                Pend::Raw {
                    req,
                    after: After::Bincode(slot),
                    _keep: None,
                }
            }
            Method::CTransport => {
                let buf: *mut c_void = match &mut self.c_recv[slot] {
                    CSlot::Structs(mem) => mem.as_mut_ptr().cast(),
                    CSlot::Dv(d) => {
                        // SAFETY: zeroed or allocated by the C type
                        unsafe { double_vec_clear(&mut **d) };
                        (&mut **d as *mut CDoubleVec).cast()
                    }
                };
                let mut req = ptr::null_mut();
                // SAFETY: the slot outlives the request
                cdt_ok(
                    unsafe {
                        sys::cdt_ucx_irecv(
                            self.worker.as_raw(),
                            buf,
                            self.c_send.count,
                            self.c_send.ty,
                            tag,
                            TAG_MASK_FULL,
                            ptr::null(),
                            &mut req,
                        )
                    },
                    "cdt_ucx_irecv",
                );
                Pend::C {
                    req,
                    slot: Some(slot),
                }
            }
        }
    }

    fn wait(&mut self, p: Pend<T>) -> Option<Got<T>> {
        match p {
            Pend::Raw { req, after, _keep } => {
                raw_wait(self.worker, req);
                match after {
                    After::Nothing => Some(Got::RawSlot),
                    After::Manual(slot) => {
                        Some(Got::Value(T::manual_unpack(&self.pack[slot], &self.value)))
                    }
                    After::Bincode(slot) => Some(Got::Value(
                        bincode::deserialize(&self.bin_recv[slot]).expect("bincode"),
                    )),
                }
            }
            Pend::Send(mut r) => {
                r.wait(LONG).expect("send");
                None
            }
            Pend::SerdeSend(mut r) => {
                r.wait(LONG).expect("send");
                None
            }
            Pend::Recv(mut r) => Some(Got::Value(r.wait(LONG).expect("recv"))),
            Pend::RecvRecycle(mut r) => {
                Some(Got::Recycled(Recycled(Some(r.wait(LONG).expect("recv")))))
            }
            Pend::SerdeRecv(mut r) => {
                let Serde(Shared(v)) = r.wait(LONG).expect("recv");
                Some(Got::Value(Arc::try_unwrap(v).ok().expect("unique")))
            }
            Pend::C { req, slot } => {
                // SAFETY: our request, freed once
                unsafe {
                    cdt_ok(sys::cdt_ucx_request_wait(req, 120_000), "cdt request");
                    sys::cdt_ucx_request_free(req);
                }
                slot.map(Got::CSlot)
            }
        }
    }

    fn check(&self, m: Method, got: Option<Got<T>>) {
        let ok = match got {
            Some(Got::Value(v)) => v == *self.value,
            Some(Got::Recycled(r)) => r.0.as_ref() == Some(&*self.value),
            Some(Got::CSlot(s)) => self.value.c_check(&self.c_recv[s]),
            Some(Got::RawSlot) => true,
            None => false,
        };
        assert!(
            ok,
            "{}: the received object differs from the sent one",
            m.name()
        );
    }

    fn ack(&mut self, server: bool) {
        let mut b = [0u8; 1];
        let req = if server {
            self.raw_isend(&b, TAG_ACK)
        } else {
            self.raw_irecv(&mut b, TAG_ACK)
        };
        raw_wait(self.worker, req);
    }

    fn latency_us(&mut self, m: Method, iters: usize, server: bool) -> f64 {
        let warm = iters / 10 + 1;
        let mut last = None;
        let mut times = Vec::with_capacity(iters);
        for i in 0..iters + warm {
            let t0 = Instant::now();
            if server {
                let p = self.recv(m, 0, TAG_PING);
                let got = self.wait(p);
                if i == 0 {
                    self.check(m, got);
                }
                let p = self.send(m, 0, TAG_PONG);
                self.wait(p);
            } else {
                let p = self.send(m, 0, TAG_PING);
                self.wait(p);
                let p = self.recv(m, 0, TAG_PONG);
                last = self.wait(p);
            }
            if i >= warm {
                times.push(t0.elapsed().as_secs_f64());
            }
        }
        if !server {
            self.check(m, last);
            if std::env::var_os("BENCH_STATS").is_some() {
                times.sort_by(f64::total_cmp);
                let n = times.len();
                eprintln!(
                    "{} {}: min {:.1} p10 {:.1} p25 {:.1} med {:.1} us",
                    m.name(),
                    self.bytes,
                    times[0] * 5e5,
                    times[n / 10] * 5e5,
                    times[n / 4] * 5e5,
                    times[n / 2] * 5e5
                );
            }
        }
        median(&mut times) / 2.0 * 1e6
    }

    fn bandwidth_mbs(&mut self, m: Method, windows: usize, server: bool) -> f64 {
        let mut times = Vec::with_capacity(windows);
        for it in 0..windows + 1 {
            let t0 = Instant::now();
            let w = self.window;
            let pend: Vec<Pend<T>> = (0..w)
                .map(|i| {
                    if server {
                        self.recv(m, i, TAG_BW)
                    } else {
                        self.send(m, i, TAG_BW)
                    }
                })
                .collect();
            for (i, p) in pend.into_iter().enumerate() {
                let got = self.wait(p);
                if server && it == 0 && i == 0 {
                    self.check(m, got);
                }
            }
            self.ack(server);
            if it > 0 {
                times.push(t0.elapsed().as_secs_f64());
            }
        }
        (self.bytes * self.window) as f64 / median(&mut times) / 1e6
    }
}

/// The median of measured times: on a shared machine a process that loses its core for a
/// time slice makes one iteration slow; the median is the time of an undisturbed one.
fn median(times: &mut [f64]) -> f64 {
    times.sort_by(f64::total_cmp);
    let n = times.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        times[n / 2]
    } else {
        (times[n / 2 - 1] + times[n / 2]) / 2.0
    }
}

// ---------------------------------------------------------------------------------------------
// the plan

#[derive(Clone, Copy)]
enum Kind {
    Simple,
    NoGap,
    StructVec,
    DoubleVec(usize),
}

struct CaseDesc {
    name: &'static str,
    kind: Kind,
    latency: bool,
    bandwidth: bool,
}

const CASES: [CaseDesc; 7] = [
    CaseDesc {
        name: "double_vec_64",
        kind: Kind::DoubleVec(64),
        latency: true,
        bandwidth: false,
    },
    CaseDesc {
        name: "double_vec_1k",
        kind: Kind::DoubleVec(1024),
        latency: true,
        bandwidth: true,
    },
    CaseDesc {
        name: "double_vec_4k",
        kind: Kind::DoubleVec(4096),
        latency: true,
        bandwidth: false,
    },
    CaseDesc {
        name: "double_vec_128k",
        kind: Kind::DoubleVec(128 << 10),
        latency: true,
        bandwidth: true,
    },
    CaseDesc {
        name: "struct_vec",
        kind: Kind::StructVec,
        latency: true,
        bandwidth: true,
    },
    CaseDesc {
        name: "struct_simple",
        kind: Kind::Simple,
        latency: true,
        bandwidth: true,
    },
    CaseDesc {
        name: "struct_simple_no_gap",
        kind: Kind::NoGap,
        latency: true,
        bandwidth: true,
    },
];

struct Opts {
    quick: bool,
    server: bool,
    csv: Option<String>,
    only: Option<String>,
}

struct Out {
    csv: Option<std::fs::File>,
}

impl Out {
    fn row(&mut self, case: &str, m: Method, size: usize, lat: bool, v: f64) {
        if let Some(f) = &mut self.csv {
            writeln!(
                f,
                "{case},{},{size},{},{v:.3},{}",
                m.name(),
                if lat { "latency_us" } else { "bandwidth_mbs" },
                if lat { "us" } else { "MB/s" }
            )
            .expect("write csv");
        }
    }
}

fn run_case<T: Case>(
    o: &Opts,
    w: &Worker,
    ep: &Endpoint,
    out: &mut Out,
    case: &CaseDesc,
    sub: usize,
) {
    let step = if o.quick { 4 } else { 2 };
    // full runs measure each point twice, methods interleaved, and keep the better value
    let reps = if o.quick { 1 } else { 2 };
    for lat in [true, false] {
        if (lat && !case.latency) || (!lat && !case.bandwidth) {
            continue;
        }
        if !o.server {
            print!(
                "# {} {} (MB = 10^6 bytes)\n# Size     ",
                case.name,
                if lat { "latency" } else { "bandwidth" }
            );
            for m in METHODS {
                print!("  {:>14}", m.name());
            }
            println!(
                "   [{}]",
                if lat {
                    "Latency (us)"
                } else {
                    "Bandwidth (MB/s)"
                }
            );
        }
        // quick: latency to 1 MiB, bandwidth to 16 MiB; full: both to 64 MiB
        let max: usize = match (o.quick, lat) {
            (true, true) => 1 << 20,
            (true, false) => 16 << 20,
            _ => 64 << 20,
        };
        let mut size = 16usize;
        while size <= max {
            let Some((value, bytes)) = T::make(size, sub) else {
                size *= step;
                continue;
            };
            let window = if lat {
                1
            } else {
                ((64usize << 20) / bytes).clamp(1, 64)
            };
            let mut b = Bench::new(w, ep, value, bytes, window);
            let mut best = [f64::NAN; METHODS.len()];
            for _ in 0..reps {
                for (mi, m) in METHODS.into_iter().enumerate() {
                    let v = if lat {
                        let iters = match bytes {
                            0..=4096 => {
                                if o.quick {
                                    200
                                } else {
                                    500
                                }
                            }
                            4097..=262_144 => {
                                if o.quick {
                                    30
                                } else {
                                    100
                                }
                            }
                            262_145..=4_194_304 => {
                                if o.quick {
                                    5
                                } else {
                                    20
                                }
                            }
                            _ => {
                                if o.quick {
                                    2
                                } else {
                                    5
                                }
                            }
                        };
                        b.latency_us(m, iters, o.server)
                    } else {
                        let total: usize = if o.quick { 32 << 20 } else { 128 << 20 };
                        let windows = (total / (bytes * window)).clamp(5, 100);
                        b.bandwidth_mbs(m, windows, o.server)
                    };
                    let better = if lat { v < best[mi] } else { v > best[mi] };
                    if best[mi].is_nan() || better {
                        best[mi] = v;
                    }
                }
            }
            if !o.server {
                print!("{size:<10}");
                for (mi, m) in METHODS.into_iter().enumerate() {
                    print!("  {:>14.2}", best[mi]);
                    out.row(case.name, m, size, lat, best[mi]);
                }
                println!();
                std::io::stdout().flush().ok();
            }
            size *= step;
        }
    }
}

fn main() {
    let mut o = Opts {
        quick: false,
        server: false,
        csv: None,
        only: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => o.quick = true,
            "--server" => o.server = true,
            "--csv" => o.csv = args.next(),
            "--only" => o.only = args.next(),
            _ => {
                eprintln!("usage: cdtypes-bench [--quick] [--csv FILE] [--only CASE]");
                std::process::exit(2);
            }
        }
    }
    let worker = Worker::new().expect("worker");
    let addr = worker.address().expect("address");
    let hex: String = addr.iter().map(|b| format!("{b:02x}")).collect();
    // endpoints from exchanged worker addresses (as MPI or a file would bootstrap)
    let (peer_hex, child) = if o.server {
        println!("{hex}");
        std::io::stdout().flush().expect("stdout");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).expect("stdin");
        (line, None)
    } else {
        let mut args: Vec<String> = vec!["--server".into()];
        if o.quick {
            args.push("--quick".into());
        }
        if let Some(c) = &o.only {
            args.push("--only".into());
            args.push(c.clone());
        }
        let exe = std::env::current_exe().expect("current_exe");
        // BENCH_SERVER_CPU=N: the second process on CPU N (taskset), the first one is placed
        // by whoever started it
        let mut cmd = match std::env::var("BENCH_SERVER_CPU") {
            Ok(cpu) => {
                let mut c = Command::new("taskset");
                c.arg("-c").arg(cpu).arg(&exe);
                c
            }
            Err(_) => Command::new(&exe),
        };
        let mut child = cmd
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the server process");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the server's address");
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, "{hex}").expect("write our address");
        (line, Some(child))
    };
    let peer: Vec<u8> = (0..peer_hex.trim().len() / 2)
        .map(|i| u8::from_str_radix(&peer_hex.trim()[2 * i..2 * i + 2], 16).expect("hex"))
        .collect();
    let ep = worker.connect_address(&peer).expect("endpoint");
    let mut out = Out {
        csv: o.csv.as_ref().map(|p| {
            let mut f = std::fs::File::create(p).expect("create csv");
            writeln!(f, "case,method,size_bytes,metric,value,unit").expect("write csv");
            f
        }),
    };
    for case in &CASES {
        if o.only.as_deref().is_some_and(|c| c != case.name) {
            continue;
        }
        match case.kind {
            Kind::Simple => run_case::<Vec<StructSimple>>(&o, &worker, &ep, &mut out, case, 0),
            Kind::NoGap => run_case::<Vec<StructSimpleNoGap>>(&o, &worker, &ep, &mut out, case, 0),
            Kind::StructVec => run_case::<Vec<StructVec>>(&o, &worker, &ep, &mut out, case, 0),
            Kind::DoubleVec(sub) => {
                run_case::<Vec<Vec<i32>>>(&o, &worker, &ep, &mut out, case, sub)
            }
        }
    }
    // both done before closing
    let mut b = [0u8; 1];
    // SAFETY: b outlives the request (waited for)
    let req = unsafe {
        if o.server {
            bench_raw_isend(ep.as_raw(), b.as_ptr().cast(), 1, TAG_ACK)
        } else {
            bench_raw_irecv(worker.as_raw(), b.as_mut_ptr().cast(), 1, TAG_ACK)
        }
    };
    raw_wait(&worker, req);
    drop(out);
    ep.close(Some(Duration::from_secs(2))).ok();
    if let Some(mut c) = child {
        let st = c.wait().expect("wait for the server");
        if !st.success() {
            eprintln!("the server process failed: {st}");
            std::process::exit(1);
        }
    }
}
