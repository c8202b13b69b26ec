"""Python HTTP/2 peer: a bare ASGI application served by hypercorn (PyPI), the way its users run it.

    python3 -m hypercorn --workers N --bind 127.0.0.1:PORT bench/peers/python/asgi_app.py:app
    ... --certfile CERT --keyfile KEY     TLS; ALPN offers h2 and http/1.1

On the plain port hypercorn speaks HTTP/1.1 and h2c (prior knowledge, and the Upgrade dance);
over TLS, HTTP/1.1 and h2. No framework, so the numbers are hypercorn's and asyncio's.
Routes mirror the Beast reference server: GET / and /plaintext -> "Hello, World!\\n" text/plain,
GET /json -> {"message":"Hello, World!"} (serialised per request), POST /echo -> the body back
with its content type, other paths -> 404, a known path with a wrong method -> 405.
"""

import json

PLAINTEXT = b"Hello, World!\n"
ROUTES = {"/": "GET", "/plaintext": "GET", "/json": "GET", "/echo": "POST"}


async def _answer(send, status: int, content_type: bytes, body: bytes, extra=()) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    path, method = scope["path"], scope["method"]
    want = ROUTES.get(path)
    if want is None:
        await _answer(send, 404, b"text/plain", b"Not Found\n")
    elif method != want:
        await _answer(
            send, 405, b"text/plain", b"Method Not Allowed\n", [(b"allow", want.encode())]
        )
    elif path == "/json":
        await _answer(
            send,
            200,
            b"application/json",
            json.dumps({"message": "Hello, World!"}, separators=(",", ":")).encode(),
        )
    elif path == "/echo":
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        ctype = dict(scope["headers"]).get(b"content-type", b"application/octet-stream")
        await _answer(send, 200, ctype, b"".join(chunks))
    else:
        await _answer(send, 200, b"text/plain", PLAINTEXT)
