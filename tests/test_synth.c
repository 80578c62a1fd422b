/*
 * Synthetic training traces: every model builds; the trace is a real
 * training iteration (forward, loss, backward in reverse, optimizer);
 * lifetimes fit the accesses; weights change only in the optimizer; sizes
 * match the published architectures; time matches the H200 measurements
 * the generator is calibrated to; bad parameters are refused by name.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "trace/synth.h"
#include "tap.h"

#define NONE UMADV_STEP_NONE

static umadv_status_t build(const char *model, uint32_t batch, uint32_t depth,
                            uint32_t iterations, umadv_trace_t *trace)
{
    umadv_synth_params_t params;

    umadv__synth_params_default(model, &params);
    if (batch)
        params.batch = batch;
    params.depth = depth;
    params.iterations = iterations;
    return umadv__synth_build(&params, trace);
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);

    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const umadv_trace_access_t *step_access(const umadv_trace_t *t, uint32_t s, uint32_t i)
{
    return &t->accesses[t->steps[s].first_access + i];
}

/* Bits of @mode with which step @s touches @alloc; 0 if it does not. */
static uint32_t step_mode(const umadv_trace_t *t, uint32_t s, uint32_t alloc)
{
    uint32_t mode = 0;

    for (uint32_t i = 0; i < t->steps[s].naccesses; i++)
        if (step_access(t, s, i)->alloc == alloc)
            mode |= step_access(t, s, i)->mode;
    return mode;
}

/* Peak of live bytes over steps, from the lifetimes alone. */
static uint64_t peak_live(const umadv_trace_t *t)
{
    int64_t *delta = calloc(t->nsteps + 1, sizeof(*delta));
    int64_t live = 0, peak = 0;

    for (uint32_t a = 0; a < t->nallocs; a++) {
        const umadv_trace_alloc_t *al = &t->allocs[a];
        delta[al->alloc_step == NONE ? 0 : al->alloc_step] += (int64_t)al->size;
        delta[al->free_step == NONE ? t->nsteps : al->free_step + 1] -= (int64_t)al->size;
    }
    for (uint32_t s = 0; s < t->nsteps; s++) {
        live += delta[s];
        peak = live > peak ? live : peak;
    }
    free(delta);
    return (uint64_t)peak;
}

static double iteration_ms(const umadv_trace_t *t, uint32_t iteration)
{
    double ns = 0;

    for (uint32_t s = 0; s < t->nsteps; s++)
        if (t->steps[s].iteration == iteration)
            ns += (double)t->steps[s].duration_ns;
    return ns / 1e6;
}

static uint32_t count_fwd(const umadv_trace_t *t)
{
    uint32_t n = 0;

    for (uint32_t s = 0; s < t->nsteps; s++)
        n += t->steps[s].iteration == 0 && has_suffix(t->steps[s].name, ".fwd");
    return n;
}

/* Iteration 0 is "X.fwd" for L layers, "loss", "X.bwd" in reverse, then
 * @opt: 2L + 2 steps. */
static int check_order(const umadv_trace_t *t, const char *opt)
{
    uint32_t first, n, L;

    if (umadv__trace_iteration_steps(t, 0, &first, &n) != UMADV_OK || n < 4 || (n - 2) % 2)
        return 0;
    L = (n - 2) / 2;
    if (strcmp(t->steps[first + L].name, "loss") != 0 ||
        strcmp(t->steps[first + n - 1].name, opt) != 0)
        return 0;
    for (uint32_t i = 0; i < L; i++) {
        const char *f = t->steps[first + i].name, *b = t->steps[first + n - 2 - i].name;
        size_t len = strlen(f);
        if (!has_suffix(f, ".fwd") || !has_suffix(b, ".bwd") || strlen(b) != len ||
            strncmp(f, b, len - 4) != 0)
            return 0;
    }
    return 1;
}

/* Every transient is first touched at its alloc_step, by a write (the
 * batch excepted: the loader fills it), and last touched at its free_step,
 * by a read: nothing is written and then dropped unread, nothing is kept
 * past its last use. */
