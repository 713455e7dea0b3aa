"""Echo peer for test_ucx.py: listens on a free port (printed on stdout), accepts one
connection, sends every object it receives back with tag + 1, stops at the object "stop"."""
import sys

from cdtypes import ucx

with ucx.listen(host="127.0.0.1") as listener:
    print(listener.port, flush=True)
    with listener.accept(timeout=30) as ep:
        while True:
            req = ep.irecv()
            # test_ucx.py's module-wide echo waits here while the module's other tests run
            # (three take about 10 s each, several times that on a loaded machine or PyPy)
            obj = req.wait(timeout=600)
            if isinstance(obj, str) and obj == "stop":
                break
            ep.send(obj, tag=req.tag + 1, timeout=30)
sys.exit(0)
