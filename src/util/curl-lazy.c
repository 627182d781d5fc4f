/* SPDX-License-Identifier: Apache-2.0
 * curl-lazy.c: the part of libcurl's API trainyard uses, loaded (dlopen) on the first call.
 *
 * Linking libcurl makes every start of a program load it and the ~30 libraries it pulls in
 * (TLS, Kerberos, LDAP, SSH, ...) and relocate them: tens of milliseconds of CPU, paid by
 * `trainyard local train` and every supervisor although a process-runtime job never talks
 * HTTP. Programs link this instead (curl_lazy_dep) and keep calling curl_* as documented;
 * only the first call loads libcurl.so.4. When it cannot be loaded, every call fails the
 * way libcurl reports a failure (NULL, CURLE_FAILED_INIT, CURLM_INTERNAL_ERROR) and the
 * strerror functions say why. The variadic option setters pass their one argument on with
 * the type the option's number says (curl.h: CURLOPTTYPE_*). */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#define LIBCURL_SONAME "libcurl.so.4"

static struct {
    CURLcode (*global_init)(long);
    CURLcode (*global_init_mem)(long,
                                curl_malloc_callback,
                                curl_free_callback,
                                curl_realloc_callback,
                                curl_strdup_callback,
                                curl_calloc_callback);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    CURLcode (*easy_perform)(CURL *);
    void (*easy_reset)(CURL *);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    char *(*easy_escape)(CURL *, const char *, int);
    void (*free)(void *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd[], unsigned int, int, int *);
    CURLMcode (*multi_socket_action)(CURLM *, curl_socket_t, int, int *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLMcode (*multi_cleanup)(CURLM *);
    const char *(*multi_strerror)(CURLMcode);
} fn;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded; /* 1: every function found */
static char load_error[512];

/* Look @name up in @h into *@slot (a function pointer's storage); false when missing. */
static int sym(void *h, const char *name, void *slot)
{
    void *p = dlsym(h, name);
    if (!p) {
        (void)snprintf(load_error,
                       sizeof(load_error),
                       "libcurl could not be loaded: %s has no %s",
                       LIBCURL_SONAME,
                       name);
        return 0;
    }
    /* POSIX: a dlsym result converts to a function pointer of the symbol's type. */
    *(void **)slot = p;
    return 1;
}

static void load(void)
{
    void *h = dlopen(LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL);
    int ok;

    if (!h) {
        const char *e = dlerror();
        (void)snprintf(
            load_error, sizeof(load_error), "libcurl could not be loaded: %s", e ? e : "?");
        return;
    }
    ok = sym(h, "curl_global_init", &fn.global_init) &&
         sym(h, "curl_global_init_mem", &fn.global_init_mem) &&
         sym(h, "curl_easy_init", &fn.easy_init) && sym(h, "curl_easy_setopt", &fn.easy_setopt) &&
         sym(h, "curl_easy_getinfo", &fn.easy_getinfo) &&
         sym(h, "curl_easy_perform", &fn.easy_perform) &&
         sym(h, "curl_easy_reset", &fn.easy_reset) &&
         sym(h, "curl_easy_cleanup", &fn.easy_cleanup) &&
         sym(h, "curl_easy_strerror", &fn.easy_strerror) &&
         sym(h, "curl_easy_escape", &fn.easy_escape) && sym(h, "curl_free", &fn.free) &&
         sym(h, "curl_slist_append", &fn.slist_append) &&
         sym(h, "curl_slist_free_all", &fn.slist_free_all) &&
         sym(h, "curl_multi_init", &fn.multi_init) &&
         sym(h, "curl_multi_setopt", &fn.multi_setopt) &&
         sym(h, "curl_multi_add_handle", &fn.multi_add_handle) &&
         sym(h, "curl_multi_remove_handle", &fn.multi_remove_handle) &&
         sym(h, "curl_multi_perform", &fn.multi_perform) &&
         sym(h, "curl_multi_poll", &fn.multi_poll) &&
         sym(h, "curl_multi_socket_action", &fn.multi_socket_action) &&
         sym(h, "curl_multi_info_read", &fn.multi_info_read) &&
         sym(h, "curl_multi_cleanup", &fn.multi_cleanup) &&
         sym(h, "curl_multi_strerror", &fn.multi_strerror);
    loaded = ok;
    /* Not dlclose'd: a half-found library stays mapped, and nothing of it is called. */
}

static int ready(void)
{
    (void)pthread_once(&load_once, load);
    return loaded;
}

CURLcode curl_global_init(long flags)
{
    return ready() ? fn.global_init(flags) : CURLE_FAILED_INIT;
}

CURLcode curl_global_init_mem(long flags,
                              curl_malloc_callback m,
                              curl_free_callback f,
                              curl_realloc_callback r,
                              curl_strdup_callback s,
                              curl_calloc_callback c)
{
    return ready() ? fn.global_init_mem(flags, m, f, r, s, c) : CURLE_FAILED_INIT;
}

CURL *curl_easy_init(void)
{
    return ready() ? fn.easy_init() : NULL;
}

CURLcode curl_easy_setopt(CURL *h, CURLoption option, ...)
{
    va_list ap;
    CURLcode r;

    if (!ready())
        return CURLE_FAILED_INIT;
    va_start(ap, option);
    if (option >= CURLOPTTYPE_OFF_T && option < CURLOPTTYPE_BLOB)
        r = fn.easy_setopt(h, option, va_arg(ap, curl_off_t));
    else if (option >= CURLOPTTYPE_FUNCTIONPOINT && option < CURLOPTTYPE_OFF_T)
        r = fn.easy_setopt(h, option, va_arg(ap, void (*)(void)));
    else if (option >= CURLOPTTYPE_OBJECTPOINT)
        r = fn.easy_setopt(h, option, va_arg(ap, void *)); /* objects, strings, blobs */
    else
        r = fn.easy_setopt(h, option, va_arg(ap, long));
    va_end(ap);
    return r;
}

CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
    va_list ap;
    CURLcode r;

