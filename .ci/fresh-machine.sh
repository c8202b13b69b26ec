#!/usr/bin/env bash
# Runs the README's two quick-start commands verbatim on a fresh, minimal Debian 12 root - the
# check that CI (which runs on a machine that already has our tools) cannot make.
#
#   bash .ci/fresh-machine.sh             both commands (the default sweep, then the test suite)
#   bash .ci/fresh-machine.sh 2           only command 2 (the test suite); 1 = only the sweep
#
# What it does: debootstrap a minbase Debian 12 root (plus python3, python3-pip, python3-venv,
# git - what a new contributor has) once into a cached tarball, unpack a clean copy of it, copy
# in this checkout's files (tracked + untracked, not ignored: build/ stays out), the host's
# /etc/hosts, CA bundle and pip configuration (so pip reaches the same package index), mount
# /proc, /sys and /dev, and run each README command in a chroot with a clean environment.
# Takes many minutes; not part of every CI run. Run it when install steps change.
# Needs root. Environment: FRESH_DIR (default /var/tmp/loadbench-fresh), FRESH_MIRROR.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
which_commands="${1:-all}"
fresh_dir="${FRESH_DIR:-/var/tmp/loadbench-fresh}"
mirror="${FRESH_MIRROR:-http://deb.debian.org/debian}"
base_tar="$fresh_dir/bookworm-minbase.tar"
root="$fresh_dir/root"

say() { echo "fresh-machine: $*" >&2; }
[ "$(id -u)" -eq 0 ] || { say "needs root (debootstrap, chroot, mounts)"; exit 2; }
command -v debootstrap >/dev/null 2>&1 || {
  say "installing debootstrap"; apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }

# The README's quick-start commands, verbatim: the first two ```bash blocks after its heading.
mapfile -t commands < <(awk '/^## Quick start/{q=1} q&&/^```bash/{b=1;next} b&&/^```/{b=0;n++; if(n==2)exit; next} b{print}' "$repo/README.md")
[ ${#commands[@]} -eq 2 ] || { say "README quick start must hold exactly two one-line commands, found ${#commands[@]}"; exit 1; }

mkdir -p "$fresh_dir"
if [ ! -f "$base_tar" ]; then
  say "debootstrap bookworm (minbase + python3, pip, venv, git) from $mirror"
  debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,git,ca-certificates \
    --make-tarball="$base_tar.part" bookworm "$fresh_dir/tarball-work" "$mirror" >"$fresh_dir/debootstrap.log" 2>&1 \
    || { say "debootstrap failed, see $fresh_dir/debootstrap.log"; exit 1; }
  mv "$base_tar.part" "$base_tar"; rm -rf "$fresh_dir/tarball-work"
fi

cleanup() {
  for m in dev/pts dev sys proc; do mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m" || true; done
  mountpoint -q "$root" 2>/dev/null && umount -l "$root" || true
}
trap cleanup EXIT

run_in_fresh_root() {  # $1: label, $2: the README command
  cleanup
  rm -rf "$root"; mkdir -p "$root"
  # A real machine's / is a mount point; a bare chroot directory is not, and `ip -n NS` (network
  # namespace tests) then fails with '"mount --make-rslave /" failed'. Bind it onto itself.
  mount --bind "$root" "$root"
  say "[$1] unpacking a clean Debian 12 root"
  debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,git,ca-certificates \
    --unpack-tarball="$base_tar" bookworm "$root" "$mirror" >"$fresh_dir/unpack.log" 2>&1 \
    || { say "debootstrap --unpack-tarball failed, see $fresh_dir/unpack.log"; exit 1; }
  # What every installed system has, and what makes the chroot reach the host's package index.
  cp /etc/hosts "$root/etc/hosts"; cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  [ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
  cp /etc/apt/apt.conf.d/99artifact-registry "$root/etc/apt/apt.conf.d/" 2>/dev/null || true
  # A chroot has no init: services that packages start on install (nginx on :80) must not start
  # in it (Debian's convention for chroots; a real machine starts them and loadbench ignores them).
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"; chmod +x "$root/usr/sbin/policy-rc.d"
  mkdir -p "$root/root/loadbench"
  (cd "$repo" && git ls-files -z -co --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$root/root/loadbench"
  mount -t proc proc "$root/proc"; mount --rbind /sys "$root/sys"; mount --rbind /dev "$root/dev"
  say "[$1] running: $2"
  local env=(HOME=/root LANG=C.UTF-8 CI="${CI:-true}" TERM=dumb
             PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
  for v in $(compgen -e | grep '^PIP_' || true); do env+=("$v=${!v}"); done
  local start=$SECONDS status
  set +e
  chroot "$root" /usr/bin/env -i "${env[@]}" /bin/bash -c "cd /root/loadbench && $2" </dev/null \
    2>&1 | tee "$fresh_dir/command-$1.log"
  status=${PIPESTATUS[0]}
  set -e
  say "[$1] exit $status after $((SECONDS - start)) s (log: $fresh_dir/command-$1.log)"
  return "$status"
}

overall=0
if [ "$which_commands" = all ] || [ "$which_commands" = 1 ]; then run_in_fresh_root 1 "${commands[0]}" || overall=1; fi
if [ "$which_commands" = all ] || [ "$which_commands" = 2 ]; then run_in_fresh_root 2 "${commands[1]}" || overall=1; fi
exit $overall
