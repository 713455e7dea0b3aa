//! The serde bridge (feature `serde`): round trips of the whole serde data model, byte buffers
//! and long strings as regions, and every bad input an error (wrong type, truncated and
//! corrupt frames, nesting too deep, types the format cannot carry, failing Serialize impls).
#![cfg(feature = "serde")]

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use cdtypes::serde::{Serde, SerdeRef, MAX_DEPTH, REGION_MIN};
use cdtypes::{from_bytes, Frame, Pack, Unpack};
use proptest::prelude::*;
use serde::{Deserialize, Serialize, Serializer};
use serde_bytes::ByteBuf;

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Unit;

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Meters(f64);

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Pair(u16, i64);

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
enum Shape {
    Empty,
    Circle(f32),
    Rect(u32, u32),
    Named { name: String, sides: Vec<u8> },
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Everything {
    b: bool,
    i8: i8,
    i16: i16,
    i32: i32,
    i64: i64,
    i128: i128,
    u8: u8,
    u16: u16,
    u32: u32,
    u64: u64,
    u128: u128,
    f32: f32,
    f64: f64,
    c: char,
    short: String,
    long: String,
    #[serde(with = "serde_bytes")]
    blob: Vec<u8>,
    small_blob: ByteBuf,
    plain_bytes: Vec<u8>,
    opt: Option<Box<Everything>>,
    none: Option<u8>,
    unit: (),
    unit_struct: Unit,
    newtype: Meters,
    pair: Pair,
    tuple: (u8, String, [i32; 3]),
    shapes: Vec<Shape>,
    map: HashMap<String, Vec<u32>>,
    tree: BTreeMap<i32, ByteBuf>,
}

fn everything(depth: usize) -> Everything {
    Everything {
        b: true,
        i8: -8,
        i16: -16,
        i32: -32,
        i64: i64::MIN,
        i128: i128::MIN + 7,
        u8: 8,
        u16: 16,
        u32: 32,
        u64: u64::MAX,
        u128: u128::MAX - 9,
        f32: 1.5,
        f64: -2.25,
        c: 'ß',
        short: "héllo".into(),
        long: "λ".repeat(REGION_MIN),
        blob: (0..10_000u32).map(|i| i as u8).collect(),
        small_blob: ByteBuf::from(vec![1, 2, 3]),
        plain_bytes: vec![9; 300],
        opt: (depth > 0).then(|| Box::new(everything(depth - 1))),
        none: None,
        unit: (),
        unit_struct: Unit,
        newtype: Meters(3.0),
        pair: Pair(7, -7),
        tuple: (1, "t".into(), [1, -2, 3]),
        shapes: vec![
            Shape::Empty,
            Shape::Circle(0.5),
            Shape::Rect(2, 3),
            Shape::Named {
                name: "tri".into(),
                sides: vec![3, 4, 5],
            },
        ],
        map: [("a".to_string(), vec![1, 2]), ("b".to_string(), vec![])]
            .into_iter()
            .collect(),
        tree: [(1, ByteBuf::from(vec![5; 1000])), (-1, ByteBuf::new())]
            .into_iter()
            .collect(),
    }
}

fn name<T>(r: cdtypes::Result<T>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(e) => e.name(),
    }
}

#[test]
fn everything_round_trips() {
    let v = everything(2);
    let bytes = cdtypes::serde::to_vec(&v).unwrap();
    let back: Everything = cdtypes::serde::from_bytes(&bytes).unwrap();
    assert_eq!(back, v);
    // the same frame through the Pack / Unpack wrappers
    let Serde(back): Serde<Everything> = from_bytes(&bytes).unwrap();
    assert_eq!(back, v);
    let owned = cdtypes::to_vec(&Serde(v.clone())).unwrap();
    assert_eq!(owned, bytes, "Serde and SerdeRef write the same frame");
}

#[test]
fn long_buffers_and_strings_are_regions() {
    // per level: long, blob and one tree entry (1000 bytes); short ones stay in the stream
    let v = everything(1);
    let wrapped = SerdeRef(&v);
    let frame = Frame::encode(&wrapped).unwrap();
    assert_eq!(frame.region_count(), 6);
    let lens: Vec<u64> = (0..frame.region_count())
        .map(|i| frame.region(i).unwrap().len)
        .collect();
    let long = 2 * REGION_MIN as u64;
    assert_eq!(lens, [long, 10_000, long, 10_000, 1000, 1000]);
    // the frame is bigger than the stream by the regions only once: nothing is sent twice
    let stream = frame.head().len() as u64;
    assert!(frame.size() as u64 >= stream + lens.iter().sum::<u64>());
    assert!((frame.size() as u64) < stream + lens.iter().sum::<u64>() + 64 * 6);

    // a buffer just under the threshold stays in the stream, one at it is a region
    let under = ByteBuf::from(vec![1u8; REGION_MIN - 1]);
    assert_eq!(Frame::encode(&SerdeRef(&under)).unwrap().region_count(), 0);
    let at = ByteBuf::from(vec![1u8; REGION_MIN]);
    assert_eq!(Frame::encode(&SerdeRef(&at)).unwrap().region_count(), 1);
    let back: ByteBuf = cdtypes::serde::from_bytes(&cdtypes::serde::to_vec(&at).unwrap()).unwrap();
    assert_eq!(back, at);
}

