/* SPDX-License-Identifier: Apache-2.0
 * kvconf.c: the "key = value" configuration-file reader (format in kvconf.h). */
#include "kvconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "macro.h"

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Read the whole file, refusing more than TY_KVCONF_MAX_BYTES. */
static int read_all(const char *path, struct ty_buf *b, struct ty_error *err)
{
    _cleanup_close_ int fd = -EBADF;
    struct stat st;
    char chunk[16384];

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return ty_error_set(err, errno, "%s: %s", path, strerror(errno));
    if (fstat(fd, &st) < 0)
        return ty_error_set(err, errno, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return ty_error_set(err, EISDIR, "%s: is a directory", path);
    if (S_ISREG(st.st_mode) && st.st_size > TY_KVCONF_MAX_BYTES)
        goto too_big;
    for (;;) {
        ssize_t k = read(fd, chunk, sizeof(chunk));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return ty_error_set(err, errno, "%s: %s", path, strerror(errno));
        }
        if (k == 0)
            return 0;
        if (b->len + (size_t)k > TY_KVCONF_MAX_BYTES)
            goto too_big;
        ty_buf_append(b, chunk, (size_t)k);
    }
too_big:
    return ty_error_set(err,
                        EFBIG,
                        "%s: larger than %d bytes; not a configuration file",
                        path,
                        TY_KVCONF_MAX_BYTES);
}

/* The key at *@pp (the line's first non-blank) and the '=' after it: *@pp is advanced past the
 * '=' and the blanks around it. Returns 0 and *@klen, or -EINVAL with err "PATH:LINE: ...". */
static int parse_key(const char *path,
                     int lineno,
                     const char **pp,
                     const char *end,
                     size_t *klen,
                     struct ty_error *err)
{
    const char *key = *pp, *p = *pp;
    size_t n;

    while (p < end && is_key_char(*p))
        p++;
    n = (size_t)(p - key);
    if (n == 0) {
        if (*p == '=')
            return ty_error_set(err, EINVAL, "%s:%d: expected a key before '='", path, lineno);
        return ty_error_set(err,
                            EINVAL,
                            "%s:%d: invalid key: expected 'key = value' with a key of lowercase "
                            "letters, digits, '_' and '-'",
                            path,
                            lineno);
    }
    if (p < end && !is_blank(*p) && *p != '=')
        return ty_error_set(err,
                            EINVAL,
                            "%s:%d: invalid character '%c' in key '%.*s' (keys are lowercase "
                            "letters, digits, '_' and '-')",
                            path,
                            lineno,
                            (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f ? *p : '?',
                            (int)n,
                            key);
    while (p < end && is_blank(*p))
        p++;
    if (p == end || *p != '=')
        return ty_error_set(
            err, EINVAL, "%s:%d: expected '=' after key '%.*s'", path, lineno, (int)n, key);
    p++;
    while (p < end && is_blank(*p))
        p++;
    *pp = p;
    *klen = n;
    return 0;
}

/* Why a quoted value is malformed: the words before and after "the quoted value of 'KEY'". */
struct quote_problem {
    const char *before, *after;
};

static const struct quote_problem bad_escape = {"unknown escape in ",
                                                " (only \\\" and \\\\ are escapes)"};
static const struct quote_problem unclosed = {"", " has no closing '\"'"};
static const struct quote_problem trailing = {"unexpected text after ", ""};

/* The "double-quoted" value at @p (on its opening quote) of the line ending at @end, for the
 * key @key (@klen bytes). Returns 0 and *@ret (unescaped), or -EINVAL with err. */
static int parse_quoted(const char *path,
                        int lineno,
                        const char *p,
                        const char *end,
                        const char *key,
                        size_t klen,
                        char **ret,
                        struct ty_error *err)
{
    struct ty_buf b = TY_BUF_INIT;
    const struct quote_problem *problem = &unclosed;

    for (p++; p < end; p++) {
        if (*p == '"') {
            problem = NULL;
            p++;
            break;
        }
        if (*p == '\\' && !(p + 1 < end && (p[1] == '"' || p[1] == '\\'))) {
            problem = &bad_escape;
            break;
        }
        if (*p == '\\')
            p++;
        ty_buf_putc(&b, *p);
    }
    while (!problem && p < end && is_blank(*p))
        p++;
    if (!problem && p != end)
        problem = &trailing;
    if (problem) {
        ty_buf_release(&b);
        return ty_error_set(err,
                            EINVAL,
                            "%s:%d: %sthe quoted value of '%.*s'%s",
                            path,
                            lineno,
                            problem->before,
                            (int)klen,
                            key,
                            problem->after);
    }
    *ret = ty_buf_take(&b);
    return 0;
}

/* Parse one line (@p, @len bytes, no newline). Returns 1 and the pair, 0 for a blank or
 * comment line, -EINVAL with err "PATH:LINE: ...". */
static int parse_line(
    const char *path, int lineno, const char *p, size_t len, struct ty_kv *kv, struct ty_error *err)
{
    const char *end = p + len, *key;
    size_t klen = 0;
    int r;

    if (len > 0 && p[len - 1] == '\r')
        end--;
    if (memchr(p, '\0', (size_t)(end - p)))
        return ty_error_set(err, EINVAL, "%s:%d: NUL byte in line", path, lineno);
    while (p < end && is_blank(*p))
        p++;
    if (p == end || *p == '#')
        return 0;
    key = p;
    r = parse_key(path, lineno, &p, end, &klen, err);
    if (r < 0)
        return r;
    if (p < end && *p == '"') {
        r = parse_quoted(path, lineno, p, end, key, klen, &kv->value, err);
        if (r < 0)
            return r;
    } else {
        while (end > p && is_blank(end[-1]))
            end--;
        kv->value = xstrndup(p, (size_t)(end - p));
    }
    kv->key = xstrndup(key, klen);
    kv->line = lineno;
    return 1;
}

int ty_kvconf_load(const char *path, struct ty_kv **ret, size_t *n, struct ty_error *err)
{
    struct ty_buf text = TY_BUF_INIT;
    struct ty_kv *kv = NULL;
    size_t count = 0, cap = 0;
    const char *p, *end;
    int lineno = 0, r;

    *ret = NULL;
    *n = 0;
    r = read_all(path, &text, err);
    if (r < 0) {
        ty_buf_release(&text);
        return r;
    }
    p = ty_buf_str(&text);
    end = p + text.len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        struct ty_kv one = {0};

        lineno++;
        r = parse_line(path, lineno, p, len, &one, err);
        if (r < 0) {
            ty_kvconf_free(kv, count);
            ty_buf_release(&text);
            return r;
        }
        if (r > 0) {
            if (count == cap) {
                cap = cap ? cap * 2 : 8;
                kv = xreallocarray(kv, cap, sizeof(*kv));
            }
            kv[count++] = one;
        }
        p += len + (nl ? 1 : 0);
    }
    ty_buf_release(&text);
    *ret = kv;
    *n = count;
    return 0;
}

void ty_kvconf_free(struct ty_kv *kv, size_t n)
{
    if (!kv)
        return;
    for (size_t i = 0; i < n; i++) {
        free(kv[i].key);
        free(kv[i].value);
    }
    free(kv);
}