static int check_lifetimes(const umadv_trace_t *t)
{
    uint32_t *first = malloc(t->nallocs * sizeof(*first));
    uint32_t *last = malloc(t->nallocs * sizeof(*last));
    int good = 1;

    memset(first, 0xff, t->nallocs * sizeof(*first));
    memset(last, 0xff, t->nallocs * sizeof(*last));
    for (uint32_t s = 0; s < t->nsteps; s++) {
        for (uint32_t i = 0; i < t->steps[s].naccesses; i++) {
            uint32_t a = step_access(t, s, i)->alloc;
            if (first[a] == NONE)
                first[a] = s;
            last[a] = s;
        }
    }
    for (uint32_t a = 0; a < t->nallocs && good; a++) {
        const umadv_trace_alloc_t *al = &t->allocs[a];
        if (al->alloc_step == NONE && al->free_step == NONE)
            continue;
        good = first[a] == al->alloc_step && last[a] == al->free_step &&
               (al->kind == UMADV_ALLOC_INPUT ||
                (step_mode(t, first[a], a) & UMADV_ACCESS_WRITE)) &&
               (step_mode(t, last[a], a) & UMADV_ACCESS_READ) &&
               t->steps[first[a]].iteration == t->steps[last[a]].iteration;
        if (!good)
            diag("allocation %u '%s' [%u, %u] touched [%u, %u]", a, al->tag, al->alloc_step,
                 al->free_step, first[a], last[a]);
    }
    free(first);
    free(last);
    return good;
}

static uint32_t find_alloc(const umadv_trace_t *t, const char *tag)
{
    for (uint32_t a = 0; a < t->nallocs; a++)
        if (t->allocs[a].tag != NULL && strcmp(t->allocs[a].tag, tag) == 0)
            return a;
    return NONE;
}

/* Does some step whose name ends in @suffix touch @alloc with @mode? */
static int touched_in(const umadv_trace_t *t, uint32_t alloc, const char *suffix,
                      uint32_t mode)
{
    for (uint32_t s = 0; s < t->nsteps; s++)
        if (has_suffix(t->steps[s].name, suffix) && (step_mode(t, s, alloc) & mode) == mode)
            return 1;
    return 0;
}

/* A layer whose input is the batch computes no input gradient and so does
 * not need its weights in backward: its gradient is written only by
 * backward steps that read the batch. */
static int grad_only_beside_input(const umadv_trace_t *t, uint32_t grad)
{
    for (uint32_t s = 0; s < t->nsteps; s++) {
        int reads_input = 0;
        if (!(step_mode(t, s, grad) & UMADV_ACCESS_WRITE))
            continue;
        for (uint32_t i = 0; i < t->steps[s].naccesses; i++)
            reads_input |= t->allocs[step_access(t, s, i)->alloc].kind == UMADV_ALLOC_INPUT;
        if (!reads_input)
            return 0;
    }
    return 1;
}

static int check_one_weight(const umadv_trace_t *t, uint32_t w, const char *opt)
{
    char tag[96];
    uint32_t grad;

    snprintf(tag, sizeof(tag), "%s.grad", t->allocs[w].tag);
    grad = find_alloc(t, tag);
    if (grad == NONE || !touched_in(t, w, ".fwd", UMADV_ACCESS_READ) ||
        !touched_in(t, w, opt, UMADV_ACCESS_RW))
        return 0;
    for (uint32_t s = 0; s < t->nsteps; s++)
        if ((step_mode(t, s, w) & UMADV_ACCESS_WRITE) && strcmp(t->steps[s].name, opt) != 0)
            return 0;
    if (!touched_in(t, grad, ".bwd", UMADV_ACCESS_RW) || touched_in(t, grad, ".fwd", 1))
        return 0;
    return touched_in(t, w, ".bwd", UMADV_ACCESS_READ) || grad_only_beside_input(t, grad);
}

static int check_weights(const umadv_trace_t *t, const char *opt, uint64_t *bytes_p)
{
    uint64_t bytes = 0;

    for (uint32_t a = 0; a < t->nallocs; a++) {
        if (t->allocs[a].kind != UMADV_ALLOC_WEIGHT)
            continue;
        bytes += t->allocs[a].size;
        if (!check_one_weight(t, a, opt)) {
            diag("weight '%s' breaks the access rules", t->allocs[a].tag);
            return 0;
        }
    }
    *bytes_p = bytes;
    return 1;
}

