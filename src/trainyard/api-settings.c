/* SPDX-License-Identifier: Apache-2.0
 * api-settings.c: where the CLI's client of trainyardd finds its settings, in gcloud's order:
 * flags, then the environment (TRAINYARD_* and CLOUDSDK_*), then the config file
 * (TRAINYARD_CONFIG, else $XDG_CONFIG_HOME/trainyard/config, else ~/.config/trainyard/config):
 * the endpoint, the project, the token (or a token file) and the CA file for https://. Each
 * value keeps where it came from, so that errors name it. The same file also holds `local
 * train`'s GPU settings (gpus, gpu_devices: local-gpus.c reads them with cli_config_value). */
#include <errno.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "api-client-int.h"
#include "buf.h"
#include "cli.h"
#include "fdutil.h"
#include "gpudev.h"
#include "kvconf.h"
#include "local-gpus.h"
#include "macro.h"
#include "spec.h"
#include "suggest.h"

/* A token file holds one token: anything larger is not one. */
#define TOKEN_MAX_BYTES (64u * 1024)

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static char *home_dir(void)
{
    const char *h = env_nonempty("HOME");
    if (h)
        return xstrdup(h);
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_dir ? xstrdup(pw->pw_dir) : NULL;
}

const char *const cli_config_keys[] = {"api_endpoint",
                                       "project",
                                       "access_token",
                                       "access_token_file",
                                       "custom_ca_certs_file",
                                       "gpus",
                                       "gpu_devices",
                                       NULL};

char *cli_config_path(bool *must_exist)
{
    const char *p = env_nonempty("TRAINYARD_CONFIG");
    _cleanup_free_ char *home = NULL;

    *must_exist = p != NULL;
    if (p)
        return xstrdup(p);
    p = env_nonempty("XDG_CONFIG_HOME");
    if (p && p[0] == '/')
        return xasprintf("%s/trainyard/config", p);
    home = home_dir();
    return home ? xasprintf("%s/.config/trainyard/config", home) : NULL;
}

struct config {
    char *path;
    struct ty_kv *kv;
    size_t n;
};

static void config_release(struct config *cfg)
{
    free(cfg->path);
    ty_kvconf_free(cfg->kv, cfg->n);
}

/* The last setting of @key, or NULL. */
static const struct ty_kv *config_get(const struct config *cfg, const char *key)
{
    for (size_t i = cfg->n; i > 0; i--)
        if (strcmp(cfg->kv[i - 1].key, key) == 0)
            return &cfg->kv[i - 1];
    return NULL;
}

static int config_load(struct config *cfg, struct ty_error *err)
{
    bool must_exist;
    int r;

    cfg->path = cli_config_path(&must_exist);
    if (!cfg->path)
        return 0;
    r = ty_kvconf_load(cfg->path, &cfg->kv, &cfg->n, err);
    if (r == -ENOENT && !must_exist)
        return 0;
    if (r == -ENOENT)
        return ty_error_set(
            err, EINVAL, "config file %s (from TRAINYARD_CONFIG) does not exist", cfg->path);
    if (r < 0)
        return r == -EINVAL ? r : ty_error_prefix(err, r, "config file");
    for (size_t i = 0; i < cfg->n; i++) {
        _cleanup_free_ char *why = cli_config_unknown_key(cfg->kv[i].key);
        if (why)
            return ty_error_set(err, EINVAL, "%s:%d: %s", cfg->path, cfg->kv[i].line, why);
    }
    return 0;
}

char *cli_config_unknown_key(const char *key)
{
    struct ty_buf known = TY_BUF_INIT;
    const char *near;
    char *why;

    for (size_t k = 0; cli_config_keys[k]; k++)
        if (strcmp(key, cli_config_keys[k]) == 0)
            return NULL;
    near = ty_suggest_among(key, cli_config_keys);
    for (size_t k = 0; cli_config_keys[k]; k++)
        ty_buf_printf(&known, "%s%s", k ? ", " : "", cli_config_keys[k]);
    if (near)
        why = xasprintf(
            "unknown key '%s' (did you mean '%s'? known keys: %s)", key, near, ty_buf_str(&known));
    else
        why = xasprintf("unknown key '%s' (known keys: %s)", key, ty_buf_str(&known));
    ty_buf_release(&known);
    return why;
}

