/* SPDX-License-Identifier: Apache-2.0
 * auth.c: bearer tokens for trainyardd (--auth-tokens FILE). Each line of the file is
 *     TOKEN PROJECT[,PROJECT...]
 * ('*' grants every project; '#' starts a comment). A request must carry
 * "Authorization: Bearer TOKEN" with a token granting the project in its URL. Tokens are
 * compared in constant time; the file must not be readable by others.
 *
 * The table is swapped on SIGHUP (tyd_auth_reload) under a read-write lock that the request
 * threads hold only while they compare. Failed authentications are counted per client
 * address, and the answers to further failures are held back (guard.h's backoff). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "buf.h"
#include "connlimit.h"
#include "daemon.h"
#include "fdutil.h"
#include "guard.h"
#include "macro.h"
#include "strv.h"

/* A token must be long enough not to be guessed over the network: 16 random base64
 * characters are 96 bits. */
#define MIN_TOKEN_LEN 16
/* A tokens file is a few lines; 1 MiB is far beyond any real one and bounds what is read. */
#define MAX_TOKENS_FILE (1024 * 1024)
/* Client addresses whose failures are remembered; beyond it the oldest is forgotten (an
 * attacker with more addresses than this gains little: each still starts at zero). */
#define MAX_FAILING 4096

struct tyd_token {
    char *token;
    char **projects; /* "*" = all */
    int lineno;      /* of the tokens file */
};

struct table {
    struct tyd_token *tokens;
    size_t n;
};

/* A client (connlimit.h's key) with recent failed authentications. */
struct failing {
    char addr[TYD_CLIENT_KEY_MAX];
    char project[TY_PROJECT_ID_MAX + 1]; /* that the last wrong token asked for; "" none */
    unsigned count;
    int64_t last; /* monotonic usec of the last failure */
};

struct tyd_auth {
    pthread_rwlock_t lock; /* the table: read to compare, written to swap */
    struct table *t;
    atomic_uint_fast64_t generation; /* tables swapped in so far */
    pthread_mutex_t flock;           /* the failures */
    struct failing *failing;
    size_t nfailing;
};

static void table_free(struct table *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++) {
        explicit_bzero(a->tokens[i].token, strlen(a->tokens[i].token));
        free(a->tokens[i].token);
        ty_strv_free(a->tokens[i].projects);
    }
    free(a->tokens);
    free(a);
}

void tyd_auth_free(struct tyd_auth *a)
{
    if (!a)
        return;
    table_free(a->t);
    pthread_rwlock_destroy(&a->lock);
    pthread_mutex_destroy(&a->flock);
    free(a->failing);
    free(a);
}

static int
parse_line(struct table *a, char *line, const char *path, int lineno, struct ty_error *err)
{
    char *tok, *projects, *save = NULL, *p;
    struct tyd_token t = {0};

    line[strcspn(line, "#")] = '\0';
    tok = strtok_r(line, " \t\r", &save);
    if (!tok)
        return 0;
    projects = strtok_r(NULL, " \t\r", &save);
    if (!projects || strtok_r(NULL, " \t\r", &save))
        return ty_error_set(err,
                            EINVAL,
                            "%s:%d: expected 'TOKEN PROJECT[,PROJECT...]' ('*' for every "
                            "project)",
                            path,
                            lineno);
    if (strlen(tok) < MIN_TOKEN_LEN)
        return ty_error_set(err,
                            EINVAL,
                            "%s:%d: token too short (at least 16 characters; generate one "
                            "with e.g. 'head -c 24 /dev/urandom | base64')",
                            path,
                            lineno);
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->tokens[i].token, tok) == 0)
            return ty_error_set(err,
                                EINVAL,
                                "%s:%d: the token of line %d again: give a token once, with "
                                "every project it grants on its line (TOKEN P1,P2)",
                                path,
                                lineno,
                                a->tokens[i].lineno);
    t.projects = xcalloc(1, sizeof(char *));
    for (p = strtok_r(projects, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (strcmp(p, "*") != 0 && !ty_project_id_ok(p, strlen(p))) {
            ty_strv_free(t.projects);
            return ty_error_set(err,
                                EINVAL,
                                "%s:%d: '%.64s' is not a project id (%s), nor '*'",
                                path,
                                lineno,
                                p,
                                TY_PROJECT_ID_RULE);
        }
        ty_strv_push(&t.projects, p);
    }
    t.token = xstrdup(tok);
    t.lineno = lineno;
    a->tokens = xreallocarray(a->tokens, a->n + 1, sizeof(*a->tokens));
    a->tokens[a->n++] = t;
    return 0;
}

