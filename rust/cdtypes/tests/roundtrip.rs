//! Round trips of every impl and of derived structs and enums, through frames as bytes.
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt::Debug;

use cdtypes::{from_bytes, Frame, Kind, Pack, Unpack};
use proptest::prelude::*;

fn round<T: Pack + Unpack + PartialEq + Debug>(value: &T) -> T {
    let bytes = cdtypes::to_vec(value).expect("encode");
    let back: T = from_bytes(&bytes).expect("decode");
    assert_eq!(&back, value);
    back
}

#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Particle {
    id: u64,
    pos: [f64; 3],
    alive: bool,
}

#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Step {
    step: u32,
    name: String,
    field: Vec<f64>,
    rows: Vec<Vec<i32>>,
    labels: Vec<String>,
    particles: Vec<Particle>,
    meta: BTreeMap<String, Option<i64>>,
    parent: Option<Box<Step>>,
}

#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Unit;

#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Pair(u8, String);

#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Wrapper<T> {
    inner: T,
    many: Vec<T>,
}

#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
enum Shape {
    Empty,
    Circle(f64),
    Rect { w: f32, h: f32 },
    Poly(Vec<[f32; 2]>, String),
}

fn step(n: usize) -> Step {
    Step {
        step: 7,
        name: "sim".into(),
        field: (0..n).map(|i| i as f64 * 0.5).collect(),
        rows: (0..4).map(|r| (0..r * 3).collect()).collect(),
        labels: vec!["a".into(), String::new(), "ünï".into()],
        particles: (0..3)
            .map(|i| Particle {
                id: i,
                pos: [i as f64, 1.0, -2.0],
                alive: i % 2 == 0,
            })
            .collect(),
        meta: [("x".to_string(), Some(3)), ("y".to_string(), None)].into(),
        parent: None,
    }
}

#[test]
fn scalars() {
    round(&0u8);
    round(&u16::MAX);
    round(&u32::MAX);
    round(&u64::MAX);
    round(&u128::MAX);
    round(&i8::MIN);
    round(&i16::MIN);
    round(&i32::MIN);
    round(&i64::MIN);
    round(&i128::MIN);
    round(&usize::MAX);
    round(&isize::MIN);
    round(&1.5f32);
    round(&-2.25f64);
    round(&true);
    round(&'€');
    round(&());
}

#[test]
fn float_nan_bits_survive() {
    let bytes = cdtypes::to_vec(&f64::NAN).unwrap();
    let back: f64 = from_bytes(&bytes).unwrap();
    assert_eq!(back.to_bits(), f64::NAN.to_bits());
}

#[test]
fn containers() {
    round(&vec![1u32, 2, 3]);
    round(&Vec::<u8>::new());
    round(&vec![true, false, true]);
    round(&vec!['a', 'ß', '😀']);
    round(&vec![[1u16, 2], [3, 4]]);
    round(&vec![vec![1.0f32], vec![], vec![2.0, 3.0]]);
    round(&vec!["x".to_string(), "yy".to_string()]);
    round(&String::from("hello"));
    round(&Some(5u8));
    round(&None::<String>);
    round(&Box::new(9i64));
    round(&(1u8, "two".to_string(), vec![3u64]));
    round(&(1u8, 2u16, 3u32, 4u64, 5i8, 6i16, 7i32, 8i64));
    round(&[7u8; 5]);
    round(&["a".to_string(), "b".to_string()]);
    round(&vec![[0u8; 0]; 3]);
    round(&vec![Some(1u8), None]);
    round(&vec![vec!["deep".to_string()]]);
    round(&VecDeque::from(vec![1i32, 2]));
    round(&BTreeSet::from([3u8, 1, 2]));
    round(&HashSet::<i64>::from([5, 6]));
    round(&HashMap::<String, Vec<f64>>::from([
        ("a".into(), vec![1.0]),
        ("b".into(), vec![]),
    ]));
    round(&BTreeMap::<u32, String>::from([(1, "one".into())]));
}

#[test]
fn derived() {
    let mut s = step(10_000);
    s.parent = Some(Box::new(step(3)));
    round(&s);
    round(&Unit);
    round(&Pair(3, "p".into()));
    round(&Wrapper {
        inner: 5u16,
        many: vec![1, 2],
    });
    round(&Wrapper {
        inner: "s".to_string(),
        many: vec!["t".into()],
    });
    for shape in [
        Shape::Empty,
        Shape::Circle(2.0),
        Shape::Rect { w: 1.0, h: 2.0 },
        Shape::Poly(vec![[0.0, 0.0], [1.0, 0.5]], "tri".into()),
    ] {
        round(&shape);
    }
}

