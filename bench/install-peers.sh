#!/usr/bin/env bash
# Installs the benchmark-only tools used by bench/*.py and the default sweep, each only when missing:
#   peer servers : nginx (nginx-light is enough), node (node:http + node:http2 peers), h2o (Debian),
#                  hypercorn (PyPI, into the Python that runs loadbench: $LOADBENCH_PYTHON, else python3),
#                  the Rust peer (bench/peers/rust: hyper + tokio + rustls from crates.io, cargo build
#                  --release --locked), the Go peer (bench/peers/go: net/http + x/net/http2/h2c from
#                  the Go module proxy, go build), the quic-go peer (bench/peers/quicgo: quic-go's
#                  http3.Server from the Go module proxy, go build), caddy (Debian; HTTP/3 peer),
#                  the axum peer (bench/peers/axum: axum on the Rust
#                  peer's stack, cargo build --release --locked), Ruby + puma + rack (Debian; YJIT is
#                  Debian ruby's own), Nim (Debian nim; bench/peers/nim/hello.nim built -d:release),
#                  PyPy (Debian pypy3, pypy3-venv) with hypercorn from PyPI in bench/peers/pypy/.venv,
#                  and CPython 3.13 with hypercorn in bench/peers/python3.13/.venv when a python3.13
#                  can be found (PATH or pyenv: Debian 12 packages none)
#   generators   : wrk, h2load (nghttp2-client), hey, ab (apache2-utils),
#                  oha (cargo, crates.io), bombardier (go, Go module proxy); for HTTP/3
#                  (bench/h3_generator_cost.py) a second oha built with its `http3` feature into
#                  bench/peers/oha-h3 (cargo install --root; the plain oha has no HTTP/3) and
#                  gtlsclient, ngtcp2's example client (Debian ngtcp2-client), and a quic-go
#                  HTTP/3 client (bench/peers/quic-go-client, go build from the Go module proxy)
#   measuring    : strace (system calls per response / connection) and perf (linux-perf: the
#                  generators' CPU profiles) for bench/generator_vs_peers.py
# Debian's `bombardier` package is an unrelated game: the HTTP tool comes from Go only.
# falcon (Ruby's HTTP/2 server) is published on RubyGems only: not installed, the Ruby peer is puma.
# oha, bombardier and the Rust peer compile for minutes, so they start first, in the background,
# and the script waits for them at the end. Idempotent: a second run installs nothing.
#   bash bench/install-peers.sh
#   bash bench/install-peers.sh --dry-run   the Debian packages it would install, one per line on
#                                           stdout (the cargo/go/nim builds, the venvs and the pip
#                                           installs are said on stderr); installs nothing
set -uo pipefail
dry_run=0
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry_run=1 ;;
    *) echo "install-peers: unknown argument '$arg' (use: [--dry-run])" >&2; exit 2 ;;
  esac
done

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
export PATH="$HOME/.cargo/bin:$HOME/go/bin:/usr/local/go/bin:$PATH"
log_dir="${TMPDIR:-/tmp}/loadbench-install-peers"
[ "$dry_run" = 1 ] || mkdir -p "$log_dir"

have() { command -v "$1" >/dev/null 2>&1; }
here="$(cd "$(dirname "$0")" && pwd)"
peers="$here/peers"
rust_peer="$peers/rust/target/release/loadbench-peer-rust"
go_peer="$peers/go/loadbench-peer-go"
quicgo_peer="$peers/quicgo/loadbench-peer-quicgo"
axum_peer="$peers/axum/target/release/loadbench-peer-axum"
nim_peer="$peers/nim/loadbench-peer-nim"
pypy_venv="$peers/pypy/.venv"
py313_venv="$peers/python3.13/.venv"
# CPython 3.13 for the *-3.13 peers: Debian 12 ships 3.11 only, so one found on PATH or in pyenv
# (pyenv install 3.13); LOADBENCH_PYTHON313 names another.
find_python313() {
  if [ -n "${LOADBENCH_PYTHON313:-}" ]; then echo "$LOADBENCH_PYTHON313"; return; fi
  # a python3.13 on PATH counts only when it runs: pyenv's shim is there but refuses to run while
  # 3.13 is not the selected version, so the pyenv install itself is looked for next
  if have python3.13 && python3.13 -c 'import sys' >/dev/null 2>&1; then command -v python3.13; return; fi
  local candidate found=""
  for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3.13; do
    [ -x "$candidate" ] && found="$candidate"  # a glob of bash's own (a fresh machine may lack ls)
  done
  [ -n "$found" ] && echo "$found"
}
FALCON_NOTE="falcon (Ruby's HTTP/2 server) is not installed: it is published on RubyGems only (no Debian package); the Ruby peer is puma (HTTP/1.1 and HTTPS), its h2c/h2 cells are n/a"
python="${LOADBENCH_PYTHON:-python3}"
installed() { have dpkg-query && [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]; }

