"""Workers that sleep instead of spinning (wakeup=True): the worker's fd for an event loop,
Request.wait_async under asyncio, and blocking calls, against an echo peer that sleeps too;
an event loop asleep on the fd is woken by a cancel from another thread."""
import asyncio
import select
import threading
import time

import numpy as np
import pytest

import cdtypes
from conftest import echo_peer

try:
    from cdtypes import ucx
except ImportError as e:  # libcdt built without UCX
    pytest.skip(str(e), allow_module_level=True)


@pytest.fixture(scope="module")
def echo():
    with echo_peer(env={"CDT_UCX_WAKEUP": "1"}, wakeup=True) as ep:
        yield ep


def test_fd_only_with_wakeup():
    with ucx.Worker(wakeup=False) as w:
        with pytest.raises(cdtypes.CdtError):
            w.fileno()
        with pytest.raises(cdtypes.CdtError):
            w.arm()
    with ucx.Worker(wakeup=True) as w:
        assert w.fileno() >= 0
        while w.progress() > 0:
            pass
        assert w.arm() in (True, False)


def test_blocking_round_trip(echo):
    obj = {"a": np.arange(1 << 16, dtype=np.float64), "s": "x" * 100}
    echo.send(obj, tag=10, timeout=30)
    back = echo.recv(tag=11, timeout=30)
    assert back["s"] == obj["s"] and np.array_equal(back["a"], obj["a"])


def test_asyncio_round_trips(echo):
    async def main():
        objs = [np.full(1000 + i, i, dtype=np.int32) for i in range(8)]
        got = []
        for i, o in enumerate(objs):
            rreq = echo.irecv(tag=201 + 2 * i)
            await echo.isend(o, tag=200 + 2 * i).wait_async(timeout=30)
            got.append(await rreq.wait_async(timeout=30))
        return objs, got

    objs, got = asyncio.run(main())
    assert all(np.array_equal(a, b) for a, b in zip(objs, got))


def test_asyncio_timeout(echo):
    async def main():
        req = echo.irecv(tag=999)
        with pytest.raises(cdtypes.CdtTimeoutError):
            await req.wait_async(timeout=0.3)
        req.cancel()
        with pytest.raises(cdtypes.CdtError):
            req.wait(timeout=30)

    asyncio.run(main())


def test_event_loop_by_hand(echo):
    """select() on the worker's fd, as a program with its own loop does."""
    w = echo.worker
    fd = w.fileno()
    rreq = echo.irecv(tag=301)
    sreq = echo.isend([1, 2, 3], tag=300)
    for _ in range(2000):
        if rreq.test():
            break
        while w.progress() > 0:
            pass
        if w.arm():
            select.select([fd], [], [], 0.1)
    assert rreq.wait(0) == [1, 2, 3]
    sreq.wait(timeout=30)


def test_sleeper_woken_by_cancel_from_another_thread():
    """One worker, no peer: nothing but the cancel can make the fd readable. The loop sleeps
    on the fd without a timer of its own; a missed wakeup fails the bounded select (2 s)."""
    with ucx.Worker(wakeup=True) as w:
        fd = w.fileno()
        req = w.irecv(tag=4242)
        armed = threading.Event()

        def cancel_when_asleep():
            armed.wait(30)
            time.sleep(0.05)  # most likely inside select by now
            req.cancel()

        canceler = threading.Thread(target=cancel_when_asleep)
        canceler.start()
        try:
            while not req.test():
                while w.progress() > 0:
                    pass
                if req.test():
                    break
                if not w.arm():
                    continue  # events pending: progress again
                armed.set()
                readable, _, _ = select.select([fd], [], [], 2.0)
                assert readable, "missed wakeup: the fd stayed unreadable 2 s after a cancel"
        finally:
            armed.set()
            canceler.join()
        with pytest.raises(cdtypes.CanceledError):
            req.wait(0)
