/* SPDX-License-Identifier: Apache-2.0
 * test-imageref.c: the container image reference grammar (lib/job/imageref.c): references
 * Docker and Podman take, and typos each refused with the part and rule that broke. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "imageref.h"
#include "macro.h"
#include "spec.h"
#include "tap.h"

/* Which registry an image names (Docker's rule for its first component), which are on
 * loopback, and the check of the operator's list of plain-HTTP registries. */
static void test_registries(void)
{
    static const struct {
        const char *image, *registry; /* NULL: the engine's default registry */
    } regs[] = {
        {"127.0.0.1:5000/ml/x:1", "127.0.0.1:5000"},
        {"localhost/x", "localhost"},
        {"gcr.io/p/x", "gcr.io"},
        {"[::1]:5000/x", "[::1]:5000"},
        {"Upper/x", "Upper"},
        {"library/ubuntu", NULL},
        {"ubuntu:22.04", NULL},
    };
    static const struct {
        const char *hostport;
        bool loopback;
    } loop[] = {
        {"127.0.0.1:5000", true},
        {"127.9.9.9", true},
        {"localhost:80", true},
        {"[::1]:5000", true},
        {"[::1]", true},
        {"localhost.example:5000", false},
        {"127.0.0.1.example", false},
        {"10.0.0.1:5000", false},
        {"[::2]:5000", false},
        {"127.0.0.1:", false},
        {"127.0.0.1:123456", false},
        {":5000", false},
    };
    char why[300];

    for (size_t i = 0; i < TY_ARRAY_SIZE(regs); i++) {
        char *r = ty_image_registry(regs[i].image);
        if (regs[i].registry)
            is_str(r ? r : "(none)", regs[i].registry, "registry of %s", regs[i].image);
        else
            ok(r == NULL, "%s names no registry", regs[i].image);
        free(r);
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(loop); i++)
        ok(ty_registry_on_loopback(loop[i].hostport) == loop[i].loopback,
           "%s %s on loopback",
           loop[i].hostport,
           loop[i].loopback ? "is" : "is not");

    ok(ty_insecure_registries_check(" 127.0.0.1:5000 , localhost:80,,[::1]:5000", why, 300) == 0,
       "a list of loopback registries, spaces and empty entries aside");
    ok(ty_insecure_registries_check("", why, sizeof(why)) == 0, "an empty list");
    is_int(ty_insecure_registries_check("127.0.0.1:5000,registry.example.com:5000", why, 300),
           -EINVAL,
           "a registry off loopback refused");
    is_str(why,
           "'registry.example.com:5000' is not on loopback: plain-HTTP registries are allowed "
           "only on 127.0.0.0/8, localhost or [::1]",
           "its reason");
    is_int(ty_insecure_registries_check("http://127.0.0.1:5000", why, sizeof(why)),
           -EINVAL,
           "a URL refused");
    is_str(why,
           "'http://127.0.0.1:5000' is not a registry's HOST[:PORT] (no scheme, no path)",
           "its reason");
    is_int(ty_insecure_registries_check("localhost:5000/ml", why, sizeof(why)),
           -EINVAL,
           "a path refused");
}

/* A job stored before the rule (an imageUri the process runtime never needed to be an image)
 * still reads; the rule is for jobs as they are submitted (ty_job_check_images). */
static void test_stored_job(void)
{
    json_t *doc = json_pack("{s:s, s:{s:{s:s, s:[s]}, s:s, s:s, s:s, s:{s:s}}}",
                            "jobId",
                            "old_job",
                            "trainingInput",
                            "masterConfig",
                            "imageUri",
                            "gcr.io/p/img",
                            "containerCommand",
                            "true",
                            "scaleTier",
                            "CUSTOM",
                            "masterType",
                            "n1-standard-4",
                            "workerType",
                            "n1-standard-4",
                            "workerConfig",
                            "imageUri",
                            "My Trainer");
    struct ty_job *job = NULL;
    struct ty_error err = {0};

    json_object_set_new(json_object_get(doc, "trainingInput"), "workerCount", json_string("1"));
    ok(ty_job_from_json(doc, &job, &err) == 0,
       "a stored job with a bad imageUri reads (%s)",
       err.msg);
    if (job) {
        is_int(ty_job_check_images(job, &err), -EINVAL, "and is refused as a new job");
        like(err.msg,
             "trainingInput.workerConfig.imageUri: \"My Trainer\" is not a container image "
             "reference",
             "the message names the role's field");
        ty_job_free(job);
    }
    json_decref(doc);
}

#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const char *const good[] = {
    "i",
    "x/y:1",
    "gcr.io/p/img:1",
    "localhost/trainyard/digits:latest",
    "localhost:5000/a/b",
    "localhost:5000",          /* repository localhost, tag 5000 */
    "127.0.0.1:5000/team/img", /* an IPv4 registry */
    "[::1]:5000/img",          /* an IPv6 registry */
    "Registry.Example.com/team/img",
    "my-registry.example.com/a.b/c_d/e__f/g--h:V1.0_rc-1",
    ("us-docker.pkg.dev/proj/repo/trainer@sha256:"
     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"),
    "img:1@sha384:" H64 "0123456789abcdef0123456789abcdef",
    "a/b@sha512:" H64 H64,
    "x:_tag", /* a tag may start with '_' */
};

