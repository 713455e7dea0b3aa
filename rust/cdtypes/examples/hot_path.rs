//! The send and receive paths of a small and a 1 MiB value, in one process and without
//! timing, for instruction counts under callgrind (docs/TESTING.md): the frame path
//! (`Frame::encode` + `Frame::to_vec` to send, `from_bytes` to receive) runs the same packing
//! and unpacking code as the UCX transport, without the transport's polling, whose
//! instruction count depends on how long the other process takes.
//!
//! ```sh
//! cargo build --release -p cdtypes --example hot_path
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*hot_path*measure_*' \
//!     target/release/examples/hot_path
//! ```
//! Each `measure_*` function runs its path `ITERATIONS` times; `callgrind_annotate` lists
//! their inclusive counts.
use cdtypes::{Frame, Pack, Unpack};

const ITERATIONS: usize = 100;

/// A small message: a few scalars, a short string and a short vector.
#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Small {
    id: u32,
    position: [f64; 3],
    name: String,
    tags: Vec<u32>,
}

/// A fixed-size element: a `Vec` of it is packed late and unpacked on arrival.
#[derive(Pack, Unpack, Debug, PartialEq, Clone, Copy)]
struct Particle {
    position: [f64; 3],
    id: u32,
    species: u32,
}

/// 1 MiB: half a `Vec` of fixed-size structs (in the stream), half a region of `f64`.
#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Big {
    step: u64,
    particles: Vec<Particle>,
    field: Vec<f64>,
}

fn small() -> Small {
    Small {
        id: 7,
        position: [1.0, 2.0, 3.0],
        name: "probe".into(),
        tags: vec![1, 2, 3, 4],
    }
}

fn big() -> Big {
    let half = 512 << 10;
    Big {
        step: 42,
        particles: (0..half / 32)
            .map(|i| Particle {
                position: [i as f64, 0.5, -0.5],
                id: i as u32,
                species: (i % 3) as u32,
            })
            .collect(),
        field: (0..half / 8).map(|i| i as f64 * 0.25).collect(),
    }
}

/// Send path: encode and copy the frame out (the transport's copy of it).
fn send<T: Pack>(value: &T) -> Vec<u8> {
    Frame::encode(value)
        .and_then(|f| f.to_vec())
        .expect("encode")
}

/// `path` run `ITERATIONS` times (the sum of its results keeps the work from being optimized
/// away).
fn repeat(mut path: impl FnMut() -> usize) -> usize {
    (0..ITERATIONS).map(|_| path()).sum()
}

#[inline(never)]
fn measure_send_small(value: &Small) -> usize {
    repeat(|| send(value).len())
}

#[inline(never)]
fn measure_recv_small(frame: &[u8]) -> usize {
    repeat(|| {
        cdtypes::from_bytes::<Small>(frame)
            .expect("decode")
            .tags
            .len()
    })
}

#[inline(never)]
fn measure_send_big(value: &Big) -> usize {
    repeat(|| send(value).len())
}

#[inline(never)]
fn measure_recv_big(frame: &[u8]) -> usize {
    repeat(|| {
        cdtypes::from_bytes::<Big>(frame)
            .expect("decode")
            .field
            .len()
    })
}

fn main() {
    let (s, b) = (small(), big());
    let (fs, fb) = (send(&s), send(&b));
    assert_eq!(cdtypes::from_bytes::<Small>(&fs).expect("decode"), s);
    assert_eq!(cdtypes::from_bytes::<Big>(&fb).expect("decode"), b);
    let total = measure_send_small(&s)
        + measure_recv_small(&fs)
        + measure_send_big(&b)
        + measure_recv_big(&fb);
    println!(
        "small frame {} bytes, big frame {} bytes, {ITERATIONS} iterations each ({total})",
        fs.len(),
        fb.len()
    );
}