    if (!ready())
        return CURLE_FAILED_INIT;
    va_start(ap, info);
    r = fn.easy_getinfo(h, info, va_arg(ap, void *)); /* always where to store the answer */
    va_end(ap);
    return r;
}

CURLcode curl_easy_perform(CURL *h)
{
    return ready() ? fn.easy_perform(h) : CURLE_FAILED_INIT;
}

void curl_easy_reset(CURL *h)
{
    if (ready())
        fn.easy_reset(h);
}

void curl_easy_cleanup(CURL *h)
{
    if (ready())
        fn.easy_cleanup(h);
}

const char *curl_easy_strerror(CURLcode code)
{
    return ready() ? fn.easy_strerror(code) : load_error;
}

char *curl_easy_escape(CURL *h, const char *s, int len)
{
    return ready() ? fn.easy_escape(h, s, len) : NULL;
}

void curl_free(void *p)
{
    if (ready())
        fn.free(p);
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s)
{
    return ready() ? fn.slist_append(list, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
    if (ready())
        fn.slist_free_all(list);
}

CURLM *curl_multi_init(void)
{
    return ready() ? fn.multi_init() : NULL;
}

CURLMcode curl_multi_setopt(CURLM *m, CURLMoption option, ...)
{
    va_list ap;
    CURLMcode r;

    if (!ready())
        return CURLM_BAD_HANDLE;
    va_start(ap, option);
    if (option >= CURLOPTTYPE_OFF_T)
        r = fn.multi_setopt(m, option, va_arg(ap, curl_off_t));
    else if (option >= CURLOPTTYPE_FUNCTIONPOINT)
        r = fn.multi_setopt(m, option, va_arg(ap, void (*)(void)));
    else if (option >= CURLOPTTYPE_OBJECTPOINT)
        r = fn.multi_setopt(m, option, va_arg(ap, void *));
    else
        r = fn.multi_setopt(m, option, va_arg(ap, long));
    va_end(ap);
    return r;
}

CURLMcode curl_multi_add_handle(CURLM *m, CURL *h)
{
    return ready() ? fn.multi_add_handle(m, h) : CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_remove_handle(CURLM *m, CURL *h)
{
    return ready() ? fn.multi_remove_handle(m, h) : CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_perform(CURLM *m, int *running)
{
    return ready() ? fn.multi_perform(m, running) : CURLM_BAD_HANDLE;
}

CURLMcode
curl_multi_poll(CURLM *m, struct curl_waitfd extra[], unsigned int n, int timeout_ms, int *ret)
{
    return ready() ? fn.multi_poll(m, extra, n, timeout_ms, ret) : CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_socket_action(CURLM *m, curl_socket_t s, int ev, int *running)
{
    return ready() ? fn.multi_socket_action(m, s, ev, running) : CURLM_BAD_HANDLE;
}

CURLMsg *curl_multi_info_read(CURLM *m, int *left)
{
    if (!ready()) {
        if (left)
            *left = 0;
        return NULL;
    }
    return fn.multi_info_read(m, left);
}

CURLMcode curl_multi_cleanup(CURLM *m)
{
    return ready() ? fn.multi_cleanup(m) : CURLM_BAD_HANDLE;
}

const char *curl_multi_strerror(CURLMcode code)
{
    return ready() ? fn.multi_strerror(code) : load_error;
}
