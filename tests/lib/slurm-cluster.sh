# SPDX-License-Identifier: Apache-2.0
# slurm-cluster.sh: simulated Slurm 22.05 clusters for the integration tests (POSIX sh/dash).
# Source it after test-lib.sh. Root only. Every process it starts is recorded by PID in
# DIR/pids and stopped by PID; logs are in DIR/log (cluster.log traces start and stop).
# See docs/internals/slurm-testing.md.
#
# Level 1, one host: four slurmd n1..n4 on 127.0.0.1.
#   slurm_cluster_check             0 when a level-1 cluster can start here; otherwise sets
#                                   TY_SLURM_SKIP_REASON (for test_skip) and returns 1.
#   slurm_cluster_start [DIR]       start munged, slurmctld and slurmd n1..n4 on free ports
#                                   (21000-29999, picked at start) with all state in DIR
#                                   (default: a new $TEST_DIR/slurm.XXXXXX); returns once
#                                   `sinfo -N` shows n1..n4 idle (30 s at most). Exports
#                                   SLURM_CONF, TY_SLURM_DIR, TY_SLURM_NODES ("n1 n2 n3 n4"),
#                                   TY_SLURM_START_SECONDS. On failure returns 1 with
#                                   TY_SLURM_ERROR set and nothing left running.
#   slurm_cluster_stop [DIR]        scancel every job, then TERM the daemons (KILL after 5 s),
#                                   then munged and any stray process of the cluster
#                                   (slurmstepd...). Idempotent. DIR defaults to $TY_SLURM_DIR.
#                                   Sets TY_SLURM_STOP_SECONDS.
#   slurm_node_restart NODE [DIR]   start NODE's slurmd again after a test killed it.
#   slurm_cluster_procs [DIR]       PIDs, one a line, of the cluster's processes still alive:
#                                   the recorded ones and any carrying its marker
#                                   TY_SLURM_CLUSTER=<id> in their environment (the daemons
#                                   get it; slurmstepd inherits it). Works for both levels.
#
# Level 2, network namespaces as hosts: h1 (controller, 198.18.100.1) and h2..h5 (compute
# nodes, 198.18.100.2-5), each a netns with its own hostname (UTS namespace) and /etc/hosts;
# their veths meet on a bridge in a namespace of its own, so the host netns gets nothing.
#   slurm_netns_cluster_check       as slurm_cluster_check, plus ip/nsenter/unshare/netns.
#   slurm_netns_cluster_start [DIR] as slurm_cluster_start (default DIR: a new
#                                   $TEST_DIR/slurm-netns.XXXXXX). Exports TY_SLURM_NETNS_DIR,
#                                   TY_SLURM_NETNS_CONF, TY_SLURM_NETNS_PREFIX (namespaces are
#                                   PREFIX-sw and PREFIX-h1..h5, PREFIX = tys-<6 hex>),
#                                   TY_SLURM_NETNS_NODES ("h2 h3 h4 h5"),
#                                   TY_SLURM_NETNS_START_SECONDS. It does NOT export SLURM_CONF:
#                                   a client in the host netns would route 198.18.x out of eth0.
#   slurm_netns_run CMD [ARG...]    run CMD "on the controller host" h1 (its netns, hostname
#                                   h1, its /etc/hosts) with SLURM_CONF set: srun, sbatch...
#   slurm_netns_run_on HOST CMD...  the same on any of h1..h5 (outside Slurm).
#   slurm_netns_cluster_stop [DIR]  as slurm_cluster_stop, then deletes the namespaces (the
#                                   bridge and veths go with them) and /etc/netns/PREFIX-*.
#                                   Sets TY_SLURM_NETNS_STOP_SECONDS.
#
# Start at the top level of a test script, not in a test body (a subshell), so the exported
# variables survive; stop before test_done, which removes $TEST_DIR and the PID lists in it.
# Each cluster runs its own munged on a private socket (slurm.conf AuthInfo=socket=...) with
# a key of its own (made with mungekey): a system munged is never used, stopped or needed.
# TY_SLURM_MUNGE_SOCKET=PATH: use a running munged there instead (neither started nor stopped).
# TY_SLURM_NODE_EXTRA: attributes added to every level-1 NodeName line (ending in a space),
# e.g. "Gres=gpu:2 " with TY_SLURM_EXTRA_CONF="GresTypes=gpu" and a gres.conf written by
# TY_SLURM_GRES_CONF (its text).
# TY_SLURM_EXTRA_CONF: lines appended to slurm.conf; a KEY=VALUE line replaces the KEY=
# line the script writes (Slurm itself would keep the first of a repeated keyword).
# Several clusters can run at once: level 1 picks free ports (and retries, at most 3 times,
# when a daemon finds its port taken); level 2 runs in per-cluster namespaces, where its fixed
# ports (6817, 6818) and addresses cannot collide.

