"""Where a request's time goes: the phases the engine splits it into (LOADBENCH_PHASES in
core/generator/base/config.hpp), each an exact HDR histogram in microseconds under the window's rules.

Per new connection: connect (TCP), tls_full / tls_resume (TLS over TCP), quic_full /
quic_resume (QUIC's handshake, its TLS 1.3 included). Per response: write (its request's first
byte handed to the transport until its last), ttfb (the request's last byte until the
response's first: the server's wait plus one network trip), transfer (the response's first
byte until its last). write + ttfb + transfer is a response's service time.
"""

from __future__ import annotations

from . import _core

# {name: what it spans}, in the engine's order
PHASES: dict[str, str] = dict(_core.PHASES)
# per new connection; the others are per response
CONNECTION_PHASES = ("connect", "tls_full", "tls_resume", "quic_full", "quic_resume")
RESPONSE_PHASES = tuple(name for name in PHASES if name not in CONNECTION_PHASES)
# how a reader sees each name (run's summary, the report's "Where the time goes")
LABELS = {
    "connect": "connect",
    "tls_full": "TLS handshake",
    "tls_resume": "TLS resumed",
    "quic_full": "QUIC handshake",
    "quic_resume": "QUIC resumed",
    "write": "write",
    "ttfb": "first byte",
    "transfer": "transfer",
}
