"""`loadbench sweep [CONFIG.toml] --probe`: what each target answers, before a sweep measures it.

Every target of the sweep is started for each of the sweep's protocols exactly as a sweep starts
it (:func:`loadbench.sweep.targets.launch`: the same command, placeholders, pinning, readiness
probe and stop), and each workload's request is sent once - by the sweep's own generator, with
the options a cell would use, on one connection - so the answer is the one the cells would get.
Nothing is measured and nothing is written. A protocol the target does not serve (or whose
runtime is missing) and a workload it declares unsupported are listed with their reason, as the
report would print them n/a.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

from ..core import protocols
from ..core.errors import LoadbenchError
from ..core.run import run
from .plan import SweepPlan, Workload
from .targets import RunningServer, launch


@dataclass
class ProbeAnswer:
    """One line of the probe: a workload's answer, or (workload None) why a whole protocol of
    the target was not asked. ``ok`` is False only for what a sweep would record as a failure:
    a server that did not start, or a request without a 2xx answer."""

    target: str
    protocol: str
    workload: Optional[str]
    ok: bool
    text: str


def probe_sweep(sweep: SweepPlan, runner: Callable = run) -> Iterator[ProbeAnswer]:
    """Start each (target, protocol) of ``sweep`` in turn, ask it every workload once, stop it."""
    peers = Path(sweep.peers_dir) if sweep.peers_dir else None
    with tempfile.TemporaryDirectory(prefix="loadbench-certs-") as certs:
        for target in sweep.targets:
            for protocol in sweep.protocols:
                reason = target.unavailable_reason(protocol, peers)
                if reason:
                    yield ProbeAnswer(target.name, protocol, None, True, f"not measured: {reason}")
                    continue
                try:
                    server = launch(
                        target,
                        protocol,
                        workers=target.workers or sweep.workers,
                        cpus=sweep.server_cpus,
                        peers_dir=peers,
                        cert_dir=Path(certs),
                        transport=sweep.transport,
                    )
                except LoadbenchError as exc:
                    yield ProbeAnswer(target.name, protocol, None, False, f"did not start: {exc}")
                    continue
                try:
                    for w in sweep.workloads:
                        if w.name in target.unsupported_workloads:
                            yield ProbeAnswer(
                                target.name,
                                protocol,
                                w.name,
                                True,
                                "n/a: in the target's unsupported_workloads",
                            )
                        else:
                            yield _ask(sweep, server, protocol, w, runner)
                finally:
                    server.stop()


def _ask(
    sweep: SweepPlan, server: RunningServer, protocol: str, w: Workload, runner: Callable
) -> ProbeAnswer:
    """The workload's request(s) once each, on one keep-alive connection, as a cell sends them."""
    kwargs: dict = {
        "connections": 1,
        "threads": 1,
        "requests": len(w.requests) if w.requests else 1,
        "duration": None,
        "timeout": sweep.timeout,
        "keepalive": True,
        "insecure": True,
        "cpus": sweep.generator_cpus,
    }
    if protocol in protocols.MULTIPLEXED:
        kwargs.update(protocol=protocols.get(protocol).wire, streams=1)
    if protocol in protocols.TLS_OVER_TCP and sweep.tls_library != "openssl":
        kwargs.update(tls_library=sweep.tls_library)
    if server.unix_socket is not None:
        kwargs["unix_socket"] = server.unix_socket
    if w.requests is not None:
        kwargs["requests_list"] = [dict(r) for r in w.requests]
        url = server.base_url + str(w.requests[0].get("path", "/"))
    else:
        kwargs.update(method=w.method, headers=dict(w.headers), body=w.body)
        url = server.base_url + w.path
    name = server.target.name
    try:
        result = runner(url, **kwargs).to_dict()
    except Exception as exc:  # noqa: BLE001 - a probe reports every failure as its answer
        return ProbeAnswer(name, protocol, w.name, False, f"error: {type(exc).__name__}: {exc}")
    codes = {int(k): v for k, v in (result.get("status_codes") or {}).items()}
    errors = {k: v for k, v in (result.get("errors") or {}).items() if v}
    parts = [f"{code}" + (f" x{n}" if n > 1 else "") for code, n in sorted(codes.items())]
    if codes:
        parts[-1] += f", {result.get('bytes_read', 0)} bytes read (headers included)"
    if errors:
        parts.append(
            "error: "
            + ", ".join(f"{k} x{v}" for k, v in errors.items())
            + (f" ({result['first_error']})" if result.get("first_error") else "")
        )
    if not codes and not errors:
        parts.append("error: no answer within the timeout")
    if not server.alive():
        parts.append(f"then the server died: {server.death_note()}")
    ok = bool(codes) and not errors and all(200 <= c < 300 for c in codes) and server.alive()
    return ProbeAnswer(name, protocol, w.name, ok, "; ".join(parts))