if [ "$dry_run" = 1 ]; then
  for tool in oha:cargo bombardier:go; do
    name="${tool%%:*}"; builder="${tool##*:}"
    if have "$name"; then echo "install-peers: $name present ($(command -v "$name"))" >&2
    elif have "$builder"; then echo "install-peers: would build $name with $builder" >&2
    else echo "install-peers: $name needs $builder; it would be skipped (n/a in benchmarks)" >&2; fi
  done
  if [ -x "$rust_peer" ]; then echo "install-peers: Rust peer present ($rust_peer)" >&2
  elif have cargo; then echo "install-peers: would build the Rust peer with cargo (bench/peers/rust)" >&2
  else echo "install-peers: the Rust peer needs cargo; it would be skipped (n/a in benchmarks)" >&2; fi
  if [ -x "$go_peer" ]; then echo "install-peers: Go peer present ($go_peer)" >&2
  elif have go; then echo "install-peers: would build the Go peer with go (bench/peers/go)" >&2
  else echo "install-peers: the Go peer needs go; it would be skipped (n/a in benchmarks)" >&2; fi
  if [ -x "$quicgo_peer" ]; then echo "install-peers: quic-go peer present ($quicgo_peer)" >&2
  elif have go; then echo "install-peers: would build the quic-go peer with go (bench/peers/quicgo)" >&2
  else echo "install-peers: the quic-go peer needs go; it would be skipped (n/a in benchmarks)" >&2; fi
  if have "$python" && "$python" -c "import hypercorn" >/dev/null 2>&1; then
    echo "install-peers: hypercorn present (in $python)" >&2
  elif have "$python"; then echo "install-peers: would pip install hypercorn into $python" >&2
  else echo "install-peers: hypercorn needs $python with pip; it would be skipped (n/a in benchmarks)" >&2; fi
  if [ -x "$axum_peer" ]; then echo "install-peers: axum peer present ($axum_peer)" >&2
  elif have cargo; then echo "install-peers: would build the axum peer with cargo (bench/peers/axum)" >&2
  else echo "install-peers: the axum peer needs cargo; it would be skipped (n/a in benchmarks)" >&2; fi
  if [ -x "$nim_peer" ] && [ ! "$peers/nim/hello.nim" -nt "$nim_peer" ]; then echo "install-peers: Nim peer present ($nim_peer)" >&2
  else echo "install-peers: would build the Nim peer with nim c -d:release (bench/peers/nim, after apt's nim)" >&2; fi
  if [ -x "$pypy_venv/bin/hypercorn" ]; then echo "install-peers: PyPy hypercorn present ($pypy_venv)" >&2
  else echo "install-peers: would make $pypy_venv with pypy3 and pip install hypercorn into it (PyPI)" >&2; fi
  if [ -x "$py313_venv/bin/hypercorn" ]; then echo "install-peers: CPython 3.13 venv present ($py313_venv)" >&2
  elif py313="$(find_python313)" && [ -n "$py313" ]; then
    echo "install-peers: would make $py313_venv with $py313 and pip install hypercorn into it (PyPI)" >&2
  else echo "install-peers: CPython 3.13: none found (Debian 12 packages no python3.13; pyenv install 3.13 or LOADBENCH_PYTHON313=...); python-asyncio-3.13 and hypercorn-3.13 would be skipped (n/a in benchmarks)" >&2; fi
  echo "install-peers: $FALCON_NOTE" >&2
fi