static void test_models(void)
{
    static const struct {
        const char *model, *opt;
        uint32_t    layers;   /* fwd steps at the default depth */
        uint64_t    params;   /* published parameter counts */
    } models[] = {
        {"vgg16",       "sgd",  21,       138357544},  /* torchvision */
        {"resnet50",    "sgd",  56,       25557032},   /* torchvision */
        {"gpt2",        "adam", 7 * 12 + 3, 124439808}, /* HF GPT-2 small, tied lm_head */
        {"resnet-deep", "sgd",  1517 + 2, 0},
    };

    for (size_t i = 0; i < UMADV_ARRAY_SIZE(models); i++) {
        umadv_trace_t t;
        uint64_t weight_bytes = 0;
        int built = build(models[i].model, 16, 0, 1, &t) == UMADV_OK && t.finalized;

        ok(built && t.niterations == 1 && strncmp(t.source, "synthetic ", 10) == 0 &&
           strcmp(t.device.name, "NVIDIA H200") == 0, "%s builds and finalizes", models[i].model);
        if (!built) {
            for (int k = 0; k < 4; k++)
                skip("no trace", models[i].model);
            continue;
        }
        ok(check_order(&t, models[i].opt) && count_fwd(&t) == models[i].layers,
           "%s: %u fwd, loss, bwd in reverse, %s", models[i].model, models[i].layers,
           models[i].opt);
        ok(check_lifetimes(&t), "%s: transients written first, freed after last read",
           models[i].model);
        ok(check_weights(&t, models[i].opt, &weight_bytes),
           "%s: weights read in fwd/bwd, written only by %s", models[i].model, models[i].opt);
        if (models[i].params)
            is_u64(weight_bytes, models[i].params * 4, "%s: parameter bytes as published",
                   models[i].model);
        else
            ok(weight_bytes > 0, "%s: has parameters", models[i].model);
        umadv__trace_cleanup(&t);
    }
}

static uint32_t count_convs(const umadv_trace_t *t)
{
    uint32_t n = 0;

    for (uint32_t s = 0; s < t->nsteps; s++)
        n += has_suffix(t->steps[s].name, ".fwd") &&
             (strstr(t->steps[s].name, "conv") || strstr(t->steps[s].name, "downsample"));
    return n;
}

static void test_depth(void)
{
    static const uint32_t deep[] = {9, 101};
    umadv_trace_t t;

    for (size_t i = 0; i < UMADV_ARRAY_SIZE(deep); i++) {
        if (build("resnet-deep", 4, deep[i], 1, &t) != UMADV_OK) {
            ok(0, "resnet-deep depth %u builds", deep[i]);
            continue;
        }
        ok(count_convs(&t) == deep[i] && count_fwd(&t) == deep[i] + 2 &&
           t.nsteps == 2 * (deep[i] + 2) + 2 && check_order(&t, "sgd"),
           "resnet-deep depth %u: %u convolutions, %u steps", deep[i], deep[i],
           2 * (deep[i] + 2) + 2);
        umadv__trace_cleanup(&t);
    }
    if (build("gpt2", 1, 2, 1, &t) != UMADV_OK) {
        ok(0, "gpt2 depth 2 builds");
        return;
    }
    ok(count_fwd(&t) == 7 * 2 + 3 && t.nsteps == 2 * (7 * 2 + 3) + 2 &&
       check_order(&t, "adam") && find_alloc(&t, "h1.mlp.fc.weight") != NONE &&
       find_alloc(&t, "h2.mlp.fc.weight") == NONE, "gpt2 depth 2: two blocks, 36 steps");
    umadv__trace_cleanup(&t);
}

static int same_trace(const umadv_trace_t *a, const umadv_trace_t *b)
{
    if (a->nallocs != b->nallocs || a->nsteps != b->nsteps || a->naccesses != b->naccesses ||
        a->nsections != b->nsections || strcmp(a->source, b->source) != 0 ||
        memcmp(&a->device, &b->device, sizeof(a->device)) != 0 ||
        memcmp(&a->link, &b->link, sizeof(a->link)) != 0 ||
        memcmp(a->accesses, b->accesses, a->naccesses * sizeof(*a->accesses)) != 0 ||
        memcmp(a->sections, b->sections, a->nsections * sizeof(*a->sections)) != 0)
        return 0;
    for (uint32_t i = 0; i < a->nallocs; i++) {
        const umadv_trace_alloc_t *x = &a->allocs[i], *y = &b->allocs[i];
        if (x->size != y->size || x->kind != y->kind || x->alloc_step != y->alloc_step ||
            x->free_step != y->free_step || x->first_section != y->first_section ||
            strcmp(x->tag, y->tag) != 0)
            return 0;
    }
    for (uint32_t i = 0; i < a->nsteps; i++) {
        const umadv_trace_step_t *x = &a->steps[i], *y = &b->steps[i];
        if (strcmp(x->name, y->name) != 0 || x->kind != y->kind ||
            x->iteration != y->iteration || x->duration_ns != y->duration_ns ||
            x->first_access != y->first_access || x->naccesses != y->naccesses)
            return 0;
    }
    return 1;
}

static void test_determinism(void)
{
    umadv_trace_t a, b;

    if (build("resnet50", 8, 0, 2, &a) != UMADV_OK) {
        ok(0, "resnet50 builds");
        return;
    }
    if (build("resnet50", 8, 0, 2, &b) != UMADV_OK) {
        ok(0, "resnet50 builds again");
        umadv__trace_cleanup(&a);
        return;
    }
    ok(same_trace(&a, &b), "same parameters, identical trace");
    umadv__trace_cleanup(&a);
    umadv__trace_cleanup(&b);
}

