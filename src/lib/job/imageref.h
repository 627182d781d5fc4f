/* SPDX-License-Identifier: Apache-2.0
 * imageref.h: whether a role's imageUri is a container image reference at all, by the
 * grammar Docker, Podman and registries share (distribution's reference package), so that a
 * typo is refused with the job, naming the field, instead of failing a pull later. */
#ifndef TY_IMAGEREF_H
#define TY_IMAGEREF_H

#include <stdbool.h>
#include <stddef.h>

/* The longest name (registry and repository path, without tag or digest) a reference may
 * have: NameTotalLengthMax as Podman's parser (containers/image) counts it, registry
 * included; distribution's own parser counts only the path since its v0.6.0 (2024). */
#define TY_IMAGE_NAME_MAX 255

/* Check @ref against NAME[:TAG][@DIGEST], where NAME is [REGISTRY/]PATH: REGISTRY a host name
 * (components of letters, digits and inner '-', joined by '.'), an IPv4 address or a
 * bracketed IPv6 one, with an optional :PORT; PATH components of lowercase letters and
 * digits separated by '.', '_', '__' or runs of '-', joined by '/'; NAME at most
 * TY_IMAGE_NAME_MAX characters; TAG 1-128 of letters, digits, '_', '.' and '-', not starting
 * with '.' or '-'; DIGEST sha256:, sha384: or sha512: and 64, 96 or 128 lowercase hex digits
 * (what a pull takes). Returns 0, or
 * -EINVAL with the broken part and its rule in @why (NUL-terminated, @whylen > 0; control
 * characters of the part shown as '?'). */
int ty_image_ref_check(const char *ref, char *why, size_t whylen);

/* The registry of @image ("127.0.0.1:5000" of "127.0.0.1:5000/ml/x:1"), or NULL when its
 * first component is not one by Docker's rule (it has no '.' or ':', is not "localhost",
 * has no uppercase letter and does not open with '['; then the image is on Docker Hub, or
 * the engine's default). Caller frees. */
char *ty_image_registry(const char *image);

/* Is the registry @hostport ("host[:port]") on loopback: localhost, an IPv4 address in
 * 127.0.0.0/8 or [::1], exactly (a name that merely starts like one, "localhost.example" or
 * "127.0.0.1.example", is looked up in DNS and may be anywhere)? */
bool ty_registry_on_loopback(const char *hostport);

/* Check @list, the registries pulled from over plain HTTP (comma-separated HOST[:PORT],
 * spaces around an entry and empty entries ignored): each must be a registry's HOST[:PORT]
 * (no scheme, no path) on loopback. Returns 0, or -EINVAL with the first broken entry and
 * its rule in @why (NUL-terminated, @whylen > 0). */
int ty_insecure_registries_check(const char *list, char *why, size_t whylen);

#endif
