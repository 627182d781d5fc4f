/* SPDX-License-Identifier: Apache-2.0
 * cmd-study.c: `trainyard study --jsonl`: the tuner (tuner.h) as an ask/tell process speaking
 * the hpo-jsonl/1 protocol of the shared HPO benchmark on stdin/stdout. Strict lock-step:
 * every input line gets exactly one compact JSON reply line, flushed; logs go to stderr.
 * Bad input gets an `error` reply and the process keeps reading; `end` gets `bye` and exit 0. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cli.h"
#include "json.h"
#include "macro.h"
#include "parse.h"
#include "spec.h"
#include "stoprule.h"
#include "tuner.h"

#define PATH     "study"
#define PROTOCOL "hpo-jsonl/1"

static const char usage[] =
    "Usage: trainyard study --jsonl [--explain]\n"
    "\n"
    "Run one hyperparameter-tuning study as an ask/tell process speaking the hpo-jsonl/1\n"
    "protocol (docs/cli.md, trainyard study --jsonl): one JSON object per line on stdin, one\n"
    "compact JSON reply line per message on stdout, logs on stderr.\n"
    "\n"
    "  {\"type\":\"study\",\"protocol\":\"hpo-jsonl/1\",\"seed\":S,\"spec\":{HyperparameterSpec}}\n"
    "                                        -> {\"type\":\"ready\"}\n"
    "  {\"type\":\"suggest\",\"count\":K}        -> {\"type\":\"suggestions\",\"trials\":[...]}\n"
    "                                           (an empty list: the search is exhausted)\n"
    "  {\"type\":\"complete\",\"trialId\":\"7\",\"state\":\"SUCCEEDED\",\"objective\":V}\n"
    "  {\"type\":\"complete\",\"trialId\":\"8\",\"state\":\"FAILED\"}  -> {\"type\":\"ack\"}\n"
    "  {\"type\":\"measurement\",\"trialId\":\"7\",\"step\":S,\"objective\":V}\n"
    "                                        -> {\"type\":\"ack\",\"shouldStop\":B}\n"
    "  {\"type\":\"end\"}                       -> {\"type\":\"bye\",\"best\":{...}}, exit 0\n"
    "  anything malformed                    -> {\"type\":\"error\",\"message\":\"...\"}\n"
    "\n"
    "Algorithms: the default ALGORITHM_UNSPECIFIED is Bayesian optimisation (a Gaussian\n"
    "process with a Matern-5/2 kernel and expected improvement; pending trials enter as\n"
    "fantasies, failed trials are left out of the model), or RANDOM_SEARCH or GRID_SEARCH\n"
    "(INTEGER, CATEGORICAL and DISCRETE parameters only).\n"
    "With enableTrialEarlyStopping, measurements feed the median stopping rule: shouldStop\n"
    "is true when the trial's best value so far is worse than the median of the completed\n"
    "trials' running averages at its step (docs/tuning.md), and stays true for that trial's\n"
    "later measurements. Without it, always false.\n"
    "The seed is the study message's \"seed\", else $HPO_SEED, else 0.\n"
    "\n"
    "Flags:\n"
    "  --jsonl      speak hpo-jsonl/1 on stdin/stdout (required)\n"
    "  --explain    write how each suggestion was chosen to stderr, one JSON line per\n"
    "               trial: {\"trialId\":\"7\",\"explain\":{\"phase\":...}} (docs/cli.md)\n"
    "  --quiet, -q  no prompts (trainyard asks nothing; taken for gcloud)\n"
    "  --verbosity=LEVEL  debug, info, warning (default), error, critical, none\n"
    "  --help       show this help\n"
    "\n"
    "Exit 0 after end, 1 when stdin ends before end (or stdout fails), 2 for usage errors.\n";

struct study {
    struct ty_hp_spec *spec;
    struct ty_tuner *tuner;
    struct ty_stop_rule *stop_rule; /* enableTrialEarlyStopping */
    char *study_id;
    bool ended;
    bool explain; /* --explain: each suggestion's explanation on stderr */
};

