/* SPDX-License-Identifier: Apache-2.0
 * format-table.c: text tables (format.h): gcloud's plain table (columns two spaces apart,
 * the last unpadded) and its boxed one (Unicode box drawing in a UTF-8 locale, else ASCII),
 * optionally fitted to a width: columns that do not fit go on to another table below (after a
 * blank line when plain; each starting with the key columns again when asked), and a cell
 * wider than its column is wrapped (at a space, comma or slash when there is one). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "format.h"
#include "macro.h"

struct ty_table {
    size_t ncols, nrows; /* rows include the header */
    char **cells;        /* row-major */
};

struct ty_table *ty_table_new(size_t ncols, const char *const *headers)
{
    struct ty_table *t = xcalloc(1, sizeof(*t));
    t->ncols = ncols;
    ty_table_add(t, headers);
    return t;
}

void ty_table_add(struct ty_table *t, const char *const *cells)
{
    t->cells = xreallocarray(t->cells, (t->nrows + 1) * (t->ncols ? t->ncols : 1), sizeof(char *));
    for (size_t i = 0; i < t->ncols; i++) {
        char *c = xstrdup(cells[i] ? cells[i] : "");
        /* A user's value (a CATEGORICAL value, a label) may hold a tab, a carriage return or
         * an escape: shown as '?', so that it can neither misalign the columns nor drive the
         * terminal. A line break is a cell of several lines (format.h). */
        for (char *p = c; *p; p++)
            if (((unsigned char)*p < 0x20 && *p != '\n') || *p == 0x7f)
                *p = '?';
        t->cells[t->nrows * t->ncols + i] = c;
    }
    t->nrows++;
}

void ty_table_drop_empty(struct ty_table *t, const bool *optional)
{
    size_t keep = 0, ncols = t->ncols;
    bool *drop = xcalloc(ncols ? ncols : 1, sizeof(bool));

    for (size_t c = 0; c < ncols; c++) {
        drop[c] = optional[c];
        for (size_t r = 1; r < t->nrows && drop[c]; r++)
            if (*t->cells[r * ncols + c])
                drop[c] = false;
        keep += !drop[c];
    }
    for (size_t r = 0, k = 0; r < t->nrows; r++)
        for (size_t c = 0; c < ncols; c++) {
            char *cell = t->cells[r * ncols + c];
            if (drop[c])
                free(cell);
            else
                t->cells[k++] = cell;
        }
    t->ncols = keep;
    free(drop);
}

void ty_table_free(struct ty_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

/* Display width of @n bytes of @s: one column per UTF-8 character. */
static size_t width_n(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n && s[i]; i++)
        w += ((unsigned char)s[i] & 0xc0) != 0x80;
    return w;
}

static size_t width(const char *s)
{
    return width_n(s, strlen(s));
}

static void pad(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fputs(s, out);
}

