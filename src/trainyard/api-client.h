/* SPDX-License-Identifier: Apache-2.0
 * api-client.h: the CLI's client of trainyardd's REST API (ml v1 projects.jobs): where the
 * daemon is and who we are (endpoint, project and access token, from flags, the environment
 * and the config file), JSON calls that turn Google error bodies into gcloud-style messages,
 * and a streaming GET for the follow mode of the logs.
 *
 * Resolution, first match wins:
 *   endpoint  --api-endpoint URL  > $TRAINYARD_API_ENDPOINT > config api_endpoint
 *             > http://127.0.0.1:8080
 *   project   --project P  > $TRAINYARD_PROJECT > config project > "default"
 *   token     --access-token-file FILE > $TRAINYARD_ACCESS_TOKEN > config access_token
 *             > config access_token_file > none (no Authorization header)
 *   CA file   $TRAINYARD_CUSTOM_CA_CERTS_FILE > $CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE
 *             > config custom_ca_certs_file > the system's CA certificates (https://)
 *   config    $TRAINYARD_CONFIG (must exist) > $XDG_CONFIG_HOME/trainyard/config
 *             > ~/.config/trainyard/config (these two may be missing)
 * Empty environment variables count as unset. */
#ifndef TY_API_CLIENT_H
#define TY_API_CLIENT_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>

#include "buf.h"
#include "error.h"

#define API_DEFAULT_ENDPOINT "http://127.0.0.1:8080"
#define API_DEFAULT_PROJECT  "default"

/* The global flags of the remote verbs (NULL when not given). */
struct api_settings {
    const char *endpoint;   /* --api-endpoint */
    const char *project;    /* --project */
    const char *token_file; /* --access-token-file */
};

struct api_client;

/* Set (by a SIGINT handler, for one) to stop: a transfer under way is abandoned, and calls
 * fail with -EINTR ("interrupted"), until it is cleared. */
extern volatile sig_atomic_t api_interrupted;

/* Resolve the settings and make a client. Returns 0 and *ret, or -EINVAL (a bad flag value,
 * environment variable or config file; err names which, with FILE:LINE for the file) or
 * another -errno (an unreadable token file or config file). */
int api_client_new(const struct api_settings *flags, struct api_client **ret, struct ty_error *err);
/* Free a client (the token is wiped first); NULL-safe. */
void api_client_free(struct api_client *c);

/* Percent-encode everything but A-Z a-z 0-9 - . _ ~ (for path segments and query values).
 * Caller frees. */
char *api_escape(const char *s);

/* "/v1/projects/PROJECT/jobs", then "/JOB" when @job_id is set, then @suffix (":cancel",
 * "/logs"; may be NULL), segments escaped. Caller frees. */
char *api_jobs_path(const struct api_client *c, const char *job_id, const char *suffix);

/* Append "?name=value" (or "&name=value" when @b has a '?' already), the value escaped.
 * Nothing when @value is NULL. */
void api_query_add(struct ty_buf *b, const char *name, const char *value);

/* One JSON call: @method ("GET", "POST", "PATCH", ...) on @path_query (from api_jobs_path and
 * api_query_add) with @body (NULL: none). Returns the HTTP status (2xx) and *ret (the parsed
 * body; {} for an empty one), or -errno with err a message to print after
 * "ERROR: (trainyard.VERB) ":
 *   an error body {"error":{"code","message","status"}} gives "STATUS: message" and
 *   -ENOENT (NOT_FOUND), -EEXIST (ALREADY_EXISTS), -ESTALE (ABORTED), -EINVAL
 *   (INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE), -EACCES (UNAUTHENTICATED), -EPERM
 *   (PERMISSION_DENIED), -E2BIG (413), -EAGAIN (UNAVAILABLE, RESOURCE_EXHAUSTED), else -EIO;
 *   no connection gives -ECONNREFUSED (or -EHOSTUNREACH, -ETIMEDOUT) naming the endpoint and
 *   suggesting that trainyardd may not be running; a reply that is not JSON gives -EPROTO. */
int api_call(struct api_client *c,
             const char *method,
             const char *path_query,
             const json_t *body,
             json_t **ret,
             struct ty_error *err);

/* Called once per line of a streamed reply (without the newline); a negative return stops
 * the transfer and becomes api_stream_lines's result (fill @err first). */
typedef int (*api_line_fn)(void *ctx, const char *line, size_t len, struct ty_error *err);

/* A GET whose 2xx reply is read line by line as it arrives (NDJSON), with no overall time
 * limit. Returns 0 when the server ended the reply, or -errno as api_call (a transfer that
 * breaks off midway: -ECONNRESET). */
int api_stream_lines(
    struct api_client *c, const char *path_query, api_line_fn fn, void *ctx, struct ty_error *err);

#endif
