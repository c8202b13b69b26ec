"""How the generator's TCP connections open and close, in words for summaries and reports.

Two opt-in changes (run's `ack_with_request` and `rst_close`) make a new connection cheaper for
the generator on loopback, where the sender's CPU also pays for the receiver's TCP processing of
every packet it sends. Each changes the packets the server's kernel sees, so every figure
measured with them must say so: this module holds the one wording.
"""

from __future__ import annotations

from typing import Mapping

# What each option does to the exchange (the default is what wrk, oha and curl do).
OPTIONS = {
    "ack_with_request": "the handshake's last ACK rides on the request (TCP_QUICKACK off before connect)",
    "rst_close": "a connection the server has closed is closed with RST (SO_LINGER 0), not FIN",
}
DEFAULT = (
    "TCP exchange as wrk's: the handshake's last ACK sent at once, connections closed with FIN"
)

UNIX = "over a unix socket: no TCP handshake, ACKs or close exchange at all"


def tcp_exchange_text(options: Mapping) -> str:
    """One clause for a run's config or a sweep's settings: the default exchange, or the
    opt-in changes that were in force (or that there was no TCP: a unix socket)."""
    if options.get("transport") == "unix" or options.get("unix_socket"):
        return UNIX
    chosen = [text for key, text in OPTIONS.items() if options.get(key)]
    return "TCP exchange: " + "; ".join(chosen) if chosen else DEFAULT


def uses_lean_exchange(options: Mapping) -> bool:
    return any(options.get(key) for key in OPTIONS)
