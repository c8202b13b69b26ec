"""Sweep TOML files: the example parses, every bad key or value is named in the error."""

from pathlib import Path

import pytest

from loadbench import ConfigError
from loadbench.sweep.file import load_sweep, parse_seconds, sweep_from_dict

REPO = Path(__file__).resolve().parent.parent


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    return path


def test_example_file_builds_the_documented_sweep():
    sweep = load_sweep(REPO / "bench" / "sweeps" / "example.toml")
    assert [t.name for t in sweep.targets][:3] == ["beast", "beast-2w", "python-asyncio"]
    assert sweep.targets[1].workers == 2 and sweep.targets[1].variant_of == "beast"
    assert sweep.concurrencies == [1, 10, 50]
    assert sweep.protocols == ["http", "https", "h2c", "h2"]
    assert sweep.streams_for("h2c") == 10 and sweep.detail_protocols == ["http", "https"]
    assert sweep.targets[2].unavailable_reason("h2c") == "the asyncio peer speaks HTTP/1.1 only"
    assert sweep.duration == 2.0 and sweep.warmup == 0.5 and sweep.repeats == 3
    workloads = {w.name: w for w in sweep.workloads}
    assert workloads["echo"].body == "x" * 4096 and workloads["echo"].method == "POST"
    assert workloads["json"].concurrencies == [50]
    assert [r["path"] for r in workloads["mixed"].requests] == ["/plaintext", "/json"]
    ids = [c.id for c in sweep.cells()]
    assert len(ids) == len(set(ids))
    assert "beast|https|plaintext|connect20|r2" in ids
    assert "beast|h2|mixed|c10|r2" in ids and "beast|h2c|plaintext|connect20|r0" not in ids
    # memory per idle connection: 3 hold cells per server, over http only, at C10k
    assert sweep.hold_connections == 10_000
    hold = [c for c in sweep.cells() if c.mode == "hold"]
    assert len(hold) == 3 * len(sweep.targets) and {c.protocol for c in hold} == {"http"}
    assert "python-asyncio|http|plaintext|hold10000|r2" in ids


def test_hold_cells_per_target_over_http_after_its_http_cells():
    sweep = sweep_from_dict(
        {
            "hold_connections": 200,
            "repeats": 2,
            "concurrencies": [1, 4],
            "protocols": ["http", "https"],
            "targets": [{"name": "a", "kind": "beast"}, {"name": "b", "kind": "beast"}],
        }
    )
    ids = [c.id for c in sweep.cells()]
    # in execution order: each target's http load cells, then its hold cells (same server group)
    assert ids[:6] == [
        "a|http|plaintext|c1|r0",
        "a|http|plaintext|c1|r1",
        "a|http|plaintext|c4|r0",
        "a|http|plaintext|c4|r1",
        "a|http|plaintext|hold200|r0",
        "a|http|plaintext|hold200|r1",
    ]
    assert ids.count("b|http|plaintext|hold200|r1") == 1 and len(ids) == 2 * (2 * 2 * 2 + 2)
    hold = sweep.cells()[4]
    assert hold.label() == "a http plaintext 200 idle connections held #1"
    # a hold cell's plan: its own server start + the measured cost per connection, no window
    load_only = sweep_from_dict(
        {
            "repeats": 2,
            "concurrencies": [1, 4],
            "protocols": ["http", "https"],
            "targets": [{"name": "a", "kind": "beast"}, {"name": "b", "kind": "beast"}],
        }
    )
    assert sweep.planned_seconds() == pytest.approx(
        load_only.planned_seconds() + 4 * sweep.hold_cell_seconds()
    )
    assert sweep.hold_cell_seconds() == pytest.approx(0.15 + 0.25 + 200 * 75e-6)
    # without http among the load protocols the hold cells still run, over http
    tls_only = sweep_from_dict({"hold_connections": 10, "protocols": ["https"]})
    assert [c.id for c in tls_only.cells() if c.mode == "hold"] == [
        "beast|http|plaintext|hold10|r0"
    ]
    assert sweep_from_dict({}).hold_connections == 0
    assert not [c for c in sweep_from_dict({}).cells() if c.mode == "hold"]