TY_SLURM_NETNS_SUBNET=198.18.100
# ip, nsenter and the daemons live in sbin, which a test's PATH may lack
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin:/sbin ;; esac

_slurm_now() { date +%s.%N; }
_slurm_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

# _slurm_bin NAME: absolute path of a program (sbin included), or fail.
_slurm_bin() {
  local d
  for d in /usr/sbin /usr/bin /sbin /bin; do
    if [ -x "$d/$1" ]; then echo "$d/$1"; return 0; fi
  done
  command -v "$1" 2>/dev/null
}

# _slurm_alive PID: the process exists and is not a zombie.
_slurm_alive() {
  local st
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
  case "$st" in Z* | X* | "") return 1 ;; esac
  return 0
}

# _slurm_start_time PID: when the process started (/proc/PID/stat field 22; kept across exec).
_slurm_start_time() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }

# _slurm_is PID START: PID is alive and still the process that started at START, not a
# reused PID (PIDs wrap around quickly here).
_slurm_is() { _slurm_alive "$1" && [ "$(_slurm_start_time "$1")" = "$2" ]; }

slurm_cluster_check() {
  local b
  TY_SLURM_SKIP_REASON=
  if [ "$(id -u)" -ne 0 ]; then
    TY_SLURM_SKIP_REASON="not root (the test clusters run slurmd, which needs root)"; return 1
  fi
  for b in slurmctld slurmd munged mungekey munge sinfo srun sbatch scontrol scancel squeue; do
    if [ -z "$(_slurm_bin $b)" ]; then
      TY_SLURM_SKIP_REASON="$b not installed (scripts/install-deps.sh installs Slurm and munge)"
      return 1
    fi
  done
  if [ -z "$(_slurm_bin python3)" ]; then TY_SLURM_SKIP_REASON="python3 not installed"; return 1; fi
  return 0
}

slurm_netns_cluster_check() {
  local b
  slurm_cluster_check || return 1
  for b in ip nsenter unshare mount hostname; do
    if [ -z "$(_slurm_bin $b)" ]; then
      TY_SLURM_SKIP_REASON="$b not installed (iproute2/util-linux)"; return 1
    fi
  done
  if ! unshare --net true 2>/dev/null; then
    TY_SLURM_SKIP_REASON="cannot create network namespaces here"; return 1
  fi
  return 0
}

# _slurm_ports N: N distinct TCP ports in 21000-29999 that are free now (all held open until
# all are found, so they differ).
_slurm_ports() {
  "$(_slurm_bin python3)" - "$1" <<'PY'
import random, socket, sys
n, held, ports = int(sys.argv[1]), [], []
for p in random.sample(range(21000, 30000), 400):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("0.0.0.0", p)); s.listen(1)
    except OSError:
        s.close(); continue
    held.append(s); ports.append(p)
    if len(ports) == n:
        break
print(" ".join(map(str, ports)))
PY
}

# _slurm_new_id: a short run-specific identifier (6 hex digits).
_slurm_new_id() { od -An -N3 -tx1 /dev/urandom | tr -d ' \n'; }

# _slurm_record DIR PID NAME: remember a process this library started: "PID NAME START".
_slurm_record() { echo "$2 $3 $(_slurm_start_time "$2")" >>"$1/pids"; }