/// A struct with zero-copy vectors (Pack) and serde metadata side by side.
#[derive(Pack, Unpack, Debug, PartialEq)]
struct Step {
    field: Vec<f64>,
    meta: Serde<Shape>,
}

#[test]
fn serde_field_in_a_derived_struct() {
    let s = Step {
        field: vec![0.5; 1000],
        meta: Serde(Shape::Named {
            name: "n".repeat(REGION_MIN + 1),
            sides: vec![1, 2],
        }),
    };
    let frame = Frame::encode(&s).unwrap();
    assert_eq!(frame.region_count(), 2);
    let back: Step = from_bytes(&frame.to_vec().unwrap()).unwrap();
    assert_eq!(back, s);
}

#[test]
fn sequences_of_unknown_length() {
    // a filter has no exact size hint: the count is written after the elements
    struct Evens(Vec<u32>);
    impl Serialize for Evens {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(self.0.iter().filter(|x| *x % 2 == 0))
        }
    }
    struct Squares(u32);
    impl Serialize for Squares {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map((0..self.0).filter(|x| x % 3 != 0).map(|x| (x, x * x)))
        }
    }
    type Out = (Vec<u32>, BTreeMap<u32, u32>);
    let sent = (Evens((0..10).collect()), Squares(7));
    let mut bytes = cdtypes::to_vec(&SerdeRef(&sent)).unwrap();
    // the fingerprint names the sender's type: receiving as Out is refused ...
    assert_eq!(
        name(cdtypes::serde::from_bytes::<Out>(&bytes)),
        "CDT_ERR_FRAME_MISMATCH"
    );
    // ... and once it names Out, the stream is exactly Out's
    let at = stream_start::<(Evens, Squares)>(&bytes) - 8;
    bytes[at..at + 8].copy_from_slice(&cdtypes::Schema::of_pack::<SerdeRef<Out>>().to_ne_bytes());
    let back: Out = cdtypes::serde::from_bytes(&bytes).unwrap();
    let expect: Out = (
        vec![0, 2, 4, 6, 8],
        [(1, 1), (2, 4), (4, 16), (5, 25)].into_iter().collect(),
    );
    assert_eq!(back, expect);
    assert_eq!(bytes, cdtypes::serde::to_vec(&expect).unwrap());
}

#[test]
fn wrong_type_is_a_mismatch() {
    let bytes = cdtypes::serde::to_vec(&Pair(1, 2)).unwrap();
    assert_eq!(
        name(cdtypes::serde::from_bytes::<(u16, i64)>(&bytes)),
        "CDT_ERR_FRAME_MISMATCH"
    );
    assert_eq!(
        name(cdtypes::serde::from_bytes::<Meters>(&bytes)),
        "CDT_ERR_FRAME_MISMATCH"
    );
    // a Pack value is not a serde value and the reverse
    assert_eq!(
        name(from_bytes::<(u16, i64)>(&bytes)),
        "CDT_ERR_FRAME_MISMATCH"
    );
    let plain = cdtypes::to_vec(&7u32).unwrap();
    assert_eq!(
        name(cdtypes::serde::from_bytes::<u32>(&plain)),
        "CDT_ERR_FRAME_MISMATCH"
    );
    let err = cdtypes::serde::from_bytes::<Meters>(&bytes).unwrap_err();
    assert!(err.detail().unwrap().contains("another type"), "{err}");
    assert_eq!(
        cdtypes::serde::from_bytes::<Pair>(&bytes).unwrap(),
        Pair(1, 2)
    );
}

#[test]
fn truncated_frames_are_errors() {
    let v = everything(1);
    let bytes = cdtypes::serde::to_vec(&v).unwrap();
    for len in 0..bytes.len() {
        let err = cdtypes::serde::from_bytes::<Everything>(&bytes[..len]).unwrap_err();
        assert_eq!(
            err.name(),
            "CDT_ERR_FRAME_TRUNCATED",
            "prefix of {len}: {err}"
        );
    }
    assert_eq!(cdtypes::serde::from_bytes::<Everything>(&bytes).unwrap(), v);
}

/// Offset of the serde stream (after the fingerprint) in a frame of `T`.
fn stream_start<T: Serialize + ?Sized>(frame: &[u8]) -> usize {
    let fp = cdtypes::Schema::of_pack::<SerdeRef<T>>().to_ne_bytes();
    frame.windows(8).position(|w| w == fp).expect("fingerprint") + 8
}

