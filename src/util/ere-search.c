/* SPDX-License-Identifier: Apache-2.0
 * ere-search.c: searching a compiled regular expression (ere.h, ere-int.h): a Pike VM that runs
 * every thread in step over the text, at most one per instruction, so its time is
 * (instructions x characters); and the character and set tests the compiler shares. */
#include <stdint.h>
#include <string.h>

#include "ere-int.h"
#include "ere.h"
#include "utf8.h"

uint32_t ere_decode(const unsigned char *s, size_t n, size_t *len)
{
    uint32_t c;

    *len = ty_utf8_char(s, n, &c);
    if (*len == 0) {
        *len = 1;
        return INVALID_BASE + s[0];
    }
    return c;
}

bool ere_is_word(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_';
}

bool ere_set_has(const struct set *s, uint32_t ch)
{
    size_t lo = 0, hi = s->nranges;
    bool in = false;

    if (ch < 128) {
        in = (s->ascii[ch >> 6] >> (ch & 63)) & 1;
    } else {
        while (lo < hi && !in) { /* the ranges are sorted and disjoint (set_finish) */
            size_t mid = lo + (hi - lo) / 2;
            if (ch < s->ranges[mid].lo)
                hi = mid;
            else if (ch > s->ranges[mid].hi)
                lo = mid + 1;
            else
                in = true;
        }
    }
    return in != s->negated;
}

/* The scratch of one search, on the stack: a list of threads (instructions waiting for the
 * next character) for this position and the next, the instructions already visited at a
 * position (mark[pc] == gen), and the stack that follows SPLITs, JMPs and anchors. */
struct vm {
    const struct ty_ere *re;
    const unsigned char *text;
    size_t n;
    uint32_t gen;
    uint64_t visits; /* instructions visited since the last charge (ty_ere_search_budget) */
    uint32_t mark[TY_ERE_MAX_INSNS + 1];
    uint16_t stack[2 * TY_ERE_MAX_INSNS + 4];
};

static bool holds(const struct vm *vm, uint8_t kind, size_t pos)
{
    bool before = pos > 0 && ere_is_word(vm->text[pos - 1]);
    bool after = pos < vm->n && ere_is_word(vm->text[pos]);

    switch (kind) {
    case A_BOL:
        return pos == 0;
    case A_EOL:
        return pos == vm->n;
    case A_WORDB:
        return before != after;
    case A_NWORDB:
        return before == after;
    case A_WSTART:
        return !before && after;
    default:
        return before && !after;
    }
}

/* Add the thread at @pc, and those its SPLITs, JMPs and anchors that hold at @pos lead to, to
 * @list. Returns true when one of them reaches the match. Each instruction is visited once
 * per position, so at most 2 entries per visit are pushed. */
static bool add_thread(struct vm *vm, uint16_t *list, size_t *nlist, size_t pc0, size_t pos)
{
    size_t sp = 0;

    vm->stack[sp++] = (uint16_t)pc0;
    while (sp > 0) {
        size_t pc = vm->stack[--sp];
        const struct insn *in = &vm->re->code[pc];
        if (vm->mark[pc] == vm->gen)
            continue;
        vm->mark[pc] = vm->gen;
        vm->visits++;
        switch (in->op) {
        case OP_MATCH:
            return true;
        case OP_JMP:
            vm->stack[sp++] = (uint16_t)(pc + (size_t)(ptrdiff_t)in->x);
            break;
        case OP_SPLIT:
            vm->stack[sp++] = (uint16_t)(pc + (size_t)(ptrdiff_t)in->y);
            vm->stack[sp++] = (uint16_t)(pc + (size_t)(ptrdiff_t)in->x);
            break;
        case OP_ASSERT:
            if (holds(vm, in->kind, pos))
                vm->stack[sp++] = (uint16_t)(pc + 1);
            break;
        default:
            list[(*nlist)++] = (uint16_t)pc;
        }
    }
    return false;
}

bool ere_consumes(const struct ty_ere *re, const struct insn *in, uint32_t ch)
{
    switch (in->op) {
    case OP_CHAR:
        return in->arg == ch;
    case OP_ANY:
        return true;
    default:
        return ere_set_has(&re->sets[in->arg], ch);
    }
}

/* A new generation of marks: nothing is marked in it. */
static void next_gen(struct vm *vm)
{
    if (++vm->gen == 0) { /* wrapped, after 2^32 positions: clear the marks */
        memset(vm->mark, 0, vm->re->ncode * sizeof(vm->mark[0]));
        vm->gen = 1;
    }
}

bool ty_ere_search(const struct ty_ere *re, const char *text, size_t n)
{
    return ty_ere_search_budget(re, text, n, NULL);
}

/* Take @cost from *@steps (NULL: no budget); false when there is not that much left (*@steps
 * is then 0). */
static bool spend(uint64_t *steps, uint64_t cost)
{
    if (!steps)
        return true;
    if (*steps < cost) {
        *steps = 0;
        return false;
    }
    *steps -= cost;
    return true;
}

bool ty_ere_search_budget(const struct ty_ere *re, const char *text, size_t n, uint64_t *steps)
{
    if (!text) /* n is 0 */
        text = "";
    uint16_t lists[2][TY_ERE_MAX_INSNS + 1];
    uint16_t *cur = lists[0], *next = lists[1], *swap;
    size_t ncur = 0, nnext, len;
    struct vm vm;

    vm.re = re;
    vm.text = (const unsigned char *)text;
    vm.n = n;
    vm.gen = 1;
    vm.visits = 0;
    memset(vm.mark, 0, re->ncode * sizeof(vm.mark[0]));
    for (size_t pos = 0;;) {
        size_t from = pos;
        if (ncur == 0 && re->nprefix > 0 && !re->anchored) { /* to where a match can start */
            const char *at = memmem(text + pos, n - pos, re->prefix, re->nprefix);
            pos = at ? (size_t)(at - text) : n;
            if (!spend(steps, pos - from) || !at)
                return false;
        } else if (ncur == 0 && re->skip) { /* pass ASCII characters no match starts with */
            while (pos < n && vm.text[pos] < 128 &&
                   !((re->first[vm.text[pos] >> 6] >> (vm.text[pos] & 63)) & 1))
                pos++;
            if (!spend(steps, pos - from) || pos == n)
                return false;
        }
        if (ncur == 0) /* pos may have moved: a mark made at the old one (an anchor that failed
                        * there) must not stop the thread started here */
            next_gen(&vm);
        if ((pos == 0 || !re->anchored) && add_thread(&vm, cur, &ncur, 0, pos))
            return true;
        if (pos == n || (ncur == 0 && re->anchored))
            return false;
        if (!spend(steps, 1 + vm.visits)) /* the character, the instructions visited there */
            return false;
        vm.visits = 0;
        uint32_t ch = ere_decode(vm.text + pos, n - pos, &len);
        next_gen(&vm);
        nnext = 0;
        for (size_t i = 0; i < ncur; i++)
            if (ere_consumes(re, &re->code[cur[i]], ch) &&
                add_thread(&vm, next, &nnext, cur[i] + 1u, pos + len))
                return true;
        swap = cur, cur = next, next = swap;
        ncur = nnext;
        pos += len;
    }
}