#[test]
fn plain_vectors_are_regions_without_copy() {
    let v: Vec<f64> = (0..4096).map(f64::from).collect();
    let frame = Frame::encode(&v).unwrap();
    assert_eq!(frame.region_count(), 1);
    let r = frame.region(0).unwrap();
    assert_eq!(r.len, 4096 * 8);
    assert_eq!(r.kind, Some(Kind::Double));
    // the frame's region slice is the vector's own memory
    let iov = frame.iov().unwrap();
    assert!(iov.iter().any(|s| s.as_ptr() == v.as_ptr() as *const u8));
    // the concatenation of the slices is the frame
    let joined: Vec<u8> = iov.iter().flat_map(|s| s.iter().copied()).collect();
    assert_eq!(joined, frame.to_vec().unwrap());
    // many regions for nested vectors and strings
    let nested = vec![vec![1u8], vec![2, 3], vec![]];
    assert_eq!(Frame::encode(&nested).unwrap().region_count(), 3);
    let names = vec!["a".to_string(), "b".to_string()];
    let f = Frame::encode(&names).unwrap();
    assert_eq!(f.region_count(), 2);
    assert_eq!(f.region(1).unwrap().kind, Some(Kind::Char));
}

#[test]
fn send_side_borrowed_forms_match_owned() {
    // &str / &[T] pack like String / Vec<T>
    let owned: String = from_bytes(&cdtypes::to_vec("abc").unwrap()).unwrap();
    assert_eq!(owned, "abc");
    let v: Vec<u32> = from_bytes(&cdtypes::to_vec(&[1u32, 2][..]).unwrap()).unwrap();
    assert_eq!(v, [1, 2]);
    let h: HashMap<u8, u8> =
        from_bytes(&cdtypes::to_vec(&BTreeMap::from([(1u8, 2u8)])).unwrap()).unwrap();
    assert_eq!(h[&1], 2);
}

fn arb_particle() -> impl Strategy<Value = Particle> {
    (any::<u64>(), any::<[f64; 3]>(), any::<bool>()).prop_map(|(id, pos, alive)| Particle {
        id,
        pos,
        alive,
    })
}

fn arb_shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Empty),
        any::<f64>().prop_map(Shape::Circle),
        (any::<f32>(), any::<f32>()).prop_map(|(w, h)| Shape::Rect { w, h }),
        (prop::collection::vec(any::<[f32; 2]>(), 0..20), ".*")
            .prop_map(|(v, s)| Shape::Poly(v, s)),
    ]
}

/// Equality on bit patterns (NaN-safe) through the frame bytes of both values.
fn same_bits<T: Pack>(a: &T, b: &T) -> bool {
    cdtypes::to_vec(a).unwrap() == cdtypes::to_vec(b).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prop_vectors(v in prop::collection::vec(any::<i64>(), 0..3000),
                    w in prop::collection::vec(prop::collection::vec(any::<u16>(), 0..50), 0..20),
                    s in prop::collection::vec(".*", 0..10)) {
        let value = (v, w, s);
        let back: (Vec<i64>, Vec<Vec<u16>>, Vec<String>) = from_bytes(&cdtypes::to_vec(&value).unwrap()).unwrap();
        prop_assert_eq!(back, value);
    }

    #[test]
    fn prop_maps(m in prop::collection::hash_map(".*", prop::option::of(any::<u32>()), 0..20),
                 b in prop::collection::btree_map(any::<i8>(), any::<char>(), 0..20)) {
        let value = (m, b);
        let back: (HashMap<String, Option<u32>>, BTreeMap<i8, char>) = from_bytes(&cdtypes::to_vec(&value).unwrap()).unwrap();
        prop_assert_eq!(back, value);
    }

    #[test]
    fn prop_derived(particles in prop::collection::vec(arb_particle(), 0..50),
                    shapes in prop::collection::vec(arb_shape(), 0..10)) {
        let value = (particles, shapes);
        let back: (Vec<Particle>, Vec<Shape>) = from_bytes(&cdtypes::to_vec(&value).unwrap()).unwrap();
        prop_assert!(same_bits(&back, &value));
    }
}
