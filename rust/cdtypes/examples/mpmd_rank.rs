//! The Rust rank of the multi-language MPI job (tests/mpi/mpmd/run.sh; the C rank,
//! tests/mpi/mpmd/mpmd_rank.c, says what the job checks): every object of the shared test
//! vectors and the large one (tests/mpi/mpmd/mpmd_objects.h) sent to every other rank as a
//! [`RawObject`] and received from every other rank, compared byte for byte (stream, every
//! region and its kind). Usage: `mpmd_rank VECTOR_DIR` under mpiexec (feature `mpi`).
use std::path::Path;

use cdtypes::mpi::{self as cmpi, RawObject, RecvLimits, SendParams};
use cdtypes::Kind;
use mpi::traits::*;

const NAMES: [&str; 7] = [
    "c_vector_int32",
    "python_buffers",
    "python_empty_region",
    "python_inband",
    "rust_u32_vec_f64",
    "rust_vec_string",
    "large",
];

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

fn kind(raw: u64) -> Kind {
    Kind::from_raw(raw as u32).expect("a region kind")
}

/// The object `name`: a vector's stream and regions (its description, NAME.json), or the
/// large one (mpmd_objects.h).
fn expected(dir: &Path, name: &str) -> RawObject {
    if name == "large" {
        return RawObject {
            stream: (0..16).collect(),
            regions: vec![
                (
                    Kind::Uint8,
                    (0..1usize << 20).map(|i| (31 * i + 7) as u8).collect(),
                ),
                (Kind::Byte, (0..10).collect()),
                (
                    Kind::Double,
                    (0..80_000usize).map(|i| (13 * i + 1) as u8).collect(),
                ),
            ],
        };
    }
    let text = std::fs::read_to_string(dir.join(format!("{name}.json"))).expect("vector");
    let d: serde_json::Value = serde_json::from_str(&text).expect("json");
    RawObject {
        stream: hex(d["stream_hex"].as_str().unwrap()),
        regions: d["regions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    kind(r["kind"].as_u64().unwrap()),
                    hex(r["hex"].as_str().unwrap()),
                )
            })
            .collect(),
    }
}

fn main() {
    let universe = mpi::initialize().expect("MPI_Init");
    let world = universe.world();
    // where the Python ranks import cdtypes.mpi: before any other communicator is made
    cmpi::attach(&world).expect("attach");
    let (me, size) = (world.rank(), world.size());
    let dir = std::env::args()
        .nth(1)
        .expect("usage: mpmd_rank VECTOR_DIR");
    let limits = RecvLimits {
        max_frame_bytes: Some(16 << 20),
        max_regions: Some(64),
        parts_timeout: None,
    };
    let mut received = 0;
    for (tag, name) in NAMES.iter().enumerate() {
        let want = expected(Path::new(&dir), name);
        for from in 0..size {
            if from == me {
                for to in (0..size).filter(|&r| r != me) {
                    cmpi::send_raw(&world, &want, to, tag as i32, &SendParams::default())
                        .unwrap_or_else(|e| panic!("send {name} to {to}: {e}"));
                }
                continue;
            }
            let (got, st) = cmpi::recv_raw(&world, Some(from), Some(tag as i32), &limits)
                .unwrap_or_else(|e| panic!("rank {me}: receive {name} from {from}: {e}"));
            assert_eq!(st.source, from);
            if got != want {
                eprintln!("mpmd Rust rank {me}: object {name} from rank {from} differs");
                world.abort(1);
            }
            received += 1;
        }
    }
    world.barrier();
    println!("mpmd rank {me} (Rust): {received} objects received, byte for byte ok");
}
