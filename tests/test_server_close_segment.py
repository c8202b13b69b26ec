"""The native server's last response on a closing connection leaves in one segment with its FIN
(cpp/core/server/connection.hpp, write_out: MSG_MORE before the close), and the client gets
exactly the same bytes and the same orderly close as before. Seen on the wire: a packet socket
on the loopback interface (root only: CAP_NET_RAW) records every TCP segment the server sends."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest
from server_helpers import connect, read_response

ETH_P_ALL = 0x0003
FIN, RST = 0x01, 0x04


class ServerSegments:
    """TCP segments sent from `port` on lo, recorded from a packet socket in a thread:
    (flags, payload length) for each."""

    def __init__(self, port: int):
        try:
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except PermissionError:
            pytest.skip("a packet socket needs root (CAP_NET_RAW)")
        self.sock.bind(("lo", 0))
        self.sock.settimeout(0.1)
        self.port, self.segments, self.running = port, [], True
        self.thread = threading.Thread(target=self._record, daemon=True)
        self.thread.start()

    def _record(self) -> None:
        while self.running:
            try:
                frame, address = self.sock.recvfrom(65535)
            except TimeoutError:
                continue
            if address[2] == socket.PACKET_OUTGOING:  # lo shows each packet twice: keep the arrival
                continue
            ip = frame[14:]
            if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != socket.IPPROTO_TCP:
                continue
            ihl = (ip[0] & 0x0F) * 4
            total = struct.unpack_from("!H", ip, 2)[0]
            tcp = ip[ihl:]
            source_port = struct.unpack_from("!H", tcp, 0)[0]
            if source_port != self.port:
                continue
            offset = (tcp[12] >> 4) * 4
            self.segments.append((tcp[13], total - ihl - offset))

    def stop(self) -> list[tuple[int, int]]:
        time.sleep(0.2)  # the last ACKs
        self.running = False
        self.thread.join()
        self.sock.close()
        return self.segments


def test_the_last_response_and_the_fin_share_one_segment(beast_server):
    n = 20
    wire = ServerSegments(beast_server.http_port)
    for _ in range(n):
        with connect(beast_server.http_port) as s:
            s.sendall(b"GET /plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            stream = s.makefile("rb")
            response = read_response(stream)
            assert (response.status, response.body) == (200, b"Hello, World!\n")
            assert response.headers.get("connection") == "close"
            assert stream.read() == b""  # an orderly close (FIN), no reset
    segments = wire.stop()
    fins = [(flags, length) for flags, length in segments if flags & FIN]
    assert len(fins) == n
    assert all(length > 0 for _, length in fins), fins  # every FIN carries the response's tail
    assert not any(flags & RST for flags, _ in segments)


def test_keep_alive_responses_are_not_held_back(beast_server):
    # MSG_MORE only before a close: a keep-alive response must leave at once, or the client
    # would wait for it. Each answer arrives while the connection stays open.
    with connect(beast_server.http_port) as s:
        s.settimeout(2)
        stream = s.makefile("rb")
        for _ in range(5):
            s.sendall(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
            response = read_response(stream)
            assert (response.status, response.body) == (200, b"Hello, World!\n")
