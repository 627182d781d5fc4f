/* SPDX-License-Identifier: Apache-2.0
 * logread.c: reading log files back (logread.h). Each file is read through a small buffer of
 * its own with pread(2) from the cursor's offset, never whole; the files are merged by the
 * time of their next record. A file is opened only for each refill of its buffer, so a read
 * of many files holds one descriptor at a time; the files only grow, so reopening is safe.
 *
 * Lines: "<time> <SEVERITY>[@<attempt>] <message>" (logs.h). A line that does not parse
 * (damaged, cut) is returned as it is, with the time and attempt of the record before it.
 *
 * Page token: URL-safe base64 (no padding) of the text
 *     "L1|" { SHARED "," LEN "," SUFFIX OFFSET ";" } "~" CHECKSUM
 * one entry per file with a non-zero offset, keyed by the file's name without ".log"
 * (task[.trial]) in strictly increasing byte order, each key written as the length of the
 * prefix it shares with the previous key plus the rest (front coding, so the many
 * "worker-replica-N" keys of a big job stay short); numbers are decimal without leading
 * zeros; CHECKSUM is 8 lower-case hex digits of the FNV-1a hash of everything before '~'.
 * Parsing is strict, so a token this code did not make is refused. An offset past the end of
 * its file (the file was truncated since) reads that file again from its start. */
#include "logread.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "base64.h"
#include "buf.h"
#include "linesplit.h"
#include "macro.h"
#include "timeutil.h"
#include "utf8.h"

/* Longest line handled whole: a TY_LINE_MAX message plus time and severity (the writer's
 * head, an RFC 3339 time with microseconds and a severity name, is under 64 bytes; 256 leaves
 * room for a time with an offset). A longer run without a newline is returned in pieces of
 * this size, as DEFAULT records. */
#define LINE_MAX_BYTES (TY_LINE_MAX + 256)
/* A file's read buffer starts here (a page of ordinary lines) and doubles up to a line. */
#define BUF_INITIAL 8192
/* How far back to look for the time of the record before a token's offset: two of the
 * longest lines, so the whole line before the offset is seen even when it is cut. */
#define BACKSCAN_BYTES (2 * LINE_MAX_BYTES)
/* A `since` bisects a file (seek_since) down to this many bytes, reading at each step a few
 * lines, or when no whole line is there two of the longest lines (one whole line follows a cut
 * one). */
#define BISECT_MIN_BYTES (64 * 1024)
#define BISECT_WINDOW    (2 * LINE_MAX_BYTES + 2)
#define BISECT_FIRST     4096
/* Limits of a read and of its token: files (ty_log_read refuses more: a read holds one
 * buffer per file), bytes of a file's key (task and trial names are far shorter), digits of
 * an offset (18 cannot overflow int64_t while parsing), characters of a token: the largest a
 * cursor within the other limits can make (4096 entries of at most ~290 bytes, base64) fits
 * in 2 MiB. */
#define TOKEN_MAX_FILES  4096
#define TOKEN_MAX_KEY    256
#define TOKEN_MAX_CHARS  (2 * 1024 * 1024)
#define TOKEN_MAX_DIGITS 18
/* A token ends in '~' and the FNV-1a checksum of what precedes it in 8 hex digits. */
#define TOKEN_SUM_CHARS 9
/* The version of the token's format: a token of another version is refused, not misread. */
#define TOKEN_PREFIX "L1|"
/* A page's entry array starts at this many (or the page size if smaller) and doubles. */
#define ENTRIES_INITIAL 64
#define BAD_TOKEN       "pageToken: not a token from this service"

struct cursor_entry {
    char *key;
    int64_t off;
};

struct ty_log_cursor {
    struct cursor_entry *e; /* sorted by key (strcmp) */
    size_t n;
};

/* ---- cursor ---- */

