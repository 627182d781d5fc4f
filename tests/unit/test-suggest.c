/* SPDX-License-Identifier: Apache-2.0
 * test-suggest.c: the edit distance behind "did you mean" (suggest.h): known distances
 * (transpositions count 1, case is ignored, OSA is not full Damerau), the threshold relative
 * to the word's length, the choice among candidates, and that a long flag getopt_long took
 * from an abbreviation is recognised (ty_option_typed_in_full). */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <string.h>

#include "suggest.h"
#include "tap.h"

static void test_distance(void)
{
    is_int(ty_edit_distance("", ""), 0, "empty strings");
    is_int(ty_edit_distance("abc", ""), 3, "to empty: deletions");
    is_int(ty_edit_distance("", "abcd"), 4, "from empty: insertions");
    is_int(ty_edit_distance("kitten", "sitting"), 3, "kitten/sitting (Levenshtein's example)");
    is_int(ty_edit_distance("sumbit", "submit"), 1, "a swap of neighbours is one edit");
    is_int(ty_edit_distance("job-dirr", "job-dir"), 1, "one insertion");
    is_int(ty_edit_distance("masterconfig", "masterConfig"), 0, "case is ignored");
    is_int(ty_edit_distance("CA", "ABC"), 3, "OSA, not Damerau: no edit of a swapped pair");
    is_int(ty_edit_distance("abcdef", "badcfe"), 3, "three swaps");
    is_int(ty_edit_distance("standard_gpu", "standard-gpu"), 1, "a substitution");
    {
        char big[TY_SUGGEST_MAX_LEN + 2];
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        ok(ty_edit_distance(big, "a") == SIZE_MAX, "a word over the maximum length: SIZE_MAX");
        big[TY_SUGGEST_MAX_LEN] = '\0';
        is_int(ty_edit_distance(big, big), 0, "a word of the maximum length is compared");
    }
}

static void test_threshold(void)
{
    is_int(ty_suggest_threshold(""), 1, "at least 1");
    is_int(ty_suggest_threshold("ls"), 1, "short word: 1");
    is_int(ty_suggest_threshold("sumbit"), 2, "six letters: 2");
    is_int(ty_suggest_threshold("masterconfig"), 4, "twelve letters: 4");
}

static void test_among(void)
{
    static const char *const verbs[] = {
        "submit", "describe", "list", "cancel", "stream-logs", "update", NULL};
    static const char *const tiers[] = {
        "BASIC", "BASIC_GPU", "STANDARD_1", "PREMIUM_1", "CUSTOM", NULL};
    struct ty_suggest s;

    is_str(ty_suggest_among("sumbit", verbs), "submit", "sumbit -> submit");
    is_str(ty_suggest_among("descirbe", verbs), "describe", "descirbe -> describe");
    is_str(ty_suggest_among("lst", verbs), "list", "lst -> list");
    is_str(ty_suggest_among("stream-log", verbs), "stream-logs", "stream-log -> stream-logs");
    ok(ty_suggest_among("frobnicate", verbs) == NULL, "nothing near frobnicate");
    ok(ty_suggest_among("xy", verbs) == NULL, "a short word far from all: nothing");
    ok(ty_suggest_among("submit", verbs) == NULL, "the word itself is no suggestion");
    is_str(ty_suggest_among("custom", tiers), "CUSTOM", "a case difference is suggested");
    is_str(ty_suggest_among("STANDARD1", tiers), "STANDARD_1", "STANDARD1 -> STANDARD_1");
    is_str(ty_suggest_among("BASIC_GPUS", tiers), "BASIC_GPU", "the nearest of two near ones");
    ok(ty_suggest_among("x", NULL) == NULL, "no candidates");
    ok(ty_suggest_among("ab", (const char *const[]){"xy", NULL}) == NULL,
       "every character replaced is not a near miss");

    ty_suggest_init(&s, "job-dirr");
    ty_suggest_add(&s, "job-id");
    ty_suggest_add(&s, NULL);
    ty_suggest_add(&s, "job-dir");
    ty_suggest_add(&s, "job-dirs");
    is_str(ty_suggest_best(&s), "job-dir", "fed one by one: the first of the nearest");
}

/* Run getopt_long over @argv (NULL-terminated) with a small table and return what
 * ty_option_typed_in_full says of the first option it returns. */
static int typed_in_full(char **argv, struct ty_error *err)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"dry-run", no_argument, NULL, 'd'},
        {"job-dir", required_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    int argc = 0, li = -1, c;

    while (argv[argc])
        argc++;
    optind = 1;
    opterr = 0;
    c = getopt_long(argc, argv, ":", opts, &li);
    if (c == -1 || c == '?' || c == ':')
        return 1;
    return ty_option_typed_in_full(opts, li, argv, optind, optarg, "flag", err);
}

static void test_typed_in_full(void)
{
    struct ty_error e = {0};

    ok(typed_in_full((char *[]){"p", "--config", "f", NULL}, &e) == 0, "--config f: in full");
    ok(typed_in_full((char *[]){"p", "--config=f", NULL}, &e) == 0, "--config=f: in full");
    ok(typed_in_full((char *[]){"p", "--dry-run", NULL}, &e) == 0, "--dry-run: in full");
    ok(typed_in_full((char *[]){"p", "--config", "--conf", NULL}, &e) == 0,
       "a value that looks like an abbreviation is a value");
    ok(typed_in_full((char *[]){"p", "--conf", "f", NULL}, &e) == -EINVAL,
       "--conf f: an abbreviation");
    is_str(ty_error_msg(&e),
           "unknown flag '--conf' (did you mean '--config'? flags are not abbreviated)",
           "the message names the flag meant");
    ok(typed_in_full((char *[]){"p", "--job=d", NULL}, &e) == -EINVAL, "--job=d: an abbreviation");
    is_str(ty_error_msg(&e),
           "unknown flag '--job' (did you mean '--job-dir'? flags are not abbreviated)",
           "the value after = is not part of the name");
    ok(typed_in_full((char *[]){"p", "--dry", NULL}, &e) == -EINVAL, "--dry: an abbreviation");
    ok(typed_in_full((char *[]){"p", "-x", NULL}, &e) == 1, "a short option is getopt's to refuse");
}

int main(void)
{
    test_distance();
    test_threshold();
    test_among();
    test_typed_in_full();
    return done_testing();
}