#[test]
fn corrupt_streams_are_errors() {
    type T = (bool, Option<u8>, char, Shape, String);
    let v: T = (true, Some(1), 'x', Shape::Circle(1.0), "ab".into());
    let bytes = cdtypes::serde::to_vec(&v).unwrap();
    let s = stream_start::<T>(&bytes);
    let bad = |at: usize, with: &[u8]| {
        let mut b = bytes.clone();
        b[s + at..s + at + with.len()].copy_from_slice(with);
        cdtypes::serde::from_bytes::<T>(&b).unwrap_err()
    };
    // bool 2, Option tag 7, a surrogate as char, variant 9, a string that is not UTF-8 or
    // longer than the stream
    let cases: [(usize, Vec<u8>, &str); 6] = [
        (0, vec![2], "bool"),
        (1, vec![7], "Option tag"),
        (3, 0xD800u32.to_ne_bytes().to_vec(), "char"),
        (7, 9u32.to_ne_bytes().to_vec(), "variant"),
        (23, vec![0xff], "UTF-8"),
        (15, (1000u64 << 1).to_ne_bytes().to_vec(), "stream ends"),
    ];
    for (at, with, what) in cases {
        let err = bad(at, &with);
        assert_eq!(err.name(), "CDT_ERR_FRAME_MISMATCH", "{what}: {err}");
    }
    // a stream that claims a region where there is none
    let err = bad(15, &((2u64 << 1) | 1).to_ne_bytes());
    assert_eq!(err.name(), "CDT_ERR_FRAME_MISMATCH", "{err}");
}

#[test]
fn every_corrupt_byte_is_handled() {
    // flip each byte of a frame with regions: an error or (where the byte is data) a value,
    // never a panic, an over-read or a runaway allocation
    let v = everything(0);
    let bytes = cdtypes::serde::to_vec(&v).unwrap();
    let mut errors = 0;
    for i in 0..bytes.len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] ^= x;
            if cdtypes::serde::from_bytes::<Everything>(&b).is_err() {
                errors += 1;
            }
        }
    }
    assert!(errors > 0);
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
enum List {
    Nil,
    Cons(u8, Box<List>),
}

fn list(n: usize) -> List {
    (0..n).fold(List::Nil, |l, i| List::Cons(i as u8, Box::new(l)))
}

#[test]
fn nesting_is_bounded() {
    // each level is an enum and a newtype (Box is transparent): about MAX_DEPTH/2 levels pass
    let ok = list(MAX_DEPTH / 2 - 2);
    let bytes = cdtypes::serde::to_vec(&ok).unwrap();
    assert_eq!(cdtypes::serde::from_bytes::<List>(&bytes).unwrap(), ok);
    let deep = list(10 * MAX_DEPTH);
    let bytes = cdtypes::serde::to_vec(&deep).unwrap();
    let err = cdtypes::serde::from_bytes::<List>(&bytes).unwrap_err();
    assert_eq!(err.name(), "CDT_ERR_FRAME_MISMATCH");
    assert!(err.detail().unwrap().contains("nesting"), "{err}");
}

#[test]
fn self_describing_types_are_refused_on_receive() {
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    #[serde(untagged)]
    enum Loose {
        N(u32),
        S(String),
    }
    let bytes = cdtypes::serde::to_vec(&Loose::N(3)).unwrap();
    let err = cdtypes::serde::from_bytes::<Loose>(&bytes).unwrap_err();
    assert_eq!(err.name(), "CDT_ERR_FRAME_MISMATCH");
    assert!(err.detail().unwrap().contains("self-describing"), "{err}");
}

#[test]
fn failing_serialize_fails_the_send() {
    struct Broken;
    impl Serialize for Broken {
        fn serialize<S: Serializer>(&self, _s: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("cannot serialize this"))
        }
    }
    let err = cdtypes::serde::to_vec(&Broken).unwrap_err();
    assert_eq!(err.name(), "CDT_ERR_INVALID_ARG");
    assert!(err.detail().unwrap().contains("cannot serialize this"));
    let err = Frame::encode(&SerdeRef(&(1u8, Broken))).err().unwrap();
    assert_eq!(err.name(), "CDT_ERR_INVALID_ARG");

    // a field skipped on serialize would shift every later field: refused
    #[derive(Serialize)]
    struct Skips {
        #[serde(skip_serializing_if = "Option::is_none")]
        a: Option<u8>,
        b: u8,
    }
    assert!(cdtypes::serde::to_vec(&Skips { a: Some(1), b: 2 }).is_ok());
    let err = cdtypes::serde::to_vec(&Skips { a: None, b: 2 }).unwrap_err();
    assert_eq!(err.name(), "CDT_ERR_INVALID_ARG");
}