# _slurm_trace DIR MESSAGE: timestamped progress line in DIR/log/cluster.log.
_slurm_trace() {
  local dir="$1"; shift
  echo "$(date +%T.%N | cut -c1-12) $*" >>"$dir/log/cluster.log"
}

# _slurm_munge_start DIR: private key + munged on DIR/munge/munge.sock (or the socket given in
# TY_SLURM_MUNGE_SOCKET). Sets _slurm_munge_socket.
_slurm_munge_start() {
  local dir="$1" id pid i
  id=$(cat "$dir/id")
  if [ -n "${TY_SLURM_MUNGE_SOCKET:-}" ]; then
    _slurm_munge_socket=$TY_SLURM_MUNGE_SOCKET
    munge -S "$_slurm_munge_socket" -n >/dev/null 2>&1 ||
      { TY_SLURM_ERROR="no munged answers on $_slurm_munge_socket"; return 1; }
    return 0
  fi
  _slurm_munge_socket=$dir/munge/munge.sock
  mkdir -p "$dir/munge" && chmod 700 "$dir/munge"
  "$(_slurm_bin mungekey)" --create --keyfile="$dir/munge/munge.key" >>"$dir/log/munged.out" 2>&1 ||
    { TY_SLURM_ERROR="mungekey failed: $(tail -1 "$dir/log/munged.out")"; return 1; }
  # --force: the socket's directory lies under a 0700 scratch dir, which munged only warns about
  # with --force (fine: every client runs as root).
  env TY_SLURM_CLUSTER="$id" "$(_slurm_bin munged)" --foreground --force \
    --socket="$_slurm_munge_socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" \
    </dev/null >>"$dir/log/munged.out" 2>&1 &
  pid=$!
  _slurm_record "$dir" $pid munged
  i=0
  # poll for the socket first: a munge client that finds none backs off for a second
  while [ ! -S "$_slurm_munge_socket" ] && [ $i -lt 250 ] && _slurm_alive $pid; do
    i=$((i + 1)); sleep 0.02
  done
  i=0
  while ! munge -S "$_slurm_munge_socket" -n >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -ge 100 ] || ! _slurm_alive $pid; then
      TY_SLURM_ERROR="munged did not start: $(tail -1 "$dir/log/munged.out")"; return 1
    fi
    sleep 0.05
  done
  _slurm_trace "$dir" "munged up"
}

# _slurm_write_conf DIR CTLD_HOST CTLD_PORT NODE_LINES: the common slurm.conf.
_slurm_write_conf() {
  local dir="$1"
  cat >"$dir/slurm.conf" <<EOF
# written by tests/lib/slurm-cluster.sh
ClusterName=ty-$(cat "$dir/id")
SlurmctldHost=$2
SlurmctldPort=$3
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$_slurm_munge_socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
# hetjobs are only started by the backfill scheduler: run it every second
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,bf_hetjob_immediate
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
# nodes advertise more CPUs than the machine has
SlurmdParameters=config_overrides
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
# finished jobs stay visible to scontrol for 5 minutes (there is no accounting)
MinJobAge=300
KillWait=5
Waittime=0
$4
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
  if [ -n "${TY_SLURM_EXTRA_CONF:-}" ]; then
    # Slurm keeps the first of a repeated keyword: drop ours before appending the override.
    printf '%s\n' "$TY_SLURM_EXTRA_CONF" | while IFS= read -r line; do
      case $line in
        [A-Za-z]*=*) sed -i "/^${line%%=*}=/Id" "$dir/slurm.conf" ;;
      esac
    done
    printf '%s\n' "$TY_SLURM_EXTRA_CONF" >>"$dir/slurm.conf"
  fi
}

