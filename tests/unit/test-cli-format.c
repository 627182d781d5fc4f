/* SPDX-License-Identifier: Apache-2.0
 * test-cli-format.c: the formats the CLI reads and writes outside JSON: the "key = value"
 * config reader (kvconf) and the gcloud-style YAML emitter (yaml-emit), including a
 * round trip of awkward strings through the YAML loader. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "kvconf.h"
#include "tap.h"
#include "yaml-emit.h"
#include "yaml-load.h"

static char dir[] = "/tmp/test-cli-format.XXXXXX";

static char *write_file(const char *name, const char *text, size_t len)
{
    char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0)
        abort();
    return path;
}

/* ---- kvconf ---------------------------------------------------------------------------------- */

static void test_kvconf_ok(void)
{
    static const char text[] = "# trainyard config\n"
                               "\n"
                               "api_endpoint = http://127.0.0.1:9000\n"
                               "   project=alpha   \n"
                               "\t# indented comment\n"
                               "access_token_file = ~/tok # not a comment\n"
                               "quoted = \"  two  words # kept \\\"q\\\" \\\\ \"  \n"
                               "empty =\n"
                               "empty_quoted = \"\"\r\n"
                               "with-dash_1 = a=b=c\n"
                               "project = beta";
    char *path = write_file("ok.conf", text, strlen(text));
    struct ty_kv *kv = NULL;
    struct ty_error e = {0};
    size_t n = 0;
    int r = ty_kvconf_load(path, &kv, &n, &e);

    is_int(r, 0, "kvconf: a valid file loads (%s)", ty_error_msg(&e));
    is_int(n, 8, "kvconf: blank and comment lines are skipped");
    if (n == 8) {
        is_str(kv[0].key, "api_endpoint", "kvconf: first key");
        is_str(kv[0].value, "http://127.0.0.1:9000", "kvconf: value trimmed");
        is_int(kv[0].line, 3, "kvconf: line numbers count every line");
        is_str(kv[1].key, "project", "kvconf: no blanks around '=' needed");
        is_str(kv[1].value, "alpha", "kvconf: trailing blanks trimmed");
        is_str(kv[2].value, "~/tok # not a comment", "kvconf: '#' inside a value is kept");
        is_str(kv[3].value, "  two  words # kept \"q\" \\ ", "kvconf: quoted value and escapes");
        is_str(kv[4].value, "", "kvconf: 'key =' is the empty value");
        is_str(kv[5].value, "", "kvconf: \"\" is the empty value, CR ignored");
        is_str(kv[6].key, "with-dash_1", "kvconf: keys may have - and _ and digits");
        is_str(kv[6].value, "a=b=c", "kvconf: only the first '=' separates");
        is_str(kv[7].value, "beta", "kvconf: repeated key kept in order; last line without LF");
        is_int(kv[7].line, 11, "kvconf: last line number");
    }
    ty_kvconf_free(kv, n);
    free(path);

    path = write_file("empty.conf", "", 0);
    r = ty_kvconf_load(path, &kv, &n, &e);
    ok(r == 0 && n == 0 && kv == NULL, "kvconf: an empty file has no pairs");
    free(path);
    ty_kvconf_free(NULL, 0);
}

static void
expect_bad(const char *name, const char *text, int want, const char *msg, const char *what)
{
    char *path = write_file(name, text, strlen(text));
    struct ty_kv *kv = (struct ty_kv *)1;
    struct ty_error e = {0};
    size_t n = 99;
    int r = ty_kvconf_load(path, &kv, &n, &e);

    is_int(r, want, "kvconf: %s is refused", what);
    ok(kv == NULL && n == 0, "kvconf: %s: nothing returned", what);
    like(ty_error_msg(&e), msg, "kvconf: %s: message", what);
    free(path);
}

