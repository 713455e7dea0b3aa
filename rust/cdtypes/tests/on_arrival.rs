//! The stream pulled by the library fragment by fragment (a `Vec` of fixed-size elements is
//! packed late, at any offset) and received fragment by fragment (a `Vec` of derived
//! fixed-size structs is unpacked into the receiving `Vec` as its bytes arrive): the same bytes
//! as the frame, round trips with the stream cut anywhere and pieces in any order, and corrupt,
//! truncated or wrong-type frames as errors.
use cdtypes::{from_bytes, Frame, Pack, Unpack};
use proptest::prelude::*;

#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Rec {
    a: i32,
    flag: bool,
    d: f64,
    data: [i32; 300],
    c: char,
}

/// The same fields as Rec under another name (another fingerprint).
#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Other {
    a: i32,
    flag: bool,
    d: f64,
    data: [i32; 300],
    c: char,
}

#[derive(Pack, Unpack, Debug, PartialEq, Clone, Copy)]
struct Small {
    x: u16,
    y: (u8, i64),
}

/// Padding in memory (u8 then u64), none in the stream; a tuple struct with a nested struct.
#[repr(C)]
#[derive(Pack, Unpack, Debug, Clone, Copy, PartialEq)]
struct Packed(u8, u64, Small);

#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Outer {
    id: u32,
    recs: Vec<Rec>,
    names: Vec<String>,
    small: Vec<Small>,
    packed: Vec<Packed>,
    pairs: Vec<(u16, i64)>,
    tail: f64,
}

/// A generic struct: no unpacking on arrival (the plan ends), the same values.
#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Gen<T> {
    v: T,
    w: u8,
}

fn rec(i: usize) -> Rec {
    let mut data = [0i32; 300];
    for (j, x) in data.iter_mut().enumerate() {
        *x = (i * 1000 + j) as i32;
    }
    Rec {
        a: i as i32,
        flag: i % 2 == 0,
        d: i as f64 * 0.25,
        data,
        c: char::from_u32(0x3b1 + (i % 20) as u32).unwrap(),
    }
}

fn small(i: usize) -> Small {
    Small {
        x: i as u16,
        y: (i as u8, -(i as i64)),
    }
}

fn outer(n: usize) -> Outer {
    Outer {
        id: 7,
        recs: (0..n).map(rec).collect(),
        names: vec!["α".into(), String::new(), "name".into()],
        small: (0..3 * n).map(small).collect(),
        packed: (0..n)
            .map(|i| Packed(i as u8, i as u64 * 3, small(i)))
            .collect(),
        pairs: (0..2 * n).map(|i| (i as u16, i as i64)).collect(),
        tail: -1.5,
    }
}

/// The packed stream of a frame (after its header).
fn stream_of(bytes: &[u8]) -> Vec<u8> {
    let d = cdtypes::Decoder::new(bytes, &Default::default()).unwrap();
    let info = d.info().unwrap();
    bytes[info.header_size as usize..(info.header_size + info.packed_size) as usize].to_vec()
}

/// Pieces of `len` bytes cut at `cuts` (sorted, deduplicated, inside), in the order `order`
/// gives (a permutation seed).
fn pieces(len: usize, cuts: &[usize], rotate: usize, reverse: bool) -> Vec<(usize, usize)> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % len.max(1)).collect();
    at.push(0);
    at.push(len);
    at.sort_unstable();
    at.dedup();
    let mut p: Vec<(usize, usize)> = at.windows(2).map(|w| (w[0], w[1] - w[0])).collect();
    if reverse {
        p.reverse();
    }
    let k = rotate % p.len().max(1);
    p.rotate_left(k);
    p
}

fn name<T>(r: cdtypes::Result<T>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(e) => e.name(),
    }
}

#[test]
fn the_stream_pulled_in_fragments_is_the_frames_stream() {
    let v = outer(40);
    let bytes = cdtypes::to_vec(&v).unwrap();
    let stream = stream_of(&bytes);
    // the whole stream at once, then fragments of every size from 1 to 2 elements
    let mut out = vec![0u8; stream.len() + 10];
    let (n, len) = cdtypes::__pack_stream_at(&v, 0, &mut out).unwrap();
    assert_eq!((n, len), (stream.len(), stream.len()));
    assert_eq!(&out[..n], &stream[..]);
    for step in [1usize, 7, 1199, 1200, 1201, 2403, 4096] {
        let mut got = Vec::with_capacity(stream.len());
        let mut buf = vec![0u8; step];
        while got.len() < stream.len() {
            let (n, _) = cdtypes::__pack_stream_at(&v, got.len(), &mut buf).unwrap();
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, stream, "fragments of {step} bytes");
    }
    // past the end: nothing
    let (n, _) = cdtypes::__pack_stream_at(&v, stream.len(), &mut out).unwrap();
    assert_eq!(n, 0);
}

