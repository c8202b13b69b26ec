"""Writes the seed corpus of server_h3_fuzz (cpp/tests/fuzz/corpus/server_h3_fuzz/).

Valid HTTP/3 client streams in the target's input format (see server_h3_fuzz.cpp): byte 0
chooses the read size and whether the client's control stream is prepended (bit 7) with a
QPACK dynamic table allowed (bit 6); then chunks - a header byte (stream in the low nibble,
FIN in bit 4, the length's high bits in 5-7), the length's low byte, the bytes - or actions.
QPACK field sections come from pylsqpack (aioquic's QPACK, installed with the test
dependencies), except the literal one, built by hand.

    python3 cpp/tests/fuzz/make_server_h3_seeds.py
"""

from __future__ import annotations

from pathlib import Path

import pylsqpack

OUT = Path(__file__).resolve().parent / "corpus" / "server_h3_fuzz"

PREAMBLE = 0x80  # the client's control stream and SETTINGS, prepended by the target
DYNAMIC_TABLE = 0x40  # that SETTINGS allows a 4 KiB QPACK dynamic table
CONTROL, ENCODER, DECODER, ACTION = 12, 13, 14, 15
GOAWAY, RESET, STOP_SENDING, LATE = 0, 1, 2, 3


def varint(n: int) -> bytes:
    if n < 0x40:
        return bytes([n])
    if n < 0x4000:
        return (0x4000 | n).to_bytes(2, "big")
    return (0x80000000 | n).to_bytes(4, "big")


def frame(kind: int, payload: bytes) -> bytes:
    return varint(kind) + varint(len(payload)) + payload


def chunk(target: int, data: bytes, fin: bool = False) -> bytes:
    assert len(data) < 2048
    return bytes([target | (0x10 if fin else 0) | ((len(data) >> 8) << 5), len(data) & 0xFF]) + data


def action(kind: int, stream_index: int | None = None) -> bytes:
    return bytes([ACTION | (kind << 4)]) + (b"" if stream_index is None else bytes([stream_index]))


def request(
    method: str, path: str, extra: list[tuple[str, str]] | None = None
) -> list[tuple[bytes, bytes]]:
    fields = [
        (":method", method),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", path),
    ]
    return [(n.encode(), v.encode()) for n, v in fields + (extra or [])]


def static_headers(stream_id: int, fields: list[tuple[bytes, bytes]]) -> bytes:
    encoder = pylsqpack.Encoder()
    encoder.apply_settings(max_table_capacity=0, blocked_streams=0)
    _, block = encoder.encode(stream_id, fields)
    return frame(0x01, block)


def prefixed(value: int, bits: int, flags: int) -> bytes:
    # An integer with an N-bit prefix (RFC 7541 5.1, as QPACK uses it).
    limit = (1 << bits) - 1
    if value < limit:
        return bytes([flags | value])
    out, value = bytearray([flags | limit]), value - limit
    while value >= 0x80:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    return bytes(out + bytes([value]))


def literal_headers(fields: list[tuple[bytes, bytes]]) -> bytes:
    # Required Insert Count 0, Base 0, then every field a literal with a literal name (RFC 9204
    # 4.5.6: 001 N H and a 3-bit name length prefix, then the value with a 7-bit prefix; no Huffman).
    block = b"\x00\x00"
    for name, value in fields:
        block += prefixed(len(name), 3, 0x20) + name + prefixed(len(value), 7, 0x00) + value
    return frame(0x01, block)


