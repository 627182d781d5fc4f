/* SPDX-License-Identifier: Apache-2.0
 * api-projects.c: GET /v1/projects, the projects a caller may see, for the dashboard's project
 * selector (ml v1 has no such method; the answer has the shape of Cloud Resource Manager's
 * projects.list: {"projects": [{"projectId": ...}]}, or {} when there are none).
 *
 * Who sees what: a token sees exactly the projects it grants, each with its number of jobs
 * (0 when it has none yet); a '*' token, and every caller of a service without a tokens file
 * (which listens on loopback only), sees every project that has jobs. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "json.h"
#include "macro.h"
#include "store.h"
#include "strv.h"

static const char *const no_params[] = {NULL};

static json_t *project_json(const char *id, int64_t jobs)
{
    char count[24];

    (void)snprintf(count, sizeof(count), "%lld", (long long)jobs);
    return json_pack("{s:s, s:s}", "projectId", id, "jobCount", count);
}

/* The jobs of @id in @rows (sorted by project), 0 when it has none. */
static int64_t jobs_of(const struct ty_store_project *rows, size_t n, const char *id)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(rows[mid].project, id);
        if (c == 0)
            return rows[mid].jobs;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void tyd_projects_list(const struct tyd_request *rq, struct tyd_reply *rep)
{
    _cleanup_strv_free_ char **granted = NULL;
    struct ty_store_project *rows = NULL;
    struct ty_error e = {0};
    json_t *list;
    size_t n = 0;
    int r;

    if (tyd_check_params(rq, no_params, rep) < 0)
        return;
    if (rq->d->auth) {
        const char *h = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Authorization");
        granted = tyd_auth_projects(rq->d->auth, h);
        if (!granted) { /* the file was reloaded without it since the check */
            tyd_error(rep, 401, NULL, "Request had invalid authentication credentials.");
            return;
        }
        if (ty_strv_contains(granted, "*"))
            granted = ty_strv_free(granted);
    }
    if ((r = ty_store_projects(rq->d->store, &rows, &n, &e)) < 0) {
        tyd_store_failure(rep, r, &e);
        return;
    }
    list = json_array();
    if (granted) {
        size_t k = ty_strv_len(granted);
        qsort(granted, k, sizeof(*granted), by_name);
        for (size_t i = 0; i < k; i++)
            if (i == 0 || strcmp(granted[i], granted[i - 1]) != 0)
                json_array_append_new(list, project_json(granted[i], jobs_of(rows, n, granted[i])));
    } else {
        for (size_t i = 0; i < n; i++)
            json_array_append_new(list, project_json(rows[i].project, rows[i].jobs));
    }
    ty_store_projects_free(rows, n);
    rep->status = 200;
    rep->json = json_array_size(list) ? json_pack("{s:o}", "projects", list) : json_object();
    if (!json_array_size(list))
        json_decref(list);
}
