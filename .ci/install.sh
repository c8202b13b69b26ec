#!/usr/bin/env bash
# Installs everything loadbench needs on a fresh Debian machine, then loadbench itself.
#   bash .ci/install.sh                  the package (build + runtime dependencies) and the peers
#                                        the default sweep measures that the registries serve
#   bash .ci/install.sh test             the same with everything its test suite uses
#   bash .ci/install.sh --dry-run [test] print the Debian packages it would install, one per
#                                        line on stdout, and install nothing (exit 0)
# A package is installed only when it is missing. Every probe below works on a machine that has
# none of the tools yet: nothing is asked of a program before the package that brings it is in.
set -euo pipefail
cd "$(dirname "$0")/.."

dry_run=0
extras=""
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry_run=1 ;;
    test) extras=test ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "loadbench setup: unknown argument '$arg' (use: [--dry-run] [test])" >&2; exit 2 ;;
  esac
done

# Each line carries the seconds since the script started: where a fresh machine's install goes.
say() { echo "loadbench setup [${SECONDS} s]: $*" >&2; }
# Up front, how long it takes (a fresh 2-core Debian 12: the Debian packages, the C++ core, the
# peers built beside it), and the default sweep after it: the planned minutes of
# `python3 -m loadbench sweep` / `--quick` on a fresh Debian 12 with these peers (Beast and 9 peers,
# Sweep.planned_seconds; tests/test_install_script.py holds these to it). The sweep's own plan
# line gives the figure for the peers this machine has.
INSTALL_MIN=6   # estimated: 2.6 min for the build alone on a fresh VM (issue 58) + the peers
SWEEP_MIN=20
QUICK_MIN=3
if [ "$extras" = test ]; then
  say "about $INSTALL_MIN min on a fresh 2-core machine for the build and the peers, more for the suite's own tools (clang, chromium, heaptrack, h2spec); the suite then runs in its 10-min budget"
else
  say "about $INSTALL_MIN min on a fresh 2-core machine for the build and the peers; then \`python3 -m loadbench sweep\` is planned at about $SWEEP_MIN min on a quiet machine with them (its plan line gives this machine's figure; re-runs of contended windows add to it; \`--quick\`: about $QUICK_MIN min)"
fi
have() { command -v "$1" >/dev/null 2>&1; }
# dpkg's own record; on a machine without dpkg-query nothing counts as installed.
installed() { have dpkg-query && [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]; }
# apt's metadata (needs `apt-get update` once; before that, the fallbacks below apply).
in_apt() { have apt-cache && apt-cache show "$1" >/dev/null 2>&1; }

packages=()
need() { packages+=("$1"); }
# A tool counts when it is on PATH (however it got there) or its Debian package is installed.
need_tool() { have "$1" || installed "$2" || need "$2"; }
# A library counts when its Debian development package is installed.
need_lib() { installed "$1" || need "$1"; }

# --- build: compiler, build tools, C++ libraries ----------------------------------------------
need_tool g++ g++
need_tool cmake cmake
need_tool ninja ninja-build
need_tool make make
need_tool pkg-config pkg-config
need_lib libssl-dev
need_lib libnghttp2-dev
need_lib libwolfssl-dev   # the generator's opt-in --tls-library wolfssl (cheaper full handshakes)
# The generator's --h3 (HTTP/3): QUIC on ngtcp2 (Debian 12: 0.12) with its GnuTLS crypto library,
# HTTP/3 on nghttp3 (0.8). Optional in the build: without them it leaves HTTP/3 out and says so.
need_lib libngtcp2-dev
need_lib libngtcp2-crypto-gnutls-dev
need_lib libnghttp3-dev
need_lib libgnutls28-dev
# perf (Debian's linux-perf: /usr/bin/perf) samples a server's CPU for `loadbench run --profile`,
# `serve --profile` and a sweep's profile = true (tests/test_profile.py); a run without it says so.
need_tool perf linux-perf
# Debian 12 ships Boost 1.81 beside its 1.74 default: prefer the newer Beast when apt has it.
if ! installed libboost1.81-dev && ! installed libboost-dev && ! installed libboost1.74-dev; then
  if in_apt libboost1.81-dev || ! have apt-cache; then need libboost1.81-dev; else need libboost-dev; fi
fi

