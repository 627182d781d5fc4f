"""multimodal.py - bench/hpo's own problems (issue 18): strongly multimodal continuous
functions, 2 to 6 dimensions, of the kinds benchmark suites use to trap local searches.

hpo_anchor.py adds MULTIMODAL to its PROBLEMS, so they are scored exactly as the shared four
(oriented simple regret against the known optimum, the same seeds and budgets).

Each function is shifted so that its optimum is neither at the centre of the domain nor on a
grid point a tuner could guess (the textbook forms have it at 0 or at 1 in every dimension):
the shift is a fixed vector of irrational-looking offsets, scaled to the domain. The optimum
value is the function evaluated at its known minimiser, so regret is never negative.

Families (the textbook definitions; see e.g. the Virtual Library of Simulation Experiments):
  rastrigin   sum of z^2 - 10 cos(2 pi z) + 10: a regular grid of local minima, one per unit
              cell, under a bowl
  ackley      a nearly flat plate of regularly spaced ripples with a narrow funnel at the
              optimum
  levy        sin^2 ripples of period 1 along each coordinate on a broad bowl
  schwefel    418.98 d - sum x sin(sqrt|x|): deceptive, the second-best minima far from the
              best, which sits near a corner (unshifted: it is already off-centre, at 420.97)
  styblinski  (z^4 - 16 z^2 + 5 z) / 2 per dimension: 2^d local minima at the corners of a box,
              the global one at z = -2.9035 in every dimension
"""

import math

# Offsets of the optimum from the textbook position, in units of the domain's half-width / 5
# (so within the domain for every family here); no two alike, none a simple fraction.
_SHIFT = (0.6180, -1.4142, 1.7321, -0.8660, 2.2361, -1.2599)


def _dparams(d, lo, hi):
    return [{"parameterName": "x%d" % i, "type": "DOUBLE", "minValue": lo, "maxValue": hi,
             "scaleType": "UNIT_LINEAR_SCALE"} for i in range(1, d + 1)]


def _xs(p, d):
    return [p["x%d" % i] for i in range(1, d + 1)]


def _shift(d, half_width):
    return [s * half_width / 5.0 for s in _SHIFT[:d]]


def _rastrigin(z):
    return 10.0 * len(z) + sum(v * v - 10.0 * math.cos(2 * math.pi * v) for v in z)


def _ackley(z):
    d = len(z)
    a = math.sqrt(sum(v * v for v in z) / d)
    c = sum(math.cos(2 * math.pi * v) for v in z) / d
    return -20.0 * math.exp(-0.2 * a) - math.exp(c) + 20.0 + math.e


def _levy(u):
    w = [1 + (v - 1) / 4.0 for v in u]
    s = math.sin(math.pi * w[0]) ** 2
    for v in w[:-1]:
        s += (v - 1) ** 2 * (1 + 10 * math.sin(math.pi * v + 1) ** 2)
    return s + (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)


_SCHWEFEL_C = 418.9829
_SCHWEFEL_X = 420.96874369616904  # argmin of -x sin(sqrt|x|) on [-500, 500]


def _schwefel(x):
    return _SCHWEFEL_C * len(x) - sum(v * math.sin(math.sqrt(abs(v))) for v in x)


_STYBLINSKI_X = -2.9035340314007785  # argmin of (z^4 - 16 z^2 + 5 z) / 2


def _styblinski(z):
    return sum(v ** 4 - 16 * v * v + 5 * v for v in z) / 2.0


def _problem(family, d):
    """(fn, lo, hi, minimiser, note) of FAMILY in D dimensions."""
    if family == "rastrigin":
        lo, hi = -5.12, 5.12
        s = _shift(d, 5.12)
        return (lambda p: _rastrigin([x - c for x, c in zip(_xs(p, d), s)]), lo, hi, s,
                "regular grid of local minima (one per unit cell) on a bowl")
    if family == "ackley":
        lo, hi = -5.0, 5.0
        s = _shift(d, 5.0)
        return (lambda p: _ackley([x - c for x, c in zip(_xs(p, d), s)]), lo, hi, s,
                "flat plate of regular ripples, narrow funnel at the optimum")
    if family == "levy":
        lo, hi = -10.0, 10.0
        s = _shift(d, 10.0)
        # textbook optimum at u = 1: u = x - s + 1, so the minimiser is x = s
        return (lambda p: _levy([x - c + 1 for x, c in zip(_xs(p, d), s)]), lo, hi, s,
                "sin^2 ripples of period 1 per coordinate on a broad bowl")
    if family == "schwefel":
        lo, hi = -500.0, 500.0
        return (lambda p: _schwefel(_xs(p, d)), lo, hi, [_SCHWEFEL_X] * d,
                "deceptive: second-best minima far from the best, near a corner (420.97 each)")
    if family == "styblinski":
        lo, hi = -5.0, 5.0
        s = [c / 2 for c in _shift(d, 5.0)]
        return (lambda p: _styblinski([x - c for x, c in zip(_xs(p, d), s)]), lo, hi,
                [_STYBLINSKI_X + c for c in s],
                "2^d local minima at the corners of a box")
    raise ValueError(family)


def _entry(family, d):
    fn, lo, hi, xstar, what = _problem(family, d)
    opt = fn({"x%d" % (i + 1): v for i, v in enumerate(xstar)})
    return {
        "fn": fn, "optimum": opt,
        "spec": {"goal": "MINIMIZE", "hyperparameterMetricTag": "objective",
                 "maxTrials": 100, "maxParallelTrials": 1, "maxFailedTrials": 0,
                 "algorithm": "ALGORITHM_UNSPECIFIED", "enableTrialEarlyStopping": False,
                 "params": _dparams(d, lo, hi)},
        "continuous": True,
        "note": "%d-D on [%g,%g]^%d%s; %s; f*=%.6g at (%s)" % (
            d, lo, hi, d, "" if family == "schwefel" else ", shifted", what, opt,
            ",".join("%.4f" % v for v in xstar)),
    }


# name -> (family, dimensions); the dimensions spread over 2 to 6
_LIST = (("rastrigin2", "rastrigin", 2), ("rastrigin4", "rastrigin", 4),
         ("ackley3", "ackley", 3), ("ackley5", "ackley", 5),
         ("levy4", "levy", 4), ("levy6", "levy", 6),
         ("schwefel3", "schwefel", 3), ("styblinski5", "styblinski", 5))

MULTIMODAL = {name: _entry(family, d) for name, family, d in _LIST}