/* Index of @key, or the index where it belongs (*found false). */
static size_t cursor_find(const struct ty_log_cursor *c, const char *key, bool *found)
{
    size_t lo = 0, hi = c->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(c->e[mid].key, key);
        if (r == 0) {
            *found = true;
            return mid;
        }
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static int64_t cursor_get(const struct ty_log_cursor *c, const char *key)
{
    bool found;
    size_t i = cursor_find(c, key, &found);
    return found ? c->e[i].off : 0;
}

static void cursor_set(struct ty_log_cursor *c, const char *key, int64_t off)
{
    bool found;
    size_t i = cursor_find(c, key, &found);

    if (found) {
        c->e[i].off = off;
        return;
    }
    if (off == 0)
        return;
    c->e = xreallocarray(c->e, c->n + 1, sizeof(*c->e));
    memmove(c->e + i + 1, c->e + i, (c->n - i) * sizeof(*c->e));
    c->e[i] = (struct cursor_entry){xstrdup(key), off};
    c->n++;
}

void ty_log_cursor_free(struct ty_log_cursor *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        free(c->e[i].key);
    free(c->e);
    free(c);
}

/* 32-bit FNV-1a (its published offset basis and prime): a token's checksum against typos and
 * truncation, not against forgery (a forged token only names offsets in the job's own files). */
static uint32_t fnv1a(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 16777619u;
    }
    return h;
}

char *ty_log_cursor_format(const struct ty_log_cursor *c)
{
    struct ty_buf b = TY_BUF_INIT;
    const char *prev = "";
    char *token;

    ty_buf_puts(&b, TOKEN_PREFIX);
    for (size_t i = 0; i < c->n; i++) {
        const char *key = c->e[i].key;
        size_t shared = 0, len = strlen(key);
        if (c->e[i].off <= 0)
            continue;
        while (prev[shared] && prev[shared] == key[shared])
            shared++;
        ty_buf_printf(&b, "%zu,%zu,", shared, len - shared);
        ty_buf_append(&b, key + shared, len - shared);
        ty_buf_printf(&b, "%" PRId64 ";", c->e[i].off);
        prev = key;
    }
    ty_buf_printf(&b, "~%08" PRIx32, fnv1a(b.data, b.len));
    token = ty_base64_encode(b.data, b.len, true);
    ty_buf_release(&b);
    return token;
}

/* A decimal number without leading zeros, at most TOKEN_MAX_DIGITS digits, at *p. */
static bool token_number(const char **p, const char *end, int64_t *ret)
{
    const char *s = *p;
    int64_t v = 0;
    int n = 0;

    while (s < end && *s >= '0' && *s <= '9') {
        if (++n > TOKEN_MAX_DIGITS || (n == 2 && v == 0))
            return false;
        v = v * 10 + (*s++ - '0');
    }
    if (n == 0)
        return false;
    *p = s;
    *ret = v;
    return true;
}

static bool token_char(const char **p, const char *end, char c)
{
    if (*p >= end || **p != c)
        return false;
    (*p)++;
    return true;
}

/* The entries of a decoded token (@p to @end, between the prefix and the checksum). */
static bool token_entries(const char *p, const char *end, struct ty_log_cursor *c)
{
    char key[TOKEN_MAX_KEY + 1] = "", prev[TOKEN_MAX_KEY + 1] = "";
    size_t prev_len = 0;

    while (p < end) {
        int64_t shared, len, off;
        if (c->n == TOKEN_MAX_FILES)
            return false;
        if (!token_number(&p, end, &shared) || !token_char(&p, end, ',') ||
            !token_number(&p, end, &len) || !token_char(&p, end, ','))
            return false;
        if (shared > (int64_t)prev_len || len < 1 || shared + len > TOKEN_MAX_KEY ||
            len > end - p || memchr(p, '\0', (size_t)len))
            return false;
        memcpy(key, prev, (size_t)shared);
        memcpy(key + shared, p, (size_t)len);
        key[shared + len] = '\0';
        p += len;
        if (!token_number(&p, end, &off) || off < 1 || !token_char(&p, end, ';'))
            return false;
        if (c->n > 0 && strcmp(key, prev) <= 0)
            return false;
        c->e = xreallocarray(c->e, c->n + 1, sizeof(*c->e));
        c->e[c->n++] = (struct cursor_entry){xstrdup(key), off};
        prev_len = (size_t)(shared + len);
        memcpy(prev, key, prev_len + 1);
    }
    return true;
}

