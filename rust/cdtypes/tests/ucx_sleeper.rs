//! An event loop asleep on the worker's event fd (`Worker::arm`, then poll on
//! `Worker::event_fd`) is woken when a receive it waits for is canceled from another thread:
//! one process, no peer, so nothing else can make the fd readable. A missed wakeup fails the
//! bounded poll (2 s); nothing else is timed.
use std::sync::mpsc;
use std::time::Duration;

use cdtypes::ucx::{Context, TAG_MASK_FULL};

const SLEEP_BOUND_MS: i32 = 2000;

#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}

extern "C" {
    fn poll(fds: *mut PollFd, nfds: u64, timeout: i32) -> i32;
}

/// Sleep on fd until it is readable; false when SLEEP_BOUND_MS passed first.
fn readable_within_bound(fd: i32) -> bool {
    loop {
        let mut pfd = PollFd {
            fd,
            events: 1, // POLLIN
            revents: 0,
        };
        // SAFETY: one valid pollfd
        let n = unsafe { poll(&mut pfd, 1, SLEEP_BOUND_MS) };
        if n >= 0 {
            return n > 0;
        }
        assert_eq!(
            std::io::Error::last_os_error().kind(),
            std::io::ErrorKind::Interrupted
        );
    }
}

#[test]
fn cancel_from_another_thread_wakes_a_sleeper() {
    let ctx = Context::with_wakeup(true).unwrap();
    let worker = ctx.worker(&Default::default()).unwrap();
    let fd = worker.event_fd().unwrap();
    let mut req = worker.irecv::<Vec<u32>>(77, TAG_MASK_FULL).unwrap();
    // nothing will ever match: only the cancel can end the receive
    assert!(req.test().unwrap().is_none());

    let (armed_tx, armed_rx) = mpsc::channel::<()>();
    let canceler = std::thread::spawn(move || {
        armed_rx.recv().unwrap(); // the loop below is asleep, or about to be
        std::thread::sleep(Duration::from_millis(50)); // most likely inside poll by now
        req.cancel().unwrap();
        req
    });
    let mut armed_tx = Some(armed_tx);
    loop {
        while worker.progress() > 0 {}
        if !worker.arm().unwrap() {
            continue; // events pending: progress again
        }
        if let Some(tx) = armed_tx.take() {
            tx.send(()).unwrap();
        } else {
            break; // woken once after the cancel was started: see whether it ended the receive
        }
        assert!(
            readable_within_bound(fd),
            "missed wakeup: the worker's fd stayed unreadable for {SLEEP_BOUND_MS} ms after a \
             cancel from another thread"
        );
    }
    let mut req = canceler.join().unwrap();
    let err = req.wait(Some(Duration::ZERO)).unwrap_err();
    assert_eq!(err.code(), cdtypes::sys::CDT_ERR_CANCELED);
}
