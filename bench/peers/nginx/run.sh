#!/usr/bin/env bash
# Runs the nginx peer in the foreground on 127.0.0.1:PORT.
#   bench/peers/nginx/run.sh PORT
# Environment:
#   NGINX_WORKERS=N   worker_processes (default 1)
#   NGINX_CONNECTIONS=N  worker_connections (default 4096), and worker_rlimit_nofile N when set:
#                     room for N connections per worker (bench/memory_per_connection.py holds 10,000)
#   NGINX_TLS=1       serve HTTPS instead of HTTP, with a self-signed EC P-256 certificate
#                     (CN=localhost) generated into the run dir; no session cache, no tickets,
#                     so every new connection is a full handshake.
#   NGINX_HTTP2=1     with NGINX_TLS=1: also offer HTTP/2 (ALPN h2; `listen ... ssl http2`);
#                     without TLS: h2c prior knowledge only (`listen ... http2`: nginx 1.22 then
#                     speaks no HTTP/1.1 on that port)
# The config is rendered into a fresh temp dir that also holds pid, error log and temp paths;
# the dir is removed when nginx exits. SIGTERM/SIGINT stop nginx gracefully (QUIT).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
port="${1:-}"
if ! [[ "$port" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 PORT   (NGINX_WORKERS=N, NGINX_TLS=1)" >&2
  exit 2
fi
workers="${NGINX_WORKERS:-1}"
connections="${NGINX_CONNECTIONS:-4096}"
rlimit=""
[ -n "${NGINX_CONNECTIONS:-}" ] && rlimit="worker_rlimit_nofile $connections;"
nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
[ -x "$nginx_bin" ] || { echo "run.sh: nginx is not installed (bash bench/install-peers.sh)" >&2; exit 127; }

run_dir="$(mktemp -d "${TMPDIR:-/tmp}/loadbench-nginx.XXXXXX")"
chmod 755 "$run_dir"   # workers drop to an unprivileged user when started as root
cleanup() { rm -rf "$run_dir"; }
trap cleanup EXIT

listen="127.0.0.1:$port"
tls=""
if [ "${NGINX_TLS:-0}" = 1 ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=localhost -keyout "$run_dir/key.pem" -out "$run_dir/cert.pem" 2>/dev/null
  chmod 644 "$run_dir/key.pem"
  listen="127.0.0.1:$port ssl"
  [ "${NGINX_HTTP2:-0}" = 1 ] && listen="$listen http2"
  tls="        ssl_certificate $run_dir/cert.pem;
        ssl_certificate_key $run_dir/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache off;
        ssl_session_tickets off;"
elif [ "${NGINX_HTTP2:-0}" = 1 ]; then
  listen="$listen http2"
fi

python3 - "$here/nginx.conf.template" "$run_dir/nginx.conf" "$workers" "$run_dir" "$listen" "$tls" "$connections" "$rlimit" <<'PY'
import sys
template, out, workers, run_dir, listen, tls, connections, rlimit = sys.argv[1:]
text = open(template).read()
for key, value in {"@WORKERS@": workers, "@RUN_DIR@": run_dir, "@LISTEN@": listen, "@TLS@": tls,
                   "@CONNECTIONS@": connections, "@RLIMIT@": rlimit}.items():
    text = text.replace(key, value)
open(out, "w").write(text)
PY

"$nginx_bin" -p "$run_dir" -c "$run_dir/nginx.conf" -e "$run_dir/error.log" &
nginx_pid=$!
stop() { kill -QUIT "$nginx_pid" 2>/dev/null || true; }
trap stop TERM INT
# `wait` returns early when a trapped signal arrives; wait again for nginx to finish.
status=0
wait "$nginx_pid" || status=$?
while kill -0 "$nginx_pid" 2>/dev/null; do wait "$nginx_pid" || status=$?; done
[ "$status" -ne 0 ] && [ -s "$run_dir/error.log" ] && cat "$run_dir/error.log" >&2
exit "$status"
