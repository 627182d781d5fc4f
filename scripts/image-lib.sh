# image-lib.sh: shared steps of trainyard's local image builds (sourced, not run).
# Building images with the podman CLI is a setup step; the container runtime itself only
# talks to the engine's API.

# Usage: import_rootfs ROOT TAG RECIPE MESSAGE [--change ...]...
# Pack ROOT reproducibly (sorted, fixed mtime and owners) and `podman import` it as TAG with
# the label trainyard.content-hash; when an image with that hash exists already nothing is
# rebuilt (at most TAG is pointed at it). The image TAG named before is removed if that left
# it nameless. Needs $work (a scratch directory).
import_rootfs() {
  local root=$1 tag=$2 recipe=$3 message=$4 hash old have
  shift 4
  tar --sort=name --mtime=@946684800 --owner=0 --group=0 --numeric-owner --format=gnu \
    -C "$root" -cf "$work/rootfs.tar" .
  hash=$({ sha256sum <"$work/rootfs.tar"; echo "$recipe"; printf '%s\n' "$@"; } |
    sha256sum | cut -c1-64)
  if [ "$(podman image inspect --format '{{index .Labels "trainyard.content-hash"}}' "$tag" \
          2>/dev/null || true)" = "$hash" ]; then
    return 0 # up to date: the common case
  fi
  old=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
  have=$(podman images --no-trunc --quiet --filter "label=trainyard.content-hash=$hash" | sed -n 1p)
  if [ -n "$have" ]; then
    podman tag "$have" "$tag"
    echo "image: tagged existing image ${have#sha256:} as $tag" >&2
  else
    podman import --quiet "$@" --change "LABEL trainyard.content-hash=$hash" \
      --message "$message ($recipe)" "$work/rootfs.tar" "$tag" >/dev/null
    echo "image: built $tag" >&2
  fi
  if [ -n "$old" ] && [ "$(podman image inspect --format '{{len .RepoTags}}' "$old" 2>/dev/null)" = 0 ]; then
    podman rmi "$old" >/dev/null 2>&1 || true
  fi
}

# Usage: begin_build TAG   hold the build lock of TAG (one build of a tag at a time: setup,
# tests and demo may all ask for an image), make the scratch directory $work (removed on exit)
# and an empty root file system $root with the host's /usr layout (merged_usr_layout).
begin_build() {
  mkdir -p /run/lock 2>/dev/null || true
  exec 9>"/run/lock/trainyard-image-$(printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '_').lock" || {
    echo "image: cannot open the lock file" >&2; exit 1; }
  flock 9
  work=$(mktemp -d "${TMPDIR:-/var/tmp}/trainyard-image.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  root=$work/rootfs
  mkdir -p "$root"
  merged_usr_layout "$root"
}

# Usage: merged_usr_layout ROOT   the host's bin/sbin/lib/lib64 -> usr/* symlinks in ROOT (so a
# file copied to its host path, e.g. an ldd path /lib/x86_64-linux-gnu/..., lands where the
# host has it) and the usual top-level directories.
merged_usr_layout() {
  local d t
  for d in bin sbin lib lib64; do
    if [ -L "/$d" ]; then
      t=$(readlink "/$d"); t=${t#/}
      mkdir -p "$1/$t"; ln -s "$t" "$1/$d"
    fi
  done
  mkdir -p "$1"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,root,proc,sys,dev,run,tmp}
  chmod 1777 "$1/tmp"; chmod 700 "$1/root"
}

# Usage: minimal_etc ROOT   passwd, group, and nsswitch reading /etc/hosts before DNS
minimal_etc() {
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' \
    >"$1/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$1/etc/group"
  printf '%s\n' 'passwd: files' 'group: files' 'hosts: files dns' >"$1/etc/nsswitch.conf"
}
