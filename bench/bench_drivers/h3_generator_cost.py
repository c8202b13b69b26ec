"""Generator cost of HTTP/3 beside HTTP/2 and HTTP/1.1 (issue 33, part 5): CPU per response of
each generator, pinned, against the same server - caddy (its one site serves HTTP/1.1 and HTTP/2
over TLS on TCP and HTTP/3 on the same port over UDP) and, when its --h3 exists,
loadbench-server. The anchors for HTTP/3 are other clients that speak it: oha built with its
`http3` feature (bench/install-peers.sh), a quic-go client (bench/peers/quic-go-client),
ngtcp2's example client gtlsclient (Debian ngtcp2-client) and h2load for HTTP/1.1 and HTTP/2. Each run's count is the tool's own (its JSON
or its output); CPU is the generator process's own (os.wait4 rusage: /proc's utime + stime of the
process and its threads) divided by that count. A tool that is missing, or fails, is n/a in the
report with the reason - never a number.

    python3 bench/h3_generator_cost.py                 # reports/h3-generator-cost.{md,jsonl}
    python3 bench/h3_generator_cost.py -c 10 -d 2 -r 1 # a smoke run
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

from loadbench.report.markdown import table

from .child import taskset
from .environment_block import environment
from .generators import (
    Generator,
    H2load,
    H2loadH2,
    Loadbench,
    LoadbenchBuild,
    LoadResult,
    Oha,
    UnsupportedMode,
)
from .jsonl import JsonlWriter, read_jsonl
from .repeats import add_matrix_args, summarize
from .report_text import report_head, write_report

PROTOCOLS = ("h1", "h2", "h3")


class LoadbenchProtocol(Loadbench):
    """`loadbench run` over https with --h2 / --h3 (h1: neither)."""

    def __init__(self, protocol: str) -> None:
        super().__init__()
        self.protocol = protocol

    def argv(self, url, connections, duration_s, keepalive, out):
        flag = {"h1": [], "h2": ["--h2"], "h3": ["--h3"]}[self.protocol]
        return super().argv(url, connections, duration_s, keepalive, out) + flag

    def parse(self, run, out):
        import json

        result = super().parse(run, out)
        data = json.loads(out.read_text())
        if self.protocol == "h3":
            result.extra["quic"] = data.get("quic")
        return result


class LoadbenchProtocolBuild(LoadbenchProtocol):
    """The same runs by another build of loadbench (--before: another interpreter, e.g. a venv
    holding the engine from before a redesign), side by side with the installed one."""

    def __init__(self, protocol: str, python: str) -> None:
        super().__init__(protocol)
        build = LoadbenchBuild(python, "loadbench-before")
        self.name, self.binary, self.missing_reason = build.name, build.binary, build.missing_reason


class OhaProtocol(Oha):
    """oha --http-version 1.1 / 2 / 3 (HTTP/3 needs the build with the `http3` feature that
    bench/install-peers.sh puts in bench/peers/oha-h3; LOADBENCH_OHA_H3 names another)."""

    def __init__(self, protocol: str, repo: Path) -> None:
        super().__init__()
        self.protocol = protocol
        if protocol == "h3":
            built = Path(os.environ.get("LOADBENCH_OHA_H3", repo / "bench/peers/oha-h3/bin/oha"))
            self.binary = str(built) if os.access(built, os.X_OK) else None
            self.missing_reason = (
                f"no oha with HTTP/3 at {built} (bash bench/install-peers.sh builds it: "
                "cargo install oha --features http3)"
            )

    def argv(self, url, connections, duration_s, keepalive, out):
        version = {"h1": "1.1", "h2": "2", "h3": "3"}[self.protocol]
        return super().argv(url, connections, duration_s, keepalive, out)[:-1] + [
            "--http-version",
            version,
            url,
        ]


class H2loadProtocol(Generator):
    """h2load: --h1 for HTTP/1.1, ALPN h2 for HTTP/2; it has no HTTP/3 in Debian's build."""

    def __init__(self, protocol: str) -> None:
        inner = H2load() if protocol == "h1" else H2loadH2()
        super().__init__("h2load", inner.binary)
        self.inner = inner
        self.protocol = protocol

    def version(self) -> str:
        return self.inner.version()

    def argv(self, url, connections, duration_s, keepalive, out):
        if self.protocol == "h3":
            raise UnsupportedMode("Debian's h2load is built without HTTP/3")
        return self.inner.argv(url, connections, duration_s, keepalive, out)

    def parse(self, run, out):
        return self.inner.parse(run, out)


