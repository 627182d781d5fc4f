/* SPDX-License-Identifier: Apache-2.0
 * suggest.h: "did you mean" for every name a user types (verbs, flags, config keys, job
 * fields, machine types, enum values): the candidate nearest to a mistyped word by optimal
 * string alignment distance (Levenshtein plus transposition of two neighbours), ignoring
 * ASCII case, if it is near enough for its length. */
#ifndef TY_SUGGEST_H
#define TY_SUGGEST_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Longest word compared; a longer one (or candidate) gets no suggestion. */
#define TY_SUGGEST_MAX_LEN 256

/* The optimal string alignment distance between @a and @b, ASCII letters compared without
 * case: the fewest insertions, deletions, substitutions and swaps of two adjacent characters
 * (no substring edited twice) that turn one into the other. SIZE_MAX when either is longer
 * than TY_SUGGEST_MAX_LEN. */
size_t ty_edit_distance(const char *a, const char *b);

/* The largest distance at which a candidate is suggested for a typed @word: a third of its
 * length, at least 1 ("sumbit" -> 2, "pj" -> 1). */
size_t ty_suggest_threshold(const char *word);

/* A search for the nearest candidate, fed one candidate at a time (for tables that are not
 * string arrays). The first of equally near candidates wins. */
struct ty_suggest {
    const char *word;
    const char *best; /* NULL until a candidate is near enough */
    size_t best_dist;
};

/* Start a search for @word (kept by reference: it must outlive the search). */
void ty_suggest_init(struct ty_suggest *s, const char *word);

/* Consider @cand (kept by reference when it becomes the best). A candidate equal to the word
 * (same case) is not a suggestion and is skipped, as is NULL. */
void ty_suggest_add(struct ty_suggest *s, const char *cand);

/* The nearest candidate within ty_suggest_threshold(word), or NULL. */
const char *ty_suggest_best(const struct ty_suggest *s);

/* ty_suggest over the NULL-terminated array @cands: the nearest one, or NULL. */
const char *ty_suggest_among(const char *word, const char *const *cands);

/* The error for the command-line argument @arg that getopt_long refused (@short_opt: getopt's
 * optopt), calling it a @noun ("flag", "option"): an unknown short one, a value given to a
 * long one of @opts that takes none, an abbreviation of several long ones (listed), or an
 * unknown long one with the nearest of @opts, if one is near ("did you mean '--listen'?").
 * Returns -EINVAL with @err. */
int ty_suggest_option_error(const struct option *opts,
                            const char *arg,
                            int short_opt,
                            const char *noun,
                            struct ty_error *err);

/* Whether the long option getopt_long just returned (@longindex into @opts, as getopt_long
 * set it; -1: a short option, always fine) was typed in full. getopt_long takes any
 * unambiguous prefix ("--conf" for "--config"); trainyard's programs do not, as gcloud does
 * not: a prefix that works today would mean another flag once one is added. @argv,
 * @optind_now and @optarg_now are getopt_long's argv, optind and optarg after the call.
 * Returns 0, or -EINVAL with @err calling the word an unknown @noun and naming the flag it
 * abbreviates ("unknown flag '--conf' (did you mean '--config'? flags are not
 * abbreviated)"). */
int ty_option_typed_in_full(const struct option *opts,
                            int longindex,
                            char **argv,
                            int optind_now,
                            const char *optarg_now,
                            const char *noun,
                            struct ty_error *err);

#endif