# --- the slow builds first, niced and at most 2 jobs (the machine may be shared) -------------
oha_pid=""
bombardier_pid=""
if [ "$dry_run" = 0 ] && ! have oha; then
  if have cargo; then
    echo "install-peers: building oha with cargo in the background (log: $log_dir/oha.log)"
    nice -n 19 cargo install oha --locked -j 2 >"$log_dir/oha.log" 2>&1 &
    oha_pid=$!
  else
    echo "install-peers: oha needs cargo (rustup.rs); skipped - benchmarks report it as n/a"
  fi
fi
oha_h3="$peers/oha-h3/bin/oha"
oha_h3_pid=""
if [ "$dry_run" = 1 ]; then
  if [ -x "$oha_h3" ]; then echo "install-peers: oha with HTTP/3 present ($oha_h3)" >&2
  elif have cargo; then echo "install-peers: would build oha --features http3 into $peers/oha-h3" >&2
  else echo "install-peers: oha with HTTP/3 needs cargo; it would be skipped (n/a in benchmarks)" >&2; fi
elif [ ! -x "$oha_h3" ]; then
  if have cargo; then
    echo "install-peers: building oha with HTTP/3 in the background (log: $log_dir/oha-h3.log)"
    nice -n 19 cargo install oha --locked --features http3 --root "$peers/oha-h3" -j 2 >"$log_dir/oha-h3.log" 2>&1 &
    oha_h3_pid=$!
  else
    echo "install-peers: oha with HTTP/3 needs cargo (rustup.rs); skipped - benchmarks report it as n/a"
  fi
fi
if [ "$dry_run" = 0 ] && ! have bombardier; then
  if have go; then
    echo "install-peers: building bombardier with go in the background (log: $log_dir/bombardier.log)"
    GOFLAGS="-p=2" nice -n 19 go install github.com/codesenberg/bombardier@latest \
      >"$log_dir/bombardier.log" 2>&1 &
    bombardier_pid=$!
  else
    echo "install-peers: bombardier needs go (go.dev/dl); skipped - benchmarks report it as n/a"
  fi
fi

# The Rust peers (hyper, axum): one cargo build each, in the background, waited for at the end.
cargo_jobs=()
cargo_peer() {  # $1: the peer's label, $2: its crate in bench/peers (and log name), $3: the binary
  [ "$dry_run" = 0 ] && [ ! -x "$3" ] || return 0
  if have cargo; then
    echo "install-peers: building the $1 peer with cargo in the background (log: $log_dir/$2-peer.log)"
    (cd "$peers/$2" && nice -n 19 cargo build --release --locked -j 2) >"$log_dir/$2-peer.log" 2>&1 &
    cargo_jobs+=("$!:$1:$2")
  else
    echo "install-peers: the $1 peer needs cargo (rustup.rs); skipped - benchmarks report it as n/a"
  fi
}
cargo_peer Rust rust "$rust_peer"
cargo_peer axum axum "$axum_peer"

# The Go peers (net/http, quic-go): one go build each, in the background, waited for at the end.
go_jobs=()
go_peer_build() {  # go_peer_build LABEL DIR BINARY
  [ "$dry_run" = 0 ] && [ ! -x "$3" ] || return 0
  if have go; then
    echo "install-peers: building the $1 peer with go in the background (log: $log_dir/$2-peer.log)"
    # a Go older than the peers' go.mod fetches their toolchain from the Go module proxy
    (cd "$peers/$2" && go_bin="$(bash "$here/go-toolchain.sh")" && GOROOT="" GOTOOLCHAIN=local \
      GOFLAGS="-p=2" nice -n 19 "$go_bin" build -o "$(basename "$3")" .) >"$log_dir/$2-peer.log" 2>&1 &
    go_jobs+=("$!:$1:$2")
  else
    echo "install-peers: the $1 peer needs go (go.dev/dl); skipped - benchmarks report it as n/a"
  fi
}
go_peer_build Go go "$go_peer"
go_peer_build quic-go quicgo "$quicgo_peer"
# quic-go's HTTP/3 client: an anchor of bench/h3_generator_cost.py, not a server peer.
quicgo_client="$peers/quic-go-client/loadbench-h3-quicgo"
go_peer_build "quic-go HTTP/3 client" quic-go-client "$quicgo_client"