# _slurm_wait_idle DIR SECONDS N CLIENT...: wait until sinfo (run through the command prefix
# CLIENT, e.g. `env SLURM_CONF=...`) lists N idle nodes, while every recorded process lives.
_slurm_wait_idle() {
  local dir="$1" limit="$2" n="$3" i=0 pid name start t0; shift 3
  t0=$(date +%s)
  while :; do
    # a dead daemon first: a client facing no controller retries for 10 s
    while read -r pid name start; do
      if ! _slurm_is "$pid" "$start"; then
        TY_SLURM_ERROR="$name exited during start: $(tail -2 "$dir/log/$name.out" 2>/dev/null | tr '\n' ' ')"
        return 2
      fi
    done <"$dir/pids"
    if [ "$(timeout 5 "$@" sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | sort -u | wc -l)" -ge "$n" ]; then
      return 0
    fi
    if [ $(($(date +%s) - t0)) -ge "$limit" ]; then
      TY_SLURM_ERROR="nodes not idle after ${limit}s: $(timeout 5 "$@" sinfo -h -N -o '%N %t' 2>&1 | tr '\n' ' ')"
      return 1
    fi
    sleep 0.1
  done
}

slurm_cluster_start() {
  local dir="${1:-}" t0 ports ctld p n lines attempt=1 rc host
  t0=$(_slurm_now)
  TY_SLURM_ERROR=
  slurm_cluster_check || { TY_SLURM_ERROR=$TY_SLURM_SKIP_REASON; return 1; }
  if [ -z "$dir" ]; then dir=$(mktemp -d "${TEST_DIR:-/tmp}/slurm.XXXXXX") || return 1; fi
  mkdir -p "$dir" && dir=$(cd "$dir" && pwd)
  host=$(hostname)
  while :; do
    rm -rf "$dir/state" "$dir/spool" "$dir/run" "$dir/log" "$dir/munge" "$dir/stopped" "$dir/pids"
    mkdir -p "$dir/state" "$dir/spool" "$dir/run" "$dir/log"
    : >"$dir/pids"
    _slurm_new_id >"$dir/id"
    echo local >"$dir/kind"
    _slurm_trace "$dir" "start (attempt $attempt)"
    if ! _slurm_munge_start "$dir"; then slurm_cluster_stop "$dir"; return 1; fi
    ports=$(_slurm_ports 5)
    set -- $ports
    ctld=$1; shift
    lines='' n=1
    for p in "$@"; do
      lines="${lines}NodeName=n$n NodeHostname=$host NodeAddr=127.0.0.1 Port=$p CPUs=8 RealMemory=4000 ${TY_SLURM_NODE_EXTRA:-}State=UNKNOWN
"
      n=$((n + 1))
    done
    _slurm_write_conf "$dir" "$host(127.0.0.1)" "$ctld" "$lines"
    if [ -n "${TY_SLURM_GRES_CONF:-}" ]; then
      printf '%s\n' "$TY_SLURM_GRES_CONF" >"$dir/gres.conf"
    fi
    env TY_SLURM_CLUSTER="$(cat "$dir/id")" SLURM_CONF="$dir/slurm.conf" \
      "$(_slurm_bin slurmctld)" -D -i -f "$dir/slurm.conf" </dev/null >>"$dir/log/slurmctld.out" 2>&1 &
    _slurm_record "$dir" $! slurmctld
    for n in 1 2 3 4; do
      env TY_SLURM_CLUSTER="$(cat "$dir/id")" SLURM_CONF="$dir/slurm.conf" \
        "$(_slurm_bin slurmd)" -D -N n$n -f "$dir/slurm.conf" </dev/null >>"$dir/log/slurmd-n$n.out" 2>&1 &
      _slurm_record "$dir" $! slurmd-n$n
    done
    _slurm_trace "$dir" "daemons started"
    _slurm_wait_idle "$dir" 30 4 env SLURM_CONF="$dir/slurm.conf"
    rc=$?
    _slurm_trace "$dir" "nodes idle: rc=$rc $TY_SLURM_ERROR"
    [ $rc -eq 0 ] && break
    slurm_cluster_stop "$dir"
    if [ $rc -eq 2 ] && [ $attempt -lt 3 ] && grep -q "Address already in use" "$dir"/log/*; then
      attempt=$((attempt + 1)); continue
    fi
    return 1
  done
  export SLURM_CONF="$dir/slurm.conf" TY_SLURM_DIR="$dir" TY_SLURM_NODES="n1 n2 n3 n4"
  TY_SLURM_START_SECONDS=$(_slurm_since "$t0")
  export TY_SLURM_START_SECONDS
  echo "$TY_SLURM_START_SECONDS" >"$dir/start-seconds"
}

# _slurm_procs DIR PATTERN: "PID START" of each live process of the cluster: those recorded
# with a name matching the glob PATTERN, and for '*' also those carrying the marker.
_slurm_procs() {
  local dir="$1" pat="$2" pid name start id f
  [ -n "$dir" ] && [ -f "$dir/pids" ] || return 0
  id=$(cat "$dir/id")
  {
    while read -r pid name start; do
      # shellcheck disable=SC2254 # a glob on purpose
      case "$name" in $pat) if _slurm_is "$pid" "$start"; then echo "$pid $start"; fi ;; esac
    done <"$dir/pids"
    if [ "$pat" = "*" ]; then
      # processes that left their parents (slurmstepd is double-forked) carry the marker
      for f in $(grep -lzx "TY_SLURM_CLUSTER=$id" /proc/[0-9]*/environ 2>/dev/null); do
        pid=${f#/proc/}; pid=${pid%/environ}
        start=$(_slurm_start_time "$pid")
        if [ -n "$start" ] && _slurm_alive "$pid"; then echo "$pid $start"; fi
      done
    fi
  } | sort -un
}