int ty_log_cursor_parse(const char *token, struct ty_log_cursor **ret, struct ty_error *err)
{
    struct ty_log_cursor *c = xcalloc(1, sizeof(*c));
    _cleanup_free_ unsigned char *raw = NULL;
    const char *text, *sum;
    size_t len, pl = strlen(TOKEN_PREFIX);
    char hex[TOKEN_SUM_CHARS];

    if (!token || !*token) {
        *ret = c;
        return 0;
    }
    if (strnlen(token, TOKEN_MAX_CHARS + 1) > TOKEN_MAX_CHARS ||
        ty_base64_decode(token, true, &raw, &len) < 0)
        goto bad;
    text = (const char *)raw;
    if (len < pl + TOKEN_SUM_CHARS || memcmp(text, TOKEN_PREFIX, pl) != 0)
        goto bad;
    sum = text + len - TOKEN_SUM_CHARS;
    (void)snprintf(hex, sizeof(hex), "%08" PRIx32, fnv1a(text, len - TOKEN_SUM_CHARS));
    if (sum[0] != '~' || memcmp(sum + 1, hex, 8) != 0)
        goto bad;
    if (!token_entries(text + pl, sum, c))
        goto bad;
    *ret = c;
    return 0;
bad:
    ty_log_cursor_free(c);
    return ty_error_set(err, EINVAL, BAD_TOKEN);
}

/* ---- lines ---- */

/* The attempt after a severity: "@N" at @p (@n bytes) followed by a space or the end of the
 * line; N from 1 to TY_LOG_MAX_ATTEMPT without leading zeros. Returns the bytes used, 0 when
 * there is no valid marker. */
static size_t parse_attempt(const char *p, size_t n, unsigned *ret)
{
    size_t i = 1;
    unsigned v = 0;

    if (n < 2 || p[0] != '@' || p[1] < '1' || p[1] > '9')
        return 0;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
        v = v * 10 + (unsigned)(p[i] - '0');
        if (v > TY_LOG_MAX_ATTEMPT)
            return 0;
        i++;
    }
    if (i < n && p[i] != ' ')
        return 0;
    *ret = v;
    return i;
}

/* The time, severity and attempt of a line; *msg_off: where its message starts. */
static int parse_head(const char *line,
                      size_t len,
                      int64_t *time,
                      enum ty_severity *sev,
                      unsigned *attempt,
                      size_t *msg_off)
{
    char ts[48]; /* an RFC 3339 time with microseconds and an offset is 32 characters */
    const char *sp = memchr(line, ' ', len < sizeof(ts) ? len : sizeof(ts));
    size_t tl, rl;
    const char *rest;

    if (!sp)
        return -EINVAL;
    tl = (size_t)(sp - line);
    if (tl == 0 || tl >= sizeof(ts) || memchr(line, '\0', tl))
        return -EINVAL;
    memcpy(ts, line, tl);
    ts[tl] = '\0';
    if (ty_rfc3339_parse(ts, time, NULL) < 0)
        return -EINVAL;
    rest = sp + 1;
    rl = len - tl - 1;
    for (int s = TY_SEV_DEFAULT; s <= TY_SEV_ERROR; s++) {
        const char *name = ty_severity_name((enum ty_severity)s);
        size_t nl = strlen(name), al = 0;
        if (rl < nl || memcmp(rest, name, nl) != 0)
            continue;
        *attempt = 1;
        if (rl > nl && rest[nl] == '@' && (al = parse_attempt(rest + nl, rl - nl, attempt)) == 0)
            return -EINVAL;
        if (rl == nl + al || rest[nl + al] == ' ') {
            *sev = (enum ty_severity)s;
            *msg_off = tl + 1 + nl + al + (rl > nl + al);
            return 0;
        }
    }
    return -EINVAL;
}

