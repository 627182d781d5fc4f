#!/usr/bin/env bash
# build-testbox.sh [TAG]: build the image the container integration tests run their
# `sh -c` scripts in, localhost/trainyard/testbox:1 by default. It is a busybox-static root
# file system and nothing else: sh, nc (-l -p PORT listens, -w SEC connect timeout), ip,
# hostname, cat, sleep, ... as symlinks to /bin/busybox. No ENTRYPOINT, CMD ["sh"].
#
# No registry and no network: the root file system is put together from the host's
# busybox-static (scripts/install-deps.sh installs it) and `podman import`ed from a tarball.
# Building images with the podman CLI is a setup step; trainyard's container runtime itself
# only talks to podman's Docker-compatible API.
#
# Idempotent: the tarball is reproducible (sorted, fixed mtime and owners), and the image
# carries the label trainyard.content-hash; if an image with the same hash exists already,
# nothing is rebuilt (at most TAG is pointed at it). Run as root, like the runtime's podman.
# Exit status: 0 image ready, 1 error.
set -euo pipefail
umask 022
. "$(cd "$(dirname "$0")" && pwd)/../../../scripts/image-lib.sh"

TAG=${1:-localhost/trainyard/testbox:1}
RECIPE=trainyard-testbox-1 # bump when the layout below changes in a way the hash misses
CHANGES=(--change 'CMD ["sh"]')

die() { echo "build-testbox: $*" >&2; exit 1; }
command -v podman >/dev/null 2>&1 || die "podman is not installed (run scripts/install-deps.sh)"

BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || die "$BUSYBOX is missing (install busybox-static)"
# The rootfs has no libc, so busybox must be the static build (busybox-static), not busybox.
if ldd "$BUSYBOX" >/dev/null 2>&1; then die "$BUSYBOX is dynamically linked; install busybox-static"; fi
applets=" $("$BUSYBOX" --list | tr '\n' ' ') "
for applet in sh nc ip hostname cat sleep; do
  [[ $applets == *" $applet "* ]] || die "$BUSYBOX has no '$applet' applet"
done

begin_build "$TAG"

cp "$BUSYBOX" "$root/bin/busybox"
# Applets at busybox's own idea of their paths (bin/sh, sbin/ip, usr/bin/nc, ...); perl
# (perl-base is Essential) makes the ~400 links without a fork each.
"$BUSYBOX" --list-full | ROOT=$root perl -nle 'my $l = "$ENV{ROOT}/$_";
  length && !-l $l && !-e $l && (symlink("/bin/busybox", $l) or die "$l: $!\n")' ||
  die "cannot create the busybox applet links"

printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' \
  >"$root/etc/passwd"
printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$root/etc/group"
# Names come from /etc/hosts (podman writes ExtraHosts there) before DNS is ever asked.
printf '%s\n' 'passwd: files' 'group: files' 'hosts: files dns' >"$root/etc/nsswitch.conf"

import_rootfs "$root" "$TAG" "$RECIPE" "trainyard test box" "${CHANGES[@]}"
