"""Echo peer for test_ucx.py: listens on a free port (printed on stdout), accepts one
connection, sends every object it receives back with tag + 1, stops at the object "stop"."""
import sys

from cdtypes import ucx

with ucx.listen(host="127.0.0.1") as listener:
    print(listener.port, flush=True)
    with listener.accept(timeout=30) as ep:
        while True:
            req = ep.irecv()
            obj = req.wait(timeout=30)
            if isinstance(obj, str) and obj == "stop":
                break
            ep.send(obj, tag=req.tag + 1, timeout=30)
sys.exit(0)
