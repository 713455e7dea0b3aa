//! Wrong-type receives, truncated and corrupt frames, limits: errors with the library's codes,
//! never a panic or undefined behaviour.
use cdtypes::{from_bytes, from_bytes_with_limits, Error, Frame, Limits, Pack, Unpack};

#[derive(Pack, Unpack, Debug, PartialEq)]
struct A {
    x: u32,
    y: u32,
}

#[derive(Pack, Unpack, Debug, PartialEq)]
struct B {
    x: u32,
    z: u32,
}

#[derive(Pack, Unpack, Debug, PartialEq)]
struct Mixed {
    n: u64,
    v: Vec<i16>,
    s: Vec<String>,
    flags: Vec<bool>,
}

fn mixed() -> Mixed {
    Mixed {
        n: 5,
        v: vec![1, -2, 3],
        s: vec!["α".into(), "b".into()],
        flags: vec![true, false],
    }
}

fn name<T>(r: cdtypes::Result<T>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(e) => e.name(),
    }
}

#[test]
fn wrong_type_is_a_mismatch() {
    let bytes = cdtypes::to_vec(&vec![1u32, 2]).unwrap();
    assert_eq!(
        name(from_bytes::<Vec<i32>>(&bytes)),
        "CDT_ERR_FRAME_MISMATCH"
    );
    assert_eq!(name(from_bytes::<String>(&bytes)), "CDT_ERR_FRAME_MISMATCH");
    assert_eq!(name(from_bytes::<u64>(&bytes)), "CDT_ERR_FRAME_MISMATCH");
    let a = cdtypes::to_vec(&A { x: 1, y: 2 }).unwrap();
    assert_eq!(name(from_bytes::<B>(&a)), "CDT_ERR_FRAME_MISMATCH");
    assert_eq!(from_bytes::<A>(&a).unwrap(), A { x: 1, y: 2 });
    let err = from_bytes::<B>(&a).unwrap_err();
    assert_eq!(err.code(), cdtypes::sys::CDT_ERR_FRAME_MISMATCH);
    assert!(
        err.to_string()
            .starts_with("CDT_ERR_FRAME_MISMATCH (-13): "),
        "{err}"
    );
    assert!(err.detail().unwrap().contains("another type"));
}

#[test]
fn truncated_frames_are_errors() {
    let bytes = cdtypes::to_vec(&mixed()).unwrap();
    for len in 0..bytes.len() {
        let err = from_bytes::<Mixed>(&bytes[..len]).unwrap_err();
        assert_eq!(
            err.name(),
            "CDT_ERR_FRAME_TRUNCATED",
            "prefix of {len}: {err}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(
        name(from_bytes::<Mixed>(&longer)),
        "CDT_ERR_FRAME_MALFORMED"
    );
    assert_eq!(from_bytes::<Mixed>(&bytes).unwrap(), mixed());
}

#[test]
fn corrupt_frames_never_misbehave() {
    let bytes = cdtypes::to_vec(&mixed()).unwrap();
    // every single-byte corruption gives an error or a value, never a crash
    for i in 0..bytes.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] ^= flip;
            let _ = from_bytes::<Mixed>(&b);
        }
    }
    let mut b = bytes.clone();
    b[0] = b'X';
    assert_eq!(name(from_bytes::<Mixed>(&b)), "CDT_ERR_FRAME_MAGIC");
    let mut b = bytes.clone();
    b[4] = 9;
    assert_eq!(name(from_bytes::<Mixed>(&b)), "CDT_ERR_FRAME_VERSION");
}

#[test]
fn corrupt_contents_are_mismatches() {
    let value = mixed();
    let frame = Frame::encode(&value).unwrap();
    let bytes = frame.to_vec().unwrap();
    let header = u64::from_le_bytes(bytes[8..16].try_into().unwrap()) as usize;
    // regions: v, the two strings, flags; a 2 is not a bool
    assert_eq!(frame.region_count(), 4);
    let flags = frame.region(3).unwrap();
    let mut b = bytes.clone();
    b[flags.offset as usize] = 2;
    assert_eq!(name(from_bytes::<Mixed>(&b)), "CDT_ERR_FRAME_MISMATCH");
    // region 1 is the first String: invalid UTF-8
    let s = frame.region(1).unwrap();
    let mut b = bytes.clone();
    b[s.offset as usize] = 0xff;
    assert_eq!(name(from_bytes::<Mixed>(&b)), "CDT_ERR_FRAME_MISMATCH");
    // the stream's sequence length (after fingerprint and n) claims more strings than exist
    let mut b = bytes.clone();
    b[header + 16..header + 24].copy_from_slice(&u64::MAX.to_ne_bytes());
    assert_eq!(name(from_bytes::<Mixed>(&b)), "CDT_ERR_FRAME_MISMATCH");
    let mut b = bytes.clone();
    b[header + 16..header + 24].copy_from_slice(&1u64.to_ne_bytes());
    let err = from_bytes::<Mixed>(&b).unwrap_err();
    assert!(
        err.detail().unwrap().contains("kind") || err.detail().unwrap().contains("region"),
        "{err}"
    );
}

