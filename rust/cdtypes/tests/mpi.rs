//! cdtypes::mpi under mpiexec at 2 and 3 ranks (the test binary runs itself as every rank):
//! every rank sends every other rank a derived struct with regions, a serde value, a derived
//! layout and a raw serialized object, received with any source; then the receiver's errors
//! as `Result`s (a limit, the wrong type), each followed by an object that must arrive.
use std::process::Command;

use cdtypes::mpi::{self as cmpi, RawObject, RecvLimits, SendParams};
use cdtypes::{Kind, Pack, TypeBuilder, Unpack};
use mpi::traits::*;
use serde::{Deserialize, Serialize};

#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Step {
    id: u32,
    field: Vec<f64>,     // 200 KB: the parts message
    names: Vec<String>,  // small regions: in the head
    rows: Vec<Vec<u16>>, // several regions
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Note {
    text: String,
    #[serde(with = "serde_bytes")]
    blob: Vec<u8>,
}

fn step(from: i32, to: i32) -> Step {
    let k = (from * 10 + to) as f64;
    Step {
        id: (from * 10 + to) as u32,
        field: (0..25_000).map(|i| i as f64 * 0.5 + k).collect(),
        names: vec![format!("from {from}"), String::new(), "ü".into()],
        rows: (0..4)
            .map(|r| (0..r * 40_000).map(|i| (i + r) as u16).collect())
            .collect(),
    }
}

fn note(from: i32, to: i32) -> Note {
    Note {
        text: format!("{from} -> {to}"),
        blob: (0..100_000)
            .map(|i| (i * 7 + from as usize) as u8)
            .collect(),
    }
}

fn raw(from: i32, to: i32) -> RawObject {
    RawObject {
        stream: vec![from as u8, to as u8, 1, 2, 3],
        regions: vec![
            (Kind::Double, vec![7; 80_000]),
            (Kind::Byte, vec![]),
            (Kind::Int32, vec![from as u8; 12]),
            (Kind::Byte, vec![to as u8; 70_000]),
        ],
    }
}

fn launcher() -> Command {
    match env!("CDTYPES_MPI_FLAVOR") {
        "mpich" => Command::new("mpiexec.mpich"),
        _ => {
            let mut c = Command::new("mpiexec.openmpi");
            c.args(["--allow-run-as-root", "--oversubscribe"]);
            c
        }
    }
}

fn run_ranks(n: u32) {
    let out = launcher()
        .args(["-n", &n.to_string()])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "rank_main",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .expect("mpiexec");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mpiexec -n {n} failed:\n{text}");
    assert_eq!(text.matches("rank ok").count(), n as usize, "{text}");
}

#[test]
fn two_ranks() {
    run_ranks(2);
}

#[test]
fn three_ranks() {
    run_ranks(3);
}

/// One rank of the job (run by run_ranks under mpiexec).
#[test]
#[ignore]
fn rank_main() {
    let universe = mpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (me, size) = (world.rank(), world.size());
    cmpi::attach(&world).unwrap();
    assert!(cmpi::is_attached(&world).unwrap());
    let trusted = RecvLimits::default();
    let vector = TypeBuilder::vector(1000, 3, 7, &Kind::Double.datatype())
        .unwrap()
        .commit()
        .unwrap();
    let layout: Vec<u8> = (0..7000 * 8).map(|i| (i % 251) as u8).collect();

    for round in 0..4 {
        // every rank sends in turn, the others receive from any source
        for from in 0..size {
            if me == from {
                for to in (0..size).filter(|&r| r != me) {
                    match round {
                        0 => cmpi::send(&world, &step(me, to), to, round).unwrap(),
                        1 => cmpi::send_serde(&world, &note(me, to), to, round).unwrap(),
                        2 => cmpi::send_typed(
                            &world,
                            &layout,
                            1,
                            &vector,
                            to,
                            round,
                            &SendParams::default(),
                        )
                        .unwrap(),
                        _ => {
                            cmpi::send_raw(&world, &raw(me, to), to, round, &SendParams::default())
                                .unwrap()
                        }
                    }
                }
            } else {
                let tag = Some(round);
                match round {
                    0 => {
                        let (v, st): (Step, _) = cmpi::recv(&world, None, tag, &trusted).unwrap();
                        assert_eq!((st.source, st.tag), (from, round));
                        assert_eq!(v, step(from, me));
                    }
                    1 => {
                        let (v, st): (Note, _) =
                            cmpi::recv_serde(&world, None, tag, &trusted).unwrap();
                        assert_eq!(st.source, from);
                        assert_eq!(v, note(from, me));
                    }
                    2 => {
                        let mut out = vec![0u8; layout.len()];
                        cmpi::recv_typed(&world, &mut out, 1, &vector, None, tag, &trusted)
                            .unwrap();
                        for (i, (a, b)) in out.iter().zip(&layout).enumerate() {
                            let in_block = (i / 8) % 7 < 3;
                            assert_eq!(*a, if in_block { *b } else { 0 }, "byte {i}");
                        }
                    }
                    _ => {
                        let (v, st) = cmpi::recv_raw(&world, None, tag, &trusted).unwrap();
                        assert_eq!(st.source, from);
                        assert_eq!(v, raw(from, me));
                    }
                }
            }
        }
        world.barrier();
    }

    // errors are Results, and the object after each one arrives
    if me == 0 {
        for _ in 0..2 {
            cmpi::send(&world, &step(0, 1), 1, 50).unwrap();
        }
        cmpi::send(&world, &7u64, 1, 50).unwrap();
    } else if me == 1 {
        let small = RecvLimits {
            max_frame_bytes: Some(1000),
            ..Default::default()
        };
        let e = cmpi::recv::<Step, _>(&world, Some(0), Some(50), &small).unwrap_err();
        assert_eq!(e.code(), cdtypes::sys::CDT_ERR_LIMIT, "{e}");
        let e = cmpi::recv_serde::<Note, _>(&world, Some(0), Some(50), &trusted).unwrap_err();
        assert_eq!(e.code(), cdtypes::sys::CDT_ERR_FRAME_MISMATCH, "{e}");
        let (v, _): (u64, _) = cmpi::recv(&world, Some(0), Some(50), &trusted).unwrap();
        assert_eq!(v, 7);
    }
    world.barrier();
    println!("rank ok");
}
