#!/bin/sh
# t7020-slurm-netns: `--runtime slurm` on the level-2 simulated cluster (tests/lib/
# slurm-cluster.sh: slurmctld in netns h1 = 198.18.100.1, slurmd in h2..h5 = 198.18.100.2-5,
# each its own host with its own hostname), so replicas really are on different hosts. The
# supervisor (`trainyard local train`) runs in h1 like every Slurm client. Each replica's
# CLUSTER_SPEC address is its own host's address, replicas reach each other there (one
# replica a host, and two a host with distinct ports), the digits example trains across
# four hosts, a tuning job's parallel trials bring their metrics back from the hosts, and
# nothing is left behind: no Slurm job, no launcher, no replica, no namespace.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/slurm-cluster.sh"

PROBE="$TY_SOURCE_DIR/tests/integration/replica-probe.py"
TESTS="a 1+3 job on n1-standard-8 runs one replica on each of h2..h5 and succeeds
each replica's CLUSTER_SPEC address is its own host's 198.18.100.x address
all pairs of replicas on different hosts reach each other at the advertised addresses
a 1+3+2 job shares hosts: distinct ports on a shared host, all pairs reach each other
digits 1+2+1 trains across four hosts and reaches >= 0.93
a tuning job runs two trials at once on Slurm; each metric comes back from its hosts
afterwards no Slurm job, launcher or replica is left
the cluster stop leaves no process, namespace or /etc/netns entry"
skip_all() {
  echo "$TESTS" | while read -r t; do test_skip "$t" "$1"; done
  test_count=$((test_count + $(echo "$TESTS" | wc -l)))
  test_done
}

if ! slurm_netns_cluster_check; then skip_all "$TY_SLURM_SKIP_REASON"; fi
trap 'slurm_netns_cluster_stop' EXIT
trap 'slurm_netns_cluster_stop; exit 130' INT TERM
if ! slurm_netns_cluster_start; then
  skip_all "the level-2 cluster did not start: $TY_SLURM_ERROR"
fi
echo "# level 2 started in ${TY_SLURM_NETNS_START_SECONDS}s ($TY_SLURM_NETNS_DIR, namespaces $TY_SLURM_NETNS_PREFIX-*)"

