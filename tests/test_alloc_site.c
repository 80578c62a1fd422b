/*
 * umadv_set_alloc_site(3) without a GPU: on a host context in profile
 * mode, the site a thread declares is the recorded site of the
 * allocations it makes until it is cleared (NULL or ""); a site longer
 * than 255 bytes is refused and the thread's site left as it was; 255
 * bytes are taken whole; another thread's allocations keep their own
 * site. What the Python start-up hook declares: tests/test_alloc_site.sh.
 */
#include <umadv.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/context.h"
#include "common/util.h"
#include "tap.h"
#include "testutil.h"

#define SECTION (64 * UMADV_KIB)
#define BLOCKS  6

static umadv_context_t ctx;
static void *blocks[BLOCKS];
static int nblocks;

static void *alloc(void)
{
    void *p = NULL;

    if (nblocks < BLOCKS && umadv_malloc(ctx, SECTION, NULL, &p) == UMADV_OK)
        blocks[nblocks++] = p;
    return p;
}

static void *alloc_on_thread(void *unused)
{
    (void)unused;
    return alloc();
}

/* The recorded site of block @i once the iteration is complete. */
static const char *site_of(int i)
{
    for (uint32_t a = 0; a < ctx->trace.nallocs; a++) {
        if (ctx->trace.allocs[a].base == (uint64_t)(uintptr_t)blocks[i])
            return ctx->trace.allocs[a].site;
    }
    return "not recorded";
}

static const char *str(const char *s)
{
    return s != NULL ? s : "none";
}

int main(void)
{
    char longest[256], too_long[257];
    pthread_t thread;

    plan(6);
    env_clear();
    memset(longest, 'a', 250);
    strcpy(longest + 250, ".py:7"); /* 255 bytes */
    memset(too_long, 'b', 256);
    too_long[256] = '\0';
    setenv("UMADV_PROFILE_OUTPUT", "/nonexistent/unused.umt", 1);
    ctx = test_host_context(SECTION, 0);
    unsetenv("UMADV_PROFILE_OUTPUT");
    if (ctx == NULL)
        return printf("Bail out! no host context\n"), 1;
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);

    is(umadv_set_alloc_site("train.py:42"), UMADV_OK, "a site declared");
    alloc();                                     /* 0: train.py:42 */
    pthread_create(&thread, NULL, alloc_on_thread, NULL);
    pthread_join(thread, NULL);                  /* 1: the other thread's own */
    umadv_set_alloc_site(NULL);
    alloc();                                     /* 2: the native frame */
    umadv_set_alloc_site("model.py:9");
    is(umadv_set_alloc_site(too_long), UMADV_ERR_INVALID_PARAM,
       "a site of 256 bytes is refused");
    alloc();                                     /* 3: still model.py:9 */
    umadv_set_alloc_site(longest);
    alloc();                                     /* 4: 255 bytes */
    umadv_set_alloc_site("");
    alloc();                                     /* 5: cleared */

    umadv_step_begin(ctx, "s", NULL);
    for (int i = 0; i < nblocks; i++)
        umadv_step_access(ctx, blocks[i], SECTION, UMADV_ACCESS_READ);
    umadv_step_end(ctx, 5);
    umadv_iteration_begin(ctx); /* the recording complete */

    ok(nblocks == BLOCKS && strcmp(str(site_of(0)), "train.py:42") == 0,
       "the declared site is the allocation's (%s)", str(site_of(0)));
    ok(site_of(1) != NULL && strcmp(site_of(1), "train.py:42") != 0,
       "another thread's allocation keeps its own site (%s)", str(site_of(1)));
    ok(site_of(2) != NULL && strcmp(site_of(2), "train.py:42") != 0 &&
       site_of(5) != NULL && strcmp(site_of(5), site_of(2)) == 0,
       "cleared by NULL and by \"\": the native frame again (%s)", str(site_of(2)));
    ok(strcmp(str(site_of(3)), "model.py:9") == 0 && strcmp(str(site_of(4)), longest) == 0,
       "the site before a refused one stays; 255 bytes are taken whole");
    for (int i = 0; i < nblocks; i++)
        umadv_free(ctx, blocks[i]);
    umadv_context_destroy(ctx);
    return exit_status();
}
