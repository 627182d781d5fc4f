/* SPDX-License-Identifier: Apache-2.0
 * jobfilter-internal.h: the parsed form of a list filter, shared by its parser (jobfilter.c)
 * and its matcher (jobfilter-match.c). Not for use elsewhere. */
#ifndef TY_JOBFILTER_INTERNAL_H
#define TY_JOBFILTER_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ere.h"

/* Deepest nesting of arrays inside a job value that a restriction looks into. */
#define MAX_ARRAY_DEPTH 8

enum jf_kind { N_AND, N_OR, N_NOT, N_RESTR, N_GLOBAL };
/* OP_RE, OP_NRE: '~' and '!~', a POSIX extended regular expression searched in the value. */
enum jf_op { OP_HAS, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_RE, OP_NRE };
enum jf_vkind { V_PLAIN, V_TIME, V_DURATION };

struct jf_restr {
    char **segs; /* the field's path */
    size_t nsegs;
    enum jf_op op;
    char *value; /* decoded; without the '*' of a prefix */
    size_t vlen;
    bool prefix;  /* ':' '=' '!=' with a trailing '*': the value is a prefix */
    size_t star;  /* ':' with a leading or inner '*': 1 + its offset in value (0: none) */
    bool present; /* ':*': the field is set */
    bool is_num, is_int;
    int64_t ival;
    double dval;
    enum jf_vkind vkind; /* by the key: timestamps and durations (ty_jobkey_info.value) */
    int64_t tval, tend;  /* V_TIME, V_DURATION: the value; ':' matches [tval, tend) */
    struct ty_ere *re;   /* OP_RE, OP_NRE: the compiled value */
    uint64_t *steps;     /* OP_RE, OP_NRE: the filter's budget (ty_filter.steps) */
};

struct jf_node {
    enum jf_kind kind;
    struct jf_node **kids; /* N_AND, N_OR: the operands; N_NOT: one */
    size_t n;
    struct jf_restr r; /* N_RESTR; N_GLOBAL uses value/vlen only */
};

struct ty_filter {
    struct jf_node *root; /* NULL: everything matches */
    uint64_t budget;      /* the '~' patterns' budget of matching steps (TY_FILTER_MAX_STEPS) */
    uint64_t steps;       /* what is left of it */
    bool patterns;        /* it has '~' or '!~' restrictions */
    const char *state_hint;
    const char *id_prefix; /* points into the tree */
};

/* ---- the tree (jobfilter-tree.c) ---- */

/* A new node of @kind, empty. */
struct jf_node *jf_node_new(enum jf_kind kind);
/* Free @n and everything below it (NULL is fine). */
void jf_node_free(struct jf_node *n);
/* Append @kid to the operands of @list. */
void jf_node_add(struct jf_node *list, struct jf_node *kid);
/* Add @kid to the AND/OR @list, splicing in the operands of a @kid of the same kind. */
void jf_node_merge(struct jf_node *list, struct jf_node *kid);
/* A list of one operand is that operand: @list, or its only operand (@list freed). */
struct jf_node *jf_node_simplify(struct jf_node *list);
/* Set @f's state_hint and id_prefix from the conjuncts of its top level that is a
 * conjunction (or a single restriction): what the store may apply before the filter. */
void jf_find_hints(struct ty_filter *f);

/* An enum-valued key's @value (a prefix when @prefix): upper-cased in place when it names one
 * of @enums ignoring case (as gcloud's '=' and ':' match), else -EINVAL with @msg saying so
 * and listing the values (jobfilter-keys.c). */
int jf_enum_value(const char *const *enums, char *value, bool prefix, char *msg, size_t len);

/* Compile the value of the '~' or '!~' restriction @r into r->re (ere.h: POSIX ERE,
 * case-sensitive as gcloud's). Fails (-EINVAL, @msg naming the pattern and the reason) when
 * it is not a valid pattern, is over ere.h's limits, or when @enums (the values of an enum
 * key; NULL for others) are given and it matches none of them (jobfilter-match.c). */
int jf_regex_compile(struct jf_restr *r, const char *const *enums, char *msg, size_t len);

/* Does the (sub)tree @n match @job? */
bool jf_match_node(const struct jf_node *n, const json_t *job);

#endif
