/* SPDX-License-Identifier: Apache-2.0
 * yaml-load.c: YAML document -> jansson tree, using libyaml's document loader (after a pass
 * over its events that bounds the nesting). */
#include "yaml-load.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "json.h"
#include "macro.h"
#include "utf8.h"

#define YAML_MAX_DEPTH 64
#define YAML_MAX_NODES 100000 /* after alias expansion; a config has a few hundred */

struct conv {
    yaml_document_t *doc;
    size_t nodes;
    size_t bytes;        /* text in scalars and keys after expanding aliases */
    json_t *plain_octal; /* the strings of plain scalars that read as two numbers (or NULL) */
    struct ty_error *err;
};

bool ty_yaml11_octal_differs(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    if (s[0] != '0' || !s[1])
        return false;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '7')
            return false;
    while (*s == '0')
        s++;
    return strlen(s) >= 2;
}

/* Aliases repeat text as well as nodes: a 1 MB scalar aliased 1000 times is 1 GB. Bound the
 * expanded text like a document's size. */
static int count_bytes(struct conv *c, size_t n, size_t line)
{
    c->bytes += n;
    if (c->bytes > TY_JSON_MAX_BYTES)
        return ty_error_set(c->err,
                            E2BIG,
                            "YAML: line %zu: more than %u bytes of text (after expanding aliases)",
                            line + 1,
                            TY_JSON_MAX_BYTES);
    return 0;
}

static bool is_null(const char *s)
{
    return !*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
           strcmp(s, "NULL") == 0;
}

static int convert(struct conv *c, yaml_node_t *node, int depth, json_t **ret);

/* Is the key @k YAML's merge key, a plain "<<" (YAML 1.1's, which gcloud reads)? */
static bool is_merge_key(const yaml_node_t *k)
{
    return k->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && k->data.scalar.length == 2 &&
           memcmp(k->data.scalar.value, "<<", 2) == 0;
}

/* Merge into @out the mapping(s) of the merge key's @value, converted: a mapping, or a
 * sequence of them of which the earlier win; a key @out has already is kept (the mapping's
 * own keys win, wherever they stand). */
static int merge_into(struct conv *c, json_t *out, yaml_node_t *value, int depth)
{
    json_t *m = NULL, *one;
    const char *key;
    json_t *v;
    size_t i;
    int r = convert(c, value, depth + 1, &m);

    if (r < 0)
        return r;
    if (json_is_object(m)) {
        json_object_foreach(m, key, v) if (!json_object_get(out, key)) json_object_set(out, key, v);
        json_decref(m);
        return 0;
    }
    if (json_is_array(m)) {
        json_array_foreach(m, i, one)
        {
            if (!json_is_object(one))
                break;
            json_object_foreach(one, key, v) if (!json_object_get(out, key))
                json_object_set(out, key, v);
        }
        if (i == json_array_size(m)) {
            json_decref(m);
            return 0;
        }
    }
    json_decref(m);
    return ty_error_set(c->err,
                        EINVAL,
                        "YAML: line %zu: a merge key (<<) takes a mapping or a list of them",
                        value->start_mark.line + 1);
}

/* A mapping @node into *@ret: an object of its keys (scalars, each once), then what its merge
 * keys bring that it does not have. */
static int convert_mapping(struct conv *c, yaml_node_t *node, int depth, json_t **ret)
{
    json_t *out;
    int r;

    out = json_object();
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        json_t *v = NULL;
        if (!k || k->type != YAML_SCALAR_NODE) {
            json_decref(out);
            return ty_error_set(c->err,
                                EINVAL,
                                "YAML: line %zu: mapping keys must be scalars",
                                node->start_mark.line + 1);
        }
        if (is_merge_key(k))
            continue; /* merged below, after the mapping's own keys */
        /* keys are C strings from here on: one with a NUL would lose its tail unseen
         * ("workerCount\0zzz" read as workerCount), as JSON's parser refuses it too */
        if (strlen((const char *)k->data.scalar.value) != k->data.scalar.length) {
            json_decref(out);
            return ty_error_set(c->err,
                                EINVAL,
                                "YAML: line %zu: a key holds a NUL character",
                                k->start_mark.line + 1);
        }
        if (json_object_get(out, (const char *)k->data.scalar.value)) {
            json_decref(out);
            return ty_error_set(c->err,
                                EINVAL,
                                "YAML: line %zu: duplicate key '%s'",
                                k->start_mark.line + 1,
                                (const char *)k->data.scalar.value);
        }
        r = count_bytes(c, k->data.scalar.length, k->start_mark.line);
        if (r >= 0)
            r = convert(c, yaml_document_get_node(c->doc, p->value), depth + 1, &v);
        if (r < 0) {
            json_decref(out);
            return r;
        }
        if (json_object_set_new(out, (const char *)k->data.scalar.value, v) < 0) {
            json_decref(out);
            return ty_error_set(
                c->err, EINVAL, "YAML: line %zu: invalid key", k->start_mark.line + 1);
        }
    }
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        if (is_merge_key(k) &&
            (r = merge_into(c, out, yaml_document_get_node(c->doc, p->value), depth)) < 0) {
            json_decref(out);
            return r;
        }
    }
    *ret = out;
    return 0;
}