static void test_kvconf_errors(void)
{
    struct ty_kv *kv = NULL;
    struct ty_error e = {0};
    size_t n = 0;
    char *path, *big;
    int r;

    expect_bad("noeq.conf",
               "a = 1\nbogus\n",
               -EINVAL,
               "noeq.conf:2: expected '=' after key 'bogus'",
               "a line without '='");
    expect_bad(
        "upper.conf", "\n\nApi = x\n", -EINVAL, "upper.conf:3: invalid key", "an upper-case key");
    expect_bad("badchar.conf",
               "api.endpoint = x\n",
               -EINVAL,
               "badchar.conf:1: invalid character '.' in key 'api'",
               "a '.' in a key");
    expect_bad(
        "nokey.conf", "= x\n", -EINVAL, "nokey.conf:1: expected a key before '='", "a missing key");
    expect_bad("unterminated.conf",
               "a = \"abc\n",
               -EINVAL,
               "unterminated.conf:1: the quoted value of 'a' has no closing '\"'",
               "an unterminated quote");
    expect_bad("after.conf",
               "a = \"abc\" def\n",
               -EINVAL,
               "after.conf:1: unexpected text after the quoted value of 'a'",
               "text after a quoted value");
    expect_bad("escape.conf",
               "a = \"a\\nb\"\n",
               -EINVAL,
               "escape.conf:1: unknown escape",
               "an unknown escape");
    expect_bad("space.conf",
               "my key = x\n",
               -EINVAL,
               "space.conf:1: expected '=' after key 'my'",
               "a key with a blank");

    path = write_file("nul.conf", "a = b\nc = d\0e\n", 13);
    r = ty_kvconf_load(path, &kv, &n, &e);
    is_int(r, -EINVAL, "kvconf: a NUL byte is refused");
    like(ty_error_msg(&e), "nul.conf:2:", "kvconf: NUL byte: names the line");
    free(path);

    path = xasprintf("%s/missing.conf", dir);
    r = ty_kvconf_load(path, &kv, &n, &e);
    is_int(r, -ENOENT, "kvconf: a missing file is -ENOENT");
    free(path);

    r = ty_kvconf_load(dir, &kv, &n, &e);
    is_int(r, -EISDIR, "kvconf: a directory is refused");

    big = xmalloc(TY_KVCONF_MAX_BYTES + 2);
    memset(big, '#', TY_KVCONF_MAX_BYTES + 1);
    big[TY_KVCONF_MAX_BYTES + 1] = '\0';
    path = write_file("big.conf", big, TY_KVCONF_MAX_BYTES + 1);
    r = ty_kvconf_load(path, &kv, &n, &e);
    is_int(r, -EFBIG, "kvconf: a file over 1 MiB is -EFBIG");
    like(ty_error_msg(&e), "big.conf", "kvconf: -EFBIG names the file");
    free(path);
    path = write_file("max.conf", big, TY_KVCONF_MAX_BYTES);
    r = ty_kvconf_load(path, &kv, &n, &e);
    ok(r == 0 && n == 0, "kvconf: a file of exactly 1 MiB (all comment) is read");
    free(path);
    free(big);
}

/* ---- yaml-emit ------------------------------------------------------------------------------ */

static void is_yaml(const char *json, const char *want, const char *what)
{
    json_error_t je;
    json_t *j = json_loads(json, JSON_DECODE_ANY, &je);
    char *got;

    if (!j) {
        ok(0, "yaml: %s: test JSON parses (%s)", what, je.text);
        return;
    }
    got = ty_yaml_dump(j);
    is_str(got, want, "yaml: %s", what);
    free(got);
    json_decref(j);
}

