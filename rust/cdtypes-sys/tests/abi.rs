//! Every function, status and kind listed in bindings/abi.txt is bound (and links), with the
//! value the list gives.
use std::path::Path;

fn abi_list() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("libcdt-src/bindings/abi.txt");
    std::fs::read_to_string(&path).expect("bindings/abi.txt")
}

#[test]
fn every_abi_function_is_bound() {
    let list = abi_list();
    let bound: std::collections::HashMap<_, _> =
        cdtypes_sys::abi::abi_functions().into_iter().collect();
    let mut listed = 0;
    let mut missing = Vec::new();
    for line in list.lines() {
        if let Some(rest) = line.strip_prefix("fn ") {
            let name = rest.split('|').next().unwrap().trim();
            listed += 1;
            match bound.get(name) {
                Some(&addr) => assert_ne!(addr, 0, "{name} has no address"),
                None => missing.push(name.to_string()),
            }
        }
    }
    assert!(listed > 50, "abi.txt lists only {listed} functions");
    assert!(missing.is_empty(), "not bound: {missing:?}");
}

#[test]
fn every_abi_constant_has_its_value() {
    let list = abi_list();
    let bound: std::collections::HashMap<_, _> =
        cdtypes_sys::abi::ABI_CONSTANTS.iter().copied().collect();
    for line in list.lines() {
        let Some(rest) = line
            .strip_prefix("status ")
            .or_else(|| line.strip_prefix("kind "))
        else {
            continue;
        };
        let (name, value) = rest.split_once('=').unwrap();
        let (name, value) = (name.trim(), value.trim().parse::<i64>().unwrap());
        assert_eq!(bound.get(name), Some(&value), "{name}");
    }
}

#[test]
fn status_names_come_from_the_library() {
    use std::ffi::CStr;
    unsafe {
        let name = CStr::from_ptr(cdtypes_sys::cdt_err_name(cdtypes_sys::CDT_ERR_TRUNCATED));
        assert_eq!(name.to_str().unwrap(), "CDT_ERR_TRUNCATED");
        let msg = CStr::from_ptr(cdtypes_sys::cdt_strerror(-12345));
        assert!(!msg.to_bytes().is_empty());
        assert_eq!(
            cdtypes_sys::cdt_version_number(),
            cdtypes_sys::CDT_VERSION_NUMBER
        );
    }
}