#[test]
fn vectors_of_fixed_size_structs_round_trip_in_pieces() {
    for n in [0usize, 1, 2, 13, 200] {
        let v = outer(n);
        let bytes = cdtypes::to_vec(&v).unwrap();
        assert_eq!(from_bytes::<Outer>(&bytes).unwrap(), v);
        let len = bytes.len();
        for cuts in [
            vec![],
            vec![90, 1000, 1001, 5000],
            (1..len).step_by(997).collect(),
        ] {
            for reverse in [false, true] {
                let p = pieces(len, &cuts, 1, reverse);
                let before = cdtypes::__sequences_unpacked_on_arrival();
                let back: Outer = cdtypes::__from_pieces(&bytes, &p).unwrap();
                assert_eq!(back, v, "n {n}, cuts {cuts:?}, reverse {reverse}");
                // recs, small and packed (pairs, tuples, are read from the kept bytes), once
                // the stream is long enough to plan (4 KiB)
                let on_arrival = cdtypes::__sequences_unpacked_on_arrival() - before;
                assert_eq!(on_arrival, if n >= 13 { 3 } else { 0 }, "n {n}");
            }
        }
        let recs: Vec<Rec> = v.recs.clone();
        let bytes = cdtypes::to_vec(&recs).unwrap();
        let p = pieces(bytes.len(), &[100, 3000, 3001, 7777], 0, false);
        assert_eq!(
            cdtypes::__from_pieces::<Vec<Rec>>(&bytes, &p).unwrap(),
            recs
        );
        let g: Vec<Gen<Small>> = (0..n)
            .map(|i| Gen {
                v: small(i),
                w: i as u8,
            })
            .collect();
        let bytes = cdtypes::to_vec(&g).unwrap();
        assert_eq!(from_bytes::<Vec<Gen<Small>>>(&bytes).unwrap(), g);
    }
}

/// The offset of the first element of the stream's first sequence (fingerprint, length).
fn first_element(bytes: &[u8]) -> usize {
    let d = cdtypes::Decoder::new(bytes, &Default::default()).unwrap();
    d.info().unwrap().header_size as usize + 16
}

#[test]
fn corrupt_elements_and_lengths_are_errors() {
    let recs: Vec<Rec> = (0..30).map(rec).collect();
    let bytes = cdtypes::to_vec(&recs).unwrap();
    let first = first_element(&bytes);
    let size = 4 + 1 + 8 + 4 * 300 + 4;
    let whole = [(0usize, bytes.len())];
    let cut = pieces(bytes.len(), &[first + 3, first + size + 2], 0, false);
    for p in [&whole[..], &cut[..]] {
        // a bool that is 2, in the 11th element
        let mut b = bytes.clone();
        b[first + 10 * size + 4] = 2;
        assert_eq!(
            name(cdtypes::__from_pieces::<Vec<Rec>>(&b, p)),
            "CDT_ERR_FRAME_MISMATCH"
        );
        // a char that is no Unicode scalar value, in the last element
        let mut b = bytes.clone();
        let c = first + 29 * size + size - 4;
        b[c..c + 4].copy_from_slice(&0xd800u32.to_ne_bytes());
        assert_eq!(
            name(cdtypes::__from_pieces::<Vec<Rec>>(&b, p)),
            "CDT_ERR_FRAME_MISMATCH"
        );
        // lengths: far too many, one more, one less, none
        for n in [u64::MAX, 1 << 40, 31, 29, 0] {
            let mut b = bytes.clone();
            b[first - 8..first].copy_from_slice(&n.to_ne_bytes());
            assert_eq!(
                name(cdtypes::__from_pieces::<Vec<Rec>>(&b, p)),
                "CDT_ERR_FRAME_MISMATCH",
                "length {n}"
            );
        }
        // another type with the same layout, and other element types
        assert_eq!(
            name(cdtypes::__from_pieces::<Vec<Other>>(&bytes, p)),
            "CDT_ERR_FRAME_MISMATCH"
        );
        assert_eq!(
            name(cdtypes::__from_pieces::<Vec<Small>>(&bytes, p)),
            "CDT_ERR_FRAME_MISMATCH"
        );
        assert_eq!(
            name(cdtypes::__from_pieces::<Outer>(&bytes, p)),
            "CDT_ERR_FRAME_MISMATCH"
        );
    }
    // truncated frames: an error at every cut
    for keep in [0, 10, first, first + 5, first + size, bytes.len() - 1] {
        assert_ne!(name(from_bytes::<Vec<Rec>>(&bytes[..keep])), "ok");
    }
    // a frame of the same shape as another type's (the plan of Outer against Vec<Rec>'s stream)
    let o = cdtypes::to_vec(&outer(5)).unwrap();
    assert_eq!(name(from_bytes::<Vec<Rec>>(&o)), "CDT_ERR_FRAME_MISMATCH");
    assert_eq!(from_bytes::<Outer>(&o).unwrap(), outer(5));
}

