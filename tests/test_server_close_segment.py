"""The native server's last response on a closing connection leaves in one segment with its FIN
(cpp/core/server/h1/connection.hpp, write_out: MSG_MORE before the close), and the client gets
exactly the same bytes and the same orderly close as before. Seen on the wire: a packet socket
on the loopback interface (root only: CAP_NET_RAW) records every TCP segment the server sends."""

from __future__ import annotations

import ctypes
import socket
import struct
import threading
import time

import pytest
from server_helpers import connect, read_response

ETH_P_ALL = 0x0003
FIN, RST = 0x01, 0x04
SO_ATTACH_FILTER = 26  # <asm-generic/socket.h>; the socket module does not name it


def _only_tcp_from(port: int) -> bytes:
    """A classic BPF program (SO_ATTACH_FILTER) that keeps IPv4 TCP frames from `port`: the
    kernel then queues this test's segments only, not the whole machine's loopback traffic (the
    suite's other worker runs load tests on lo: unfiltered, the socket's queue overflowed and
    dropped 17 of 20 FINs)."""
    program = [  # (code, jump if true, jump if false, k), jumps relative to the next one
        (0x28, 0, 0, 12),  # ldh [12]: the ethertype
        (0x15, 0, 6, 0x0800),  # IPv4, else drop
        (0x30, 0, 0, 23),  # ldb [23]: the IP protocol
        (0x15, 0, 4, socket.IPPROTO_TCP),  # TCP, else drop
        (0xB1, 0, 0, 14),  # ldxb 4*([14]&0xf): the IP header's length
        (0x48, 0, 0, 14),  # ldh [x+14]: the TCP source port
        (0x15, 0, 1, port),  # ours, else drop
        (0x06, 0, 0, 0xFFFF),  # keep the frame
        (0x06, 0, 0, 0),  # drop it
    ]
    return b"".join(struct.pack("HBBI", *op) for op in program)


class ServerSegments:
    """TCP segments sent from `port` on lo, recorded from a packet socket in a thread:
    (flags, payload length) for each."""

    def __init__(self, port: int):
        try:
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except PermissionError:
            pytest.skip("a packet socket needs root (CAP_NET_RAW)")
        program = _only_tcp_from(port)
        self._program = ctypes.create_string_buffer(program)  # alive while the filter is
        fprog = struct.pack("HP", len(program) // 8, ctypes.addressof(self._program))
        self.sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
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
            self._take(frame, address)

    def _take(self, frame: bytes, address: tuple) -> None:
        if address[2] == socket.PACKET_OUTGOING:  # lo shows each packet twice: keep the arrival
            return
        ip = frame[14:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != socket.IPPROTO_TCP:
            return
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack_from("!H", ip, 2)[0]
        tcp = ip[ihl:]
        source_port = struct.unpack_from("!H", tcp, 0)[0]
        if source_port != self.port:
            return
        offset = (tcp[12] >> 4) * 4
        self.segments.append((tcp[13], total - ihl - offset))

    def stop(self) -> list[tuple[int, int]]:
        time.sleep(0.2)  # the last ACKs
        self.running = False
        self.thread.join()
        # what the kernel queued that the thread had not read yet (a busy machine delays it)
        self.sock.setblocking(False)
        while True:
            try:
                self._take(*self.sock.recvfrom(65535))
            except BlockingIOError:
                break
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
