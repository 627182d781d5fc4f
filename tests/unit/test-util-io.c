/* SPDX-License-Identifier: Apache-2.0
 * test-util-io.c: the util layer's event loop (loop.h), file helpers (fdutil.h) and error
 * details (error.h). Buffers, strings, parsing, JSON and YAML: test-util.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "fdutil.h"
#include "loop.h"
#include "macro.h"
#include "tap.h"
#include "timeutil.h"

struct loop_log {
    char seen[64];
    size_t n;
    int other_fd;
    struct ty_loop *loop;
    uint64_t cancel_id;
    int stop_after;
};

static void log_event(struct loop_log *lg, char c)
{
    if (lg->n + 1 < sizeof(lg->seen))
        lg->seen[lg->n++] = c;
    lg->seen[lg->n] = '\0';
    if (lg->stop_after && (int)lg->n >= lg->stop_after)
        ty_loop_stop(lg->loop);
}

static void on_timer_a(struct ty_loop *loop, void *data)
{
    log_event(data, 'a');
}
static void on_timer_b(struct ty_loop *loop, void *data)
{
    log_event(data, 'b');
}
static void on_timer_c(struct ty_loop *loop, void *data)
{
    log_event(data, 'c');
}
static void on_timer_x(struct ty_loop *loop, void *data)
{
    log_event(data, 'x');
}

static void on_timer_cancel(struct ty_loop *loop, void *data)
{
    struct loop_log *lg = data;
    ty_loop_cancel_timer(loop, lg->cancel_id);
    log_event(lg, 'k');
}

static void on_read(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct loop_log *lg = data;
    char c;
    if ((revents & POLLIN) && read(fd, &c, 1) == 1)
        log_event(lg, c);
}

/* Reads its byte and removes the other watcher (and itself). */
static void on_read_remove(struct ty_loop *loop, int fd, short revents, void *data)
{
    struct loop_log *lg = data;
    on_read(loop, fd, revents, data);
    ty_loop_remove_fd(loop, lg->other_fd);
    ty_loop_remove_fd(loop, fd);
}

