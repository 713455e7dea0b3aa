//! Rust values between two MPI ranks (`bench/run mpi --rust`, mpiexec -n 2): cdtypes::mpi
//! (libcdt's MPI protocol, docs/MPI.md) against what rsmpi itself offers for the same data,
//! ping-pong, methods interleaved per case (as bench/mpi/bench_mpi.c):
//!
//! - case `rust_bytes` (`Vec<u8>` of 16 B .. max bytes, x4): `raw` (rsmpi send of the slice,
//!   received into a buffer the receiver has), `rsmpi_vec` (received with `receive_vec`: a new
//!   `Vec` each time), `cdt` (`cdtypes::mpi::send` / `recv::<Vec<u8>>`: the `Vec` is allocated
//!   from the frame header, the bytes land in it).
//! - case `rust_struct_simple` (seed 000's `{i32, i32, i32, f64}`, 20 bytes of data in 24, a
//!   `Vec` of 1 .. 100,000): `raw` (the packed bytes, contiguous), `rsmpi_ddt` (the slice with
//!   the struct's MPI datatype, into a buffer the receiver has), `rsmpi_vec` (the same datatype,
//!   `receive_vec`), `cdt`.
//!
//! Rank 0 prints CSV rows: case,method,size_bytes,metric,value,unit (latency_us = half the
//! median round trip, bandwidth_mbs = payload bytes / latency).
//! Usage: cdtypes-bench-mpi [--quick] [--max-bytes N]
use std::time::Instant;

use cdtypes::mpi::{self as cmpi, RecvLimits};
use cdtypes::{Pack, Unpack};
use mpi::datatype::{Equivalence, UserDatatype};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

#[repr(C)]
#[derive(Pack, Unpack, Clone, Copy, Default, PartialEq, Debug)]
struct StructSimple {
    a: i32,
    b: i32,
    c: i32,
    d: f64,
}

// SAFETY: the datatype describes exactly the four fields at their repr(C) offsets
unsafe impl Equivalence for StructSimple {
    type Out = UserDatatype;
    fn equivalent_datatype() -> UserDatatype {
        UserDatatype::structured(
            &[1, 1, 1, 1],
            &[0, 4, 8, 16],
            &[
                i32::equivalent_datatype(),
                i32::equivalent_datatype(),
                i32::equivalent_datatype(),
                f64::equivalent_datatype(),
            ],
        )
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Method {
    Raw,
    RsmpiDdt,
    RsmpiVec,
    Cdt,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Raw => "raw",
            Method::RsmpiDdt => "rsmpi_ddt",
            Method::RsmpiVec => "rsmpi_vec",
            Method::Cdt => "cdt",
        }
    }
}

/// The data of one case on one rank: what is sent, and where a receive that needs a buffer
/// lands.
struct Case {
    name: &'static str,
    payload: usize,
    bytes: Vec<u8>,
    bytes_in: Vec<u8>,
    structs: Vec<StructSimple>,
    structs_in: Vec<StructSimple>,
    is_struct: bool,
}

struct Bench {
    world: SimpleCommunicator,
    rank: i32,
    target: f64,
    rounds: usize,
}

impl Bench {
    fn transfer(&self, c: &mut Case, m: Method, from: i32) {
        let peer = self.world.process_at_rank(1 - self.rank);
        let trusted = RecvLimits::default();
        if self.rank == from {
            match (m, c.is_struct) {
                (Method::Raw, _) | (Method::RsmpiVec, false) => peer.send(&c.bytes[..]),
                (Method::RsmpiDdt | Method::RsmpiVec, true) => peer.send(&c.structs[..]),
                (Method::Cdt, false) => {
                    cmpi::send(&self.world, &c.bytes, 1 - self.rank, 0).expect("cdtypes::mpi::send")
                }
                (Method::Cdt, true) => cmpi::send(&self.world, &c.structs, 1 - self.rank, 0)
                    .expect("cdtypes::mpi::send"),
                (Method::RsmpiDdt, false) => unreachable!(),
            }
        } else {
            match (m, c.is_struct) {
                (Method::Raw, _) => {
                    peer.receive_into(&mut c.bytes_in[..]);
                }
                (Method::RsmpiDdt, true) => {
                    peer.receive_into(&mut c.structs_in[..]);
                }
                (Method::RsmpiVec, false) => {
                    let (v, _) = peer.receive_vec::<u8>();
                    std::hint::black_box(v);
                }
                (Method::RsmpiVec, true) => {
                    let (v, _) = peer.receive_vec::<StructSimple>();
                    std::hint::black_box(v);
                }
                (Method::Cdt, false) => {
                    let (v, _): (Vec<u8>, _) =
                        cmpi::recv(&self.world, Some(1 - self.rank), Some(0), &trusted)
                            .expect("cdtypes::mpi::recv");
                    std::hint::black_box(v);
                }
                (Method::Cdt, true) => {
                    let (v, _): (Vec<StructSimple>, _) =
                        cmpi::recv(&self.world, Some(1 - self.rank), Some(0), &trusted)
                            .expect("cdtypes::mpi::recv");
                    std::hint::black_box(v);
                }
                (Method::RsmpiDdt, false) => unreachable!(),
            }
        }
    }

