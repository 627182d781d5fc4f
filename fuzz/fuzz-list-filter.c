/* SPDX-License-Identifier: Apache-2.0
 * fuzz-list-filter.c: libFuzzer target for the untrusted text of the list APIs: the jobs
 * filter (ty_filter_parse, and ty_filter_match on fixed jobs when it parses), the logs page
 * token (ty_log_cursor_parse / ty_log_cursor_format), log lines (ty_log_parse_line, with the
 * attempt marker "INFO@2" of logs.h) and RFC 3339 times (ty_rfc3339_parse). Besides memory
 * errors it checks their promises: a refused filter says where, hints agree with every job the
 * filter matches, a token is a fixed point of parse and format, a parsed time formats back to
 * the same instant, a parsed line has an attempt from 1 to TY_LOG_MAX_ATTEMPT and formats
 * (ty_log_format_line) into one line that parses back to the same record (unless its message
 * holds a '\n', which the writer escapes).
 *
 * Build: CC=clang meson setup /tmp/fz -Dfuzz=true -Db_lundef=false
 *        (add -Db_sanitize=address,undefined -Dc_args=-fsanitize=fuzzer-no-link to give
 *        libFuzzer coverage of the library too), then ninja -C /tmp/fz.
 * Run:   /tmp/fz/fuzz/fuzz-list-filter -max_total_time=60 -dict=fuzz/list-filter.dict \
 *            NEW_DIR fuzz/corpus/list-filter */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "jobfilter.h"
#include "json.h"
#include "logread.h"
#include "logs.h"
#include "timeutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const job_texts[] = {
    ("{\"jobId\":\"census_1\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"workerCount\":\"4\","
     "\"args\":[\"--epochs\",\"10\"],\"scheduling\":{\"maxRunningTime\":\"7200s\"}},"
     "\"createTime\":\"2026-11-30T09:00:00.000000Z\",\"state\":\"FAILED\","
     "\"errorMessage\":\"exited with status 1\",\"trainingOutput\":{\"consumedMLUnits\":1.25,"
     "\"isHyperparameterTuningJob\":true},\"labels\":{\"team\":\"vision\",\"owner\":\"ada\"},"
     "\"etag\":\"AAAAAAAAAAE=\"}"),
    ("{\"jobId\":\"rnn_7\",\"trainingInput\":{\"scaleTier\":\"BASIC\"},"
     "\"createTime\":\"2026-12-01T10:00:00Z\",\"state\":\"SUCCEEDED\",\"labels\":{}}"),
    "{\"jobId\":\"a\",\"state\":\"QUEUED\"}",
};
static json_t *jobs[3];

static void check(int cond)
{
    if (!cond)
        abort();
}

static void fuzz_filter(const char *text)
{
    struct ty_error err = {0};
    struct ty_filter *f = NULL;
    const char *state, *prefix;

    if (ty_filter_parse(text, &f, &err) < 0) {
        check(f == NULL && err.code == EINVAL && strncmp(err.msg, "filter: ", 8) == 0);
        check(strstr(err.msg, " at position ") || strstr(err.msg, "longer than"));
        return;
    }
    check(f != NULL);
    state = ty_filter_state_hint(f);
    prefix = ty_filter_id_prefix_hint(f);
    check(!prefix || (*prefix && !strchr(prefix, '*')));
    for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
        const char *id = ty_json_str(jobs[i], "jobId");
        if (!ty_filter_match(f, jobs[i]))
            continue;
        /* a hint never excludes a job the filter matches */
        check(!state || strcmp(state, ty_json_str(jobs[i], "state")) == 0);
        check(!prefix || strncasecmp(id, prefix, strlen(prefix)) == 0);
    }
    ty_filter_free(f);
}

