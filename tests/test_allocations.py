"""The allocation counter (loadbench.core.allocations, cpp/preload/allocation_counter.cpp):
exact counts from servers whose allocations per request are known, n/a where it cannot see the
heap, and the figures in results, the CLI and the report."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import loadbench
from loadbench.core import _core
from loadbench.core.allocations import AllocationCounter, allocation_dir_of
from loadbench.core.errors import ConfigError
from loadbench.core.server import ServerProcess
from loadbench.sweep.targets import Target, launch

HERE = Path(__file__).resolve().parent
K, SIZE = 3, 100

pytestmark = pytest.mark.skipif(
    shutil.which("gcc") is None, reason="needs gcc for the test servers"
)


def _compile(tmp: Path, source: str, name: str, *flags: str) -> Path:
    out = tmp / name
    subprocess.run(
        ["gcc", "-O2", "-g", "-o", str(out), str(HERE / "servers" / source), "-lpthread", *flags],
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture(scope="module")
def k_mallocs(tmp_path_factory) -> Path:
    return _compile(tmp_path_factory.mktemp("kmallocs"), "k_mallocs.c", "k_mallocs")


@pytest.fixture(scope="module")
def k_mallocs_static(tmp_path_factory) -> Path:
    try:
        return _compile(
            tmp_path_factory.mktemp("kstatic"), "k_mallocs.c", "k_mallocs_static", "-static"
        )
    except subprocess.CalledProcessError as exc:  # no libc.a
        pytest.skip(f"cannot link statically: {exc.stderr.decode()[:200]}")


def _measure(server_url: str, pid: int, **options) -> dict:
    options = {"connections": 4, "duration": 1.0, "warmup": 0.3, **options}
    result = loadbench.run(server_url, sample_pid=pid, **options)
    assert result.responses > 1000, result
    return {"responses": result.responses, **result.extras["server"]["allocations"]}


@pytest.mark.parametrize("mode", ["same", "elsewhere", "fork"])
def test_known_k_mallocs_per_request(k_mallocs, mode):
    """K mallocs of SIZE bytes per request read K allocs/req and K x SIZE bytes/req within 1 %:
    freed by the same thread, by another thread, or in a process forked per connection."""
    target = Target(
        "k-mallocs", kind="command", argv=[str(k_mallocs), "{port}", str(K), str(SIZE), mode]
    )
    server = launch(target, "http", workers=1, cpus=None, allocations=True)
    try:
        got = _measure(server.base_url + "/", server.pid)
    finally:
        server.stop()
    assert got["na"] is None
    assert got["calls_per_req"] == pytest.approx(K, rel=0.01)
    assert got["bytes_per_req"] == pytest.approx(K * SIZE, rel=0.01)
    assert got["frees"] == pytest.approx(got["calls"], rel=0.01)
    if mode == "fork":  # the listener and one process per connection, each with its own page
        assert got["processes"] >= 1 + 4


def test_static_binary_is_na_not_zero(k_mallocs_static):
    """A statically linked server does not load the counter: n/a with the reason, never 0."""
    target = Target("static", kind="command", argv=[str(k_mallocs_static), "{port}", "3", "100"])
    server = launch(target, "http", workers=1, cpus=None, allocations=True)
    try:
        got = _measure(server.base_url + "/", server.pid)
    finally:
        server.stop()
    assert got["calls_per_req"] is None and got["bytes_per_req"] is None
    assert got["na"].startswith("not loaded in k_mallocs_stat")


def test_beast_keepalive_allocates_nothing_per_request():
    """The Beast server's documented figures: 0 allocations per keep-alive HTTP/1.1 request
    (README), exactly one (304 bytes: the Connection object) per connection-per-request - and not n/a: its connections
    allocate, so the counter sees its heap."""
    with ServerProcess(allocations=True) as server:
        kept = _measure(server.url("/plaintext"), server.pid)
        fresh = _measure(server.url("/plaintext"), server.pid, keepalive=False, connections=2)
    assert kept["na"] is None and kept["calls"] == 0 and kept["calls_per_req"] == 0
    # a connection accepted at a window's edge may fall on the other side of it: within 1 %
    assert fresh["calls_per_req"] == pytest.approx(1.0, rel=0.01)
    assert fresh["frees"] == pytest.approx(fresh["calls"], rel=0.01)
    assert fresh["bytes_per_req"] == pytest.approx(304.0, rel=0.01)


def test_off_by_default_and_found_from_the_environment():
    with ServerProcess() as plain:
        result = loadbench.run(plain.url("/plaintext"), requests=100, sample_pid=plain.pid)
        assert "allocations" not in result.extras["server"]
        assert allocation_dir_of(plain.pid) is None
    with ServerProcess(allocations=True) as counted:
        directory = counted.allocation_counter.directory
        assert allocation_dir_of(counted.pid) == directory
        assert loadbench.Sampler(counted.pid).allocations == directory
    assert not Path(directory).exists()  # removed with the server


def test_every_entry_point_is_counted(tmp_path):
    """malloc, calloc, realloc (NULL, grow, to 0), the memalign family and free, exactly."""
    source = tmp_path / "entry_points.c"
    source.write_text(
        r"""
