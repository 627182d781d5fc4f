#!/usr/bin/env bash
# setup-podman.sh: make rootful podman usable for trainyard's container runtime on this host,
# then prove it. Installs nothing (scripts/install-deps.sh does); idempotent; quiet when there
# is nothing to do. Must run as root.
#
# Host fixes, each applied only when missing:
#   1. cgroup v1 hosts: mount the hugetlb controller at /sys/fs/cgroup/hugetlb (crun wants it).
#   2. containers.conf: default_ulimits nofile=20000:20000, nproc=32768:32768 (podman's own
#      defaults exceed what root may set here, so every container fails in setrlimit), and
#      network_backend = "netavark" (podman otherwise picks CNI because podman's package ships
#      /etc/cni/net.d/87-podman-bridge.conflist, and the CNI plugins are not installed).
#      They go into the drop-in /etc/containers/containers.conf.d/50-trainyard.conf, which
#      podman 4.3 reads after /etc/containers/containers.conf. A key that containers.conf or
#      another drop-in already sets is left out of it, so the user's value stays in force.
# Then the check: `podman info`, the test image (tests/integration/images/build-testbox.sh),
# and one container on an Internal network with a fixed IP from 198.18.0.0/15. The probe
# network and container are removed again; the test image stays (the tests use it).
#
# Exit status: 0 podman is usable; 3 it is not, with a one-line reason on stderr, so that a
# caller can fall back to the process runtime.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 3
export PATH=$PATH:/usr/sbin:/sbin # iptables, for netavark

DROPIN_DIR=/etc/containers/containers.conf.d
DROPIN=$DROPIN_DIR/50-trainyard.conf
TESTBOX=localhost/trainyard/testbox:1
PROBE_NET=trainyard-setup-probe
PROBE_CTR=trainyard-setup-probe
PROBE_LABEL=trainyard.setup-probe=1

unusable() { echo "setup-podman: podman is not usable: $*" >&2; exit 3; }
note() { echo "setup-podman: $*" >&2; }
lastline() { printf '%s' "$1" | sed '/^[[:space:]]*$/d' | tail -n 1 | cut -c1-300; }

[ "$(id -u)" -eq 0 ] || unusable "not root (trainyard's container runtime uses rootful podman)"
command -v podman >/dev/null 2>&1 || unusable "podman is not installed (run scripts/install-deps.sh)"
netavark=
for d in /usr/local/libexec/podman /usr/local/lib/podman /usr/libexec/podman /usr/lib/podman; do
  [ -x "$d/netavark" ] && netavark=$d/netavark && break
done
[ -n "$netavark" ] || unusable "netavark is not installed (run scripts/install-deps.sh)"
command -v iptables >/dev/null 2>&1 || unusable "iptables is not installed; netavark needs it (run scripts/install-deps.sh)"

# One setup at a time (make test and a user may start it together).
mkdir -p /run/lock 2>/dev/null
exec 9>/run/lock/trainyard-setup-podman.lock || unusable "cannot open /run/lock/trainyard-setup-podman.lock"
flock -w 300 9 || unusable "another setup-podman.sh held its lock for 300 s"

# --- 1. hugetlb cgroup v1 controller --------------------------------------------------------
if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ] &&
   awk '$1 == "hugetlb" && $4 == 1 { f = 1 } END { exit !f }' /proc/cgroups 2>/dev/null; then
  if ! mountpoint -q /sys/fs/cgroup/hugetlb; then
    err=$({ mkdir -p /sys/fs/cgroup/hugetlb && mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb; } 2>&1) ||
      unusable "cannot mount the hugetlb cgroup controller: $(lastline "$err")"
    note "mounted the hugetlb cgroup controller at /sys/fs/cgroup/hugetlb"
  fi
fi