static int load_table(const char *path, struct table **ret, struct ty_error *err)
{
    _cleanup_free_ char *text = NULL;
    struct table *a;
    struct stat st;
    size_t len;
    char *line, *save = NULL;
    int r, lineno = 0;

    r = ty_read_file(path, MAX_TOKENS_FILE, &text, &len, err);
    if (r < 0)
        return ty_error_prefix(err, r, "--auth-tokens");
    if (stat(path, &st) < 0)
        return ty_error_set(err, errno, "--auth-tokens: cannot stat %s: %s", path, strerror(errno));
    if (st.st_mode & 0077)
        return ty_error_set(err,
                            EPERM,
                            "--auth-tokens: %s is readable or writable by other users; "
                            "chmod 600 it",
                            path);
    /* its owner may write it, and so grant itself every project */
    if (st.st_uid != geteuid())
        return ty_error_set(err,
                            EPERM,
                            "--auth-tokens: %s belongs to uid %u, not to trainyardd's user (uid "
                            "%u), who could grant itself any project; chown it",
                            path,
                            (unsigned)st.st_uid,
                            (unsigned)geteuid());
    a = xcalloc(1, sizeof(*a));
    /* strtok_r would merge empty lines and break line numbers: split by hand. */
    for (line = text; line; line = save) {
        save = strchr(line, '\n');
        if (save)
            *save++ = '\0';
        lineno++;
        r = parse_line(a, line, path, lineno, err);
        if (r < 0) {
            table_free(a);
            explicit_bzero(text, len);
            return ty_error_prefix(err, r, "--auth-tokens");
        }
    }
    explicit_bzero(text, len);
    if (a->n == 0) {
        table_free(a);
        return ty_error_set(err, EINVAL, "--auth-tokens: %s has no tokens", path);
    }
    *ret = a;
    return 0;
}

int tyd_auth_load(const char *path, struct tyd_auth **ret, struct ty_error *err)
{
    struct table *t;
    struct tyd_auth *a;
    int r = load_table(path, &t, err);

    if (r < 0)
        return r;
    a = xcalloc(1, sizeof(*a));
    pthread_rwlock_init(&a->lock, NULL);
    pthread_mutex_init(&a->flock, NULL);
    a->t = t;
    *ret = a;
    return 0;
}

int tyd_auth_reload(struct tyd_auth *a, const char *path, struct ty_error *err)
{
    struct table *t, *old;
    int r = load_table(path, &t, err);
    size_t n;

    if (r < 0)
        return r;
    n = t->n;
    pthread_rwlock_wrlock(&a->lock);
    old = a->t;
    a->t = t;
    pthread_rwlock_unlock(&a->lock);
    atomic_fetch_add(&a->generation, 1);
    table_free(old);
    return (int)(n > INT32_MAX ? INT32_MAX : n);
}

uint64_t tyd_auth_generation(struct tyd_auth *a)
{
    return atomic_load(&a->generation);
}

static bool same_token(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < la; i++)
        diff |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return diff == 0;
}

static enum tyd_auth_result check_table(const struct table *a, const char *tok, const char *project)
{
    for (size_t i = 0; i < a->n; i++) {
        if (!same_token(a->tokens[i].token, tok))
            continue;
        if (!project || !*project)
            return TYD_AUTH_OK;
        for (char **p = a->tokens[i].projects; *p; p++)
            if (strcmp(*p, "*") == 0 || strcmp(*p, project) == 0)
                return TYD_AUTH_OK;
        return TYD_AUTH_FORBIDDEN;
    }
    return TYD_AUTH_BAD_TOKEN;
}

