//! The UCX transport: two processes over loopback (the test binary runs itself as the child),
//! non-blocking requests, and the error cases (wrong type, peer gone, timeout, cancel).
use std::process::{Child, Command};
use std::time::Duration;

use cdtypes::ucx::{Worker, TAG_MASK_ANY, TAG_MASK_FULL};
use cdtypes::{Pack, Unpack};

const LONG: Option<Duration> = Some(Duration::from_secs(120));

#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Snapshot {
    step: u64,
    name: String,
    field: Vec<f64>,     // large: its own zero-copy message
    rows: Vec<Vec<u32>>, // many regions
    tags: Vec<String>,
    origin: Option<[f32; 3]>,
}

fn snapshot(n: usize) -> Snapshot {
    Snapshot {
        step: 42,
        name: "run".into(),
        field: (0..n).map(|i| i as f64 / 3.0).collect(),
        rows: (0..5).map(|r| (0..r * 100).collect()).collect(),
        tags: vec!["a".into(), "bb".into()],
        origin: Some([1.0, 2.0, 3.0]),
    }
}

fn spawn_child(role: &str, port: u16) -> Child {
    spawn_child_env(role, port, None)
}

/// `lane`: the child's CDT_UCX_LANE (its worker reads it when made); `None` inherits ours.
fn spawn_child_env(role: &str, port: u16, lane: Option<&str>) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    if let Some(lane) = lane {
        cmd.env("CDT_UCX_LANE", lane);
    }
    cmd.args([
        "--exact",
        "child_main",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("CDT_RUST_TEST_ROLE", role)
    .env("CDT_RUST_TEST_PORT", port.to_string())
    .spawn()
    .expect("spawn child")
}

/// The child side of the two-process tests (run only by them).
#[test]
#[ignore = "the child process of the two-process tests"]
fn child_main() {
    let Ok(role) = std::env::var("CDT_RUST_TEST_ROLE") else {
        return;
    };
    let port: u16 = std::env::var("CDT_RUST_TEST_PORT")
        .unwrap()
        .parse()
        .unwrap();
    let worker = Worker::new().unwrap();
    let ep = worker.connect("127.0.0.1", port, LONG).unwrap();
    match role.as_str() {
        "echo" => {
            // echo one snapshot back, then send a String the parent receives as another type
            let s: Snapshot = worker.recv(1, LONG).unwrap();
            ep.send(&s, 2, LONG).unwrap();
            ep.send("not a number", 3, LONG).unwrap();
            let mut req = ep.isend(snapshot(10), 4).unwrap();
            req.wait(LONG).unwrap();
            let bye: String = worker.recv(9, LONG).unwrap();
            assert_eq!(bye, "bye");
            // the last message goes to the parent, which receives it before it lets go
            ep.send(&true, 10, LONG).unwrap();
        }
        "lane_echo" => {
            // echo snapshots (tag + 1) until the tag 0 object
            loop {
                let (s, info): (Snapshot, _) = worker.recv_matching(0, TAG_MASK_ANY, LONG).unwrap();
                if info.tag == 0 {
                    break;
                }
                ep.send(&s, info.tag + 1, LONG).unwrap();
            }
            ep.send(&true, 1, LONG).unwrap();
        }
        "lane_cells" => {
            // echo Vecs of fixed-size structs (tag + 1) until the tag 0 object
            loop {
                let (c, info): (Vec<Cell>, _) = worker.recv_matching(0, 0, LONG).unwrap();
                if info.tag == 0 {
                    break;
                }
                ep.send(&c, info.tag + 1, LONG).unwrap();
                let p: Vec<PlainCell> = worker.recv(info.tag + 2, LONG).unwrap();
                ep.send(&p, info.tag + 3, LONG).unwrap();
                let p: Vec<PaddedCell> = worker.recv(info.tag + 4, LONG).unwrap();
                ep.send(&p, info.tag + 5, LONG).unwrap();
            }
            ep.send(&true, 1, LONG).unwrap();
        }
        "vanish" => {
            // tell the parent we are up and wait for its answer (a send completes once its
            // bytes are handed to the transport, not once they arrived: exiting right after
            // it could lose them), then exit without closing anything
            ep.send(&1u8, 1, LONG).unwrap();
            let ack: u8 = worker.recv(2, LONG).unwrap();
            assert_eq!(ack, 2);
            std::process::exit(0);
        }
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn two_processes_round_trip() {
    let worker = Worker::new().unwrap();
    let listener = worker.listen("127.0.0.1", 0).unwrap();
    let mut child = spawn_child("echo", listener.port().unwrap());
    let ep = listener.accept(LONG).unwrap();

    let sent = snapshot(100_000); // 800 kB: above the zero-copy threshold
    ep.send(&sent, 1, LONG).unwrap();
    let (back, info): (Snapshot, _) = worker.recv_matching(2, TAG_MASK_FULL, LONG).unwrap();
    assert_eq!(back, sent);
    assert_eq!(info.tag, 2);
    // the child's endpoint sent it: its id, as this side's endpoint knows it
    assert!(info.sender != 0 && info.sender == ep.peer_id() && ep.id() != ep.peer_id());
    assert_eq!(info.region_count, 1 + 5 + 2 + 1);
    assert_eq!(
        info.region_bytes,
        800_000 + 4 * (100 + 200 + 300 + 400) + 3 + 3
    );

    // a frame of another type: an error, not a value
    let err = worker.recv::<u64>(3, LONG).unwrap_err();
    assert_eq!(err.name(), "CDT_ERR_FRAME_MISMATCH", "{err}");

    // non-blocking receive, any tag
    let mut req = worker.irecv::<Snapshot>(0, TAG_MASK_ANY).unwrap();
    let got = req.wait(LONG).unwrap();
    assert_eq!(got, snapshot(10));
    assert_eq!(req.info().unwrap().tag, 4);
    assert!(
        req.wait(LONG).is_err(),
        "a completed receive gives its value once"
    );

    let mut bye = ep.isend(String::from("bye"), 9).unwrap();
    bye.wait(LONG).unwrap();
    assert_eq!(bye.into_value().ok().unwrap(), "bye");
    // a completed send may still sit in the transport's queue: the worker must progress
    // until the child answered
    let last: bool = worker.recv(10, LONG).unwrap();
    assert!(last);
    assert!(wait_progressing(&worker, &mut child).success());
    drop(ep);
}

/// Large struct-of-vectors objects (as the Rust benchmark's) go through libcdt's lane
/// (docs/TRANSPORT.md §10) between two processes that both have it on: one object each way per
/// round trip in the worker's counters; none with it off.
#[test]
fn large_objects_through_the_lane() {
    for lane in [true, false] {
        let worker = Worker::with_options(&cdtypes::ucx::WorkerOptions {
            lane: Some(lane),
            ..Default::default()
        })
        .unwrap();
        let listener = worker.listen("127.0.0.1", 0).unwrap();
        let port = listener.port().unwrap();
        let mut child = spawn_child_env("lane_echo", port, Some(if lane { "on" } else { "off" }));
        let ep = listener.accept(LONG).unwrap();
        // a round trip first: the lane is offered and mapped while the endpoint wires up
        ep.send(&snapshot(1), 8, LONG).unwrap();
        let _: Snapshot = worker.recv(9, LONG).unwrap();
        // 1 MiB and 8 MiB of f64 beside the small vectors
        for (i, n) in [1usize << 17, 1 << 20].into_iter().enumerate() {
            let sent = snapshot(n);
            let before = worker.stats().unwrap();
            let tag = 10 + 2 * i as u64;
            ep.send(&sent, tag, LONG).unwrap();
            let back: Snapshot = worker.recv(tag + 1, LONG).unwrap();
            assert_eq!(back, sent);
            worker.progress();
            let after = worker.stats().unwrap();
            let moved = (
                after.lane_sent - before.lane_sent,
                after.lane_received - before.lane_received,
            );
            assert_eq!(
                moved,
                if lane { (1, 1) } else { (0, 0) },
                "lane {lane}, {n} f64"
            );
        }
        ep.send(&snapshot(1), 0, LONG).unwrap();
        let done: bool = worker.recv(1, LONG).unwrap();
        assert!(done);
        assert!(wait_progressing(&worker, &mut child).success());
        drop(ep);
    }
}

/// Wait for the child while progressing the worker: the child's endpoint closes as it exits,
/// and a close waits for its peer's answer (unanswered, it gives up after 5 s and UCX warns at
/// the child's exit about the close it still holds).
fn wait_progressing(worker: &Worker, child: &mut Child) -> std::process::ExitStatus {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        worker.progress();
        std::thread::yield_now();
    }
}

#[test]
fn peer_gone_is_an_error() {
    let worker = Worker::new().unwrap();
    let listener = worker.listen("127.0.0.1", 0).unwrap();
    let mut child = spawn_child("vanish", listener.port().unwrap());
    let ep = listener.accept(LONG).unwrap();
    let up: u8 = worker.recv(1, LONG).unwrap();
    assert_eq!(up, 1);
    ep.send(&2u8, 2, LONG).unwrap();
    assert!(child.wait().unwrap().success());
    // sends to the dead peer fail with CDT_ERR_PEER (a large one needs the peer to fetch it)
    let big = vec![7u8; 1 << 20];
    let mut err = None;
    for _ in 0..100 {
        if let Err(e) = ep.send(&big, 5, LONG) {
            err = Some(e);
            break;
        }
    }
    let err = err.expect("sends to a dead peer kept succeeding");
    assert!(err.is_peer_gone(), "{err}");
    assert!(ep.status().is_err());
    // the error names the peer, the UCX version and the lanes the endpoint had: a dead peer,
    // not a configuration problem
    let detail = err.detail().unwrap_or_default().to_string();
    let version = cdtypes::ucx::version();
    assert!(
        detail.starts_with("send to 127.0.0.1:")
            && detail.contains(&format!("(UCX {version}; lanes: am="))
            && err.to_string().contains(&detail),
        "{err}"
    );
}

#[test]
fn failed_connect_names_peer_version_and_what_to_do() {
    // a port nobody listens on (bound, then released)
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let worker = Worker::new().unwrap();
    let err = worker
        .connect("127.0.0.1", port, Some(Duration::from_secs(5)))
        .err()
        .expect("a connect to a closed port succeeded");
    let detail = err.detail().unwrap_or_default();
    let version = cdtypes::ucx::version();
    assert!(
        detail.starts_with(&format!(
            "connect to 127.0.0.1:{port} (UCX {version}; lanes: none (no connection))"
        )) && detail.contains("peers must use the same UCX minor version"),
        "{err}"
    );
}

#[test]
fn receive_timeout_and_cancel() {
    let worker = Worker::new().unwrap();
    // nobody sends: the receive times out
    let err = worker
        .recv::<u32>(77, Some(Duration::from_millis(50)))
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(err.code(), cdtypes::sys::CDT_ERR_TIMEOUT);
    assert_eq!(err.message(), "timed out");

    let mut req = worker.irecv::<Vec<u8>>(78, TAG_MASK_FULL).unwrap();
    assert!(req.test().unwrap().is_none());
    assert!(req
        .wait(Some(Duration::from_millis(10)))
        .unwrap_err()
        .is_timeout());
    req.cancel().unwrap();
    let err = req.wait(LONG).unwrap_err();
    assert!(err.is_canceled(), "{err}");
    // dropping pending requests is fine
    let _pending = worker.irecv::<String>(79, TAG_MASK_FULL).unwrap();
}

#[test]
fn wakeup_event_fd_and_sleeping_receive() {
    // no fd without wakeup
    let plain = cdtypes::ucx::Context::with_wakeup(false)
        .unwrap()
        .worker(&Default::default())
        .unwrap();
    assert_eq!(
        plain.event_fd().unwrap_err().code(),
        cdtypes::sys::CDT_ERR_UNSUPPORTED
    );
    assert!(plain.arm().is_err());

    let ctx = cdtypes::ucx::Context::with_wakeup(true).unwrap();
    let server = ctx.worker(&Default::default()).unwrap();
    let listener = server.listen("127.0.0.1", 0).unwrap();
    let port = listener.port().unwrap();
    let client = ctx.worker(&Default::default()).unwrap();
    let fd = server.event_fd().unwrap();
    assert!(fd >= 0);
    let sender = std::thread::spawn(move || {
        let ep = client.connect("127.0.0.1", port, LONG).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        ep.send(&vec![1.5f64; 10_000], 5, LONG).unwrap();
        // stay until the receiver has it
        ep.worker().recv::<u8>(6, LONG).unwrap();
    });
    let ep = listener.accept(LONG).unwrap();
    // an event loop by hand: poll the fd once armed
    let mut req = server.irecv::<Vec<f64>>(5, TAG_MASK_FULL).unwrap();
    let mut got = None;
    for _ in 0..3000 {
        if let Some(v) = req.test().unwrap() {
            got = Some(v);
            break;
        }
        while server.progress() > 0 {}
        if server.arm().unwrap() {
            let mut pfd = libc_pollfd(fd);
            // SAFETY: one valid pollfd
            unsafe { poll(&mut pfd, 1, 100) };
        }
    }
    assert_eq!(got.unwrap(), vec![1.5f64; 10_000]);
    ep.send(&1u8, 6, LONG).unwrap();
    sender.join().unwrap();
}

#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}

fn libc_pollfd(fd: i32) -> PollFd {
    PollFd {
        fd,
        events: 1, // POLLIN
        revents: 0,
    }
}

extern "C" {
    fn poll(fds: *mut PollFd, nfds: u64, timeout: i32) -> i32;
}

#[test]
fn one_process_loopback_with_threads_and_limits() {
    let server = Worker::with_options(&cdtypes::ucx::WorkerOptions {
        limits: cdtypes::Limits {
            max_frame_bytes: Some(1 << 20),
            max_regions: None,
        },
        ..Default::default()
    })
    .unwrap();
    let listener = server.listen("127.0.0.1", 0).unwrap();
    let port = listener.port().unwrap();
    let client = std::thread::spawn(move || {
        let worker = Worker::new().unwrap();
        let ep = worker.connect("127.0.0.1", port, LONG).unwrap();
        ep.send(&vec![1u32, 2, 3], 1, LONG).unwrap();
        // over the receiver's limit: the receive fails, the sender's message is dropped
        let mut big = ep.isend(vec![0u8; 2 << 20], 2).unwrap();
        ep.send(&vec![4u32], 3, LONG).unwrap();
        let _ = big.wait(LONG);
        let done: bool = worker.recv(4, LONG).unwrap();
        assert!(done);
    });
    let ep = listener.accept(LONG).unwrap();
    assert_eq!(server.recv::<Vec<u32>>(1, LONG).unwrap(), [1, 2, 3]);
    let err = server.recv::<Vec<u8>>(2, LONG).unwrap_err();
    assert_eq!(err.name(), "CDT_ERR_LIMIT", "{err}");
    assert_eq!(server.recv::<Vec<u32>>(3, LONG).unwrap(), [4]);
    ep.send(&true, 4, LONG).unwrap();
    client.join().unwrap();
}

#[test]
fn derived_datatype_over_ucx() {
    use cdtypes::{Kind, TypeBuilder};
    let server = Worker::new().unwrap();
    let listener = server.listen("127.0.0.1", 0).unwrap();
    let port = listener.port().unwrap();
    // every other i32 of 8
    let column = TypeBuilder::vector(4, 1, 2, &Kind::Int32.datatype())
        .unwrap()
        .commit()
        .unwrap();
    let column2 = column.clone();
    let client = std::thread::spawn(move || {
        let worker = Worker::new().unwrap();
        let ep = worker.connect("127.0.0.1", port, LONG).unwrap();
        let data: Vec<u8> = (0..8i32).flat_map(|i| i.to_ne_bytes()).collect();
        ep.send_typed(&data, 1, &column2, 1, LONG).unwrap();
        let _: bool = worker.recv(2, LONG).unwrap();
    });
    let ep = listener.accept(LONG).unwrap();
    let mut out = vec![0u8; 32];
    let info = server
        .recv_typed(&mut out, 1, &column, 1, TAG_MASK_FULL, LONG)
        .unwrap();
    assert!(info.frame_size > 16);
    let ints: Vec<i32> = out
        .chunks(4)
        .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(ints, [0, 0, 2, 0, 4, 0, 6, 0]);
    // a buffer too small for the type is refused before anything is posted
    let mut small = vec![0u8; 8];
    let err = server
        .recv_typed(&mut small, 1, &column, 1, TAG_MASK_FULL, LONG)
        .unwrap_err();
    assert_eq!(err.name(), "CDT_ERR_TRUNCATED");
    ep.send(&true, 2, LONG).unwrap();
    client.join().unwrap();
}

#[test]
fn single_mode_protocol() {
    use cdtypes::ucx::{Protocol, WorkerOptions};
    let server = Worker::new().unwrap();
    let listener = server.listen("127.0.0.1", 0).unwrap();
    let port = listener.port().unwrap();
    let client = std::thread::spawn(move || {
        // the sender chooses: every object as one message; the receiver takes either
        let worker = Worker::with_options(&WorkerOptions {
            protocol: Some(Protocol::Single),
            ..Default::default()
        })
        .unwrap();
        let ep = worker.connect("127.0.0.1", port, LONG).unwrap();
        assert_eq!(ep.protocol().unwrap(), Protocol::Single);
        ep.send(&snapshot(3), 1, LONG).unwrap();
        let back: Snapshot = worker.recv(2, LONG).unwrap();
        assert_eq!(back, snapshot(3));
    });
    let ep = listener.accept(LONG).unwrap();
    let got: Snapshot = server.recv(1, LONG).unwrap();
    assert_eq!(got, snapshot(3));
    // the listener side stays on its own choice, which follows the transport of its messages:
    // single mode over shared memory (CDT_UCX_SHARED_MEMORY), split over TCP (the default)
    ep.send(&got, 2, LONG).unwrap();
    let transports = ep.transports().unwrap();
    let expected = if transports.contains("am=tcp/") {
        Protocol::Split
    } else {
        assert!(transports.contains("memory"), "{transports}");
        Protocol::Single
    };
    assert_eq!(ep.protocol().unwrap(), expected);
    client.join().unwrap();
}

#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Cell {
    id: u32,
    on: bool,
    w: f64,
    data: [i32; 2048], // 8 KiB: every transport fragment cuts elements
}

#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct CellOther {
    id: u32,
    on: bool,
    w: f64,
    data: [i32; 2048],
}