int cli_config_value(const char *key, char **value, char **source, struct ty_error *err)
{
    struct config cfg = {0};
    const struct ty_kv *kv;
    int r = config_load(&cfg, err);

    *value = *source = NULL;
    if (r >= 0 && (kv = config_get(&cfg, key))) {
        *value = xstrdup(kv->value);
        *source = xasprintf("%s:%d", cfg.path, kv->line);
    }
    config_release(&cfg);
    return r < 0 ? r : 0;
}

/* Check a token's characters (it goes into an HTTP header). */
static int check_token(const char *token, const char *source, struct ty_error *err)
{
    if (!*token)
        return ty_error_set(err, EINVAL, "%s: the access token is empty", source);
    for (const unsigned char *p = (const unsigned char *)token; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            return ty_error_set(err,
                                EINVAL,
                                "%s: the access token contains a blank, line break or control "
                                "character",
                                source);
    return 0;
}

/* Read a token file: the token with surrounding blanks and line breaks removed. */
static int read_token_file(const char *path, const char *source, char **ret, struct ty_error *err)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    char *start;
    int r;

    r = ty_read_file(path, TOKEN_MAX_BYTES, &text, &len, err);
    if (r < 0)
        return ty_error_prefix(err, r, "%s", source);
    if (memchr(text, '\0', len))
        return ty_error_set(err, EINVAL, "%s: '%s' is not a token file", source, path);
    while (len > 0 && strchr(" \t\r\n", text[len - 1]))
        text[--len] = '\0';
    start = text + strspn(text, " \t\r\n");
    r = check_token(start, source, err);
    if (r < 0)
        return r;
    *ret = xstrdup(start);
    return 0;
}

/* A config file's relative access_token_file is relative to the file's directory. */
static char *config_relative(const char *cfg_path, const char *p)
{
    const char *slash;
    if (p[0] == '/')
        return xstrdup(p);
    if (p[0] == '~' && p[1] == '/') {
        _cleanup_free_ char *home = home_dir();
        if (home)
            return xasprintf("%s%s", home, p + 1);
    }
    slash = strrchr(cfg_path, '/');
    if (!slash)
        return xstrdup(p);
    return xasprintf("%.*s/%s", (int)(slash - cfg_path), cfg_path, p);
}

/* Check the endpoint @url (named @source in errors). Returns 0 and *@len, its length without
 * trailing slashes, or -EINVAL with err. */
/* The port of the authority at @a (@n bytes of the URL after its scheme, up to its path), if
 * it has one: digits from 1 to 65535. Returns 0, or -1. The port follows the host, after any
 * user information ("user:pass@"); a host in brackets is an IPv6 address, whose colons are
 * not the port's. */
static int check_port(const char *a, size_t n)
{
    const char *end = memchr(a, '/', n), *host, *colon;
    long port = 0;

    if (end)
        n = (size_t)(end - a);
    host = a;
    for (const char *p = a; p < a + n; p++)
        if (*p == '@')
            host = p + 1;
    if (*host == '[') {
        const char *close = memchr(host, ']', (size_t)(a + n - host));
        colon = close && close + 1 < a + n && close[1] == ':' ? close + 1 : NULL;
    } else {
        colon = memchr(host, ':', (size_t)(a + n - host));
    }
    if (!colon)
        return 0;
    if (colon + 1 == a + n)
        return -1;
    for (const char *p = colon + 1; p < a + n; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        port = port * 10 + (*p - '0');
        if (port > 65535)
            return -1;
    }
    return port > 0 ? 0 : -1;
}

