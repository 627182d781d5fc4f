/* SPDX-License-Identifier: Apache-2.0
 * format-print.c: ty_format_print (format.h): gcloud's layouts of a list of resources, each
 * reduced to its projection when the format has keys:
 *     json       the array (or the one resource), indented 2, keys sorted
 *     yaml       one document per resource, separated by ---
 *     value      the keys' values separated by tabs, no heading (lists joined by ';')
 *     csv        a heading of the keys' labels in lower case, then the values, RFC 4180 quoting
 *     table      aligned columns under the upper-case labels
 *     list       " - " and the values (or the resource's "key: value" pairs), one per line
 *     flattened  "key: value" lines with dotted keys (a[0].b), values aligned, --- before each
 *     text       flattened without the alignment */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "format.h"
#include "json.h"
#include "macro.h"
#include "strv.h"
#include "yaml-emit.h"

/* The projection of @r: an object of the keys' values, nested by their names (a key with an
 * index is one flat name, its path). New reference. */
static json_t *project(const json_t *r, const struct ty_format *f)
{
    json_t *o = json_object();

    for (size_t i = 0; i < f->nkeys; i++) {
        const struct ty_fmt_key *k = &f->keys[i];
        json_t *v = ty_format_value(r, k), *at = o;
        bool indexed = false;
        if (!v)
            continue;
        for (size_t s = 0; s < k->nsegs; s++)
            indexed |= k->segs[s].has_index;
        if (indexed || k->ntr) {
            json_object_set_new(o, k->path, v);
            continue;
        }
        for (size_t s = 0; s + 1 < k->nsegs; s++) {
            json_t *next = json_object_get(at, k->segs[s].name);
            if (!json_is_object(next)) {
                next = json_object();
                json_object_set_new(at, k->segs[s].name, next);
            }
            at = next;
        }
        json_object_set_new(at, k->segs[k->nsegs - 1].name, v);
    }
    return o;
}

/* The cells of @r's keys (a NULL-terminated vector). */
static char **cells(const json_t *r, const struct ty_format *f)
{
    char **v = xcalloc(f->nkeys + 1, sizeof(*v));
    for (size_t i = 0; i < f->nkeys; i++) {
        _cleanup_json_ json_t *x = ty_format_value(r, &f->keys[i]);
        v[i] = ty_format_cell(x, f->delimiter);
    }
    return v;
}

