# SPDX-License-Identifier: Apache-2.0
"""dashboard_study.py: a large synthetic tuning study drawn by the dashboard's own Tuning page
code in the browser, for t5130 (it is drawn right) and bench/dashboard (how long it takes).
The page exposes window.__trainyardTuning = {echarts, bench(root, job)} when its address has
?test-hooks; bench() runs showTuning on a fresh element with an api that answers the job, and
resolves when the last chart is drawn, with the time from the job's arrival."""
import math
import random


def synthetic_job(n):
    """A SUCCEEDED tuning job of @n trials (4 parameters, 10 steps each; every 50th fails,
    every 9th is stopped early, every 13th reports once, as most programs do), as jobs.get
    returns it."""
    rnd = random.Random(15)
    trials = []
    for i in range(1, n + 1):
        lr, layers = 10 ** rnd.uniform(-4, -1), rnd.randint(1, 4)
        opt, drop = rnd.choice(['adam', 'sgd', 'rmsprop']), rnd.uniform(0, 0.5)
        f = 0.95 - (math.log10(lr) + 2.5) ** 2 / 8 - 0.03 * (layers - 2) ** 2 - 0.1 * drop
        t = {'trialId': str(i), 'startTime': '2026-01-01T00:00:00Z', 'endTime': '2026-01-01T00:10:00Z',
             'hyperparameters': {'lr': repr(lr), 'layers': str(layers), 'opt': opt, 'dropout': repr(drop)}}
        if i % 50 == 7:
            t.update(state='FAILED', errorMessage='The replica master 0 exited with a non-zero status of 1.')
        else:
            steps = 5 if i % 9 == 4 else 1 if i % 13 == 5 else 10
            pts = [{'trainingStep': str(100 * s), 'objectiveValue': f * (1 - 0.6 ** s) + rnd.gauss(0, 0.005)}
                   for s in range(1, steps + 1)]
            t.update(state='SUCCEEDED', isTrialStoppedEarly=steps == 5, allMetrics=pts, finalMetric=pts[-1])
        trials.append(t)
    hp = {'goal': 'MAXIMIZE', 'maxTrials': n, 'maxParallelTrials': 10, 'hyperparameterMetricTag': 'accuracy',
          'params': [{'parameterName': 'lr', 'type': 'DOUBLE', 'minValue': 0.0001, 'maxValue': 0.1,
                      'scaleType': 'UNIT_LOG_SCALE'},
                     {'parameterName': 'layers', 'type': 'INTEGER', 'minValue': 1, 'maxValue': 4},
                     {'parameterName': 'opt', 'type': 'CATEGORICAL', 'categoricalValues': ['adam', 'sgd', 'rmsprop']},
                     {'parameterName': 'dropout', 'type': 'DOUBLE', 'minValue': 0, 'maxValue': 0.5}]}
    return {'jobId': f'study_{n}', 'state': 'SUCCEEDED',
            'trainingInput': {'scaleTier': 'BASIC', 'hyperparameters': hp},
            'trainingOutput': {'isHyperparameterTuningJob': True, 'hyperparameterMetricTag': 'accuracy',
                               'trials': trials}}


def load_study(browser, job):
    """Send @job to the page once (about 1 MB through WebDriver for 1,000 trials)."""
    browser.js('window.__benchJob = arguments[0]', job)
    browser.driver.set_script_timeout(60)


DRAW = '''
    const done = arguments[0];
    if (window.__benchStop) window.__benchStop();
    const old = document.getElementById('bench');
    if (old) old.remove();
    const root = document.createElement('div');
    root.id = 'bench';
    root.style.cssText = 'background: #fff; padding: 8px';
    document.body.prepend(root);
    window.__trainyardTuning.bench(root, window.__benchJob).then((r) => (window.__benchStop = r.stop,
      done({ms: r.ms,
      finished: root.dataset.finished,
      history: document.querySelector('#bench [data-chart="history"]').dataset.points})),
      (e) => done({error: String(e)}));'''


def draw_study(browser):
    """Draw the study sent by load_study on a fresh element: {ms, finished, history} (the
    page's counts of finished trials and of history points), or {error}."""
    return browser.driver.execute_async_script(DRAW)
