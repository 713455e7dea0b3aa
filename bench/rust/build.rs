//! Build script of the Rust transfer benchmark: compiles the raw-UCX shim and the C twins of
//! the seed types (examples/c/seed_types.c) against libcdt's headers (from cdtypes-sys).
use std::env;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let repo = manifest.join("..").join("..");
    let seed = repo.join("examples").join("c");
    println!("cargo:rerun-if-changed=shim.c");
    println!(
        "cargo:rerun-if-changed={}",
        seed.join("seed_types.c").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        seed.join("seed_types.h").display()
    );
    let mut build = cc::Build::new();
    build
        .file(manifest.join("shim.c"))
        .file(seed.join("seed_types.c"))
        .include(&seed)
        .opt_level(2)
        .warnings(false);
    if let Some(dirs) = env::var_os("DEP_CDTYPES_INCLUDE") {
        for dir in env::split_paths(&dirs) {
            build.include(dir);
        }
    }
    if let Ok(ucx) = pkg_config::Config::new().cargo_metadata(false).probe("ucx") {
        for dir in ucx.include_paths {
            build.include(dir);
        }
    }
    build.compile("cdtbench_shim");
}
