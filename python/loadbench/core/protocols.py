"""The protocols a sweep measures, declared once: one :class:`Protocol` record each.

A sweep cell, a report table, a chart and a bench driver all name a protocol by its sweep name
(``http``, ``https``, ``h2c``, ``h2``, ``h3``); everything else about it - what
``loadbench.run(protocol=...)`` takes for it, whether it is served with a certificate, whether
its cells run streams per connection, which family the headline compares it within, and the
words a table, a sentence or a chart gives it - is a field here. A fifth protocol is one more
record (and its Session in the engine), not an edit of every table that lists the four.

    get("h2c").wire              # "h2"
    names(family="HTTP/2")       # ("h2c", "h2")
    names(tls=True)              # ("https", "h2", "h3")

Also the spellings ``loadbench run --protocol`` accepts for a wire protocol (:data:`WIRE_ALIASES`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Optional

from .errors import ConfigError


@dataclass(frozen=True)
class Protocol:
    """One protocol a sweep measures."""

    name: str  # the sweep's and the report's key
    wire: str  # what loadbench.run(protocol=...) takes: "http/1.1", "h2" or "h3"
    family: str  # "HTTP/1.1", "HTTP/2", "HTTP/3": the headline compares within one
    tls: bool  # served with a certificate at an https:// URL
    # handshakes made over TCP with the sweep's tls_library (h3's TLS is QUIC's own: GnuTLS
    # inside the generator's ngtcp2 session, whatever tls_library says)
    tls_over_tcp: bool
    title: str  # a section's heading: "HTTP/2 cleartext (h2c, prior knowledge)"
    label: str  # in a sentence: "HTTP/2 cleartext"
    short: str  # a table column: "HTTP/2 h2c"
    chart: str  # a chart's axis, on two lines: "HTTP/2\n(h2c)"

    @property
    def multiplexed(self) -> bool:
        """Its cells run streams per connection (``streams``), HTTP/2's and HTTP/3's."""
        return self.wire != "http/1.1"


PROTOCOLS: tuple[Protocol, ...] = (  # in report order
    Protocol(
        "http", "http/1.1", "HTTP/1.1", False, False, "HTTP/1.1", "HTTP/1.1", "HTTP/1.1",
        "HTTP/1.1\n(http)",
    ),
    Protocol(
        "https", "http/1.1", "HTTP/1.1", True, True, "HTTP/1.1 over TLS", "HTTP/1.1 over TLS",
        "HTTP/1.1 TLS", "HTTP/1.1 TLS\n(https)",
    ),
    Protocol(
        "h2c", "h2", "HTTP/2", False, False, "HTTP/2 cleartext (h2c, prior knowledge)",
        "HTTP/2 cleartext", "HTTP/2 h2c", "HTTP/2\n(h2c)",
    ),
    Protocol(
        "h2", "h2", "HTTP/2", True, True, "HTTP/2 over TLS (ALPN h2)", "HTTP/2 over TLS",
        "HTTP/2 TLS", "HTTP/2 TLS\n(h2)",
    ),
    Protocol(
        "h3", "h3", "HTTP/3", True, False, "HTTP/3 over QUIC (ALPN h3)", "HTTP/3", "HTTP/3",
        "HTTP/3\n(h3)",
    ),
)  # fmt: skip

BY_NAME: dict[str, Protocol] = {p.name: p for p in PROTOCOLS}
NAMES: tuple[str, ...] = tuple(BY_NAME)

# The spellings `loadbench run --protocol` and loadbench.run(protocol=...) accept, to the wire
# protocol the engine speaks.
WIRE_ALIASES = {
    "http/1.1": "http/1.1",
    "HTTP/1.1": "http/1.1",
    "h1": "http/1.1",
    "h2": "h2",
    "http2": "h2",
    "HTTP/2": "h2",
    "http/2": "h2",
    "h3": "h3",
    "http3": "h3",
    "HTTP/3": "h3",
    "http/3": "h3",
}

_FIELDS = {f.name for f in fields(Protocol)} | {"multiplexed"}


def get(name: str) -> Protocol:
    """The record of sweep protocol ``name``; ConfigError naming the choices otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise ConfigError(f"{name!r} is not one of {', '.join(NAMES)}") from None


def names(**where: Any) -> tuple[str, ...]:
    """The sweep names, in report order, of the protocols whose fields equal ``where``:
    ``names(wire="h2")``, ``names(multiplexed=True)``, ``names(tls=True, family="HTTP/2")``."""
    unknown = set(where) - _FIELDS
    if unknown:
        raise TypeError(f"Protocol has no field {', '.join(sorted(unknown))}")
    return tuple(p.name for p in PROTOCOLS if all(getattr(p, k) == v for k, v in where.items()))


def families() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(family, its protocols' names), in report order: ``("HTTP/1.1", ("http", "https"))``..."""
    seen: dict[str, list[str]] = {}
    for p in PROTOCOLS:
        seen.setdefault(p.family, []).append(p.name)
    return tuple((f, tuple(ps)) for f, ps in seen.items())


def choices() -> str:
    """The names as a message lists them: '"http", "https", "h2c", "h2" or "h3"'."""
    quoted = [f'"{n}"' for n in NAMES]
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def pairs() -> tuple[tuple[str, str, str], ...]:
    """Seed report 001's HTTP/1.1-against-HTTP/2 comparison: ("cleartext", "http", "h2c") and
    ("TLS", "https", "h2") - the two protocols of one family each, over the same transport."""
    out = []
    for label, tls in (("cleartext", False), ("TLS", True)):
        (h1,) = names(family="HTTP/1.1", tls=tls)
        (h2,) = names(family="HTTP/2", tls=tls)
        out.append((label, h1, h2))
    return tuple(out)


def title(name: str) -> str:
    """A section heading's words for ``name``; an unknown name as it is (a results file from
    a newer loadbench keeps rendering)."""
    p: Optional[Protocol] = BY_NAME.get(name)
    return p.title if p else name


def label(name: str) -> str:
    """A sentence's words for ``name`` (itself when unknown, as :func:`title`)."""
    p = BY_NAME.get(name)
    return p.label if p else name


def chart(name: str) -> str:
    """A chart axis's two lines for ``name`` (itself when unknown, as :func:`title`)."""
    p = BY_NAME.get(name)
    return p.chart if p else name


# Sets the sweep and the report test a name's membership against: derived from the records,
# never listed by hand (an unknown name, e.g. from a newer results file, is in none of them).
MULTIPLEXED = names(multiplexed=True)  # ("h2c", "h2", "h3"): streams per connection
TLS = names(tls=True)  # ("https", "h2", "h3"): a certificate at an https:// URL
TLS_OVER_TCP = names(tls_over_tcp=True)  # ("https", "h2"): the sweep's tls_library's handshakes