def test_the_default_sweep_has_no_hold_cells():
    from loadbench.sweep.file import default_sweep

    sweep = default_sweep(peers_dir=REPO / "bench" / "peers")
    assert sweep.hold_connections == 0 and all(c.mode != "hold" for c in sweep.cells())


def test_full_sweep_from_dict_values():
    sweep = sweep_from_dict(
        {
            "duration": "500ms",
            "warmup": 0,
            "repeats": 2,
            "concurrencies": [2, 4],
            "protocols": ["http"],
            "workers": 1,
            "server_cpus": [0],
            "generator_cpus": [1],
            "targets": [
                {"name": "beast", "kind": "beast"},
                {"name": "ext", "kind": "url", "url": "http://127.0.0.1:9", "pid": 1},
            ],
            "workloads": [
                "plaintext",
                {"name": "big", "method": "POST", "path": "/echo", "body_size": 10},
            ],
        }
    )
    assert sweep.duration == 0.5 and sweep.warmup == 0.0
    assert [w.name for w in sweep.workloads] == ["plaintext", "big"]
    assert sweep.workloads[1].body == "x" * 10
    assert len(sweep.cells()) == 2 * 2 * 2 * 2  # targets x workloads x concurrencies x repeats


@pytest.mark.parametrize(
    "text, named",
    [
        ("durration = 2", "unknown key 'durration'"),
        ("duration = 'two'", "duration: 'two' is not a duration"),
        ("repeats = 0", "repeats: 0 is out of range"),
        ("repeats = 1.5", "repeats: expected a positive integer"),
        ("concurrencies = [1, 'x']", "concurrencies[1]: expected an integer"),
        ("concurrencies = [0]", "concurrencies: 0 is not a positive integer"),
        ("protocols = ['http', 'h4']", "protocols: 'h4' is not one of http, https, h2c, h2, h3"),
        ("streams = {http = 4}", "streams.http: HTTP/1.1 has no streams"),
        ("pipeline = 0", "pipeline: 0 is not a positive integer"),
        ("pipeline = '16'", "pipeline: expected HTTP/1.1 requests in flight"),
        (
            "[[workloads]]\nname = 'w'\npipeline = 0",
            "workloads[0]: workload 'w': pipeline: 0 is not a positive integer",
        ),
        ("streams = {h2c = 0}", "streams.h2c: 0 is not a positive integer"),
        ("requests = 0", "requests: 0 is not a positive integer"),
        ("connection_setup = 'yes'", "connection_setup: expected true or false"),
        ("generator_cpus = [999]", "generator_cpus: CPU 999 is not available"),
        ("[[targets]]\nname = 'x'\nkind = 'docker'", "targets[0]: target 'x': kind must be one of"),
        (
            "[[targets]]\nname = 'x'\nkind = 'command'\nargs = ['a']",
            "unknown key 'targets[0].args'",
        ),
        ("[[targets]]\nkind = 'beast'", "targets[0].name is required"),
        (
            "[[targets]]\nname = 'x'\nkind = 'command'\nargv = ['a', 1]",
            "targets[0].argv[1]: expected a string",
        ),
        ("[[targets]]\nname = 'x'\nkind = 'command'", "a command target needs argv"),
        ("[[targets]]\nname='a'\n[[targets]]\nname='a'", "target names must be unique"),
        ("workloads = ['plain']", "workloads[0]: 'plain' is not a built-in workload"),
        (
            "[[workloads]]\nname = 'w'\npath = 'nope'",
            "workloads[0]: workload 'w': path must start with '/'",
        ),
        ("[[workloads]]\nname = 'w'\nbdy = 'x'", "unknown key 'workloads[0].bdy'"),
        (
            "[[workloads]]\nname = 'w'\n[[workloads.requests]]\npath = '/'\nverb = 'GET'",
            "unknown key workloads[0].requests[0].'verb'",
        ),
        ("duration = ", "invalid TOML"),
        ("interval = 0", "interval: 0.0 is out of range"),
        ("interval = [1]", "interval"),
        ("open_fractions = [0.5, 3]", "open_fractions: 3 is not a fraction of capacity in (0, 2]"),
        ("open_fractions = 0.5", "open_fractions: expected a list of fractions"),
        ("capacity = ['p99<10ms']\ncapacity_hold = 0", "capacity_hold: 0.0 is not a duration > 0"),
        ("capacity_hold = 'long'", "capacity_hold: 'long' is not a duration"),
        ("[run]\npipeline = 4", "run.pipeline: the sweep sets pipeline itself"),
        ("[run]\nsend_batchh = '1ms'", "run.send_batchh: unknown option"),
        ("[run]\nseed = 'seven'", "run.seed: expected integer, not 'seven'"),
        ("[run]\nsend_batch = 'soon'", "bad run.send_batch 'soon'"),
        ("run = 3", "run"),
        ("baseline = 'nginx'", "baseline 'nginx' is not one of the targets (beast)"),
        ("hold_connections = -5", "hold_connections: -5 is not a number of connections"),
        ("hold_connections = '200'", "hold_connections: expected idle keep-alive connections"),
        ("hold_connections = 2.5", "hold_connections: expected idle keep-alive connections"),
        ("hold_connections = true", "hold_connections: expected idle keep-alive connections"),
        ("hold_connections = 10\nconnection_setup_workload = 'echo'", "'echo' is not a plain GET"),
        (
            "hold_connections = 10\nconnection_setup_workload = 'nope'",
            "connection_setup_workload 'nope' (the hold cells' request) is neither",
        ),
    ],
)
def test_bad_key_or_value_is_named(tmp_path, text, named):
    with pytest.raises(ConfigError) as info:
        load_sweep(write(tmp_path, text))
    assert named in str(info.value)
    assert str(tmp_path / "sweep.toml") in str(info.value)