static const struct {
    const char *ref, *why;
} bad[] = {
    {"", "it is empty"},
    {":1", "the name before the tag or digest is empty"},
    {"@sha256:0123456789abcdef0123456789abcdef", "the name before the tag or digest is empty"},
    {"gcr.io/p/img:", "the tag '' is not 1 to 128 letters"},
    {"gcr.io/p/img:-x", "the tag '-x' is not"},
    {"gcr.io/p/img:v 1", "the tag 'v 1' is not"},
    {"img@sha256:abc", "the digest 'sha256:abc' is not sha256:, sha384: or sha512: and its 64"},
    {"img@" H64, "is not sha256:, sha384: or sha512:"},
    {"img@sha256:0123456789abcdef0123456789abcdef", "is not sha256:"}, /* cut short */
    {"img@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
     "is not sha256:"}, /* upper case */
    {"img@sha256:" H64 "0", "is not sha256:"},
    {"img@sha384:" H64, "is not sha256:"},
    {"img@md5:0123456789abcdef0123456789abcdef", "the digest 'md5:"},
    {"img@sha256:" H64 "\x1b]0;x\a", "the digest 'sha256:"},
    {"x/\x1b]0;t\a/y", "'?]0;t?' is not a path component"}, /* controls shown as '?' */
    {"gcr.io/P/img", "'P' is not a path component: lowercase letters and digits"},
    {"Img", "'Img' is not a path component"},
    {"gcr.io/p/-img", "'-img' is not a path component"},
    {"gcr.io/p/img-", "'img-' is not a path component"},
    {"a/b___c", "'b___c' is not a path component"},
    {"a/b..c", "'b..c' is not a path component"},
    {"gcr.io//img", "a path component is empty"},
    {"exam:ple.comet:1st/", "the registry 'exam:ple.comet:1st' is not a host name"},
    {"gcr.]o/p/img", "the registry 'gcr.]o' is not a host name"},
    {"-gcr.io/p", "the registry '-gcr.io' is not a host name"},
    {"localhost:/p", "the registry 'localhost:' is not"},
    {"localhost:50x0/p", "the registry 'localhost:50x0' is not"},
    {"[]/p", "the registry '[]' is not"},
    {"[::1/p", "the registry '[::1' is not"},
    {" gcr.io/p/img", "the registry ' gcr.io' is not"},
    {"gcr.io/p/img:1\n", "the tag"},
    {"_/x", "'_' is not a path component"},
    {"img\n", "' is not a path component"},
    {"a/b/", "a path component is empty"},
    {"a b", "'a b' is not a path component"},
};

int main(void)
{
    char why[300], longname[TY_IMAGE_NAME_MAX + 8], longtag[200];

    for (size_t i = 0; i < TY_ARRAY_SIZE(good); i++) {
        ok(ty_image_ref_check(good[i], why, sizeof(why)) == 0, "valid: %s", good[i]);
        is_str(why, "", "valid: no reason for %s", good[i]);
    }
    for (size_t i = 0; i < TY_ARRAY_SIZE(bad); i++) {
        /* named by index: a few hold a line break, which a TAP line cannot */
        is_int(ty_image_ref_check(bad[i].ref, why, sizeof(why)), -EINVAL, "bad[%zu] refused", i);
        ok(strstr(why, bad[i].why) != NULL, "bad[%zu]: the reason says %s", i, bad[i].why);
    }

    /* the name's limit counts registry and path, not the tag */
    memset(longname, 'a', sizeof(longname));
    longname[TY_IMAGE_NAME_MAX] = '\0';
    ok(ty_image_ref_check(longname, why, sizeof(why)) == 0, "a name of 255 characters");
    memcpy(longname + TY_IMAGE_NAME_MAX, ":tag", sizeof(":tag"));
    ok(ty_image_ref_check(longname, why, sizeof(why)) == 0, "255 characters and a tag");
    memset(longname, 'a', sizeof(longname));
    longname[TY_IMAGE_NAME_MAX + 1] = '\0';
    is_int(ty_image_ref_check(longname, why, sizeof(why)), -EINVAL, "a name of 256 characters");
    like(why, "the name (registry and path) is 256 characters, over 255", "256: the reason");

    /* a tag of 128 characters, not 129 */
    memcpy(longtag, "img:", 4);
    memset(longtag + 4, 't', 129);
    longtag[4 + 128] = '\0';
    ok(ty_image_ref_check(longtag, why, sizeof(why)) == 0, "a tag of 128 characters");
    longtag[4 + 128] = 't';
    longtag[4 + 129] = '\0';
    is_int(ty_image_ref_check(longtag, why, sizeof(why)), -EINVAL, "a tag of 129 characters");
    test_stored_job();
    test_registries();
    return done_testing();
}
