/* SPDX-License-Identifier: Apache-2.0
 * test-kvconf-edit.c: `trainyard config set|unset`'s file editing (kvconf-edit.h): one
 * setting changed in place, added or removed with comments, blank lines, other keys and CRLF
 * endings kept; values quoted when kvconf needs it (read back by the real reader); and the
 * atomic replacement (mode, no temporary left, a symlink followed, parents created). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "fdutil.h"
#include "kvconf-edit.h"
#include "kvconf.h"
#include "macro.h"
#include "tap.h"

static char dir[] = "/tmp/test-kvconf-edit.XXXXXX";

static char *set(const char *text, const char *key, const char *value)
{
    struct ty_error e = {0};
    char *out = NULL;
    if (ty_kvconf_set(text, key, value, &out, &e) < 0)
        BAIL_OUT("ty_kvconf_set: %s", ty_error_msg(&e));
    return out;
}

static void test_set(void)
{
    const char *orig = "# my settings\n"
                       "\n"
                       "project = old\n"
                       "  api_endpoint=http://a:1   \n"
                       "# trailing comment\n";
    char *t;

    t = set(orig, "project", "new");
    is_str(t,
           "# my settings\n\nproject = new\n  api_endpoint=http://a:1   \n# trailing comment\n",
           "set replaces the line in place, every other byte kept");
    free(t);
    t = set(orig, "access_token", "tok");
    is_str(t,
           "# my settings\n\nproject = old\n  api_endpoint=http://a:1   \n# trailing comment\n"
           "access_token = tok\n",
           "a new key is appended");
    free(t);
    t = set("project = a\nproject_x = b\nproject = c\n# project = d\n", "project", "z");
    is_str(t,
           "project_x = b\nproject = z\n# project = d\n",
           "the last setting is rewritten, earlier ones dropped, longer keys and comments kept");
    free(t);
    t = set("a = 1", "b", "2");
    is_str(t, "a = 1\nb = 2\n", "a last line without a newline gets one before the new line");
    free(t);
    t = set("", "project", "p");
    is_str(t, "project = p\n", "a new file");
    free(t);
    t = set("a = 1\r\nproject = x\r\n", "project", "y");
    is_str(t, "a = 1\r\nproject = y\r\n", "CRLF endings kept");
    free(t);
    t = set("a = 1\r\n", "project", "y");
    is_str(t, "a = 1\r\nproject = y\r\n", "a line added to a CRLF file ends in CRLF");
    free(t);
    t = set("# c\r\na = 1", "project", "y");
    is_str(t, "# c\r\na = 1\r\nproject = y\r\n", "and so does the end of its last line");
    free(t);
    t = set("", "project", " two words \"q\" ");
    is_str(t, "project = \" two words \\\"q\\\" \"\n", "blanks at the ends: quoted, escaped");
    free(t);
    t = set("", "project", "a # b");
    is_str(t, "project = a # b\n", "'#' inside a value needs no quotes");
    free(t);
    {
        struct ty_error e = {0};
        char *out = NULL;
        int r = ty_kvconf_set("", "project", "a\nb", &out, &e);
        is_int(r, -EINVAL, "a line break in a value is refused");
        like(ty_error_msg(&e), "'project'", "the error names the key");
        ok(out == NULL, "nothing returned");
    }
}

static void test_unset(void)
{
    bool removed;
    char *t = ty_kvconf_unset("# c\nproject = a\nother = 1\n project= b\n", "project", &removed);
    is_str(t, "# c\nother = 1\n", "every setting of the key removed, the rest kept");
    ok(removed, "removed is reported");
    free(t);
    t = ty_kvconf_unset("other = 1\n", "project", &removed);
    is_str(t, "other = 1\n", "nothing to remove: the text unchanged");
    ok(!removed, "and not reported");
    free(t);
}

/* Write @text with @key set to @value to a file and read it back with the real reader. */
static void roundtrip(const char *value)
{
    _cleanup_free_ char *path = xasprintf("%s/rt", dir);
    _cleanup_free_ char *text = set("# c\n", "k", value);
    struct ty_error e = {0};
    struct ty_kv *kv = NULL;
    size_t n = 0;

    if (ty_write_file_atomic(path, text, 0600, &e) < 0)
        BAIL_OUT("write: %s", ty_error_msg(&e));
    if (ty_kvconf_load(path, &kv, &n, &e) < 0 || n != 1)
        BAIL_OUT("load: %s", ty_error_msg(&e));
    is_str(kv[0].value, value, "round trip through the reader: [%s]", value);
    ty_kvconf_free(kv, n);
}

static void test_write(void)
{
    _cleanup_free_ char *path = xasprintf("%s/sub/dir/config", dir);
    _cleanup_free_ char *link = xasprintf("%s/link", dir);
    _cleanup_free_ char *text = NULL;
    struct ty_error e = {0};
    struct stat st;
    size_t len;

    is_int(ty_write_file_atomic(path, "a = 1\n", 0600, &e), 0, "written, parents created");
    ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "mode 0600");
    is_int(ty_write_file_atomic(path, "a = 2\n", 0600, &e), 0, "replaced");
    ty_read_file(path, 1024, &text, &len, &e);
    is_str(text, "a = 2\n", "new content");
    ok(symlink("sub/dir/config", link) == 0, "a symlink to it");
    is_int(ty_write_file_atomic(link, "a = 3\n", 0600, &e), 0, "written through the link");
    ok(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the link is still a link");
    free(text);
    ty_read_file(path, 1024, &text, &len, &e);
    is_str(text, "a = 3\n", "its target has the new content");
    {
        _cleanup_free_ char *cmd = xasprintf("ls %s/sub/dir | grep -c . | grep -qx 1", dir);
        ok(system(cmd) == 0, "no temporary file left beside it");
    }
    {
        ok(ty_write_file_atomic("/proc/nonexistent-dir/config", "a\n", 0600, &e) < 0,
           "an unwritable place is an error");
        like(ty_error_msg(&e), "/proc/nonexistent-dir", "naming the place");
    }
    roundtrip("plain");
    roundtrip(" lead");
    roundtrip("trail\t");
    roundtrip("\"quoted\"");
    roundtrip("back\\slash ");
    roundtrip("");
    roundtrip("x # not a comment");
}

int main(void)
{
    if (!mkdtemp(dir))
        BAIL_OUT("mkdtemp");
    test_set();
    test_unset();
    test_write();
    {
        _cleanup_free_ char *cmd = xasprintf("rm -rf %s", dir);
        if (system(cmd) != 0)
            diag("could not remove %s", dir);
    }
    return done_testing();
}
