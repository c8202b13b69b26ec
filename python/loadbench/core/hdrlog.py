"""HdrHistogram's standard V2 encoding and log format, in plain Python.

The generator records latency with exactly HdrHistogram's bucket layout, so its counts array
can be written the way every HdrHistogram implementation (Java, C, Go, the `hdrhistogram`
PyPI package) reads it: zig-zag LEB128 counts (runs of zeros as one negative number), a
40-byte big-endian header, zlib, and base64 - the "HISTFAAA..." strings of a histogram log.
"""

from __future__ import annotations

import base64
import math
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence, Union

import numpy as np

_ENCODING_COOKIE = 0x1C849303 | 0x10  # V2 payload, as HdrHistogram writes it
_COMPRESSION_COOKIE = 0x1C849304 | 0x10  # V2 compressed wrapper
_PAYLOAD_HEADER = struct.Struct(
    ">iiiiqqd"
)  # cookie, payload length, normalizing offset, sig figs, lowest, highest, ratio
_OUTER_HEADER = struct.Struct(">ii")


@dataclass(frozen=True)
class Layout:
    """HdrHistogram's bucket arithmetic for (lowest, highest, significant figures)."""

    lowest: int
    highest: int
    significant_figures: int

    @property
    def unit_magnitude(self) -> int:
        return int(math.floor(math.log2(self.lowest)))

    @property
    def sub_bucket_half_count_magnitude(self) -> int:
        return max(int(math.ceil(math.log2(2 * 10**self.significant_figures))), 1) - 1

    @property
    def counts_length(self) -> int:
        sub_bucket_count = 1 << (self.sub_bucket_half_count_magnitude + 1)
        smallest_untrackable = sub_bucket_count << self.unit_magnitude
        buckets = 1
        while smallest_untrackable <= self.highest:
            if smallest_untrackable > (2**63 - 1) // 2:
                buckets += 1
                break
            smallest_untrackable <<= 1
            buckets += 1
        return (buckets + 1) * (sub_bucket_count // 2)

    def index_values(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(lowest equivalent value, equivalent range) of each of the first n indexes."""
        magnitude = self.sub_bucket_half_count_magnitude
        half = 1 << magnitude
        idx = np.arange(n, dtype=np.int64)
        bucket = (idx >> magnitude) - 1
        sub = (idx & (half - 1)) + half
        first = bucket < 0
        sub[first] -= half
        bucket[first] = 0
        shift = bucket + self.unit_magnitude
        return sub << shift, np.left_shift(np.int64(1), shift)


def _zigzag_leb128(values: Iterable[int]) -> bytes:
    out = bytearray()
    for v in values:
        z = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF
        for _ in range(8):
            if z < 0x80:
                break
            out.append((z & 0x7F) | 0x80)
            z >>= 7
        else:
            out.append(z & 0xFF)  # the 9th byte carries 8 bits
            continue
        out.append(z)
    return bytes(out)


def _read_zigzag_leb128(data: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    for i in range(9):
        b = data[pos]
        pos += 1
        if i == 8:
            result |= b << 56
            break
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            break
    value = (result >> 1) ^ -(result & 1)
    return value, pos


def encode(counts: Sequence[int], lowest: int, highest: int, significant_figures: int) -> str:
    """The compressed, base64 V2 encoding ("HISTFAAA...") of a counts array."""
    counts = np.asarray(counts, dtype=np.int64)
    nonzero = np.flatnonzero(counts)
    limit = int(nonzero[-1]) + 1 if nonzero.size else 0
    items: list[int] = []
    i = 0
    while i < limit:
        c = int(counts[i])
        if c == 0:
            run = 1
            while i + run < limit and counts[i + run] == 0:
                run += 1
            items.append(-run)
            i += run
        else:
            items.append(c)
            i += 1
    payload = _zigzag_leb128(items)
    header = _PAYLOAD_HEADER.pack(
        _ENCODING_COOKIE, len(payload), 0, significant_figures, lowest, highest, 1.0
    )
    compressed = zlib.compress(header + payload)
    return base64.b64encode(
        _OUTER_HEADER.pack(_COMPRESSION_COOKIE, len(compressed)) + compressed
    ).decode("ascii")


def decode(text: str) -> tuple[np.ndarray, Layout]:
    """Counts array (full length for its layout) and layout of a base64 V2 histogram."""
    raw = base64.b64decode(text)
    cookie, length = _OUTER_HEADER.unpack_from(raw)
    if cookie & ~0xF0 != 0x1C849304:
        raise ValueError("not a compressed V2 HdrHistogram encoding")
    data = zlib.decompress(raw[_OUTER_HEADER.size : _OUTER_HEADER.size + length])
    cookie, payload_len, _offset, sig, lowest, highest, _ratio = _PAYLOAD_HEADER.unpack_from(data)
    if cookie & ~0xF0 != 0x1C849303:
        raise ValueError("not a V2 HdrHistogram payload")
    layout = Layout(lowest, highest, sig)
    counts = np.zeros(layout.counts_length, dtype=np.int64)
    pos = _PAYLOAD_HEADER.size
    end = pos + payload_len
    index = 0
    while pos < end:
        value, pos = _read_zigzag_leb128(data, pos)
        if value < 0:
            index += -value
        else:
            counts[index] = value
            index += 1
    return counts, layout


def write_log(
    path: Union[str, Path],
    intervals: Sequence[tuple[float, float, str, float]],
    start_time: float | None = None,
    comment: str = "",
) -> Path:
    """A standard HdrHistogram interval log (version 1.3).

    intervals: (start seconds relative to start_time, length seconds, encoded histogram,
    interval max in milliseconds).
    """
    path = Path(path)
    start = time.time() if start_time is None else start_time
    lines = []
    if comment:
        lines.append(f"#{comment}")
    lines.append("#[Histogram log format version 1.3]")
    lines.append(
        f"#[StartTime: {start:.3f} (seconds since epoch), {time.strftime('%a %b %d %H:%M:%S %Z %Y', time.localtime(start))}]"
    )
    lines.append(
        '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"'
    )
    for begin, length, encoded, max_ms in intervals:
        lines.append(f"{begin:.3f},{length:.3f},{max_ms:.3f},{encoded}")
    path.write_text("\n".join(lines) + "\n")
    return path