static void test_yaml_layout(void)
{
    is_yaml("{\"state\":\"QUEUED\",\"jobId\":\"j1\"}", "jobId: j1\nstate: QUEUED\n", "keys sorted");
    is_yaml("{\"b\":{\"z\":1,\"a\":{\"c\":true}},\"a\":false}",
            "a: false\nb:\n  a:\n    c: true\n  z: 1\n",
            "nested mappings indent 2");
    is_yaml("{\"args\":[\"--epochs\",\"5\",\"-\"],\"e\":[],\"m\":{}}",
            "args:\n- --epochs\n- '5'\n- '-'\ne: []\nm: {}\n",
            "sequences at the key's column; empty ones inline");
    is_yaml("{\"trials\":[{\"trialId\":\"1\",\"finalMetric\":{\"objectiveValue\":0.5}},"
            "{\"trialId\":\"2\"}]}",
            "trials:\n- finalMetric:\n    objectiveValue: 0.5\n  trialId: '1'\n- trialId: '2'\n",
            "mappings in a sequence");
    is_yaml("[[1,2],[],[\"a\"]]", "- - 1\n  - 2\n- []\n- - a\n", "nested sequences");
    is_yaml("{}", "{}\n", "empty top-level mapping");
    is_yaml("null", "null\n", "top-level null");
    is_yaml("{\"z\":null,\"i\":-42,\"big\":9007199254740993}",
            "big: 9007199254740993\ni: -42\nz: null\n",
            "null and integers");
    is_yaml("{\"n\":\"y\"}", "'n': 'y'\n", "y and n are YAML 1.1 booleans: quoted");
    is_yaml("{\"a\":0.1,\"b\":1.0,\"c\":1e16,\"d\":1.5e-05,\"e\":123456.75,\"f\":-2.5,"
            "\"g\":0.0001,\"h\":1e22}",
            "a: 0.1\nb: 1.0\nc: 1.0e+16\nd: 1.5e-05\ne: 123456.75\nf: -2.5\ng: 0.0001\n"
            "h: 1.0e+22\n",
            "reals as Python's repr");
    is_yaml("{\"k\":\"line1\\nline2\"}", "k: |-\n  line1\n  line2\n", "multi-line: |- block");
    is_yaml("{\"k\":\"a\\n\\nb\\n\"}", "k: |\n  a\n\n  b\n", "block keeping one final newline");
    is_yaml("{\"k\":\"a\\n\\n\"}", "k: |+\n  a\n\n", "block keeping two final newlines");
    is_yaml("{\"k\":\"  indented\\nx\"}",
            "k: |2-\n    indented\n  x\n",
            "block whose first line starts with a blank");
    is_yaml("[\"a\\nb\"]", "- |-\n  a\n  b\n", "block in a sequence");
    is_yaml("{\"o\":{\"k\":\"a\\nb\"}}", "o:\n  k: |-\n    a\n    b\n", "nested block");
    is_yaml("{\"k\":\"trailing \\nspace\"}",
            "k: \"trailing \\nspace\"\n",
            "blank before a line break: double-quoted");
    is_yaml("{\"k\":\"tab\\there\"}", "k: \"tab\\there\"\n", "tab: double-quoted");
    is_yaml("{\"k\":\"bell\\u0007 esc\\u001b cr\\r del\\u007f c1\\u0085\\u0090\"}",
            "k: \"bell\\a esc\\e cr\\r del\\x7F c1\\N\\x90\"\n",
            "control characters escaped");
    is_yaml("{\"k\":\"caf\\u00e9 \\u65e5\\u672c\"}", "k: café 日本\n", "UTF-8 printed as is");
    is_yaml("{\"k\":\"ls\\u2028x\"}", "k: \"ls\\Lx\"\n", "line separator escaped");
    is_yaml("{\"it's\":\"it's\",\"a: b\":1}", "'a: b': 1\nit's: it's\n", "keys quoted when needed");
    is_yaml("{\"k\":\"'quoted'\"}", "k: '''quoted'''\n", "single quotes doubled");
}

/* A failed round trip: what was emitted, one diagnostic line per line. */
static void diag_emitted(const char *text, const char *why)
{
    diag("%s; emitted:", why);
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        diag("  %.*s", (int)n, p);
        p += n + (p[n] ? 1 : 0);
    }
}

/* @s with line breaks and tabs escaped, for a test name (TAP names are one line). */
static const char *show(const char *s)
{
    static char buf[4][128];
    static int k;
    char *b = buf[k++ % 4], *o = b;
    for (; *s && o < b + sizeof(buf[0]) - 3; s++) {
        if (*s == '\n' || *s == '\t') {
            *o++ = '\\';
            *o++ = *s == '\n' ? 'n' : 't';
        } else {
            *o++ = *s;
        }
    }
    *o = '\0';
    return b;
}

static void test_yaml_quoting(void)
{
    static const char *const plain[] = {
        "j1",
        "QUEUED",
        "--epochs",
        "-x",
        "AAAAAAAAAAE=",
        "gs://bucket/path",
        "http://x:80/a",
        "a:b",
        "a#b",
        "n1-standard-4",
        "x 1",
        "1.2.3",
        "v1.0",
        "deadbeef",
        "café",
        ":foo",
        "?x",
    };
    static const char *const quoted[] = {
        "",
        "5",
        "-1",
        "+3",
        "0.1",
        ".5",
        "1.",
        "1e3",
        "1E-3",
        "1_000",
        "0x1F",
        "0o17",
        "0b101",
        "017",
        "190:20:30",
        ".inf",
        "-.Inf",
        ".NaN",
        "true",
        "False",
        "YES",
        "no",
        "on",
        "OFF",
        "y",
        "N",
        "null",
        "~",
        "Null",
        "2026-11-30",
        "2026-11-30T09:00:00Z",
        "2026-11-30T09:00:00.123456Z",
        "2026-1-3 10:00",
        " lead",
        "trail ",
        "a: b",
        "a #b",
        "end:",
        "#x",
        "&a",
        "*a",
        "!tag",
        "|",
        ">",
        "'",
        "\"",
        "%x",
        "@x",
        "`x",
        ",x",
        "[x",
        "]x",
        "{x",
        "}x",
        "-",
        "- x",
        "?",
        "? x",
        ":",
        ": x",
        "---",
        "...",
        "--- x",
        "=",
        "<<",
        "a\nb",
        "a\tb",
    };

    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
        ok(!ty_yaml_needs_quotes(plain[i]), "yaml: '%s' stays plain", show(plain[i]));
    for (size_t i = 0; i < sizeof(quoted) / sizeof(quoted[0]); i++)
        ok(ty_yaml_needs_quotes(quoted[i]), "yaml: '%s' is quoted", show(quoted[i]));

    /* Every string, plain or quoted, reads back as itself (through the YAML loader, which
     * keeps scalars as strings but reads plain null, ~ and empty as null). */
    for (int pass = 0; pass < 2; pass++) {
        const char *const *set = pass ? quoted : plain;
        size_t n = pass ? sizeof(quoted) / sizeof(quoted[0]) : sizeof(plain) / sizeof(plain[0]);
        for (size_t i = 0; i < n; i++) {
            json_t *doc = json_pack(
                "{s:s, s:[s], s:{s:s}}", "k", set[i], "seq", set[i], "map", set[i], set[i]);
            char *text = ty_yaml_dump(doc);
            json_t *back = NULL;
            struct ty_error e = {0};
            int r = ty_yaml_parse(text, strlen(text), &back, &e);
            ok(r == 0 && json_equal(doc, back), "yaml: round trip of '%s'", show(set[i]));
            if (!(r == 0 && json_equal(doc, back)))
                diag_emitted(text, r < 0 ? ty_error_msg(&e) : "reads back differently");
            json_decref(back);
            json_decref(doc);
            free(text);
        }
    }
}

