/* SPDX-License-Identifier: Apache-2.0
 * json.c: bounded JSON parsing and serialisation helpers over jansson. */
#include "json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "numfmt.h"

int ty_json_parse(const char *text, size_t len, json_t **ret, struct ty_error *err)
{
    json_error_t je;
    json_t *j;

    if (len > TY_JSON_MAX_BYTES)
        return ty_error_set(
            err, E2BIG, "document of %zu bytes is over the %u-byte limit", len, TY_JSON_MAX_BYTES);
    j = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!j)
        return ty_error_set(
            err, EINVAL, "invalid JSON at line %d column %d: %s", je.line, je.column, je.text);
    *ret = j;
    return 0;
}

static char *dump(const json_t *j, size_t flags)
{
    return ty_json_dumps(j, flags);
}

char *ty_json_dumps(const json_t *j, size_t flags)
{
    char *s = json_dumps(j, flags | JSON_ENCODE_ANY);
    char *shortest;

    if (!s)
        return xstrdup("null");
    /* jansson writes reals with %.17g (0.091966570255907404): written shortest instead. */
    shortest = ty_json_shortest_reals(s);
    free(s);
    return shortest;
}

char *ty_json_compact(const json_t *j)
{
    return dump(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

char *ty_json_compact_short(const json_t *j)
{
    char *s = ty_json_compact(j);
    if (strlen(s) > 80)
        memcpy(s + 77, "...", 4);
    return s;
}

char *ty_json_pretty(const json_t *j)
{
    return dump(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

const char *ty_json_str(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}