#include <malloc.h>
#include <stdlib.h>
void* volatile keep;
int main(void) {
    void* p = malloc(10); keep = p;             /* call 1: 10 B */
    p = realloc(p, 20); keep = p;               /* call 2 + free 1: 20 B */
    free(p);                                    /* free 2 */
    p = calloc(4, 8); keep = p; free(p);        /* call 3: 32 B, free 3 */
    p = realloc(NULL, 5); keep = p;             /* call 4: 5 B */
    p = realloc(p, 0); keep = p;                /* free 4 */
    free(NULL);                                 /* nothing */
    if (posix_memalign(&p, 64, 7) == 0) free(p);/* call 5: 7 B, free 5 */
    p = aligned_alloc(32, 64); free(p);         /* call 6: 64 B, free 6 */
    p = memalign(16, 3); free(p);               /* call 7: 3 B, free 7 */
    p = valloc(1); free(p);                     /* call 8: 1 B, free 8 */
    return 0;
}
"""
    )
    binary = tmp_path / "entry_points"
    subprocess.run(["gcc", "-O0", "-o", str(binary), str(source)], check=True)
    counter = AllocationCounter.create("test")
    try:
        base = {"PATH": "/usr/bin:/bin"}
        subprocess.run([str(binary)], env=counter.environment(base), check=True)
        totals = _core.allocation_totals(counter.directory)
    finally:
        counter.remove()
    # the process's own start-up (libc's stdio is unused) adds nothing before main
    assert (totals["calls"], totals["frees"], totals["bytes"]) == (
        8,
        8,
        10 + 20 + 32 + 5 + 7 + 64 + 3 + 1,
    )
    assert len(totals["pids"]) == 1


def test_serve_and_run_cli_report_allocations():
    """`loadbench serve --allocations` + `loadbench run --sample-pid` prints allocs/response."""
    serve = subprocess.Popen(
        [sys.executable, "-m", "loadbench", "serve", "--allocations"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lines, url, pid = [], None, None
        deadline = time.monotonic() + 15
        while (
            url is None or pid is None or not any("allocations counted" in x for x in lines)
        ) and time.monotonic() < deadline:
            line = serve.stdout.readline()
            lines.append(line)
            if "listening on http://" in line:
                url = line.split("listening on ")[1].strip()
            if line.startswith("loadbench serve: pid "):
                pid = int(line.split()[3].rstrip(","))
        assert url and pid, lines
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "loadbench",
                "run",
                url + "plaintext",
                "-c",
                "2",
                "-d",
                "0.5",
                "--warmup",
                "0.2",
                "--sample-pid",
                str(pid),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        serve.terminate()
        serve.wait(timeout=15)
    assert run.returncode == 0, run.stderr
    line = next(x for x in run.stdout.splitlines() if x.strip().startswith("allocations"))
    assert "0 malloc calls" in line and "= 0 allocs/response" in line


def test_sampler_with_an_unreadable_directory_is_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="allocation counter's directory"):
        loadbench.Sampler(os.getpid(), allocations=str(tmp_path / "gone"))


def _small_sweep(out: Path, targets: list, **settings) -> None:
    """The Beast server and ``targets``: plaintext over http at C = 4, one short window each."""
    from loadbench.sweep.runner import Sweep

    Sweep(
        targets=[Target("beast"), *targets],
        workloads=["plaintext"],
        concurrencies=[4],
        protocols=["http"],
        repeats=1,
        duration=0.6,
        warmup=0.2,
        contended_reruns=0,
        **settings,
    ).run(out, progress=False, notes=False)


def test_sweep_with_allocations_reports_them(tmp_path, k_mallocs, k_mallocs_static):
    """A sweep with allocations = true: allocs/req and bytes/req rows for the servers whose heap
    the counter sees, n/a with the reason for the one it cannot, in the results, report.md, the
    dashboard data and compare."""
    from loadbench.report import document, model
    from loadbench.report.comparison import compare
    from loadbench.report.dashboard import dashboard_data
    from loadbench.sweep import results_folder as results

    _small_sweep(
        tmp_path,
        [
            Target(
                "k-mallocs",
                kind="command",
                argv=[str(k_mallocs), "{port}", str(K), str(SIZE)],
                allocator="libc malloc: every block of the test server",
            ),
            Target("static", kind="command", argv=[str(k_mallocs_static), "{port}", "3", "100"]),
        ],
        allocations=True,
    )
    records = {r["target"]: r for r in results.read_records(tmp_path / "results.jsonl")}
    blocks = {t: r["result"]["server"]["allocations"] for t, r in records.items()}
    assert blocks["k-mallocs"]["calls_per_req"] == pytest.approx(K, rel=0.01)
    assert blocks["beast"]["calls_per_req"] == 0
    assert blocks["static"]["na"].startswith("not loaded")
    document.write_report(tmp_path)
    text = (tmp_path / "report.md").read_text()
    section = text.split("## Heap allocations per request")[1].split("\n## ")[0]
    rows = {
        line.split("|")[1].strip(): line for line in section.splitlines() if line.startswith("| ")
    }
    k = blocks["k-mallocs"]  # the report prints the cell's own figures (K within 1 %, above)
    assert (
        f"| {k['calls_per_req']:.2f} | {k['bytes_per_req']:.0f} |" in rows["k-mallocs"]
        and "every block of the test server" in rows["k-mallocs"]
    )
    assert "| 0 | 0 | 1 |" in rows["beast"]
    assert "n/a - not loaded in k_mallocs_stat" in rows["static"]
    assert "| allocs/req |" in text and "| bytes allocated/req |" in text  # rows of the load table
    servers = text.split("## Servers")[1].split("\n## ")[0]  # which binary each row measured
    assert f"  - executable: `{k_mallocs}` sha256 `" in servers
    assert "- **beast**: " in servers and "  - version: loadbench " in servers  # what it says it is
    m = model.load(tmp_path)
    cells = {c["t"]: c for c in dashboard_data(m)["cells"]}
    assert cells["k-mallocs"]["allocs"] == pytest.approx(K, rel=0.01)
    assert cells["static"]["allocs"] is None and cells["static"]["allocs_na"]
    frame = compare(tmp_path, tmp_path, metrics=["allocs"])
    assert set(frame["target"]) == {"beast", "k-mallocs"}  # n/a has no figure to compare


@pytest.mark.skipif(
    __import__("loadbench.core.allocation_sites", fromlist=["x"]).heaptrack_missing() is not None,
    reason="needs heaptrack, gdb and zstd",
)
def test_allocation_sites_name_the_function_and_its_share(tmp_path, k_mallocs):
    """allocation_sites = true: heaptrack attached for one window names the function that
    allocates K times per request, with K calls and K x SIZE bytes per response."""
    from loadbench.report import document
    from loadbench.sweep.results_folder import ResultsFolder

    _small_sweep(
        tmp_path,
        [Target("k-mallocs", kind="command", argv=[str(k_mallocs), "{port}", str(K), str(SIZE)])],
        allocation_sites=True,
    )
    sites = ResultsFolder(tmp_path).allocation_sites()
    assert set(sites) == {"beast", "k-mallocs"} and "error" not in sites["beast"], sites
    top = sites["k-mallocs"]["sites"][0]
    malloc_line = next(  # the line of the K mallocs in the server's source
        n
        for n, line in enumerate((HERE / "servers" / "k_mallocs.c").read_text().splitlines(), 1)
        if "malloc(block_size)" in line
    )
    assert top["function"] == "allocate_for_request"
    assert top["location"].endswith(f"k_mallocs.c:{malloc_line}"), top
    assert top["calls_per_req"] == pytest.approx(K, rel=0.01)
    assert top["bytes_per_req"] == pytest.approx(K * SIZE, rel=0.01)
    document.write_report(tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert "## Where the allocations happen (heaptrack)" in text
    assert "| `allocate_for_request` | " in text


@pytest.mark.skipif(
    __import__("loadbench.core.allocation_sites", fromlist=["x"]).heaptrack_missing() is not None,
    reason="needs heaptrack, gdb and zstd",
)
def test_a_runtime_heaptrack_cannot_enter_is_one_error_and_leaves_nothing(tmp_path):
    """heaptrack injected into the Go peer never starts recording: one clear error within
    seconds, not a reader blocked on heaptrack's pipe for ever, and no heaptrack process left."""
    from loadbench.core.allocation_sites import SiteRecorder
    from loadbench.core.errors import ServerError
    from loadbench.sweep.registry import peer_registry

    peers = Path(__file__).resolve().parents[1] / "bench" / "peers"
    go = {t.name: t for t in peer_registry(peers)}["go"]
    if go.unavailable_reason("http", peers):
        pytest.skip(go.unavailable_reason("http", peers))
    server = launch(go, "http", workers=1, cpus=None, peers_dir=peers)
    recorder = SiteRecorder(tmp_path)
    try:
        with pytest.raises(ServerError, match="never started recording"):
            recorder.attach([server.pid])
    finally:
        server.stop()
    left = subprocess.run(
        ["pgrep", "-f", f"heaptrack -o {tmp_path}"], capture_output=True, text=True
    )
    assert left.stdout.strip() == ""


def test_the_go_runtime_reads_own_allocator_not_a_tiny_figure():
    """The Go peer's heap is its own (mmap); the runtime's stray libc call when it starts a
    thread must not make it read '0.0001 allocs/req' and rank near the top: n/a, own allocator."""
    from loadbench.sweep.registry import peer_registry

    peers = Path(__file__).resolve().parents[1] / "bench" / "peers"
    go = {t.name: t for t in peer_registry(peers)}["go"]
    if go.unavailable_reason("http", peers):
        pytest.skip(go.unavailable_reason("http", peers))
    server = launch(go, "http", workers=1, cpus=None, peers_dir=peers, allocations=True)
    try:
        got = [
            _measure(server.base_url + "/plaintext", server.pid, connections=25) for _ in range(3)
        ]
    finally:
        server.stop()
    for block in got:
        assert block["calls_per_req"] is None and block["na"].startswith("own allocator"), block
        assert block["run_calls"] < 25