int ty_log_parse_line(
    const char *line, size_t len, const char *task, const char *trial, struct ty_log_entry *e)
{
    enum ty_severity sev;
    unsigned attempt;
    size_t msg_off;
    int64_t t;

    if (parse_head(line, len, &t, &sev, &attempt, &msg_off) < 0)
        return -EINVAL;
    *e = (struct ty_log_entry){
        .time_usec = t,
        .severity = sev,
        .task = xstrdup(task),
        .trial = xstrdup(trial),
        .message = ty_utf8_dup_replacing(line + msg_off, len - msg_off),
        .attempt = attempt,
    };
    return 0;
}

void ty_log_entries_free(struct ty_log_entry *e, size_t n)
{
    if (!e)
        return;
    for (size_t i = 0; i < n; i++) {
        free(e[i].task);
        free(e[i].trial);
        free(e[i].message);
    }
    free(e);
}

/* ---- reading ---- */

struct reader {
    const struct ty_log_source *src;
    char *key;
    bool active; /* of the queried task */
    char *buf;   /* bytes of the file from offset base */
    size_t cap, len, pos;
    int64_t base;
    int refills;
    bool checked;          /* the start offset was checked against the file's size */
    bool eof;              /* nothing more to read in this call */
    int64_t prev_time;     /* time of the last record that parsed */
    unsigned prev_attempt; /* and its attempt */
    bool prev_known;
    /* The next record, not yet taken: the line at buf + pos. */
    bool has_head;
    int64_t time;
    enum ty_severity sev;
    unsigned attempt;
    size_t line_len, msg_off, consumed;
};

static int open_log(const struct reader *r, int *ret, struct ty_error *err)
{
    int fd = open(r->src->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return ty_error_set(err, errno, "cannot open '%s': %s", r->src->path, strerror(errno));
    }
    *ret = fd;
    return 1;
}

