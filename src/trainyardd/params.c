/* SPDX-License-Identifier: Apache-2.0
 * params.c: a request's query parameters (the method's own and Google's standard ones, each
 * once) and Google's JSON error form, for every handler of trainyardd. */
#include <microhttpd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "daemon.h"
#include "json.h"
#include "utf8.h"

const char *tyd_query(const struct tyd_request *rq, const char *name)
{
    for (size_t i = 0; i < rq->nargs; i++)
        if (strcmp(rq->args[i].key, name) == 0)
            return rq->args[i].value;
    return NULL;
}

static const char *status_name(unsigned code)
{
    switch (code) {
    case 400:
        return "INVALID_ARGUMENT";
    case 401:
        return "UNAUTHENTICATED";
    case 403:
        return "PERMISSION_DENIED";
    case 404:
        return "NOT_FOUND";
    case 409:
        return "ALREADY_EXISTS";
    case 413:
        return "INVALID_ARGUMENT";
    case 405:
    case 501:
        return "UNIMPLEMENTED";
    case 503:
        return "UNAVAILABLE";
    default:
        return "INTERNAL";
    }
}

int tyd_error(struct tyd_reply *rep, unsigned code, const char *status, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    json_t *e;

    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* JSON holds UTF-8 only: a message may quote bytes of the request, or be cut short inside
     * a character; Jansson would refuse it and the client would get no error body */
    (void)ty_utf8_scrub(msg);
    e = json_pack("{s:{s:i,s:s,s:s}}",
                  "error",
                  "code",
                  (int)code,
                  "message",
                  msg,
                  "status",
                  status ? status : status_name(code));
    if (rep->json)
        json_decref(rep->json);
    rep->json = e;
    rep->status = code;
    return 0;
}

/* The standard query parameters of Google APIs, accepted everywhere (and ignored, except
 * prettyPrint). */
static const char *const std_params[] = {
    "alt",
    "fields",
    "prettyPrint",
    "key",
    "quotaUser",
    "$.xgafv",
    "callback",
    "access_token",
    "oauth_token",
    "upload_protocol",
    "uploadType",
    NULL,
};

static bool in_list(const char *const *l, const char *k)
{
    for (; l && *l; l++)
        if (strcmp(*l, k) == 0)
            return true;
    return false;
}

bool tyd_pretty_value(const char *value, bool *pretty)
{
    bool p = true;

    if (value && (strcasecmp(value, "false") == 0 || strcmp(value, "0") == 0))
        p = false;
    else if (value && strcasecmp(value, "true") != 0 && strcmp(value, "1") != 0)
        return false;
    if (pretty)
        *pretty = p;
    return true;
}

bool tyd_wants_pretty(const struct tyd_request *rq, struct MHD_Connection *c)
{
    bool pretty = true;

    (void)tyd_pretty_value(
        rq->nargs || !c ? tyd_query(rq, "prettyPrint")
                        : MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "prettyPrint"),
        &pretty);
    return pretty;
}

int tyd_check_params(const struct tyd_request *rq, const char *const *own, struct tyd_reply *rep)
{
    const char *alt = tyd_query(rq, "alt");
    const char *bad = NULL;

    for (size_t i = 0; i < rq->nargs && !bad; i++)
        if (!in_list(std_params, rq->args[i].key) && !in_list(own, rq->args[i].key))
            bad = rq->args[i].key;
    if (bad) {
        tyd_error(rep,
                  400,
                  NULL,
                  "Invalid JSON payload received. Unknown name \"%.100s\": Cannot bind query "
                  "parameter. Field '%.100s' could not be found in request message.",
                  bad,
                  bad);
        return -1;
    }
    /* every parameter takes one value: a second one was ignored (updateMask=labels&updateMask=
     * jobId patched the labels), so say so instead */
    for (size_t i = 0; i < rq->nargs && !bad; i++)
        for (size_t j = 0; j < i && !bad; j++)
            if (strcmp(rq->args[i].key, rq->args[j].key) == 0)
                bad = rq->args[i].key;
    if (bad) {
        tyd_error(rep,
                  400,
                  NULL,
                  "Invalid query: parameter '%.100s' is given more than once; it takes one "
                  "value",
                  bad);
        return -1;
    }
    if (alt && strcmp(alt, "json") != 0) {
        tyd_error(rep, 400, NULL, "alt=%.40s is not supported: only alt=json", alt);
        return -1;
    }
    if (!tyd_pretty_value(tyd_query(rq, "prettyPrint"), NULL)) {
        tyd_error(rep,
                  400,
                  NULL,
                  "Invalid value at 'prettyPrint' (TYPE_BOOL), \"%.40s\": expected true or "
                  "false",
                  tyd_query(rq, "prettyPrint"));
        return -1;
    }
    return 0;
}
