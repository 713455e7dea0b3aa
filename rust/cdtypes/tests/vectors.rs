//! Shared test vectors (tests/vectors/, see its README): frames encoded by Rust are decoded by
//! the C decoder (through cdtypes-sys) and compared at the frame level (header, stream bytes,
//! region lengths, kinds and bytes); a frame encoded by C is decoded by Rust.
//! `CDT_REGEN_VECTORS=1 cargo test --test vectors` rewrites the files.
#![cfg(target_endian = "little")]
use std::path::PathBuf;
use std::ptr;

use cdtypes::sys;
use cdtypes::{Frame, Kind, Pack, Schema, TypeBuilder};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors")
}

/// The file's bytes, (re)written from `bytes` when asked to.
fn vector(name: &str, bytes: &[u8]) -> Vec<u8> {
    let path = dir().join(name);
    if std::env::var_os("CDT_REGEN_VECTORS").is_some() {
        std::fs::write(&path, bytes).unwrap();
    }
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What the C decoder makes of a cdt_sobj frame.
struct CDecoded {
    info: sys::cdt_frame_info,
    stream: Vec<u8>,
    regions: Vec<(Vec<u8>, sys::cdt_kind)>,
}

/// Decode with the C side only: cdt_decoder_create, cdt_sobj_recv_prepare (malloc), bind,
/// write, finish.
fn c_decode(bytes: &[u8]) -> Result<CDecoded, i32> {
    unsafe {
        let mut dec = ptr::null_mut();
        let rc = sys::cdt_decoder_create(bytes.as_ptr().cast(), bytes.len() as i64, &mut dec);
        if rc != 0 {
            return Err(rc);
        }
        let mut info = sys::cdt_frame_info {
            field_mask: sys::CDT_FRAME_INFO_ALL as u64,
            ..Default::default()
        };
        assert_eq!(sys::cdt_decoder_info(dec, &mut info), 0);
        let mut obj = sys::cdt_sobj::default();
        let mut rc = sys::cdt_sobj_recv_prepare(&mut obj, dec);
        if rc == 0 {
            rc = sys::cdt_decoder_bind(
                dec,
                (&mut obj as *mut sys::cdt_sobj).cast(),
                1,
                sys::cdt_sobj_type(),
            );
        }
        if rc == 0 {
            rc = sys::cdt_decoder_write(dec, 0, bytes.as_ptr().cast(), bytes.len() as i64);
        }
        if rc == 0 {
            rc = sys::cdt_decoder_finish(dec);
        }
        sys::cdt_decoder_free(dec);
        let out = (rc == 0).then(|| CDecoded {
            info,
            stream: std::slice::from_raw_parts(obj.inband as *const u8, obj.inband_len as usize)
                .to_vec(),
            regions: (0..obj.nbuffers as usize)
                .map(|i| {
                    let b = &*obj.buffers.add(i);
                    let data = if b.len == 0 {
                        Vec::new()
                    } else {
                        std::slice::from_raw_parts(b.base as *const u8, b.len as usize).to_vec()
                    };
                    (data, b.kind)
                })
                .collect(),
        });
        sys::cdt_sobj_release(&mut obj);
        out.ok_or(rc)
    }
}

fn fingerprint<T: Pack + ?Sized>() -> Vec<u8> {
    Schema::of_pack::<T>().to_ne_bytes().to_vec()
}

#[test]
fn rust_frame_u32_and_f64_vector_decodes_in_c() {
    let value = (7u32, vec![1.5f64, 2.5, -0.25]);
    let bytes = vector("rust_u32_vec_f64.bin", &cdtypes::to_vec(&value).unwrap());
    assert_eq!(bytes, cdtypes::to_vec(&value).unwrap(), "encoding changed");
    let c = c_decode(&bytes).unwrap();
    assert_eq!(c.info.version, 1);
    assert_eq!(c.info.header_size, 48 + 16);
    assert_eq!(c.info.packed_size, 12);
    assert_eq!(c.info.region_count, 1);
    assert_eq!(c.info.frame_size as usize, bytes.len());
    let mut stream = fingerprint::<(u32, Vec<f64>)>();
    stream.extend_from_slice(&7u32.to_le_bytes());
    assert_eq!(c.stream, stream);
    let f64s: Vec<u8> = value.1.iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(c.regions, vec![(f64s, sys::CDT_KIND_DOUBLE)]);
    // and back in Rust
    assert_eq!(
        cdtypes::from_bytes::<(u32, Vec<f64>)>(&bytes).unwrap(),
        value
    );
}

#[test]
fn rust_frame_strings_decodes_in_c() {
    let value = vec!["cdt".to_string(), String::new(), "ü".to_string()];
    let bytes = vector("rust_vec_string.bin", &cdtypes::to_vec(&value).unwrap());
    assert_eq!(bytes, cdtypes::to_vec(&value).unwrap(), "encoding changed");
    let c = c_decode(&bytes).unwrap();
    assert_eq!(c.info.region_count, 3);
    let mut stream = fingerprint::<Vec<String>>();
    stream.extend_from_slice(&3u64.to_le_bytes());
    assert_eq!(c.stream, stream);
    let regions: Vec<_> = value
        .iter()
        .map(|s| (s.as_bytes().to_vec(), sys::CDT_KIND_CHAR))
        .collect();
    assert_eq!(c.regions, regions);
    assert_eq!(cdtypes::from_bytes::<Vec<String>>(&bytes).unwrap(), value);
}

#[test]
fn c_decoder_rejects_a_truncated_rust_frame() {
    let bytes = cdtypes::to_vec(&(7u32, vec![1.5f64])).unwrap();
    assert_eq!(
        c_decode(&bytes[..bytes.len() - 1]).err(),
        Some(sys::CDT_ERR_INCOMPLETE)
    );
    assert_eq!(
        c_decode(&bytes[..20]).err(),
        Some(sys::CDT_ERR_FRAME_TRUNCATED)
    );
}

#[test]
fn c_frame_of_a_derived_type_decodes_in_rust() {
    // encoded by the C library: every other int32 of 0..8 (vector 4 x 1, stride 2)
    let int = Kind::Int32.datatype();
    let column = TypeBuilder::vector(4, 1, 2, &int)
        .unwrap()
        .commit()
        .unwrap();
    let data: Vec<u8> = (0..8i32).flat_map(|i| i.to_le_bytes()).collect();
    let encoded = Frame::encode_typed(&data, 1, &column)
        .unwrap()
        .to_vec()
        .unwrap();
    let bytes = vector("c_vector_int32.bin", &encoded);
    assert_eq!(bytes, encoded, "encoding changed");
    // header fields as docs/FORMAT.md lays them out
    assert_eq!(&bytes[0..4], b"CDTF");
    assert_eq!(u64::from_le_bytes(bytes[8..16].try_into().unwrap()), 48);
    assert_eq!(u64::from_le_bytes(bytes[16..24].try_into().unwrap()), 16);
    assert_eq!(u64::from_le_bytes(bytes[24..32].try_into().unwrap()), 0);
    assert_eq!(u64::from_le_bytes(bytes[32..40].try_into().unwrap()), 64);
    let stream: Vec<u8> = [0i32, 2, 4, 6]
        .iter()
        .flat_map(|i| i.to_le_bytes())
        .collect();
    assert_eq!(&bytes[48..], &stream[..]);
    // into a contiguous array of 4 int32 on the Rust side
    let four = TypeBuilder::contiguous(4, &int).unwrap().commit().unwrap();
    let mut out = vec![0u8; 16];
    cdtypes::decode_typed(&bytes, &mut out, 1, &four).unwrap();
    assert_eq!(out, stream);
    let dec = cdtypes::Decoder::new(&bytes, &Default::default()).unwrap();
    let info = dec.info().unwrap();
    assert_eq!(info.frame_size, 64);
    assert_eq!(info.object_count, Some(1));
    // an earlier writer's frame carries no count: flag OBJECT_COUNT (byte 6) and offset 40 clear
    let mut old = bytes.clone();
    old[6] = 0;
    old[40..48].fill(0);
    let dec = cdtypes::Decoder::new(&old, &Default::default()).unwrap();
    assert_eq!(dec.info().unwrap().object_count, None);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every vector of every writer (C, Python, Rust, Julia where present) against its shared
/// description (tests/vectors/describe.py): what the C decoder delivers through cdtypes-sys,
/// and the header as Rust's `Decoder` reads it.
#[test]
fn every_vector_matches_its_description() {
    let mut files: Vec<_> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    files.sort();
    let mut writers = std::collections::BTreeSet::new();
    for bin in &files {
        let name = bin.file_name().unwrap().to_string_lossy().into_owned();
        let desc = std::fs::read_to_string(bin.with_extension("json"))
            .unwrap_or_else(|e| panic!("{name}: no description ({e}): run describe.py --write"));
        let want: serde_json::Value = serde_json::from_str(&desc).unwrap();
        let num = |k: &str| want[k].as_i64().unwrap_or_else(|| panic!("{name}: {k}"));
        let bytes = std::fs::read(bin).unwrap();
        let c = c_decode(&bytes).unwrap_or_else(|rc| panic!("{name}: C decoder: {rc}"));
        assert_eq!(c.info.version as i64, num("version"), "{name}");
        assert_eq!(c.info.flags as i64, num("flags"), "{name}");
        assert_eq!(c.info.header_size, num("header_size"), "{name}");
        assert_eq!(c.info.packed_size, num("packed_size"), "{name}");
        assert_eq!(c.info.region_count, num("region_count"), "{name}");
        assert_eq!(c.info.region_bytes, num("region_bytes"), "{name}");
        assert_eq!(c.info.frame_size, num("frame_size"), "{name}");
        assert_eq!(
            hex(&c.stream),
            want["stream_hex"].as_str().unwrap(),
            "{name}"
        );
        let regions = want["regions"].as_array().unwrap();
        assert_eq!(c.regions.len(), regions.len(), "{name}");
        for (i, ((data, kind), r)) in c.regions.iter().zip(regions).enumerate() {
            assert_eq!(hex(data), r["hex"].as_str().unwrap(), "{name} region {i}");
            assert_eq!(
                *kind as i64,
                r["kind"].as_i64().unwrap(),
                "{name} region {i}"
            );
        }
        let dec = cdtypes::Decoder::new(&bytes, &Default::default()).unwrap();
        assert_eq!(
            dec.info().unwrap().frame_size as usize,
            bytes.len(),
            "{name}"
        );
        writers.insert(name.split('_').next().unwrap().to_string());
    }
    for w in ["c", "python", "rust"] {
        assert!(writers.contains(w), "no vectors written by {w}");
    }
}