static int check_endpoint(const char *url, const char *source, size_t *len, struct ty_error *err)
{
    size_t n = strlen(url);
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
        return ty_error_set(err,
                            EINVAL,
                            "%s: '%s' is not an http:// or https:// URL (e.g. "
                            "http://127.0.0.1:8080)",
                            source,
                            url);
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
        if (*p <= ' ' || *p == 0x7f || *p == '?' || *p == '#')
            return ty_error_set(err,
                                EINVAL,
                                "%s: '%s' must be a base URL (no blanks, query or fragment)",
                                source,
                                url);
    while (n > 0 && url[n - 1] == '/')
        n--;
    if (n <= strlen("https://") && strncmp(url, "https://", 8) == 0)
        return ty_error_set(err, EINVAL, "%s: '%s' has no host", source, url);
    if (n <= strlen("http://"))
        return ty_error_set(err, EINVAL, "%s: '%s' has no host", source, url);
    if (check_port(url + (url[4] == 's' ? 8 : 7), n - (url[4] == 's' ? 8 : 7)) < 0)
        return ty_error_set(
            err, EINVAL, "%s: '%s': the port must be a number from 1 to 65535", source, url);
    *len = n;
    return 0;
}

static int
set_endpoint(struct api_client *c, const char *url, const char *source, struct ty_error *err)
{
    size_t len = 0;
    int r = check_endpoint(url, source, &len, err);
    if (r < 0)
        return r;
    c->endpoint = xstrndup(url, len);
    c->endpoint_source = xstrdup(source);
    return 0;
}

/* The CA file for https:// (gcloud's core/custom_ca_certs_file): it must be readable now,
 * so that a typo is named before any request. */
static int
set_ca_file(struct api_client *c, const char *path, const char *source, struct ty_error *err)
{
    if (access(path, R_OK) < 0)
        return ty_error_set(err,
                            errno,
                            "%s: cannot read the CA certificates file '%s': %s",
                            source,
                            path,
                            strerror(errno));
    c->ca_file = xstrdup(path);
    c->ca_file_source = xstrdup(source);
    return 0;
}

int api_resolve_settings(struct api_client *c, const struct api_settings *f, struct ty_error *err)
{
    struct config cfg = {0};
    const struct ty_kv *kv;
    const char *v;
    int r;

    r = config_load(&cfg, err);
    if (r < 0)
        goto out;

    /* endpoint */
    if (f->endpoint) {
        r = set_endpoint(c, f->endpoint, "--api-endpoint", err);
    } else if ((v = env_nonempty("TRAINYARD_API_ENDPOINT"))) {
        r = set_endpoint(c, v, "TRAINYARD_API_ENDPOINT", err);
    } else if ((kv = config_get(&cfg, "api_endpoint"))) {
        _cleanup_free_ char *src = xasprintf("%s:%d", cfg.path, kv->line);
        r = set_endpoint(c, kv->value, src, err);
    } else {
        c->endpoint = xstrdup(API_DEFAULT_ENDPOINT);
        c->endpoint_source = xstrdup("the default endpoint");
    }
    if (r < 0)
        goto out;

    /* project */
    if (f->project) {
        if (!*f->project) {
            r = ty_error_set(err, EINVAL, "--project: the project name is empty");
            goto out;
        }
        r = ty_validate_project_id(f->project, "--project", err);
        c->project = xstrdup(f->project);
    } else if ((v = env_nonempty("TRAINYARD_PROJECT"))) {
        r = ty_validate_project_id(v, "TRAINYARD_PROJECT", err);
        c->project = xstrdup(v);
    } else if ((kv = config_get(&cfg, "project")) && *kv->value) {
        _cleanup_free_ char *src = xasprintf("%s:%d: project", cfg.path, kv->line);
        r = ty_validate_project_id(kv->value, src, err);
        c->project = xstrdup(kv->value);
    } else if (kv) {
        r = ty_error_set(err, EINVAL, "%s:%d: the project name is empty", cfg.path, kv->line);
        goto out;
    } else {
        c->project = xstrdup(API_DEFAULT_PROJECT);
    }
    if (r < 0)
        goto out;

    /* access token */
    if (f->token_file) {
        r = read_token_file(f->token_file, "--access-token-file", &c->token, err);
    } else if ((v = env_nonempty("TRAINYARD_ACCESS_TOKEN"))) {
        r = check_token(v, "TRAINYARD_ACCESS_TOKEN", err);
        if (r >= 0)
            c->token = xstrdup(v);
    } else if ((kv = config_get(&cfg, "access_token"))) {
        _cleanup_free_ char *src = xasprintf("%s:%d", cfg.path, kv->line);
        r = check_token(kv->value, src, err);
        if (r >= 0)
            c->token = xstrdup(kv->value);
    } else if ((kv = config_get(&cfg, "access_token_file"))) {
        _cleanup_free_ char *src = xasprintf("%s:%d", cfg.path, kv->line);
        _cleanup_free_ char *path = config_relative(cfg.path, kv->value);
        r = read_token_file(path, src, &c->token, err);
    }
    if (r < 0)
        goto out;

    /* CA certificates: as gcloud's core/custom_ca_certs_file property */
    if ((v = env_nonempty("TRAINYARD_CUSTOM_CA_CERTS_FILE"))) {
        r = set_ca_file(c, v, "TRAINYARD_CUSTOM_CA_CERTS_FILE", err);
    } else if ((v = env_nonempty("CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE"))) {
        r = set_ca_file(c, v, "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE", err);
    } else if ((kv = config_get(&cfg, "custom_ca_certs_file"))) {
        _cleanup_free_ char *src = xasprintf("%s:%d", cfg.path, kv->line);
        _cleanup_free_ char *path = config_relative(cfg.path, kv->value);
        r = set_ca_file(c, path, src, err);
    }
out:
    config_release(&cfg);
    return r < 0 ? r : 0;
}