#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct Mesh {
    name: String,
    cells: Vec<Cell>,
    points: Vec<(f32, f32)>,
}

/// Cell without its bool: every byte pattern of it is a value (`Unpack::ANY_BYTES`).
#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
struct PlainCell {
    id: u32,
    w: f64,
    data: [i32; 2048],
}

/// PlainCell as its memory (`#[cdtypes(padded)]`): a Vec of it is one region, which the lane
/// splits between both cores.
#[repr(C)]
#[derive(Pack, Unpack, Debug, PartialEq, Clone)]
#[cdtypes(padded)]
struct PaddedCell {
    id: u32,
    w: f64,
    data: [i32; 2048],
}

fn padded_cells(n: usize) -> Vec<PaddedCell> {
    plain_cells(n)
        .into_iter()
        .map(|c| PaddedCell {
            id: c.id,
            w: c.w,
            data: c.data,
        })
        .collect()
}

fn plain_cells(n: usize) -> Vec<PlainCell> {
    cells(n)
        .into_iter()
        .map(|c| PlainCell {
            id: c.id,
            w: c.w,
            data: c.data,
        })
        .collect()
}

/// Vecs of fixed-size structs through the lane, whose receiving type reads each byte once
/// (docs/TRANSPORT.md §10.4): elements whose every byte pattern is a value straight out of
/// the segment, elements with a bool (checked) through a private copy, and padded elements as
/// one region that the lane splits; all arrive whole, one lane object each way per send.
#[test]
fn fixed_size_structs_through_the_lane() {
    const { assert!(<PlainCell as Unpack>::ANY_BYTES && !<Cell as Unpack>::ANY_BYTES) };
    let worker = Worker::with_options(&cdtypes::ucx::WorkerOptions {
        lane: Some(true),
        ..Default::default()
    })
    .unwrap();
    let listener = worker.listen("127.0.0.1", 0).unwrap();
    let port = listener.port().unwrap();
    let mut child = spawn_child_env("lane_cells", port, Some("on"));
    let ep = listener.accept(LONG).unwrap();
    // a round trip first: the lane is offered and mapped while the endpoint wires up
    ep.send(&cells(1), 10, LONG).unwrap();
    let _: Vec<Cell> = worker.recv(11, LONG).unwrap();
    ep.send(&plain_cells(1), 12, LONG).unwrap();
    let _: Vec<PlainCell> = worker.recv(13, LONG).unwrap();
    ep.send(&padded_cells(1), 14, LONG).unwrap();
    let _: Vec<PaddedCell> = worker.recv(15, LONG).unwrap();
    for (i, n) in [130usize, 1000].into_iter().enumerate() {
        let tag = 20 + 6 * i as u64;
        let before = worker.stats().unwrap();
        ep.send(&cells(n), tag, LONG).unwrap();
        let back: Vec<Cell> = worker.recv(tag + 1, LONG).unwrap();
        assert!(back == cells(n), "{n} cells with a bool");
        ep.send(&plain_cells(n), tag + 2, LONG).unwrap();
        let back: Vec<PlainCell> = worker.recv(tag + 3, LONG).unwrap();
        assert!(back == plain_cells(n), "{n} plain cells");
        ep.send(&padded_cells(n), tag + 4, LONG).unwrap();
        let back: Vec<PaddedCell> = worker.recv(tag + 5, LONG).unwrap();
        assert!(back == padded_cells(n), "{n} padded cells");
        worker.progress();
        let after = worker.stats().unwrap();
        assert_eq!(
            (
                after.lane_sent - before.lane_sent,
                after.lane_received - before.lane_received
            ),
            (3, 3),
            "{n} cells"
        );
        // the padded Vec is one region of 8,208 bytes an element: split both ways; the
        // other two travel in the stream
        assert_eq!(
            (
                after.lane_split_sent - before.lane_split_sent,
                after.lane_split_received - before.lane_split_received
            ),
            (1, 1),
            "{n} cells"
        );
    }
    ep.send(&cells(1), 0, LONG).unwrap();
    let done: bool = worker.recv(1, LONG).unwrap();
    assert!(done);
    assert!(wait_progressing(&worker, &mut child).success());
    drop(ep);
}