slurm_cluster_procs() {
  _slurm_procs "${1:-${TY_SLURM_DIR:-}}" '*' | cut -d' ' -f1
}

# _slurm_kill_all DIR SECONDS PATTERN: TERM the live processes of the cluster (see
# _slurm_procs), KILL those left after SECONDS. Only ever signals a PID whose start time
# still matches.
_slurm_kill_all() {
  local dir="$1" limit="$2" pat="$3" procs pids='' alive pid start i=0
  procs=$(_slurm_procs "$dir" "$pat")
  [ -n "$procs" ] || return 0
  pids=$(echo "$procs" | cut -d' ' -f1 | tr '\n' ' ')
  _slurm_trace "$dir" "TERM $pids"
  echo "$procs" | while read -r pid start; do
    if _slurm_is "$pid" "$start"; then kill -TERM "$pid" 2>/dev/null; fi
  done
  while :; do
    alive=$(echo "$procs" | while read -r pid start; do
      if _slurm_is "$pid" "$start"; then echo "$pid"; fi
    done)
    [ -z "$alive" ] && break
    i=$((i + 1))
    if [ $i -ge $((limit * 20)) ]; then
      echo "slurm-cluster: KILL after ${limit}s:" $alive >>"$dir/log/stop.log"
      _slurm_trace "$dir" "KILL" $alive
      echo "$procs" | while read -r pid start; do
        if _slurm_is "$pid" "$start"; then kill -KILL "$pid" 2>/dev/null; fi
      done
      sleep 0.1
      break
    fi
    sleep 0.05
  done
  # reap the ones that are this shell's children (no-op for the others)
  for pid in $pids; do wait "$pid" 2>/dev/null; done
  return 0
}

# _slurm_stop_common DIR CLIENT...: cancel jobs (clients run through the command prefix
# CLIENT), stop the daemons, then munged and anything else with the cluster's marker.
_slurm_stop_common() {
  local dir="$1" jobs i=0 ctld_alive=''; shift
  if [ -n "$(_slurm_procs "$dir" slurmctld)" ]; then ctld_alive=yes; fi
  _slurm_trace "$dir" "stop"
  if [ -n "$ctld_alive" ]; then
    jobs=$(timeout 5 "$@" squeue -h -o %A 2>/dev/null)
    if [ -n "$jobs" ]; then
      timeout 5 "$@" scancel $jobs >>"$dir/log/stop.log" 2>&1
      # until no job is pending, running or completing (KillWait=5 bounds it)
      while [ -n "$(timeout 5 "$@" squeue -h -o %A 2>/dev/null)" ] && [ $i -lt 80 ]; do
        i=$((i + 1)); sleep 0.1
      done
    fi
  fi
  _slurm_trace "$dir" "jobs cancelled"
  _slurm_kill_all "$dir" 5 'slurm*'
  _slurm_trace "$dir" "slurm daemons stopped"
  _slurm_kill_all "$dir" 5 '*'
  _slurm_trace "$dir" "all stopped"
}