static void fuzz_token(const char *text)
{
    struct ty_log_cursor *c = NULL, *c2 = NULL;
    struct ty_error err = {0};
    char *tok, *tok2;

    if (ty_log_cursor_parse(text, &c, &err) < 0) {
        check(c == NULL && strncmp(err.msg, "pageToken: ", 11) == 0);
        return;
    }
    tok = ty_log_cursor_format(c);
    check(ty_log_cursor_parse(tok, &c2, &err) == 0);
    tok2 = ty_log_cursor_format(c2);
    check(strcmp(tok, tok2) == 0);
    free(tok);
    free(tok2);
    ty_log_cursor_free(c);
    ty_log_cursor_free(c2);
}

static void fuzz_time(const char *text)
{
    char buf[40];
    int64_t t, t2;

    if (ty_rfc3339_parse(text, &t, NULL) < 0)
        return;
    /* RFC 3339 has 4-digit years: an offset can move 0000-01-01 or 9999-12-31 out of them */
    if (t < INT64_C(-62167219200) * 1000000 || t >= INT64_C(253402300800) * 1000000)
        return;
    check(ty_rfc3339_parse(ty_rfc3339(t, 6, buf, sizeof(buf)), &t2, NULL) == 0 && t == t2);
}

/* A line that parsed as @e: it has a valid attempt, and the line the writer makes of it
 * parses back to the same record (within the years RFC 3339 can write). */
static void fuzz_line_round_trip(const struct ty_log_entry *e)
{
    struct ty_buf b = TY_BUF_INIT;
    struct ty_log_entry e2;
    struct ty_log_record rec = {
        .time_usec = e->time_usec,
        .severity = e->severity,
        .task = e->task,
        .trial = e->trial,
        .message = e->message,
        .len = strlen(e->message),
        .attempt = e->attempt,
    };

    check(e->attempt >= 1 && e->attempt <= TY_LOG_MAX_ATTEMPT);
    if (e->time_usec < INT64_C(-62167219200) * 1000000 ||
        e->time_usec >= INT64_C(253402300800) * 1000000)
        return;
    ty_log_format_line(&b, &rec);
    check(b.len > 0 && b.data[b.len - 1] == '\n');
    /* always one line; a '\n' in the message (never in a line read from a file) is escaped */
    check(memchr(b.data, '\n', b.len - 1) == NULL);
    if (memchr(e->message, '\n', rec.len)) {
        ty_buf_release(&b);
        return;
    }
    check(ty_log_parse_line(b.data, b.len - 1, e->task, e->trial, &e2) == 0);
    check(e2.time_usec == e->time_usec && e2.severity == e->severity && e2.attempt == e->attempt &&
          strcmp(e2.message, e->message) == 0);
    free(e2.task);
    free(e2.trial);
    free(e2.message);
    ty_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ty_log_entry e;
    char *text, *exact;

    if (!jobs[0])
        for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
            check(ty_json_parse(job_texts[i], strlen(job_texts[i]), &jobs[i], NULL) == 0);

    /* The string APIs get a NUL-terminated copy (cut at the first NUL byte); the line parser
     * gets exactly @size bytes with nothing after them, so a read past the end is caught. */
    text = malloc(size + 1);
    exact = malloc(size ? size : 1);
    if (!text || !exact) {
        free(text);
        free(exact);
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0';
    memcpy(exact, data, size);

    fuzz_filter(text);
    fuzz_token(text);
    fuzz_time(text);
    if (ty_log_parse_line(exact, size, "task", size % 2 ? "1" : NULL, &e) == 0) {
        check(e.task && strcmp(e.task, "task") == 0 && e.message);
        check(e.severity >= TY_SEV_DEFAULT && e.severity <= TY_SEV_ERROR);
        check(strlen(e.message) <= size + 2 * size);
        {
            /* messages go into JSON: always valid UTF-8 (jansson checks) */
            json_t *j = json_string(e.message);
            check(j != NULL);
            json_decref(j);
        }
        fuzz_line_round_trip(&e);
        free(e.task);
        free(e.trial);
        free(e.message);
    }
    free(text);
    free(exact);
    return 0;
}