/* Write @reply (stolen) as one line and flush. Returns 0 or -EIO. */
static int emit(json_t *reply)
{
    _cleanup_free_ char *s = ty_json_compact(reply);
    json_decref(reply);
    if (fputs(s, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) == EOF)
        return -EIO;
    return 0;
}

static json_t *error_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *error_reply(const char *fmt, ...)
{
    _cleanup_free_ char *msg = NULL;
    va_list ap;

    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        abort();
    va_end(ap);
    fprintf(stderr, "trainyard study: error: %s\n", msg);
    return json_pack("{s:s, s:s}", "type", "error", "message", msg);
}

/* The seed: the message's "seed" (a non-negative integer), else $HPO_SEED, else 0. */
static int study_seed(const json_t *msg, uint64_t *ret, struct ty_error *err)
{
    json_t *s = json_object_get(msg, "seed");
    const char *env = getenv("HPO_SEED");
    int64_t v = 0;

    if (s) {
        if (!json_is_integer(s) || json_integer_value(s) < 0)
            return ty_error_set(err, EINVAL, "seed: must be a non-negative integer");
        v = json_integer_value(s);
    } else if (env && *env && ty_parse_int64(env, 0, INT64_MAX, &v) < 0) {
        return ty_error_set(err, EINVAL, "HPO_SEED: '%s' is not a non-negative integer", env);
    }
    *ret = (uint64_t)v;
    return 0;
}

static const char *algorithm_name(enum ty_hp_algorithm a)
{
    return a == TY_HP_ALGO_GRID     ? "GRID_SEARCH"
           : a == TY_HP_ALGO_RANDOM ? "RANDOM_SEARCH"
                                    : "ALGORITHM_UNSPECIFIED";
}

static json_t *on_study(struct study *st, const json_t *msg)
{
    const char *proto = ty_json_str(msg, "protocol");
    json_t *spec = json_object_get(msg, "spec");
    struct ty_error e = {0};
    uint64_t seed = 0;

    if (st->tuner)
        return error_reply("study: a study is already running (one study per process)");
    if (!proto || strcmp(proto, PROTOCOL) != 0)
        return error_reply("study.protocol: must be \"%s\"", PROTOCOL);
    if (!json_is_object(spec))
        return error_reply("study.spec: a HyperparameterSpec object is required");
    if (study_seed(msg, &seed, &e) < 0)
        return error_reply("study.%s", e.msg);
    st->spec = ty_hp_free(st->spec);
    if (ty_hp_spec_from_json(spec, &st->spec, &e) < 0 || ty_hp_check_new(st->spec, &e) < 0) {
        st->spec = ty_hp_free(st->spec);
        return error_reply("study.spec: %s", e.msg);
    }
    if (ty_tuner_new(st->spec, seed, &st->tuner, &e) < 0)
        return error_reply("study.spec.%s", e.msg);
    ty_tuner_set_explain(st->tuner, st->explain);
    ty_replace_str(&st->study_id, ty_json_str(msg, "studyId"));
    fprintf(stderr,
            "trainyard study: %s: %zu parameters, %s, %s, maxTrials %d, seed %" PRIu64 "\n",
            st->study_id ? st->study_id : "(unnamed)",
            st->spec->n_params,
            algorithm_name(st->spec->algorithm),
            st->spec->maximize ? "MAXIMIZE" : "MINIMIZE",
            st->spec->max_trials,
            seed);
    if (st->spec->early_stopping)
        st->stop_rule = ty_stop_rule_new(st->spec->maximize);
    return json_pack("{s:s}", "type", "ready");
}

