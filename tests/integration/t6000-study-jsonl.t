#!/bin/sh
# t6000-study-jsonl: `trainyard study --jsonl` speaks hpo-jsonl/1: lock-step replies, RANDOM_SEARCH,
# GRID_SEARCH and default (Bayesian) studies to the end (with FAILED completions), every suggestion checked against
# the value rules, `error` replies for bad input, exit 0 after end, determinism per seed; --explain's
# line per suggestion on stderr (and the same suggestions without it).
. "$(dirname "$0")/../lib/test-lib.sh"

# A driver of our own (not the shared harness): runs one study through a pipe, one line at a
# time, checks each reply, and prints a summary. Usage: drive ALGO SEED [extra-mode]
cat >"$TEST_DIR/drive.py" <<'PY'
import json, math, re, subprocess, sys

algo, seed, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else ""
params = [
    {"parameterName": "x", "type": "DOUBLE", "minValue": -5.0, "maxValue": 10.0,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "lr", "type": "DOUBLE", "minValue": 1e-5, "maxValue": 1,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "mom", "type": "DOUBLE", "minValue": 0.5, "maxValue": 0.999,
     "scaleType": "UNIT_REVERSE_LOG_SCALE"},
    {"parameterName": "layers", "type": "INTEGER", "minValue": 1, "maxValue": 4},
    {"parameterName": "batch", "type": "DISCRETE", "discreteValues": [16, 32, 64]},
    {"parameterName": "opt", "type": "CATEGORICAL", "categoricalValues": ["sgd", "adam"]},
]
if algo == "GRID_SEARCH":
    params = [p for p in params if p["type"] != "DOUBLE"]
grid = 4 * 3 * 2
spec = {"goal": "MINIMIZE", "maxTrials": 40 if algo == "GRID_SEARCH" else 30,
        "maxParallelTrials": 3, "maxFailedTrials": 0, "algorithm": algo,
        "hyperparameterMetricTag": "objective", "enableTrialEarlyStopping": False,
        "params": params}
