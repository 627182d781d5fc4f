/* SPDX-License-Identifier: Apache-2.0
 * jobfilter-tree.c: the parsed list filter's tree (jobfilter-internal.h): its nodes, the
 * hints the store uses to read fewer rows, and freeing it. The parser is jobfilter.c. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "jobfilter-internal.h"
#include "jobfilter.h"
#include "jobstate.h"

void jf_node_free(struct jf_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        jf_node_free(n->kids[i]);
    free(n->kids);
    for (size_t i = 0; i < n->r.nsegs; i++)
        free(n->r.segs[i]);
    free(n->r.segs);
    free(n->r.value);
    ty_ere_free(n->r.re);
    free(n);
}

struct jf_node *jf_node_new(enum jf_kind kind)
{
    struct jf_node *n = xcalloc(1, sizeof(*n));
    n->kind = kind;
    return n;
}

void jf_node_add(struct jf_node *list, struct jf_node *kid)
{
    list->kids = xreallocarray(list->kids, list->n + 1, sizeof(*list->kids));
    list->kids[list->n++] = kid;
}

/* Add @kid to the AND/OR @list, splicing in the operands of a @kid of the same kind. */
void jf_node_merge(struct jf_node *list, struct jf_node *kid)
{
    if (kid->kind != list->kind) {
        jf_node_add(list, kid);
        return;
    }
    for (size_t i = 0; i < kid->n; i++)
        jf_node_add(list, kid->kids[i]);
    kid->n = 0;
    jf_node_free(kid);
}

/* A list of one operand is that operand. */
struct jf_node *jf_node_simplify(struct jf_node *list)
{
    struct jf_node *only;

    if (list->n != 1)
        return list;
    only = list->kids[0];
    list->n = 0;
    jf_node_free(list);
    return only;
}

/* The state name @v names (any case for ':'), or NULL. */
static const char *state_name(const char *v, bool any_case)
{
    for (int s = TY_STATE_UNSPECIFIED; s <= TY_STATE_CANCELLED; s++) {
        const char *name = ty_job_state_name((enum ty_job_state)s);
        if (any_case ? strcasecmp(v, name) == 0 : strcmp(v, name) == 0)
            return name;
    }
    return NULL;
}

/* Hints from the conjuncts of a top level that is a conjunction (or a single restriction). */
void jf_find_hints(struct ty_filter *f)
{
    struct jf_node *root = f->root;
    size_t n = root->kind == N_AND ? root->n : 1;

    if (root->kind != N_AND && root->kind != N_RESTR)
        return;
    for (size_t i = 0; i < n; i++) {
        const struct jf_node *k = root->kind == N_AND ? root->kids[i] : root;
        const struct jf_restr *r = &k->r;
        if (k->kind != N_RESTR || r->nsegs != 1 || (r->op != OP_HAS && r->op != OP_EQ) ||
            r->present)
            continue;
        if (!f->state_hint && !r->prefix && strcmp(r->segs[0], "state") == 0)
            f->state_hint = state_name(r->value, r->op == OP_HAS);
        /* the store compares the prefix ignoring case: good for ':' and '=' alike */
        if (!f->id_prefix && r->prefix && r->vlen > 0 && !strchr(r->value, '*') &&
            (r->op == OP_EQ || r->op == OP_HAS) && strcmp(r->segs[0], "jobId") == 0)
            f->id_prefix = r->value;
    }
}

const char *ty_filter_state_hint(const struct ty_filter *f)
{
    return f ? f->state_hint : NULL;
}

const char *ty_filter_id_prefix_hint(const struct ty_filter *f)
{
    return f ? f->id_prefix : NULL;
}

void ty_filter_free(struct ty_filter *f)
{
    if (!f)
        return;
    jf_node_free(f->root);
    free(f);
}