static void test_loop(void)
{
    struct ty_loop *loop = ty_loop_new();
    struct loop_log lg = {.loop = loop};
    int p1[2], p2[2];
    int64_t now;
    uint64_t id;

    if (!ok(pipe(p1) == 0 && pipe(p2) == 0, "loop: pipes"))
        return;
    /* fd watcher fires on a pipe */
    is_int(ty_loop_add_fd(loop, p1[0], POLLIN, on_read, &lg), 0, "loop: add fd");
    is_int(write(p1[1], "1", 1), 1, "loop: write");
    id = ty_loop_add_timer(loop, ty_mono_usec() + 2000000, on_timer_x, &lg); /* safety net */
    is_int(ty_loop_run_once(loop), 0, "loop: run once");
    is_str(lg.seen, "1", "loop: watcher fired with the byte");
    ty_loop_cancel_timer(loop, id);

    /* removing watchers inside a callback: whichever fires first removes the other */
    lg.n = 0;
    lg.seen[0] = '\0';
    ty_loop_add_fd(loop, p1[0], POLLIN, on_read_remove, &lg); /* replaces the watcher */
    ty_loop_add_fd(loop, p2[0], POLLIN, on_read_remove, &lg);
    lg.other_fd = p2[0];
    (void)!write(p1[1], "2", 1);
    (void)!write(p2[1], "3", 1);
    /* p1 was added first, so it is dispatched first and removes p2 before its turn. */
    id = ty_loop_add_timer(loop, ty_mono_usec() + 100000, on_timer_x, &lg);
    ty_loop_run_once(loop);
    is_str(lg.seen, "2", "loop: removed watcher not called in the same round");
    (void)!write(p1[1], "4", 1);
    ty_loop_run_once(loop); /* only the timer is left: waits for it */
    is_str(lg.seen, "2x", "loop: removed watchers stay quiet");
    ty_loop_remove_fd(loop, p1[0]);
    ty_loop_remove_fd(loop, 12345); /* not watched: no-op */

    /* timers fire in deadline order, whatever the order they were added in */
    lg.n = 0;
    lg.seen[0] = '\0';
    lg.stop_after = 3;
    now = ty_mono_usec();
    ty_loop_add_timer(loop, now + 60000, on_timer_c, &lg);
    ty_loop_add_timer(loop, now + 20000, on_timer_a, &lg);
    ty_loop_add_timer(loop, now + 40000, on_timer_b, &lg);
    is_int(ty_loop_run(loop), 0, "loop: run");
    is_str(lg.seen, "abc", "loop: timers fire in order");
    ok(ty_mono_usec() - now >= 60000, "loop: not before their time");

    /* ... also when they are all overdue and fire in the same round */
    lg.n = 0;
    lg.seen[0] = '\0';
    lg.stop_after = 0;
    now = ty_mono_usec();
    ty_loop_add_timer(loop, now - 1000, on_timer_c, &lg);
    ty_loop_add_timer(loop, now - 3000, on_timer_a, &lg);
    ty_loop_add_timer(loop, now - 2000, on_timer_b, &lg);
    ty_loop_run_once(loop);
    is_str(lg.seen, "abc", "loop: overdue timers fire in deadline order");

    /* cancelled timers do not fire, also when cancelled by a timer of the same round */
    lg.n = 0;
    lg.seen[0] = '\0';
    now = ty_mono_usec();
    id = ty_loop_add_timer(loop, now + 1000, on_timer_x, &lg);
    ok(id > 0, "loop: timer ids are positive");
    ty_loop_cancel_timer(loop, id);
    ty_loop_cancel_timer(loop, 0);
    ty_loop_cancel_timer(loop, 999999);
    ty_loop_add_timer(loop, now - 2000, on_timer_cancel, &lg);
    lg.cancel_id = ty_loop_add_timer(loop, now - 1000, on_timer_x, &lg);
    ty_loop_add_timer(loop, now + 10000, on_timer_a, &lg);
    lg.stop_after = 2;
    ty_loop_run(loop);
    is_str(lg.seen, "ka", "loop: cancelled timers never fire");
    ty_loop_cancel_timer(loop, lg.cancel_id); /* already gone: no-op */

    close(p1[0]);
    close(p1[1]);
    close(p2[0]);
    close(p2[1]);
    ty_loop_free(loop);
    ty_loop_free(NULL);
}

/* ---- files ------------------------------------------------------------------------------- */

static void write_file(const char *path, const char *text, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        (void)ty_write_all(fd, text, n);
        close(fd);
    }
}