def test_timeline_interval_is_a_sweep_setting():
    """Finer timeline intervals than the window: report.html draws a timeline per cell."""
    assert sweep_from_dict({}).interval == 1.0
    sweep = sweep_from_dict({"interval": "100ms"})
    assert sweep.interval == 0.1 and sweep.settings()["interval"] == 0.1


def test_missing_file_and_durations(tmp_path):
    with pytest.raises(ConfigError, match="cannot read sweep file"):
        load_sweep(tmp_path / "absent.toml")
    assert parse_seconds("2s", "d") == 2.0
    assert parse_seconds("250ms", "d") == 0.25
    assert parse_seconds("1m", "d") == 60.0
    assert parse_seconds(3, "d") == 3.0


def test_a_folder_of_another_sweep_is_refused(tmp_path):
    from loadbench import Sweep

    Sweep(concurrencies=[1])._check_same_sweep(tmp_path)  # writes sweep.json
    with pytest.raises(ConfigError, match="holds results of a different sweep"):
        Sweep(concurrencies=[2]).run(tmp_path, progress=False)
    assert not (tmp_path / "results.jsonl").exists()


def test_the_default_folder_of_another_sweep_is_kept_and_the_next_free_name_used(tmp_path):
    # The main command (`loadbench sweep`, no --out) on a fresh clone of this repository on the
    # day and host of a committed report found that report's folder and exited 2: it now keeps
    # that folder and writes beside it.
    from loadbench import Sweep
    from loadbench.cli.sweep import free_out_dir

    base = tmp_path / "2026-11-30-vm"
    base.mkdir()
    Sweep(concurrencies=[1])._check_same_sweep(base)
    (tmp_path / "2026-11-30-vm-2").mkdir()
    Sweep(concurrencies=[3])._check_same_sweep(tmp_path / "2026-11-30-vm-2")
    mine = Sweep(concurrencies=[2])
    assert free_out_dir(mine, base) == tmp_path / "2026-11-30-vm-3"
    assert (
        free_out_dir(Sweep(concurrencies=[1]), base) == base
    )  # the same sweep resumes in its folder
    assert free_out_dir(mine, tmp_path / "new") == tmp_path / "new"
    assert not Sweep(concurrencies=[1]).holds_other_sweep(
        base
    )  # its settings were left as they were
