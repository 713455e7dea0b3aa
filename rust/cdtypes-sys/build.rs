//! Build script of cdtypes-sys.
//!
//! 1. Find libcdt: an installed one through pkg-config (`cdt.pc`), unless
//!    `CDTYPES_SYS_FROM_SOURCE=1`; otherwise build this repository's libcdt with CMake (tests,
//!    examples and benchmarks off, UCX on) and link it statically (feature `static`, on by
//!    default), with UCX linked through pkg-config `ucx`.
//! 2. Generate the bindings with bindgen from cdt.h, cdt_ucx.h and cdt_sobj.h.
//! 3. Generate the table the ABI test checks against bindings/abi.txt.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let repo = manifest.join("..").join("..");
    println!("cargo:rerun-if-env-changed=CDTYPES_SYS_FROM_SOURCE");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-changed=wrapper.h");

    let from_source = env::var("CDTYPES_SYS_FROM_SOURCE").is_ok_and(|v| !v.is_empty() && v != "0");
    let installed = if from_source {
        None
    } else {
        pkg_config::Config::new()
            // the ABI these bindings were generated for: 0.MINOR before 1.0 (docs/ABI.md)
            .range_version("0.2.0".."0.3.0")
            .probe("cdt")
            .ok()
    };
    let include_dirs = match installed {
        Some(lib) => lib.include_paths,
        None => build_from_source(&repo),
    };
    for dir in &include_dirs {
        println!("cargo:include={}", dir.display());
    }

    let mut builder = bindgen::Builder::default()
        .header(manifest.join("wrapper.h").display().to_string())
        .allowlist_function("cdt_.*")
        .allowlist_type("cdt_.*")
        .allowlist_var("CDT_.*")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .derive_debug(true)
        .generate_comments(true)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .parse_callbacks(Box::new(MemberDocComments));
    for dir in &include_dirs {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    let bindings = builder
        .generate()
        .expect("bindgen failed on cdt.h / cdt_ucx.h / cdt_sobj.h");
    let text = bindings.to_string();
    fs::write(out.join("bindings.rs"), &text).expect("write bindings.rs");

    write_abi_table(
        &repo.join("bindings").join("abi.txt"),
        &text,
        &out.join("abi_table.rs"),
    );
}

/// Build the repository's libcdt with CMake; returns the include directories.
/// The headers document members and enum values with Doxygen's trailing blocks, `/*!< ... */`;
/// bindgen keeps their `<` in the text, which is dropped here.
#[derive(Debug)]
struct MemberDocComments;

impl bindgen::callbacks::ParseCallbacks for MemberDocComments {
    fn process_comment(&self, comment: &str) -> Option<String> {
        comment.strip_prefix('<').map(str::to_string)
    }
}

fn build_from_source(repo: &Path) -> Vec<PathBuf> {
    for dir in ["libcdt", "bindings", "cmake", "CMakeLists.txt"] {
        println!("cargo:rerun-if-changed={}", repo.join(dir).display());
    }
    assert!(
        repo.join("CMakeLists.txt").exists(),
        "libcdt not found through pkg-config and no libcdt sources at {}",
        repo.display()
    );
    let dst = cmake::Config::new(repo)
        .define("CDT_BUILD_TESTS", "OFF")
        .define("CDT_BUILD_EXAMPLES", "OFF")
        .define("CDT_BUILD_BENCH", "OFF")
        .define("CDT_WITH_UCX", "ON")
        .define("CMAKE_INSTALL_LIBDIR", "lib")
        .profile("RelWithDebInfo")
        .build();
    let lib = dst.join("lib");
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:lib_dir={}", lib.display());
    if env::var_os("CARGO_FEATURE_STATIC").is_some() {
        println!("cargo:rustc-link-lib=static=cdt");
    } else {
        println!("cargo:rustc-link-lib=dylib=cdt");
    }
    // libcdt.a needs UCX (shared, through pkg-config) and pthreads
    pkg_config::Config::new()
        .probe("ucx")
        .expect("pkg-config ucx not found (install libucx-dev)");
    println!("cargo:rustc-link-lib=pthread");
    vec![dst.join("include")]
}

/// `abi_table.rs`: every `fn` of bindings/abi.txt that the bindings declare, with its address
/// (so the test also proves each symbol links), and every status / kind with its value.
fn write_abi_table(abi: &Path, bindings: &str, dst: &Path) {
    println!("cargo:rerun-if-changed={}", abi.display());
    let listed = fs::read_to_string(abi).unwrap_or_default();
    let mut fns = String::new();
    let mut consts = String::new();
    for line in listed.lines() {
        if let Some(rest) = line.strip_prefix("fn ") {
            let name = rest.split('|').next().unwrap_or("").trim();
            if bindings.contains(&format!("pub fn {name}(")) {
                fns.push_str(&format!(
                    "        (\"{name}\", {name} as *const () as usize),\n"
                ));
            }
        } else if let Some(rest) = line
            .strip_prefix("status ")
            .or_else(|| line.strip_prefix("kind "))
        {
            let mut parts = rest.split('=');
            let name = parts.next().unwrap_or("").trim();
            if bindings.contains(&format!("pub const {name}:")) {
                consts.push_str(&format!("    (\"{name}\", {name} as i64),\n"));
            }
        }
    }
    let text = format!(
        "/// Functions of bindings/abi.txt found in the bindings, with their addresses.\n\
         pub fn abi_functions() -> Vec<(&'static str, usize)> {{\n    vec![\n{fns}    ]\n}}\n\
         /// Status and kind constants of bindings/abi.txt found in the bindings.\n\
         pub static ABI_CONSTANTS: &[(&str, i64)] = &[\n{consts}];\n"
    );
    fs::write(dst, text).expect("write abi_table.rs");
}
