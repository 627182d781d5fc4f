/* SPDX-License-Identifier: Apache-2.0
 * test-ere: the linear-time regular expressions of ere.h. Hand-checked matches and errors,
 * the limits at their edges, patterns that take glibc's regcomp minutes (here instant), and
 * thousands of random patterns and texts compared with glibc's regcomp/regexec, the
 * reference for POSIX ERE (kept small enough that glibc answers quickly). */
#include <errno.h>
#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ere.h"
#include "macro.h"
#include "tap.h"

static bool search(const char *pat, const char *text, size_t n)
{
    struct ty_ere *re = NULL;
    char msg[160] = "";
    bool m;

    if (ty_ere_compile(pat, 0, &re, msg, sizeof(msg)) != 0) {
        diag("'%s' does not compile: %s", pat, msg);
        return false;
    }
    m = ty_ere_search(re, text, n);
    ty_ere_free(re);
    return m;
}

static void test_matches(void)
{
    static const struct {
        const char *pat, *text;
        bool match;
    } c[] = {
        {"", "", true},
        {"", "abc", true},
        {"abc", "xxabcxx", true},
        {"abc", "ab", false},
        {"^abc", "abcd", true},
        {"^abc", "xabc", false},
        {"abc$", "xabc", true},
        {"abc$", "abcx", false},
        {"^$", "", true},
        {"^$", "a", false},
        {"a^b", "a^b", false}, /* '^' is an anchor anywhere */
        {"a\\^b", "a^b", true},
        {"a.c", "abc", true},
        {"a.c", "a\nc", true}, /* no REG_NEWLINE: '.' matches a newline */
        {"a.c", "ac", false},
        {"colou?r", "color", true},
        {"colou?r", "colour", true},
        {"colou?r", "colouur", false},
        {"ab*c", "ac", true},
        {"ab*c", "abbbbc", true},
        {"ab+c", "ac", false},
        {"ab+c", "abbc", true},
        {"^a{3}$", "aaa", true},
        {"^a{3}$", "aa", false},
        {"^a{2,3}$", "aaaa", false},
        {"^a{2,}$", "aaaaaaa", true},
        {"^a{,2}$", "aa", true},
        {"^a{,2}$", "aaa", false},
        {"^a{,}$", "aaaa", true},
        {"^(ab){2}$", "abab", true},
        {"^(ab){0}c$", "c", true},
        {"^(ab|cd)+$", "abcdab", true},
        {"^(ab|cd)+$", "abce", false},
        {"^(a|)+$", "aaa", true},
        {"^()+$", "", true},
        {"^(a*)*$", "aaaa", true},
        {"^(a*)*b$", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaac", false},
        {"^(a+)+$", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", false},
        {"a|b|c", "zzc", true},
        {"^(|a)$", "", true},
        {"a||b", "x", true}, /* an empty alternative matches anywhere */
        {"a+?", "a", true},  /* stacked: (a+)? */
        {"^a**$", "aaa", true},
        {"^a{1}{2}$", "aa", true},
        {"a)b", "a)b", true}, /* a ')' with no '(' is itself */
        {"[abc]", "xxb", true},
        {"[abc]", "xyz", false},
        {"[^abc]", "abc", false},
        {"[^abc]", "abcd", true},
        {"^[a-c]+$", "abcba", true},
        {"^[a-c]+$", "abcd", false},
        {"[]a]", "]", true},
        {"[^]a]", "]", false},
        {"[a-]", "-", true},
        {"^[%--]$", ",", true},
        {"^[[:digit:]]+$", "2026", true},
        {"^[[:digit:]]+$", "20x6", false},
        {"^[[:alpha:][:digit:]_]+$", "census_1", true},
        {"[[:space:]]", "a\tb", true},
        {"[[:upper:]]", "abc", false},
        {"[[:punct:]]", "a.b", true},
        {"[[:xdigit:]]", "g", false},
        {"[[:cntrl:]]", "\x7f", true},
        {"^[[.-.]]$", "-", true},
        {"^[[.a.]-c]$", "b", true},
        {"^[[=e=]]$", "e", true},
        {"[\\]", "\\", true}, /* a backslash is itself in brackets */
        {"\\w+", "!!_!!", true},
        {"^\\W$", "a", false},
        {"\\s", "a b", true},
        {"\\S", "   ", false},
        {"^\\d{4}-\\d{2}$", "2026-12", true},
        {"\\d", "abc", false},
        {"^\\D+$", "abc", true},
        {"\\bfoo\\b", "a foo b", true},
        {"\\bfoo\\b", "afoob", false},
        {"\\Boo\\B", "afoob", true},
        {"\\<foo", "x foo", true},
        {"\\<foo", "xfoo", false},
        {"foo\\>", "foo_", false},
        {"foo\\>", "foo.", true},
        /* an anchor that failed at one position holds at a later one (a search that skipped
         * to it once kept the failure) */
        {"x?\\<job", "x job", true},
        {"a?\\<b", "a b", true},
        {"(\\<a)+\\Bb", "a ab", true},
        {"(a|)\\>\\W",
         "ac \xff"
         "aa",
         true},
        {"\\`ab", "ab", true},
        {"ab\\'", "xab", true},
        {"ab\\'", "abx", false},
        {"\\.", "a.b", true},
        {"\\.", "ab", false},
        {"a\\{1\\}", "a{1}", true},
        {"\\n", "n", true}, /* other escaped characters are themselves */
        /* UTF-8: '.' and sets take a whole character */
        {"^.$", "\xc3\xa9", true},
        {"^..$", "\xc3\xa9", false},
        {"^[\xc3\xa0-\xc3\xbf]+$", "\xc3\xa9\xc3\xa0", true},
        {"^[^a]$", "\xe2\x82\xac", true},
        {"\xe2\x82\xac", "10 \xe2\x82\xac", true},
        {"^.$", "\xff", true}, /* a byte outside UTF-8 is one character */
        {"\xff", "a\xff", true},
        {"^[\xff]$", "\xff", true},
        {"^[\xff]$", "\xc3\xbf", false},
    };

    for (size_t i = 0; i < TY_ARRAY_SIZE(c); i++)
        is_int(search(c[i].pat, c[i].text, strlen(c[i].text)),
               c[i].match,
               "'%s' %s '%s'",
               c[i].pat,
               c[i].match ? "matches" : "does not match",
               c[i].text);
    /* the text is n bytes, NULs included */
    ok(search("a.b", "xa\0b", 4), "a NUL in the text is a character");
    ok(!search("b$", "ab\0", 3), "the text ends at n, not at a NUL");
}

static void test_errors(void)
{
    static const struct {
        const char *pat;
        int rc;
        const char *msg;
    } c[] = {
        {"(ab", -EINVAL, "Unmatched ( or \\("},
        {"((a)", -EINVAL, "Unmatched ( or \\("},
        {"[ab", -EINVAL, "Unmatched [, [^, [:, [., or [="},
        {"[]", -EINVAL, "Unmatched ["},
        {"[[:alpha:]", -EINVAL, "Unmatched ["},
        {"[[:alpha]", -EINVAL, "Unmatched ["},
        {"[[:foo:]]", -EINVAL, "Invalid character class name"},
        {"[[:word:]]", -EINVAL, "Invalid character class name"},
        {"[z-a]", -EINVAL, "Invalid range end"},
        {"[a-z-9]", -EINVAL, "Invalid range end"},
        {"[[:alpha:]-z]", -EINVAL, "Invalid range end"},
        {"[[=a=]-z]", -EINVAL, "Invalid range end"},
        {"[[.ab.]]", -EINVAL, "Invalid collation character"},
        {"[[..]]", -EINVAL, "Invalid collation character"},
        {"*a", -EINVAL, "Invalid preceding regular expression"},
        {"a|*b", -EINVAL, "Invalid preceding regular expression"},
        {"(+a)", -EINVAL, "Invalid preceding regular expression"},
        {"{1}", -EINVAL, "Invalid preceding regular expression"},
        {"^*", -EINVAL, "Invalid preceding regular expression"},
        {"a$?", -EINVAL, "Invalid preceding regular expression"},
        {"\\b+", -EINVAL, "Invalid preceding regular expression"},
        {"a{2", -EINVAL, "Unmatched \\{"},
        {"a{x}", -EINVAL, "Invalid content of \\{\\}"},
        {"a{3,2}", -EINVAL, "Invalid content of \\{\\}"},
        {"a{ ,2}", -EINVAL, "Invalid content of \\{\\}"},
        {"a{32768}", -EINVAL, "Regular expression too big"},
        {"a\\", -EINVAL, "Trailing backslash"},
        {"(a)\\1", -E2BIG, "uses a back-reference (\\1), which is not supported"},
        {"a{1001}", -E2BIG, "is too large: with its repetitions written out it is over 1000"},
        {"(a{40}){50}", -E2BIG, "is too large"},
        {"(a|b|c|(d*e?)+){67}", -E2BIG, "is too large"},
        {"(a){0,1001}", -E2BIG, "is too large"},
        {"(((((((((((((((((((((((((((((((((a)))))))))))))))))))))))))))))))))",
         -E2BIG,
         "nests parentheses deeper than 32"},
    };

    for (size_t i = 0; i < TY_ARRAY_SIZE(c); i++) {
        struct ty_ere *re = NULL;
        char msg[160] = "";
        int rc = ty_ere_compile(c[i].pat, 0, &re, msg, sizeof(msg));
        is_int(rc, c[i].rc, "'%s' is refused", c[i].pat);
        like(msg, c[i].msg, "'%s': the reason", c[i].pat);
        ok(re == NULL, "'%s': nothing returned", c[i].pat);
    }
}

static void test_limits(void)
{
    static const char *const fit[] = {
        "a{1000}",
        "(a|b|c|(d*e?)+){66}",
        "(((((((((((((((((((((((((((((((([cr]))))))))))))))))))))))))))))))))",
        "a+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++",
        "(){0,1001}", /* any number of nothing is nothing */
        "(){32767}",
    };
    for (size_t i = 0; i < TY_ARRAY_SIZE(fit); i++) {
        struct ty_ere *re = NULL;
        char msg[160] = "";
        is_int(ty_ere_compile(fit[i], 0, &re, msg, sizeof(msg)),
               0,
               "'%.30s' is within the limits",
               fit[i]);
        ty_ere_free(re);
    }
    ok(search("^(a|b|c|(d*e?)+){66}$", "ddddeabc", 8), "the largest pattern matches");
}

/* Patterns on which glibc's regcomp is exponential (each of these takes it from seconds to
 * minutes) or its matching backtracks: here each compiles and searches at once. */
static void test_pathological(void)
{
    static const char *const pats[] = {
        "()++++++++++++++++++++++++++++++++++++++++++++++++++++",
        "^:pr+++++()+++++++++++++++++++++++++",
        "(\\b|\\<|\\>|^|$)*(\\b|\\<|\\>|^|$)*(\\b|\\<|\\>|^|$)*(\\b|\\<|\\>|^|$)*",
        "(a|)+++++++++++++++++++++++++++++++++",
        "^(a*)*(a*)*(a*)*(a*)*(a*)*(a*)*b$",
        "((((((((((a*)*)*)*)*)*)*)*)*)*)*c",
    };
    char text[4001];

    memset(text, 'a', sizeof(text) - 1);
    text[sizeof(text) - 1] = '\0';
    for (size_t i = 0; i < TY_ARRAY_SIZE(pats); i++) {
        struct ty_ere *re = NULL;
        char msg[160] = "";
        int rc = ty_ere_compile(pats[i], 0, &re, msg, sizeof(msg));
        ok(rc == 0, "'%.40s' compiles (%s)", pats[i], rc ? msg : "ok");
        if (re)
            (void)ty_ere_search(re, text, sizeof(text) - 1);
        ty_ere_free(re);
    }
    ok(!search("^(a*)*(a*)*(a*)*(a*)*(a*)*(a*)*b$", text, sizeof(text) - 1),
       "4000 a's and no b: no match, in linear time");

    /* a budget of steps: the same answer while it lasts, "no" and 0 left when it runs out */
    struct ty_ere *re = NULL;
    char why[160];
    uint64_t steps = 1000000;
    ok(ty_ere_compile("a{3}$", 0, &re, why, sizeof(why)) == 0, "budget: compiles");
    bool found = ty_ere_search_budget(re, text, sizeof(text) - 1, &steps);
    ok(found && steps > 0 && steps < 1000000,
       "budget: a match, some steps spent (%llu left)",
       (unsigned long long)steps);
    steps = 100;
    ok(!ty_ere_search_budget(re, text, sizeof(text) - 1, &steps) && steps == 0,
       "budget: 100 steps are not enough for 4000 characters");
    ty_ere_free(re);

    /* a bracket of 480 separate characters, repeated 480 times: each step looks a character up
     * among 480 ranges by binary search, not one by one (2,000 characters of text here) */
    struct ty_buf b = TY_BUF_INIT;
    ty_buf_puts(&b, "[^");
    for (unsigned cp = 0x100; cp < 0x100 + 960; cp += 2)
        ty_buf_printf(&b, "%c%c", (char)(0xc0 | (cp >> 6)), (char)(0x80 | (cp & 0x3f)));
    ty_buf_puts(&b, "]{480}x");
    for (size_t i = 0; i + 2 <= sizeof(text) - 1; i += 2)
        text[i] = (char)0xc3, text[i + 1] = (char)0xbc; /* ü */
    ok(!search(ty_buf_str(&b), text, sizeof(text) - 1), "a large bracket, repeated: no match");
    text[sizeof(text) - 2] = 'x';
    ok(search(ty_buf_str(&b), text, sizeof(text) - 1), "a large bracket, repeated: a match");
    ty_buf_release(&b);
}

/* ---- compared with glibc ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

static void gen_atom(struct ty_buf *b, int depth);
static bool anchors_anywhere; /* gen_atom may put anchors inside groups (no glibc then) */

/* A random expression over a small alphabet, every construct of ERE included; anchors only
 * outside groups, where a repetition of one is an error (glibc's regcomp is exponential in
 * anchors under repetitions). */
static void gen_expr(struct ty_buf *b, int depth)
{
    int pieces = 1 + (int)rnd(3);

    for (int i = 0; i < pieces; i++) {
        gen_atom(b, depth);
        switch (rnd(10)) {
        case 0:
            ty_buf_puts(b, "*");
            break;
        case 1:
            ty_buf_puts(b, "+");
            break;
        case 2:
            ty_buf_puts(b, "?");
            break;
        case 3: {
            static const char *const iv[] = {"{2}", "{0,2}", "{1,}", "{,2}", "{0}", "{1,3}"};
            ty_buf_puts(b, iv[rnd(TY_ARRAY_SIZE(iv))]);
            break;
        }
        default:
            break;
        }
    }
    if (depth < 3 && rnd(5) == 0) {
        ty_buf_puts(b, "|");
        gen_expr(b, depth + 1);
    }
}

static void gen_atom(struct ty_buf *b, int depth)
{
    static const char *const atoms[] = {
        "a", "b", "c",   ".",   "[ab]", "[^a]", "[a-c]", "[[:digit:]]", "[]a]",     "[^[:alpha:]]",
        "-", "1", "\\w", "\\W", "\\s",  "\\.",  " ",     "[-b]",        "[[.-.]a]",
    };
    static const char *const anchors[] = {"^", "$", "\\b", "\\B", "\\<", "\\>"};
    unsigned k = rnd(20);

    if (k < 3 && depth < 3) {
        ty_buf_puts(b, "(");
        gen_expr(b, depth + 1);
        ty_buf_puts(b, ")");
    } else if ((k == 3 && depth == 0) || (k >= 3 && k <= 6 && anchors_anywhere)) {
        ty_buf_puts(b, anchors[rnd(TY_ARRAY_SIZE(anchors))]);
    } else {
        ty_buf_puts(b, atoms[rnd(TY_ARRAY_SIZE(atoms))]);
    }
}

static void test_against_glibc(void)
{
    static const char alphabet[] = "abc1- ._";
    size_t patterns = 0, checks = 0, differ = 0;

    for (int i = 0; i < 3000; i++) {
        struct ty_buf b = TY_BUF_INIT;
        struct ty_ere *re = NULL;
        char msg[160];
        regex_t g;
        int grc, rc;

        gen_expr(&b, 0);
        const char *pat = ty_buf_str(&b);
        rc = ty_ere_compile(pat, 0, &re, msg, sizeof(msg));
        grc = regcomp(&g, pat, REG_EXTENDED | REG_NOSUB);
        if ((rc == 0) != (grc == 0)) {
            if (differ++ < 5)
                diag("'%s': ours %d (%s), glibc's %d", pat, rc, rc ? msg : "", grc);
        }
        if (rc == 0 && grc == 0) {
            patterns++;
            for (int t = 0; t < 12; t++) {
                char text[12];
                size_t n = rnd(sizeof(text));
                for (size_t k = 0; k < n; k++)
                    text[k] = alphabet[rnd(sizeof(alphabet) - 1)];
                text[n] = '\0';
                bool ours = ty_ere_search(re, text, n);
                bool theirs = regexec(&g, text, 0, NULL, 0) == 0;
                checks++;
                if (ours != theirs && differ++ < 5)
                    diag("'%s' on '%s': ours %d, glibc's %d", pat, text, ours, theirs);
            }
        }
        if (grc == 0)
            regfree(&g);
        ty_ere_free(re);
        ty_buf_release(&b);
    }
    is_int((long)differ,
           0,
           "3000 random patterns: %zu compiled, %zu searches, as glibc",
           patterns,
           checks);
    ok(patterns > 2500 && checks > 30000,
       "the comparison covered enough (%zu, %zu)",
       patterns,
       checks);
}

/* Short random strings of ERE's special characters: valid for glibc exactly when valid here,
 * and then matching the same texts. */
static void test_syntax_against_glibc(void)
{
    static const char chars[] = "()[]{}|*+?^$\\.-,:=a1b";
    static const char *const texts[] = {"", "a", "ab1", "a-b", "{1}", "[a]", "a,b:=", "$^"};
    size_t valid = 0, differ = 0;

    for (int i = 0; i < 20000; i++) {
        char pat[9];
        size_t n = 1 + rnd(sizeof(pat) - 1);
        struct ty_ere *re = NULL;
        char msg[160];
        regex_t g;
        int rc, grc;

        for (size_t k = 0; k < n; k++)
            pat[k] = chars[rnd(sizeof(chars) - 1)];
        pat[n] = '\0';
        for (size_t k = 0; k + 1 < n; k++) /* back-references are refused on purpose */
            if (pat[k] == '\\' && pat[k + 1] >= '1' && pat[k + 1] <= '9')
                pat[k + 1] = 'a';
        if (strstr(pat, "\\,")) /* glibc reads {\,} as {,}: a quirk not copied */
            continue;
        rc = ty_ere_compile(pat, 0, &re, msg, sizeof(msg));
        grc = regcomp(&g, pat, REG_EXTENDED | REG_NOSUB);
        if ((rc == 0) != (grc == 0) && differ++ < 5)
            diag("'%s': ours %d (%s), glibc's %d", pat, rc, rc ? msg : "", grc);
        if (rc == 0 && grc == 0) {
            valid++;
            for (size_t t = 0; t < TY_ARRAY_SIZE(texts); t++) {
                bool ours = ty_ere_search(re, texts[t], strlen(texts[t]));
                if (ours != (regexec(&g, texts[t], 0, NULL, 0) == 0) && differ++ < 5)
                    diag("'%s' on '%s': ours %d", pat, texts[t], ours);
            }
        }
        if (grc == 0)
            regfree(&g);
        ty_ere_free(re);
    }
    is_int(
        (long)differ, 0, "20000 random strings of special characters: %zu valid, as glibc", valid);
}

/* The search's shortcuts (the jump to a literal prefix, the skip of characters no match starts
 * with) never change an answer: random patterns, anchors anywhere (glibc is too slow for those
 * under repetitions), and texts with UTF-8 and stray bytes, searched with and without them. */
static void test_shortcuts(void)
{
    static const char *const parts[] = {
        "a", "b", "c", " ", "-", "1", "\xc3\xa9", "\xff", "ab", "x "};
    size_t differ = 0, searches = 0;

    anchors_anywhere = true;
    for (int i = 0; i < 10000; i++) {
        struct ty_buf b = TY_BUF_INIT;
        struct ty_ere *fast = NULL, *plain = NULL;
        char msg[160];

        gen_expr(&b, 0);
        if (ty_ere_compile(ty_buf_str(&b), 0, &fast, msg, sizeof(msg)) == 0 &&
            ty_ere_compile(ty_buf_str(&b), TY_ERE_NO_SHORTCUTS, &plain, msg, sizeof(msg)) == 0) {
            for (int k = 0; k < 12; k++) {
                struct ty_buf text = TY_BUF_INIT;
                unsigned n = rnd(8);
                ty_buf_puts(&text, "");
                for (unsigned j = 0; j < n; j++)
                    ty_buf_puts(&text, parts[rnd(TY_ARRAY_SIZE(parts))]);
                bool f = ty_ere_search(fast, text.data, text.len);
                bool p = ty_ere_search(plain, text.data, text.len);
                searches++;
                if (f != p && differ++ < 5)
                    diag("'%s' on '%s': %d with the shortcuts, %d without",
                         ty_buf_str(&b),
                         text.data,
                         f,
                         p);
                ty_buf_release(&text);
            }
        }
        ty_ere_free(fast);
        ty_ere_free(plain);
        ty_buf_release(&b);
    }
    anchors_anywhere = false;
    is_int(
        (long)differ, 0, "%zu searches with and without the shortcuts: the same answers", searches);
}

int main(void)
{
    test_matches();
    test_errors();
    test_limits();
    test_pathological();
    test_against_glibc();
    test_syntax_against_glibc();
    test_shortcuts();
    return done_testing();
}
