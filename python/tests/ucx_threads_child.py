"""Child of test_ucx_threads.py: threads that receive (and send) on ONE endpoint of one worker
while ucx_burst_peer.py sends to all their tags at once.

    ucx_threads_child.py PORT JSON
    JSON: {"receivers": [tag of each receiving thread], "count": receives per thread,
           "senders": sending threads, "sends": objects each sends (to the peer's tag 1),
           "close_after": None, or receives after which a thread closes the endpoint,
           "yield_in_alloc": receive with an allocator that lets the other threads run (it
           sleeps: the GIL is released inside the worker's progress), "watchdog": seconds}

A watchdog (faulthandler, outside the GIL) prints every thread's stack and exits 1 when the
threads have not finished in time: a deadlock fails the test instead of hanging it. Exits 0
when every thread received what it should (in close mode: until the endpoint was closed, then
a clean error), 2 with a message otherwise."""
import faulthandler
import json
import sys
import threading
import time

import cdtypes
from cdtypes import ucx

port, cfg = int(sys.argv[1]), json.loads(sys.argv[2])
# threads take turns as often as the interpreter allows: races between them show up sooner
sys.setswitchinterval(1e-6)
faulthandler.dump_traceback_later(cfg["watchdog"], exit=True)

tags, count = cfg["receivers"], cfg["count"]
close_after = cfg["close_after"]
closing = close_after is not None
problems = []
received = []  # one entry per object received, by any thread (list.append is atomic)
closed = threading.Event()

worker = ucx.Worker()  # not owned by the endpoint: closing the endpoint leaves it to the threads
ep = worker.connect("127.0.0.1", port, timeout=30)
per_tag = {}
for t in tags:
    per_tag[t] = per_tag.get(t, 0) + count
ep.send(("burst", per_tag, cfg["senders"] * cfg["sends"], closing), tag=0, timeout=30)


def yielding_alloc(n):
    time.sleep(0.0001)  # every other thread may take the GIL now
    return bytearray(n)


alloc = yielding_alloc if cfg.get("yield_in_alloc") else None


def receiver(tag):
    seen = []
    try:
        for _ in range(count):
            # in close mode a receive whose message never comes ends with a timeout
            obj = ep.recv(tag=tag, timeout=2 if closing else None, alloc=alloc)
            if obj[0] != tag:
                problems.append("tag %d received an object sent to tag %d" % (tag, obj[0]))
                return
            seen.append(obj[1])
            received.append(tag)
    except cdtypes.CdtError as e:
        if not (closing and closed.is_set()):
            problems.append("tag %d: %r" % (tag, e))
        return
    if seen != sorted(seen):
        problems.append("tag %d: objects out of order" % tag)


def sender():
    try:
        for i in range(cfg["sends"]):
            ep.send(("to peer", i), tag=1, timeout=30)
    except cdtypes.CdtError as e:
        problems.append("send: %r" % (e,))


def closer(receivers):
    while len(received) < close_after and any(t.is_alive() for t in receivers):
        threading.Event().wait(0.001)
    ep.close(timeout=1.0)
    closed.set()


receivers = [threading.Thread(target=receiver, args=(t,)) for t in tags]
threads = receivers + [threading.Thread(target=sender) for _ in range(cfg["senders"])]
if closing:
    threads.append(threading.Thread(target=closer, args=(receivers,)))
for t in threads:
    t.start()
for t in threads:
    t.join()

if not closing:
    if len(received) != len(tags) * count:
        problems.append("%d objects received, %d expected" % (len(received), len(tags) * count))
    if not problems:
        done = ep.recv(tag=2, timeout=30)
        if done != "done":
            problems.append("the peer answered %r" % (done,))
        ep.send("stop", tag=0, timeout=30)
    ep.close()
worker.close()
faulthandler.cancel_dump_traceback_later()
if problems:
    print("\n".join(problems), file=sys.stderr)
    sys.exit(2)
sys.exit(0)