#[test]
fn over_ucx_with_threads() {
    use cdtypes::ucx::Worker;
    const LONG: Option<Duration> = Some(Duration::from_secs(120));
    let server = Worker::new().unwrap();
    let listener = server.listen("127.0.0.1", 0).unwrap();
    let port = listener.port().unwrap();
    let client = std::thread::spawn(move || {
        let worker = Worker::new().unwrap();
        let ep = worker.connect("127.0.0.1", port, LONG).unwrap();
        let v = everything(1);
        ep.send(&SerdeRef(&v), 1, LONG).unwrap();
        // a failing Serialize impl: an error, nothing sent; the endpoint stays usable
        struct Broken;
        impl Serialize for Broken {
            fn serialize<S: Serializer>(&self, _s: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("no"))
            }
        }
        assert!(ep.send(&SerdeRef(&Broken), 2, LONG).is_err());
        assert!(ep.isend(Serde(Broken), 2).is_err());
        ep.send(&Serde(Shape::Rect(1, 2)), 3, LONG).unwrap();
        let done: bool = worker.recv(4, LONG).unwrap();
        assert!(done);
    });
    let ep = listener.accept(LONG).unwrap();
    let Serde(got): Serde<Everything> = server.recv(1, LONG).unwrap();
    assert_eq!(got, everything(1));
    let err = server.recv::<Serde<Pair>>(3, LONG).unwrap_err();
    assert_eq!(err.name(), "CDT_ERR_FRAME_MISMATCH", "{err}");
    ep.send(&true, 4, LONG).unwrap();
    client.join().unwrap();
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Record {
    id: u64,
    label: String,
    #[serde(with = "serde_bytes")]
    payload: Vec<u8>,
    values: Vec<f64>,
    tags: BTreeMap<String, i32>,
    kind: Option<Shape>,
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Empty),
        any::<f32>()
            .prop_filter("NaN", |x| !x.is_nan())
            .prop_map(Shape::Circle),
        (any::<u32>(), any::<u32>()).prop_map(|(a, b)| Shape::Rect(a, b)),
        (".{0,300}", prop::collection::vec(any::<u8>(), 0..8))
            .prop_map(|(name, sides)| Shape::Named { name, sides }),
    ]
}

fn record() -> impl Strategy<Value = Record> {
    (
        any::<u64>(),
        ".{0,40}",
        prop::collection::vec(any::<u8>(), 0..2000),
        prop::collection::vec(-1e9f64..1e9, 0..50),
        prop::collection::btree_map(".{0,8}", any::<i32>(), 0..5),
        prop::option::of(shape()),
    )
        .prop_map(|(id, label, payload, values, tags, kind)| Record {
            id,
            label,
            payload,
            values,
            tags,
            kind,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn records_round_trip(rs in prop::collection::vec(record(), 0..4)) {
        let bytes = cdtypes::serde::to_vec(&rs).unwrap();
        let back: Vec<Record> = cdtypes::serde::from_bytes(&bytes).unwrap();
        prop_assert_eq!(back, rs);
    }

    #[test]
    fn truncated_records_are_errors(r in record(), cut in 0.0f64..1.0) {
        let bytes = cdtypes::serde::to_vec(&r).unwrap();
        let len = (bytes.len() as f64 * cut) as usize;
        prop_assert!(cdtypes::serde::from_bytes::<Record>(&bytes[..len]).is_err());
    }
}

/// A sequence of unknown length (its count is written after its elements).
#[derive(Debug, PartialEq, Clone)]
struct Unsized(Vec<u32>);

impl Serialize for Unsized {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut q = s.serialize_seq(None)?;
        for x in &self.0 {
            q.serialize_element(x)?;
        }
        q.end()
    }
}

impl<'de> Deserialize<'de> for Unsized {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<u32>::deserialize(d).map(Unsized)
    }
}

#[derive(Pack, Unpack, Debug, PartialEq, Clone, Copy)]
struct Point {
    x: f64,
    y: f64,
}

#[derive(Pack, Unpack, Debug, PartialEq)]
struct WithSerde {
    points: Vec<Point>, // 16 KB: packed late, by the library
    later: Serde<Unsized>,
    more: Vec<Point>,
}

#[test]
fn a_count_patched_after_late_packed_blocks() {
    let v = WithSerde {
        points: (0..1000)
            .map(|i| Point {
                x: i as f64,
                y: -1.0,
            })
            .collect(),
        later: Serde(Unsized((0..50).collect())),
        more: (0..500)
            .map(|i| Point {
                x: 0.5,
                y: i as f64,
            })
            .collect(),
    };
    let bytes = cdtypes::to_vec(&v).unwrap();
    assert_eq!(from_bytes::<WithSerde>(&bytes).unwrap(), v);
}
