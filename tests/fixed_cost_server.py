"""A single-threaded HTTP/1.1 server whose capacity is known by construction: every request
costs exactly COST_MS of CPU (a busy loop), one at a time, so pinned to one core it answers at
most 1000 / COST_MS requests per second (a little less: parsing and writing cost too).

    python3 tests/fixed_cost_server.py PORT_FILE COST_MS [STALL_AFTER_S STALL_MS] [--cold N:MS]
                                       [--listen PORT] [--alternate COUNTER_FILE:MS]

writes its port to PORT_FILE once listening. With STALL_AFTER_S and STALL_MS it freezes once,
for STALL_MS, STALL_AFTER_S seconds after its first request (a GC pause, a blocked disk write).
With --cold N:MS its cost per request falls linearly from MS to COST_MS over its first N
requests (a JIT runtime compiling its hot path as it runs): its throughput climbs all along
them, and it is steady only after them. With --listen it binds PORT instead of a free one (a
sweep's command target passes its {port}). With --alternate every second process started on
the same COUNTER_FILE costs MS instead of COST_MS (the 1st, 3rd, ... COST_MS; the 2nd, 4th, ...
MS): a server whose speed changes from one fresh process to the next, as CPython's does
(reports/server-modes.md).
"""

from __future__ import annotations

import selectors
import socket
import sys
import time
from pathlib import Path

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


def spin(seconds: float) -> None:
    """Burn ``seconds`` of this thread's CPU time (not wall time: a preempted server still
    spends exactly the cost per request)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def main() -> None:
    args = list(sys.argv[1:])
    cold_left, cold_cost = 0, 0.0
    if "--cold" in args:
        i = args.index("--cold")
        n, ms = args[i + 1].split(":")
        cold_left, cold_cost = int(n), float(ms) / 1000
        del args[i : i + 2]
    cold_total = max(cold_left, 1)
    listen = 0
    if "--listen" in args:
        i = args.index("--listen")
        listen = int(args[i + 1])
        del args[i : i + 2]
    alternate = None
    if "--alternate" in args:
        i = args.index("--alternate")
        alternate = args[i + 1].rsplit(":", 1)
        del args[i : i + 2]
    port_file, cost = args[0], float(args[1]) / 1000
    if alternate is not None:
        counter = Path(alternate[0])
        started = int(counter.read_text() or 0) if counter.exists() else 0
        counter.write_text(str(started + 1))
        if started % 2:
            cost = float(alternate[1]) / 1000
    stall_after = float(args[2]) if len(args) > 2 else None
    stall = float(args[3]) / 1000 if len(args) > 3 else 0.0
    listener = socket.create_server(("127.0.0.1", listen), backlog=1024)
    listener.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, None)
    buffers: dict[socket.socket, bytes] = {}
    with open(port_file + ".tmp", "w") as f:
        f.write(str(listener.getsockname()[1]))
    import os

    os.replace(port_file + ".tmp", port_file)
    first = None
    stalled = False
    while True:
        for key, _ in sel.select():
            if key.data is None:
                try:
                    conn, _ = listener.accept()
                except BlockingIOError:
                    continue
                conn.setblocking(False)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sel.register(conn, selectors.EVENT_READ, "conn")
                buffers[conn] = b""
                continue
            conn = key.fileobj
            try:
                data = conn.recv(65536)
            except (BlockingIOError, ConnectionError):
                data = b"" if not isinstance(sys.exc_info()[1], BlockingIOError) else None
            if data is None:
                continue
            if not data:
                sel.unregister(conn)
                buffers.pop(conn, None)
                conn.close()
                continue
            buf = buffers[conn] + data
            out = b""
            while b"\r\n\r\n" in buf:  # GET requests: no body
                _, buf = buf.split(b"\r\n\r\n", 1)
                now = time.perf_counter()
                first = first or now
                if stall_after is not None and not stalled and now - first >= stall_after:
                    stalled = True
                    time.sleep(stall)
                if cold_left:
                    spin(cost + (cold_cost - cost) * cold_left / cold_total)
                    cold_left -= 1
                else:
                    spin(cost)
                out += RESPONSE
            buffers[conn] = buf
            if out:
                try:
                    conn.sendall(out)
                except (BlockingIOError, ConnectionError):
                    sel.unregister(conn)
                    buffers.pop(conn, None)
                    conn.close()


if __name__ == "__main__":
    main()
