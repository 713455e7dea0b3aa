//! `#[cdtypes(padded)]`: a `Vec` of a `#[repr(C)]` struct travels as its memory, padding
//! included, as one region; a receiver that lays it out otherwise, or a frame whose length
//! and region disagree, is refused.
use cdtypes::{Frame, Pack, Unpack};

/// struct_simple of the seed: 20 bytes of fields in 24 of memory.
#[repr(C)]
#[derive(Pack, Unpack, Clone, Copy, PartialEq, Debug)]
#[cdtypes(padded)]
struct Rec {
    a: i32,
    b: i32,
    c: i32,
    d: f64,
}

/// A padded struct inside a padded struct, and arrays of both.
#[repr(C)]
#[derive(Pack, Unpack, Clone, Copy, PartialEq, Debug)]
#[cdtypes(padded)]
struct Outer {
    tag: u8,
    rec: Rec,
    small: [u16; 3],
    recs: [Rec; 2],
}

#[repr(C)]
#[derive(Pack, Unpack, Clone, Copy, PartialEq, Debug)]
#[cdtypes(padded)]
struct Pair(u8, u64);

/// A value that holds padded Vecs and a padded struct on its own (the stream's fixed form).
#[derive(Pack, Unpack, PartialEq, Debug)]
struct Holder {
    name: String,
    one: Rec,
    recs: Vec<Rec>,
    outers: Vec<Outer>,
    pairs: Vec<[Pair; 2]>,
}

fn rec(i: usize) -> Rec {
    Rec {
        a: i as i32,
        b: -(i as i32),
        c: (i * 3) as i32,
        d: i as f64 / 4.0,
    }
}

fn recs(n: usize) -> Vec<Rec> {
    (0..n).map(rec).collect()
}

fn outer(i: usize) -> Outer {
    Outer {
        tag: i as u8,
        rec: rec(i),
        small: [i as u16, 1, 2],
        recs: [rec(i + 1), rec(i + 2)],
    }
}

#[test]
fn a_vec_travels_as_its_memory() {
    let v = recs(10_000);
    let frame = Frame::encode(&v).unwrap();
    assert_eq!(frame.region_count(), 1);
    let r = frame.region(0).unwrap();
    assert_eq!(r.len, 10_000 * std::mem::size_of::<Rec>() as u64);
    let bytes = frame.to_vec().unwrap();
    // the stream: the fingerprint and the length
    let decoder = cdtypes::Decoder::new(&bytes, &Default::default()).unwrap();
    assert_eq!(decoder.info().unwrap().packed_size, 16);
    let back: Vec<Rec> = cdtypes::from_bytes(&bytes).unwrap();
    assert_eq!(back, v);
    let empty: Vec<Rec> =
        cdtypes::from_bytes(&cdtypes::to_vec(&Vec::<Rec>::new()).unwrap()).unwrap();
    assert!(empty.is_empty());
}

#[test]
fn nested_tuple_and_array_forms() {
    let h = Holder {
        name: "h".into(),
        one: rec(7),
        recs: recs(100),
        outers: (0..50).map(outer).collect(),
        pairs: (0..20)
            .map(|i| [Pair(i as u8, i as u64 * 1000), Pair(0, u64::MAX)])
            .collect(),
    };
    let frame = Frame::encode(&h).unwrap();
    // the name, and one region per padded Vec
    assert_eq!(frame.region_count(), 4);
    let back: Holder = cdtypes::from_bytes(&frame.to_vec().unwrap()).unwrap();
    assert_eq!(back, h);
}

mod unpadded {
    use cdtypes::{Pack, Unpack};
    /// `Rec` with the same name and fields, but not padded: its Vec travels in the stream.
    #[repr(C)]
    #[derive(Pack, Unpack, Clone, Copy, PartialEq, Debug)]
    pub struct Rec {
        pub a: i32,
        pub b: i32,
        pub c: i32,
        pub d: f64,
    }
}

#[test]
fn a_receiver_of_another_form_is_refused() {
    let frame = cdtypes::to_vec(&recs(10)).unwrap();
    let err = cdtypes::from_bytes::<Vec<unpadded::Rec>>(&frame).unwrap_err();
    assert_eq!(err.name(), "CDT_ERR_FRAME_MISMATCH", "{err}");
    let other: Vec<unpadded::Rec> = (0..10)
        .map(|i| unpadded::Rec {
            a: i,
            b: 0,
            c: 0,
            d: 0.0,
        })
        .collect();
    let frame = cdtypes::to_vec(&other).unwrap();
    let err = cdtypes::from_bytes::<Vec<Rec>>(&frame).unwrap_err();
    assert_eq!(err.name(), "CDT_ERR_FRAME_MISMATCH", "{err}");
}

/// The frame's stream says 1,000 elements; each corrupt length is refused before the region
/// becomes the Vec.
#[test]
fn a_length_that_disagrees_with_the_region_is_refused() {
    let frame = cdtypes::to_vec(&recs(1000)).unwrap();
    let at = frame
        .windows(8)
        .position(|w| w == 1000u64.to_ne_bytes())
        .expect("the length in the stream");
    for bad in [999u64, 1001, u64::MAX / 2, u64::MAX] {
        let mut f = frame.clone();
        f[at..at + 8].copy_from_slice(&bad.to_ne_bytes());
        let err = cdtypes::from_bytes::<Vec<Rec>>(&f).unwrap_err();
        assert_eq!(err.name(), "CDT_ERR_FRAME_MISMATCH", "{bad}: {err}");
    }
}

/// The fingerprint covers the layout, so that two platforms that lay the struct out otherwise
/// do not read each other's memory as theirs.
#[test]
fn the_fingerprint_covers_the_layout() {
    assert_ne!(
        cdtypes::Schema::of_pack::<Rec>(),
        cdtypes::Schema::of_pack::<unpadded::Rec>()
    );
    assert_eq!(
        cdtypes::Schema::of_pack::<Rec>(),
        cdtypes::Schema::of_unpack::<Rec>()
    );
}

/// `recycle` of a Vec whose elements need no drop: its memory is the next region of its
/// size and alignment (here the same Vec again), for padded structs and plain data alike.
#[test]
fn a_recycled_vec_is_the_next_region() {
    let frame = cdtypes::to_vec(&recs(10_000)).unwrap();
    let first: Vec<Rec> = cdtypes::from_bytes(&frame).unwrap();
    let at = first.as_ptr();
    cdtypes::recycle(first);
    let again: Vec<Rec> = cdtypes::from_bytes(&frame).unwrap();
    assert_eq!(again.as_ptr(), at);
    assert_eq!(again, recs(10_000));

    let doubles: Vec<f64> = (0..100_000).map(|i| i as f64).collect();
    let frame = cdtypes::to_vec(&doubles).unwrap();
    let first: Vec<f64> = cdtypes::from_bytes(&frame).unwrap();
    let at = first.as_ptr();
    cdtypes::recycle(first);
    // another size is not taken: fresh memory
    let other: Vec<f64> =
        cdtypes::from_bytes(&cdtypes::to_vec(&vec![0.0f64; 99_999]).unwrap()).unwrap();
    assert_ne!(other.as_ptr(), at);
    let again: Vec<f64> = cdtypes::from_bytes(&frame).unwrap();
    assert_eq!(again.as_ptr(), at);
    assert_eq!(again, doubles);
}