#[test]
fn receiver_limits() {
    let bytes = cdtypes::to_vec(&vec![0u8; 10_000]).unwrap();
    let small = Limits {
        max_frame_bytes: Some(1000),
        max_regions: None,
    };
    assert_eq!(
        name(from_bytes_with_limits::<Vec<u8>>(&bytes, &small)),
        "CDT_ERR_LIMIT"
    );
    let few = Limits {
        max_frame_bytes: None,
        max_regions: Some(0),
    };
    assert_eq!(
        name(from_bytes_with_limits::<Vec<u8>>(&bytes, &few)),
        "CDT_ERR_LIMIT"
    );
    assert_eq!(
        from_bytes_with_limits::<Vec<u8>>(&bytes, &Limits::default())
            .unwrap()
            .len(),
        10_000
    );
}

#[test]
fn errors_carry_name_and_message_from_the_library() {
    let e = Error::from_code(cdtypes::sys::CDT_ERR_PEER);
    assert_eq!(e.name(), "CDT_ERR_PEER");
    assert_eq!(e.message(), "peer unreachable or gone");
    assert!(e.is_peer_gone());
    let user = Error::from_code(-1001);
    assert_eq!(user.name(), "CDT_ERR_USER");
    assert_eq!(
        format!("{user}"),
        format!("CDT_ERR_USER (-1001): {}", user.message())
    );
}

#[test]
fn derived_datatypes() {
    use cdtypes::{decode_typed, Kind, Order, TypeBuilder};
    let int = Kind::Int32.datatype();
    assert_eq!(int.size().unwrap(), 4);
    assert_eq!(Kind::Double.size(), 8);
    assert_eq!(Kind::Double.name(), "double");
    let contig = TypeBuilder::contiguous(3, &int).unwrap().commit().unwrap();
    assert_eq!(contig.size().unwrap(), 12);
    assert_eq!(contig.kind().unwrap(), Some(Kind::Int32));
    let vec = TypeBuilder::vector(2, 1, 3, &int).unwrap();
    assert_eq!(vec.size().unwrap(), 8);
    let vec = vec.commit().unwrap();
    assert_eq!(vec.extent().unwrap(), (0, 16));
    let idx = TypeBuilder::indexed(&[1, 1], &[0, 3], &int)
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(idx.describe().unwrap(), vec.describe().unwrap());
    let hidx = TypeBuilder::hindexed(&[1, 1], &[0, 12], &int)
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(hidx.describe().unwrap(), vec.describe().unwrap());
    let blk = TypeBuilder::indexed_block(1, &[0, 3], &int)
        .unwrap()
        .commit()
        .unwrap();
    let hblk = TypeBuilder::hindexed_block(1, &[0, 12], &int)
        .unwrap()
        .commit()
        .unwrap();
    let hvec = TypeBuilder::hvector(2, 1, 12, &int)
        .unwrap()
        .commit()
        .unwrap();
    for t in [&blk, &hblk, &hvec] {
        assert_eq!(t.describe().unwrap(), vec.describe().unwrap());
    }
    let dbl = Kind::Double.datatype();
    let st = TypeBuilder::structure(&[1, 1], &[0, 8], &[&int, &dbl])
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(st.size().unwrap(), 12);
    assert_eq!(st.kind().unwrap(), None);
    let sub = TypeBuilder::subarray(&[4, 4], &[2, 2], &[1, 1], Order::C, &int)
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(sub.size().unwrap(), 16);
    let rs = TypeBuilder::resized(&int, 0, 8).unwrap().commit().unwrap();
    assert_eq!(rs.extent().unwrap(), (0, 8));
    let dup = TypeBuilder::dup(&vec).unwrap().commit().unwrap();
    assert_eq!(dup.pack_size(3).unwrap(), 24);
    // the struct of an int and a double, its 4 bytes of padding declared: 16 bytes an element
    let rec = TypeBuilder::resized(&st, 0, 16).unwrap().commit().unwrap();
    let padded = TypeBuilder::padded(&rec).unwrap().commit().unwrap();
    assert_eq!(padded.size().unwrap(), 16);
    assert_eq!(padded.pack_size(3).unwrap(), 48);
    assert_eq!(padded.kind().unwrap(), Some(Kind::Byte));
    let recs: Vec<u8> = (0..48u8).collect();
    let frame = Frame::encode_typed(&recs, 3, &padded).unwrap();
    let mut back = vec![0u8; 48];
    decode_typed(&frame.to_vec().unwrap(), &mut back, 3, &padded).unwrap();
    assert_eq!(back, recs); // the padding's bytes too
    assert_eq!(
        name(TypeBuilder::padded(
            &TypeBuilder::resized(&st, 0, 8).unwrap()
        )),
        "CDT_ERR_INVALID_ARG"
    );
    assert_eq!(format!("{:?}", vec.clone()), format!("{vec:?}"));
    assert_eq!(
        name(TypeBuilder::indexed(&[1], &[0, 1], &int)),
        "CDT_ERR_INVALID_ARG"
    );
    assert_eq!(
        name(TypeBuilder::contiguous(-1, &int)),
        "CDT_ERR_INVALID_ARG"
    );

    // the subarray's 2x2 block of a 4x4 matrix, through a frame
    let m: Vec<u8> = (0..16i32).flat_map(|i| i.to_ne_bytes()).collect();
    let frame = Frame::encode_typed(&m, 1, &sub).unwrap();
    let mut out = vec![0u8; 64];
    decode_typed(&frame.to_vec().unwrap(), &mut out, 1, &sub).unwrap();
    let ints: Vec<i32> = out
        .chunks(4)
        .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(ints, [0, 0, 0, 0, 0, 5, 6, 0, 0, 9, 10, 0, 0, 0, 0, 0]);
    // only the touched bytes [20, 44) must be inside the buffer
    assert!(Frame::encode_typed(&m[..44], 1, &sub).is_ok());
    // a type that reaches past the buffer is refused
    assert_eq!(
        name(Frame::encode_typed(&m[..40], 1, &sub)),
        "CDT_ERR_TRUNCATED"
    );
    assert_eq!(
        name(decode_typed(&[], &mut out[..40], 1, &sub)),
        "CDT_ERR_TRUNCATED"
    );
}