static void test_files(void)
{
    char tmpl[] = "/tmp/ty-test-util-XXXXXX";
    char *dir = mkdtemp(tmpl);
    struct ty_error err = {0};
    struct stat st;
    char *path, *data = NULL;
    size_t len = 99;

    if (!ok(dir != NULL, "files: temporary directory"))
        return;

    (void)umask(022);
    path = xasprintf("%s/a/b/c", dir);
    is_int(ty_mkdir_p(path, 0755, &err), 0, "mkdir_p: creates a/b/c");
    ok(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "mkdir_p: a/b/c is a directory");
    is_int(st.st_mode & 0777, 0755, "mkdir_p: mode applied");
    is_int(ty_mkdir_p(path, 0755, &err), 0, "mkdir_p: existing path is fine");
    free(path);
    path = xasprintf("%s/a/d/", dir);
    is_int(ty_mkdir_p(path, 0700, &err), 0, "mkdir_p: trailing slash");
    ok(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "mkdir_p: a/d is a directory");
    is_int(st.st_mode & 0777, 0700, "mkdir_p: a/d has its mode");
    free(path);
    path = xasprintf("%s//a//e", dir);
    is_int(ty_mkdir_p(path, 0700, &err), 0, "mkdir_p: doubled slashes");
    free(path);

    path = xasprintf("%s/file", dir);
    write_file(path, "0123456789", 10);
    free(path);
    path = xasprintf("%s/file/sub", dir);
    is_int(ty_mkdir_p(path, 0755, &err), -ENOTDIR, "mkdir_p: a file in the way");
    like(err.msg, "/file", "mkdir_p: message names the path");
    free(path);
    path = xasprintf("%s/file", dir);
    ty_error_clear(&err);
    ok(ty_mkdir_p(path, 0755, &err) < 0, "mkdir_p: an existing file is not a directory");
    like(err.msg, "/file", "mkdir_p: message names the file");

    is_int(ty_read_file(path, 10, &data, &len, &err), 0, "read_file: exactly the limit");
    is_str(data, "0123456789", "read_file: content");
    is_int(len, 10, "read_file: length");
    free(data);
    data = NULL;
    len = 99;
    is_int(ty_read_file(path, 9, &data, &len, &err), -E2BIG, "read_file: over the limit");
    like(err.msg, "larger than 9 bytes", "read_file: message names the limit");
    ok(data == NULL && len == 99, "read_file: nothing returned");
    free(path);
    path = xasprintf("%s/empty", dir);
    write_file(path, "", 0);
    is_int(ty_read_file(path, 0, &data, &len, &err), 0, "read_file: empty file");
    is_str(data, "", "read_file: empty string");
    is_int(len, 0, "read_file: length 0");
    free(data);
    data = NULL;
    free(path);
    path = xasprintf("%s/missing", dir);
    is_int(ty_read_file(path, 10, &data, &len, &err), -ENOENT, "read_file: missing file");
    like(err.msg, "missing", "read_file: message names the path");
    {
        struct ty_file_stamp stamp = {0};
        ok(!ty_file_changed(path, &stamp), "file_changed: a missing file has not changed");
        write_file(path, "ab", 2);
        ok(ty_file_changed(path, &stamp), "file_changed: a new file has");
        ok(!ty_file_changed(path, &stamp), "file_changed: not again until it changes");
        write_file(path, "abc", 3);
        ok(ty_file_changed(path, &stamp), "file_changed: a new size");
    }
    free(path);

    /* a large file read in several chunks */
    path = xasprintf("%s/big", dir);
    data = xmalloc(200000);
    memset(data, 'z', 200000);
    write_file(path, data, 200000);
    free(data);
    is_int(ty_read_file(path, 200000, &data, &len, &err), 0, "read_file: 200000 bytes");
    ok(len == 200000 && data[199999] == 'z' && data[200000] == '\0', "read_file: all of it");
    free(data);
    data = NULL;
    is_int(ty_read_file(path, 199999, &data, &len, &err), -E2BIG, "read_file: one byte over");
    free(path);

    path = xasprintf("rm -rf '%s'", dir);
    (void)!system(path);
    free(path);
}

/* ---- errors ------------------------------------------------------------------------------ */

static int fail_inner(struct ty_error *err)
{
    return ty_error_set(err, ENOENT, "cannot open '%s'", "x.yaml");
}

/* ty_read_file_tail: a file an untrusted program writes. */
static void test_read_tail(void)
{
    char tmpl[] = "/tmp/ty-test-tail-XXXXXX";
    char *dir = mkdtemp(tmpl);
    _cleanup_free_ char *f = NULL, *fifo = NULL, *link = NULL, *big = NULL;
    struct ty_error err = {0};
    char *data = NULL;
    size_t len = 0;
    bool cut = true;

    if (!ok(dir != NULL, "tail: temporary directory"))
        return;
    f = xasprintf("%s/f", dir);
    fifo = xasprintf("%s/fifo", dir);
    link = xasprintf("%s/link", dir);
    big = xasprintf("%s/big", dir);
    is_int(ty_read_file_tail(f, 16, &data, &len, &cut, &err), -ENOENT, "tail: missing is -ENOENT");
    write_file(f, "one\ntwo\n", 8);
    is_int(ty_read_file_tail(f, 16, &data, &len, &cut, &err), 0, "tail: a small file");
    ok(len == 8 && strcmp(data, "one\ntwo\n") == 0 && !cut, "tail: all of it, not cut");
    free(data);
    /* 3 lines of 10 bytes; the last 15 bytes start inside the second: read from the third */
    write_file(big, "aaaaaaaaa\nbbbbbbbbb\nccccccccc\n", 30);
    is_int(ty_read_file_tail(big, 15, &data, &len, &cut, &err), 0, "tail: a larger file");
    ok(cut && len == 10 && strcmp(data, "ccccccccc\n") == 0, "tail: from its first whole line");
    free(data);
    ok(mkfifo(fifo, 0600) == 0, "tail: a FIFO");
    is_int(ty_read_file_tail(fifo, 16, &data, &len, &cut, &err), -EINVAL, "tail: FIFO refused");
    ok(strstr(err.msg, "is not a regular file") != NULL, "tail: says why (%s)", err.msg);
    ok(symlink(f, link) == 0, "tail: a symbolic link");
    is_int(ty_read_file_tail(link, 16, &data, &len, &cut, &err), -ELOOP, "tail: link not followed");
    ok(strstr(err.msg, "is a symbolic link") != NULL, "tail: says why (%s)", err.msg);
    unlink(f);
    unlink(big);
    unlink(fifo);
    unlink(link);
    rmdir(dir);
}