#[test]
fn a_frame_is_the_same_bytes_as_the_in_line_stream() {
    // below the size at which a Vec is packed late, and above it: the same layout (length,
    // elements), so one decodes as the other would
    for n in [1usize, 60, 61, 5000] {
        let v: Vec<Small> = (0..n).map(small).collect();
        let stream = stream_of(&cdtypes::to_vec(&v).unwrap());
        let mut expect = stream[..8].to_vec(); // the fingerprint
        expect.extend_from_slice(&(n as u64).to_ne_bytes());
        for s in &v {
            expect.extend_from_slice(&s.x.to_ne_bytes());
            expect.extend_from_slice(&s.y.0.to_ne_bytes());
            expect.extend_from_slice(&s.y.1.to_ne_bytes());
        }
        assert_eq!(stream, expect, "{n} elements");
    }
    let o = outer(3);
    let f = Frame::encode(&o).unwrap();
    assert_eq!(f.region_count(), 3);
}

fn arb_small() -> impl Strategy<Value = Small> {
    (any::<u16>(), any::<u8>(), any::<i64>()).prop_map(|(x, a, b)| Small { x, y: (a, b) })
}

fn arb_rec() -> impl Strategy<Value = Rec> {
    (
        any::<i32>(),
        any::<bool>(),
        any::<f64>(),
        any::<char>(),
        any::<i32>(),
    )
        .prop_map(|(a, flag, d, c, k)| {
            let mut r = rec(0);
            r.a = a;
            r.flag = flag;
            r.d = if d.is_nan() { 0.0 } else { d };
            r.c = c;
            r.data[k.unsigned_abs() as usize % 300] = k;
            r
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn prop_pieces_any_cut_any_order(
        recs in prop::collection::vec(arb_rec(), 0..12),
        small in prop::collection::vec(arb_small(), 0..400),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        rotate in any::<usize>(),
        reverse in any::<bool>(),
    ) {
        let mut v = outer(0);
        v.recs = recs;
        v.small = small;
        let bytes = cdtypes::to_vec(&v).unwrap();
        let p = pieces(bytes.len(), &cuts, rotate, reverse);
        let back: Outer = cdtypes::__from_pieces(&bytes, &p).unwrap();
        prop_assert_eq!(back, v);
    }

    #[test]
    fn prop_fragments_at_random_offsets(
        small in prop::collection::vec(arb_small(), 0..600),
        offsets in prop::collection::vec((any::<usize>(), 1usize..3000), 1..20),
    ) {
        let bytes = cdtypes::to_vec(&small).unwrap();
        let stream = stream_of(&bytes);
        for (at, len) in offsets {
            let at = at % (stream.len() + 1);
            let mut out = vec![0u8; len];
            let (n, total) = cdtypes::__pack_stream_at(&small, at, &mut out).unwrap();
            prop_assert_eq!(total, stream.len());
            prop_assert_eq!(n, len.min(stream.len() - at));
            prop_assert_eq!(&out[..n], &stream[at..at + n]);
        }
    }
}

#[test]
fn large_received_vectors_round_trip() {
    // over 4 MiB each: memory marked for huge pages, the on-arrival Vec and a region
    let v: (Vec<Small>, Vec<u64>) = ((0..400_000).map(small).collect(), (0..700_000).collect());
    let bytes = cdtypes::to_vec(&v).unwrap();
    let p = pieces(bytes.len(), &[8192, 1 << 20, 3 << 20], 0, false);
    let back: (Vec<Small>, Vec<u64>) = cdtypes::__from_pieces(&bytes, &p).unwrap();
    assert!(back == v);
}

#[test]
fn recycled_vectors_are_received_into() {
    let recs: Vec<Rec> = (0..100).map(rec).collect();
    let bytes = cdtypes::to_vec(&recs).unwrap();
    // a Vec of the right size: its memory takes the next receive, old contents overwritten
    let old: Vec<Rec> = (0..150).map(|i| rec(i + 7)).collect();
    let at = old.as_ptr();
    cdtypes::recycle(old);
    let got: Vec<Rec> = from_bytes(&bytes).unwrap();
    assert_eq!(got.as_ptr(), at);
    assert_eq!(got, recs);
    // too small (fewer than n) or too large (more than 2n): fresh memory, the same values
    for cap in [99usize, 201] {
        let v: Vec<Rec> = Vec::with_capacity(cap);
        let at = v.as_ptr();
        cdtypes::recycle(v);
        let got: Vec<Rec> = from_bytes(&bytes).unwrap();
        assert_ne!(got.as_ptr(), at, "capacity {cap}");
        assert_eq!(got, recs);
    }
    // a receive that fails after taking the memory: an error, and nothing else
    let v: Vec<Rec> = Vec::with_capacity(100);
    cdtypes::recycle(v);
    let mut b = bytes.clone();
    let first = first_element(&b);
    b[first + 50 * (4 + 1 + 8 + 1200 + 4) + 4] = 9; // a bool that is 9
    assert_eq!(name(from_bytes::<Vec<Rec>>(&b)), "CDT_ERR_FRAME_MISMATCH");
    assert_eq!(from_bytes::<Vec<Rec>>(&bytes).unwrap(), recs);
    // plain data and small Vecs are not kept (nothing to observe but that nothing breaks)
    cdtypes::recycle(vec![0u32; 100_000]);
    cdtypes::recycle(vec![small(1); 3]);
    assert_eq!(from_bytes::<Vec<Rec>>(&bytes).unwrap(), recs);
}

/// Fields the plan cannot follow (an Option, a map) end it: what comes after them, planned
/// sequences included, is read from the kept bytes.
#[derive(Pack, Unpack, Debug, PartialEq)]
struct AfterUnplanned {
    first: Vec<Rec>,
    maybe: Option<u64>,
    second: Vec<Rec>,
    map: std::collections::BTreeMap<u32, Small>,
    third: Vec<Small>,
}

#[test]
fn the_plan_ends_at_what_it_cannot_follow() {
    for maybe in [None, Some(7)] {
        let v = AfterUnplanned {
            first: (0..20).map(rec).collect(),
            maybe,
            second: (0..30).map(|i| rec(i + 1)).collect(),
            map: (0..10).map(|i| (i, small(i as usize))).collect(),
            third: (0..500).map(small).collect(),
        };
        let bytes = cdtypes::to_vec(&v).unwrap();
        let before = cdtypes::__sequences_unpacked_on_arrival();
        let p = pieces(bytes.len(), &[5000, 5001, 30_000], 0, false);
        let back: AfterUnplanned = cdtypes::__from_pieces(&bytes, &p).unwrap();
        assert_eq!(back, v);
        assert_eq!(cdtypes::__sequences_unpacked_on_arrival() - before, 1);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn prop_planned_and_unplanned_fields(
        first in prop::collection::vec(arb_rec(), 0..8),
        maybe in prop::option::of(any::<u64>()),
        second in prop::collection::vec(arb_rec(), 0..8),
        map in prop::collection::btree_map(any::<u32>(), arb_small(), 0..5),
        third in prop::collection::vec(arb_small(), 0..700),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
        reverse in any::<bool>(),
    ) {
        let v = AfterUnplanned { first, maybe, second, map, third };
        let bytes = cdtypes::to_vec(&v).unwrap();
        let p = pieces(bytes.len(), &cuts, 0, reverse);
        let back: AfterUnplanned = cdtypes::__from_pieces(&bytes, &p).unwrap();
        prop_assert_eq!(back, v);
    }
}

/// Which element types are unpacked straight out of memory a peer may write (a local lane's
/// segment): those whose every byte pattern is a value; a bool, a char or anything holding one
/// is checked, so its bytes are copied first.
#[test]
#[allow(clippy::assertions_on_constants)] // the constants are what is checked
fn any_bytes_says_which_elements_check_their_bytes() {
    assert!(<i32 as Unpack>::ANY_BYTES && <f64 as Unpack>::ANY_BYTES);
    assert!(<u128 as Unpack>::ANY_BYTES && <() as Unpack>::ANY_BYTES);
    assert!(<[i32; 4] as Unpack>::ANY_BYTES && <(u8, f32) as Unpack>::ANY_BYTES);
    assert!(!<bool as Unpack>::ANY_BYTES && !<char as Unpack>::ANY_BYTES);
    assert!(!<[bool; 2] as Unpack>::ANY_BYTES && !<(i32, bool) as Unpack>::ANY_BYTES);
    assert!(
        !<Rec as Unpack>::ANY_BYTES,
        "a derived struct with a bool and a char"
    );
    assert!(
        <Small as Unpack>::ANY_BYTES,
        "a derived struct of integers and a tuple"
    );
    assert!(!<String as Unpack>::ANY_BYTES && !<Vec<i32> as Unpack>::ANY_BYTES);
}