# slurm_node_restart NODE [DIR]: start the level-1 slurmd of NODE (n1..n4) again, after a test
# killed it. The new slurmd takes over the steps its predecessor left (slurmstepd
# processes that outlived it) and ends those of jobs that are gone, so nothing is orphaned.
slurm_node_restart() {
  local node="$1" dir="${2:-${TY_SLURM_DIR:-}}"
  [ -n "$dir" ] && [ -f "$dir/slurm.conf" ] || return 1
  env TY_SLURM_CLUSTER="$(cat "$dir/id")" SLURM_CONF="$dir/slurm.conf" \
    "$(_slurm_bin slurmd)" -D -N "$node" -f "$dir/slurm.conf" </dev/null >>"$dir/log/slurmd-$node.out" 2>&1 &
  _slurm_record "$dir" $! "slurmd-$node"
  _slurm_trace "$dir" "slurmd $node restarted"
}

# slurm_ctld_stop [DIR]: stop the level-1 cluster's slurmctld (its jobs stay in its state
# files, and their steps run on); slurm_ctld_start [DIR]: start it again, recovering them
# (no -i). For tests of a controller outage.
slurm_ctld_stop() {
  local dir="${1:-${TY_SLURM_DIR:-}}"
  [ -n "$dir" ] && [ -f "$dir/pids" ] || return 1
  _slurm_kill_all "$dir" 5 slurmctld
  _slurm_trace "$dir" "slurmctld stopped"
}
slurm_ctld_start() {
  local dir="${1:-${TY_SLURM_DIR:-}}"
  [ -n "$dir" ] && [ -f "$dir/slurm.conf" ] || return 1
  env TY_SLURM_CLUSTER="$(cat "$dir/id")" SLURM_CONF="$dir/slurm.conf" \
    "$(_slurm_bin slurmctld)" -D -f "$dir/slurm.conf" </dev/null >>"$dir/log/slurmctld.out" 2>&1 &
  _slurm_record "$dir" $! slurmctld
  _slurm_trace "$dir" "slurmctld started again"
}

slurm_cluster_stop() {
  local dir="${1:-${TY_SLURM_DIR:-}}" t0
  t0=$(_slurm_now)
  [ -n "$dir" ] && [ -f "$dir/pids" ] && [ ! -f "$dir/stopped" ] || return 0
  _slurm_stop_common "$dir" env SLURM_CONF="$dir/slurm.conf"
  : >"$dir/stopped"
  TY_SLURM_STOP_SECONDS=$(_slurm_since "$t0")
  echo "$TY_SLURM_STOP_SECONDS" >"$dir/stop-seconds"
}

# ---- level 2: network namespaces as hosts ----

# _slurm_ns_exec DIR HOST CMD...: run CMD in HOST's netns with hostname HOST and HOST's
# /etc/hosts (bind-mounted in a private mount namespace, gone with its last process), with
# SLURM_CONF set. nsenter and unshare exec without forking, so `_slurm_ns_exec ... &` in a
# simple command would keep the PID, but a function run in the background is a subshell: use
# _slurm_ns_spawn for daemons. Not `ip netns exec`: it remounts /sys, which hides the cgroup
# mounts slurmd needs.
_slurm_ns_exec() {
  local dir="$1" h="$2" prefix; shift 2
  prefix=$(cat "$dir/prefix")
  nsenter --net="/run/netns/$prefix-$h" unshare --uts --mount --propagation private \
    sh -c 'mount --bind "$1" /etc/hosts && hostname "$2" && shift 2 && exec "$@"' \
    sh "/etc/netns/$prefix-$h/hosts" "$h" env SLURM_CONF="$dir/slurm.conf" "$@"
}

