/* SPDX-License-Identifier: Apache-2.0
 * test-yaml-load: the YAML loader's refusals say what is wrong in words a user can act on: a
 * tab where YAML wants spaces is named as a tab with its line and column (libyaml says only
 * "found character that cannot start any token"), and a text with no document (an empty
 * file, blank lines, comments) is "empty", not a document with every field missing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "tap.h"
#include "yaml-load.h"

static void refused(const char *text, int want_r, const char *want, const char *name)
{
    json_t *doc = NULL;
    struct ty_error e = {0};
    int r = ty_yaml_parse(text, strlen(text), &doc, &e);

    is_int(r, want_r, "%s: refused", name);
    is_str(r < 0 ? ty_error_msg(&e) : "(accepted)", want, "%s: the message", name);
    ok(!doc, "%s: no document", name);
    json_decref(doc);
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
    refused("\n  \n\n", -ENODATA, "the document is empty", "blank lines");
    refused("# a job\n# to be written\n",
            -ENODATA,
            "the document is empty (only comments)",
            "comments only");
    accepted("a: \"x\ty\"\nb: 'tab\there'\n",
             "{\"a\":\"x\\ty\",\"b\":\"tab\\there\"}",
             "a tab inside a quoted string is text");
    accepted("a: 1   \t# a comment after a tab\n", "{\"a\":\"1\"}", "a tab before a comment");
    accepted("{}\n", "{}", "an explicit empty mapping is a document");
    return done_testing();
}