#[test]
fn fixed_arrays_are_checked_whole() {
    // fixed-size arrays of plain data are copied as one block: round trip, and the checks of
    // bool and char still apply to every element
    let v = (
        [7i32; 300],
        [[1u16, 2], [3, 4]],
        [true, false, true],
        ['a', 'ß'],
    );
    let bytes = cdtypes::to_vec(&v).unwrap();
    type T = ([i32; 300], [[u16; 2]; 2], [bool; 3], [char; 2]);
    assert_eq!(from_bytes::<T>(&bytes).unwrap(), v);
    let find = |needle: &[u8]| {
        bytes
            .windows(needle.len())
            .position(|w| w == needle)
            .expect("bytes in the frame")
    };
    let at_bool = find(&[1, 0, 1]) + 1;
    let mut bad = bytes.clone();
    bad[at_bool] = 2;
    assert_eq!(name(from_bytes::<T>(&bad)), "CDT_ERR_FRAME_MISMATCH");
    let at_char = find(&('ß' as u32).to_ne_bytes());
    let mut bad = bytes.clone();
    bad[at_char..at_char + 4].copy_from_slice(&0xD800u32.to_ne_bytes());
    assert_eq!(name(from_bytes::<T>(&bad)), "CDT_ERR_FRAME_MISMATCH");
    // an array of another length
    let head = cdtypes::to_vec(&[0u8; 40]).unwrap();
    assert_eq!(
        name(from_bytes::<[u8; 41]>(&head)),
        "CDT_ERR_FRAME_MISMATCH"
    );
}

#[derive(Pack, Unpack, Debug, PartialEq, Clone, Copy)]
struct Fixed {
    a: i32,
    flag: bool,
    pair: (u16, [u8; 3]),
    wide: i128,
    d: f64,
}

/// The same value through the element-by-element path (no fixed-size form).
#[derive(Debug, PartialEq)]
struct Slow(Fixed);

impl Pack for Slow {
    fn pack<'a>(&'a self, p: &mut cdtypes::Packer<'a>) {
        self.0.pack(p)
    }
    fn describe(s: &mut cdtypes::Schema) {
        <Fixed as Pack>::describe(s)
    }
}