enum tyd_auth_result tyd_auth_check(struct tyd_auth *a, const char *header, const char *project)
{
    enum tyd_auth_result r;
    const char *tok;

    if (!header || !*header)
        return TYD_AUTH_MISSING;
    if (strncasecmp(header, "Bearer ", 7) != 0)
        return TYD_AUTH_BAD_TOKEN;
    tok = header + 7;
    while (*tok == ' ')
        tok++;
    pthread_rwlock_rdlock(&a->lock);
    r = check_table(a->t, tok, project);
    pthread_rwlock_unlock(&a->lock);
    return r;
}

char **tyd_auth_projects(struct tyd_auth *a, const char *header)
{
    const char *tok;
    char **ret = NULL;

    if (!header || strncasecmp(header, "Bearer ", 7) != 0)
        return NULL;
    tok = header + 7;
    while (*tok == ' ')
        tok++;
    pthread_rwlock_rdlock(&a->lock);
    for (size_t i = 0; i < a->t->n && !ret; i++)
        if (same_token(a->t->tokens[i].token, tok))
            ret = ty_strv_copy(a->t->tokens[i].projects);
    pthread_rwlock_unlock(&a->lock);
    return ret;
}

void tyd_auth_forbidden_msg(
    struct tyd_auth *a, const char *header, const char *project, char *buf, size_t len)
{
    _cleanup_strv_free_ char **granted = tyd_auth_projects(a, header);
    struct ty_buf list = TY_BUF_INIT;

    for (size_t i = 0; granted && granted[i]; i++)
        ty_buf_printf(&list, "%s'%s'", i ? ", " : "", granted[i]);
    (void)snprintf(buf,
                   len,
                   "Permission denied on project '%s': the token does not grant it (it grants "
                   "project%s %s).",
                   project,
                   ty_strv_len(granted) == 1 ? "" : "s",
                   granted && *granted ? ty_buf_str(&list) : "none");
    ty_buf_release(&list);
}

static struct failing *find_failing(struct tyd_auth *a, const char *addr)
{
    for (size_t i = 0; i < a->nfailing; i++)
        if (strcmp(a->failing[i].addr, addr) == 0)
            return &a->failing[i];
    return NULL;
}

int64_t tyd_auth_failed(struct tyd_auth *a, const char *addr, const char *project, int64_t now)
{
    struct failing *f;
    int64_t delay;

    pthread_mutex_lock(&a->flock);
    f = find_failing(a, addr);
    if (!f) {
        if (a->nfailing == MAX_FAILING) {
            size_t oldest = 0;
            for (size_t i = 1; i < a->nfailing; i++)
                if (a->failing[i].last < a->failing[oldest].last)
                    oldest = i;
            a->failing[oldest] = a->failing[--a->nfailing];
        }
        if (!a->failing)
            a->failing = xcalloc(MAX_FAILING, sizeof(*a->failing));
        f = &a->failing[a->nfailing++];
        *f = (struct failing){0};
        (void)snprintf(f->addr, sizeof(f->addr), "%s", addr);
    }
    if (f->count && now - f->last > TYD_BACKOFF_WINDOW_USEC)
        f->count = 0;
    if (f->count < UINT32_MAX)
        f->count++;
    f->last = now;
    (void)snprintf(f->project, sizeof(f->project), "%s", project ? project : "");
    delay = tyd_backoff_usec(f->count);
    pthread_mutex_unlock(&a->flock);
    return delay;
}

void tyd_auth_succeeded(struct tyd_auth *a, const char *addr, const char *project)
{
    struct failing *f;

    if (!project)
        return; /* any valid token does: the client's own would reset its guessing */
    pthread_mutex_lock(&a->flock);
    f = find_failing(a, addr);
    if (f && f->project[0] && strcmp(f->project, project) == 0)
        *f = a->failing[--a->nfailing];
    pthread_mutex_unlock(&a->flock);
}
