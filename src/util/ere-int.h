/* SPDX-License-Identifier: Apache-2.0
 * ere-int.h: the compiled form of a regular expression (ere.h), shared by its compiler (ere.c)
 * and its search (ere-search.c). Not for use elsewhere. */
#ifndef TY_ERE_INT_H
#define TY_ERE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum op { OP_CHAR, OP_ANY, OP_SET, OP_ASSERT, OP_SPLIT, OP_JMP, OP_MATCH };
/* '^' and "\`" are A_BOL, '$' and "\'" A_EOL: without REG_NEWLINE they are the same. */
enum assertion { A_BOL, A_EOL, A_WORDB, A_NWORDB, A_WSTART, A_WEND };

/* A byte that is not part of valid UTF-8 is the "character" INVALID_BASE + byte. */
#define INVALID_BASE 0x110000u

struct insn {
    uint8_t op;
    uint8_t kind; /* OP_ASSERT: enum assertion */
    int16_t x, y; /* OP_SPLIT: the two ways on, OP_JMP: x; relative to this instruction */
    uint32_t arg; /* OP_CHAR: the character; OP_SET: index into sets */
};

struct range {
    uint32_t lo, hi;
};

struct set {
    bool negated;
    uint64_t ascii[2];    /* characters 0-127 in the set, before negation */
    struct range *ranges; /* the others */
    size_t nranges;
};

struct ty_ere {
    struct insn *code; /* ends with OP_MATCH */
    size_t ncode;
    struct set *sets;
    size_t nsets;
    bool anchored; /* starts with '^': only a thread started at 0 can match */
    bool skip;     /* every match starts with a character: an ASCII one not in first cannot */
    uint64_t first[2];
    char prefix[16]; /* the ASCII characters every match starts with (NUL-terminated) */
    size_t nprefix;
};

/* The character at @s (@n > 0 bytes left) and its length in *@len: strict UTF-8 (no overlong
 * forms, surrogates or values over U+10FFFF), any other byte alone as INVALID_BASE + byte. */
uint32_t ere_decode(const unsigned char *s, size_t n, size_t *len);

/* Is @ch a word character of \w and the word anchors ([0-9A-Za-z_])? */
bool ere_is_word(unsigned char ch);

/* Is @ch in the set @s (negation applied)? Its ranges must be sorted and disjoint. */
bool ere_set_has(const struct set *s, uint32_t ch);

/* Does the consuming instruction @in (OP_CHAR, OP_ANY, OP_SET) of @re take @ch? */
bool ere_consumes(const struct ty_ere *re, const struct insn *in, uint32_t ch);

#endif