static void test_error(void)
{
    struct ty_error err;
    char longtext[2000];
    int r;

    ty_error_clear(&err);
    is_int(err.code, 0, "error: clear code");
    is_str(err.msg, "", "error: clear message");
    ty_error_clear(NULL);
    is_str(ty_error_msg(&err), strerror(EINVAL), "error: msg of a cleared error");
    is_str(ty_error_msg(NULL), "unknown error", "error: msg of NULL");

    r = fail_inner(&err);
    is_int(r, -ENOENT, "error: set returns -code");
    is_int(err.code, ENOENT, "error: code recorded");
    is_str(ty_error_msg(&err), "cannot open 'x.yaml'", "error: message formatted");
    is_int(ty_error_set(&err, -EPERM, "neg"), -EPERM, "error: negative code taken as |code|");
    is_int(err.code, EPERM, "error: |code| recorded");
    is_int(ty_error_set(&err, 0, "zero"), -EINVAL, "error: code 0 becomes EINVAL");
    is_int(ty_error_set(NULL, E2BIG, "nobody listens"), -E2BIG, "error: NULL err");

    r = fail_inner(&err);
    is_int(ty_error_prefix(&err, r, "job '%s'", "j1"), -ENOENT, "error: prefix returns r");
    is_str(err.msg, "job 'j1': cannot open 'x.yaml'", "error: prefix prepends");
    ty_error_prefix(&err, r, "submit");
    is_str(err.msg, "submit: job 'j1': cannot open 'x.yaml'", "error: prefixes nest");
    is_int(err.code, ENOENT, "error: code kept");

    ty_error_clear(&err);
    is_int(ty_error_prefix(&err, -ENOENT, "reading %s", "f"), -ENOENT, "error: prefix on empty");
    is_str(err.msg, "reading f: No such file or directory", "error: strerror as the tail");
    is_int(err.code, ENOENT, "error: prefix sets the code when none");
    is_int(ty_error_prefix(NULL, -EIO, "x"), -EIO, "error: prefix with NULL err");

    memset(longtext, 'L', sizeof(longtext) - 1);
    longtext[sizeof(longtext) - 1] = '\0';
    ty_error_set(&err, EINVAL, "%s", longtext);
    is_int(strlen(err.msg), TY_ERROR_MSG_MAX - 1, "error: long message truncated");
    ty_error_prefix(&err, -EINVAL, "ctx");
    is_int(strlen(err.msg), TY_ERROR_MSG_MAX - 1, "error: long prefixed message truncated");
    ok(strncmp(err.msg, "ctx: LLL", 8) == 0, "error: prefix kept when truncating");
    ty_error_clear(&err);
    ty_error_set(&err, EINVAL, "tail");
    ty_error_prefix(&err, -EINVAL, "%s", longtext);
    is_int(strlen(err.msg), TY_ERROR_MSG_MAX - 1, "error: long prefix truncated");
}

int main(void)
{
    test_loop();
    test_files();
    test_read_tail();
    test_error();
    return done_testing();
}