static bool utf8_locale(void)
{
    const char *names[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (size_t i = 0; i < TY_ARRAY_SIZE(names); i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return strcasestr(v, "utf-8") || strcasestr(v, "utf8");
    }
    return false;
}

/* The next line of @s (advanced past it) at most @w columns wide: *len bytes. */
static const char *wrap_line(const char **s, size_t w, size_t *len)
{
    const char *start = *s, *brk = NULL;
    size_t cols = 0, i = 0;

    for (; start[i] && start[i] != '\n'; i++) {
        if (((unsigned char)start[i] & 0xc0) == 0x80)
            continue;
        if (cols == w)
            break;
        cols++;
        if (start[i] == ' ' || start[i] == ',' || start[i] == '/')
            brk = start + i + 1;
    }
    if (start[i] && start[i] != '\n' && brk && brk > start)
        i = (size_t)(brk - start);
    *len = i;
    *s = start + i;
    if (**s == '\n')
        (*s)++;
    while (**s == ' ' && i > 0 && start[i - 1] != '\n')
        (*s)++;
    return start;
}

/* The number of lines of @s wrapped at @w. */
static size_t n_lines(const char *s, size_t w)
{
    size_t n = 0, len;
    do {
        wrap_line(&s, w, &len);
        n++;
    } while (*s);
    return n;
}

/* Box pieces: horizontal, vertical, then corners/junctions top (l m r), middle, bottom, and the
 * junctions under a title row. */
struct box {
    const char *h, *v, *tl, *tm, *tr, *ml, *mm, *mr, *bl, *bm, *br, *tjl, *tjr;
};

static void rule(FILE *out,
                 const struct box *b,
                 const size_t *w,
                 size_t n,
                 const char *l,
                 const char *m,
                 const char *r)
{
    fputs(l, out);
    for (size_t c = 0; c < n; c++) {
        pad(out, b->h, w[c] + 2);
        fputs(c + 1 < n ? m : r, out);
    }
    fputc('\n', out);
}

/* One row of the columns @cols[0..n) of row @r, wrapped. */
static void print_row(const struct ty_table *t,
                      size_t r,
                      const size_t *cols,
                      const size_t *w,
                      size_t n,
                      const struct box *b,
                      FILE *out)
{
    const char **at = xcalloc(n, sizeof(*at));
    size_t h = 0;

    for (size_t c = 0; c < n; c++) {
        at[c] = t->cells[r * t->ncols + cols[c]];
        size_t l = n_lines(at[c], w[c]);
        if (l > h)
            h = l;
    }
    for (size_t line = 0; line < h; line++) {
        if (b)
            fputs(b->v, out);
        for (size_t c = 0; c < n; c++) {
            size_t len = 0;
            const char *s = *at[c] ? wrap_line(&at[c], w[c], &len) : "";
            size_t cw = width_n(s, len);
            if (b) {
                fprintf(out, " %.*s", (int)len, s);
                pad(out, " ", w[c] - cw + 1);
                fputs(b->v, out);
            } else {
                fprintf(out, "%.*s", (int)len, s);
                if (c + 1 < n)
                    pad(out, " ", w[c] - cw + 2);
            }
        }
        fputc('\n', out);
    }
    free(at);
}

/* The table of the columns @cols[0..n) with widths @w. */
static void print_part(const struct ty_table *t,
                       const size_t *cols,
                       size_t *w,
                       size_t n,
                       FILE *out,
                       const struct ty_table_style *st,
                       const char *title)
{
    static const struct box uni = {"─", "│", "┌", "┬", "┐", "├", "┼", "┤", "└", "┴", "┘", "├", "┤"};
    static const struct box ascii = {
        "-", "|", "+", "+", "+", "+", "+", "+", "+", "+", "+", "+", "+"};
    const struct box *b = st->box ? (utf8_locale() ? &uni : &ascii) : NULL;
    size_t first = st->no_heading ? 1 : 0;

    if (!b) {
        if (title)
            fprintf(out, "%s\n", title);
        for (size_t r = first; r < t->nrows; r++)
            print_row(t, r, cols, w, n, NULL, out);
        return;
    }
    size_t inner = 0;
    for (size_t c = 0; c < n; c++)
        inner += w[c] + 2 + (c > 0);
    if (title && width(title) + 2 > inner &&
        (!st->max_width || width(title) + 4 <= st->max_width)) {
        w[n - 1] += width(title) + 2 - inner;
        inner = width(title) + 2;
    }
    if (title) {
        size_t tw = width(title) > inner - 2 ? inner - 2 : width(title), left = (inner - tw) / 2;
        const char *s = title;
        size_t len;
        fputs(b->tl, out);
        pad(out, b->h, inner);
        fprintf(out, "%s\n%s", b->tr, b->v);
        pad(out, " ", left);
        wrap_line(&s, tw, &len);
        fprintf(out, "%.*s", (int)len, title);
        pad(out, " ", inner - width_n(title, len) - left);
        fprintf(out, "%s\n", b->v);
        rule(out, b, w, n, b->tjl, b->tm, b->tjr);
    } else {
        rule(out, b, w, n, b->tl, b->tm, b->tr);
    }
    for (size_t r = first; r < t->nrows; r++) {
        print_row(t, r, cols, w, n, b, out);
        if (r == 0)
            rule(out, b, w, n, b->ml, b->mm, b->mr);
    }
    rule(out, b, w, n, b->bl, b->bm, b->br);
}

/* The width column @c gets: its natural width @nat, at most what @st's max_width leaves. */
static size_t col_width(size_t nat, const struct ty_table_style *st)
{
    size_t edge = st->box ? 4 : 0, cw = nat ? nat : 1;

    if (st->max_width && cw + edge > st->max_width)
        cw = st->max_width > edge + 1 ? st->max_width - edge : 1;
    return cw;
}

void ty_table_print(const struct ty_table *t, FILE *out, const struct ty_table_style *st)
{
    size_t n = t->ncols, *nat, *cols, *w, start = 0;
    size_t gap = st->box ? 3 : 2, limit = st->max_width + (st->box ? 0 : gap);

    if (n == 0)
        return;
    nat = xcalloc(n, sizeof(*nat));
    cols = xcalloc(n, sizeof(*cols)); /* a part: the key columns, then others after them */
    w = xcalloc(n, sizeof(*w));
    for (size_t r = st->no_heading ? 1 : 0; r < t->nrows; r++)
        for (size_t c = 0; c < n; c++) {
            const char *s = t->cells[r * n + c];
            for (const char *nl; (nl = strchr(s, '\n')); s = nl + 1)
                if (width_n(s, (size_t)(nl - s)) > nat[c])
                    nat[c] = width_n(s, (size_t)(nl - s));
            if (width(s) > nat[c])
                nat[c] = width(s);
        }
    while (start < n) {
        size_t k = 0, kept = 0, used = st->box ? 1 : 0, key = used;
        /* The key columns again, when they leave room for one more column. */
        if (start > 0 && st->repeat > 0 && start >= st->repeat) {
            for (size_t c = 0; c < st->repeat; c++)
                key += col_width(nat[c], st) + gap;
            if (key + col_width(nat[start], st) + gap <= limit)
                for (used = key; kept < st->repeat; kept++) {
                    cols[k] = kept;
                    w[k++] = col_width(nat[kept], st);
                }
        }
        for (size_t c = start; c < n; c++) {
            size_t cw = col_width(nat[c], st);
            if (st->max_width && k > kept && used + cw + gap > limit)
                break;
            cols[k] = c;
            w[k++] = cw;
            used += cw + gap;
        }
        if (start > 0 && !st->box)
            fputc('\n', out); /* plain tables one below the other: a blank line between */
        print_part(t, cols, w, k, out, st, start == 0 ? st->title : NULL);
        start += k - kept;
    }
    free(nat);
    free(cols);
    free(w);
}
