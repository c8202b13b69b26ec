"""A test peer that serves GET / with keep-alive and exits (code 3) after N requests.

    python3 dies_after.py PORT N

It stands for a peer that crashes mid-sweep: the sweep must record FAIL cells and go on.
"""

import os
import socket
import sys
import threading

port, limit = int(sys.argv[1]), int(sys.argv[2])
served = 0
lock = threading.Lock()
RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 14\r\n\r\nHello, World!\n"
)


def handle(conn: socket.socket) -> None:
    global served
    buffer = b""
    with conn:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            buffer += data
            while b"\r\n\r\n" in buffer:
                _, buffer = buffer.split(b"\r\n\r\n", 1)
                with lock:
                    served += 1
                    if served > limit:
                        sys.stderr.write(f"served {limit} requests, exiting\n")
                        sys.stderr.flush()
                        os._exit(3)
                conn.sendall(RESPONSE)


listener = socket.create_server(("127.0.0.1", port))
while True:
    client, _ = listener.accept()
    threading.Thread(target=handle, args=(client,), daemon=True).start()