def seeds() -> dict[str, bytes]:
    get_root = static_headers(0, request("GET", "/"))
    s: dict[str, bytes] = {}
    s["control_settings_only"] = bytes([0]) + (
        chunk(CONTROL, b"\x00" + frame(0x04, b"\x01\x50\x00\x07\x10"))
        + chunk(ENCODER, b"\x02")
        + chunk(DECODER, b"\x03")
    )
    s["control_and_get"] = bytes([0]) + (
        chunk(CONTROL, b"\x00" + frame(0x04, b"")) + chunk(0, get_root, fin=True)
    )
    s["get_root"] = bytes([PREAMBLE]) + chunk(0, get_root, fin=True)
    s["get_json_small_pieces"] = bytes([PREAMBLE | 3]) + chunk(
        0, static_headers(0, request("GET", "/json")), fin=True
    )
    s["head_root"] = bytes([PREAMBLE]) + chunk(0, static_headers(0, request("HEAD", "/")), fin=True)
    body = b"hello, echo"
    post = static_headers(
        0,
        request(
            "POST", "/echo", [("content-type", "text/plain"), ("content-length", str(len(body)))]
        ),
    )
    s["post_echo"] = bytes([PREAMBLE]) + chunk(0, post + frame(0x00, body), fin=True)
    s["post_echo_in_two_chunks"] = bytes([PREAMBLE | 5]) + (
        chunk(0, post + frame(0x00, body[:4])) + chunk(0, frame(0x00, body[4:]), fin=True)
    )
    big = static_headers(0, request("POST", "/echo", [("content-length", "100000")]))
    s["post_too_large_by_length"] = bytes([PREAMBLE]) + chunk(0, big + frame(0x00, b"x" * 64))
    s["post_too_large_by_data"] = bytes([PREAMBLE]) + (
        chunk(0, static_headers(0, request("POST", "/echo")))
        + b"".join(chunk(0, frame(0x00, b"y" * 1500)) for _ in range(3))
        + chunk(0, b"", fin=True)
    )
    s["header_too_large"] = bytes([PREAMBLE]) + chunk(
        0, static_headers(0, request("GET", "/", [("x-big", "z" * 1200)])), fin=True
    )
    s["literal_headers"] = bytes([PREAMBLE]) + chunk(
        0, literal_headers(request("GET", "/json") + [(b"x-a", b"b")]), fin=True
    )
    s["delay"] = bytes([PREAMBLE]) + chunk(
        0, static_headers(0, request("GET", "/delay?ms=5")), fin=True
    )
    s["not_found_and_405"] = bytes([PREAMBLE]) + (
        chunk(0, static_headers(0, request("GET", "/nowhere")), fin=True)
        + chunk(1, static_headers(4, request("DELETE", "/json")), fin=True)
    )

    dynamic = pylsqpack.Encoder()
    capacity = dynamic.apply_settings(max_table_capacity=4096, blocked_streams=16)
    repeated = request("GET", "/json", [("x-test", "abc")])
    encoder_stream, requests = b"\x02" + capacity, []
    for stream_id in (0, 4, 8):
        instructions, block = dynamic.encode(stream_id, repeated)
        encoder_stream += instructions
        requests.append(frame(0x01, block))
    s["qpack_dynamic_table"] = bytes([PREAMBLE | DYNAMIC_TABLE]) + (
        chunk(ENCODER, encoder_stream)
        + b"".join(chunk(i, r, fin=True) for i, r in enumerate(requests))
    )
    s["qpack_blocked_then_unblocked"] = bytes([PREAMBLE | DYNAMIC_TABLE]) + (
        chunk(1, requests[1], fin=True) + chunk(ENCODER, encoder_stream)
    )

    s["four_streams_then_goaway"] = bytes([PREAMBLE]) + (
        b"".join(chunk(i, static_headers(4 * i, request("GET", "/")), fin=True) for i in range(4))
        + action(GOAWAY)
        + chunk(4, static_headers(16, request("GET", "/")), fin=True)
    )
    s["reset_mid_body"] = bytes([PREAMBLE]) + (
        chunk(0, post + frame(0x00, body[:3])) + action(RESET, 0)
    )
    s["stop_sending_after_request"] = bytes([PREAMBLE]) + (
        chunk(0, static_headers(0, request("GET", "/delay?ms=1")), fin=True)
        + action(STOP_SENDING, 0)
    )
    s["trailers"] = bytes([PREAMBLE]) + chunk(
        0,
        static_headers(0, request("POST", "/echo"))
        + frame(0x00, body)
        + static_headers(0, [(b"x-checksum", b"1234")]),
        fin=True,
    )
    # Required Insert Count 1, Base 1, the dynamic entry 0: blocked for good (no insertion comes).
    s["trailers_blocked_on_qpack"] = bytes([PREAMBLE]) + chunk(
        0, static_headers(0, request("POST", "/echo")) + frame(0x01, b"\x02\x00\x80"), fin=True
    )
    s["late_header_section"] = bytes([PREAMBLE]) + chunk(0, get_root[:5]) + action(LATE)
    return s


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in seeds().items():
        (OUT / name).write_bytes(data)
        print(f"{OUT / name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
