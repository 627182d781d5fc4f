#!/usr/bin/env bash
# build-image.sh [TAG]: build localhost/trainyard/pytorch-digits:latest (or TAG), an image
# that runs examples/pytorch/train_ddp.py with Debian's python3-torch, without any registry:
# the example is run once on the host under strace, and exactly the files it opened (the
# interpreter, the modules, torch's shared libraries, the digits data) are copied into the
# root file system at their host paths, then imported with podman. Idempotent (a content-hash
# label, see scripts/image-lib.sh). Needs root, podman, strace and python3-torch.
set -euo pipefail
TAG=${1:-localhost/trainyard/pytorch-digits:latest}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/image-lib.sh"
command -v strace >/dev/null || { echo "build-image: strace is missing" >&2; exit 1; }
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "build-image: python3-torch is missing" >&2; exit 1; }

begin_build "$TAG"
# The trace below runs the example (about a minute here): skip it when the image was built
# from exactly these inputs (this script, the example, the image library and the versions of
# the packages it copies files from).
inputs=$({ cat "$0" "$here/train_ddp.py" "$here/../../scripts/image-lib.sh";
           dpkg-query -W python3 python3-torch python3-numpy 2>/dev/null; } | sha256sum | cut -c1-32)
if [ "$(podman image inspect --format '{{index .Labels "trainyard.inputs"}}' "$TAG" 2>/dev/null || true)" = "$inputs" ]; then
  echo "build-image: $TAG is up to date"
  exit 0
fi
minimal_etc "$root"

# Every file a short single-process run opens or maps (DDP with more ranks uses the same
# modules; the gloo backend is part of libtorch).
(cd "$work" && env -u CLUSTER_SPEC -u TF_CONFIG strace -f -qq -e trace=openat,open,execve,stat,newfstatat \
  -o "$work/trace" /usr/bin/python3 "$here/train_ddp.py" --epochs 1 >/dev/null 2>&1)
# The kernel maps the ELF interpreter itself (no open to trace): add the interpreter's libraries.
{ grep -oE '"/[^"]+"' "$work/trace" | tr -d '"'; ldd /usr/bin/python3 | grep -oE '/[^ ]+'; } |
  sort -u | while read -r f; do
  case "$f" in /proc/*|/sys/*|/dev/*|/tmp/*|"$work"*|"$here"*) continue ;; esac
  [ -f "$f" ] || continue
  mkdir -p "$root$(dirname "$f")"
  cp -L "$f" "$root$f"
done
mkdir -p "$root/opt/trainyard"
cp "$here/train_ddp.py" "$root/opt/trainyard/train_ddp.py"

import_rootfs "$root" "$TAG" trainyard-pytorch-digits-1 "trainyard PyTorch DDP example" \
  --change 'ENTRYPOINT ["/usr/bin/python3", "/opt/trainyard/train_ddp.py"]' \
  --change 'CMD ["--epochs", "30"]' --change 'WORKDIR /tmp' --change "LABEL trainyard.inputs=$inputs"
