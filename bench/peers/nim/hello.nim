# The Nim peer: seed report 004's program ("Nim/Node benchmarks", Nim 0.14.3, built with
# `nim c -d:release hello.nim`), kept as it was - newAsyncHttpServer, an {.async.} callback,
# req.respond, waitFor server.serve - and extended only by what the sweep needs of every peer:
#   - the port and address come from the command line (the seed's Port(8080) on all addresses
#     would collide with other runs; every peer binds 127.0.0.1 on the port loadbench picked);
#   - the shared routes instead of one answer for every path, so its cells compare byte for
#     byte with the other peers': GET / and /plaintext -> "Hello, World!\n" text/plain (the
#     seed's "Hello World" without a content type), GET /json -> {"message":"Hello, World!"}
#     (std/json, serialised per request), POST /echo -> the body back with its content type,
#     other paths 404, a known path with another method 405;
#   - NIM_WORKERS=N > 1 forks N-1 more processes that share the port with SO_REUSEPORT
#     (asynchttpserver runs one event loop on one thread, like the Python asyncio peer).
# HTTP/1.1 only, no TLS: asynchttpserver speaks neither HTTP/2 nor TLS.
#   nim c -d:release -o:loadbench-peer-nim hello.nim    (bash bench/install-peers.sh)
#   ./loadbench-peer-nim PORT
#   ./loadbench-peer-nim --version     the Nim it was built with (the reports' environment block)
import asynchttpserver, asyncdispatch
import std/[json, os, posix, strutils]

proc prctl(option: cint, arg2: culong): cint {.importc, header: "<sys/prctl.h>", varargs.}
const PR_SET_PDEATHSIG = 1.cint

if paramCount() < 1:
  quit("usage: loadbench-peer-nim PORT | --version   (NIM_WORKERS=N)", 2)
if paramStr(1) == "--version":
  echo "Nim ", NimVersion, " asynchttpserver, -d:release"
  quit(0)
let port = parseInt(paramStr(1))
let workers = max(1, parseInt(getEnv("NIM_WORKERS", "1")))
for _ in 1 ..< workers:
  if fork() == 0:
    # a worker ends with the process loadbench started (it stops that one with SIGTERM)
    discard prctl(PR_SET_PDEATHSIG, SIGTERM.culong)
    break

var server = newAsyncHttpServer(reusePort = workers > 1)
proc cb(req: Request) {.async.} =
  # headers made per response, as the asynchttpserver docs do: a global would not be GC-safe
  let textPlain = newHttpHeaders({"Content-Type": "text/plain"})
  let want = case req.url.path
    of "/", "/plaintext", "/json": HttpGet
    of "/echo": HttpPost
    else: HttpHead  # no route: answered 404 below
  if want == HttpHead:
    await req.respond(Http404, "Not Found\n", textPlain)
  elif req.reqMethod != want:
    await req.respond(Http405, "Method Not Allowed\n",
                      newHttpHeaders({"Content-Type": "text/plain", "Allow": $want}))
  elif req.url.path == "/json":
    await req.respond(Http200, $(%*{"message": "Hello, World!"}),
                      newHttpHeaders({"Content-Type": "application/json"}))
  elif req.url.path == "/echo":
    let ctype = if req.headers.hasKey("Content-Type"): req.headers["Content-Type"].toString
                else: "application/octet-stream"
    await req.respond(Http200, req.body, newHttpHeaders({"Content-Type": ctype}))
  else:
    await req.respond(Http200, "Hello, World!\n", textPlain)

waitFor server.serve(Port(port), cb, address = "127.0.0.1")