/* A path given to `config set`: relative to the working directory, made absolute (the file
 * reads relative paths relative to its own directory). */
static char *absolute_path(const char *p)
{
    _cleanup_free_ char *cwd = NULL;
    if (p[0] == '/' || (p[0] == '~' && p[1] == '/'))
        return xstrdup(p);
    cwd = getcwd(NULL, 0);
    return cwd ? xasprintf("%s/%s", cwd, p) : xstrdup(p);
}

int cli_config_check(const char *key, const char *value, char **ret, struct ty_error *err)
{
    _cleanup_free_ char *why = cli_config_unknown_key(key);
    _cleanup_free_ char *path = NULL;
    _cleanup_free_ char *token = NULL;
    size_t len;
    int r = 0;

    *ret = NULL;
    if (why)
        return ty_error_set(err, EINVAL, "%s", why);
    if (strcmp(key, "api_endpoint") == 0) {
        r = check_endpoint(value, key, &len, err);
    } else if (strcmp(key, "project") == 0) {
        if (!*value)
            r = ty_error_set(err, EINVAL, "project: the project name is empty");
        else
            r = ty_validate_project_id(value, "project", err);
    } else if (strcmp(key, "access_token") == 0) {
        r = check_token(value, key, err);
    } else if (strcmp(key, "access_token_file") == 0 || strcmp(key, "custom_ca_certs_file") == 0) {
        if (!*value)
            return ty_error_set(err, EINVAL, "%s: the file name is empty", key);
        path = absolute_path(value);
        _cleanup_free_ char *real = config_relative("/", path); /* expands ~/ */
        if (key[0] == 'a')
            r = read_token_file(real, key, &token, err);
        else if (access(real, R_OK) < 0)
            r = ty_error_set(err,
                             errno,
                             "%s: cannot read the CA certificates file '%s': %s",
                             key,
                             real,
                             strerror(errno));
    } else if (strcmp(key, "gpus") == 0) {
        _cleanup_free_ char *text = xasprintf("gpus=%s", value);
        struct ty_resources decl;
        ty_resources_unlimited(&decl);
        r = ty_resources_parse(text, false, "config file", &decl, err);
    } else if (strcmp(key, "gpu_devices") == 0) {
        bool stand_in;
        r = ty_gpu_devices_parse(value, "gpu_devices", &stand_in, err);
    }
    if (r < 0)
        return r;
    *ret = path ? TAKE_PTR(path) : xstrdup(value);
    return 0;
}
