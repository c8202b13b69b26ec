"""A single-threaded HTTP/1.1 server whose capacity is known by construction: every request
costs exactly COST_MS of CPU (a busy loop), one at a time, so pinned to one core it answers at
most 1000 / COST_MS requests per second (a little less: parsing and writing cost too).

    python3 tests/fixed_cost_server.py PORT_FILE COST_MS [STALL_AFTER_S STALL_MS]

writes its port to PORT_FILE once listening. With STALL_AFTER_S and STALL_MS it freezes once,
for STALL_MS, STALL_AFTER_S seconds after its first request (a GC pause, a blocked disk write).
"""

from __future__ import annotations

import selectors
import socket
import sys
import time

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


def spin(seconds: float) -> None:
    """Burn ``seconds`` of this thread's CPU time (not wall time: a preempted server still
    spends exactly the cost per request)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def main() -> None:
    port_file, cost = sys.argv[1], float(sys.argv[2]) / 1000
    stall_after = float(sys.argv[3]) if len(sys.argv) > 3 else None
    stall = float(sys.argv[4]) / 1000 if len(sys.argv) > 4 else 0.0
    listener = socket.create_server(("127.0.0.1", 0), backlog=1024)
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
