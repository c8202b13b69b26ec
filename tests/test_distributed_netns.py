"""Separate generator hosts on one machine: Linux network namespaces joined by a bridge, one for
the server (nginx, whose own access log counts requests per source address) and one per Dask
worker. Addresses come from 198.18.0.0/15 (RFC 2544's benchmark range). The test creates and
removes its namespaces and links itself; every process it starts is bounded and ended by PID."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="the test extras install Dask (distributed)")
from distributed import Client, LocalCluster  # noqa: E402

import loadbench.distributed as lbd  # noqa: E402

NET = "198.18.7"
SERVER_IP, BRIDGE_IP = f"{NET}.1", f"{NET}.254"
WORKER_IPS = [f"{NET}.2", f"{NET}.3"]
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    if done.returncode != 0:  # say what ip said: a bare exit status 255 tells nothing
        raise RuntimeError(f"ip {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")


class Topology:
    """A bridge in this namespace and one namespace + veth pair per host."""

    def __init__(self) -> None:
        tag = f"{os.getpid() % 100000}"
        self.bridge = f"lbbr{tag}"
        self.namespaces: list[str] = []
        self.tag = tag

    def up(self) -> None:
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("link", "set", self.bridge, "up")
        _ip("addr", "add", f"{BRIDGE_IP}/24", "dev", self.bridge)

    def host(self, name: str, address: str) -> str:
        ns = f"lb{name}{self.tag}"
        outside, inside = f"v{name}{self.tag}a"[:15], f"v{name}{self.tag}b"[:15]
        _ip("netns", "add", ns)
        self.namespaces.append(ns)
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", ns)
        _ip("link", "set", outside, "master", self.bridge)
        _ip("link", "set", outside, "up")
        _ip("-n", ns, "addr", "add", f"{address}/24", "dev", inside)
        _ip("-n", ns, "link", "set", inside, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        return ns

    def down(self) -> None:
        for ns in self.namespaces:  # removing a namespace removes its end of the veth pair
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, timeout=20)


def _can_make_namespaces() -> str:
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    if not Path(NGINX).exists():
        return "nginx is not installed (the test extras install nginx-light)"
    probe = f"lbprobe{os.getpid()}"
    proc = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=20)
    if proc.returncode != 0:
        return f"cannot create a network namespace here: {proc.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=20)
    return ""


def _nginx_conf(run_dir: Path) -> Path:
    conf = run_dir / "nginx.conf"
    conf.write_text(f"""
worker_processes 1;
pid {run_dir}/nginx.pid;
error_log {run_dir}/error.log;
events {{ worker_connections 1024; }}
http {{
    log_format src '$remote_addr $status';
    access_log {run_dir}/access.log src;
    client_body_temp_path {run_dir};
    proxy_temp_path {run_dir};
    fastcgi_temp_path {run_dir};
    uwsgi_temp_path {run_dir};
    scgi_temp_path {run_dir};
    server {{
        listen {SERVER_IP}:8080;
        location / {{ default_type text/plain; return 200 "Hello, World!\\n"; }}
    }}
}}
""")
    return conf


def _wait_for(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


@pytest.mark.skipif(bool(_can_make_namespaces()), reason=_can_make_namespaces() or "n/a")
def test_two_generator_hosts_in_namespaces_count_exactly_per_source_address(tmp_path):
    topo = Topology()
    procs: list[subprocess.Popen] = []
    local = client = None
    try:
        topo.up()
        server_ns = topo.host("s", SERVER_IP)
        worker_ns = [topo.host(f"g{i}", ip) for i, ip in enumerate(WORKER_IPS)]
        nginx = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                server_ns,
                NGINX,
                "-c",
                str(_nginx_conf(tmp_path)),
                "-g",
                "daemon off;",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        procs.append(nginx)
        local = LocalCluster(n_workers=0, host=BRIDGE_IP, scheduler_port=0, dashboard_address=":0")
        client = Client(local)
        for ns, ip in zip(worker_ns, WORKER_IPS):
            procs.append(
                subprocess.Popen(
                    [
                        "ip",
                        "netns",
                        "exec",
                        ns,
                        sys.executable,
                        "-m",
                        "distributed.cli.dask_worker",
                        local.scheduler_address,
                        "--nthreads",
                        "1",
                        "--no-nanny",
                        "--resources",
                        "loadbench=1",
                        "--host",
                        ip,
                        "--no-dashboard",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        _wait_for(
            lambda: len(lbd.scheduler_identity(client)["workers"]) == 2, 90, "two Dask workers"
        )
        r = lbd.run(
            f"http://{SERVER_IP}:8080/", cluster=client, shards=2, connections=6, requests=4001
        )
        assert r.responses == 4001 and r.error_count == 0
        # a load shape from the two hosts: each sends its half of every stage on one clock
        shaped = lbd.run(
            f"http://{SERVER_IP}:8080/",
            cluster=client,
            shards=2,
            connections=6,
            steps="400:1s, 800:1s",
            warmup=0,
            start_delay=1.0,
        )
        assert [abs(st["due"] - due) <= 2 for st, due in zip(shaped.stages, (400, 800))] == [
            True
        ] * 2
        assert sum(st["responses"] for st in shaped.stages) == shaped.responses
        assert shaped.responses == shaped.due and shaped.error_count == 0
        nginx.terminate()  # nginx flushes and closes its log on the way out
        nginx.wait(timeout=20)
        seen = Counter(
            line.split()[0] for line in (tmp_path / "access.log").read_text().splitlines()
        )
        assert set(seen) == set(WORKER_IPS), seen  # two generator hosts, as the server saw them
        by_ip = Counter()
        for run in (r, shaped):
            for shard in run.extras["shards"]:
                by_ip[shard["worker"].split("//")[1].rsplit(":", 1)[0]] += shard["responses"]
        assert by_ip == seen  # each shard's count = what nginx logged from its address
        assert sorted(s["responses"] for s in r.extras["shards"]) == [2000, 2001]
        assert sorted(r.extras["cluster"]["generator_hosts"]) == WORKER_IPS
    finally:
        if client is not None:
            client.close()
        if local is not None:
            local.close()
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        topo.down()
