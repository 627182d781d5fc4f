/* SPDX-License-Identifier: Apache-2.0
 * container-events.c: one events stream per job (GET /events, filtered to the die events of
 * this run's containers), so that a container's end is known as soon as the engine records
 * it. Podman's compat `wait` polls and answers 0.5 to 2.5 s after the exit; its die event
 * comes tens to a few hundred ms after it, with the exit status (Actor.Attributes.exitCode).
 *
 * Filters: {"type":["container"],"event":["die","died"],"label":["trainyard.run=<token>"]}.
 * Podman 4.3 matches nothing for Docker's "die" and its events for "died" (values of one key
 * are or'ed); Docker has no "died" and matches "die". Every line of the stream is one JSON
 * event; a die event of one of the run's containers goes to ctr_run_died.
 *
 * The stream only hastens what the replicas' own requests learn anyway: each running
 * container keeps its `wait` and its log stream (container-run.c). So an event that never
 * comes (the stream began a moment after a container ended, an engine without events) or a
 * stream that breaks costs time, never an exit: the wait reports it. A broken stream is
 * opened again at once, at most MAX_REOPENS times per run; after that the waits alone go
 * on. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "container-internal.h"
#include "json.h"
#include "linesplit.h"
#include "macro.h"

/* How often a broken stream is opened again in one run: a stream that breaks is an engine
 * in trouble, and the waits report every end without it. */
#define MAX_REOPENS 3

bool ctr_events_parse(const char *line, size_t len, char *id, size_t n, long *code)
{
    _cleanup_json_ json_t *j = NULL;
    json_t *actor, *attrs;
    const char *action, *cid, *exit_s;
    char *end;
    long v;

    if (ty_json_parse(line, len, &j, NULL) < 0 || !json_is_object(j))
        return false;
    action = ty_json_str(j, "Action");
    if (!action)
        action = ty_json_str(j, "status");
    actor = json_object_get(j, "Actor");
    attrs = json_object_get(actor, "Attributes");
    cid = ty_json_str(actor, "ID");
    if (!cid)
        cid = ty_json_str(j, "id");
    exit_s = ty_json_str(attrs, "exitCode");
    if (!action || strcmp(action, "die") != 0 || !cid || !exit_s || !*exit_s)
        return false;
    errno = 0;
    v = strtol(exit_s, &end, 10);
    if (errno || *end || v < 0 || v > 255)
        return false;
    (void)snprintf(id, n, "%s", cid);
    *code = v;
    return true;
}

static void on_event_line(void *ctx, const char *line, size_t len)
{
    struct container_rt *c = ctx;
    char id[128];
    long code;

    if (!ctr_events_parse(line, len, id, sizeof(id), &code))
        return;
    for (size_t i = 0; i < c->n; i++) {
        struct ctr_replica *cr = &c->reps[i];
        if (cr->id && strcmp(cr->id, id) == 0) {
            ctr_run_died(cr, code);
            return;
        }
    }
}

static void on_events_data(void *ctx, const char *data, size_t len)
{
    struct container_rt *c = ctx;
    ty_linesplit_feed(&c->events.ls, data, len, on_event_line, c);
}

static void on_events_done(void *ctx, long status, const char *body, size_t len, const char *error)
{
    struct container_rt *c = ctx;

    c->events.req = NULL;
    ty_linesplit_flush(&c->events.ls, on_event_line, c);
    ty_linesplit_release(&c->events.ls);
    /* The waits go on; open it again unless it keeps breaking (or the engine refuses it:
     * an engine without events answers the same every time). */
    if (status != 200 || c->events.reopens >= MAX_REOPENS) {
        c->events.off = true;
        return;
    }
    c->events.reopens++;
    if (!c->cleaning && !c->reopening)
        ctr_events_start(c);
}

void ctr_events_start(struct container_rt *c)
{
    struct ty_docker_callbacks cb = {
        .on_data = on_events_data, .on_done = on_events_done, .ctx = c};
    _cleanup_free_ char *filters = NULL, *escaped = NULL, *path = NULL;
    struct ty_buf b = TY_BUF_INIT;

    if (c->events.req || c->events.off || !c->eng.api)
        return;
    /* The token is "<pid>-<hex>": nothing in it needs escaping but the JSON around it. */
    filters = xasprintf("{\"type\":[\"container\"],\"event\":[\"die\",\"died\"],"
                        "\"label\":[\"%s=%s\"]}",
                        TY_LABEL_RUN,
                        c->token);
    for (const char *p = filters; *p; p++) {
        if (strchr("{}[]\":,=", *p))
            ty_buf_printf(&b, "%%%02X", (unsigned char)*p);
        else
            ty_buf_putc(&b, *p);
    }
    escaped = ty_buf_take(&b);
    path = xasprintf("/events?filters=%s", escaped);
    if (ty_docker_request(
            c->eng.api, "GET", path, NULL, NULL, TY_DOCKER_NO_TIMEOUT, &cb, &c->events.req, NULL) <
        0)
        c->events.req = NULL; /* the waits report every end */
}

void ctr_events_stop(struct container_rt *c)
{
    if (c->events.req && c->eng.api)
        ty_docker_cancel(c->eng.api, c->events.req);
    c->events.req = NULL;
    ty_linesplit_release(&c->events.ls);
}
