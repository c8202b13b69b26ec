#!/usr/bin/env bash
# Runs the caddy peer in the foreground: HTTPS (HTTP/1.1 and ALPN h2) on tcp 127.0.0.1:PORT and
# HTTP/3 on udp 127.0.0.1:PORT (caddy 2.6 serves HTTP/3 on its HTTPS port by default).
#   bench/peers/caddy/run.sh PORT CERT KEY
#   bench/peers/caddy/run.sh --version
# Workers: GOMAXPROCS (caddy is one Go process). Routes, from `respond` directives (Caddyfile):
# GET / and /plaintext -> "Hello, World!\n" text/plain, GET /json -> {"message":"Hello, World!"}
# application/json, anything else -> 404. Caddy has no directive that echoes a request body, so
# the echo workload is n/a. No admin endpoint, no :80 listener, nothing outside a fresh temp dir
# (config, storage, HOME), removed when caddy exits; SIGTERM/SIGINT stop caddy.
# CADDY_ACCESS_LOG=FILE writes caddy's JSON access log there (one line per response: tests count).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
caddy_bin="$(command -v caddy || true)"
[ -n "$caddy_bin" ] || { echo "run.sh: caddy is not installed (apt-get install caddy)" >&2; exit 127; }
if [ "${1:-}" = --version ]; then echo "caddy $("$caddy_bin" version)"; exit 0; fi
port="${1:-}" cert="${2:-}" key="${3:-}"
if ! [[ "$port" =~ ^[0-9]+$ ]] || [ -z "$cert" ] || [ -z "$key" ]; then
  echo "usage: $0 PORT CERT KEY   (GOMAXPROCS=N, CADDY_ACCESS_LOG=FILE)" >&2
  exit 2
fi
for f in "$cert" "$key"; do [ -r "$f" ] || { echo "run.sh: cannot read $f" >&2; exit 2; }; done

run_dir="$(mktemp -d "${TMPDIR:-/tmp}/loadbench-caddy.XXXXXX")"
cleanup() { rm -rf "$run_dir"; }
trap cleanup EXIT
log=""
if [ -n "${CADDY_ACCESS_LOG:-}" ]; then
  log="log {
		output file ${CADDY_ACCESS_LOG}
		format json
	}"
fi
python3 - "$here/Caddyfile.template" "$run_dir/Caddyfile" "$port" "$cert" "$key" "$run_dir" "$log" <<'PY'
import sys
template, out, port, cert, key, run_dir, log = sys.argv[1:]
text = open(template).read()
for name, value in {"@PORT@": port, "@CERT@": cert, "@KEY@": key, "@RUN_DIR@": run_dir,
                    "@LOG@": log}.items():
    text = text.replace(name, value)
open(out, "w").write(text)
PY

export HOME="$run_dir" XDG_DATA_HOME="$run_dir/data" XDG_CONFIG_HOME="$run_dir/config"
"$caddy_bin" run --config "$run_dir/Caddyfile" --adapter caddyfile &
caddy_pid=$!
stop() { kill -TERM "$caddy_pid" 2>/dev/null || true; }
trap stop TERM INT
# `wait` returns early when a trapped signal arrives; wait again for caddy to finish.
status=0
wait "$caddy_pid" || status=$?
while kill -0 "$caddy_pid" 2>/dev/null; do wait "$caddy_pid" || status=$?; done
exit "$status"
