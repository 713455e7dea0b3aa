//! Two processes send a derived struct with vectors over UCX.
//!
//! ```sh
//! cargo run -p cdtypes-examples -- server 13337      # one terminal
//! cargo run -p cdtypes-examples -- client 127.0.0.1 13337
//! cargo run -p cdtypes-examples                      # both: spawns the client itself
//! ```
use std::process::Command;
use std::time::Duration;

use cdtypes::ucx::Worker;
use cdtypes::{Pack, Unpack};

/// What travels: scalar fields go into the packed stream, each vector is a zero-copy region.
#[derive(Pack, Unpack, Debug, PartialEq)]
struct Snapshot {
    step: u64,
    time: f64,
    name: String,
    temperature: Vec<f64>,
    cells: Vec<Vec<u32>>,
    labels: Vec<String>,
}

const TIMEOUT: Option<Duration> = Some(Duration::from_secs(60));

fn server(port: u16, spawn_client: bool) -> cdtypes::Result<()> {
    let worker = Worker::new()?;
    let listener = worker.listen("127.0.0.1", port)?;
    let port = listener.port()?;
    println!("server: listening on 127.0.0.1:{port}");
    // demo mode: start the client as a second process
    let child = spawn_client.then(|| {
        Command::new(std::env::current_exe().expect("own path"))
            .args(["client", "127.0.0.1", &port.to_string()])
            .spawn()
            .expect("spawn the client")
    });
    let ep = listener.accept(TIMEOUT)?;
    let (snap, info) = worker.recv_matching::<Snapshot>(1, cdtypes::ucx::TAG_MASK_FULL, TIMEOUT)?;
    println!(
        "server: step {} \"{}\": {} temperatures, {} cell lists, labels {:?} \
         ({} bytes in {} regions, one message)",
        snap.step,
        snap.name,
        snap.temperature.len(),
        snap.cells.len(),
        snap.labels,
        info.frame_size,
        info.region_count
    );
    let total: f64 = snap.temperature.iter().sum();
    ep.send(&total, 2, TIMEOUT)?;
    // the client's last word: once it arrived, nothing of ours is in flight
    let done: bool = worker.recv(3, TIMEOUT)?;
    assert!(done);
    drop(ep); // flushes and closes (as does the end of scope)
    if let Some(mut child) = child {
        let status = child.wait().expect("wait for the client");
        assert!(status.success(), "client failed: {status}");
    }
    Ok(())
}

fn client(host: &str, port: u16) -> cdtypes::Result<()> {
    let worker = Worker::new()?;
    let ep = worker.connect(host, port, TIMEOUT)?;
    let snap = Snapshot {
        step: 100,
        time: 0.25,
        name: "heat".into(),
        temperature: (0..1_000_000).map(|i| 300.0 + (i % 7) as f64).collect(),
        cells: (0..4).map(|c| (0..c * 10).collect()).collect(),
        labels: vec!["north".into(), "south".into()],
    };
    ep.send(&snap, 1, TIMEOUT)?;
    let total: f64 = worker.recv(2, TIMEOUT)?;
    println!("client: the server summed {total}");
    assert_eq!(total, snap.temperature.iter().sum::<f64>());
    ep.send(&true, 3, TIMEOUT)?;
    Ok(()) // dropping the endpoint flushes the last message and closes
}

fn main() -> cdtypes::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["client", host, port] => client(host, port.parse().expect("port")),
        ["server", port] => server(port.parse().expect("port"), false),
        [] => server(0, true),
        _ => {
            eprintln!("usage: cdtypes-examples [server PORT | client HOST PORT]");
            std::process::exit(2)
        }
    }
}