p = subprocess.Popen(["trainyard", "study", "--jsonl"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

def ask(msg):
    line = msg if isinstance(msg, str) else json.dumps(msg)
    p.stdin.write(line + "\n")
    p.stdin.flush()
    reply = p.stdout.readline()
    assert reply.endswith("\n"), "no reply line to %r" % line
    assert reply.count("\n") == 1, "one line per reply: %r" % reply
    assert not re.search(r"\s", re.sub(r'"(\\.|[^"\\])*"', "", reply[:-1])), "not compact: " + reply
    return json.loads(reply)

def check(params_spec, values):
    assert set(values) == {q["parameterName"] for q in params_spec}, values
    for q in params_spec:
        v = values[q["parameterName"]]
        t = q["type"]
        if t == "CATEGORICAL":
            assert v in q["categoricalValues"], (q, v)
        elif t == "DISCRETE":
            assert isinstance(v, (int, float)) and v in q["discreteValues"], (q, v)
        else:
            assert isinstance(v, (int, float)) and not isinstance(v, bool), (q, v)
            assert math.isfinite(v) and q["minValue"] <= v <= q["maxValue"], (q, v)
            if t == "INTEGER":
                assert v == int(v), (q, v)

assert ask({"type": "study", "protocol": "hpo-jsonl/1", "studyId": "t-s%d" % seed, "seed": seed,
            "spec": spec}) == {"type": "ready"}
if mode == "errors":
    for bad in ["not json", "[1,2]", '{"type":"fly"}', '{"type":"suggest","count":0}',
                '{"type":"complete","trialId":"99","state":"SUCCEEDED","objective":1}',
                '{"type":"complete","trialId":"1","state":"SUCCEEDED"}',
                '{"type":"study","protocol":"hpo-jsonl/1","spec":{}}']:
        r = ask(bad)
        assert r["type"] == "error" and r["message"], (bad, r)
        print("error:", r["message"])
trials, pending, failed, n, seen = [], [], 0, 0, set()
while True:
    r = ask({"type": "suggest", "count": 3 - len(pending)})
    assert r["type"] == "suggestions", r
    if not r["trials"]:
        break
    for t in r["trials"]:
        check(params, t["parameters"])
        assert t["trialId"] == str(n + 1), t
        n += 1
        key = json.dumps(t["parameters"], sort_keys=True)
        if algo == "GRID_SEARCH":
            assert key not in seen, "grid point twice: " + key
        seen.add(key)
        pending.append(t)
        trials.append(t["parameters"])
    t = pending.pop(0)
    if int(t["trialId"]) % 5 == 0:
        r = ask({"type": "complete", "trialId": t["trialId"], "state": "FAILED", "reason": "injected"})
        failed += 1
    else:
        x = t["parameters"]
        r = ask({"type": "complete", "trialId": t["trialId"], "state": "SUCCEEDED",
                 "objective": x["layers"] + (x.get("x", 0) ** 2)})
    assert r == {"type": "ack"}, r
for t in pending:
    assert ask({"type": "complete", "trialId": t["trialId"], "state": "SUCCEEDED",
                "objective": 1.0}) == {"type": "ack"}
r = ask({"type": "end"})
assert r["type"] == "bye", r
p.stdin.close()
assert p.wait(timeout=10) == 0, "exit status %d" % p.returncode
if algo == "GRID_SEARCH":
    assert n == grid and len(seen) == grid, (n, len(seen))
else:
    assert n == 30, n
print("trials", n, "failed", failed, "distinct", len(seen))
print(json.dumps(trials))
PY

drive() {
  "$PYTHON" "$TEST_DIR/drive.py" "$@"
}

test_expect_success 'study --help describes the protocol' '
  "$TRAINYARD" study --help >out &&
  grep -q "hpo-jsonl/1" out && grep -q "RANDOM_SEARCH or GRID_SEARCH" out &&
  "$TRAINYARD" --help | grep -q "^  study "
'
test_expect_success 'study without --jsonl is a usage error' '
  test_expect_code=0; "$TRAINYARD" study 2>err || test_expect_code=$? &&
  test "$test_expect_code" = 2 && grep -q -- "--jsonl is required" err
'
test_expect_success 'a RANDOM_SEARCH study runs to maxTrials, failed trials included' '
  drive RANDOM_SEARCH 3 >out &&
  grep -q "^trials 30 failed 5 distinct 30$" out
'
test_expect_success 'the same seed gives the same study, another seed another' '
  drive RANDOM_SEARCH 3 >a && drive RANDOM_SEARCH 3 >b && drive RANDOM_SEARCH 4 >c &&
  cmp a b && ! cmp -s a c
'
test_expect_success 'HPO_SEED is used when the study message has no seed' '
  msg1="{\"type\":\"study\",\"protocol\":\"hpo-jsonl/1\",\"spec\":{\"algorithm\":\"RANDOM_SEARCH\",\"maxTrials\":2,\"params\":[{\"parameterName\":\"x\",\"type\":\"DOUBLE\",\"minValue\":0,\"maxValue\":1}]}}" &&
  printf "%s\n" "$msg1" "{\"type\":\"suggest\",\"count\":2}" "{\"type\":\"end\"}" >in &&
  HPO_SEED=5 "$TRAINYARD" study --jsonl <in >o1 && HPO_SEED=5 "$TRAINYARD" study --jsonl <in >o2 &&
  HPO_SEED=6 "$TRAINYARD" study --jsonl <in >o3 &&
  cmp o1 o2 && ! cmp -s o1 o3 && test $(wc -l <o1) = 3
'
test_expect_success 'a GRID_SEARCH study covers its grid exactly once, then ends early' '
  drive GRID_SEARCH 1 >out &&
  grep -q "^trials 24 failed 4 distinct 24$" out
'
test_expect_success 'bad lines get one error reply each and the study goes on' '
  drive RANDOM_SEARCH 2 errors >out &&
  test $(grep -c "^error:" out) = 7 &&
  grep -q "error: line 2: invalid JSON" out &&
  grep -q "unknown message type .fly." out &&
  grep -q "trialId: .99. is not a suggested trial" out &&
  grep -q "already running" out &&
  grep -q "^trials 30 failed 5" out
'
test_expect_success 'blank lines get no reply; logs go to stderr, not stdout' '
  printf "%s\n" "$(head -1 in)" "" "{\"type\":\"suggest\"}" "{\"type\":\"end\"}" >in2 &&
  "$TRAINYARD" study --jsonl <in2 >out 2>err &&
  test $(wc -l <out) = 3 && ! grep -q "trainyard study" out &&
  grep -q "\"type\":\"ready\"" out && grep -q "trainyard study:" err
'
test_expect_success 'the default algorithm (Bayesian optimisation) runs a study to maxTrials' '
  drive ALGORITHM_UNSPECIFIED 3 >out &&
  grep -q "^trials 30 failed 5 distinct 30$" out
'
test_expect_success 'the default algorithm is deterministic per seed' '
  drive ALGORITHM_UNSPECIFIED 5 >a && drive ALGORITHM_UNSPECIFIED 5 >b &&
  drive ALGORITHM_UNSPECIFIED 6 >c && cmp a b && ! cmp -s a c
'
test_expect_success 'a spec without algorithm gets the default, not an error' '
  printf "%s\n" "{\"type\":\"study\",\"protocol\":\"hpo-jsonl/1\",\"seed\":1,\"spec\":{\"params\":[{\"parameterName\":\"x\",\"type\":\"DOUBLE\",\"minValue\":0,\"maxValue\":1}]}}" "{\"type\":\"suggest\"}" "{\"type\":\"end\"}" >in3 &&
  "$TRAINYARD" study --jsonl <in3 >out 2>err &&
  head -1 out | grep -q "\"type\":\"ready\"" &&
  sed -n 2p out | grep -q "\"trialId\":\"1\"" && grep -q ALGORITHM_UNSPECIFIED err
'
test_expect_success 'GRID_SEARCH with a DOUBLE parameter is refused naming it' '
  printf "%s\n" "{\"type\":\"study\",\"protocol\":\"hpo-jsonl/1\",\"spec\":{\"algorithm\":\"GRID_SEARCH\",\"params\":[{\"parameterName\":\"lr\",\"type\":\"DOUBLE\",\"minValue\":0,\"maxValue\":1}]}}" "{\"type\":\"end\"}" >in4 &&
  "$TRAINYARD" study --jsonl <in4 >out 2>err &&
  head -1 out | grep -q "GRID_SEARCH needs INTEGER, CATEGORICAL or DISCRETE parameters, and .lr. is DOUBLE"
'
# spec.py: a study's spec given as JSON on the command line; prints the first reply.
cat >"$TEST_DIR/spec.py" <<'PY'
import json, subprocess, sys
p = subprocess.run(["trainyard", "study", "--jsonl"], text=True, capture_output=True,
                   input=json.dumps({"type": "study", "protocol": "hpo-jsonl/1",
                                     "spec": json.loads(sys.argv[1])}) + "\n{\"type\":\"end\"}\n")
print(p.stdout.splitlines()[0])
PY
test_expect_success 'bounds a double cannot work with are refused naming the parameter' '
  "$PYTHON" "$TEST_DIR/spec.py" "{\"params\":[{\"parameterName\":\"i\",\"type\":\"INTEGER\",\"minValue\":0,\"maxValue\":1e19}]}" >out &&
  grep -q "params\[0\]: minValue and maxValue must lie within +-9007199254740992 (2^53, the whole numbers a double holds exactly) for INTEGER parameter .i." out &&
  "$PYTHON" "$TEST_DIR/spec.py" "{\"params\":[{\"parameterName\":\"x\",\"type\":\"DOUBLE\",\"minValue\":-1e308,\"maxValue\":1e308}]}" >out &&
  grep -q "must lie within +-8.98847e+307 (half the largest double) for parameter .x." out &&
  "$PYTHON" "$TEST_DIR/spec.py" "{\"params\":[{\"parameterName\":\"d\",\"type\":\"DISCRETE\",\"discreteValues\":[-1e308,0,1e308]}]}" >out &&
  grep -q "discreteValues: -1e+308 is out of range" out
'
# uneven.py VALUES...: a DISCRETE parameter's values unevenly spaced on its scale; the
# default algorithm must suggest every value before any again (seeds 0-2, one at a time).
cat >"$TEST_DIR/uneven.py" <<'PY'
import json, math, subprocess, sys
values = [float(v) for v in sys.argv[1:]]
for seed in range(3):
    spec = {"goal": "MINIMIZE", "maxTrials": 12,
            "params": [{"parameterName": "d", "type": "DISCRETE", "discreteValues": values}]}
    p = subprocess.Popen(["trainyard", "study", "--jsonl"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, bufsize=1)
    def ask(m):
        p.stdin.write(json.dumps(m) + "\n"); p.stdin.flush()
        return json.loads(p.stdout.readline())
    assert ask({"type": "study", "protocol": "hpo-jsonl/1", "seed": seed, "spec": spec})["type"] == "ready"
    got = []
    for _ in range(12):
        t = ask({"type": "suggest", "count": 1})["trials"][0]
        got.append(t["parameters"]["d"])
        ask({"type": "complete", "trialId": t["trialId"], "state": "SUCCEEDED",
             "objective": -math.log(abs(t["parameters"]["d"]) + 1e-300)})
    ask({"type": "end"}); p.stdin.close(); p.wait(timeout=10)
    print("seed", seed, "first", len(values), "distinct", len(set(got[:len(values)])))
PY
test_expect_success 'DISCRETE values unevenly spaced: each suggested before any again' '
  "$PYTHON" "$TEST_DIR/uneven.py" 1 2 3 1000000 >out &&
  test "$(grep -c "first 4 distinct 4$" out)" = 3 &&
  "$PYTHON" "$TEST_DIR/uneven.py" 1e-12 1e-10 1e-8 1 >out &&
  test "$(grep -c "first 4 distinct 4$" out)" = 3
'
test_expect_success 'stdin ending before end exits 1' '
  test_expect_code=0; printf "%s\n" "$(head -1 in3)" | "$TRAINYARD" study --jsonl >out 2>err || test_expect_code=$? &&
  test "$test_expect_code" = 1 && grep -q "stdin ended" err
'
cat >"$TEST_DIR/stop.py" <<'PY'
import json, subprocess, sys

early = sys.argv[1] == "on"
spec = {"goal": "MAXIMIZE", "maxTrials": 10, "maxParallelTrials": 2, "algorithm": "RANDOM_SEARCH",
        "enableTrialEarlyStopping": early,
        "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]}
p = subprocess.Popen(["trainyard", "study", "--jsonl"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True, bufsize=1)
def ask(m):
    p.stdin.write(json.dumps(m) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
def measure(tid, step, v):
    return ask({"type": "measurement", "trialId": tid, "step": step, "objective": v})
assert ask({"type": "study", "protocol": "hpo-jsonl/1", "seed": 1, "spec": spec})["type"] == "ready"
# Three trials run to their end with accuracies 0.5, 0.6, 0.7 at every step 1..3.
for acc in (0.5, 0.6, 0.7):
    tid = ask({"type": "suggest", "count": 1})["trials"][0]["trialId"]
    for step in (1, 2, 3):
        r = measure(tid, step, acc)
        assert r == {"type": "ack", "shouldStop": False}, ("no decision before 3 references", r)
    assert ask({"type": "complete", "trialId": tid, "state": "SUCCEEDED", "objective": acc})["type"] == "ack"
bad, good = [t["trialId"] for t in ask({"type": "suggest", "count": 2})["trials"]]
print("good", measure(good, 1, 0.65)["shouldStop"])
print("bad", measure(bad, 1, 0.2)["shouldStop"])
print("bad-again", measure(bad, 2, 0.9).get("shouldStop", "error"))
r = measure("99", 1, 0.5)
print("unknown", r["type"], r.get("message", ""))
r = ask({"type": "measurement", "trialId": good, "step": -1, "objective": 0.5})
print("negative-step", r["type"], r.get("message", ""))
r = ask({"type": "measurement", "trialId": good, "step": 2})
print("no-objective", r["type"], r.get("message", ""))
assert ask({"type": "end"})["type"] == "bye"
p.stdin.close(); assert p.wait(timeout=10) == 0
PY

test_expect_success 'early stopping: measurements answer shouldStop by the median rule' '
  "$PYTHON" "$TEST_DIR/stop.py" on >out 2>err &&
  grep -q "^good False$" out && grep -q "^bad True$" out &&
  grep -q "^bad-again True$" out && test "$(grep -c "stop trial 4" err)" = 1 &&
  grep -q "^unknown error measurement.trialId: .99. is not a running trial$" out &&
  grep -q "^negative-step error measurement.step: a non-negative integer is required$" out &&
  grep -q "^no-objective error measurement.objective: a finite number is required$" out &&
  grep -q "stop trial 4 at step 1: best 0.2, median 0.6 of 3" err
'
test_expect_success 'without enableTrialEarlyStopping no trial is ever stopped' '
  "$PYTHON" "$TEST_DIR/stop.py" off >out 2>err &&
  grep -q "^good False$" out && grep -q "^bad False$" out
'

# --explain: one JSON line on stderr per suggested trial saying how it was chosen; the
# suggestions themselves unchanged. Usage: explain.py ALGO [explain|plain]
cat >"$TEST_DIR/explain.py" <<'PY'
import json, math, subprocess, sys

algo, mode = sys.argv[1], sys.argv[2]
params = [{"parameterName": n, "type": "DOUBLE", "minValue": -2.0, "maxValue": 3.0}
          for n in ("a", "b")]
if algo == "GRID_SEARCH":
    params = [{"parameterName": "k", "type": "INTEGER", "minValue": 1, "maxValue": 30}]
spec = {"goal": "MINIMIZE", "maxTrials": 30, "maxParallelTrials": 3, "algorithm": algo,
        "params": params}
argv = ["trainyard", "study", "--jsonl"] + (["--explain"] if mode == "explain" else [])
p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True, bufsize=1)
def ask(m):
    p.stdin.write(json.dumps(m) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
assert ask({"type": "study", "protocol": "hpo-jsonl/1", "seed": 3, "spec": spec})["type"] == "ready"
order, seen, succeeded, pending = [], {}, 0, []
def f(v):  # a sum of one function per parameter, minimum 0 at (0.7, 0.7)
    return sum((x - 0.7) ** 2 + 0.3 * math.sin(5 * x) ** 2 for x in v.values())
state = []  # (succeeded, pending) when each trial was suggested
while len(order) < 30:
    # three at once, then one per result: every fourth trial fails
    for t in ask({"type": "suggest", "count": 3 - len(pending)})["trials"]:
        state.append((succeeded, len(pending)))
        order.append(t["trialId"]); seen[t["trialId"]] = t["parameters"]; pending.append(t)
    if not pending:
        break
    t = pending.pop(0)
    if len(order) % 4 == 0:
        ask({"type": "complete", "trialId": t["trialId"], "state": "FAILED"})
    else:
        ask({"type": "complete", "trialId": t["trialId"], "state": "SUCCEEDED",
             "objective": f(t["parameters"])})
        succeeded += 1
assert ask({"type": "end"})["type"] == "bye"
p.stdin.close()
err = p.stderr.read()
assert p.wait(timeout=10) == 0
print("suggestions", json.dumps([seen[i] for i in order], sort_keys=True))
lines = [json.loads(l) for l in err.splitlines() if l.startswith("{")]
if mode != "explain":
    assert not lines, "explanations without --explain: %r" % lines[:2]
    sys.exit(0)
assert [l["trialId"] for l in lines] == order, "one line per trial, in order"
phases = [l["explain"]["phase"] for l in lines]
print("phases", " ".join(sorted(set(phases))))
if algo != "ALGORITHM_UNSPECIFIED":
    sys.exit(0)
assert phases[:5] == ["openingDesign"] * 5, phases[:6]  # max(5, dim + 1) for 2 parameters
for l, (ns, np_) in zip(lines, state):
    e = l["explain"]
    if e["phase"] in ("openingDesign", "random"):
        assert set(e) == {"phase"}, e
        continue
    assert e["phase"] in ("global", "trustRegion"), e
    assert e["kernel"] in ("ARD", "ADDITIVE"), e
    assert (e["succeeded"], e["pending"]) == (ns, np_), (l, ns, np_)
    assert e["candidate"] in ("uniform", "local", "coordinate", "random"), e
    if e["candidate"] != "random":
        assert all(math.isfinite(e[k]) for k in ("mean", "sd", "incumbent", "logEI")), e
        assert e["sd"] >= 0, e
    if e["phase"] == "trustRegion":
        assert 0 < e["side"] <= 1.6 and e["restarts"] >= 0, e
        assert 0 <= e["reach"] <= 1, e
print("modelled", sum(p in ("global", "trustRegion") for p in phases))
PY

test_expect_success 'study --explain: a line per suggestion on stderr, the suggestions unchanged' '
  "$PYTHON" "$TEST_DIR/explain.py" ALGORITHM_UNSPECIFIED explain >with &&
  "$PYTHON" "$TEST_DIR/explain.py" ALGORITHM_UNSPECIFIED plain >without &&
  grep "^suggestions" with >a && grep "^suggestions" without >b && cmp a b &&
  grep -q "^phases .*openingDesign" with && grep -q "^phases .*trustRegion" with &&
  grep -Eq "^modelled (1[5-9]|2[0-9])$" with
'
test_expect_success 'study --explain names RANDOM_SEARCH and GRID_SEARCH suggestions' '
  "$PYTHON" "$TEST_DIR/explain.py" RANDOM_SEARCH explain >out &&
  grep -q "^phases randomSearch$" out &&
  "$PYTHON" "$TEST_DIR/explain.py" GRID_SEARCH explain >out &&
  grep -q "^phases gridSearch$" out
'
test_done