    /// seconds of `iters` round trips (rank 0's clock, sent to rank 1)
    fn round_trips(&self, c: &mut Case, m: Method, iters: usize) -> f64 {
        self.world.barrier();
        let t0 = Instant::now();
        for _ in 0..iters {
            self.transfer(c, m, 0);
            self.transfer(c, m, 1);
        }
        let mut t = t0.elapsed().as_secs_f64();
        self.world.process_at_rank(0).broadcast_into(&mut t);
        t
    }

    fn run(&self, c: &mut Case) {
        let methods: &[Method] = if c.is_struct {
            &[Method::Raw, Method::RsmpiDdt, Method::RsmpiVec, Method::Cdt]
        } else {
            &[Method::Raw, Method::RsmpiVec, Method::Cdt]
        };
        let mut iters = Vec::new();
        for &m in methods {
            self.round_trips(c, m, 1);
            let t1 = self.round_trips(c, m, 1);
            let want = self.target / self.rounds as f64;
            iters.push(((want / t1.max(1e-9)) as usize + 1).min(100_000));
        }
        let mut times = vec![Vec::new(); methods.len()];
        for _ in 0..self.rounds {
            for (k, &m) in methods.iter().enumerate() {
                times[k].push(self.round_trips(c, m, iters[k]) / iters[k] as f64);
            }
        }
        if self.rank != 0 {
            return;
        }
        for (k, &m) in methods.iter().enumerate() {
            times[k].sort_by(|a, b| a.partial_cmp(b).unwrap());
            let one_way = times[k][times[k].len() / 2] / 2.0;
            println!(
                "{},{},{},latency_us,{:.3},us",
                c.name,
                m.name(),
                c.payload,
                one_way * 1e6
            );
            println!(
                "{},{},{},bandwidth_mbs,{:.6},MB/s",
                c.name,
                m.name(),
                c.payload,
                c.payload as f64 / one_way / 1e6
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let mut max_bytes: usize = if quick { 16 << 20 } else { 256 << 20 };
    if let Some(i) = args.iter().position(|a| a == "--max-bytes") {
        max_bytes = args[i + 1].parse().expect("--max-bytes N");
    }
    let universe = mpi::initialize().expect("MPI_Init");
    let world = universe.world();
    assert_eq!(world.size(), 2, "run with 2 processes");
    cmpi::attach(&world).expect("attach");
    let b = Bench {
        rank: world.rank(),
        world,
        target: if quick { 0.05 } else { 0.2 },
        rounds: if quick { 3 } else { 5 },
    };
    if b.rank == 0 {
        println!("case,method,size_bytes,metric,value,unit");
    }
    let mut n = 16;
    while n <= max_bytes {
        let mut c = Case {
            name: "rust_bytes",
            payload: n,
            bytes: (0..n).map(|i| i as u8).collect(),
            bytes_in: vec![0; n],
            structs: Vec::new(),
            structs_in: Vec::new(),
            is_struct: false,
        };
        b.run(&mut c);
        n *= 4;
    }
    for count in [1usize, 100, 10_000, 100_000] {
        let s = StructSimple {
            a: 1,
            b: 2,
            c: 3,
            d: 4.5,
        };
        let mut c = Case {
            name: "rust_struct_simple",
            payload: count * 20,
            bytes: vec![7; count * 20],
            bytes_in: vec![0; count * 20],
            structs: vec![s; count],
            structs_in: vec![StructSimple::default(); count],
            is_struct: true,
        };
        b.run(&mut c);
    }
}
