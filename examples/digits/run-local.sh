#!/usr/bin/env bash
# run-local.sh - developer check for the digits example: starts a
# 1 master + 2 workers + 2 ps + 1 evaluator cluster on loopback by hand,
# waits for the master, tears the rest down by PID and checks the result.
#
# usage: run-local.sh PATH_TO_DIGITS_BINARY [extra digits flags...]
# Exit 0 when the master's last line is "final test accuracy: 0.93x" or
# better and every replica behaved.  KEEP=1 keeps the work directory.
set -u

BIN=${1:-}
if [ -z "$BIN" ]; then
    echo "usage: run-local.sh PATH_TO_DIGITS_BINARY [extra digits flags...]" >&2
    exit 2
fi
shift
if [ ! -x "$BIN" ]; then
    echo "run-local.sh: $BIN is not an executable file" >&2
    exit 2
fi
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac

WORK=$(mktemp -d "${TMPDIR:-/tmp}/digits-local.XXXXXX") || exit 2
declare -a PIDS=() NAMES=()

# shellcheck disable=SC2317  # invoked through trap
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    done
    if [ "${KEEP:-0}" = 1 ] || [ "${OK:-0}" != 1 ]; then
        echo "run-local.sh: logs kept in $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

fail() {
    echo "run-local.sh: FAIL: $*" >&2
    local f
    for f in "$WORK"/*.log; do
        echo "----- ${f##*/} (last 15 lines)" >&2
        tail -n 15 "$f" >&2
    done
    exit 1
}

# Local TCP ports in use, from /proc (no python or ss needed).
used_ports() {
    local _sl addr _rest
    cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | while read -r _sl addr _rest; do
        case $addr in *:*) echo $((16#${addr##*:})) ;; esac
    done
}

pick_ports() {
    local used n=0 p tries=0
    used=" $(used_ports | tr '\n' ' ') "
    PORTS=()
    while [ $n -lt 6 ]; do
        tries=$((tries + 1))
        [ $tries -gt 1000 ] && { echo "run-local.sh: no free ports" >&2; exit 2; }
        p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
        case "$used ${PORTS[*]:-} " in *" $p "*) continue ;; esac
        PORTS+=("$p")
        n=$((n + 1))
    done
}
pick_ports

A="127.0.0.1"
CLUSTER="{\"master\":[\"$A:${PORTS[0]}\"],\"worker\":[\"$A:${PORTS[1]}\",\"$A:${PORTS[2]}\"],"
CLUSTER+="\"ps\":[\"$A:${PORTS[3]}\",\"$A:${PORTS[4]}\"],\"evaluator\":[\"$A:${PORTS[5]}\"]}"

start() { # start ROLE INDEX
    local spec
    spec="{\"cluster\":$CLUSTER,\"environment\":\"cloud\",\"task\":{\"type\":\"$1\",\"index\":$2,\"trial\":\"1\"},\"job\":{\"args\":[]}}"
    CLUSTER_SPEC=$spec CLOUD_ML_HP_METRIC_FILE="$WORK/hypertune/output.metrics" \
        "$BIN" --job-dir "$WORK/job" "${EXTRA[@]}" >"$WORK/$1-$2.log" 2>&1 &
    PIDS+=("$!")
    NAMES+=("$1-$2")
    eval "PID_${1}_$2=$!"
}

EXTRA=("$@")
T0=$(date +%s.%N)
echo "run-local.sh: ports ${PORTS[*]}, work dir $WORK"
# Clients first, servers last: exercises the connect retry/backoff.
start master 0
start worker 0
start worker 1
start evaluator 0
sleep 0.3
start ps 0
start ps 1

wait_exit() { # wait_exit PID SECONDS -> sets RC (or fails)
    local pid=$1 limit=$2 i=0
    while kill -0 "$pid" 2>/dev/null; do
        i=$((i + 1))
        [ $i -gt $((limit * 10)) ] && return 1
        sleep 0.1
    done
    wait "$pid"
    RC=$?
    return 0
}

# shellcheck disable=SC2154  # PID_* are set through eval in start()
{
    wait_exit "$PID_master_0" 120 || fail "master still running after 120 s"
    [ "$RC" = 0 ] || fail "master exited with status $RC"
    T1=$(date +%s.%N)
    for w in "$PID_worker_0" "$PID_worker_1"; do
        wait_exit "$w" 20 || fail "a worker is still running after the master finished"
        [ "$RC" = 0 ] || fail "a worker exited with status $RC"
    done
    wait_exit "$PID_evaluator_0" 20 || fail "evaluator did not finish after the final checkpoint"
    [ "$RC" = 0 ] || fail "evaluator exited with status $RC"
    for p in "$PID_ps_0" "$PID_ps_1"; do
        kill -0 "$p" 2>/dev/null || fail "a ps exited on its own"
        kill -TERM "$p"
        wait_exit "$p" 10 || fail "a ps ignored SIGTERM"
        [ "$RC" = 0 ] || fail "a ps exited with status $RC after SIGTERM"
    done
}

LAST=$(tail -n 1 "$WORK/master-0.log")
echo "run-local.sh: master: $LAST"
grep -E '^evaluator: step [0-9]+ test accuracy' "$WORK/evaluator-0.log" | tail -n 1 |
    sed 's/^/run-local.sh: /'
echo "$LAST" | grep -Eq '^final test accuracy: (0\.9[3-9][0-9]|1\.000)$' ||
    fail "unexpected last master line: $LAST"
grep -q 'evaluated the final checkpoint' "$WORK/evaluator-0.log" ||
    fail "evaluator did not report the final checkpoint"
[ -s "$WORK/job/checkpoints/ckpt-final.bin" ] || fail "no ckpt-final.bin written"
[ -s "$WORK/hypertune/output.metrics" ] || fail "no hypertune metric file written"
tail -n 1 "$WORK/hypertune/output.metrics" | grep -q '"training/hptuning/metric": "0\.9' ||
    fail "unexpected hypertune record: $(tail -n 1 "$WORK/hypertune/output.metrics")"
echo "run-local.sh: master wall time $(echo "$T0 $T1" | awk '{printf "%.2f", $2 - $1}') s"
echo "run-local.sh: PASS"
OK=1
exit 0
