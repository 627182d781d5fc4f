/* SPDX-License-Identifier: Apache-2.0
 * dashboard-assets.h: the dashboard's files as built into trainyardd. The table is generated
 * at build time by scripts/embed-assets.py from what `node web/build.mjs` writes (web/:
 * index.html and the bundled, content-hashed scripts and style sheets), so the daemon serves
 * them with no file of its own on disk and no internet access. */
#ifndef TYD_DASHBOARD_ASSETS_H
#define TYD_DASHBOARD_ASSETS_H

#include <stddef.h>

struct tyd_asset {
    const char *name;         /* "index.html", "app-AB12CD34.js" */
    const char *content_type; /* "text/javascript; charset=utf-8" */
    const char *etag;         /* a strong ETag, quoted: a digest of the content */
    const unsigned char *raw; /* the file */
    size_t raw_len;
    const unsigned char *gz; /* the same, gzip-compressed (RFC 1952) */
    size_t gz_len;
};

/* Every file, sorted by name (byte order), and how many there are. */
extern const struct tyd_asset tyd_assets[];
extern const size_t tyd_n_assets;

#endif