class Gtlsclient(Generator):
    """ngtcp2's example client (Debian ngtcp2-client, GnuTLS): one connection, `requests`
    streams, then it exits; the count is the responses its HTTP dump shows (":status")."""

    requests = 2000

    def __init__(self) -> None:
        super().__init__("gtlsclient", shutil.which("gtlsclient"))
        self.missing_reason = "not installed (apt-get install ngtcp2-client)"

    def version(self) -> str:
        return "ngtcp2 example client (Debian ngtcp2-client)"

    def argv(self, url, connections, duration_s, keepalive, out):
        if connections != 1:
            raise UnsupportedMode("one connection per process (the example client's design)")
        host, port = re.match(r"https://\[?([^\]/]+?)\]?:(\d+)", url).groups()
        return [
            self.binary,
            "--no-quic-dump",
            "--exit-on-all-streams-close",
            "-n",
            str(self.requests),
            host,
            port,
            url,
        ]

    def parse(self, run, out):
        statuses = re.findall(r":status: (\d{3})", run.stdout + run.stderr)
        if not statuses:
            raise RuntimeError(
                "gtlsclient showed no response (its last words: "
                f"{(run.stderr or run.stdout).strip().splitlines()[-1:]})"
            )
        return LoadResult(
            responses=len(statuses),
            non_2xx=sum(1 for s in statuses if int(s) >= 300),
            errors=0,
            duration_s=run.wall_s,
        )


class QuicGoClient(Generator):
    """bench/peers/quic-go-client: quic-go's http3 package in a closed loop, -c connections; its
    counts from the JSON line it prints."""

    def __init__(self, repo: Path) -> None:
        built = repo / "bench/peers/quic-go-client/loadbench-h3-quicgo"
        super().__init__("quic-go", str(built) if os.access(built, os.X_OK) else None)
        self.missing_reason = f"not built at {built} (bash bench/install-peers.sh)"

    def version(self) -> str:
        return "quic-go http3 (bench/peers/quic-go-client/go.mod)"

    def argv(self, url, connections, duration_s, keepalive, out):
        return [self.binary, "-c", str(connections), "-d", str(duration_s), url]

    def parse(self, run, out):
        import json

        data = json.loads(run.stdout.strip().splitlines()[-1])
        return LoadResult(
            responses=int(data["responses"]),
            non_2xx=int(data["non_2xx"]),
            errors=int(data["errors"]),
            duration_s=float(data["duration_s"]),
        )


def generators(protocol: str, repo: Path, before: Optional[str] = None) -> list[Generator]:
    tools: list[Generator] = [LoadbenchProtocol(protocol), OhaProtocol(protocol, repo)]
    if before:
        tools.insert(1, LoadbenchProtocolBuild(protocol, before))
    if protocol == "h3":
        tools += [QuicGoClient(repo), Gtlsclient()]
    else:
        tools.append(H2loadProtocol(protocol))
    return tools


