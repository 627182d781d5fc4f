/* SPDX-License-Identifier: Apache-2.0
 * dashboard.c: the web dashboard's files (docs/dashboard.md), served from the table built
 * into the daemon (dashboard-assets.h): GET / is the page, GET /static/NAME its scripts and
 * style sheets. The page reads everything else through the REST API with the user's token,
 * so these answers need none and hold no data of any project.
 *
 * Caching: the files' names carry a digest of their content (web/build.mjs), so they are
 * cached for a year as immutable; the page itself is revalidated every time (no-cache) with
 * its ETag, so a new daemon's dashboard is picked up at the next load. Every answer carries a
 * Content-Security-Policy that allows scripts, styles and connections only from the service
 * itself (nothing is fetched from the internet, and an injected inline script does not run),
 * and may not be framed by another site. */
#include <microhttpd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "dashboard-assets.h"
#include "route.h"

/* ECharts sets inline styles on the elements it creates, hence 'unsafe-inline' for styles
 * (which cannot run code); charts are drawn on canvases, exported as data: URLs. */
#define CSP                                                                                        \
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "                    \
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "               \
    "form-action 'self'; frame-ancestors 'none'"

static int by_name(const void *key, const void *elem)
{
    return strcmp(key, ((const struct tyd_asset *)elem)->name);
}

static const struct tyd_asset *find_asset(const char *name)
{
    return bsearch(name, tyd_assets, tyd_n_assets, sizeof(tyd_assets[0]), by_name);
}

static void answer(const struct tyd_request *rq,
                   struct tyd_reply *rep,
                   const struct tyd_asset *a,
                   const char *cache)
{
    bool gz =
        tyd_accepts_gzip(MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Accept-Encoding"));
    char gz_etag[64];
    const char *etag = gz ? tyd_gzip_etag(a->etag, gz_etag, sizeof(gz_etag)) : a->etag;
    bool fresh = tyd_etag_matches(
        MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "If-None-Match"), etag);
    struct MHD_Response *r =
        fresh ? MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT)
        : gz  ? MHD_create_response_from_buffer(a->gz_len, (void *)a->gz, MHD_RESPMEM_PERSISTENT)
              : MHD_create_response_from_buffer(a->raw_len, (void *)a->raw, MHD_RESPMEM_PERSISTENT);

    if (!r) {
        tyd_error(rep, 500, NULL, "internal error: cannot answer with the dashboard's %s", a->name);
        return;
    }
    (void)MHD_add_response_header(r, "ETag", etag);
    (void)MHD_add_response_header(r, "Cache-Control", cache);
    (void)MHD_add_response_header(r, "Vary", "Accept-Encoding");
    if (!fresh) {
        (void)MHD_add_response_header(r, "Content-Type", a->content_type);
        if (gz)
            (void)MHD_add_response_header(r, "Content-Encoding", "gzip");
    }
    (void)MHD_add_response_header(r, "Content-Security-Policy", CSP);
    (void)MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    (void)MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    (void)MHD_add_response_header(r, "X-Frame-Options", "DENY");
    rep->status = fresh ? 304 : 200;
    rep->stream = r;
}

void tyd_dashboard_page(const struct tyd_request *rq, struct tyd_reply *rep)
{
    const struct tyd_asset *a = find_asset("index.html");

    if (!a) {
        tyd_error(rep, 500, NULL, "internal error: the dashboard was built without its page");
        return;
    }
    answer(rq, rep, a, "no-cache");
}

void tyd_dashboard_asset(const struct tyd_request *rq, struct tyd_reply *rep)
{
    const struct tyd_asset *a = find_asset(rq->asset);

    /* index.html is the page's, at / (revalidated there, never cached as immutable) */
    if (!a || strcmp(a->name, "index.html") == 0) {
        tyd_error(rep,
                  404,
                  NULL,
                  "The requested URL was not found: the dashboard has no file '%s' (it was "
                  "built with this daemon; reload the page to get the current one)",
                  rq->asset);
        return;
    }
    answer(rq, rep, a, "public, max-age=31536000, immutable");
}
