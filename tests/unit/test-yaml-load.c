/* SPDX-License-Identifier: Apache-2.0
 * test-yaml-load: the YAML loader's refusals say what is wrong in words a user can act on: a
 * tab where YAML wants spaces is named as a tab with its line and column (libyaml says only
 * "found character that cannot start any token"), and a text with no document (an empty
 * file, blank lines, comments) is "empty", not a document with every field missing; deep
 * nesting is refused at once, a NUL in a key is refused, and a byte that is not UTF-8 is
 * placed on its own line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "tap.h"
#include "yaml-load.h"

static void refused_n(const char *text, size_t len, int want_r, const char *want, const char *name)
{
    json_t *doc = NULL;
    struct ty_error e = {0};
    int r = ty_yaml_parse(text, len, &doc, &e);

    is_int(r, want_r, "%s: refused", name);
    is_str(r < 0 ? ty_error_msg(&e) : "(accepted)", want, "%s: the message", name);
    ok(!doc, "%s: no document", name);
    json_decref(doc);
}

static void refused(const char *text, int want_r, const char *want, const char *name)
{
    refused_n(text, strlen(text), want_r, want, name);
}

/* "a: " and @depth - 1 nested flow sequences: a document @depth levels deep. */
static char *nested(size_t depth)
{
    char *s = malloc(2 * depth + 8), *p = s;

    memcpy(p, "a: ", 3);
    p += 3;
    for (size_t i = 1; i < depth; i++)
        *p++ = '[';
    for (size_t i = 1; i < depth; i++)
        *p++ = ']';
    memcpy(p, "\n", 2);
    return s;
}

static void accepted(const char *text, const char *want_json, const char *name)
{
    json_t *doc = NULL;
    struct ty_error e = {0};
    int r = ty_yaml_parse(text, strlen(text), &doc, &e);
    char *got = r == 0 ? ty_json_compact(doc) : NULL;

    is_str(got ? got : ty_error_msg(&e), want_json, "%s", name);
    free(got);
    json_decref(doc);
}

int main(void)
{
    refused("trainingInput:\n\tscaleTier: BASIC\n",
            -EINVAL,
            "invalid YAML: a tab character at line 2 column 1: YAML indents with spaces",
            "a tab indenting a mapping");
    refused("a: 1\nb:\n  - x\n\t- y\n",
            -EINVAL,
            "invalid YAML: a tab character at line 4 column 1: YAML indents with spaces",
            "a tab indenting a sequence item");
    refused("a: [1,\n  2\n",
            -EINVAL,
            "invalid YAML at line 3 column 1: did not find expected ',' or ']'",
            "another syntax error keeps libyaml's words");
    refused("", -ENODATA, "the document is empty", "an empty text");
    refused("---\n", -ENODATA, "the document is empty", "a document marker alone");
    refused("--- # a job\n...\n", -ENODATA, "the document is empty", "an empty document");
    refused("\n  \n\n", -ENODATA, "the document is empty", "blank lines");
    refused("# a job\n# to be written\n",
            -ENODATA,
            "the document is empty (only comments)",
            "comments only");
    /* YAML 1.1's merge key (gcloud's PyYAML takes it): a mapping's own keys win wherever they
     * stand, then the merged mappings in their order; "<<" quoted is an ordinary key. */
    accepted("m: &m {imageUri: i, acceleratorConfig: {count: 1}}\n"
             "w: {imageUri: j, <<: *m}\n",
             "{\"m\":{\"imageUri\":\"i\",\"acceleratorConfig\":{\"count\":\"1\"}},"
             "\"w\":{\"imageUri\":\"j\",\"acceleratorConfig\":{\"count\":\"1\"}}}",
             "a merge key: the mapping's own keys win");
    accepted("a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc: {<<: [*a, *b], z: 3}\n",
             "{\"a\":{\"x\":\"1\",\"y\":\"1\"},\"b\":{\"y\":\"2\",\"z\":\"2\"},"
             "\"c\":{\"z\":\"3\",\"x\":\"1\",\"y\":\"1\"}}",
             "a merge key of a list: the earlier mapping wins");
    accepted("a: {'<<': x}\n", "{\"a\":{\"<<\":\"x\"}}", "a quoted << is a key");
    refused("a: {<<: x}\n",
            -EINVAL,
            "YAML: line 1: a merge key (<<) takes a mapping or a list of them",
            "a merge key of a scalar");
    accepted("a: \"x\ty\"\nb: 'tab\there'\n",
             "{\"a\":\"x\\ty\",\"b\":\"tab\\there\"}",
             "a tab inside a quoted string is text");
    accepted("a: 1   \t# a comment after a tab\n", "{\"a\":\"1\"}", "a tab before a comment");
    accepted("{}\n", "{}", "an explicit empty mapping is a document");

    /* Nesting is bounded before libyaml's loader reads it (its time grows with the square of
     * the depth: 100,000 levels took minutes). */
    char *deep = nested(64);
    ok(strstr(deep, "[[") && ty_yaml_parse(deep, strlen(deep), &(json_t *){NULL}, NULL) == 0,
       "64 levels are read");
    free(deep);
    deep = nested(65);
    refused(deep, -EINVAL, "YAML: line 1: nesting deeper than 64 levels", "65 levels");
    free(deep);
    deep = nested(100000);
    refused(deep, -EINVAL, "YAML: line 1: nesting deeper than 64 levels", "100,000 levels");
    free(deep);

    refused("a: 1\n\"workerCount\\0zzz\": 3\n",
            -EINVAL,
            "YAML: line 2: a key holds a NUL character",
            "a NUL inside a key, escaped (it would be cut there)");
    static const char raw_nul[] = "a: 1\nwork\0zzz: 3\n";
    refused_n(raw_nul,
              sizeof(raw_nul) - 1,
              -EINVAL,
              "invalid YAML at line 2 column 5: control characters are not allowed",
              "a NUL byte in the text: its own line and column");
    refused("a: 1\nb: \xc3\xa9\nc: x\xff\n",
            -EINVAL,
            "invalid YAML at line 3 column 5: invalid leading UTF-8 octet",
            "a byte that is not UTF-8: its own line and column");
    refused("k: \"\xc3\xa9\xc3\xa9\xc3\xa9\t\"\n@\n",
            -EINVAL,
            "invalid YAML at line 2 column 1: found character that cannot start any token",
            "after text that is not ASCII, a tab elsewhere is not blamed");
    refused("# \xc3\xa9t\xc3\xa9\na:\n\tb: 1\n",
            -EINVAL,
            "invalid YAML: a tab character at line 3 column 1: YAML indents with spaces",
            "after text that is not ASCII, a tab is still found");
    return done_testing();
}
