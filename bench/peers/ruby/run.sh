#!/usr/bin/env bash
# The Ruby peer: puma (Debian's package) serving config.ru, on Debian's ruby with YJIT when that
# ruby has it (Debian 12's 3.1 does: `ruby --yjit` is then turned on through RUBYOPT).
#   bash run.sh PORT              HTTP/1.1 on 127.0.0.1:PORT
#   bash run.sh PORT CERT KEY     HTTP/1.1 over TLS (puma's own OpenSSL binding)
#   bash run.sh --version         what runs: puma, ruby (+YJIT when on) and rack versions
# Workers: PUMA_WORKERS (puma.rb). puma speaks HTTP/1.1 only; falcon, the Ruby server with HTTP/2,
# is on RubyGems alone (no Debian package), see README.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# YJIT decided once, here, for the server and for --version alike: they can never disagree.
if ruby --yjit -e 'exit(defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? ? 0 : 1)' >/dev/null 2>&1; then
  export RUBYOPT="--yjit${RUBYOPT:+ $RUBYOPT}"
fi
if [ "${1:-}" = --version ]; then
  exec ruby -e 'require "puma/const"
    rack = begin; require "rack"; ", rack #{Rack.release}"; rescue LoadError; ", puma'"'"'s own Rack builder"; end
    puts "puma #{Puma::Const::PUMA_VERSION}, #{RUBY_DESCRIPTION.split(" [").first}#{rack}"'
fi
if [ $# -ne 1 ] && [ $# -ne 3 ]; then
  echo "usage: run.sh PORT [CERT KEY] | --version   (PUMA_WORKERS=N)" >&2
  exit 2
fi
bind="tcp://127.0.0.1:$1"
[ $# -eq 3 ] && bind="ssl://127.0.0.1:$1?cert=$2&key=$3&verify_mode=none"
exec puma -C "$here/puma.rb" -b "$bind" "$here/config.ru"