impl Unpack for Slow {
    fn unpack(u: &mut cdtypes::Unpacker) -> cdtypes::Result<Self> {
        Fixed::unpack(u).map(Slow)
    }
    fn describe(s: &mut cdtypes::Schema) {
        <Fixed as Unpack>::describe(s)
    }
}

#[test]
fn vectors_of_fixed_size_structs_are_one_block() {
    let v: Vec<Fixed> = (0..50)
        .map(|i| Fixed {
            a: -i,
            flag: i % 2 == 0,
            pair: (i as u16, [1, 2, i as u8]),
            wide: -(i as i128) << 70,
            d: f64::from(i) / 3.0,
        })
        .collect();
    let slow: Vec<Slow> = v.iter().copied().map(Slow).collect();
    let fast_bytes = cdtypes::to_vec(&v).unwrap();
    let slow_bytes = cdtypes::to_vec(&slow).unwrap();
    assert_eq!(fast_bytes, slow_bytes, "the block is the elements' bytes");
    assert_eq!(from_bytes::<Vec<Fixed>>(&slow_bytes).unwrap(), v);
    assert_eq!(from_bytes::<Vec<Slow>>(&fast_bytes).unwrap(), slow);
    // 4 + 1 + 2 + 3 + 16 + 8 bytes each, after the fingerprint and the length
    assert_eq!(<Fixed as Pack>::FIXED_SIZE, Some(34));
    // an invalid bool inside the block
    let at = fast_bytes.len() - 34 + 4;
    assert_eq!(fast_bytes[at], 0, "the last element's flag");
    let mut bad = fast_bytes.clone();
    bad[at] = 7;
    assert_eq!(
        name(from_bytes::<Vec<Fixed>>(&bad)),
        "CDT_ERR_FRAME_MISMATCH"
    );
    // a length that claims more elements than the stream holds
    let len_at = fast_bytes.len() - 50 * 34 - 8;
    let mut bad = fast_bytes.clone();
    bad[len_at..len_at + 8].copy_from_slice(&51u64.to_ne_bytes());
    assert_eq!(
        name(from_bytes::<Vec<Fixed>>(&bad)),
        "CDT_ERR_FRAME_MISMATCH"
    );
    bad[len_at..len_at + 8].copy_from_slice(&u64::MAX.to_ne_bytes());
    assert_eq!(
        name(from_bytes::<Vec<Fixed>>(&bad)),
        "CDT_ERR_FRAME_MISMATCH"
    );
}

#[derive(Pack, Unpack, Debug, PartialEq, Clone, Copy)]
struct WithArrays {
    id: u32,
    flags: [bool; 4],
    data: [i32; 64],
}

#[test]
fn arrays_inside_fixed_size_structs_are_copied_whole_and_checked() {
    // a Vec of fixed-size structs packs each array field with one copy (pack_fixed_array) and
    // unpacks it with one check (unpack_fixed_array): the same bytes as the element path
    let v: Vec<WithArrays> = (0..20)
        .map(|i| WithArrays {
            id: i,
            flags: [i % 2 == 0, true, false, i % 3 == 0],
            data: std::array::from_fn(|k| (i as i32) * 1000 - k as i32),
        })
        .collect();
    let bytes = cdtypes::to_vec(&v).unwrap();
    assert_eq!(from_bytes::<Vec<WithArrays>>(&bytes).unwrap(), v);
    let one_by_one: Vec<u8> = {
        // the same fields written one value at a time
        let parts: Vec<(u32, [bool; 4], Vec<i32>)> =
            v.iter().map(|w| (w.id, w.flags, w.data.to_vec())).collect();
        let mut flat = Vec::new();
        for (id, flags, data) in &parts {
            flat.extend_from_slice(&id.to_ne_bytes());
            flat.extend(flags.iter().map(|&b| b as u8));
            for x in data {
                flat.extend_from_slice(&x.to_ne_bytes());
            }
        }
        flat
    };
    let at = bytes
        .windows(one_by_one.len())
        .position(|w| w == one_by_one.as_slice())
        .expect("the elements' bytes, in order, in the stream");
    // a flag that is not 0 or 1 in the 7th element's array: refused
    let mut bad = bytes.clone();
    bad[at + 6 * (4 + 4 + 256) + 4 + 2] = 7;
    assert_eq!(
        name(from_bytes::<Vec<WithArrays>>(&bad)),
        "CDT_ERR_FRAME_MISMATCH"
    );
}