# --- Python, its headers (the extension builds against them) and pip -----------------------------
if ! have python3; then
  need python3; need python3-dev; need python3-pip; need python3-venv
else
  # Debian's python3 has no headers without python3-dev; a pyenv/venv/conda Python ships its own.
  if ! python3 -c 'import os,sys,sysconfig; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)' 2>/dev/null; then
    py_prefix="$(python3 -c 'import sys; print(sys.base_prefix)')"
    py_ver="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    if [ "$py_prefix" = /usr ]; then
      # Debian's default python3 -> python3-dev; another Debian python3.X -> python3.X-dev.
      if [ -x /usr/bin/python3 ] && [ "$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$py_ver" ]; then
        need python3-dev
      else
        need "python${py_ver}-dev"
      fi
    else
      say "error: $(command -v python3) (Python $py_ver, prefix $py_prefix) has no C headers (Python.h),"
      say "       and it is not Debian's python3, so no Debian package can add them: install that"
      say "       Python's development files, or run this script with Debian's python3 first on PATH."
      [ "$dry_run" = 1 ] || exit 1
    fi
  fi
  python3 -m pip --version >/dev/null 2>&1 || { need python3-pip; need python3-venv; }
fi

# --- the peers the default sweep measures (bench/peers/peers.toml), from the registries ---------
# Command 1 (`bash .ci/install.sh && python3 -m loadbench sweep`) compares the Beast server with
# every peer Debian, the Go module proxy and PyPI serve: nginx, h2o, node, ruby-puma, caddy (the
# HTTP/3 sweeps' peer) from Debian; go and quic-go built from the Go module proxy, the Nim peer
# built by Debian's nim, pypy-hypercorn (Debian's pypy3 + hypercorn from PyPI) - all below, beside
# pip - and hypercorn from PyPI into loadbench's own Python (the `peers` extra). Only the peers
# that need a toolchain no registry serves (Rust: rustup; CPython 3.13) wait for
# bash bench/install-peers.sh. The test suite loads the same peers.
need_tool openssl openssl        # the self-signed certificate of every https / h2 cell
have nginx || installed nginx-light || installed nginx || need nginx-light   # the nginx peer
need_tool h2o h2o                # the h2o peer (and the generator's h2 tests' server)
need_tool node nodejs            # the node peer (node:http, node:http2)
need_tool ruby ruby              # the Ruby peer: puma on Debian's ruby (YJIT), no build
need_tool puma puma
need_lib ruby-rack               #   and the Rack it reports
need_tool caddy caddy            # the HTTP/3 peer (and the generator's h3 tests' server)
need_tool go golang-go           # Debian 12: Go 1.19, which fetches the Go peers' newer toolchain
                                 #   from the Go module proxy (bench/go-toolchain.sh); also h2spec
need_tool nim nim                # the Nim peer, built below in seconds
need_tool pypy3 pypy3            # the PyPy hypercorn peer's interpreter; Debian's pypy3 needs
need_lib pypy3-venv              #   it for a venv

# --- what the test suite uses ------------------------------------------------------------------
if [ "$extras" = test ]; then
  need_lib libgtest-dev
  # The fuzz tests (tests/test_fuzz.py) build with clang and link libFuzzer + the sanitizer
  # runtimes from the compiler-rt package of clang's own major version (Debian 12: 14).
  need_tool clang++ clang
  clang_major=""
  if have clang++; then
    clang_major="$(clang++ --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n 1 || true)"
  fi
  if [ -z "$clang_major" ] && have apt-cache; then
    # clang is not installed yet: its Debian package depends on clang-N.
    clang_major="$(apt-cache depends clang 2>/dev/null | sed -n 's/.*Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1 || true)"
  fi
  clang_rt="libclang-rt-${clang_major:-14}-dev"
  if ! installed "$clang_rt"; then
    if ! have clang++ || ! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-$(uname -m).a" >/dev/null; then
      need "$clang_rt"
    fi
  fi
  need_tool curl curl              # HTTP/2 server tests (curl --http2)
  need_tool h2load nghttp2-client  # h2load and nghttp: HTTP/2 clients no one here wrote
  need_tool nghttpd nghttp2-server # nghttpd and h2o: HTTP/2 servers the generator's h2 tests load
  # (h2o, caddy, node, nginx, puma, Go, Nim, PyPy: the peers above, which the tests load too)
  need_tool ip iproute2            # network namespaces: separate generator hosts on one machine
  need_tool wrk wrk                # a load tool no one here wrote (tests/test_bench_server_syscalls.py)
  need_tool strace strace          # a server's own system calls per connection (same test)
  need_lib liburing-dev            # bench/io_uring's closed loop on io_uring (tests/test_bench_io_uring.py)
  need_tool chromium chromium      # the HTML report is checked in a real (headless) browser
  need_tool clang-format-14 clang-format-14  # the C++ style (tests/test_style.py; .clang-format is v14's)
  need_tool heaptrack heaptrack    # allocation sites (tests/test_allocations.py): heaptrack attaches
  need_tool gdb gdb                #   with gdb and compresses its record with zstd
  need_tool zstd zstd
  need_tool ccache ccache          # the wheel's and the suite's ASan build's compiles, kept: a clean
                                   #   clone on this machine (CI) recompiles nothing it compiled before
