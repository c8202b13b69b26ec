"""HdrHistogram's standard V2 encoding and log format, in plain Python.

The generator records latency with exactly HdrHistogram's bucket layout, so its counts array
can be written the way every HdrHistogram implementation (Java, C, Go, the `hdrhistogram`
PyPI package) reads it: zig-zag LEB128 counts (runs of zeros as one negative number), a
40-byte big-endian header, zlib, and base64 - the "HISTFAAA..." strings of a histogram log.
"""

from __future__ import annotations

import base64
import functools
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
        """(lowest equivalent value, equivalent range) of each of the first n indexes, read-only
        (shared by every histogram of this layout: a report builds thousands)."""
        return _index_values(self, n)

    def _compute_index_values(self, n: int) -> tuple[np.ndarray, np.ndarray]:
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


@functools.lru_cache(maxsize=16)
def _index_values(layout: Layout, n: int) -> tuple[np.ndarray, np.ndarray]:
    low, width = layout._compute_index_values(n)
    low.setflags(write=False)
    width.setflags(write=False)
    return low, width


# Zig-zag LEB128 over whole arrays: a result holds thousands of counts and a report reads
# thousands of results (a byte-at-a-time Python loop made reading every committed result take
# 84 s). Values that need the 9th byte (|count| >= 2**55) take the plain loop below instead.
_LEB128_FAST_LIMIT = 1 << 56  # zig-zagged values below this fit 8 groups of 7 bits


def _zigzag(values: np.ndarray) -> np.ndarray:
    v = values.astype(np.int64)
    return ((v << 1) ^ (v >> 63)).view(np.uint64)


def _zigzag_leb128(values: np.ndarray) -> bytes:
    z = _zigzag(np.asarray(values, dtype=np.int64))
    if z.size and int(z.max()) >= _LEB128_FAST_LIMIT:
        return _zigzag_leb128_loop(z)
    nbytes = np.ones(z.size, dtype=np.int64)
    for k in range(1, 8):
        nbytes += z >= np.uint64(1 << (7 * k))
    offsets = np.cumsum(nbytes) - nbytes
    out = np.empty(int(nbytes.sum()), dtype=np.uint8)
    for j in range(8):
        has = nbytes > j
        if not has.any():
            break
        group = (z[has] >> np.uint64(7 * j)) & np.uint64(0x7F)
        more = (nbytes[has] > j + 1).astype(np.uint64) << np.uint64(7)
        out[offsets[has] + j] = (group | more).astype(np.uint8)
    return out.tobytes()


def _zigzag_leb128_loop(zigzagged: Iterable[int]) -> bytes:
    out = bytearray()
    for z in (int(v) for v in zigzagged):
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


def _read_zigzag_leb128(data: bytes) -> np.ndarray:
    """Every zig-zag LEB128 value in `data`, in order."""
    b = np.frombuffer(data, dtype=np.uint8)
    if not b.size:
        return np.zeros(0, dtype=np.int64)
    last = b < 0x80  # the last byte of each value
    ends = np.flatnonzero(last)
    starts = np.concatenate(([0], ends[:-1] + 1)) if ends.size else np.zeros(0, dtype=np.int64)
    if not last[-1] or (ends.size and int((ends - starts).max()) >= 8):
        return _read_zigzag_leb128_loop(data)  # a 9-byte value, or a cut-off payload
    group = np.cumsum(last) - last  # the value each byte belongs to
    shift = (np.arange(b.size) - starts[group]) * 7
    parts = (b & 0x7F).astype(np.uint64) << shift.astype(np.uint64)
    result = np.add.reduceat(parts, starts)  # disjoint bits: the sum is the OR
    return (result >> np.uint64(1)).astype(np.int64) ^ -(result & np.uint64(1)).astype(np.int64)


def _read_zigzag_leb128_loop(data: bytes) -> np.ndarray:
    values = []
    pos = 0
    while pos < len(data):
        result = 0
        shift = 0
        for i in range(9):
            if pos >= len(data):
                raise ValueError("HdrHistogram payload ends inside a count")
            b = data[pos]
            pos += 1
            if i == 8:
                result |= b << 56
                break
            result |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        values.append((result >> 1) ^ -(result & 1))
    return np.array(values, dtype=np.int64)


def encode(counts: Sequence[int], lowest: int, highest: int, significant_figures: int) -> str:
    """The compressed, base64 V2 encoding ("HISTFAAA...") of a counts array."""
    counts = np.asarray(counts, dtype=np.int64)
    nonzero = np.flatnonzero(counts)
    limit = int(nonzero[-1]) + 1 if nonzero.size else 0
    counts = counts[:limit]
    # Each count in order, a run of zeros as one negative item (minus its length).
    edges = np.diff(np.concatenate(([0], (counts == 0).astype(np.int8), [0])))
    run_starts, run_ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    nonzero = nonzero[nonzero < limit]
    order = np.argsort(np.concatenate((nonzero, run_starts)), kind="stable")
    items = np.concatenate((counts[nonzero], run_starts - run_ends))[order]
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
    start = _PAYLOAD_HEADER.size
    items = _read_zigzag_leb128(data[start : start + payload_len])
    # a count takes one index, a negative item skips that many
    steps = np.where(items < 0, -items, 1)
    index = np.cumsum(steps) - steps
    present = items >= 0
    if present.any() and int(index[present][-1]) >= len(counts):
        raise ValueError("HdrHistogram payload has more counts than its layout")
    counts[index[present]] = items[present]
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