static json_t *on_suggest(struct study *st, const json_t *msg)
{
    json_t *c = json_object_get(msg, "count"), *trials, *reply;
    struct ty_trial_suggestion *s = NULL;
    struct ty_error e = {0};
    size_t n = 0;

    if (c && (!json_is_integer(c) || json_integer_value(c) < 1))
        return error_reply("suggest.count: must be a positive integer");
    if (ty_tuner_suggest(st->tuner, c ? (size_t)json_integer_value(c) : 1, &s, &n, &e) < 0)
        return error_reply("suggest.%s", e.msg);
    trials = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(
            trials,
            json_pack("{s:s, s:O}", "trialId", s[i].trial_id, "parameters", s[i].parameters));
        if (s[i].explain) {
            json_t *line =
                json_pack("{s:s, s:O}", "trialId", s[i].trial_id, "explain", s[i].explain);
            _cleanup_free_ char *text = ty_json_compact(line);
            json_decref(line);
            fprintf(stderr, "%s\n", text);
        }
    }
    ty_trial_suggestions_free(s, n);
    if (n == 0)
        fprintf(stderr,
                "trainyard study: search exhausted after %zu trials\n",
                ty_tuner_n_suggested(st->tuner));
    reply = json_pack("{s:s, s:o}", "type", "suggestions", "trials", trials);
    return reply;
}

static json_t *on_complete(struct study *st, const json_t *msg)
{
    const char *id = ty_json_str(msg, "trialId"), *state = ty_json_str(msg, "state");
    json_t *obj = json_object_get(msg, "objective");
    struct ty_error e = {0};
    bool ok;

    if (!id)
        return error_reply("complete.trialId: a string is required");
    if (!state || (strcmp(state, "SUCCEEDED") != 0 && strcmp(state, "FAILED") != 0))
        return error_reply("complete.state: must be \"SUCCEEDED\" or \"FAILED\"");
    ok = strcmp(state, "SUCCEEDED") == 0;
    if (ok && !json_is_number(obj))
        return error_reply("complete.objective: a number is required for a SUCCEEDED trial");
    if (ty_tuner_complete(st->tuner, id, ok, ok ? json_number_value(obj) : 0, &e) < 0)
        return error_reply("complete.%s", e.msg);
    if (st->stop_rule) /* a trial already stopped stays out of the reference set */
        ty_stop_rule_end(st->stop_rule, id, ok);
    if (!ok)
        fprintf(stderr,
                "trainyard study: trial %s failed: %s\n",
                id,
                ty_json_str(msg, "reason") ? ty_json_str(msg, "reason") : "(no reason)");
    return json_pack("{s:s}", "type", "ack");
}

static json_t *on_measurement(struct study *st, const json_t *msg)
{
    const char *id = ty_json_str(msg, "trialId");
    json_t *step = json_object_get(msg, "step"), *obj = json_object_get(msg, "objective");
    struct ty_stop_decision d;
    bool stop;

    if (!id)
        return error_reply("measurement.trialId: a string is required");
    if (!ty_tuner_is_pending(st->tuner, id))
        return error_reply("measurement.trialId: '%s' is not a running trial", id);
    if (!json_is_integer(step) || json_integer_value(step) < 0)
        return error_reply("measurement.step: a non-negative integer is required");
    if (!json_is_number(obj) || !isfinite(json_number_value(obj)))
        return error_reply("measurement.objective: a finite number is required");
    if (!st->stop_rule)
        return json_pack("{s:s, s:b}", "type", "ack", "shouldStop", 0);
    /* told to stop before and still running: the answer stays (the rule dropped its curve) */
    if (ty_stop_rule_dropped(st->stop_rule, id))
        return json_pack("{s:s, s:b}", "type", "ack", "shouldStop", 1);
    (void)ty_stop_rule_report(
        st->stop_rule, id, (int64_t)json_integer_value(step), json_number_value(obj));
    stop = ty_stop_rule_check(st->stop_rule, id, &d);
    if (stop) {
        fprintf(stderr,
                "trainyard study: stop trial %s at step %" PRId64 ": best %.6g, median %.6g of "
                "%zu\n",
                id,
                d.step,
                d.best,
                d.median,
                d.n_reference);
        ty_stop_rule_end(st->stop_rule, id, false);
    }
    return json_pack("{s:s, s:b}", "type", "ack", "shouldStop", stop);
}

