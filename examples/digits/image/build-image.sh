#!/usr/bin/env bash
# build-image.sh BUILD_DIR [TAG]: build the container image of examples/digits,
# localhost/trainyard/digits:latest by default, from the already-built
# BUILD_DIR/examples/digits/digits.
#
# The image holds:
#   /usr/local/bin/digits              the binary (ENTRYPOINT; CMD ["--steps","300"])
#   the shared libraries `ldd` lists for it, the dynamic loader included, at their host paths
#   /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz   (its default --data)
#   busybox-static as /bin/busybox, with sh and the other applets as symlinks
#   minimal /etc/passwd, /etc/group and /etc/nsswitch.conf (hosts: files first)
#
# No registry and no network: the root file system is put together from host files and
# `podman import`ed from a tarball. Building images with the podman CLI is a setup step;
# trainyard's container runtime itself only talks to podman's Docker-compatible API.
#
# Idempotent: the tarball is reproducible (sorted, fixed mtime and owners), and the image
# carries the label trainyard.content-hash; if an image with the same hash exists already,
# nothing is rebuilt (at most TAG is pointed at it). Run as root, like the runtime's podman.
# Exit status: 0 image ready, 1 error, 2 usage.
set -euo pipefail
umask 022
. "$(cd "$(dirname "$0")" && pwd)/../../../scripts/image-lib.sh"

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 BUILD_DIR [TAG]" >&2
  exit 2
fi
BUILD_DIR=$1
TAG=${2:-localhost/trainyard/digits:latest}
RECIPE=trainyard-digits-1 # bump when the layout below changes in a way the hash misses
CHANGES=(--change 'ENTRYPOINT ["/usr/local/bin/digits"]' --change 'CMD ["--steps","300"]')

die() { echo "build-image: $*" >&2; exit 1; }
command -v podman >/dev/null 2>&1 || die "podman is not installed (run scripts/install-deps.sh)"

BIN=$BUILD_DIR/examples/digits/digits
DATA=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
BUSYBOX=/bin/busybox
[ -f "$BIN" ] && [ -x "$BIN" ] || die "$BIN is missing; build it first (ninja -C $BUILD_DIR)"
[ -f "$DATA" ] || die "$DATA is missing (install python3-sklearn)"
[ -x "$BUSYBOX" ] || die "$BUSYBOX is missing (install busybox-static)"
# The busybox in the image must not need the host's libc at a matching version.
if ldd "$BUSYBOX" >/dev/null 2>&1; then die "$BUSYBOX is dynamically linked; install busybox-static"; fi

# The libraries: every absolute path ldd prints ("libz.so.1 => /lib/.../libz.so.1 (0x..)" and
# the loader "/lib64/ld-linux-x86-64.so.2 (0x..)"); linux-vdso has none.
ldd_out=$(ldd "$BIN") || die "ldd $BIN failed"
if grep -q 'not found' <<<"$ldd_out"; then die "$BIN has unresolved libraries: $(grep 'not found' <<<"$ldd_out" | tr -s ' \t\n' ' ')"; fi
mapfile -t LIBS < <(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) { print $i; break } }' <<<"$ldd_out" | sort -u)
[ ${#LIBS[@]} -gt 0 ] || die "ldd found no libraries for $BIN (is it static? then adjust this script)"

begin_build "$TAG"

cp "$BUSYBOX" "$root/bin/busybox"
# Applets at busybox's own idea of their paths (bin/sh, sbin/ip, usr/bin/nc, ...); perl
# (perl-base is Essential) makes the ~400 links without a fork each.
"$BUSYBOX" --list-full | ROOT=$root perl -nle 'my $l = "$ENV{ROOT}/$_";
  length && !-l $l && !-e $l && (symlink("/bin/busybox", $l) or die "$l: $!\n")' ||
  die "cannot create the busybox applet links"

cp "$BIN" "$root/usr/local/bin/digits"
chmod 755 "$root/usr/local/bin/digits"
# Each library's content (symlinks resolved) at the exact path ldd printed.
for lib in "${LIBS[@]}"; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
mkdir -p "$root$(dirname "$DATA")"
cp "$DATA" "$root$DATA"
chmod 644 "$root$DATA"

# Peer names come from /etc/hosts (the runtime passes ExtraHosts) before DNS is ever asked.
minimal_etc "$root"

import_rootfs "$root" "$TAG" "$RECIPE" "trainyard digits example" "${CHANGES[@]}"
