//! The methods side by side: how each sends and receives, and the latency and bandwidth
//! loops that time them.
use std::os::raw::c_void;
use std::ptr;
use std::sync::Arc;
use std::time::Instant;

use cdtypes::serde::Serde;
use cdtypes::ucx::{Endpoint, RecvRequest, SendRequest, Worker, TAG_MASK_FULL};
use cdtypes_sys as sys;

use crate::cases::{CSend, CSlot, Case, Shared};
use crate::ffi::{
    bench_raw_irecv, bench_raw_isend, cdt_ok, double_vec_clear, raw_wait, CDoubleVec, LONG,
    TAG_ACK, TAG_BW, TAG_PING, TAG_PONG,
};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Method {
    Cdtypes,
    CdtypesRecycle,
    CdtypesSerde,
    Manual,
    SerdeBincode,
    Raw,
    CTransport,
}

pub(crate) const METHODS: [Method; 7] = [
    Method::Raw,
    Method::Cdtypes,
    Method::CTransport,
    Method::Manual,
    Method::SerdeBincode,
    Method::CdtypesSerde,
    Method::CdtypesRecycle,
];

impl Method {
    pub(crate) fn name(self) -> &'static str {
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

pub(crate) struct Bench<'e, T: Case> {
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
    pub(crate) fn new(
        worker: &'e Worker,
        ep: &'e Endpoint,
        value: T,
        bytes: usize,
        window: usize,
    ) -> Self {
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

    pub(crate) fn latency_us(&mut self, m: Method, iters: usize, server: bool) -> f64 {
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

    pub(crate) fn bandwidth_mbs(&mut self, m: Method, windows: usize, server: bool) -> f64 {
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