static json_t *on_end(struct study *st)
{
    const json_t *params = NULL;
    double objective = 0;
    const char *best = st->tuner ? ty_tuner_best(st->tuner, &objective, &params) : NULL;

    st->ended = true;
    if (st->tuner)
        fprintf(stderr,
                "trainyard study: %zu trials suggested, %zu completed (%zu failed)%s%s\n",
                ty_tuner_n_suggested(st->tuner),
                ty_tuner_n_completed(st->tuner),
                ty_tuner_n_failed(st->tuner),
                best ? "; best trial " : "",
                best ? best : "");
    if (!best)
        return json_pack("{s:s}", "type", "bye");
    return json_pack("{s:s, s:{s:s, s:f, s:O}}",
                     "type",
                     "bye",
                     "best",
                     "trialId",
                     best,
                     "objective",
                     objective,
                     "parameters",
                     params);
}

/* The reply to one input line (never NULL). */
static json_t *handle_line(struct study *st, const char *line, size_t len, size_t lineno)
{
    _cleanup_json_ json_t *msg = NULL;
    struct ty_error e = {0};
    const char *type;

    if (ty_json_parse(line, len, &msg, &e) < 0)
        return error_reply("line %zu: invalid JSON: %s", lineno, e.msg);
    if (!json_is_object(msg))
        return error_reply("line %zu: a JSON object is required", lineno);
    type = ty_json_str(msg, "type");
    if (!type)
        return error_reply("line %zu: \"type\" (a string) is required", lineno);
    if (strcmp(type, "study") == 0)
        return on_study(st, msg);
    if (strcmp(type, "end") == 0)
        return on_end(st);
    if (strcmp(type, "suggest") != 0 && strcmp(type, "complete") != 0 &&
        strcmp(type, "measurement") != 0)
        return error_reply("line %zu: unknown message type '%s'", lineno, type);
    if (!st->tuner)
        return error_reply("%s: no study is running (the first message must be a \"study\")", type);
    if (strcmp(type, "suggest") == 0)
        return on_suggest(st, msg);
    if (strcmp(type, "complete") == 0)
        return on_complete(st, msg);
    return on_measurement(st, msg);
}

static int run_jsonl(bool explain)
{
    struct study st = {.explain = explain};
    _cleanup_free_ char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t len;
    int rc = TY_EXIT_FAILED;

    while (!st.ended && (len = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (strspn(line, " \t") >= (size_t)len)
            continue; /* blank line: no message, no reply */
        if (emit(handle_line(&st, line, (size_t)len, lineno)) < 0) {
            fprintf(stderr, "trainyard study: cannot write to stdout: %s\n", strerror(errno));
            break;
        }
        if (st.ended)
            rc = TY_EXIT_OK;
    }
    if (!st.ended && !ferror(stdout))
        fprintf(stderr, "trainyard study: stdin ended before an \"end\" message\n");
    ty_tuner_free(st.tuner);
    ty_stop_rule_free(st.stop_rule);
    ty_hp_free(st.spec);
    free(st.study_id);
    return rc;
}

static int study(int argc, char **argv)
{
    static const struct option options[] = {
        {"jsonl", no_argument, NULL, 'j'},
        {"explain", no_argument, NULL, 'e'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool jsonl = false, explain = false;
    int c;

    optind = 1;
    opterr = 0;
    while ((c = cli_getopt(argc, argv, "+h", options)) != -1) {
        switch (c) {
        case 'j':
            jsonl = true;
            break;
        case 'e':
            explain = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return TY_EXIT_OK;
        default:
            return cli_flag_error(PATH, c, argv, options);
        }
    }
    if (optind < argc) {
        cli_error(PATH, "unexpected argument '%s'", argv[optind]);
        return TY_EXIT_USAGE;
    }
    if (!jsonl) {
        cli_error(PATH, "--jsonl is required (the only mode); see 'trainyard study --help'");
        return TY_EXIT_USAGE;
    }
    return run_jsonl(explain);
}

const struct cli_command cmd_study = {
    .path = "study",
    .summary = "ask/tell hyperparameter search over stdin/stdout (hpo-jsonl/1)",
    .run = study,
};
