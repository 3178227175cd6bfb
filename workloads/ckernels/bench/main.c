/* The harness: parses arguments, generates the inputs, runs one block's forward and backward
 * passes, and prints what the differential lane compares.
 *
 *   ckernels check    [--seed N] [--B N] [--T N] [--C N] [--NH N]     (default 3 11 40 4)
 *   ckernels bench    [--seed N] [--B N] [--T N] [--C N] [--NH N] [--iters N]
 *                                                          (default 4 64 128 4, 6 iterations)
 *   ckernels selftest
 *
 * check prints every activation and gradient as its RMS plus, in units of that RMS, its mean and
 * five samples (%.9g), so one numeric tolerance means the same thing for every tensor (see
 * README.md). bench runs forward+backward --iters times, each iteration on fresh inputs and a
 * fresh dropout key derived from the seed and the iteration's number, and after each iteration
 * prints the output and every gradient in the same form: everything it computed shows in what it
 * prints, and no iteration repeats another's inputs, so a result replayed from an earlier run or
 * iteration is the answer to another question. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../block.h"
#include "data.h"

int run_selftest(void); /* tests/selftest.c */

typedef struct {
    const char *mode;
    uint64_t seed;
    Shape shape;
    int iters;
} Args;

static int usage(const char *msg) {
    fprintf(stderr,
            "ckernels: %s\n"
            "usage: ckernels check|bench|selftest [--seed N] [--B N] [--T N] [--C N] [--NH N] "
            "[--iters N]\n",
            msg);
    return 2;
}

static int parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-') {
        return -1;
    }
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) {
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

static int parse_pos_int(const char *s, int *out) {
    uint64_t v;
    if (parse_u64(s, &v) || v == 0 || v > 1000000) {
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Returns 0, or the exit code of a usage error. */
static int parse_args(int argc, char **argv, Args *a) {
    if (argc < 2) {
        return usage("missing mode");
    }
    a->mode = argv[1];
    int bench = strcmp(a->mode, "bench") == 0;
    a->seed = 1;
    a->iters = 6;
    a->shape = bench ? (Shape){4, 64, 128, 4} : (Shape){3, 11, 40, 4};
    for (int i = 2; i < argc; i += 2) {
        const char *key = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int bad;
        if (strcmp(key, "--seed") == 0) {
            bad = parse_u64(val, &a->seed);
        } else if (strcmp(key, "--B") == 0) {
            bad = parse_pos_int(val, &a->shape.B);
        } else if (strcmp(key, "--T") == 0) {
            bad = parse_pos_int(val, &a->shape.T);
        } else if (strcmp(key, "--C") == 0) {
            bad = parse_pos_int(val, &a->shape.C);
        } else if (strcmp(key, "--NH") == 0) {
            bad = parse_pos_int(val, &a->shape.NH);
        } else if (strcmp(key, "--iters") == 0) {
            bad = parse_pos_int(val, &a->iters);
        } else {
            fprintf(stderr, "ckernels: unknown argument `%s`\n", key);
            return usage("bad arguments");
        }
        if (bad) {
            fprintf(stderr, "ckernels: `%s` needs %s, got `%s`\n", key,
                    strcmp(key, "--seed") == 0 ? "an integer in [0, 2^64)"
                                               : "an integer in [1, 1000000]",
                    val ? val : "(nothing)");
            return usage("bad arguments");
        }
    }
    Shape s = a->shape;
    if (s.C % s.NH != 0) {
        return usage("--C must be a multiple of --NH");
    }
    /* The kernels index with int element counts; the largest tensors are [B*T][4C] and the
     * attention map [B][NH][T][T]. */
    double big = fmax(4.0 * s.B * s.T * s.C, (double)s.B * s.NH * s.T * s.T);
    if (big > (double)INT_MAX) {
        return usage("shape too large");
    }
    return 0;
}

typedef struct {
    Params p, dp;
    Acts a;
    Grads g;
    Inputs in;
} Model;

static void model_free(Model *m) {
    params_free(&m->p);
    params_free(&m->dp);
    acts_free(&m->a);
    grads_free(&m->g);
    inputs_free(&m->in);
}

static int model_alloc(Model *m, Shape s) {
    memset(m, 0, sizeof *m);
    if (params_alloc(&m->p, s) || params_alloc(&m->dp, s) || acts_alloc(&m->a, s) ||
        grads_alloc(&m->g, s) || inputs_alloc(&m->in, s)) {
        model_free(m);
        fprintf(stderr, "ckernels: out of memory\n");
        return -1;
    }
    return 0;
}

static double rms_of(const float *v, size_t n) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) {
        ss += (double)v[i] * v[i];
    }
    return sqrt(ss / (double)n);
}

/* One line per tensor: RMS, then mean and samples in units of the RMS. */
static void report(const char *name, const float *v, size_t n) {
    double rms = rms_of(v, n);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        sum += v[i];
    }
    printf("%-9s n=%-7zu rms=%.9g", name, n, rms);
    if (rms == 0.0) {
        printf("\n");
        return;
    }
    printf(" mean_z=%.9g z=", sum / (double)n / rms);
    for (int k = 0; k < 5; k++) {
        size_t i = (size_t)k * (n - 1) / 4;
        printf("%s%.9g", k ? "," : "", v[i] / rms);
    }
    printf("\n");
}

