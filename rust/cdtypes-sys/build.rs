//! Build script of cdtypes-sys.
//!
//! 1. libcdt: with the `bundled` feature (on by default) the C sources this crate carries in
//!    `libcdt-src/` (libcdt's CMake project: `libcdt/`, `bindings/`, `cmake/`) are built with
//!    CMake (tests, examples and benchmarks off, UCX on, warnings not errors) and linked
//!    statically: the transport `libcdtypes-ucx.a`, the core `libcdtypes.a`, UCX through
//!    pkg-config `ucx`; without it, an installed libcdt is found through pkg-config
//!    (`cdtypes-ucx.pc`, which requires `cdtypes.pc`) in the version range these bindings were
//!    made for.
//! 2. Generate the bindings with bindgen from cdt.h, cdt_ucx.h and cdt_sobj.h.
//! 3. Generate the table the ABI test checks against bindings/abi.txt.
//!
//! On docs.rs (`DOCS_RS` set) nothing is compiled or linked: the bindings are generated from the
//! carried headers, which is all the documentation needs.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

/// The installed libcdt versions these bindings accept: the ABI is `0.MINOR` before 1.0
/// (docs/ABI.md).
const ACCEPTED_VERSIONS: std::ops::Range<&str> = "0.2.0".."0.3.0";

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let sources = manifest.join("libcdt-src");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=DOCS_RS");
    println!("cargo:rerun-if-changed=wrapper.h");

    let include_dirs = if env::var_os("DOCS_RS").is_some() {
        carried_include_dirs(&sources)
    } else if env::var_os("CARGO_FEATURE_BUNDLED").is_some() {
        build_bundled(&sources)
    } else {
        find_installed()
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
        &sources.join("bindings").join("abi.txt"),
        &text,
        &out.join("abi_table.rs"),
    );
}

/// The headers document members and enum values with Doxygen's trailing blocks, `/*!< ... */`;
/// bindgen keeps their `<` in the text, which is dropped here.
#[derive(Debug)]
struct MemberDocComments;

impl bindgen::callbacks::ParseCallbacks for MemberDocComments {
    fn process_comment(&self, comment: &str) -> Option<String> {
        comment.strip_prefix('<').map(str::to_string)
    }
}

/// The headers this crate carries (`cdt.h`, `cdt_ucx.h`, `cdt_sobj.h`).
fn carried_include_dirs(sources: &Path) -> Vec<PathBuf> {
    vec![sources.join("libcdt").join("include")]
}

/// Without `bundled`: an installed libcdt through pkg-config, or a build error that says what
/// to do. The pkg-config crate links it shared unless `CDTYPES_UCX_STATIC=1` (or
/// `PKG_CONFIG_ALL_STATIC=1`) is set.
fn find_installed() -> Vec<PathBuf> {
    match pkg_config::Config::new()
        .range_version(ACCEPTED_VERSIONS)
        .probe("cdtypes-ucx")
    {
        Ok(lib) => lib.include_paths,
        Err(err) => panic!(
            "cdtypes-sys: the `bundled` feature is off and no libcdt {} ..< {} was found \
             through pkg-config (install libcdt and set PKG_CONFIG_PATH to the folder of its \
             cdtypes-ucx.pc and cdtypes.pc, or enable the `bundled` feature to build the carried sources): {err}",
            ACCEPTED_VERSIONS.start, ACCEPTED_VERSIONS.end
        ),
    }
}

/// `bundled`: build the carried libcdt with CMake and link it statically; returns the include
/// directories of the installed build.
fn build_bundled(sources: &Path) -> Vec<PathBuf> {
    for part in ["CMakeLists.txt", "libcdt", "bindings", "cmake"] {
        // the real path: in the repository these are links, and cargo watches what they name
        let path = sources.join(part);
        let path = fs::canonicalize(&path).unwrap_or(path);
        println!("cargo:rerun-if-changed={}", path.display());
    }
    assert!(
        sources.join("CMakeLists.txt").exists(),
        "cdtypes-sys: the libcdt sources are missing from {}",
        sources.display()
    );
    let dst = cmake::Config::new(sources)
        .define("CDT_BUILD_TESTS", "OFF")
        .define("CDT_BUILD_EXAMPLES", "OFF")
        .define("CDT_BUILD_BENCH", "OFF")
        .define("CDT_WITH_UCX", "ON")
        .define("CDT_WERROR", "OFF")
        .define("CMAKE_INSTALL_LIBDIR", "lib")
        .profile("RelWithDebInfo")
        .build();
    let lib = dst.join("lib");
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:lib_dir={}", lib.display());
    // the transport before the core it calls; both need UCX (shared, through pkg-config) and
    // pthreads
    println!("cargo:rustc-link-lib=static=cdtypes-ucx");
    println!("cargo:rustc-link-lib=static=cdtypes");
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
