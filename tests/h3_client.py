"""One HTTP/3 request with aioquic (a client no one here wrote), for tests that check a server's
exact answer over h3: curl on Debian 12 has no HTTP/3, and the generator counts responses but
does not hand back their bodies. The certificate is not verified (the sweep's is self-signed)."""

from __future__ import annotations

import asyncio
import ssl
from typing import Optional

import pytest


def h3_request(
    port: int,
    method: str,
    path: str,
    body: Optional[bytes] = None,
    content_type: Optional[str] = None,
    timeout: float = 5.0,
) -> tuple[int, str, bytes]:
    """(status, content type without parameters, body) of one request on a fresh connection."""
    pytest.importorskip("aioquic", reason="aioquic not installed: pip install aioquic")
    return asyncio.run(asyncio.wait_for(_request(port, method, path, body, content_type), timeout))


async def _request(
    port: int, method: str, path: str, body: Optional[bytes], content_type: Optional[str]
) -> tuple[int, str, bytes]:
    from aioquic.asyncio.client import connect
    from aioquic.asyncio.protocol import QuicConnectionProtocol
    from aioquic.h3.connection import H3_ALPN, H3Connection
    from aioquic.h3.events import DataReceived, HeadersReceived
    from aioquic.quic.configuration import QuicConfiguration

    class Client(QuicConnectionProtocol):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.h3 = H3Connection(self._quic)
            self.headers: dict[bytes, bytes] = {}
            self.body = b""
            self.done = asyncio.get_running_loop().create_future()

        def quic_event_received(self, event) -> None:
            for e in self.h3.handle_event(event):
                if isinstance(e, HeadersReceived):
                    self.headers.update(e.headers)
                elif isinstance(e, DataReceived):
                    self.body += e.data
                if getattr(e, "stream_ended", False) and not self.done.done():
                    self.done.set_result(None)

    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE)
    async with connect("127.0.0.1", port, configuration=config, create_protocol=Client) as client:
        stream = client._quic.get_next_available_stream_id()
        headers = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", f"127.0.0.1:{port}".encode()),
            (b":path", path.encode()),
        ]
        if content_type is not None:
            headers.append((b"content-type", content_type.encode()))
        client.h3.send_headers(stream, headers, end_stream=body is None)
        if body is not None:
            client.h3.send_data(stream, body, end_stream=True)
        client.transmit()
        await client.done
    ctype = client.headers.get(b"content-type", b"").decode().split(";")[0].strip()
    return int(client.headers[b":status"]), ctype, client.body