# --- Debian packages ------------------------------------------------------------------------
apt_missing=()
have wrk || apt_missing+=(wrk)
have h2load || apt_missing+=(nghttp2-client)
have gtlsclient || apt_missing+=(ngtcp2-client)
have caddy || apt_missing+=(caddy)
have hey || apt_missing+=(hey)
have ab || apt_missing+=(apache2-utils)
have nginx || installed nginx-light || installed nginx || apt_missing+=(nginx-light)
have node || apt_missing+=(nodejs)
have h2o || apt_missing+=(h2o)
have curl || apt_missing+=(curl)
have openssl || apt_missing+=(openssl)
have taskset || apt_missing+=(util-linux)
have strace || apt_missing+=(strace)  # generator_vs_peers.py counts system calls per response / connection
have perf || apt_missing+=(linux-perf)  # generator_vs_peers.py profiles the generators (perf record)
have pypy3 || apt_missing+=(pypy3)
# Debian's pypy3 has no venv module without pypy3-venv (the PyPy hypercorn peer's venv)
[ -x "$pypy_venv/bin/python" ] || installed pypy3-venv || apt_missing+=(pypy3-venv)
have ruby || apt_missing+=(ruby)
have puma || apt_missing+=(puma)
installed ruby-rack || apt_missing+=(ruby-rack)  # the Rack whose version the Ruby peer reports
have nim || apt_missing+=(nim)
have caddy || apt_missing+=(caddy)  # the HTTP/3 peer (caddy 2.6 serves h3 beside HTTPS)
if [ "$dry_run" = 1 ]; then
  echo "install-peers: dry run: Debian packages it would install (nothing installed):" >&2
  if [ ${#apt_missing[@]} -gt 0 ]; then printf '%s\n' "${apt_missing[@]}"; fi
  exit 0
fi
if [ ${#apt_missing[@]} -gt 0 ]; then
  echo "install-peers: apt-get install ${apt_missing[*]}"
  $SUDO apt-get update -qq
  for pkg in "${apt_missing[@]}"; do
    # nginx-light is gone from newer Debian releases; plain nginx is the same binary there.
    if [ "$pkg" = nginx-light ] && ! apt-cache show nginx-light >/dev/null 2>&1; then pkg=nginx; fi
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null \
      || echo "install-peers: could not install $pkg - benchmarks report it as n/a"
  done
fi
# Debian's nginx package starts a system service on :80; the benchmarks run their own instance.

# --- PyPI: hypercorn, into the Python loadbench runs with ------------------------------------
if have "$python" && ! "$python" -c "import hypercorn" >/dev/null 2>&1; then
  echo "install-peers: pip install hypercorn into $python"
  "$python" -m pip install -q hypercorn \
    || echo "install-peers: could not pip install hypercorn into $python (set LOADBENCH_PYTHON to the venv's python) - benchmarks report it as n/a"
fi

# --- the Nim peer: seed report 004's program, built -d:release (seconds; again when edited) ----
if [ ! -x "$nim_peer" ] || [ "$peers/nim/hello.nim" -nt "$nim_peer" ]; then
  if have nim; then
    echo "install-peers: building the Nim peer (nim c -d:release, log: $log_dir/nim-peer.log)"
    (cd "$peers/nim" && nice -n 19 nim c -d:release --hints:off -o:loadbench-peer-nim hello.nim) >"$log_dir/nim-peer.log" 2>&1 \
      || echo "install-peers: Nim peer build failed, see $log_dir/nim-peer.log - benchmarks report it as n/a"
  else
    echo "install-peers: the Nim peer needs nim (apt-get install nim); skipped - benchmarks report it as n/a"
  fi
fi

# --- venvs the install owns (bench/peers/*/.venv, ignored by git): PyPy and CPython 3.13 -------
venv_hypercorn() {  # venv_hypercorn NAME INTERPRETER VENV
  [ -x "$3/bin/hypercorn" ] && return 0
  echo "install-peers: $1: making $3 with $2, pip install hypercorn (PyPI; log: $log_dir/$1.log)"
  { [ -x "$3/bin/python" ] || nice -n 19 "$2" -m venv "$3"; } >>"$log_dir/$1.log" 2>&1 \
    && nice -n 19 "$3/bin/python" -m pip install -q --disable-pip-version-check hypercorn >>"$log_dir/$1.log" 2>&1 \
    || echo "install-peers: $1: could not make the venv or install hypercorn, see $log_dir/$1.log - benchmarks report it as n/a"
}
if have pypy3; then venv_hypercorn pypy-hypercorn pypy3 "$pypy_venv"
else echo "install-peers: pypy-hypercorn needs pypy3 (apt-get install pypy3 pypy3-venv); skipped - benchmarks report it as n/a"; fi
py313="$(find_python313 || true)"
if [ -x "$py313_venv/bin/hypercorn" ]; then :
elif [ -n "$py313" ]; then venv_hypercorn python3.13 "$py313" "$py313_venv"
else
  echo "install-peers: CPython 3.13 not found: Debian 12 packages no python3.13 (install one with pyenv install 3.13, or set LOADBENCH_PYTHON313); python-asyncio-3.13 and hypercorn-3.13 skipped - benchmarks report them as n/a"
fi
echo "install-peers: $FALCON_NOTE"

status=0
if [ -n "$oha_pid" ]; then
  wait "$oha_pid" || { echo "install-peers: oha build failed, see $log_dir/oha.log"; status=1; }
fi
if [ -n "$oha_h3_pid" ]; then
  wait "$oha_h3_pid" || { echo "install-peers: oha (http3) build failed, see $log_dir/oha-h3.log"; status=1; }
fi
for job in "${cargo_jobs[@]}"; do
  IFS=: read -r pid label crate <<<"$job"
  wait "$pid" || { echo "install-peers: $label peer build failed, see $log_dir/$crate-peer.log"; status=1; }
done
for job in "${go_jobs[@]}"; do
  IFS=: read -r pid label dir <<<"$job"
  wait "$pid" || { echo "install-peers: $label peer build failed, see $log_dir/$dir-peer.log"; status=1; }
done
if [ -n "$bombardier_pid" ]; then
  wait "$bombardier_pid" || { echo "install-peers: bombardier build failed, see $log_dir/bombardier.log"; status=1; }
fi

echo "install-peers: tools"
for tool in wrk h2load hey ab oha bombardier nginx node h2o caddy openssl taskset curl strace perf; do
  path="$(command -v "$tool" 2>/dev/null || true)"
  [ -z "$path" ] && [ "$tool" = nginx ] && [ -x /usr/sbin/nginx ] && path=/usr/sbin/nginx
  printf '  %-11s %s\n' "$tool" "${path:-n/a (not installed)}"
done
printf '  %-11s %s\n' "oha (http3)" "$([ -x "$oha_h3" ] && echo "$oha_h3" || echo "n/a (not installed)")"
printf '  %-11s %s\n' rust-peer "$([ -x "$rust_peer" ] && echo "$rust_peer" || echo "n/a (not built)")"
printf '  %-11s %s\n' go-peer "$([ -x "$go_peer" ] && echo "$go_peer" || echo "n/a (not built)")"
printf '  %-11s %s\n' quicgo-peer "$([ -x "$quicgo_peer" ] && echo "$quicgo_peer" || echo "n/a (not built)")"
printf '  %-11s %s\n' axum-peer "$([ -x "$axum_peer" ] && echo "$axum_peer" || echo "n/a (not built)")"
printf '  %-11s %s\n' nim-peer "$([ -x "$nim_peer" ] && "$nim_peer" --version 2>/dev/null || echo "n/a (not built)")"
printf '  %-11s %s\n' ruby-puma "$(have puma && bash "$peers/ruby/run.sh" --version 2>/dev/null || echo "n/a (ruby or puma not installed)")"
printf '  %-11s %s\n' pypy "$([ -x "$pypy_venv/bin/hypercorn" ] && "$pypy_venv/bin/python" -c 'import sys, importlib.metadata as m; print("PyPy", ".".join(map(str, sys.pypy_version_info[:3])), "+ hypercorn", m.version("hypercorn"))' 2>/dev/null || echo "n/a (no $pypy_venv)")"
printf '  %-11s %s\n' python3.13 "$([ -x "$py313_venv/bin/hypercorn" ] && "$py313_venv/bin/python" -c 'import sys, importlib.metadata as m; print("CPython", sys.version.split()[0], "+ hypercorn", m.version("hypercorn"))' 2>/dev/null || echo "n/a (no CPython 3.13: Debian 12 has none)")"
printf '  %-11s %s\n' hypercorn "$("$python" -c 'import hypercorn, os; print(os.path.dirname(hypercorn.__file__))' 2>/dev/null || echo "n/a (not installed in $python)")"
exit $status