static void test_yaml_roundtrip_blocks(void)
{
    static const char *const texts[] = {
        "line1\nline2",
        "a\n\nb\n",
        "a\n\n",
        "  indented\nx",
        "\nleading break",
        "trailing \nspace",
        "x\n  deeper\ny",
        "tab\tin\nblock",
        "last line\n",
        "\n",
        "ends with blank ",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        json_t *doc = json_pack("{s:s, s:[s,{s:s}]}", "k", texts[i], "s", texts[i], "m", texts[i]);
        char *text = ty_yaml_dump(doc);
        json_t *back = NULL;
        struct ty_error e = {0};
        int r = ty_yaml_parse(text, strlen(text), &back, &e);
        ok(r == 0 && json_equal(doc, back), "yaml: round trip of multi-line text %zu", i);
        if (!(r == 0 && json_equal(doc, back)))
            diag_emitted(text, r < 0 ? ty_error_msg(&e) : "reads back differently");
        json_decref(back);
        json_decref(doc);
        free(text);
    }
}

static void test_yaml_job(void)
{
    static const char job[] =
        "{\"jobId\":\"census_1\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\","
        "\"masterType\":\"n1-standard-4\",\"workerCount\":\"2\",\"masterConfig\":{\"imageUri\":"
        "\"gcr.io/p/img:1\",\"containerCommand\":[\"python\",\"-m\",\"trainer.task\"]},"
        "\"args\":[\"--lr\",\"0.01\"],\"useChiefInTfConfig\":true},\"createTime\":"
        "\"2026-11-30T09:00:00.123456Z\",\"state\":\"RUNNING\",\"labels\":{\"team\":\"vision\","
        "\"trainyard-runtime\":\"process\"},\"etag\":\"AAAAAAAAAAE=\",\"jobPosition\":\"0\"}";
    is_yaml(job,
            "createTime: '2026-11-30T09:00:00.123456Z'\n"
            "etag: AAAAAAAAAAE=\n"
            "jobId: census_1\n"
            "jobPosition: '0'\n"
            "labels:\n"
            "  team: vision\n"
            "  trainyard-runtime: process\n"
            "state: RUNNING\n"
            "trainingInput:\n"
            "  args:\n"
            "  - --lr\n"
            "  - '0.01'\n"
            "  masterConfig:\n"
            "    containerCommand:\n"
            "    - python\n"
            "    - -m\n"
            "    - trainer.task\n"
            "    imageUri: gcr.io/p/img:1\n"
            "  masterType: n1-standard-4\n"
            "  scaleTier: CUSTOM\n"
            "  useChiefInTfConfig: true\n"
            "  workerCount: '2'\n",
            "a Job as gcloud prints it");
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_kvconf_ok();
    test_kvconf_errors();
    test_yaml_layout();
    test_yaml_quoting();
    test_yaml_roundtrip_blocks();
    test_yaml_job();
    {
        char *cmd = xasprintf("rm -rf '%s'", dir);
        if (system(cmd) != 0)
            diag("could not remove %s", dir);
        free(cmd);
    }
    return done_testing();
}