static int convert(struct conv *c, yaml_node_t *node, int depth, json_t **ret)
{
    json_t *out;
    int r;

    if (!node)
        return ty_error_set(c->err, EINVAL, "YAML: dangling node");
    if (depth > YAML_MAX_DEPTH)
        return ty_error_set(c->err, EINVAL, "YAML: nesting deeper than %d levels", YAML_MAX_DEPTH);
    if (++c->nodes > YAML_MAX_NODES)
        return ty_error_set(
            c->err, E2BIG, "YAML: more than %d nodes (after expanding aliases)", YAML_MAX_NODES);

    switch (node->type) {
    case YAML_SCALAR_NODE: {
        const char *s = (const char *)node->data.scalar.value;
        size_t n = node->data.scalar.length;
        r = count_bytes(c, n, node->start_mark.line);
        if (r < 0)
            return r;
        if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && is_null(s)) {
            *ret = json_null();
            return 0;
        }
        out = json_stringn(s, n);
        if (!out)
            return ty_error_set(c->err,
                                EINVAL,
                                "YAML: line %zu: scalar is not valid UTF-8",
                                node->start_mark.line + 1);
        if (c->plain_octal && node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
            strlen(s) == n && ty_yaml11_octal_differs(s))
            json_array_append(c->plain_octal, out);
        *ret = out;
        return 0;
    }
    case YAML_SEQUENCE_NODE:
        out = json_array();
        for (yaml_node_item_t *it = node->data.sequence.items.start;
             it < node->data.sequence.items.top;
             it++) {
            json_t *v = NULL;
            r = convert(c, yaml_document_get_node(c->doc, *it), depth + 1, &v);
            if (r < 0) {
                json_decref(out);
                return r;
            }
            json_array_append_new(out, v);
        }
        *ret = out;
        return 0;
    case YAML_MAPPING_NODE:
        return convert_mapping(c, node, depth, ret);
    default:
        return ty_error_set(c->err, EINVAL, "YAML: unsupported node");
    }
}

/* The byte offset in @text (@len bytes) of its character number @index (libyaml counts
 * characters; a character that is not UTF-8 counts one byte). */
static size_t byte_of_char(const char *text, size_t len, size_t index)
{
    size_t at = 0;

    while (index-- > 0 && at < len) {
        uint32_t cp;
        size_t n = ty_utf8_char((const unsigned char *)text + at, len - at, &cp);
        at += n ? n : 1;
    }
    return at;
}

/* The line and column (from 1) of byte @at of @text. */
static void line_of_byte(const char *text, size_t at, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < at; i++) {
        if (text[i] == '\n')
            ++*line, *col = 1;
        else if (((unsigned char)text[i] & 0xc0) != 0x80) /* a character, not its tail */
            ++*col;
    }
}

static int
syntax_error(const yaml_parser_t *parser, const char *text, size_t len, struct ty_error *err)
{
    size_t at = byte_of_char(text, len, parser->problem_mark.index), line, col;

    /* The reader's errors (bytes that are not UTF-8, a NUL) give a byte offset instead of a
     * mark. */
    if (parser->error == YAML_READER_ERROR) {
        line_of_byte(
            text, parser->problem_offset < len ? parser->problem_offset : len, &line, &col);
        return ty_error_set(err,
                            EINVAL,
                            "invalid YAML at line %zu column %zu: %s",
                            line,
                            col,
                            parser->problem ? parser->problem : "unreadable text");
    }
    /* libyaml says "found character that cannot start any token" for a tab, which people
     * type into YAML more than anything else it refuses: say what it is. */
    if (at < len && text[at] == '\t')
        return ty_error_set(err,
                            EINVAL,
                            "invalid YAML: a tab character at line %zu column %zu: YAML "
                            "indents with spaces",
                            parser->problem_mark.line + 1,
                            parser->problem_mark.column + 1);
    return ty_error_set(err,
                        EINVAL,
                        "invalid YAML at line %zu column %zu: %s",
                        parser->problem_mark.line + 1,
                        parser->problem_mark.column + 1,
                        parser->problem ? parser->problem : "syntax error");
}