# _slurm_ns_spawn DIR HOST NAME CMD...: _slurm_ns_exec in the background, output to
# DIR/log/NAME.out, the daemon's PID recorded as NAME.
_slurm_ns_spawn() {
  local dir="$1" h="$2" name="$3" prefix; shift 3
  prefix=$(cat "$dir/prefix")
  nsenter --net="/run/netns/$prefix-$h" unshare --uts --mount --propagation private \
    sh -c 'mount --bind "$1" /etc/hosts && hostname "$2" && shift 2 && exec "$@"' \
    sh "/etc/netns/$prefix-$h/hosts" "$h" env SLURM_CONF="$dir/slurm.conf" "$@" \
    </dev/null >>"$dir/log/$name.out" 2>&1 &
  _slurm_record "$dir" $! "$name"
}

slurm_netns_run_on() {
  local h="$1"; shift
  [ -n "${TY_SLURM_NETNS_DIR:-}" ] || { echo "slurm_netns_run_on: no netns cluster" >&2; return 1; }
  _slurm_ns_exec "$TY_SLURM_NETNS_DIR" "$h" "$@"
}

slurm_netns_run() { slurm_netns_run_on h1 "$@"; }

slurm_netns_cluster_start() {
  local dir="${1:-}" t0 prefix id i h lines hosts rc ns
  t0=$(_slurm_now)
  TY_SLURM_ERROR=
  slurm_netns_cluster_check || { TY_SLURM_ERROR=$TY_SLURM_SKIP_REASON; return 1; }
  if [ -z "$dir" ]; then dir=$(mktemp -d "${TEST_DIR:-/tmp}/slurm-netns.XXXXXX") || return 1; fi
  mkdir -p "$dir" && dir=$(cd "$dir" && pwd)
  rm -rf "$dir/state" "$dir/spool" "$dir/run" "$dir/log" "$dir/munge" "$dir/stopped" "$dir/pids"
  mkdir -p "$dir/state" "$dir/spool" "$dir/run" "$dir/log"
  : >"$dir/pids"
  : >"$dir/netns"
  _slurm_trace "$dir" "start"
  # a fresh id whose namespace names are all unused (only names recorded here are deleted)
  while :; do
    id=$(_slurm_new_id)
    prefix=tys-$id
    ls -d /run/netns/"$prefix"-* /etc/netns/"$prefix"-* >/dev/null 2>&1 || break
  done
  echo "$id" >"$dir/id"
  echo netns >"$dir/kind"
  echo "$prefix" >"$dir/prefix"
  if ! _slurm_munge_start "$dir"; then slurm_netns_cluster_stop "$dir"; return 1; fi
  # the switch: a bridge in its own namespace; host i gets eth0 = 198.18.100.i, its peer pI
  # is created directly in the switch namespace (never in the host's). ip -batch: one ip
  # process per namespace.
  hosts="127.0.0.1 localhost
"
  : >"$dir/ip-netns.batch"
  : >"$dir/ip-sw.batch"
  echo "$prefix-sw" >>"$dir/netns"
  echo "netns add $prefix-sw" >>"$dir/ip-netns.batch"
  echo "link add br0 type bridge" >>"$dir/ip-sw.batch"
  for i in 1 2 3 4 5; do
    ns=$prefix-h$i
    hosts="$hosts$TY_SLURM_NETNS_SUBNET.$i h$i
"
    echo "$ns" >>"$dir/netns"
    echo "netns add $ns" >>"$dir/ip-netns.batch"
    printf 'link add p%s type veth peer name eth0 netns %s\nlink set p%s master br0 up\n' \
      $i "$ns" $i >>"$dir/ip-sw.batch"
    printf 'addr add %s/24 dev eth0\nlink set eth0 up\nlink set lo up\n' \
      "$TY_SLURM_NETNS_SUBNET.$i" >"$dir/ip-h$i.batch"
  done
  printf 'link set br0 up\nlink set lo up\n' >>"$dir/ip-sw.batch"
  if ! {
    ip -batch "$dir/ip-netns.batch" && ip -n "$prefix-sw" -batch "$dir/ip-sw.batch" &&
      for i in 1 2 3 4 5; do
        ns=$prefix-h$i
        ip -n "$ns" -batch "$dir/ip-h$i.batch" &&
          { mkdir -p "/etc/netns/$ns" || mkdir -p "/etc/netns/$ns"; } &&
          printf '%s' "$hosts" >"/etc/netns/$ns/hosts" || exit 1
      done
  } >>"$dir/log/netns.log" 2>&1; then
    TY_SLURM_ERROR="cannot set up the namespaces: $(tail -1 "$dir/log/netns.log")"
    slurm_netns_cluster_stop "$dir"; return 1
  fi
  _slurm_trace "$dir" "namespaces up"
  lines="NodeName=h[2-5] NodeHostname=h[2-5] NodeAddr=$TY_SLURM_NETNS_SUBNET.[2-5] Port=6818 CPUs=8 RealMemory=4000 State=UNKNOWN"
  _slurm_write_conf "$dir" "h1($TY_SLURM_NETNS_SUBNET.1)" 6817 "$lines"
  _slurm_ns_spawn "$dir" h1 slurmctld env TY_SLURM_CLUSTER="$id" \
    "$(_slurm_bin slurmctld)" -D -i -f "$dir/slurm.conf"
  for i in 2 3 4 5; do
    _slurm_ns_spawn "$dir" h$i slurmd-h$i env TY_SLURM_CLUSTER="$id" \
      "$(_slurm_bin slurmd)" -D -N h$i -f "$dir/slurm.conf"
  done
  export TY_SLURM_NETNS_DIR="$dir" TY_SLURM_NETNS_CONF="$dir/slurm.conf" TY_SLURM_NETNS_PREFIX="$prefix"
  export TY_SLURM_NETNS_NODES="h2 h3 h4 h5"
  _slurm_trace "$dir" "daemons started"
  _slurm_wait_idle "$dir" 30 4 nsenter --net="/run/netns/$prefix-h1" env SLURM_CONF="$dir/slurm.conf"
  rc=$?
  _slurm_trace "$dir" "nodes idle: rc=$rc $TY_SLURM_ERROR"
  if [ $rc -ne 0 ]; then slurm_netns_cluster_stop "$dir"; return 1; fi
  TY_SLURM_NETNS_START_SECONDS=$(_slurm_since "$t0")
  export TY_SLURM_NETNS_START_SECONDS
  echo "$TY_SLURM_NETNS_START_SECONDS" >"$dir/start-seconds"
}

