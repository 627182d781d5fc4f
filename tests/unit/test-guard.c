/* SPDX-License-Identifier: Apache-2.0
 * test-guard.c: trainyardd's web-page and guessing guards (guard.h): which Host and Origin
 * headers are the daemon's own, which Content-Types are JSON, the failure backoff. */
#include <stdio.h>

#include "guard.h"
#include "tap.h"

struct hcase {
    const char *value;
    bool want;
};

static void test_hosts(void)
{
    static const char *const extra[] = {"trainyard.test", "proxy.test:443", NULL};
    const struct tyd_host_rules r = {.port = 8080, .extra = extra};
    const struct tyd_host_rules none = {.port = 80};
    static const struct hcase c[] = {
        {"127.0.0.1:8080", true},
        {"localhost:8080", true},
        {"LocalHost:8080", true},
        {"[::1]:8080", true},
        {"10.1.2.3:8080", true}, /* an IP literal cannot be a rebinding name */
        {"trainyard.test:8080", true},
        {"TRAINYARD.test:9", true}, /* an extra name without a port: any port */
        {"proxy.test:443", true},
        {"proxy.test:444", false},
        {"proxy.test", false}, /* port 80 */
        {"127.0.0.1:8081", false},
        {"127.0.0.1", false},
        {"localhost", false},
        {"evil.example:8080", false},
        {"127.0.0.1.evil.example:8080", false},
        {"localhost.:8080", false},
        {"", false},
        {":8080", false},
        {"[::1", false},
        {"[evil]:8080", false},
        {"::1:8080", false},
        {"127.0.0.1:8080:1", false},
        {"127.0.0.1:", false},
        {"127.0.0.1:99999", false},
        {"127.0.0.1:80x", false},
        {"user@127.0.0.1:8080", false},
        {"trainyard.test/x:8080", false},
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
        ok(tyd_host_allowed(&r, c[i].value) == c[i].want,
           "Host '%s' %s",
           c[i].value,
           c[i].want ? "allowed" : "refused");
    ok(!tyd_host_allowed(&r, NULL), "no Host refused by the function (http.c lets HTTP/1.0 by)");
    ok(tyd_host_allowed(&none, "localhost"), "port 80: a Host without a port");
    ok(tyd_host_allowed(&none, "127.0.0.1:80"), "port 80 given");
    {
        static const char *const any[] = {"*", NULL};
        const struct tyd_host_rules star = {.port = 8080, .extra = any};
        ok(tyd_host_allowed(&star, "anything.example"), "'*' allows any Host");
    }
    {
        const struct tyd_host_rules tls = {.port = 443, .tls = true};
        ok(tyd_host_allowed(&tls, "localhost"), "TLS on 443: a Host without a port");
    }
}

static void test_origins(void)
{
    static const char *const extra[] = {"trainyard.test", NULL};
    static const char *const any[] = {"*", NULL};
    const struct tyd_host_rules r = {.port = 8080, .extra = extra};
    const struct tyd_host_rules star = {.port = 8080, .extra = any};
    const struct tyd_host_rules tls = {.port = 8443, .tls = true};
    static const struct {
        const char *origin, *host;
        bool want;
    } c[] = {
        {"http://127.0.0.1:8080", "127.0.0.1:8080", true},
        {"http://localhost:8080", "localhost:8080", true},
        {"HTTP://localhost:8080", "LOCALHOST:8080", true},
        {"http://localhost:8080/", "localhost:8080", true},
        {"http://[::1]:8080", "[::1]:8080", true},
        {"http://trainyard.test:8080", "trainyard.test:8080", true},
        {"http://192.0.2.7:8080", "192.0.2.7:8080", true}, /* the daemon reached at this IP */
        /* a page of any other site: another name, or any IP address with the daemon's port */
        {"http://93.184.216.34:8080", "127.0.0.1:8080", false},
        {"http://10.0.0.1:8080", "127.0.0.1:8080", false},
        {"http://localhost:8080", "127.0.0.1:8080", false},
        {"http://127.0.0.1:8080", "localhost:8080", false},
        {"http://evil.example", "127.0.0.1:8080", false},
        {"http://evil.example:8080", "evil.example:8080", false}, /* Host refused too */
        {"https://127.0.0.1:8080", "127.0.0.1:8080", false},      /* another scheme */
        {"http://127.0.0.1:8081", "127.0.0.1:8080", false},
        {"http://127.0.0.1", "127.0.0.1:8080", false},
        {"null", "127.0.0.1:8080", false},
        {"", "127.0.0.1:8080", false},
        {"http://", "127.0.0.1:8080", false},
        {"http://localhost:8080/path", "localhost:8080", false},
        {"file://", "localhost:8080", false},
        {"http://localhost:8080", NULL, false}, /* no Host: no browser */
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
        ok(tyd_origin_allowed(&r, c[i].origin, c[i].host) == c[i].want,
           "Origin '%s' with Host '%s' %s",
           c[i].origin,
           c[i].host ? c[i].host : "(none)",
           c[i].want ? "allowed" : "refused");
    ok(tyd_origin_allowed(&star, "http://any.name:8080", "any.name:8080"),
       "--allowed-hosts=*: a page of the daemon under any name");
    ok(!tyd_origin_allowed(&star, "http://evil.example:8080", "127.0.0.1:8080"),
       "--allowed-hosts=*: another site's page still refused");
    ok(tyd_origin_allowed(&tls, "https://localhost:8443", "localhost:8443"), "TLS: https origin");
    ok(!tyd_origin_allowed(&tls, "http://localhost:8443", "localhost:8443"),
       "TLS: http origin refused");
    ok(tyd_origin_allowed(&(struct tyd_host_rules){.port = 443, .tls = true},
                          "https://localhost",
                          "localhost:443"),
       "TLS on 443: the default port on either side");
    ok(!tyd_origin_allowed(&r, NULL, "localhost:8080"), "NULL refused");
}

static void test_content_types(void)
{
    ok(tyd_content_type_json("application/json"), "application/json");
    ok(tyd_content_type_json("application/json; charset=UTF-8"), "with charset");
    ok(tyd_content_type_json("Application/JSON;charset=utf-8"), "any case");
    ok(tyd_content_type_json(" application/json "), "blanks around");
    ok(!tyd_content_type_json(NULL), "none");
    ok(!tyd_content_type_json("text/plain"), "text/plain");
    ok(!tyd_content_type_json("application/x-www-form-urlencoded"), "a form");
    ok(!tyd_content_type_json("multipart/form-data; boundary=x"), "a multipart form");
    ok(!tyd_content_type_json("application/jsonx"), "a longer type");
    ok(!tyd_content_type_json("application/json-patch+json"), "another JSON type");
    ok(!tyd_content_type_json(""), "empty");
}

static void test_backoff(void)
{
    for (unsigned i = 0; i <= TYD_BACKOFF_FREE; i++)
        is_int(tyd_backoff_usec(i), 0, "failure %u answered at once", i);
    is_int(tyd_backoff_usec(TYD_BACKOFF_FREE + 1), TYD_BACKOFF_BASE_USEC, "then the base delay");
    is_int(tyd_backoff_usec(TYD_BACKOFF_FREE + 2), 2 * TYD_BACKOFF_BASE_USEC, "doubled");
    is_int(tyd_backoff_usec(TYD_BACKOFF_FREE + 3), 4 * TYD_BACKOFF_BASE_USEC, "doubled again");
    is_int(tyd_backoff_usec(TYD_BACKOFF_FREE + 30), TYD_BACKOFF_MAX_USEC, "capped");
    is_int(tyd_backoff_usec(4000000000u), TYD_BACKOFF_MAX_USEC, "capped for any count");
}

int main(void)
{
    test_hosts();
    test_origins();
    test_content_types();
    test_backoff();
    return done_testing();
}
