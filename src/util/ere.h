/* SPDX-License-Identifier: Apache-2.0
 * ere.h: POSIX extended regular expressions, compiled and searched in time linear in the
 * pattern and in the text, for patterns that come from untrusted clients (the '~' of a list
 * filter). glibc's regcomp takes exponential time on some short patterns (`()+++++++++++++`
 * and anchors under repetitions, `(\b|\<|\>|^|$)*(\b|\<|\>|^|$)*`: minutes) and its regexec
 * backtracks on back-references; this is a Thompson-NFA simulation (as RE2's and Go's): each
 * character of the text advances a set of at most one thread per instruction.
 *
 * The syntax is POSIX ERE as glibc reads it without REG_NEWLINE (`.` and bracket expressions
 * match a newline, `^` and `$` only at the ends): `|`, `()`, `*`, `+`, `?`, `{M}`, `{M,}`,
 * `{M,N}` and `{,N}` (stacked: `a+?` is `(a+)?`), `.`, bracket expressions with ranges,
 * `[:class:]`, `[=c=]` and `[.c.]` (one character each), `^`, `$`, a `)` with no `(` as a
 * literal, and glibc's escapes `\w \W \s \S \b \B \< \> \` \'` plus `\d \D` (digits, as in
 * RE2 and Python; gcloud's filters use Python's). Other escaped characters stand for
 * themselves. Back-references (`\1`) are refused. Text and pattern are UTF-8: `.` and a
 * bracket expression match one character, a byte that is not part of valid UTF-8 stands for
 * itself; classes, `\w` and word boundaries are ASCII's (the C locale's). Matching is
 * case-sensitive. */
#ifndef TY_ERE_H
#define TY_ERE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most instructions a compiled pattern may have (a repetition copies its expression:
 * `(ab){3}` is 6 character instructions, a '*' adds 2, a '+' or '?' 1, an alternative 2),
 * and so the most threads a search runs at once. */
#define TY_ERE_MAX_INSNS 1000
/* Deepest nesting of parentheses. */
#define TY_ERE_MAX_DEPTH 32

struct ty_ere;

/* Flags of ty_ere_compile. TY_ERE_NO_SHORTCUTS: its searches step through every position,
 * never jumping to the pattern's literal prefix or past characters no match starts with: the
 * same answers, more slowly (tests compare the two). */
#define TY_ERE_NO_SHORTCUTS 1u

/* Compile the NUL-terminated @pattern (with @flags, above; 0 for none) into *@ret. Returns 0;
 * -EINVAL when it is not a valid expression, @msg then holding glibc's words for the reason
 * ("Unmatched ( or \\(", "Invalid range end", ...); -E2BIG when it is valid but over a limit above
 * or uses a back-reference, @msg then a predicate about the pattern ("is too large: ...", "nests
 * parentheses deeper than 32", "uses a back-reference (\\1), which is not supported");
 * -ENOMEM. *@ret is untouched on failure. Time and memory are linear in the pattern's
 * length. */
int ty_ere_compile(const char *pattern, unsigned flags, struct ty_ere **ret, char *msg, size_t len);

/* Does @re match somewhere in @text (@n bytes, which may hold NULs)? Allocates nothing and
 * does not change @re (concurrent searches are safe); at most TY_ERE_MAX_INSNS steps per
 * character of @text, each at most a binary search of one bracket expression's ranges. */
bool ty_ere_search(const struct ty_ere *re, const char *text, size_t n);

/* ty_ere_search, spending from *@steps (NULL: no limit) one step per character of the text it
 * reads (skipped or stepped through) and one per instruction visited at each. When that would take
 * more than is left, the search stops: *@steps is then 0 and the answer false, whatever the text
 * holds. For a caller that bounds the work of many searches together (a list filter over every job
 * of a project). */
bool ty_ere_search_budget(const struct ty_ere *re, const char *text, size_t n, uint64_t *steps);

/* Free @re (NULL is fine). */
void ty_ere_free(struct ty_ere *re);

#endif
