"""Peer of test_ucx_threads.py: listens on a free port (printed on stdout), accepts one
connection, then serves commands that arrive on tag 0:

    ("burst", {tag: count}, sinks, may_close)
        send `count` objects (tag, i, payload, array) on each tag, taking turns between the
        tags; then receive `sinks` objects on tag 1 (the test's senders); then send "done" on
        tag 2.
        may_close: the test closes the connection part-way (exit 0 when it is gone)
    "stop"
        exit 0

Receives time out after 60 s (the test's own watchdog fires long before)."""
import sys

import numpy as np

import cdtypes
from cdtypes import ucx

PAYLOAD = b"p" * 100
ARRAY = np.arange(16)  # one out-of-band buffer: the receiver's allocator runs for every object

with ucx.listen(host="127.0.0.1") as listener:
    print(listener.port, flush=True)
    with listener.accept(timeout=30) as ep:
        while True:
            cmd = ep.recv(tag=0, timeout=60)
            if isinstance(cmd, str) and cmd == "stop":
                break
            _, counts, sinks, may_close = cmd
            try:
                left = dict(counts)
                i = 0
                while left:
                    for tag in list(left):
                        ep.send((tag, i, PAYLOAD, ARRAY), tag=tag, timeout=60)
                        left[tag] -= 1
                        if left[tag] == 0:
                            del left[tag]
                    i += 1
                for _ in range(sinks):
                    ep.recv(tag=1, timeout=60)
                ep.send("done", tag=2, timeout=60)
            except cdtypes.CdtError:
                if not may_close:
                    raise
                sys.exit(0)
sys.exit(0)
