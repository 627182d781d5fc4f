/* SPDX-License-Identifier: Apache-2.0
 * test-connlimit.c: trainyardd's per-client connection limit (connlimit.h): the client of a
 * connection (an address; on loopback the user owning the client's socket), the counts
 * against the limit, many clients, and threads opening and closing at once. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "connlimit.h"
#include "tap.h"

static struct sockaddr_in v4(const char *addr, unsigned port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    (void)inet_pton(AF_INET, addr, &a.sin_addr);
    return a;
}

static void test_keys(void)
{
    struct sockaddr_in peer = v4("198.18.0.7", 40000), local = v4("198.18.0.1", 8080);
    struct sockaddr_in6 p6 = {.sin6_family = AF_INET6, .sin6_port = htons(40000)};
    char key[TYD_CLIENT_KEY_MAX];

    tyd_client_key((struct sockaddr *)&peer, (struct sockaddr *)&local, key);
    is_str(key, "address 198.18.0.7", "a remote client is its address");
    (void)inet_pton(AF_INET6, "fd00::7", &p6.sin6_addr);
    tyd_client_key((struct sockaddr *)&p6, NULL, key);
    is_str(key, "address fd00::7", "an IPv6 client");
    (void)inet_pton(AF_INET6, "::ffff:198.18.0.7", &p6.sin6_addr);
    tyd_client_key((struct sockaddr *)&p6, NULL, key);
    is_str(key, "address 198.18.0.7", "an IPv4-mapped client is its IPv4 address");
    peer = v4("127.0.0.1", 1);
    local = v4("127.0.0.1", 2);
    tyd_client_key((struct sockaddr *)&peer, (struct sockaddr *)&local, key);
    is_str(key, "address 127.0.0.1", "a loopback client whose socket is not found: its address");
}

/* A real loopback connection: its client is our user. */
static void test_local_user(void)
{
    struct sockaddr_in a = v4("127.0.0.1", 0), peer, local;
    socklen_t al = sizeof(a), pl = sizeof(peer), ll = sizeof(local);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), cfd, sfd;
    char key[TYD_CLIENT_KEY_MAX], want[TYD_CLIENT_KEY_MAX];

    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 4) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &al) < 0)
        BAIL_OUT("cannot listen on 127.0.0.1");
    cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (cfd < 0 || connect(cfd, (struct sockaddr *)&a, sizeof(a)) < 0)
        BAIL_OUT("cannot connect");
    sfd = accept(lfd, NULL, NULL);
    if (sfd < 0 || getpeername(sfd, (struct sockaddr *)&peer, &pl) < 0 ||
        getsockname(sfd, (struct sockaddr *)&local, &ll) < 0)
        BAIL_OUT("cannot accept");
    tyd_client_key((struct sockaddr *)&peer, (struct sockaddr *)&local, key);
    (void)snprintf(want, sizeof(want), "user %u", (unsigned)geteuid());
    is_str(key, want, "a local client is the user owning its socket");
    close(sfd);
    close(cfd);
    close(lfd);
}

static void test_counts(void)
{
    struct tyd_connlimit *cl = tyd_connlimit_new(2);
    char key[32];

    ok(tyd_connlimit_check(cl, "user 0"), "a new client has room");
    ok(tyd_connlimit_try_open(cl, "user 0") && tyd_connlimit_try_open(cl, "user 0"),
       "two connections counted");
    ok(!tyd_connlimit_check(cl, "user 0"), "at the limit: refused");
    ok(!tyd_connlimit_try_open(cl, "user 0"), "a third is not counted");
    is_int(tyd_connlimit_count(cl, "user 0"), 2, "still two open");
    ok(tyd_connlimit_check(cl, "user 1000"), "another client still has room");
    tyd_connlimit_close(cl, "user 0");
    ok(tyd_connlimit_check(cl, "user 0"), "one closed: room again");
    is_int(tyd_connlimit_count(cl, "user 0"), 1, "one open");
    for (int i = 0; i < 100; i++) {
        (void)snprintf(key, sizeof(key), "address 198.18.0.%d", i);
        (void)tyd_connlimit_try_open(cl, key);
    }
    for (int i = 0; i < 100; i += 2) {
        (void)snprintf(key, sizeof(key), "address 198.18.0.%d", i);
        tyd_connlimit_close(cl, key);
    }
    {
        bool right = true;
        for (int i = 0; i < 100; i++) {
            (void)snprintf(key, sizeof(key), "address 198.18.0.%d", i);
            right &= tyd_connlimit_count(cl, key) == (unsigned)(i % 2);
        }
        ok(right, "100 clients: the closed ones gone, the others counted");
    }
    is_int(tyd_connlimit_count(cl, "user 0"), 1, "and the first kept its count");
    tyd_connlimit_close(cl, "nobody");
    is_int(tyd_connlimit_count(cl, "nobody"), 0, "closing an unknown client changes nothing");
    tyd_connlimit_free(cl);
    tyd_connlimit_free(NULL);
}

static void *churn(void *arg)
{
    struct tyd_connlimit *cl = arg;
    for (int i = 0; i < 20000; i++) {
        const char *key = i % 3 ? "user 0" : "user 1";
        if (tyd_connlimit_try_open(cl, key))
            tyd_connlimit_close(cl, key);
    }
    return NULL;
}

/* 4 threads opening 50 connections of one client each, against a limit of 100: exactly 100
 * are counted, however the threads interleave. */
static void *burst(void *arg)
{
    struct tyd_connlimit *cl = arg;
    size_t n = 0;
    for (int i = 0; i < 50; i++)
        n += tyd_connlimit_try_open(cl, "user 7");
    return (void *)n;
}

static void test_threads(void)
{
    struct tyd_connlimit *cl = tyd_connlimit_new(1000);
    pthread_t th[4];

    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, churn, cl);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    ok(tyd_connlimit_count(cl, "user 0") == 0 && tyd_connlimit_count(cl, "user 1") == 0,
       "4 threads opening and closing: every count back to 0");
    tyd_connlimit_free(cl);
    cl = tyd_connlimit_new(100);
    {
        size_t total = 0;
        for (int i = 0; i < 4; i++)
            pthread_create(&th[i], NULL, burst, cl);
        for (int i = 0; i < 4; i++) {
            void *n;
            pthread_join(th[i], &n);
            total += (size_t)n;
        }
        ok(total == 100 && tyd_connlimit_count(cl, "user 7") == 100,
           "a burst from 4 threads: exactly the limit counted (%zu)",
           total);
    }
    tyd_connlimit_free(cl);
}

int main(void)
{
    test_keys();
    test_local_user();
    test_counts();
    test_threads();
    return done_testing();
}
