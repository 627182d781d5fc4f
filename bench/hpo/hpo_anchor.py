#!/usr/bin/python3
"""hpo_anchor.py - anchor benchmark for hyperparameter-search quality.

(trainyard's copy of the shared harness, ../shared/bench/hpo: the same but for the problems of
multimodal.py, added to PROBLEMS and scored by default; issue 18.)

Scores search algorithms by *simple regret* (best value found minus the known
optimum, oriented so that 0 is perfect and larger is worse) on a few classic
test functions, over many seeds, at several trial budgets.

Built-in samplers (Debian packages python3-optuna 3.1, python3-sklearn):
  random   optuna.samplers.RandomSampler
  tpe      optuna.samplers.TPESampler()                      (defaults)
  tpe_mv   optuna.samplers.TPESampler(multivariate=True)
  gp_ei    sklearn GaussianProcessRegressor (Matern-5/2 ARD) + expected
           improvement maximised over 2000 uniform random candidates
           (continuous problems only; max(5, d+1) uniform random initial trials)
  gp_ei_local  as gp_ei, plus 2000 candidates drawn as Gaussian perturbations
           (sd 0.1 and 0.02 of the unit cube) of the 5 best points so far

External tuner (e.g. the C tuner):   --external "CMD"
  CMD is started with /bin/sh once per (problem, seed) study and must speak the
  line protocol "hpo-jsonl/1" on stdin/stdout; see PROTOCOL below and
  README.md next to this script.  random_tuner.py (also next to this script)
  is a reference implementation (random search).

Each run is a single study of max(budgets) trials; the regret at a smaller
budget B is the best value among its first B trials (none of the samplers here
looks at the total budget, so this equals a run of B trials).

Needs Debian's /usr/bin/python3 with python3-numpy and python3-scipy; the
built-in samplers also need python3-optuna and python3-sklearn.

Examples (run from the folder that holds this script; relative paths given to
--anchors and --report are also looked up next to this script)
  /usr/bin/python3 hpo_anchor.py --out new_results.json   # full anchor run (~13 min, 2 cores)
  /usr/bin/python3 hpo_anchor.py --seeds 3 --problems branin --out q.json
  /usr/bin/python3 hpo_anchor.py --samplers none \
      --external "/usr/bin/python3 random_tuner.py" --external-name rs_py \
      --anchors hpo_anchor_results.json --out external_results.json
  /usr/bin/python3 hpo_anchor.py --report hpo_anchor_results.json   # table only
Without --out, results are written to hpo_anchor_results.json next to this
script, replacing the stored anchors; pass --out for every new run.
Options worth knowing: --parallel P keeps P trials pending (maxParallelTrials);
--fail-rate F reports a fraction F of trials as FAILED; --timeout S per reply;
--algorithm sets spec.algorithm for the external tuner (e.g. RANDOM_SEARCH);
--external-log DIR keeps each study's stderr; --merge adds runs to --out.
The external command runs with cwd = the folder of this script and env
HPO_SEED, HPO_STUDY_ID; give the tuner's path relative to that folder or as an
absolute path.

PROTOCOL hpo-jsonl/1 (one JSON object per line, UTF-8, '\n' terminated;
harness -> tuner on the tuner's stdin, tuner -> harness on its stdout; every
harness message gets exactly one reply line; the tuner logs only to stderr)
  H: {"type":"study","protocol":"hpo-jsonl/1","studyId":"branin-s3","seed":3,
      "spec":{<AI Platform HyperparameterSpec>}}
  T: {"type":"ready"}
  H: {"type":"suggest","count":k}
  T: {"type":"suggestions","trials":[{"trialId":"1","parameters":{"x1":0.25,...}}, ...]}
      (1..k trials; 0 trials means "no more suggestions", the study ends)
  H: {"type":"complete","trialId":"1","state":"SUCCEEDED","objective":1.25}
  H: {"type":"complete","trialId":"2","state":"FAILED","reason":"..."}
  T: {"type":"ack"}
  H: {"type":"measurement","trialId":"1","step":10,"objective":0.9}  (optional;
      only when spec.enableTrialEarlyStopping; this harness never sends it)
  T: {"type":"ack","shouldStop":false}
  H: {"type":"end"}
  T: {"type":"bye"}        then the tuner exits with status 0
  Error reply (to any message): {"type":"error","message":"..."}; the harness
  then ends that study.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse
import json
import math
import multiprocessing as mp
import platform
import queue
import subprocess
import sys
import threading
import time
import warnings

import numpy as np

PROTOCOL = "hpo-jsonl/1"
BUILTIN = ("random", "tpe", "tpe_mv", "gp_ei", "gp_ei_local")
HERE = os.path.dirname(os.path.abspath(__file__))


def _input_path(path):
    """Resolve an input file: as given (relative to the current directory),
    else relative to the folder of this script."""
    if path and not os.path.isabs(path) and not os.path.exists(path):
        alt = os.path.join(HERE, path)
        if os.path.exists(alt):
            return alt
    return path


def _portable_argv(argv):
    """sys.argv with paths inside this script's folder made relative to it,
    so stored results do not embed machine-specific absolute paths."""
    out = []
    for a in argv:
        key, eq, val = a.partition("=") if a.startswith("--") else ("", "", a)
        if os.path.isabs(val) and os.path.commonpath([os.path.abspath(val), HERE]) == HERE:
            val = os.path.relpath(val, HERE)
        out.append(key + eq + val)
    return out


# ----------------------------------------------------------------- problems --

def _dparam(name, lo, hi, scale="UNIT_LINEAR_SCALE"):
    return {"parameterName": name, "type": "DOUBLE", "minValue": lo,
            "maxValue": hi, "scaleType": scale}


def branin(p):
    x1, x2 = p["x1"], p["x2"]
    b = 5.1 / (4 * math.pi ** 2)
    c = 5 / math.pi
    t = 1 / (8 * math.pi)
    return (x2 - b * x1 ** 2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


_H6_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_H6_A = np.array([[10, 3, 17, 3.5, 1.7, 8],
                  [0.05, 10, 17, 0.1, 8, 14],
                  [3, 3.5, 1.7, 10, 17, 8],
                  [17, 8, 0.05, 10, 0.1, 14]], dtype=float)
_H6_P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886],
                         [2329, 4135, 8307, 3736, 1004, 9991],
                         [2348, 1451, 3522, 2883, 3047, 6650],
                         [4047, 8828, 8732, 5743, 1091, 381]], dtype=float)


def hartmann6(p):
    x = np.array([p["x%d" % i] for i in range(1, 7)])
    return float(-_H6_ALPHA @ np.exp(-np.sum(_H6_A * (x - _H6_P) ** 2, axis=1)))


def rosenbrock4(p):
    x = [p["x%d" % i] for i in range(1, 5)]
    return float(sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
                     for i in range(3)))


# Mixed problem (goal MAXIMIZE, so tuners are also tested on the goal flag).
# score = -( base[c] + 0.05*(layers - L[c])^2
#            + (log10(lr) - (M[c] - 0.15*(layers - L[c])))^2 )
# Every term is >= 0, so score <= -base[c] <= 0; the unique maximum 0 is at
# optimizer=adam, num_layers=3, learning_rate=1e-3.  The best learning rate
# depends on the optimizer and on the depth (interaction), so the problem is
# not separable.
_MIX_BASE = {"sgd": 0.6, "momentum": 0.3, "adam": 0.0, "rmsprop": 0.15}
_MIX_L = {"sgd": 7, "momentum": 6, "adam": 3, "rmsprop": 4}
_MIX_M = {"sgd": -1.0, "momentum": -1.5, "adam": -3.0, "rmsprop": -2.5}


def mixed3(p):
    c = p["optimizer"]
    layers = p["num_layers"]
    lr = p["learning_rate"]
    dl = layers - _MIX_L[c]
    target = _MIX_M[c] - 0.15 * dl
    return -(_MIX_BASE[c] + 0.05 * dl * dl + (math.log10(lr) - target) ** 2)


def _spec(goal, params, max_trials=100):
    return {"goal": goal, "hyperparameterMetricTag": "objective",
            "maxTrials": max_trials, "maxParallelTrials": 1,
            "maxFailedTrials": 0, "algorithm": "ALGORITHM_UNSPECIFIED",
            "enableTrialEarlyStopping": False, "params": params}


PROBLEMS = {
    "branin": {
        "fn": branin, "optimum": 10.0 / (8 * math.pi),   # 0.397887...
        "spec": _spec("MINIMIZE", [_dparam("x1", -5.0, 10.0),
                                   _dparam("x2", 0.0, 15.0)]),
        "continuous": True,
        "note": "2-D, x1 in [-5,10], x2 in [0,15]; 3 global minima f*=0.397887",
    },
    "hartmann6": {
        "fn": hartmann6, "optimum": -3.322368011415512,
        "spec": _spec("MINIMIZE", [_dparam("x%d" % i, 0.0, 1.0)
                                   for i in range(1, 7)]),
        "continuous": True,
        "note": "6-D on [0,1]^6; f*=-3.32237 at (0.2017,0.1500,0.4769,0.2753,0.3117,0.6573)",
    },
    "rosenbrock4": {
        "fn": rosenbrock4, "optimum": 0.0,
        "spec": _spec("MINIMIZE", [_dparam("x%d" % i, -2.0, 2.0)
                                   for i in range(1, 5)]),
        "continuous": True,
        "note": "4-D on [-2,2]^4; f*=0 at (1,1,1,1)",
    },
    "mixed3": {
        "fn": mixed3, "optimum": 0.0,
        "spec": _spec("MAXIMIZE", [
            {"parameterName": "optimizer", "type": "CATEGORICAL",
             "categoricalValues": ["sgd", "momentum", "adam", "rmsprop"]},
            {"parameterName": "num_layers", "type": "INTEGER", "minValue": 1,
             "maxValue": 10, "scaleType": "UNIT_LINEAR_SCALE"},
            _dparam("learning_rate", 1e-5, 1.0, "UNIT_LOG_SCALE")]),
        "continuous": False,
        "note": "MAXIMIZE; CATEGORICAL(4) x INTEGER[1,10] x DOUBLE log[1e-5,1]; "
                "max 0 at (adam, 3, 1e-3)",
    },
}


# bench/hpo's own problems (trainyard issue 18; this copy of the shared harness is otherwise
# unchanged): strongly multimodal, 2-6 D, shifted. multimodal.py sits next to this script.
sys.path.insert(0, HERE)
from multimodal import MULTIMODAL  # noqa: E402

PROBLEMS.update(MULTIMODAL)


def regret(problem, value):
    """Oriented simple regret: 0 = optimum, larger = worse."""
    pb = PROBLEMS[problem]
    if pb["spec"]["goal"] == "MAXIMIZE":
        return pb["optimum"] - value
    return value - pb["optimum"]


def validate_params(spec, params):
    """Return None if `params` is a feasible point of `spec`, else a message."""
    if not isinstance(params, dict):
        return "parameters is not an object"
    for ps in spec["params"]:
        n = ps["parameterName"]
        if n not in params:
            return "missing parameter %s" % n
        v = params[n]
        t = ps["type"]
        if t == "CATEGORICAL":
            if v not in ps["categoricalValues"]:
                return "%s=%r not in categoricalValues" % (n, v)
        elif t == "DISCRETE":
            if not isinstance(v, (int, float)) or not any(
                    abs(v - d) <= 1e-9 * max(1.0, abs(d)) for d in ps["discreteValues"]):
                return "%s=%r not in discreteValues" % (n, v)
        elif t == "INTEGER":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v):
                return "%s=%r is not an integer" % (n, v)
            if not ps["minValue"] <= v <= ps["maxValue"]:
                return "%s=%r out of [%s,%s]" % (n, v, ps["minValue"], ps["maxValue"])
        elif t == "DOUBLE":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                return "%s=%r is not a finite number" % (n, v)
            lo, hi = ps["minValue"], ps["maxValue"]
            tol = 1e-9 * max(1.0, abs(lo), abs(hi))
            if not lo - tol <= v <= hi + tol:
                return "%s=%r out of [%s,%s]" % (n, v, lo, hi)
        else:
            return "unknown type %s" % t
    extra = set(params) - {ps["parameterName"] for ps in spec["params"]}
    if extra:
        return "unknown parameters %s" % sorted(extra)
    return None


def _clip_params(spec, params):
    out = dict(params)
    for ps in spec["params"]:
        if ps["type"] == "DOUBLE":
            out[ps["parameterName"]] = min(max(float(out[ps["parameterName"]]),
                                               ps["minValue"]), ps["maxValue"])
        elif ps["type"] == "INTEGER":
            out[ps["parameterName"]] = int(out[ps["parameterName"]])
    return out


# ------------------------------------------------------------ optuna runner --

def _optuna_dists(spec):
    import optuna.distributions as od
    dists = {}
    for ps in spec["params"]:
        n, t = ps["parameterName"], ps["type"]
        log = ps.get("scaleType") == "UNIT_LOG_SCALE"
        # Optuna has no reverse-log scale; UNIT_REVERSE_LOG_SCALE is treated as linear.
        if t == "DOUBLE":
            dists[n] = od.FloatDistribution(ps["minValue"], ps["maxValue"], log=log)
        elif t == "INTEGER":
            dists[n] = od.IntDistribution(int(ps["minValue"]), int(ps["maxValue"]), log=log)
        elif t == "CATEGORICAL":
            dists[n] = od.CategoricalDistribution(list(ps["categoricalValues"]))
        elif t == "DISCRETE":
            dists[n] = od.CategoricalDistribution(list(ps["discreteValues"]))
        else:
            raise ValueError(t)
    return dists


def run_optuna(problem, sampler_name, seed, n_trials):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")
    pb = PROBLEMS[problem]
    spec = pb["spec"]
    if sampler_name == "random":
        sampler = optuna.samplers.RandomSampler(seed=seed)
    elif sampler_name == "tpe":
        sampler = optuna.samplers.TPESampler(seed=seed)
    elif sampler_name == "tpe_mv":
        sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True)
    else:
        raise ValueError(sampler_name)
    direction = "maximize" if spec["goal"] == "MAXIMIZE" else "minimize"
    study = optuna.create_study(direction=direction, sampler=sampler)
    dists = _optuna_dists(spec)
    values, times = [], []
    for _ in range(n_trials):
        t0 = time.perf_counter()
        trial = study.ask(fixed_distributions=dists)   # sampling happens here
        times.append(time.perf_counter() - t0)
        v = pb["fn"](dict(trial.params))
        study.tell(trial, v)
        values.append(v)
    return {"values": values, "suggest_s": times, "status": "ok"}


# ------------------------------------------------------------ GP-EI runner --

def run_gp_ei(problem, seed, n_trials, n_cand=2000, local=False):
    from scipy.stats import norm
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern
    warnings.simplefilter("ignore")
    pb = PROBLEMS[problem]
    spec = pb["spec"]
    ps = spec["params"]
    if not pb["continuous"]:
        raise ValueError("gp_ei handles continuous problems only")
    d = len(ps)
    lo = np.array([p["minValue"] for p in ps], dtype=float)
    hi = np.array([p["maxValue"] for p in ps], dtype=float)
    sign = -1.0 if spec["goal"] == "MAXIMIZE" else 1.0   # internal: minimise
    rng = np.random.default_rng(seed)
    n_init = max(5, d + 1)
    U, Y, values, times = [], [], [], []
    for t in range(n_trials):
        t0 = time.perf_counter()
        if t < n_init:
            u = rng.random(d)
        else:
            kernel = ConstantKernel(1.0, (1e-3, 1e3)) * Matern(
                length_scale=np.full(d, 0.3), length_scale_bounds=(1e-2, 1e1), nu=2.5)
            gp = GaussianProcessRegressor(kernel=kernel, alpha=1e-6, normalize_y=True,
                                          n_restarts_optimizer=2,
                                          random_state=int(rng.integers(2 ** 31)))
            ya = np.array(Y)
            gp.fit(np.array(U), ya)
            cand = rng.random((n_cand, d))
            if local:
                # extra candidates: Gaussian perturbations of the 5 best points
                top = np.array(U)[np.argsort(ya)[:5]]
                per = []
                for scale in (0.1, 0.02):
                    c = np.repeat(top, n_cand // 10, axis=0)
                    per.append(np.clip(c + rng.normal(0, scale, c.shape), 0.0, 1.0))
                cand = np.vstack([cand] + per)
            mu, sd = gp.predict(cand, return_std=True)
            sd = np.maximum(sd, 1e-12)
            imp = ya.min() - mu
            z = imp / sd
            ei = imp * norm.cdf(z) + sd * norm.pdf(z)
            u = cand[int(np.argmax(ei))]
        times.append(time.perf_counter() - t0)
        x = lo + u * (hi - lo)
        v = pb["fn"]({p["parameterName"]: float(x[i]) for i, p in enumerate(ps)})
        U.append(u)
        Y.append(sign * v)
        values.append(v)
    return {"values": values, "suggest_s": times, "status": "ok"}


# ------------------------------------------------------- external runner --

class _LineReader(threading.Thread):
    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream = stream
        self.q = queue.Queue()

    def run(self):
        for line in iter(self.stream.readline, ""):
            self.q.put(line)
        self.q.put(None)


class ProtocolError(Exception):
    pass


def run_external(problem, seed, n_trials, cmd, parallel=1, timeout=60.0,
                 fail_rate=0.0, log_dir=None, name="external", algorithm=None):
    """Drive one study of an external tuner over hpo-jsonl/1."""
    pb = PROBLEMS[problem]
    spec = json.loads(json.dumps(pb["spec"]))
    spec["maxTrials"] = n_trials
    spec["maxParallelTrials"] = parallel
    if algorithm:
        spec["algorithm"] = algorithm
    study_id = "%s-s%d" % (problem, seed)
    err = subprocess.DEVNULL
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
        err = open(os.path.join(log_dir, "%s-%s.stderr" % (name, study_id)), "w")
    env = dict(os.environ, HPO_SEED=str(seed), HPO_STUDY_ID=study_id)
    proc = subprocess.Popen(["/bin/sh", "-c", cmd], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=err, text=True,
                            bufsize=1, env=env, cwd=HERE)
    reader = _LineReader(proc.stdout)
    reader.start()
    fail_rng = np.random.default_rng(10_000 + seed)

    def send(msg):
        try:
            proc.stdin.write(json.dumps(msg) + "\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise ProtocolError("write failed: %s" % e)

    def recv(expect):
        try:
            line = reader.q.get(timeout=timeout)
        except queue.Empty:
            raise ProtocolError("no reply within %.0fs (expected %s)" % (timeout, expect))
        if line is None:
            raise ProtocolError("tuner closed stdout (expected %s)" % expect)
        try:
            msg = json.loads(line)
        except ValueError:
            raise ProtocolError("reply is not JSON: %r" % line[:200])
        if msg.get("type") == "error":
            raise ProtocolError("tuner error: %s" % msg.get("message"))
        if msg.get("type") != expect:
            raise ProtocolError("expected %s, got %r" % (expect, line[:200]))
        return msg

    values, times = [], []          # values: one per trial, None if failed/invalid
    invalid, failed_injected = 0, 0
    status = "ok"
    try:
        send({"type": "study", "protocol": PROTOCOL, "studyId": study_id,
              "seed": seed, "spec": spec})
        recv("ready")
        pending = []                # FIFO of (trialId, params)
        issued = 0
        seen_ids = set()
        exhausted = False
        while len(values) < n_trials:
            want = min(parallel - len(pending), n_trials - issued)
            if want > 0 and not exhausted:
                t0 = time.perf_counter()
                send({"type": "suggest", "count": want})
                msg = recv("suggestions")
                dt = time.perf_counter() - t0
                trials = msg.get("trials")
                if not isinstance(trials, list) or len(trials) > want:
                    raise ProtocolError("bad trials list (asked %d)" % want)
                if not trials:
                    exhausted = True
                for tr in trials:
                    tid = str(tr.get("trialId"))
                    if tid in seen_ids:
                        raise ProtocolError("duplicate trialId %s" % tid)
                    seen_ids.add(tid)
                    pending.append((tid, tr.get("parameters")))
                    times.append(dt / len(trials))
                    issued += 1
            if not pending:
                break                # tuner has nothing more to suggest
            tid, params = pending.pop(0)
            problem_msg = validate_params(spec, params)
            if problem_msg is not None:
                invalid += 1
                values.append(None)
                send({"type": "complete", "trialId": tid, "state": "FAILED",
                      "reason": "infeasible suggestion: " + problem_msg})
            elif fail_rate > 0 and fail_rng.random() < fail_rate:
                failed_injected += 1
                values.append(None)
                send({"type": "complete", "trialId": tid, "state": "FAILED",
                      "reason": "injected failure"})
            else:
                v = pb["fn"](_clip_params(spec, params))
                values.append(v)
                send({"type": "complete", "trialId": tid, "state": "SUCCEEDED",
                      "objective": v})
            recv("ack")
        send({"type": "end"})
        recv("bye")
    except ProtocolError as e:
        status = "protocol_error: %s" % e
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if err is not subprocess.DEVNULL:
            err.close()
    if status == "ok" and proc.returncode not in (0, None):
        status = "exit_status_%d" % proc.returncode
    return {"values": values, "suggest_s": times, "status": status,
            "invalid": invalid, "failed_injected": failed_injected}


# ----------------------------------------------------------------- driver --

def _task(args):
    problem, sampler, seed, n_trials, ext = args
    t0 = time.perf_counter()
    if sampler in ("random", "tpe", "tpe_mv"):
        r = run_optuna(problem, sampler, seed, n_trials)
    elif sampler == "gp_ei":
        r = run_gp_ei(problem, seed, n_trials)
    elif sampler == "gp_ei_local":
        r = run_gp_ei(problem, seed, n_trials, local=True)
    else:
        r = run_external(problem, seed, n_trials, ext["cmd"], ext["parallel"],
                         ext["timeout"], ext["fail_rate"], ext["log_dir"], sampler,
                         ext["algorithm"])
    r["wall_s"] = time.perf_counter() - t0
    return problem, sampler, seed, r


def best_so_far_regret(problem, values):
    out, best = [], math.inf
    for v in values:
        if v is not None:
            best = min(best, regret(problem, v))
        out.append(best)
    return out


def summarize(problem, runs, budgets):
    """runs: list of result dicts (one per seed)."""
    res = {}
    for b in budgets:
        regs = []
        for r in runs:
            curve = best_so_far_regret(problem, r["values"])
            regs.append(curve[b - 1] if len(curve) >= b else
                        (curve[-1] if curve else math.inf))
        a = np.array(regs, dtype=float)
        res[str(b)] = {"median": float(np.median(a)),
                       "p25": float(np.percentile(a, 25)),
                       "p75": float(np.percentile(a, 75)),
                       "mean": float(np.mean(a)),
                       "n": int(len(a))}
    ts = np.array([t for r in runs for t in r["suggest_s"]], dtype=float)
    n_last = budgets[-1]
    tl = np.array([t for r in runs for t in r["suggest_s"][max(0, n_last - 10):n_last]],
                  dtype=float)
    res["suggest_ms"] = {"median": float(np.median(ts) * 1e3) if ts.size else None,
                         "p90": float(np.percentile(ts, 90) * 1e3) if ts.size else None,
                         "max": float(ts.max() * 1e3) if ts.size else None,
                         "last10_mean": float(tl.mean() * 1e3) if tl.size else None}
    res["status"] = sorted({r["status"] for r in runs})
    return res


def regrets_at(problem, runs, b):
    out = []
    for r in runs:
        curve = best_so_far_regret(problem, r["values"])
        out.append(curve[b - 1] if len(curve) >= b else (curve[-1] if curve else math.inf))
    return np.array(out, dtype=float)


def compare_table(raw, anchors_raw, budgets, names, problems):
    """Median-regret ratio of each new sampler vs each anchor sampler, with a
    two-sided Mann-Whitney U p-value (seeds treated as independent samples)."""
    from scipy.stats import mannwhitneyu
    lines = ["", "**comparison with anchors** - cell: median regret ratio new/anchor "
             "(two-sided Mann-Whitney p); ratio < 1 means the new sampler is better", ""]
    lines.append("| problem | new | anchor | " + " | ".join("@%d" % b for b in budgets) + " |")
    lines.append("|---" * (len(budgets) + 3) + "|")
    for pr in problems:
        if pr not in raw or pr not in anchors_raw:
            continue
        for n in names:
            if n not in raw[pr]:
                continue
            for a in sorted(anchors_raw[pr], key=lambda s: (BUILTIN.index(s) if s in BUILTIN
                                                             else len(BUILTIN), s)):
                if a == n:
                    continue
                cells = []
                for b in budgets:
                    x = regrets_at(pr, list(raw[pr][n].values()), b)
                    y = regrets_at(pr, list(anchors_raw[pr][a].values()), b)
                    mx, my = float(np.median(x)), float(np.median(y))
                    ratio = (mx / my) if my > 0 else (math.inf if mx > 0 else 1.0)
                    try:
                        p = float(mannwhitneyu(x, y, alternative="two-sided").pvalue)
                    except ValueError:
                        p = 1.0
                    cells.append("%s (p=%.2g)" % (fmt(ratio), p))
                lines.append("| %s | %s | %s | %s |" % (pr, n, a, " | ".join(cells)))
    return "\n".join(lines) + "\n"


def fmt(x):
    if x is None or not math.isfinite(x):
        return "inf"
    if x == 0:
        return "0"
    if abs(x) >= 100 or abs(x) < 1e-3:
        return "%.2e" % x
    return "%.3g" % x


def markdown_table(summary, budgets, samplers, problems, anchors=None):
    lines = []
    for pr in problems:
        if pr not in summary:
            continue
        lines.append("")
        lines.append("**%s** - %s" % (pr, PROBLEMS[pr]["note"]))
        lines.append("")
        head = "| sampler | " + " | ".join("regret @%d: median [p25, p75]" % b
                                          for b in budgets) + " | ms/suggestion: median / p90 / mean of last 10 |"
        lines.append(head)
        lines.append("|---" * (len(budgets) + 2) + "|")
        rows = [(s, summary[pr][s], "") for s in samplers if s in summary[pr]]
        if anchors:
            canon = list(BUILTIN)
            names = sorted(anchors.get(pr, {}),
                           key=lambda s: (canon.index(s) if s in canon else len(canon), s))
            rows = [(s, anchors[pr][s], " (anchor)") for s in names
                    if s not in summary[pr]] + rows
        for s, st, tag in rows:
            cells = ["%s [%s, %s]" % (fmt(st[str(b)]["median"]), fmt(st[str(b)]["p25"]),
                                      fmt(st[str(b)]["p75"])) for b in budgets]
            sm = st["suggest_ms"]
            ms = ("%.2f / %.2f / %s" % (sm["median"], sm["p90"],
                                        "%.2f" % sm["last10_mean"]
                                        if sm.get("last10_mean") is not None else "-")
                  if sm["median"] is not None else "-")
            bad = [x for x in st.get("status", ["ok"]) if x != "ok"]
            lines.append("| %s%s | %s | %s |%s" % (s, tag, " | ".join(cells), ms,
                                                   (" status: %s" % bad) if bad else ""))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--samplers", default="random,tpe,tpe_mv,gp_ei",
                    help="comma list of built-ins, or 'none'")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed-offset", type=int, default=0)
    ap.add_argument("--budgets", default="20,50,100")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--external", metavar="CMD", help="shell command of a hpo-jsonl/1 tuner")
    ap.add_argument("--external-name", default="external")
    ap.add_argument("--parallel", type=int, default=1,
                    help="maxParallelTrials for the external tuner (pending trials)")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds to wait for each external reply")
    ap.add_argument("--algorithm", choices=["ALGORITHM_UNSPECIFIED", "GRID_SEARCH",
                                            "RANDOM_SEARCH"],
                    help="spec.algorithm sent to the external tuner "
                         "(default ALGORITHM_UNSPECIFIED)")
    ap.add_argument("--fail-rate", type=float, default=0.0,
                    help="probability that the harness reports a trial FAILED (external only)")
    ap.add_argument("--external-log", metavar="DIR", help="save each study's stderr here")
    ap.add_argument("--anchors", metavar="JSON", help="anchor results to print alongside")
    ap.add_argument("--out", default=os.path.join(HERE, "hpo_anchor_results.json"))
    ap.add_argument("--table-out", default=None, help="also write the markdown table here")
    ap.add_argument("--report", metavar="JSON",
                    help="only print the markdown table of an existing results file")
    ap.add_argument("--merge", action="store_true",
                    help="add these runs to the existing --out file (same seeds and "
                         "budgets required) instead of replacing it")
    args = ap.parse_args()

    if args.report:
        with open(_input_path(args.report)) as f:
            res = json.load(f)
        summ = {pr: {s: summarize(pr, list(res["raw"][pr][s].values()),
                                  res["meta"]["budgets"])
                     for s in res["raw"][pr]} for pr in res["raw"]}
        names = sorted({s for pr in summ for s in summ[pr]},
                       key=lambda s: (BUILTIN.index(s) if s in BUILTIN else len(BUILTIN), s))
        table = markdown_table(summ, res["meta"]["budgets"], names,
                               [p for p in PROBLEMS if p in summ])
        print(table)
        if args.table_out:
            with open(args.table_out, "w") as f:
                f.write(table)
        return

    problems = [p for p in args.problems.split(",") if p]
    for p in problems:
        if p not in PROBLEMS:
            ap.error("unknown problem %s" % p)
    budgets = sorted(int(b) for b in args.budgets.split(","))
    n_trials = budgets[-1]
    samplers = [] if args.samplers == "none" else [s for s in args.samplers.split(",") if s]
    for s in samplers:
        if s not in BUILTIN:
            ap.error("unknown sampler %s" % s)
    ext = None
    if args.external:
        ext = {"cmd": args.external, "parallel": args.parallel, "timeout": args.timeout,
               "fail_rate": args.fail_rate, "log_dir": args.external_log,
               "algorithm": args.algorithm}
        samplers.append(args.external_name)
    seeds = list(range(args.seed_offset, args.seed_offset + args.seeds))

    tasks = []
    for pr in problems:
        for s in samplers:
            if s.startswith("gp_ei") and not PROBLEMS[pr]["continuous"]:
                continue
            for sd in seeds:
                tasks.append((pr, s, sd, n_trials, ext))
    # slow tasks first for better load balance
    order = {"gp_ei": 0, "gp_ei_local": 0, "tpe_mv": 1, "tpe": 2}
    tasks.sort(key=lambda t: order.get(t[1], 3))

    t0 = time.time()
    raw = {}
    done = 0
    with mp.get_context("fork").Pool(args.workers) as pool:
        for pr, s, sd, r in pool.imap_unordered(_task, tasks):
            raw.setdefault(pr, {}).setdefault(s, {})[str(sd)] = r
            done += 1
            if done % 20 == 0 or done == len(tasks):
                print("[%5.0fs] %d/%d runs done" % (time.time() - t0, done, len(tasks)),
                      file=sys.stderr, flush=True)
    elapsed = time.time() - t0

    summary = {}
    for pr in raw:
        for s in raw[pr]:
            runs = [raw[pr][s][str(sd)] for sd in seeds if str(sd) in raw[pr][s]]
            summary.setdefault(pr, {})[s] = summarize(pr, runs, budgets)

    def _version(mod):
        try:
            return __import__(mod).__version__
        except ImportError:
            return None
    meta = {"created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "argv": _portable_argv(sys.argv), "elapsed_s": elapsed, "seeds": seeds, "budgets": budgets,
            "workers": args.workers, "python": platform.python_version(),
            "optuna": _version("optuna"), "sklearn": _version("sklearn"),
            "numpy": np.__version__, "cpu_count": os.cpu_count(),
            "problems": {p: {"spec": PROBLEMS[p]["spec"], "optimum": PROBLEMS[p]["optimum"],
                             "note": PROBLEMS[p]["note"]} for p in problems},
            "regret": "oriented simple regret: best-so-far minus optimum (MINIMIZE) or "
                      "optimum minus best-so-far (MAXIMIZE)",
            "external": ext}
    out = {"meta": meta, "summary": summary, "raw": raw}
    if args.merge and os.path.exists(args.out):
        with open(args.out) as f:
            old = json.load(f)
        if old["meta"]["seeds"] != seeds or old["meta"]["budgets"] != budgets:
            sys.exit("--merge: seeds/budgets differ from %s" % args.out)
        for pr in raw:
            for s in raw[pr]:
                old["raw"].setdefault(pr, {})[s] = raw[pr][s]
                old["summary"].setdefault(pr, {})[s] = summary[pr][s]
        old["meta"].setdefault("merged", []).append(meta)
        out = old
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)

    anchors = None
    if args.anchors:
        with open(_input_path(args.anchors)) as f:
            anchor_res = json.load(f)
        anchors = anchor_res["summary"]
    table = markdown_table(summary, budgets, samplers, problems, anchors)
    if args.anchors:
        table += compare_table(raw, anchor_res["raw"], budgets, samplers, problems)
    print(table)
    print("elapsed %.0fs, %d runs, results in %s" % (elapsed, len(tasks), args.out),
          file=sys.stderr)
    if args.table_out:
        with open(args.table_out, "w") as f:
            f.write(table)
    if any(st.get("status") != ["ok"] for pr in summary for st in summary[pr].values()):
        sys.exit(2)


if __name__ == "__main__":
    main()
