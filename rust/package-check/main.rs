//! Smoke test of the published crates, built by rust/package-check.sh in an empty cargo project
//! that depends on the unpacked `.crate` files: one check from each crate.
//!
//! - cdtypes-sys: a raw call (the linked libcdt's version is the one the bindings declare);
//! - cdtypes-derive: `#[derive(Pack, Unpack)]` on a struct with scalars, a string and vectors;
//! - cdtypes: the value framed and decoded in process, then sent over UCX from a second process
//!   (this program started again as `client PORT`) and received and compared here.
use std::ffi::CStr;
use std::process::Command;
use std::time::Duration;

use cdtypes::ucx::Worker;
use cdtypes::{Pack, Unpack};

#[derive(Pack, Unpack, Debug, PartialEq)]
struct Sample {
    id: u64,
    weight: f64,
    name: String,
    values: Vec<f64>,
    rows: Vec<Vec<u32>>,
}

const TIMEOUT: Option<Duration> = Some(Duration::from_secs(30));
const TAG_SAMPLE: u64 = 7;
const TAG_ACK: u64 = 8;

fn sample() -> Sample {
    Sample {
        id: 42,
        weight: 0.5,
        name: "smoke".into(),
        values: (0..100_000).map(|i| i as f64 * 0.25).collect(),
        rows: (0..5).map(|r| (0..r * 3).collect()).collect(),
    }
}

fn check_sys() {
    // SAFETY: both return values owned by the library, the string is static and NUL-terminated
    let (number, text) = unsafe {
        let text = CStr::from_ptr(cdtypes::sys::cdt_version_string());
        (
            cdtypes::sys::cdt_version_number(),
            text.to_string_lossy().into_owned(),
        )
    };
    use cdtypes::sys::{CDT_VERSION_MAJOR, CDT_VERSION_MINOR, CDT_VERSION_PATCH};
    let declared = CDT_VERSION_MAJOR * 10000 + CDT_VERSION_MINOR * 100 + CDT_VERSION_PATCH;
    assert_eq!(
        number, declared,
        "linked libcdt {text} differs from the headers the bindings were made from"
    );
    println!("cdtypes-sys: libcdt {text}");
}

fn check_frame() -> cdtypes::Result<()> {
    let value = sample();
    let frame = cdtypes::Frame::encode(&value)?;
    assert!(frame.region_count() >= 1, "the vectors travel as regions");
    let bytes = frame.to_vec()?;
    let back: Sample = cdtypes::from_bytes(&bytes)?;
    assert_eq!(back, value);
    println!(
        "cdtypes: framed and decoded {} bytes, {} regions",
        bytes.len(),
        frame.region_count()
    );
    Ok(())
}

fn server() -> cdtypes::Result<()> {
    let worker = Worker::new()?;
    let listener = worker.listen("127.0.0.1", 0)?;
    let port = listener.port()?;
    let mut child = Command::new(std::env::current_exe().expect("own path"))
        .args(["client", &port.to_string()])
        .spawn()
        .expect("start the client process");
    let ep = listener.accept(TIMEOUT)?;
    let (got, info) =
        worker.recv_matching::<Sample>(TAG_SAMPLE, cdtypes::ucx::TAG_MASK_FULL, TIMEOUT)?;
    assert_eq!(
        got,
        sample(),
        "the received value differs from the one sent"
    );
    ep.send(&true, TAG_ACK, TIMEOUT)?;
    drop(ep);
    let status = child.wait().expect("wait for the client");
    assert!(status.success(), "client failed: {status}");
    println!(
        "cdtypes over UCX: received {} bytes in {} regions from another process, equal",
        info.frame_size, info.region_count
    );
    Ok(())
}

fn client(port: u16) -> cdtypes::Result<()> {
    let worker = Worker::new()?;
    let ep = worker.connect("127.0.0.1", port, TIMEOUT)?;
    ep.send(&sample(), TAG_SAMPLE, TIMEOUT)?;
    // wait for the server's answer, so that the message is delivered before we close
    let ack: bool = worker.recv(TAG_ACK, TIMEOUT)?;
    assert!(ack);
    Ok(())
}

fn main() -> cdtypes::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["client", port] => client(port.parse().expect("port")),
        [] => {
            check_sys();
            check_frame()?;
            server()?;
            println!("package check: all crates work from their packages");
            Ok(())
        }
        _ => {
            eprintln!("usage: cdtypes-package-check [client PORT]");
            std::process::exit(2)
        }
    }
}
