#!/usr/bin/env bash
# Installs everything loadbench needs on a fresh Debian machine, then loadbench itself.
#   bash .ci/install.sh          the package (build + runtime dependencies)
#   bash .ci/install.sh test     the package with its test dependencies
# System packages are installed only when missing; `pip install .` builds the C++ core.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=()
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v ninja >/dev/null 2>&1 || missing+=(ninja-build)
command -v make >/dev/null 2>&1 || missing+=(make)
installed libssl-dev || missing+=(libssl-dev)
[ -f /usr/include/boost/beast.hpp ] || missing+=(BOOST)
if [ "$extras" = "test" ]; then
  [ -f /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)
  # The fuzz tests (tests/test_fuzz.py) build with clang and link libFuzzer + the sanitizer runtimes.
  command -v clang++ >/dev/null 2>&1 || missing+=(clang)
  compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-$(uname -m).a" >/dev/null || missing+=(CLANG_RT)
fi
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip python3-venv)

if [ ${#missing[@]} -gt 0 ]; then
  echo "loadbench setup: installing system packages: ${missing[*]}"
  $SUDO apt-get update -qq
  pkgs=()
  for p in "${missing[@]}"; do
    if [ "$p" = CLANG_RT ]; then
      # libFuzzer ships in the compiler-rt package of the installed clang's version (Debian 12: 14).
      ver="$(clang++ --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)"
      pkgs+=("libclang-rt-${ver:-14}-dev")
    elif [ "$p" = BOOST ]; then
      # Debian 12 ships Boost 1.81 beside the 1.74 default; prefer the newer Beast.
      if apt-cache show libboost1.81-dev >/dev/null 2>&1; then pkgs+=(libboost1.81-dev); else pkgs+=(libboost-dev); fi
    else
      pkgs+=("$p")
    fi
  done
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${pkgs[@]}" >/dev/null
fi

pip_flags=(--quiet --disable-pip-version-check)
# Debian's own python3 refuses system-wide pip installs (PEP 668); a pyenv/venv python does not.
if python3 -c 'import sys,sysconfig,os; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"),"EXTERNALLY-MANAGED")) and sys.prefix==sys.base_prefix else 1)'; then
  pip_flags+=(--break-system-packages)
fi
target="."
[ -n "$extras" ] && target=".[$extras]"
echo "loadbench setup: building and installing $target (the C++ core compiles once; later installs are incremental)"
python3 -m pip install "${pip_flags[@]}" "$target"
command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
echo "loadbench setup: done ($(python3 -c 'import loadbench; print("loadbench", loadbench.__version__)'))"
