/* SPDX-License-Identifier: Apache-2.0
 * schema.h: the ml v1 REST message shapes trainyard accepts (Job, TrainingInput and the
 * messages under it), as a table, and the normaliser that checks a JSON/YAML tree against it.
 *
 * The normaliser is the single gate for untrusted job documents: it rejects unknown names
 * the way Google's API does ("Unknown name ... Cannot find field"), accepts camelCase and
 * snake_case names, accepts int64 as JSON strings or numbers, and produces the *canonical*
 * form: camelCase keys in schema order, int64 as decimal strings, enums as names, durations
 * as "<seconds>s". Everything downstream (typed view, TF_CONFIG's `job`, the store) reads
 * only the canonical form. Semantic rules (counts, types, images) live in spec-validate.c. */
#ifndef TY_SCHEMA_H
#define TY_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>

#include "error.h"

enum ty_ftype {
    TY_FT_STRING,
    TY_FT_INT64,  /* JSON string (or number on input) */
    TY_FT_INT32,  /* JSON number (or string on input) */
    TY_FT_DOUBLE, /* JSON number (or string on input) */
    TY_FT_BOOL,
    TY_FT_ENUM,
    TY_FT_DURATION, /* google.protobuf.Duration: "7200s" */
    TY_FT_MESSAGE,
    TY_FT_STRING_ARRAY,
    TY_FT_DOUBLE_ARRAY,
    TY_FT_MESSAGE_ARRAY,
    TY_FT_STRING_MAP,
};

struct ty_message;

struct ty_field {
    const char *name; /* camelCase (JSON) name */
    enum ty_ftype type;
    const struct ty_message *message; /* for MESSAGE and MESSAGE_ARRAY */
    const char *const *enum_values;   /* NULL-terminated, for ENUM */
    bool output_only;                 /* accepted on input and dropped (e.g. Job.state) */
    const char *unsupported;          /* non-NULL: present is an error with this reason */
};

struct ty_message {
    const char *name; /* e.g. "TrainingInput", used in messages about enums */
    const struct ty_field *fields;
    size_t n_fields;
};

extern const struct ty_message ty_msg_job;

/* Job.state names in enum order (STATE_UNSPECIFIED first), NULL-terminated; index them with
 * enum ty_job_state (supervise.h). */
extern const char *const ty_job_state_names[];
extern const struct ty_message ty_msg_training_input;

/* Flags for ty_schema_normalize. */
enum {
    /* The input came from YAML (whose loader gives every scalar as a string): strings are
     * accepted for numbers and for booleans (true/false/yes/no/on/off, any case), and
     * booleans for strings. */
    TY_NORM_LENIENT = 1 << 0,
};

/* Check @in against @msg and build its canonical form in *ret (new reference).
 * @path names @in in error messages (e.g. "trainingInput"); "" for the top level.
 * Returns 0, or -EINVAL with err naming the field path and the rule. Never modifies @in. */
int ty_schema_normalize(const struct ty_message *msg,
                        const json_t *in,
                        const char *path,
                        int flags,
                        json_t **ret,
                        struct ty_error *err);

/* True if @key names a field of @msg (camelCase or snake_case spelling). */
bool ty_schema_has_field(const struct ty_message *msg, const char *key);

/* The NULL-terminated names of the enum field at the dotted @path under @msg (e.g.
 * "masterConfig.acceleratorConfig.type" under ty_msg_training_input), in enum order; NULL when
 * @path names no enum field. */
const char *const *ty_schema_enum_values(const struct ty_message *msg, const char *path);

#endif