# The nodes advertise 8 CPUs and 4000 MB: an n1-standard-8 replica takes a whole node, two
# n1-standard-4 ones share one; memory is left to the cluster's defaults.
export TRAINYARD_SLURM_MEMORY=none
export TRAINYARD_TASK="$TY_BUILD_DIR/bin/trainyard-task"
# Every process of a run (the supervisor, and through srun --export=ALL the launchers
# and the replicas) carries this marker in its environment; the test's own shell does not.
RUN=t7020-$(cat "$TY_SLURM_NETNS_DIR/id")-$$
# ty_train ARGS...: `trainyard local train ARGS` on h1, the controller host.
ty_train() { slurm_netns_run env TY_T7020_RUN="$RUN" "$TRAINYARD" local train "$@"; }
h1() { slurm_netns_run "$@"; }
# job_nodes LOG: the NodeList of the Slurm job the run in LOG submitted (scontrol keeps
# finished jobs for MinJobAge=300 s).
job_nodes() {
  h1 scontrol -o show job "$(sed -n "s/.*Submitted as Slurm job \([0-9]*\)\..*/\1/p" "$1")" |
    sed -n "s/.* NodeList=\([^ ]*\) .*/\1/p"
}
rec() { json_get "$TRAINYARD_HOME/jobs/local/$1/job.json" "$2"; }
# show LOG: print the log (the test failed) and fail
show() { echo "---- $1:"; cat "$1"; return 1; }
no_slurm_jobs() { [ -z "$(h1 squeue -h -o %i)" ]; }
# run_procs: PIDs of the live processes carrying the run's marker (leftovers, once the
# supervisor has exited).
run_procs() {
  grep -lzx "TY_T7020_RUN=$RUN" /proc/[0-9]*/environ 2>/dev/null |
    while read -r f; do
      pid=${f#/proc/}; pid=${pid%/environ}
      if _slurm_alive "$pid"; then echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline")"; fi
    done
}
no_run_procs() { [ -z "$(run_procs)" ]; }

# host.py PYTHON PROBE OUTDIR: records where the replica runs (hostname, eth0's address, its
# launcher's command line and SLURM_LAUNCH_NODE_IPADDR, the run marker) in OUTDIR/<task>.host,
# then execs the probe.
cat >"$TEST_DIR/host.py" <<\EOF
import json, os, shutil, socket, subprocess, sys
py, probe, out = sys.argv[1:4]
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
ip = shutil.which("ip") or "/usr/sbin/ip"
eth0 = subprocess.run([ip, "-4", "-o", "addr", "show", "dev", "eth0"],
                      capture_output=True, text=True).stdout.split()
# the closest ancestor that is the launcher (trainyard-task --connect [ADDR]:PORT)
pid, parent, launch = os.getppid(), [], None
while pid > 1 and not parent:
    argv = [a.decode() for a in open("/proc/%d/cmdline" % pid, "rb").read().split(b"\0") if a]
    if argv and os.path.basename(argv[0]) == "trainyard-task":
        parent = argv
        env = open("/proc/%d/environ" % pid, "rb").read().split(b"\0")
        launch = next((e[25:].decode() for e in env if e.startswith(b"SLURM_LAUNCH_NODE_IPADDR=")), None)
    pid = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
json.dump({"hostname": socket.gethostname(), "eth0": eth0[3].split("/")[0] if len(eth0) > 3 else None,
           "launcher": parent, "launch_ip": launch, "mark": os.environ.get("TY_T7020_RUN")},
          open(os.path.join(out, "%s-%d.host" % (task["type"], task["index"])), "w"))
os.execv(py, [py, probe, out])
EOF

# probe_job FILE OUTDIR MACHINE WORKERS PS: a job whose every replica is host.py + the probe.
probe_job() {
  mkdir -p "$2" &&
    "$PYTHON" - "$1" "$PYTHON" "$TEST_DIR/host.py" "$PROBE" "$2" "$3" "$4" "$5" <<-\PY
	import json, sys
	f, py, host, probe, out, mt, w, p = sys.argv[1:]
	ti = {"scaleTier": "CUSTOM", "masterType": mt,
	      "masterConfig": {"imageUri": "x/y:1", "containerCommand": [py, host, py, probe, out]}}
	if int(w):
	    ti.update(workerType=mt, workerCount=int(w))
	if int(p):
	    ti.update(parameterServerType=mt, parameterServerCount=int(p))
	json.dump({"trainingInput": ti, "labels": {"trainyard-pytorch-env": "true"}}, open(f, "w"))
	PY
}

# check_probe OUTDIR N: the records of N replicas agree with where they ran: one cluster, one
# Slurm job; each replica's address is its own host's address (hostname = SLURMD_NODENAME =
# hN, eth0 = 198.18.100.N), its launcher dialled h1's address (`--connect :PORT`: the address
# srun's launch came from, SLURM_LAUNCH_NODE_IPADDR); MASTER_ADDR is the master's host;
# replicas sharing a host have distinct ports; every replica reached every other one.
check_probe() {
  "$PYTHON" - "$@" "$TY_SLURM_NETNS_SUBNET" "$RUN" <<-\PY
	import json, os, sys
	out, n, subnet, mark = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
	def load(ext):
	    return {f[:-len(ext)]: json.load(open(os.path.join(out, f)))
	            for f in os.listdir(out) if f.endswith(ext)}
	recs, hosts = load(".json"), load(".host")
	assert len(recs) == n and sorted(hosts) == sorted(recs), (sorted(recs), sorted(hosts))
	specs = {json.dumps(json.loads(r["CLUSTER_SPEC"])["cluster"]) for r in recs.values()}
	assert len(specs) == 1, specs
	cluster = json.loads(specs.pop())
	addr = {"%s-%d" % (role, i): a for role, v in cluster.items() for i, a in enumerate(v)}
	assert sorted(addr) == sorted(recs), (addr, sorted(recs))
	assert len(set(addr.values())) == n, addr
	assert len({r["SLURM_JOB_ID"] for r in recs.values()}) == 1, "one Slurm job"
	for name, r in sorted(recs.items()):
	    h = hosts[name]
	    node = r["SLURMD_NODENAME"]
	    ip, port = addr[name].rsplit(":", 1)
	    print(name, node, h["hostname"], h["eth0"], addr[name])
	    assert node in ("h2", "h3", "h4", "h5"), node
	    assert h["hostname"] == node, (name, h, node)
	    assert h["eth0"] == "%s.%s" % (subnet, node[1:]), (name, h, node)
	    assert ip == h["eth0"], ("advertised %s, but %s runs on %s" % (addr[name], name, h["eth0"]))
	    assert h["mark"] == mark, h
	    p = h["launcher"]
	    assert p[1:2] == ["--connect"] and p[2].startswith(":"), ("the launcher dialled", p)
	    assert h["launch_ip"] == subnet + ".1", ("the launcher dialled", p, h["launch_ip"])
	    t = json.loads(r["TF_CONFIG"])["task"]
	    assert "%s-%d" % (t["type"], t["index"]) == name, (name, t)
	    if t["type"] in ("master", "worker"):
	        assert "%s:%s" % (r["MASTER_ADDR"], r["MASTER_PORT"]) == addr["master-0"], (name, r)
	    else:
	        assert r["MASTER_ADDR"] is None, (name, r["MASTER_ADDR"])
	    assert r["TRAINYARD_TASK_TOKEN"] is None, "the launcher token leaked into " + name
	    bad = {k: v for k, v in r["reach"].items() if v is not True}
	    assert len(r["reach"]) == n and not bad, (name, "cannot reach", bad)
	by_host = {}
	for name, a in addr.items():
	    by_host.setdefault(a.rsplit(":", 1)[0], []).append(a)
	for ip, a in by_host.items():
	    assert len(set(a)) == len(a), ("two replicas on %s share a port" % ip, a)
	print("hosts:", {ip: len(a) for ip, a in sorted(by_host.items())})
	PY
}

test_expect_success 'a 1+3 job on n1-standard-8 runs one replica on each of h2..h5 and succeeds' '
  probe_job spread.json "$TEST_DIR/spread" n1-standard-8 3 0 &&
  ty_train spread_job --runtime slurm --config spread.json >spread.log 2>&1 &&
  grep -q "Submitted as Slurm job [0-9]*\." spread.log &&
  test "$(job_nodes spread.log)" = "h[2-5]" &&
  grep -q "master: all 4 replicas reported" spread.log &&
  test "$(rec spread_job "d[\"state\"]")" = SUCCEEDED || show spread.log
'
test_expect_success "each replica's CLUSTER_SPEC address is its own host's 198.18.100.x address" '
  { check_probe spread 4 >check.out || show check.out; } && cat check.out &&
  test "$(awk "/^(master|worker)/ { print \$2 }" check.out | sort -u | tr "\n" " ")" = "h2 h3 h4 h5 "
'
test_expect_success 'all pairs of replicas on different hosts reach each other at the advertised addresses' '
  for f in spread/*.json; do
    json_get "$f" "sorted(d[\"reach\"].items())" &&
    json_get "$f" "all(v is True for v in d[\"reach\"].values()) and len(d[\"reach\"]) == 4" | grep -q True || exit 1
  done
'
test_expect_success 'a 1+3+2 job shares hosts: distinct ports on a shared host, all pairs reach each other' '
  probe_job shared.json "$TEST_DIR/shared" n1-standard-4 3 2 &&
  ty_train shared_job --runtime slurm --config shared.json >shared.log 2>&1 &&
  grep -q "master: all 6 replicas reported" shared.log &&
  test "$(rec shared_job "d[\"state\"]")" = SUCCEEDED &&
  { check_probe shared 6 >check.out || show check.out; } && cat check.out &&
  awk "/^(master|worker|ps)/ { print \$2 }" check.out | sort | uniq -c >per-host &&
  cat per-host &&
  test "$(wc -l <per-host)" -ge 3 &&
  test "$(awk "{ print \$1 }" per-host | sort -n | tail -1)" -eq 2 || show shared.log
'
test_expect_success 'digits 1+2+1 trains across four hosts and reaches >= 0.93' '
  "$PYTHON" - digits.json <<-\PY &&
	import json, sys
	ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-8", "workerType": "n1-standard-8",
	      "workerCount": 2, "parameterServerType": "n1-standard-8", "parameterServerCount": 1,
	      "masterConfig": {"imageUri": "localhost/trainyard/digits:latest",
	                       "containerCommand": ["digits"],
	                       "containerArgs": ["--steps", "300", "--learning-rate", "0.5",
	                                         "--hidden", "64"]}}
	json.dump({"trainingInput": ti}, open(sys.argv[1], "w"))
	PY
  ty_train digits_job --runtime slurm --config digits.json --job-dir "$TEST_DIR/jd" >digits.log 2>&1 &&
  test "$(job_nodes digits.log)" = "h[2-5]" &&
  grep -q "ps-replica-0 *ps 0: serving parameters .* on 198\.18\.100\.[2-5]:[0-9]* for 2 worker(s)" digits.log &&
  acc=$(sed -n "s/.*master-replica-0 *final test accuracy: \(0\.[0-9]*\)$/\1/p" digits.log) &&
  echo "accuracy $acc" &&
  "$PYTHON" -c "import sys; sys.exit(0 if float(\"$acc\") >= 0.93 else 1)" &&
  grep -q "worker-replica-0 *worker 0: done" digits.log &&
  grep -q "worker-replica-1 *worker 1: done" digits.log &&
  grep -q "ps-replica-0 *ps 0: terminating" digits.log &&
  ls "$TEST_DIR/jd/checkpoints" | grep -q ckpt-final &&
  grep -q "Job completed successfully." digits.log &&
  test "$(rec digits_job "d[\"state\"]")" = SUCCEEDED || show digits.log
'
test_expect_success 'a tuning job runs two trials at once on Slurm; each metric comes back from its hosts' '
  "$PYTHON" - tune.json <<-\PY &&
	import json, sys
	prog = ("for a in \"$@\"; do case $a in --x=*) x=${a#--x=};; esac; done; "
	        "echo on $SLURMD_NODENAME $(hostname); sleep 1; "
	        "printf \"{\\\"%s\\\": \\\"%s\\\", \\\"global_step\\\": \\\"7\\\"}\\n\" "
	        "\"$CLOUD_ML_HP_METRIC_TAG\" \"$x\" >\"$CLOUD_ML_HP_METRIC_FILE\"")
	ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-8", "workerType": "n1-standard-8",
	      "workerCount": 1,
	      "masterConfig": {"imageUri": "x/y:1", "containerCommand": ["sh", "-c", prog, "prog"]},
	      "hyperparameters": {"goal": "MAXIMIZE", "maxTrials": 4, "maxParallelTrials": 2,
	                          "algorithm": "RANDOM_SEARCH",
	                          "params": [{"parameterName": "x", "type": "DOUBLE",
	                                      "minValue": 0, "maxValue": 1}]}}
	json.dump({"trainingInput": ti}, open(sys.argv[1], "w"))
	PY
  ty_train tune_job --runtime slurm --config tune.json >tune.log 2>&1 &&
  test "$(rec tune_job "d[\"trainingOutput\"][\"completedTrialCount\"]")" = 4 &&
  "$PYTHON" - "$TRAINYARD_HOME/jobs/local/tune_job/job.json" <<-\PY &&
	import json, sys
	o = json.load(open(sys.argv[1]))["trainingOutput"]
	assert len(o["trials"]) == 4, o
	for t in o["trials"]:
	    assert t["state"] == "SUCCEEDED", t
	    assert abs(t["finalMetric"]["objectiveValue"] - float(t["hyperparameters"]["x"])) < 1e-12, t
	    assert t["finalMetric"]["trainingStep"] == "7", t
	PY
  test "$(grep -c "Submitted as Slurm job" tune.log)" = 4 &&
  "$PYTHON" - tune.log <<-\PY || show tune.log
	import re, sys
	lines = open(sys.argv[1]).read().splitlines()
	on = [(i, m.group(1), m.group(2), m.group(3)) for i, l in enumerate(lines)
	      for m in [re.search(r"\[trial (\d+)\] on (h[2-5]) (h[2-5])$", l)] if m]
	hosts = {}
	for i, trial, node, hostname in on:
	    assert node == hostname, (trial, node, hostname)
	    hosts.setdefault(trial, []).append(node)
	print(hosts)
	assert sorted(hosts) == ["1", "2", "3", "4"], hosts
	assert all(len(set(h)) == 2 == len(h) for h in hosts.values()), hosts
	# two trials at once: both first trials had their replicas up on four hosts before
	# either ended
	end = min(i for i, l in enumerate(lines) if re.search(r"\[trial \d\] Job completed", l))
	first = [(t, n) for i, t, n, _ in on if i < end]
	print("up before the first trial ended:", first)
	assert {t for t, _ in first} == {"1", "2"} and len({n for _, n in first}) == 4, first
	PY
'
test_expect_success 'afterwards no Slurm job, launcher or replica is left' '
  wait_for 20 no_slurm_jobs &&
  h1 squeue &&
  wait_for 10 no_run_procs || { run_procs; exit 1; }
'
slurm_netns_cluster_stop
echo "# level 2 stopped in ${TY_SLURM_NETNS_STOP_SECONDS}s"
test_expect_success 'the cluster stop leaves no process, namespace or /etc/netns entry' '
  test -f "$TY_SLURM_NETNS_DIR/stopped" &&
  test -z "$(slurm_cluster_procs "$TY_SLURM_NETNS_DIR")" &&
  no_run_procs &&
  ! ip netns list | grep -F "$TY_SLURM_NETNS_PREFIX-" &&
  ! ls -d /etc/netns/$TY_SLURM_NETNS_PREFIX-* 2>/dev/null
'
test_done
