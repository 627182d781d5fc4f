#!/usr/bin/env bash
# install-deps.sh: install what trainyard needs to build, test and run its demo, from
# Debian's package archive. Idempotent: installs only what is missing, waits for the dpkg
# lock, and says what it does. Run as root (or with sudo available).
set -euo pipefail

# Build: compiler, meson/ninja, libraries; clang-format (make test checks formatting).
# Tests: clang + compiler-rt (libFuzzer, ASan), python3-sklearn (the digits data set of
# examples/digits), procps (ps in tests), python3-prometheus-client (Prometheus' parser reads
# trainyardd's /metrics in t5110), tzdata (the time zones of the CLI's date(tz=...)).
# Container runtime (podman's Docker-compatible API; scripts/setup-podman.sh configures it):
# podman with crun, conmon, netavark + aardvark-dns (iptables: netavark needs it, or every
# container on a network fails with "netavark: No such file or directory"), catatonit (--init),
# uidmap; busybox-static (the root file system of the locally built images);
# libcurl4-openssl-dev (the API client); docker-registry (a local registry for pull tests).
# Slurm test clusters (tests/lib/slurm-cluster.sh): slurmctld, slurmd, slurm-client (srun,
# sbatch, sinfo, scontrol...) and munge (its postinst creates /etc/munge/munge.key); util-linux
# provides nsenter/unshare. Their services are never started on install; the tests start them.
# Dashboard tests (t5120, t5130): headless Chromium driven through chromedriver by Selenium's
# Python client (chromium, chromium-driver, python3-selenium). The dashboard's build needs
# node and npm: Debian's nodejs and npm when no npm is on the PATH (a machine may have its own
# node); scripts/install-web-deps.sh then installs web/'s packages from the npm registry.
PACKAGES=(
  gcc clang clang-format make meson ninja-build pkg-config
  libjansson-dev libyaml-dev zlib1g-dev
  libclang-rt-14-dev
  python3-sklearn python3-prometheus-client
  procps iproute2 tzdata
  python3-torch strace
  podman crun conmon netavark aardvark-dns iptables catatonit uidmap
  busybox-static libcurl4-openssl-dev docker-registry
  libmicrohttpd-dev libsqlite3-dev python3-googleapi python3-httplib2 wrk curl
  slurmctld slurmd slurm-client munge util-linux
  chromium chromium-driver python3-selenium
)
if ! command -v npm >/dev/null 2>&1; then
  PACKAGES+=(nodejs npm)
fi
# --bench: also what the benchmarks alone need: Optuna (bench/hpo's anchor samplers, TPE and
# random; numpy and scipy for its harness). `make test` never needs them.
case "${1:-}" in
  --bench) PACKAGES+=(python3-optuna python3-numpy python3-scipy) ;;
  "") ;;
  *) echo "install-deps: unknown option $1 (only --bench)" >&2; exit 2 ;;
esac
WEB_DEPS="$(dirname "${BASH_SOURCE[0]}")/install-web-deps.sh"

# One dpkg-query for all of them (one per package costs ~40 ms each).
installed=" $(dpkg-query -W -f='${Package} ${Status}\n' "${PACKAGES[@]}" 2>/dev/null |
  awk '$2 " " $3 " " $4 == "install ok installed" { printf "%s ", $1 }' || true) "
missing=()
for p in "${PACKAGES[@]}"; do
  [[ $installed == *" $p "* ]] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exec "$WEB_DEPS"
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "install-deps: missing packages (${missing[*]}) and not root; install them and retry" >&2
    exit 1
  fi
fi

wait_for_dpkg() {
  local waited=0
  while fuser /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock \
        >/dev/null 2>&1; do
    if [ $waited -eq 0 ]; then echo "install-deps: waiting for the dpkg lock..." >&2; fi
    sleep 2; waited=$((waited + 2))
    if [ $waited -ge 600 ]; then echo "install-deps: dpkg lock still held after 600 s" >&2; exit 1; fi
  done
}

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
wait_for_dpkg
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -q >&2 || true
wait_for_dpkg
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" >&2
"$WEB_DEPS"
