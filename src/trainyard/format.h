/* SPDX-License-Identifier: Apache-2.0
 * format.h: gcloud's output formats (`gcloud topic formats`, `gcloud topic projections`) for
 * the `trainyard jobs` verbs: a --format text NAME[ATTRIBUTES](KEYS) parsed into a
 * struct ty_format (format-parse.c), --sort-by, and the printers json, yaml, value, csv,
 * table, list, text and flattened over a JSON array of resources (format-render.c), with the
 * text tables they share (format-table.c). Keys are checked against the Job resource
 * (jobkeys.h). No CLI state: the verbs call these with what their flags said. */
#ifndef TY_FORMAT_H
#define TY_FORMAT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "error.h"

enum ty_fmt_name {
    TY_FMT_DEFAULT, /* the verb's own output */
    TY_FMT_NONE,
    TY_FMT_JSON,
    TY_FMT_YAML,
    TY_FMT_VALUE,
    TY_FMT_CSV,
    TY_FMT_TABLE,
    TY_FMT_LIST,
    TY_FMT_TEXT,
    TY_FMT_FLATTENED,
};

enum ty_fmt_tr {
    TY_TR_BASENAME,
    TY_TR_DATE,
    TY_TR_YESNO,
    TY_TR_LEN,
    TY_TR_JOIN,
    TY_TR_LOWER,
    TY_TR_UPPER
};

/* A transform of a key's value: key.date('%Y-%m-%d'), key.basename(), ... */
struct ty_fmt_transform {
    enum ty_fmt_tr kind;
    char *arg[3]; /* date: format, tz, tz_default; yesno: yes, no; join: separator (NULL:
                   * default) */
};

/* One name of a key, with its list index (key[0]) when has_index. */
struct ty_fmt_seg {
    char *name;
    bool has_index;
    long index; /* negative: from the end */
};

/* A key of a projection, or of --sort-by. */
struct ty_fmt_key {
    struct ty_fmt_seg *segs;
    size_t nsegs;
    char *path;  /* the names and indexes as written: "trainingOutput.trials[0].trialId" */
    char *label; /* :label=, else NULL */
    int sort;    /* :sort=N (1 first), 0 when not a sort key */
    bool reverse;
    struct ty_fmt_transform *tr;
    size_t ntr;
};

struct ty_format {
    enum ty_fmt_name name;
    bool no_heading, box, no_pad;
    char *title, *separator, *delimiter, *terminator;
    struct ty_fmt_key *keys; /* the projection; nkeys == 0: none */
    size_t nkeys;
};

/* Parse a --format text, e.g. "value(state)", "table[box,title=Jobs](jobId:label=ID,
 * createTime.date('%Y-%m-%d'):sort=1)", "json". Keys must be keys of the Job (jobkeys.h).
 * Returns 0, or -EINVAL with err saying what is wrong and where (position in characters). */
int ty_format_parse(const char *text, struct ty_format **ret, struct ty_error *err);

/* Checks a key (@names, @n of them) of the resources a format prints: 0, or -EINVAL with err
 * naming the valid keys. */
typedef int (*ty_fmt_key_check_fn)(const char *const *names, size_t n, struct ty_error *err);

/* ty_format_parse for resources other than the Job: their keys checked by @check. */
int ty_format_parse_keys(const char *text,
                         ty_fmt_key_check_fn check,
                         struct ty_format **ret,
                         struct ty_error *err);
void ty_format_free(struct ty_format *f);
static inline void ty_format_freep(struct ty_format **f)
{
    ty_format_free(*f);
}

/* Parse --sort-by "KEY[,~KEY...]" ('~': descending) into *keys (reverse set for '~'). Returns
 * 0 or -EINVAL with err. Free with ty_format_keys_free. */
int ty_format_sort_parse(const char *text,
                         struct ty_fmt_key **keys,
                         size_t *n,
                         struct ty_error *err);
void ty_format_keys_free(struct ty_fmt_key *keys, size_t n);

/* Sort the resources of the array @items, stably: by @keys in order, then by the projection
 * keys of @f with :sort=N (either may be NULL/0). Missing values sort first; numbers (and
 * strings that are numbers, as int64 are) numerically, other values by their text. */
void ty_format_sort(json_t *items,
                    const struct ty_fmt_key *keys,
                    size_t n,
                    const struct ty_format *f);

/* Does @f (may be NULL) sort: has its projection a key with :sort=N? */
bool ty_format_sorts(const struct ty_format *f);

/* Is @zone a time zone date() takes: LOCAL, UTC (or GMT, Z), or a zone of the tz database
 * (a file under $TZDIR, default /usr/share/zoneinfo: US/Pacific, Europe/Paris, EST5EDT)? */
bool ty_fmt_zone_valid(const char *zone);

/* The first key of @f's projection (@f may be NULL) or of the @n @keys (--sort-by) that the
 * jobs of a list do not carry (jobs.get's transitions), as written; NULL when none. */
const char *
ty_format_get_only_key(const struct ty_format *f, const struct ty_fmt_key *keys, size_t n);

/* The value of @key in @resource (new reference, NULL when absent), transforms applied. A list
 * on the way without an index gives the list of the values in its elements. */
json_t *ty_format_value(const json_t *resource, const struct ty_fmt_key *key);

/* A value as a cell of value/csv/table/list: "" for none, strings as they are, True/False,
 * lists joined by @delimiter (NULL: ';'), objects as k=v joined by it. */
char *ty_format_cell(const json_t *v, const char *delimiter);

/* The column heading of @key in a table: its label, else the last name in upper snake case
 * (createTime -> CREATE_TIME). */
char *ty_format_heading(const struct ty_fmt_key *key);

/* Print the resources of the array @items to @out in @f (not TY_FMT_DEFAULT: the caller
 * replaces that with its own). @one: a single resource (json prints it, not an array). A
 * value/csv/table without keys is refused by the caller (ty_format_needs_keys). */
void ty_format_print(const struct ty_format *f, const json_t *items, bool one, FILE *out);

/* True when @f is a format that prints only projected keys and has none. */
bool ty_format_needs_keys(const struct ty_format *f);

/* ---- text tables (format-table.c) ---- */

/* A text table: gcloud's plain `table` (columns separated by two spaces) or `table[box]`. */
struct ty_table;
/* A table with @ncols columns titled @headers (copied). Free with ty_table_free. */
struct ty_table *ty_table_new(size_t ncols, const char *const *headers);
/* Add a row of @ncols cells (NULL: empty), copied with every control character but the line
 * break (a cell of several lines) shown as '?'. */
void ty_table_add(struct ty_table *t, const char *const *cells);
/* Drop the columns flagged in @optional whose cells are all empty. */
void ty_table_drop_empty(struct ty_table *t, const bool *optional);
/* How to print a table. */
struct ty_table_style {
    bool box;          /* Unicode box drawing when the locale is UTF-8, else ASCII */
    bool no_heading;   /* rows only */
    const char *title; /* box: centred in the top row; plain: a line before; may be NULL */
    size_t max_width;  /* 0: no limit; else the columns are split into several tables (plain
                        * ones a blank line apart) and long cells wrapped so that no line is
                        * wider */
    size_t repeat;     /* with max_width: the first @repeat columns (a row's key) start each of
                        * those tables too, when they leave room for another column */
};
/* Print: plain, header and rows with the last column unpadded; boxed. */
void ty_table_print(const struct ty_table *t, FILE *out, const struct ty_table_style *st);
/* Free a table; NULL-safe. */
void ty_table_free(struct ty_table *t);

#endif