fn cells(n: usize) -> Vec<Cell> {
    (0..n)
        .map(|i| {
            let mut data = [0i32; 2048];
            for (j, x) in data.iter_mut().enumerate() {
                *x = (i * 7 + j) as i32;
            }
            Cell {
                id: i as u32,
                on: i % 3 == 0,
                w: i as f64 / 7.0,
                data,
            }
        })
        .collect()
}

/// Vecs of derived fixed-size structs (packed by the library fragment by fragment, unpacked
/// into the receiving Vec as they arrive) over both protocols; a wrong-type receive fails.
#[test]
fn fixed_size_structs_over_ucx() {
    use cdtypes::ucx::{Protocol, WorkerOptions};
    for protocol in [Protocol::Single, Protocol::Split] {
        let server = Worker::new().unwrap();
        let listener = server.listen("127.0.0.1", 0).unwrap();
        let port = listener.port().unwrap();
        let client = std::thread::spawn(move || {
            let worker = Worker::with_options(&WorkerOptions {
                protocol: Some(protocol),
                ..Default::default()
            })
            .unwrap();
            let ep = worker.connect("127.0.0.1", port, LONG).unwrap();
            ep.send(&cells(300), 1, LONG).unwrap(); // 2.5 MB
            let mesh = Mesh {
                name: "m".into(),
                cells: cells(5),
                points: (0..1000).map(|i| (i as f32, -(i as f32))).collect(),
            };
            ep.send(&mesh, 2, LONG).unwrap();
            ep.send(&cells(40), 3, LONG).unwrap();
            let done: bool = worker.recv(4, LONG).unwrap();
            assert!(done);
        });
        let ep = listener.accept(LONG).unwrap();
        let got: Vec<Cell> = server.recv(1, LONG).unwrap();
        assert!(got == cells(300), "{protocol:?}");
        let mesh: Mesh = server.recv(2, LONG).unwrap();
        assert!(mesh.cells == cells(5) && mesh.points.len() == 1000);
        let err = server.recv::<Vec<CellOther>>(3, LONG).unwrap_err();
        assert_eq!(err.name(), "CDT_ERR_FRAME_MISMATCH", "{err}");
        ep.send(&true, 4, LONG).unwrap();
        client.join().unwrap();
    }
}