static void put_csv_field(FILE *out, const char *s, const char *sep, bool quote)
{
    if (!quote || (!strpbrk(s, "\"\n\r") && !strstr(s, sep))) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void print_rows(const struct ty_format *f, const json_t *items, FILE *out)
{
    bool csv = f->name == TY_FMT_CSV;
    const char *sep = f->separator ? f->separator : csv ? "," : "\t";
    const char *term = f->terminator ? f->terminator : "\n";
    const json_t *r;
    size_t i;

    if (csv && !f->no_heading && json_array_size(items) > 0) {
        for (size_t k = 0; k < f->nkeys; k++) {
            _cleanup_free_ char *h = ty_format_heading(&f->keys[k]);
            for (char *c = h; *c; c++)
                if (*c >= 'A' && *c <= 'Z')
                    *c = (char)(*c - 'A' + 'a');
            fputs(k ? sep : "", out);
            put_csv_field(out, h, sep, true);
        }
        fputs(term, out);
    }
    json_array_foreach(items, i, r)
    {
        char **v = cells(r, f);
        for (size_t k = 0; k < f->nkeys; k++) {
            fputs(k ? sep : "", out);
            put_csv_field(out, v[k], sep, csv);
        }
        fputs(term, out);
        ty_strv_free(v);
    }
}

static void print_table(const struct ty_format *f, const json_t *items, FILE *out)
{
    char **heads = xcalloc(f->nkeys + 1, sizeof(*heads));
    struct ty_table_style st = {.box = f->box, .no_heading = f->no_heading, .title = f->title};
    struct ty_table *t;
    const json_t *r;
    size_t i;

    for (size_t k = 0; k < f->nkeys; k++)
        heads[k] = ty_format_heading(&f->keys[k]);
    t = ty_table_new(f->nkeys, (const char *const *)heads);
    json_array_foreach(items, i, r)
    {
        char **v = cells(r, f);
        ty_table_add(t, (const char *const *)v);
        ty_strv_free(v);
    }
    if (json_array_size(items) > 0)
        ty_table_print(t, out, &st);
    ty_table_free(t);
    ty_strv_free(heads);
}

static void print_list(const struct ty_format *f, const json_t *items, FILE *out)
{
    const json_t *r;
    size_t i;

    if (f->title && json_array_size(items) > 0)
        fprintf(out, "%s\n", f->title);
    json_array_foreach(items, i, r)
    {
        char **v = NULL;
        if (f->nkeys) {
            v = cells(r, f);
        } else if (json_is_object(r)) {
            const char *k;
            json_t *x;
            json_object_foreach((json_t *)r, k, x)
            {
                char *c = ty_format_cell(x, NULL);
                ty_strv_push_take(&v, xasprintf("%s: %s", k, c));
                free(c);
            }
            for (size_t a = 1; v && v[a]; a++)
                for (size_t b = a; b > 0 && strcmp(v[b - 1], v[b]) > 0; b--) {
                    char *tmp = v[b];
                    v[b] = v[b - 1];
                    v[b - 1] = tmp;
                }
        } else {
            ty_strv_push_take(&v, ty_format_cell(r, NULL));
        }
        fputs(" - ", out);
        for (size_t k = 0; v && v[k]; k++)
            fprintf(out, "%s%s", k ? "\n   " : "", v[k]);
        fputc('\n', out);
        ty_strv_free(v);
    }
}

/* The "name: value" pairs of @v under @name, depth first, keys in order. */
static void flatten(const json_t *v, const char *name, char ***names, char ***values)
{
    const char *k;
    json_t *x;
    size_t i;

    if (json_is_object(v) && json_object_size(v) > 0) {
        char **keys = NULL;
        json_object_foreach((json_t *)v, k, x)
        {
            ty_strv_push(&keys, k);
        }
        for (size_t a = 1; keys[a]; a++)
            for (size_t b = a; b > 0 && strcmp(keys[b - 1], keys[b]) > 0; b--) {
                char *tmp = keys[b];
                keys[b] = keys[b - 1];
                keys[b - 1] = tmp;
            }
        for (size_t a = 0; keys[a]; a++) {
            _cleanup_free_ char *n = *name ? xasprintf("%s.%s", name, keys[a]) : xstrdup(keys[a]);
            flatten(json_object_get(v, keys[a]), n, names, values);
        }
        ty_strv_free(keys);
        return;
    }
    if (json_is_array(v) && json_array_size(v) > 0) {
        json_array_foreach(v, i, x)
        {
            _cleanup_free_ char *n = xasprintf("%s[%zu]", name, i);
            flatten(x, n, names, values);
        }
        return;
    }
    ty_strv_push(names, name);
    ty_strv_push_take(values,
                      json_is_array(v)    ? xstrdup("[]")
                      : json_is_object(v) ? xstrdup("{}")
                                          : ty_format_cell(v, NULL));
}

static void print_flat(const struct ty_format *f, const json_t *items, bool one, FILE *out)
{
    bool pad = f->name == TY_FMT_FLATTENED && !f->no_pad;
    const char *sep = f->separator ? f->separator : ": ";
    const json_t *r;
    size_t i;

    json_array_foreach(items, i, r)
    {
        _cleanup_json_ json_t *p = f->nkeys ? project(r, f) : json_incref((json_t *)r);
        char **names = NULL, **values = NULL;
        size_t w = 0;
        flatten(p, "", &names, &values);
        for (size_t k = 0; names && names[k]; k++)
            if (strlen(names[k]) > w)
                w = strlen(names[k]);
        if (!one)
            fputs("---\n", out);
        for (size_t k = 0; names && names[k]; k++)
            fprintf(out,
                    "%s%s%*s%s\n",
                    names[k],
                    sep,
                    pad ? (int)(w - strlen(names[k])) : 0,
                    "",
                    values[k]);
        ty_strv_free(names);
        ty_strv_free(values);
    }
}

static void print_doc(const struct ty_format *f, const json_t *items, bool one, FILE *out)
{
    _cleanup_json_ json_t *all = json_array();
    const json_t *r;
    size_t i;

    json_array_foreach(items, i, r)
    {
        json_array_append_new(all, f->nkeys ? project(r, f) : json_incref((json_t *)r));
    }
    if (f->name == TY_FMT_JSON) {
        const json_t *v = one ? json_array_get(all, 0) : all;
        _cleanup_free_ char *text = v ? ty_json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
        if (text)
            fprintf(out, "%s\n", text);
        return;
    }
    json_array_foreach(all, i, r)
    {
        _cleanup_free_ char *text = ty_yaml_dump(r);
        if (!one) /* as gcloud's: each resource of a list starts a document, the first too */
            fputs("---\n", out);
        fputs(text, out);
    }
}

void ty_format_print(const struct ty_format *f, const json_t *items, bool one, FILE *out)
{
    switch (f->name) {
    case TY_FMT_JSON:
    case TY_FMT_YAML:
        print_doc(f, items, one, out);
        break;
    case TY_FMT_VALUE:
    case TY_FMT_CSV:
        print_rows(f, items, out);
        break;
    case TY_FMT_TABLE:
        print_table(f, items, out);
        break;
    case TY_FMT_LIST:
        print_list(f, items, out);
        break;
    case TY_FMT_TEXT:
    case TY_FMT_FLATTENED:
        print_flat(f, items, one, out);
        break;
    default:
        break;
    }
}
