#!/usr/bin/env bash
# Runs the h2o peer in the foreground on 127.0.0.1:PORT (HTTP/1.1 and h2c, or TLS with ALPN h2).
#   bench/peers/h2o/run.sh PORT
# Environment:
#   H2O_THREADS=N   num-threads (default 1)
#   H2O_TLS=1       serve TLS instead (self-signed EC P-256 certificate, CN=localhost, generated
#                   into the run dir)
# Routes answer from an mruby handler (stock h2o has no inline-body directive): GET / and
# /plaintext -> "Hello, World!\n" text/plain, /json -> {"message":"Hello, World!"}, POST /echo ->
# the request body back with its content type, else 404.
# The config lives in a fresh temp dir, removed when h2o exits. SIGTERM stops h2o.
set -euo pipefail
port="${1:-}"
if ! [[ "$port" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 PORT   (H2O_THREADS=N, H2O_TLS=1)" >&2
  exit 2
fi
threads="${H2O_THREADS:-1}"
h2o_bin="$(command -v h2o || true)"
[ -n "$h2o_bin" ] || { echo "run.sh: h2o is not installed (apt-get install h2o)" >&2; exit 127; }

run_dir="$(mktemp -d "${TMPDIR:-/tmp}/loadbench-h2o.XXXXXX")"
chmod 755 "$run_dir"
cleanup() { rm -rf "$run_dir"; }
trap cleanup EXIT

ssl=""
if [ "${H2O_TLS:-0}" = 1 ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=localhost -keyout "$run_dir/key.pem" -out "$run_dir/cert.pem" 2>/dev/null
  chmod 644 "$run_dir/key.pem"
  ssl="  ssl:
    certificate-file: $run_dir/cert.pem
    key-file: $run_dir/key.pem"
fi
user=""
[ "$(id -u)" = 0 ] && user="user: nobody"

cat > "$run_dir/h2o.conf" <<CONF
$user
num-threads: $threads
error-log: /dev/stderr
listen:
  host: 127.0.0.1
  port: $port
$ssl
hosts:
  default:
    paths:
      /:
        mruby.handler: |
          PLAIN = ["Hello, World!\n"].freeze
          JSON = ['{"message":"Hello, World!"}'].freeze
          Proc.new do |env|
            case env["PATH_INFO"]
            when "/", "/plaintext" then [200, {"content-type" => "text/plain"}, PLAIN]
            when "/json" then [200, {"content-type" => "application/json"}, JSON]
            when "/echo"
              body = env["rack.input"] ? env["rack.input"].read : ""
              [200, {"content-type" => env["CONTENT_TYPE"] || "application/octet-stream"}, [body]]
            else [404, {"content-type" => "text/plain"}, ["Not Found\n"]]
            end
          end
CONF
"$h2o_bin" -c "$run_dir/h2o.conf" &
child=$!
trap 'kill -TERM $child 2>/dev/null' TERM INT
wait $child || true
wait $child 2>/dev/null || true
