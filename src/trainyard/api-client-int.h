/* SPDX-License-Identifier: Apache-2.0
 * api-client-int.h: what the two halves of the CLI's HTTP client share: the client itself
 * and the settings resolution (api-settings.c) that fills it for the calls (api-client.c). */
#ifndef TY_API_CLIENT_INT_H
#define TY_API_CLIENT_INT_H

#include <curl/curl.h>

#include "api-client.h"

struct api_client {
    char *endpoint;
    char *endpoint_source; /* "the default endpoint", "--api-endpoint", ... */
    char *project;
    char *token;          /* NULL: none */
    char *ca_file;        /* CA certificates to verify https:// with; NULL: the system's */
    char *ca_file_source; /* where it came from, for errors */
    CURL *curl;
};

/* Fill @c's endpoint, project, token and CA file from @f (flags), the environment and the
 * config file, in gcloud's order; each value remembers where it came from, for errors.
 * Returns 0 or -errno with err naming the setting. */
int api_resolve_settings(struct api_client *c, const struct api_settings *f, struct ty_error *err);

#endif