static uint64_t model_peak(const char *model, uint32_t batch)
{
    umadv_trace_t t;
    uint64_t peak;

    if (build(model, batch, 0, 1, &t) != UMADV_OK)
        return 0;
    peak = peak_live(&t);
    umadv__trace_cleanup(&t);
    return peak;
}

static void test_footprint(void)
{
    static const char *const models[] = {"vgg16", "resnet50", "gpt2"};

    for (size_t i = 0; i < UMADV_ARRAY_SIZE(models); i++) {
        double p1 = (double)model_peak(models[i], 2), p2 = (double)model_peak(models[i], 4);
        double p4 = (double)model_peak(models[i], 8);
        ok(p1 > 0 && p2 > p1 && p4 > p2 && fabs((p4 - p2) - 2 * (p2 - p1)) <= 0.01 * (p4 - p2),
           "%s: peak live bytes linear in batch (%.0f, %.0f, %.0f MiB)", models[i],
           p1 / (1 << 20), p2 / (1 << 20), p4 / (1 << 20));
    }
}

/* The calibration contract: DESIGN.md's native H200 runs, fp32, batch 256,
 * and peaks in PyTorch's range (ours leaves out its allocator's slack). */
static void test_calibration(void)
{
    static const struct {
        const char *model;
        double      ms, gib;
    } runs[] = {{"vgg16", 182.5, 19.56}, {"resnet50", 115.5, 20.94}};

    for (size_t i = 0; i < UMADV_ARRAY_SIZE(runs); i++) {
        umadv_trace_t t;
        double gib;

        if (build(runs[i].model, 256, 0, 1, &t) != UMADV_OK) {
            ok(0, "%s batch 256 builds", runs[i].model);
            ok(0, "%s batch 256 builds", runs[i].model);
            continue;
        }
        is_near(iteration_ms(&t, 0), runs[i].ms, 0.2, "%s batch 256: %.1f ms per iteration",
                runs[i].model, iteration_ms(&t, 0));
        gib = (double)peak_live(&t) / (double)UMADV_GIB;
        ok(gib > 0.75 * runs[i].gib && gib <= 1.05 * runs[i].gib,
           "%s batch 256: peak %.2f GiB, PyTorch %.2f", runs[i].model, gib, runs[i].gib);
        umadv__trace_cleanup(&t);
    }
}

static void test_flops_param(void)
{
    umadv_synth_params_t params;
    umadv_trace_t slow, fast;
    double ms_slow, ms_fast;

    umadv__synth_params_default("vgg16", &params);
    params.batch = 32;
    params.flops = 50e12;
    if (umadv__synth_build(&params, &slow) != UMADV_OK) {
        ok(0, "vgg16 at 50 TFLOP/s builds");
        return;
    }
    params.flops = 100e12;
    if (umadv__synth_build(&params, &fast) != UMADV_OK) {
        ok(0, "vgg16 at 100 TFLOP/s builds");
        umadv__trace_cleanup(&slow);
        return;
    }
    ms_slow = iteration_ms(&slow, 0);
    ms_fast = iteration_ms(&fast, 0);
    /* Compute halves, memory-bound steps (pools, sgd) stay. */
    ok(ms_fast < ms_slow && ms_fast > ms_slow / 2 && ms_fast < 0.6 * ms_slow,
       "twice the FLOP/s: %.1f -> %.1f ms", ms_slow, ms_fast);
    umadv__trace_cleanup(&slow);
    umadv__trace_cleanup(&fast);
}

/* Persistent allocations are the same ids in both iterations; each
 * transient belongs to exactly one. */
