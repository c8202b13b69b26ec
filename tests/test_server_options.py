"""The reference server's options are declared once (cpp/core/server/base/options.hpp): the binary's
parser and --help, the in-process server's keywords, `loadbench serve`'s flags and
ServerProcess's argv all come from that list, and one value is refused with one message by each
of them."""

from __future__ import annotations

import dataclasses
import subprocess

import pytest

from loadbench.cli import main
from loadbench.core import _core
from loadbench.core.errors import ConfigError
from loadbench.core.paths import server_binary
from loadbench.core.server import ServerProcess, option_args, server_options

OPTIONS = server_options()


def test_every_option_reaches_every_front_door(capsys):
    binary_help = subprocess.run(
        [server_binary(), "--help"], capture_output=True, text=True, check=True
    ).stdout
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    serve_help = capsys.readouterr().out
    fields = {f.name for f in dataclasses.fields(ServerProcess)}
    assert len(OPTIONS) >= 19
    for o in OPTIONS:
        assert f"  {o['flag']}" in binary_help, o["flag"]
        assert o["flag"] in serve_help, o["flag"]
        assert o["keyword"] in fields, o["keyword"]
    # the defaults the usage prints are ServerConfig's initializers
    assert "worker threads, each with its own event loop (default 1)" in binary_help


def test_argv_gives_what_differs_from_the_default():
    by = {o["keyword"]: o for o in OPTIONS}
    assert option_args(by["workers"], 1) == []
    assert option_args(by["workers"], 4) == ["--workers", "4"]
    assert option_args(by["http"], False) == ["--no-http"] and option_args(by["http"], True) == []
    assert option_args(by["tls"], True) == ["--tls"] and option_args(by["tls"], None) == []
    server = ServerProcess(
        workers=2, http=False, tls=True, tls_port=8443, h3=True, h3_0rtt=True, tls_resumption=True
    )
    assert server.argv()[1:] == [
        "--no-http",
        "--tls",
        "--tls-port",
        "8443",
        "--workers",
        "2",
        "--h3",
        "--h3-0rtt",
    ]


@pytest.mark.parametrize(
    "keyword, value, message",
    [
        ("workers", 0, "--workers expects an integer from 1 to 1024, got '0'"),
        ("port", 70000, "--port expects an integer from 0 to 65535, got '70000'"),
        ("accept", "nope", "--accept expects 'reuseport' or 'shared', got 'nope'"),
    ],
)
def test_one_value_one_message_from_every_front_door(keyword, value, message, capsys):
    flag = next(o["flag"] for o in OPTIONS if o["keyword"] == keyword)
    binary = subprocess.run([server_binary(), flag, str(value)], capture_output=True, text=True)
    assert binary.returncode != 0 and message in binary.stdout + binary.stderr
    with pytest.raises(ValueError, match=message):
        _core.Server(**{keyword: value})
    with pytest.raises(ConfigError, match=message):
        ServerProcess(**{keyword: value}).start()
    if keyword != "accept":  # argparse checks its choices first
        assert main(["serve", flag, str(value)]) != 0
        assert message in capsys.readouterr().err


def test_in_process_server_takes_every_keyword_and_refuses_others():
    with pytest.raises(TypeError, match="unexpected keyword argument 'wrokers'"):
        _core.Server(wrokers=2)
    keywords = {o["keyword"]: None for o in OPTIONS}  # None: the default
    keywords.update(workers=2, tls=True, tls_resumption=False)
    server = _core.Server(**keywords)
    assert server.workers == 2 and not server.running
