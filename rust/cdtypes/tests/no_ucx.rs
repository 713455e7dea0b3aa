//! A program that only frames values links no UCX: libcdt's transport is its own library
//! (`libcdtypes-ucx.a`), and the linker takes it, and UCX, only into programs that call the
//! transport. So a Rust program that sends with MPI, whose MPI library may use a UCX of its
//! own, never gets a second copy. This test binary frames a derived struct and then finds no
//! UCX library among the files mapped into the process.
use cdtypes::{from_bytes, Pack, Unpack};

#[derive(Pack, Unpack, Debug, PartialEq)]
struct Sample {
    id: u32,
    values: Vec<f64>,
    name: String,
}

#[test]
fn framing_maps_no_ucx_library() {
    let value = Sample {
        id: 28,
        values: (0..10_000).map(f64::from).collect(),
        name: "core only".into(),
    };
    let bytes = cdtypes::to_vec(&value).expect("encode");
    let back: Sample = from_bytes(&bytes).expect("decode");
    assert_eq!(back, value);

    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return; // not Linux: nothing to read
    };
    let ucx: Vec<&str> = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .filter(|path| {
            let base = path.rsplit('/').next().unwrap_or("");
            ["libucp", "libuct", "libucs", "libucm"]
                .iter()
                .any(|name| base.starts_with(name))
        })
        .collect();
    assert!(
        ucx.is_empty(),
        "UCX mapped into a program that only frames: {ucx:?}"
    );
}