static void test_iterations(void)
{
    umadv_trace_t t;
    uint32_t first[2], count[2], shared = 0, persistent = 0, trans[2] = {0, 0}, mixed = 0;

    if (build("resnet50", 4, 0, 2, &t) != UMADV_OK ||
        umadv__trace_iteration_steps(&t, 0, &first[0], &count[0]) != UMADV_OK ||
        umadv__trace_iteration_steps(&t, 1, &first[1], &count[1]) != UMADV_OK) {
        ok(0, "resnet50 with 2 iterations builds");
        ok(0, "persistent allocations shared");
        ok(0, "transients distinct");
        return;
    }
    ok(t.niterations == 2 && count[0] == count[1] && first[1] == count[0] &&
       strcmp(t.steps[first[1]].name, t.steps[first[0]].name) == 0,
       "2 iterations of %u steps", count[0]);
    for (uint32_t a = 0; a < t.nallocs; a++) {
        int in[2] = {0, 0};
        for (int it = 0; it < 2; it++)
            for (uint32_t s = first[it]; s < first[it] + count[it]; s++)
                in[it] |= step_mode(&t, s, a) != 0;
        if (t.allocs[a].alloc_step == NONE) {
            persistent++;
            shared += in[0] && in[1];
        } else {
            mixed += in[0] && in[1];
            trans[0] += in[0];
            trans[1] += in[1];
        }
    }
    ok(persistent > 0 && shared == persistent && find_alloc(&t, "conv1.weight") != NONE,
       "%u persistent allocations, all used by both iterations", persistent);
    ok(mixed == 0 && trans[0] == trans[1] && trans[0] + trans[1] == t.nallocs - persistent,
       "transients distinct per iteration (%u each)", trans[0]);
    umadv__trace_cleanup(&t);
}

/* The full-depth model builds (its time is a diagnostic, not a check:
 * speed is measured by bench/, never by a timed test). */
static void test_full_depth(void)
{
    umadv_trace_t t;
    uint64_t start = umadv__now_ns();
    umadv_status_t status = build("resnet-deep", 256, 0, 1, &t);

    ok(status == UMADV_OK && t.nsteps == 2 * (1517 + 2) + 2,
       "resnet-deep 1517 layers builds, %u steps", status == UMADV_OK ? t.nsteps : 0);
    diag("resnet-deep 1517 layers built in %.1f ms", (umadv__now_ns() - start) / 1e6);
    if (status == UMADV_OK)
        umadv__trace_cleanup(&t);
}

/* Call with one bad field; expect INVALID_PARAM, an untouched output and
 * an error that names @word. */
static void expect_bad(const char *log_path, const umadv_synth_params_t *params,
                       const char *word, const char *what)
{
    umadv_trace_t t, before;
    umadv_status_t status;
    char text[512] = "";
    long offset;
    FILE *f;

    memset(&t, 0xa5, sizeof(t));
    before = t;
    f = fopen(log_path, "r");
    fseek(f, 0, SEEK_END);
    offset = ftell(f);
    status = umadv__synth_build(params, &t);
    fseek(f, offset, SEEK_SET);
    text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
    fclose(f);
    ok(status == UMADV_ERR_INVALID_PARAM && memcmp(&t, &before, sizeof(t)) == 0 &&
       strstr(text, word) != NULL, "%s refused, error names '%s'", what, word);
    if (status == UMADV_OK)
        umadv__trace_cleanup(&t);
}

static void test_bad_params(void)
{
    char path[] = "/tmp/umadv-test-synth-XXXXXX";
    umadv_synth_params_t p;
    int fd = mkstemp(path);

    close(fd);
    umadv__log_level = UMADV_LOG_ERROR;
    umadv__log_set_file(path);
#define BAD(_model, _field, _value, _word, _what) \
    do { \
        umadv__synth_params_default(_model, &p); \
        p._field = _value; \
        expect_bad(path, &p, _word, _what); \
    } while (0)
    BAD("vgg16", model, "alexnet", "model", "unknown model");
    BAD("vgg16", model, NULL, "model", "no model");
    BAD("vgg16", batch, 0, "batch", "batch 0");
    BAD("gpt2", batch, UINT32_MAX, "batch", "batch 2^32-1");
    BAD("resnet-deep", depth, 1u << 30, "depth", "resnet-deep depth 2^30");
    BAD("resnet-deep", depth, 100, "depth", "resnet-deep even depth");
    BAD("resnet-deep", depth, 7, "depth", "resnet-deep depth 7");
    BAD("vgg16", depth, 19, "depth", "vgg16 depth 19");
    BAD("gpt2", depth, 5000, "depth", "gpt2 5000 blocks");
    BAD("resnet50", iterations, 0, "iterations", "0 iterations");
    BAD("resnet50", section_size, 3 << 20, "section_size", "3 MiB sections");
    BAD("resnet50", flops, -1, "flops", "negative FLOP/s");
    BAD("resnet50", flops, NAN, "flops", "NaN FLOP/s");
#undef BAD
    umadv__log_set_file(NULL);
    unlink(path);
}

int main(void)
{
    plan(4 * 5 + 3 + 1 + 3 + 4 + 1 + 3 + 1 + 13);
    test_models();
    test_depth();
    test_determinism();
    test_footprint();
    test_calibration();
    test_flops_param();
    test_iterations();
    test_full_depth();
    test_bad_params();
    return exit_status();
}
