"""The sweep's allocation-sites phase (``allocation_sites = true``): per server, one short extra
window on a fresh instance with heaptrack attached to its processes, whose top allocation sites
per response go to ``allocation_sites.json`` (loadbench.core.allocation_sites). heaptrack slows
a server several times over, so this window's speed is never reported; it runs after the
server's measured cells, on the sweep's first protocol (http when swept), first workload and
lowest concurrency."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..core import protocols
from ..core.allocation_sites import SiteRecorder
from ..core.errors import LoadbenchError
from ..core.run import run
from ..core.sampler import Sampler
from .results_folder import ResultsFolder
from .targets import Target, launch

SITES_WINDOW_S = 1.0


def record_sites(sweep, target: Target, folder: ResultsFolder, cert_dir: Path) -> None:
    """Measure ``target``'s sites once (kept on resume) and add them to the results folder."""
    if target.name in folder.allocation_sites():
        return
    peers = Path(sweep.peers_dir) if sweep.peers_dir else None
    protocol = "http" if "http" in sweep.protocols else sweep.protocols[0]
    if target.kind == "url" or target.unavailable_reason(protocol, peers):
        return
    workload = next(
        (w for w in sweep.workloads if w.name not in target.unsupported_workloads), None
    )
    if workload is None:
        return
    connections = min(sweep.concurrencies)
    block: dict = {
        "protocol": protocol,
        "workload": workload.name,
        "connections": connections,
        "duration_s": SITES_WINDOW_S,
    }
    try:
        block.update(_measure(sweep, target, protocol, workload, connections, folder, cert_dir))
    except LoadbenchError as exc:
        block["error"] = str(exc)
    folder.add_allocation_sites(target.name, block)


def _measure(sweep, target, protocol, workload, connections, folder, cert_dir) -> dict:
    server = launch(
        target,
        protocol,
        workers=target.workers or sweep.workers,
        cpus=sweep.server_cpus,
        peers_dir=Path(sweep.peers_dir) if sweep.peers_dir else None,
        cert_dir=cert_dir,
    )
    recorder: Optional[SiteRecorder] = None
    responses = 0
    try:
        assert server.pid is not None
        recorder = SiteRecorder(folder.path / ".heaptrack")
        recorder.attach(Sampler(server.pid, tree=target.tree).snapshot().pids)
        options: dict = {
            "connections": connections,
            "duration": SITES_WINDOW_S,
            "insecure": True,
            "cpus": sweep.generator_cpus,
            "method": workload.method,
            "headers": dict(workload.headers),
            "body": workload.body,
        }
        if protocol in protocols.MULTIPLEXED:
            options.update(
                protocol=protocols.get(protocol).wire, streams=sweep.streams_for(protocol)
            )
        responses = run(server.base_url + workload.path, **options).responses
    except BaseException:
        if recorder is not None:
            recorder.abandon()
        server.stop()
        raise
    server.stop()  # heaptrack writes its data when the traced processes exit
    return recorder.finish(responses)
