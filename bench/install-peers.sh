#!/usr/bin/env bash
# Installs the benchmark-only tools used by bench/*.py, each only when it is missing:
#   peer servers : nginx (nginx-light is enough), node (node:http peer)
#   generators   : wrk, h2load (nghttp2-client), hey, ab (apache2-utils),
#                  oha (cargo, crates.io), bombardier (go, Go module proxy)
# Debian's `bombardier` package is an unrelated game: the HTTP tool comes from Go only.
# oha and bombardier compile for minutes, so they start first, in the background, and the
# script waits for them at the end. Idempotent: a second run installs nothing.
#   bash bench/install-peers.sh
#   bash bench/install-peers.sh --dry-run   the Debian packages it would install, one per line on
#                                           stdout (the cargo/go builds are said on stderr); installs nothing
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
installed() { have dpkg-query && [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]; }

if [ "$dry_run" = 1 ]; then
  for tool in oha:cargo bombardier:go; do
    name="${tool%%:*}"; builder="${tool##*:}"
    if have "$name"; then echo "install-peers: $name present ($(command -v "$name"))" >&2
    elif have "$builder"; then echo "install-peers: would build $name with $builder" >&2
    else echo "install-peers: $name needs $builder; it would be skipped (n/a in benchmarks)" >&2; fi
  done
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

# --- Debian packages ------------------------------------------------------------------------
apt_missing=()
have wrk || apt_missing+=(wrk)
have h2load || apt_missing+=(nghttp2-client)
have hey || apt_missing+=(hey)
have ab || apt_missing+=(apache2-utils)
have nginx || installed nginx-light || installed nginx || apt_missing+=(nginx-light)
have node || apt_missing+=(nodejs)
have openssl || apt_missing+=(openssl)
have taskset || apt_missing+=(util-linux)
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

status=0
if [ -n "$oha_pid" ]; then
  wait "$oha_pid" || { echo "install-peers: oha build failed, see $log_dir/oha.log"; status=1; }
fi
if [ -n "$bombardier_pid" ]; then
  wait "$bombardier_pid" || { echo "install-peers: bombardier build failed, see $log_dir/bombardier.log"; status=1; }
fi

echo "install-peers: tools"
for tool in wrk h2load hey ab oha bombardier nginx node openssl taskset; do
  path="$(command -v "$tool" 2>/dev/null || true)"
  [ -z "$path" ] && [ "$tool" = nginx ] && [ -x /usr/sbin/nginx ] && path=/usr/sbin/nginx
  printf '  %-11s %s\n' "$tool" "${path:-n/a (not installed)}"
done
exit $status