/* The seed of bench iteration `it`: distinct for every iteration of every seed (a bijective mix of
 * the run's seed and the iteration number), so no two iterations compute on the same inputs. */
static uint64_t iteration_seed(uint64_t seed, int it) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(it + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void print_header(const Args *a) {
    Shape s = a->shape;
    printf("%s B=%d T=%d C=%d NH=%d seed=%" PRIu64, a->mode, s.B, s.T, s.C, s.NH, a->seed);
    if (strcmp(a->mode, "bench") == 0) {
        printf(" iters=%d", a->iters);
    }
    printf("\n");
}

static int run(const Args *args) {
    Shape s = args->shape;
    Model m;
    if (model_alloc(&m, s)) {
        return 1;
    }
    fill_params(&m.p, s, args->seed);
    size_t BT = (size_t)s.B * s.T, C = (size_t)s.C;
    print_header(args);
    int bench = strcmp(args->mode, "bench") == 0;
    if (bench) {
        for (int it = 0; it < args->iters; it++) {
            uint64_t seed = iteration_seed(args->seed, it);
            uint32_t dseed = dropout_seed(seed);
            fill_inputs(&m.in, s, seed);
            block_forward(&m.a, &m.p, m.in.x, s, dseed);
            block_backward(&m.g, &m.dp, &m.a, &m.p, m.in.x, m.in.dout, s, dseed);
            printf("iter %d dropout kept=%ld of %zu\n", it, m.a.kept, BT * C);
            report("out", m.a.out, BT * C);
            report("dx", m.g.dx, BT * C);
            for (int i = 0; i < NPARAMS; i++) {
                char name[32];
                snprintf(name, sizeof name, "d%s", PARAM_NAMES[i]);
                report(name, m.dp.t[i], m.dp.n[i]);
            }
        }
    } else {
        uint32_t dseed = dropout_seed(args->seed);
        fill_inputs(&m.in, s, args->seed);
        block_forward(&m.a, &m.p, m.in.x, s, dseed);
        block_backward(&m.g, &m.dp, &m.a, &m.p, m.in.x, m.in.dout, s, dseed);
        printf("dropout kept=%ld of %zu\n", m.a.kept, BT * C);
        const Acts *a = &m.a;
        const Grads *g = &m.g;
        report("ln1", a->ln1, BT * C);
        report("qkv", a->qkv, BT * 3 * C);
        report("att", a->att, (size_t)s.B * s.NH * s.T * s.T);
        report("atty", a->atty, BT * C);
        report("attproj", a->attproj, BT * C);
        report("res1", a->res1, BT * C);
        report("ln2", a->ln2, BT * C);
        report("fch", a->fch, BT * 4 * C);
        report("fch_gelu", a->fch_gelu, BT * 4 * C);
        report("fcproj", a->fcproj, BT * C);
        report("out", a->out, BT * C);
        report("dfch", g->dfch, BT * 4 * C);
        report("dqkv", g->dqkv, BT * 3 * C);
        report("dx", g->dx, BT * C);
        for (int i = 0; i < NPARAMS; i++) {
            char name[32];
            snprintf(name, sizeof name, "d%s", PARAM_NAMES[i]);
            report(name, m.dp.t[i], m.dp.n[i]);
        }
    }
    model_free(&m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && (strcmp(argv[1], "selftest") == 0 || strcmp(argv[1], "--selftest") == 0)) {
        if (argc > 2) {
            return usage("selftest takes no arguments");
        }
        return run_selftest();
    }
    Args args;
    int rc = parse_args(argc, argv, &args);
    if (rc) {
        return rc;
    }
    if (strcmp(args.mode, "check") != 0 && strcmp(args.mode, "bench") != 0) {
        return usage("mode must be check, bench or selftest");
    }
    return run(&args);
}