# --- 2. containers.conf drop-in -------------------------------------------------------------
# Debian's python3 (3.11, with tomllib), not whatever python3 comes first in PATH.
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || unusable "$PYTHON is missing (run scripts/install-deps.sh)"
# Prints the drop-in's text: the keys below that no other file sets (nothing if none).
want=$("$PYTHON" - "$DROPIN" 2>&1 <<'EOF'
import glob, os, sys, tomllib
ours = os.path.abspath(sys.argv[1])
want = {
    "containers": [("default_ulimits", '[\n  "nofile=20000:20000",\n  "nproc=32768:32768",\n]')],
    "network": [("network_backend", '"netavark"')],
}
files = ["/etc/containers/containers.conf"] + sorted(glob.glob("/etc/containers/containers.conf.d/*.conf"))
taken = set()
for f in files:
    if os.path.abspath(f) == ours or not os.path.isfile(f):
        continue
    try:
        with open(f, "rb") as fh:
            d = tomllib.load(fh)
    except Exception as e:
        print(f"{f}: {e}".replace("\n", " "), file=sys.stderr)
        sys.exit(1)
    for table, keys in want.items():
        for key, _ in keys:
            if isinstance(d.get(table), dict) and key in d[table]:
                taken.add((table, key))
out = []
for table, keys in want.items():
    lines = [f"{key} = {value}" for key, value in keys if (table, key) not in taken]
    if lines:
        out += [f"[{table}]"] + lines + [""]
if out:
    print("# Written by trainyard's scripts/setup-podman.sh, rewritten on each run. It sets only")
    print("# keys that /etc/containers/containers.conf and the other drop-ins leave unset.")
    print("\n".join(out).rstrip("\n"))
EOF
) || unusable "cannot parse the containers.conf files: $(lastline "$want")"
if [ -z "$want" ]; then
  if [ -e "$DROPIN" ]; then rm -f "$DROPIN" && note "removed $DROPIN (its keys are set elsewhere now)"; fi
elif [ "$(cat "$DROPIN" 2>/dev/null)" != "$want" ]; then
  { mkdir -p "$DROPIN_DIR" && printf '%s\n' "$want" >"$DROPIN.tmp.$$" && mv -f "$DROPIN.tmp.$$" "$DROPIN"; } ||
    { rm -f "$DROPIN.tmp.$$"; unusable "cannot write $DROPIN"; }
  note "wrote $DROPIN"
fi

# --- 3. does it work? -----------------------------------------------------------------------
errf=$(mktemp "${TMPDIR:-/tmp}/trainyard-setup-podman.XXXXXX") || unusable "mktemp failed"
out=$(timeout -k 5 60 podman info --format '{{.Host.NetworkBackend}} {{.Host.OCIRuntime.Name}}' 2>"$errf")
rc=$?
err=$(cat "$errf"); rm -f "$errf"
[ $rc -eq 0 ] || unusable "podman info failed: $(lastline "$err")"
backend=${out%% *}
[ "$backend" = netavark ] ||
  unusable "podman's network backend is '$backend', not netavark (network_backend in containers.conf)"

out=$(tests/integration/images/build-testbox.sh "$TESTBOX" 2>&1) ||
  unusable "cannot build $TESTBOX: $(lastline "$out")"
[ -z "$out" ] || echo "$out" >&2

# `network rm -f` also removes the containers attached to the network.
rm_net() { timeout -k 5 60 podman network rm -f "$@" >/dev/null 2>&1; }
# Leftovers of an interrupted run (the lock says no other run is live).
mapfile -t stale < <(timeout -k 5 30 podman network ls --filter "label=$PROBE_LABEL" --format '{{.Name}}' 2>/dev/null)
[ ${#stale[@]} -eq 0 ] || rm_net "${stale[@]}"
trap 'rm_net "$PROBE_NET"' EXIT
trap 'exit 3' INT TERM HUP

# The end of 198.18.0.0/15, away from the /24s the runtime hands to jobs from the bottom up.
ip=
for n in 255 254 253 252; do
  out=$(timeout -k 5 60 podman network create --internal --disable-dns --subnet "198.19.$n.0/24" \
        --label "$PROBE_LABEL" "$PROBE_NET" 2>&1) && { ip=198.19.$n.10; break; }
  case $out in *"already used"*) continue ;; esac
  unusable "cannot create an internal network (backend $backend): $(lastline "$out")"
done
[ -n "$ip" ] || unusable "198.19.252.0/24 to 198.19.255.0/24 are all in use; no subnet for the probe"

# shellcheck disable=SC2016 # $(hostname) is for the container's shell
out=$(timeout -k 5 120 podman run --rm --name "$PROBE_CTR" --label "$PROBE_LABEL" \
      --network "$PROBE_NET" --ip "$ip" --hostname probe "$TESTBOX" \
      sh -c 'ip -4 -o addr show dev eth0; ip route; echo "host=$(hostname) probe-ok"' 2>&1)
rc=$?
[ $rc -eq 0 ] || unusable "a container on an internal network failed (exit $rc, backend $backend): $(lastline "$out")"
case $out in
  *"inet $ip/24"*"host=probe probe-ok"*) ;;
  *) unusable "the probe container did not get its fixed IP $ip: $(lastline "$out")" ;;
esac
if grep -q '^default ' <<<"$out"; then
  unusable "the probe container on an Internal network has a default route"
fi
exit 0