/* pread all of @n bytes at @off, or up to the end of the file. */
static ssize_t pread_full(int fd, char *p, size_t n, int64_t off)
{
    size_t got = 0;

    while (got < n) {
        ssize_t k = pread(fd, p + got, n - got, (off_t)(off + (int64_t)got));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

/* Read more of the file into the buffer (after moving what is left to its front). */
static int refill(struct reader *r, struct ty_error *err)
{
    _cleanup_close_ int fd = -EBADF;
    size_t want;
    ssize_t n;
    int k;

    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->base += (int64_t)r->pos;
        r->len -= r->pos;
        r->pos = 0;
    }
    /* A buffer that is full, or refilled often, grows (up to one longest line). */
    if (r->len == r->cap || (++r->refills > 2 && r->cap < LINE_MAX_BYTES)) {
        r->cap = r->cap ? r->cap * 2 : BUF_INITIAL;
        if (r->cap > LINE_MAX_BYTES)
            r->cap = LINE_MAX_BYTES;
        r->buf = xreallocarray(r->buf, r->cap, 1);
    }
    k = open_log(r, &fd, err);
    if (k <= 0) {
        r->eof = true; /* a missing file reads as empty */
        return k;
    }
    if (!r->checked) {
        struct stat st;
        if (fstat(fd, &st) < 0)
            return ty_error_set(err, errno, "cannot stat '%s': %s", r->src->path, strerror(errno));
        if (r->base > st.st_size) {
            /* The file shrank under the reader (truncated, say by an operator freeing space):
             * what it holds now was written since, so it is read from its start. */
            r->base = 0;
            r->prev_known = true;
            r->prev_time = 0;
            r->prev_attempt = 1;
        }
        r->checked = true;
    }
    want = r->cap - r->len;
    n = pread_full(fd, r->buf + r->len, want, r->base + (int64_t)r->len);
    if (n < 0)
        return ty_error_set(err, errno, "cannot read '%s': %s", r->src->path, strerror(errno));
    r->len += (size_t)n;
    if ((size_t)n < want)
        r->eof = true;
    return 0;
}

/* The next complete line at buf + pos: 1 with *len (without '\n') and *consumed, 0 when none
 * (yet), or -errno. */
static int next_line(struct reader *r, size_t *len, size_t *consumed, struct ty_error *err)
{
    for (;;) {
        size_t avail = r->len - r->pos;
        const char *nl = avail ? memchr(r->buf + r->pos, '\n', avail) : NULL;
        int k;
        if (nl) {
            *len = (size_t)(nl - (r->buf + r->pos));
            *consumed = *len + 1;
            return 1;
        }
        if (avail >= LINE_MAX_BYTES) {
            *len = *consumed = LINE_MAX_BYTES;
            return 1;
        }
        if (r->eof)
            return 0;
        k = refill(r, err);
        if (k < 0)
            return k;
    }
}

/* The time and attempt of the last record before the reader's start offset, looking back a
 * bounded distance; 0 and 1 when there is none. */
static int
time_before(struct reader *r, int64_t end, int64_t *ret, unsigned *attempt, struct ty_error *err)
{
    _cleanup_close_ int fd = -EBADF;
    _cleanup_free_ char *buf = NULL;
    int64_t start = end > BACKSCAN_BYTES ? end - BACKSCAN_BYTES : 0;
    size_t e, n;
    ssize_t got;
    int k;

    *ret = 0;
    *attempt = 1;
    k = open_log(r, &fd, err);
    if (k <= 0)
        return k;
    n = (size_t)(end - start);
    buf = xmalloc(n ? n : 1);
    got = pread_full(fd, buf, n, start);
    if (got < 0)
        return ty_error_set(err, errno, "cannot read '%s': %s", r->src->path, strerror(errno));
    e = (size_t)got;
    if (e > 0 && buf[e - 1] == '\n')
        e--;
    while (e > 0) {
        const char *nl = memrchr(buf, '\n', e);
        size_t b = nl ? (size_t)(nl - buf) + 1 : 0;
        enum ty_severity sev;
        size_t mo;
        if (!nl && start > 0)
            break; /* the line starts before what was read */
        if (parse_head(buf + b, e - b, ret, &sev, attempt, &mo) == 0)
            return 0;
        *ret = 0;
        *attempt = 1;
        if (!nl)
            break;
        e = b - 1;
    }
    return 0;
}

/* The time of the first whole line that parses in the @n bytes at @off after a line break
 * (the line at @off itself may be cut), and that line's offset; 0 when it parses, else -1. */
static int time_after(int fd, char *buf, size_t n, int64_t off, int64_t *at, int64_t *time)
{
    ssize_t got = pread_full(fd, buf, n, off);
    const char *p = got > 0 ? memchr(buf, '\n', (size_t)got) : NULL;

    while (p) {
        const char *line = p + 1, *end = memchr(line, '\n', (size_t)(buf + got - line));
        enum ty_severity sev;
        unsigned attempt;
        size_t mo;
        if (!end)
            return -1;
        if (parse_head(line, (size_t)(end - line), time, &sev, &attempt, &mo) == 0) {
            *at = off + (line - buf);
            return 0;
        }
        p = end;
    }
    return -1;
}

/* Move the reader's start past the part of its file that holds only records older than
 * @since, by bisection on the records' times (a log file is written in time order), so that a
 * `since` far into a large file costs a few reads rather than reading all of it (464 MB held a
 * request thread 0.27 s). The start moves only to a line whose record is older than @since;
 * load_head reads on from there. A clock set back while the file was written can hide the
 * records written before it was. */
static int seek_since(struct reader *r, int64_t since, struct ty_error *err)
{
    _cleanup_close_ int fd = -EBADF;
    _cleanup_free_ char *buf = NULL;
    int64_t lo = r->base, hi, at, t;
    struct stat st;
    int k = open_log(r, &fd, err);

    if (k <= 0 || fstat(fd, &st) < 0 || st.st_size - lo <= BISECT_MIN_BYTES)
        return k < 0 ? k : 0;
    buf = xmalloc(BISECT_WINDOW);
    hi = st.st_size;
    while (hi - lo > BISECT_MIN_BYTES) {
        int64_t mid = lo + (hi - lo) / 2;
        /* a few lines' worth first; two of the longest lines when none parses there */
        if ((time_after(fd, buf, BISECT_FIRST, mid, &at, &t) < 0 &&
             time_after(fd, buf, BISECT_WINDOW, mid, &at, &t) < 0) ||
            at >= hi)
            break; /* no whole record near: read on from what is known */
        if (t < since)
            lo = at;
        else
            hi = mid;
    }
    if (lo != r->base) {
        r->base = lo;
        r->prev_known = false;
    }
    return 0;
}

/* Find the reader's next record at or after q->since_usec (consuming older ones). */
static int load_head(struct reader *r, const struct ty_log_query *q, struct ty_error *err)
{
    r->has_head = false;
    for (;;) {
        const char *line;
        int k = next_line(r, &r->line_len, &r->consumed, err);
        if (k <= 0)
            return k;
        line = r->buf + r->pos;
        if (parse_head(line, r->line_len, &r->time, &r->sev, &r->attempt, &r->msg_off) == 0) {
            r->prev_time = r->time;
            r->prev_attempt = r->attempt;
            r->prev_known = true;
        } else {
            if (!r->prev_known) {
                k = time_before(r, r->base + (int64_t)r->pos, &r->prev_time, &r->prev_attempt, err);
                if (k < 0)
                    return k;
                r->prev_known = true;
            }
            /* A damaged line belongs with the record before it. */
            r->time = r->prev_time;
            r->attempt = r->prev_attempt;
            r->sev = TY_SEV_DEFAULT;
            r->msg_off = 0;
        }
        if (r->time >= q->since_usec) {
            r->has_head = true;
            return 0;
        }
        r->pos += r->consumed;
    }
}

static char *source_key(const struct ty_log_source *s)
{
    return s->trial ? xasprintf("%s.%s", s->task, s->trial) : xstrdup(s->task);
}

/* Keep the cursor within the token's limit: drop the entries of files no longer read. */
static void cursor_prune(struct ty_log_cursor *c, const struct ty_log_source *src, size_t n)
{
    for (size_t i = c->n; i-- > 0 && c->n > TOKEN_MAX_FILES;) {
        bool used = false;
        for (size_t k = 0; k < n && !used; k++) {
            _cleanup_free_ char *key = source_key(&src[k]);
            used = strcmp(key, c->e[i].key) == 0;
        }
        if (used)
            continue;
        free(c->e[i].key);
        memmove(c->e + i, c->e + i + 1, (c->n - i - 1) * sizeof(*c->e));
        c->n--;
    }
}

/* What an entry adds to a page: its strings as JSON escapes them (jansson: \" \\ \b \f \n \r
 * \t, \u00XX for any other control character, so one byte can be six; UTF-8 as it is) and
 * ENTRY_JSON_BYTES for its other fields, names and punctuation. */
#define ENTRY_JSON_BYTES 160
static size_t json_len(const char *s)
{
    size_t n = 0;

    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++)
        n += *p == '"' || *p == '\\' || *p == '\b' || *p == '\f' || *p == '\n' || *p == '\r' ||
                     *p == '\t'
                 ? 2
             : *p < 0x20 ? 6
                         : 1;
    return n;
}

