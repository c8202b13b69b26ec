"""The installed package exposes its native core and build facts."""

from importlib.metadata import version

import loadbench


def test_build_info_names_the_real_libraries():
    info = loadbench.build_info()
    assert info["version"] == loadbench.__version__ == version("loadbench")
    major, minor, _ = (int(x) for x in info["boost"].split("."))
    assert (major, minor) >= (1, 74)
    assert "OpenSSL" in info["openssl"]