class CaddyServer:
    """caddy on 127.0.0.1, one site: HTTPS (h1, h2) on TCP and HTTP/3 on UDP, same port."""

    def __init__(self, folder: Path, cpus: Sequence[int]) -> None:
        caddy = shutil.which("caddy")
        if caddy is None:
            raise SystemExit("h3_generator_cost: caddy not found (apt-get install caddy)")
        # Its two ports are free when picked, not when caddy binds them: another process (the
        # suite's other worker) may take one in between, and caddy then exits "address already
        # in use". So a start that failed that way is tried again on two new ports.
        for attempt in range(3):
            if self._start(caddy, folder, cpus) or attempt == 2:
                break
        if self.proc.poll() is not None or not _tls_up(self.port):
            self.stop()
            tail = (folder / "caddy.log").read_text(errors="replace").strip()[-400:]
            raise SystemExit(f"h3_generator_cost: caddy did not come up: {tail or 'no message'}")

    def _start(self, caddy: str, folder: Path, cpus: Sequence[int]) -> bool:
        """Starts caddy; False when it exited because a port was taken meanwhile."""
        http_port, self.port = _free_ports(2)
        (folder / "Caddyfile").write_text(
            "{\n\tadmin off\n\tauto_https disable_redirects\n\tskip_install_trust\n"
            f"\thttp_port {http_port}\n\thttps_port {self.port}\n"
            f"\tstorage file_system {folder / 'data'}\n}}\n"
            f"https://127.0.0.1:{self.port} {{\n\tbind 127.0.0.1\n\ttls internal\n"
            '\trespond "Hello, World!" 200\n}\n'
        )
        env = dict(
            os.environ, HOME=str(folder), XDG_DATA_HOME=str(folder), XDG_CONFIG_HOME=str(folder)
        )
        self.log = open(folder / "caddy.log", "wb")
        self.proc = subprocess.Popen(
            taskset(cpus)
            + [caddy, "run", "--config", str(folder / "Caddyfile"), "--adapter", "caddyfile"],
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            env=env,
            cwd=folder,
        )
        deadline = time.monotonic() + 30
        while not _tls_up(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.flush()
                taken = b"address already in use" in (folder / "caddy.log").read_bytes()
                if taken:
                    self.stop()
                return not taken
            time.sleep(0.1)
        return True

    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def _free_ports(n: int) -> list[int]:
    """n distinct ports free now: each socket stays bound until all are picked."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            sockets.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _tls_up(port: int) -> bool:
    import ssl

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1"):
                return True
    except (OSError, ssl.SSLError):
        return False


def measure(
    tool: Generator, protocol: str, url: str, connections: int, duration_s: int, cpus: Sequence[int]
) -> dict:
    """One pinned run: the tool's own count and its process CPU per response (or why n/a)."""
    record = {"generator": tool.name, "protocol": protocol, "connections": connections}
    if not tool.available:
        return record | {"na": tool.missing_reason}
    try:
        child, result = tool.run(url, connections, duration_s, True, cpus)
    except UnsupportedMode as exc:
        return record | {"na": str(exc)}
    except (RuntimeError, ValueError, KeyError, OSError) as exc:
        return record | {"na": f"failed: {exc}"[:600]}
    if result.responses <= 0 or result.errors:
        return record | {
            "na": f"{result.responses} responses, {result.errors} errors: not a clean run",
        }
    return record | {
        "responses": result.responses,
        "errors": result.errors,
        "non_2xx": result.non_2xx,
        "duration_s": result.duration_s,
        "rps": result.rps,
        "cpu_s": child.cpu_s,
        "cpu_us_per_response": child.cpu_s * 1e6 / result.responses,
        "busy": child.busy,
        "extra": result.extra,
    }


def report(records: list[dict], env: dict, command: str, settings: dict) -> str:
    lines = report_head(
        "HTTP/3 generator cost: CPU per response beside HTTP/2 and HTTP/1.1",
        command,
        env,
        settings,
        "h3-generator-cost.jsonl",
    )
    cells: dict[tuple, list[dict]] = {}
    for r in records:
        cells.setdefault((r["protocol"], r["generator"], r["connections"]), []).append(r)
    rows = []
    medians: dict[tuple, float] = {}  # (protocol, connections) -> {generator: median}
    for (protocol, name, conns), runs in sorted(cells.items()):
        ok = [r for r in runs if "na" not in r]
        s = summarize(r["cpu_us_per_response"] for r in ok)
        if s is None:
            rows.append([protocol, name, conns, "n/a", "", "", "", runs[-1].get("na", "")])
            continue
        medians.setdefault((protocol, conns), {})[name] = s.median
        rps = summarize(r["rps"] for r in ok)
        # A tool that ran far past the asked duration divided its count by its own longer wall
        # time (oha's HTTP/3 build waits ~30 s at exit): that rate is not the load's, so none
        # is shown. Its CPU per response stands: it divides by the count, not the time.
        asked = float(settings["Seconds per run"])
        overran = max(r["duration_s"] for r in ok) > 1.5 * asked
        shown_rps = (
            f"n/a (ran {max(r['duration_s'] for r in ok):.0f} s for {asked:g} s)"
            if overran
            else f"{rps.median:,.0f}"
        )
        # loadbench's own figure for the measured window alone (its process start, imports and
        # environment probes left out): the part that grows with responses.
        window = summarize(
            r["extra"]["self_cpu_us_per_req"]
            for r in ok
            if (r.get("extra") or {}).get("self_cpu_us_per_req") is not None
        )
        rows.append(
            [
                protocol,
                name,
                conns,
                f"{s.median:.2f}",
                f"{s.low:.2f}-{s.high:.2f} ({s.count})",
                f"{window.median:.2f}" if window else "",
                shown_rps,
                "",
            ]
        )
    lines += [
        "## CPU per response (generator process, user + system)",
        "",
        "Median of the repeats; the range is the lowest and highest repeat. The whole process "
        "counts for every tool, its start-up included (loadbench's is a Python start plus the "
        "environment probes, about half a second, which is most of its cost when a slow server "
        "gives few responses at 1 connection); loadbench's figure for the measured window alone "
        "is the 'window only' column. n/a: the reason.",
        "",
        table(
            [
                "Protocol",
                "Generator",
                "Connections",
                "CPU us/response",
                "Range (runs)",
                "window only",
                "req/s",
                "n/a because",
            ],
            rows,
        ),
        "",
        "## loadbench against the cheapest anchor",
        "",
        "Per protocol and connection count: loadbench's median over the lowest median of the "
        "other generators measured in the same cell (below 1.00x: loadbench is cheaper).",
        "",
    ]
    for (protocol, conns), by_tool in sorted(medians.items()):
        anchors = {k: v for k, v in by_tool.items() if not k.startswith("loadbench")}
        if "loadbench" not in by_tool or not anchors:
            continue
        best = min(anchors, key=anchors.get)
        ours = by_tool["loadbench"]
        lines.append(
            f"- {protocol}, c={conns}: loadbench {ours:.2f} us vs {best} {anchors[best]:.2f} us "
            f"({ours / anchors[best]:.2f}x)"
        )
    before = {
        k: v for k, v in sorted(medians.items()) if {"loadbench", "loadbench-before"} <= set(v)
    }
    if before:
        lines += [
            "",
            "## This build against the one before (--before)",
            "",
            "Per protocol and connection count: the installed loadbench's median over the "
            "median of the build named by --before, measured in the same cells of the same run "
            "(above 1.00x: this build costs more per response).",
            "",
        ]
        for (protocol, conns), by_tool in before.items():
            now, then = by_tool["loadbench"], by_tool["loadbench-before"]
            lines.append(
                f"- {protocol}, c={conns}: {now:.2f} us vs {then:.2f} us before ({now / then:.2f}x)"
            )
    return "\n".join(lines) + "\n"


def settings_of(args: argparse.Namespace) -> dict:
    return {
        "Connections": args.concurrencies,
        "Seconds per run": args.duration,
        "Repeats": args.repeats,
        "Server": "caddy (tls internal; HTTP/1.1 and HTTP/2 on TCP, HTTP/3 on UDP, one port)",
        "Server CPUs": args.server_cpus,
        "Generator CPUs": args.generator_cpus,
    }


def main(repo: Path, argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_matrix_args(p)
    p.set_defaults(concurrencies="1,10,50")
    p.add_argument("--protocols", default="h1,h2,h3", help="comma-separated: h1, h2, h3")
    p.add_argument("--server-cpus", default="0", help="caddy's CPUs (default 0)")
    p.add_argument("--generator-cpus", default="1", help="the generator's CPUs (default 1)")
    p.add_argument("--out", type=Path, default=repo / "reports", help="report folder")
    p.add_argument("--report-only", action="store_true", help="rewrite the report from the JSONL")
    p.add_argument(
        "--before",
        default=None,
        metavar="PYTHON",
        help="an interpreter holding another loadbench build (e.g. from before a change): its "
        "runs go beside the installed one's as 'loadbench-before'",
    )
    args = p.parse_args(argv)
    jsonl = args.out / "h3-generator-cost.jsonl"
    md = args.out / "h3-generator-cost.md"
    if args.report_only:
        records, env, command = read_jsonl(jsonl)
        # The settings are the measured run's: its recorded command line, not this one's.
        measured = p.parse_args(shlex.split(command)[2:])
        write_report(md, report(records, env, command, settings_of(measured)))
        return 0
    protocols = [x for x in args.protocols.split(",") if x]
    for x in protocols:
        if x not in PROTOCOLS:
            p.error(f"unknown protocol {x!r} (use: {', '.join(PROTOCOLS)})")
    if shutil.which("taskset") is None:
        p.error("taskset not found (util-linux): the runs are pinned")
    gen_cpus = [int(c) for c in args.generator_cpus.split(",")]
    server_cpus = [int(c) for c in args.server_cpus.split(",")]
    command = "python3 bench/h3_generator_cost.py " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    env = environment()
    writer = JsonlWriter(jsonl)
    writer.write({"record": "environment", "environment": env, "command": command})
    records: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="h3-generator-cost-") as tmp:
        server = CaddyServer(Path(tmp), server_cpus)
        try:
            for repeat in range(args.repeats):
                for protocol in protocols:
                    for conns in (int(c) for c in args.concurrencies.split(",")):
                        for tool in generators(protocol, repo, args.before):
                            r = measure(
                                tool, protocol, server.url(), conns, args.duration, gen_cpus
                            )
                            r["repeat"] = repeat
                            writer.write(r)
                            records.append(r)
                            shown = r.get("na") or f"{r['cpu_us_per_response']:.2f} us/response"
                            print(f"{protocol} {tool.name:11} c={conns:<4} {shown}", flush=True)
        finally:
            server.stop()
            writer.close()
    write_report(md, report(records, env, command, settings_of(args)))
    print(f"wrote {md} and {jsonl}")
    return 0
