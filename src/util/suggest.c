/* SPDX-License-Identifier: Apache-2.0
 * suggest.c: the edit distance behind every "did you mean" (suggest.h): optimal string
 * alignment over three rows of the dynamic programme, ASCII case folded. */
#include "suggest.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "macro.h"

static unsigned char fold(char c)
{
    return (unsigned char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
}

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

size_t ty_edit_distance(const char *a, const char *b)
{
    size_t rows[3][TY_SUGGEST_MAX_LEN + 1];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    size_t n = strlen(a), m = strlen(b);

    if (n > TY_SUGGEST_MAX_LEN || m > TY_SUGGEST_MAX_LEN)
        return SIZE_MAX;
    for (size_t j = 0; j <= m; j++)
        prev[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t cost = fold(a[i - 1]) != fold(b[j - 1]);
            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
                fold(a[i - 2]) == fold(b[j - 1]) && prev2[j - 2] + 1 < cur[j])
                cur[j] = prev2[j - 2] + 1;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[m];
}

size_t ty_suggest_threshold(const char *word)
{
    size_t t = strlen(word) / 3;
    return t ? t : 1;
}

void ty_suggest_init(struct ty_suggest *s, const char *word)
{
    s->word = word;
    s->best = NULL;
    s->best_dist = SIZE_MAX;
}

void ty_suggest_add(struct ty_suggest *s, const char *cand)
{
    size_t d;

    if (!cand || !s->word || strcmp(cand, s->word) == 0)
        return;
    d = ty_edit_distance(s->word, cand);
    /* Every character replaced is not a near miss ("ab" -> "xy"). */
    if (d > ty_suggest_threshold(s->word) || d >= strlen(cand) || d >= s->best_dist)
        return;
    s->best = cand;
    s->best_dist = d;
}

const char *ty_suggest_best(const struct ty_suggest *s)
{
    return s->best;
}

const char *ty_suggest_among(const char *word, const char *const *cands)
{
    struct ty_suggest s;

    ty_suggest_init(&s, word);
    for (size_t i = 0; cands && cands[i]; i++)
        ty_suggest_add(&s, cands[i]);
    return ty_suggest_best(&s);
}

/* The long options of @opts whose name starts with @name (@len bytes), as "--a, --b". */
static char *prefix_matches(const struct option *opts, const char *name, size_t len, int *count)
{
    struct ty_buf b = TY_BUF_INIT;

    *count = 0;
    for (size_t i = 0; opts && opts[i].name; i++) {
        if (strncmp(opts[i].name, name, len) != 0)
            continue;
        ty_buf_printf(&b, "%s--%s", *count ? ", " : "", opts[i].name);
        (*count)++;
    }
    return ty_buf_take(&b);
}

/* The option of @opts named exactly @name (@len bytes), or NULL. */
static const struct option *find_exact(const struct option *opts, const char *name, size_t len)
{
    for (size_t i = 0; opts && opts[i].name; i++)
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0)
            return &opts[i];
    return NULL;
}

static int long_option_error(const struct option *opts,
                             const char *arg,
                             const char *noun,
                             struct ty_error *err)
{
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    _cleanup_free_ char *word = xstrndup(name, len);
    _cleanup_free_ char *matches = NULL;
    const struct option *o = find_exact(opts, name, len);
    struct ty_suggest s;
    int count;

    if (o && name[len] == '=' && o->has_arg == no_argument)
        return ty_error_set(err, EINVAL, "--%s takes no value (got '%s')", o->name, arg);
    matches = prefix_matches(opts, name, len, &count);
    if (len > 0 && count > 1)
        return ty_error_set(
            err, EINVAL, "ambiguous %s '--%s': %s (see --help)", noun, word, matches);
    ty_suggest_init(&s, word);
    for (size_t i = 0; opts && opts[i].name; i++)
        ty_suggest_add(&s, opts[i].name);
    if (ty_suggest_best(&s))
        return ty_error_set(err,
                            EINVAL,
                            "unknown %s '--%s' (did you mean '--%s'?)",
                            noun,
                            word,
                            ty_suggest_best(&s));
    return ty_error_set(err, EINVAL, "unknown %s '--%s' (see --help)", noun, word);
}

int ty_suggest_option_error(const struct option *opts,
                            const char *arg,
                            int short_opt,
                            const char *noun,
                            struct ty_error *err)
{
    if (strncmp(arg, "--", 2) == 0)
        return long_option_error(opts, arg, noun, err);
    if (short_opt > ' ' && short_opt < 0x7f)
        return ty_error_set(err, EINVAL, "unknown %s '-%c' (see --help)", noun, short_opt);
    return ty_error_set(err, EINVAL, "unknown %s '%s' (see --help)", noun, arg);
}

int ty_option_typed_in_full(const struct option *opts,
                            int longindex,
                            char **argv,
                            int optind_now,
                            const char *optarg_now,
                            const char *noun,
                            struct ty_error *err)
{
    const struct option *o;
    const char *tok, *name;
    size_t len;
    int at;

    if (longindex < 0 || optind_now < 1)
        return 0;
    o = &opts[longindex];
    at = optind_now - 1;
    /* a value given as the next argument: the flag is the one before it */
    if (o->has_arg != no_argument && optarg_now && optarg_now == argv[at] && at > 0)
        at--;
    tok = argv[at];
    if (strncmp(tok, "--", 2) != 0)
        return 0; /* not a long option's word (getopt_long_only's -name): nothing to check */
    name = tok + 2;
    len = strcspn(name, "=");
    if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
        return 0;
    return ty_error_set(err,
                        EINVAL,
                        "unknown %s '--%.*s' (did you mean '--%s'? %ss are not abbreviated)",
                        noun,
                        (int)(len > 200 ? 200 : len),
                        name,
                        o->name,
                        noun);
}
