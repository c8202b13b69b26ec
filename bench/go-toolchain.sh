#!/usr/bin/env bash
# Prints the path of a `go` command new enough for the Go peers (bench/peers/go, bench/peers/quicgo,
# bench/peers/quic-go-client: their go.mod says `go 1.26.0`), fetching one when needed:
#
#   go="$(bash bench/go-toolchain.sh)" && "$go" build ...
#
# The `go` on PATH when it is new enough; else Go's own toolchain module, golang.org/toolchain
# (what `GOTOOLCHAIN=go1.26.8` fetches on Go >= 1.21), downloaded from the Go module proxy by the
# Go on PATH - Debian 12's 1.19, which predates GOTOOLCHAIN, can still `go mod download` it -
# into the module cache (~76 MB, once per machine). Module zips carry no file modes, so its
# programs are made executable here, as the go command does for a toolchain it switches to.
# Exit 1 with one message on stderr when there is no go at all or the download fails.
set -euo pipefail
WANT="${LOADBENCH_GO_VERSION:-1.26.8}"  # a version the Go module proxy serves as a toolchain
say() { echo "go-toolchain: $*" >&2; }

export PATH="$PATH:$HOME/go/bin:/usr/local/go/bin"
if ! command -v go >/dev/null 2>&1; then
  say "no go on PATH to fetch Go $WANT with (Debian: apt-get install golang-go)"; exit 1
fi
# "go version go1.19.8 linux/amd64" -> 1.19.8
have_version="$(go version | sed -n 's/^go version go\([0-9][0-9.]*\).*/\1/p')"
need_major_minor="$(echo "$WANT" | cut -d. -f1-2)"
if [ -n "$have_version" ] && [ "$(printf '%s\n%s\n' "$need_major_minor" "$have_version" | sort -V | head -n1)" = "$need_major_minor" ]; then
  command -v go; exit 0
fi

case "$(uname -m)" in
  x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch="$(uname -m)" ;;
esac
module="golang.org/toolchain@v0.0.1-go${WANT}.linux-${arch}"
root="$(go env GOMODCACHE)/golang.org/toolchain@v0.0.1-go${WANT}.linux-${arch}"
if [ ! -x "$root/bin/go" ]; then
  say "Go ${have_version:-?} on PATH is older than the peers' $need_major_minor: fetching $module from the Go module proxy"
  # -modcacherw: the module cache's files are read-only otherwise, and chmod below needs them
  if ! (cd / && GOFLAGS=-modcacherw GO111MODULE=on go mod download "$module" >&2); then
    say "could not download $module from $(go env GOPROXY)"; exit 1
  fi
  chmod +x "$root"/bin/* "$root"/pkg/tool/*/*
fi
# its own GOROOT, whatever the older Go on PATH has set in the environment
if ! GOROOT="$root" GOTOOLCHAIN=local "$root/bin/go" version >/dev/null 2>&1; then
  say "$root/bin/go does not run"; exit 1
fi
echo "$root/bin/go"