fi

# rustls (the generator's opt-in --tls-library rustls) is built by cargo from the crate registry
# when a Rust toolchain is on PATH; Debian 12's own rustc (1.63) is too old, so none is installed
# here: without one, loadbench builds without rustls and says so.
cargo_bin="$(command -v cargo || { [ -x "$HOME/.cargo/bin/cargo" ] && echo "$HOME/.cargo/bin/cargo"; } || true)"
if [ -n "$cargo_bin" ]; then
  say "rustls: $("$cargo_bin" --version 2>/dev/null || echo cargo) found - the build includes --tls-library rustls (needs >= 1.78)"
else
  say "rustls: no cargo on PATH - the build leaves out --tls-library rustls (optional; a Rust toolchain from rustup adds it)"
fi

# h2spec (HTTP/2 conformance, tests/test_h2spec.py) is no Debian package: built by `go install`
# from the Go module proxy, pinned with its dependencies by .ci/h2spec/go.mod, into ~/go/bin.
h2spec_bin="${GOBIN:-$HOME/go/bin}/h2spec"
need_h2spec=0
if [ "$extras" = test ] && ! have h2spec && [ ! -x "$h2spec_bin" ]; then need_h2spec=1; fi

# The peers this install builds (the functions below), each only when it is missing or stale.
peer_builds=()   # "what:function"
if [ ! -x bench/peers/nim/loadbench-peer-nim ] || [ bench/peers/nim/hello.nim -nt bench/peers/nim/loadbench-peer-nim ]; then
  peer_builds+=("the Nim peer (nim c, release build):build_nim_peer")
fi
if [ ! -x bench/peers/go/loadbench-peer-go ] || [ ! -x bench/peers/quicgo/loadbench-peer-quicgo ]; then
  peer_builds+=("the Go peers go and quic-go (go build, Go module proxy):build_go_peers")
fi
[ -x bench/peers/pypy/.venv/bin/hypercorn ] || peer_builds+=("the PyPy peer (pypy3 venv, hypercorn from PyPI):build_pypy_peer")

