"""A test peer that sheds load: keep-alive HTTP/1.1 where a share of the answers are fast 503s.

    python3 shed_server.py PORT SHARE [MAX_CONNECTIONS]

SHARE 0 serves every request (200 "Hello, World!"); 0.3 answers every request whose number
modulo 10 is below 3 with a 503 at once, the way an overloaded server sheds. With
MAX_CONNECTIONS, connections beyond that many open ones are closed right after accept (a
server that cannot take the generator's concurrency).
"""

import socket
import sys
import threading

port, share = int(sys.argv[1]), float(sys.argv[2])
limit = int(sys.argv[3]) if len(sys.argv) > 3 else 0
lock = threading.Lock()
state = {"served": 0, "open": 0}
OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 14\r\n\r\nHello, World!\n"
SHED = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nbusy\n"


def handle(conn: socket.socket) -> None:
    buffer = b""
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            buffer += data
            while b"\r\n\r\n" in buffer:
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                for line in head.split(b"\r\n")[1:]:  # drop a body (the echo workload)
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                        while len(buffer) < length:
                            more = conn.recv(65536)
                            if not more:
                                return
                            buffer += more
                        buffer = buffer[length:]
                with lock:
                    n = state["served"]
                    state["served"] += 1
                conn.sendall(SHED if (n % 10) < round(10 * share) else OK)
    except OSError:
        return
    finally:
        conn.close()
        with lock:
            state["open"] -= 1


listener = socket.create_server(("127.0.0.1", port), backlog=512)
while True:
    client, _ = listener.accept()
    with lock:
        full = bool(limit) and state["open"] >= limit
        if not full:
            state["open"] += 1
    if full:
        client.close()
        continue
    threading.Thread(target=handle, args=(client,), daemon=True).start()