slurm_netns_cluster_stop() {
  local dir="${1:-${TY_SLURM_NETNS_DIR:-}}" t0 ns
  t0=$(_slurm_now)
  [ -n "$dir" ] && [ -f "$dir/pids" ] && [ ! -f "$dir/stopped" ] || return 0
  _slurm_stop_common "$dir" nsenter --net="/run/netns/$(cat "$dir/prefix")-h1" env SLURM_CONF="$dir/slurm.conf"
  # deleting a host namespace deletes its eth0 and so the veth peer; the bridge goes with the
  # switch namespace. Only names this cluster recorded are touched.
  : >"$dir/ip-del.batch"
  while read -r ns; do
    [ -n "$ns" ] || continue
    if [ -e "/run/netns/$ns" ]; then echo "netns del $ns" >>"$dir/ip-del.batch"; fi
    if [ -d "/etc/netns/$ns" ]; then rm -rf "/etc/netns/$ns"; fi
  done <"$dir/netns"
  if [ -s "$dir/ip-del.batch" ]; then
    ip -force -batch "$dir/ip-del.batch" >>"$dir/log/netns.log" 2>&1
  fi
  rmdir /etc/netns 2>/dev/null
  _slurm_trace "$dir" "namespaces deleted"
  : >"$dir/stopped"
  TY_SLURM_NETNS_STOP_SECONDS=$(_slurm_since "$t0")
  echo "$TY_SLURM_NETNS_STOP_SECONDS" >"$dir/stop-seconds"
}
