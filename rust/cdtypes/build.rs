//! With the `mpi` feature: compile `src/mpi/shim.c`, which instantiates libcdt's header-only
//! MPI implementation (cdt_mpi.h, docs/MPI.md) against the mpi.h of the MPI library that rsmpi
//! links (found the way rsmpi finds it: `MPICC`, `mpicc`, then pkg-config `mpich` / `ompi`),
//! so that Rust and C speak the protocol through one implementation. Nothing otherwise.
use std::env;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_MPI").is_none() || env::var_os("DOCS_RS").is_some() {
        return;
    }
    mpi_shim();
}

#[cfg(feature = "mpi")]
fn mpi_shim() {
    println!("cargo:rerun-if-changed=src/mpi/shim.c");
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo:rerun-if-env-changed=MPI_PKG_CONFIG");
    let mpi = build_probe_mpi::probe().unwrap_or_else(|errs| {
        panic!("cdtypes (feature mpi): no MPI library found (MPICC, mpicc, pkg-config): {errs:?}")
    });
    let mut build = cc::Build::new();
    build.file("src/mpi/shim.c").warnings(true);
    for dir in &mpi.include_paths {
        build.include(dir);
    }
    // libcdt's installed headers, from cdtypes-sys (`links = "cdtypes"`, `cargo:include=`)
    if let Some(dir) = env::var_os("DEP_CDTYPES_INCLUDE") {
        build.include(dir);
    }
    build.compile("cdtypes_mpi_shim");
    // which MPI: tests/mpi.rs launches its ranks with that MPI's mpiexec
    let flavor = if mpi.libs.iter().any(|l| l.contains("mpich")) {
        "mpich"
    } else {
        "openmpi"
    };
    println!("cargo:rustc-env=CDTYPES_MPI_FLAVOR={flavor}");
}

#[cfg(not(feature = "mpi"))]
fn mpi_shim() {}