static size_t entry_json_bytes(const struct ty_log_entry *e)
{
    return json_len(e->message) + json_len(e->task) + json_len(e->trial) + ENTRY_JSON_BYTES;
}

static void take_head(struct reader *r, struct ty_log_entry *e)
{
    const char *line = r->buf + r->pos;

    *e = (struct ty_log_entry){
        .time_usec = r->time,
        .severity = r->sev,
        .task = xstrdup(r->src->task),
        .trial = xstrdup(r->src->trial),
        .message = ty_utf8_dup_replacing(line + r->msg_off, r->line_len - r->msg_off),
        .attempt = r->attempt,
    };
    r->pos += r->consumed;
}

int ty_log_read(const struct ty_log_source *src,
                size_t n,
                const struct ty_log_query *q,
                struct ty_log_cursor *cur,
                struct ty_log_entry **ret,
                size_t *nret,
                bool *more,
                struct ty_error *err)
{
    struct reader *rd = xcalloc(n ? n : 1, sizeof(*rd));
    struct ty_log_entry *out = NULL;
    size_t nout = 0, cap = 0, bytes = 0;
    int r = 0;

    *ret = NULL;
    *nret = 0;
    *more = false;
    if (n > TOKEN_MAX_FILES) {
        r = ty_error_set(err, E2BIG, "more than %d log files", TOKEN_MAX_FILES);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        struct reader *x = &rd[i];
        x->src = &src[i];
        x->active = !q->task_name || strcmp(src[i].task, q->task_name) == 0;
        if (!x->active)
            continue;
        x->key = source_key(&src[i]);
        if (strlen(x->key) > TOKEN_MAX_KEY) {
            r = ty_error_set(err, EINVAL, "log file name '%.64s...' is too long", x->key);
            goto out;
        }
        x->base = cursor_get(cur, x->key);
        x->prev_known = x->base == 0;
        x->prev_attempt = 1;
        if (q->since_usec > 0 && (r = seek_since(x, q->since_usec, err)) < 0)
            goto out;
        r = load_head(x, q, err);
        if (r < 0)
            goto out;
    }
    for (;;) {
        struct reader *best = NULL;
        for (size_t i = 0; i < n; i++)
            if (rd[i].has_head && (!best || rd[i].time < best->time))
                best = &rd[i];
        if (!best)
            break;
        if (nout >= q->max_entries || (q->max_bytes && bytes >= q->max_bytes)) {
            *more = true;
            break;
        }
        if (nout == cap) {
            cap = cap ? cap * 2
                      : (q->max_entries < ENTRIES_INITIAL ? q->max_entries : ENTRIES_INITIAL);
            out = xreallocarray(out, cap, sizeof(*out));
        }
        take_head(best, &out[nout]);
        bytes += entry_json_bytes(&out[nout++]);
        r = load_head(best, q, err);
        if (r < 0)
            goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (rd[i].active)
            cursor_set(cur, rd[i].key, rd[i].base + (int64_t)rd[i].pos);
    cursor_prune(cur, src, n);
    *ret = TAKE_PTR(out);
    *nret = nout;
out:
    ty_log_entries_free(out, nout);
    for (size_t i = 0; i < n; i++) {
        free(rd[i].key);
        free(rd[i].buf);
    }
    free(rd);
    return r;
}

json_t *ty_log_entry_json(const struct ty_log_entry *e)
{
    char ts[40];
    json_t *j = json_object();

    json_object_set_new(j, "timestamp", json_string(ty_rfc3339(e->time_usec, 6, ts, sizeof(ts))));
    json_object_set_new(j, "severity", json_string(ty_severity_name(e->severity)));
    json_object_set_new(j, "taskName", json_string(e->task));
    if (e->trial)
        json_object_set_new(j, "trialId", json_string(e->trial));
    if (e->attempt >= 2) {
        /* Cloud Logging's form: string labels; attempt 1's entries are as they always were. */
        char n[16];
        (void)snprintf(n, sizeof(n), "%u", e->attempt);
        json_object_set_new(j, "labels", json_pack("{s:s}", "attempt", n));
    }
    json_object_set_new(j, "message", json_string(e->message));
    return j;
}