/* Read @text's events once to refuse nesting deeper than YAML_MAX_DEPTH before libyaml's
 * loader builds it: its scanner's time grows with the square of the depth (100,000 nested
 * '[' took minutes), and the loader reads the whole document before convert() could look. */
static int check_depth(const char *text, size_t len, struct ty_error *err)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    int depth = 0, r = 0;
    bool end = false;

    if (!yaml_parser_initialize(&parser))
        return ty_error_set(err, ENOMEM, "YAML: cannot initialise parser");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    while (!end && r == 0) {
        if (!yaml_parser_parse(&parser, &ev)) {
            r = syntax_error(&parser, text, len, err);
            break;
        }
        if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
            if (++depth > YAML_MAX_DEPTH)
                r = ty_error_set(err,
                                 EINVAL,
                                 "YAML: line %zu: nesting deeper than %d levels",
                                 ev.start_mark.line + 1,
                                 YAML_MAX_DEPTH);
        } else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
            depth--;
        }
        end = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return r;
}

int ty_yaml_parse(const char *text, size_t len, json_t **ret, struct ty_error *err)
{
    return ty_yaml_parse_marked(text, len, ret, NULL, err);
}

int ty_yaml_parse_marked(
    const char *text, size_t len, json_t **ret, json_t **plain_octal, struct ty_error *err)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_node_t *root;
    _cleanup_json_ json_t *marks = plain_octal ? json_array() : NULL;
    struct conv c = {.doc = &doc, .plain_octal = marks, .err = err};
    int r;

    if (len > TY_JSON_MAX_BYTES)
        return ty_error_set(
            err, E2BIG, "document of %zu bytes is over the %u-byte limit", len, TY_JSON_MAX_BYTES);
    r = check_depth(text, len, err);
    if (r < 0)
        return r;
    if (!yaml_parser_initialize(&parser))
        return ty_error_set(err, ENOMEM, "YAML: cannot initialise parser");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        r = syntax_error(&parser, text, len, err);
        yaml_parser_delete(&parser);
        return r;
    }
    root = yaml_document_get_root_node(&doc);
    if (root && root->type == YAML_SCALAR_NODE && root->data.scalar.length == 0 &&
        root->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        /* A document with nothing in it ("---" alone, or before comments) */
        r = ty_error_set(err, ENODATA, "the document is empty");
        root = NULL;
    } else if (!root) {
        /* Nothing but blank lines and comments: an empty file is a mistake (a wrong file, a
         * truncated copy), not a document with every field unset. */
        size_t i = 0;
        while (i < len && strchr(" \t\r\n", text[i]) && text[i])
            i++;
        r = ty_error_set(
            err, ENODATA, "the document is empty%s", i < len ? " (only comments)" : "");
    } else {
        r = convert(&c, root, 0, ret);
    }
    yaml_document_delete(&doc);
    /* A single document: anything after a second "---" would otherwise be dropped without a
     * word. Empty documents (a trailing "---") are fine. */
    while (r >= 0 && root) {
        if (!yaml_parser_load(&parser, &doc)) {
            r = syntax_error(&parser, text, len, err);
        } else {
            root = yaml_document_get_root_node(&doc);
            if (root && !(root->type == YAML_SCALAR_NODE && root->data.scalar.length == 0 &&
                          root->data.scalar.style == YAML_PLAIN_SCALAR_STYLE))
                r = ty_error_set(err,
                                 EINVAL,
                                 "invalid YAML at line %zu: a second document; a job document "
                                 "must be a single YAML document",
                                 root->start_mark.line + 1);
            yaml_document_delete(&doc);
        }
        if (r < 0) {
            json_decref(*ret);
            *ret = NULL;
        }
    }
    yaml_parser_delete(&parser);
    if (r >= 0 && plain_octal)
        *plain_octal = TAKE_PTR(marks);
    return r;
}