if [ "$dry_run" = 1 ]; then
  [ "$need_h2spec" = 1 ] && say "would build h2spec into $h2spec_bin (go install, .ci/h2spec/go.mod)"
  for job in "${peer_builds[@]}"; do say "would build ${job%%:*}"; done
  if ! have python3 || ! python3 -c 'import hypercorn' >/dev/null 2>&1; then
    say "would pip install hypercorn (PyPI, the peers extra) with loadbench"
  fi
  say "the Rust and CPython 3.13 peers wait for bash bench/install-peers.sh (rustup, no Debian python3.13)"
  say "dry run: the Debian packages this machine lacks for '${extras:-build}' (nothing installed):"
  if [ ${#packages[@]} -gt 0 ]; then printf '%s\n' "${packages[@]}"; fi
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if have sudo; then SUDO="sudo"; else say "error: not root and no sudo: cannot install ${packages[*]}"; exit 1; fi
fi
if [ ${#packages[@]} -gt 0 ]; then
  say "installing Debian packages: ${packages[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
  # Debian's nginx and caddy packages start system services (:80, :443, caddy's admin :2019);
  # loadbench and its tests run their own instances on free ports.
else
  say "all Debian packages present"
fi

# What is built beside loadbench (h2spec, the peers the tests load) builds in the background,
# each its own job, while pip fetches loadbench's dependencies and compiles its C++ core: their
# downloads and single-threaded compiles fill the time pip waits on the network (one after the
# other, before pip, they took 100 s of a fresh machine; one after the other beside it, at a
# lower priority, they outlasted it by two minutes). Each job's output is shown after pip's.
side_jobs=()   # "pid:what:log"
side_job() {   # side_job WHAT FUNCTION
  local log; log="$(mktemp "${TMPDIR:-/tmp}/loadbench-setup-side.XXXXXX")"
  "$2" >"$log" 2>&1 &
  side_jobs+=("$!:$1:$log")
}
build_h2spec() {
  say "building h2spec into $h2spec_bin (go install from the Go module proxy, .ci/h2spec/go.mod)"
  # GOTOOLCHAIN=local: the machine's Go builds it (go.mod asks 1.19), never a downloaded one.
  cd .ci/h2spec && GOBIN="$(dirname "$h2spec_bin")" GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
    go install github.com/summerwind/h2spec/cmd/h2spec
}
# The peers the default sweep measures (and the tests load) that this install can build, as
# bench/install-peers.sh builds them: the same functions for `bash .ci/install.sh` and `... test`.
build_nim_peer() {
  say "building the Nim peer (nim c -d:release bench/peers/nim/hello.nim)"
  cd bench/peers/nim && nim c -d:release --hints:off -o:loadbench-peer-nim hello.nim >/dev/null
}
# The Go peers (net/http, quic-go) need Go 1.26, which Debian 12's Go fetches from the Go module
# proxy as the golang.org/toolchain module (bench/go-toolchain.sh).
build_go_peers() {
  local go_bin peer dir binary pids=()
  go_bin="$(bash bench/go-toolchain.sh)"
  for peer in go:loadbench-peer-go quicgo:loadbench-peer-quicgo; do
    dir="bench/peers/${peer%%:*}" binary="${peer#*:}"
    [ -x "$dir/$binary" ] && continue
    say "building the ${peer%%:*} peer ($dir: go build, modules from the Go module proxy)"
    (cd "$dir" && GOROOT="" GOTOOLCHAIN=local GOFLAGS=-mod=readonly "$go_bin" build -o "$binary" .) &
    pids+=("$!")
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
}
build_pypy_peer() {
  say "making bench/peers/pypy/.venv with pypy3, pip install hypercorn (PyPI)"
  pypy3 -m venv bench/peers/pypy/.venv
  bench/peers/pypy/.venv/bin/python -m pip install --quiet --disable-pip-version-check hypercorn
}
[ "$need_h2spec" = 1 ] && side_job h2spec build_h2spec
for job in "${peer_builds[@]}"; do side_job "${job%%:*}" "${job##*:}"; done

pip_flags=(--quiet --disable-pip-version-check)
# Debian's own python3 refuses system-wide pip installs (PEP 668); a pyenv/venv python does not.
if python3 -c 'import sys,sysconfig,os; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"),"EXTERNALLY-MANAGED")) and sys.prefix==sys.base_prefix else 1)'; then
  pip_flags+=(--break-system-packages)
fi
# the `peers` extra: hypercorn (PyPI), the hypercorn peer, in the Python that runs the sweep
target=".[peers]"
[ -n "$extras" ] && target=".[$extras,peers]"
# Through ccache where installed (the test install brings it): a clean clone on a machine that
# built these sources before (CI) takes every object from the cache. CMake reads these on a
# build dir's first configuration only.
if have ccache; then export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
say "building and installing $target with $(command -v python3) (the C++ core compiles once; later installs are incremental)"
pip_status=0
python3 -m pip install "${pip_flags[@]}" "$target" || pip_status=$?
side_failed=()
for job in "${side_jobs[@]}"; do
  IFS=: read -r pid what log <<<"$job"
  wait "$pid" || side_failed+=("$what")
  cat "$log" >&2; rm -f "$log"
done
[ ${#side_failed[@]} = 0 ] || { say "error: building ${side_failed[*]} failed (output above)"; exit 1; }
[ "$pip_status" = 0 ] || { say "error: pip install $target failed (exit $pip_status)"; exit 1; }
if have pyenv; then pyenv rehash || true; fi
say "done ($(python3 -c 'import loadbench; print("loadbench", loadbench.__version__)'))"
