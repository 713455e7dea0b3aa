//! Seed 000's Rust transfer benchmark (Figures 1-7): two processes on this machine over UCX,
//! the seed's Rust types, every method side by side in one run (interleaved per size, so the
//! ratios see the same machine load).
//!
//! Types: `Vec<Vec<i32>>` with sub-vectors of 64 B, 1 KiB, 4 KiB or 128 KiB (double-vec),
//! `Vec<StructVec>`, `Vec<StructSimple>`, `Vec<StructSimpleNoGap>` (all `#[repr(C)]`, as the
//! seed's Listings 6-8), and `struct_vec_padded` / `struct_simple_padded`: the same records as
//! `#[cdtypes(padded)]` structs, whose Vec travels as its memory (one region; their C twin is
//! the same C custom type as the unpadded case's). Methods:
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
//! MB = 10^6 bytes. Usage: `cdtypes-bench [--quick|--smoke] [--csv FILE] [--only CASE]`
//! (starts the second process itself; `--server` is that process). `BENCH_SERVER_CPU=N` runs the second
//! process on CPU N (bench/rust/run pins the two to CPUs 0 and 1); `BENCH_STATS=1` prints the
//! minimum and quartiles of each latency measurement to stderr; `BENCH_METHODS=a,b` measures
//! only the methods named (the others print `-`), e.g. to profile one.
mod cases;
mod ffi;
mod methods;
mod plan;
mod types;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use cdtypes::ucx::Worker;

use crate::ffi::{bench_raw_irecv, bench_raw_isend, raw_wait, TAG_ACK};
use crate::plan::{run_case, Kind, Opts, Out, CASES};
use crate::types::{
    StructSimple, StructSimpleNoGap, StructSimplePadded, StructVec, StructVecPadded,
};

fn main() {
    let mut o = Opts {
        quick: false,
        smoke: false,
        server: false,
        csv: None,
        only: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => o.quick = true,
            "--smoke" => {
                o.quick = true;
                o.smoke = true;
            }
            "--server" => o.server = true,
            "--csv" => o.csv = args.next(),
            "--only" => o.only = args.next(),
            _ => {
                eprintln!("usage: cdtypes-bench [--quick|--smoke] [--csv FILE] [--only CASE]");
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
        if o.smoke {
            args.push("--smoke".into());
        } else if o.quick {
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
            Kind::SimplePadded => {
                run_case::<Vec<StructSimplePadded>>(&o, &worker, &ep, &mut out, case, 0)
            }
            Kind::StructVecPadded => {
                run_case::<Vec<StructVecPadded>>(&o, &worker, &ep, &mut out, case, 0)
            }
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
    if !o.server {
        // whether the objects went through libcdt's lane (CDT_UCX_LANE=on): bench/rust/run
        // --lane reads this line
        worker.progress();
        let st = worker.stats().expect("worker stats");
        println!(
            "# lane: lane_sent {} lane_received {}",
            st.lane_sent, st.lane_received
        );
    }
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
