/* splitmix64 streams turned into uniform floats; see data.h. */
#include "data.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    uint64_t state;
} Rng;

static Rng rng_stream(uint64_t seed, uint64_t stream) {
    Rng r = {seed ^ (stream * 0xd1b54a32d192ed03ULL)};
    return r;
}

static uint64_t rng_next(Rng *r) {
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1), exactly representable (24 random bits). */
static float rng_uniform(Rng *r) {
    return (float)(rng_next(r) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

static void fill(float *v, size_t n, Rng *r, float center, float spread) {
    for (size_t i = 0; i < n; i++) {
        v[i] = center + spread * rng_uniform(r);
    }
}

int inputs_alloc(Inputs *in, Shape s) {
    size_t n = (size_t)s.B * s.T * s.C;
    in->x = malloc(n * sizeof(float));
    in->dout = malloc(n * sizeof(float));
    if (!in->x || !in->dout) {
        inputs_free(in);
        return -1;
    }
    return 0;
}

void inputs_free(Inputs *in) {
    free(in->x);
    free(in->dout);
    in->x = in->dout = NULL;
}

void fill_params(Params *p, Shape s, uint64_t seed) {
    /* Weights uniform with unit output variance (sqrt(3 / fan_in)), small biases, layernorm
     * gains near 1, so every activation stays of order 1. */
    float c = (float)s.C;
    for (int i = 0; i < NPARAMS; i++) {
        Rng r = rng_stream(seed, 100 + (uint64_t)i);
        float center = 0.0f, spread = 0.1f;
        switch (i) {
        case P_LN1W:
        case P_LN2W: center = 1.0f; break;
        case P_QKVW:
        case P_ATTPROJW:
        case P_FCW: spread = sqrtf(3.0f / c); break;
        case P_FCPROJW: spread = sqrtf(3.0f / (4.0f * c)); break;
        default: break;
        }
        fill(p->t[i], p->n[i], &r, center, spread);
    }
}

void fill_inputs(Inputs *in, Shape s, uint64_t seed) {
    size_t n = (size_t)s.B * s.T * s.C;
    Rng rx = rng_stream(seed, 1);
    Rng rd = rng_stream(seed, 2);
    fill(in->x, n, &rx, 0.0f, 1.0f);
    fill(in->dout, n, &rd, 0.0f, 1.0f);
}

uint32_t dropout_seed(uint64_t seed) {
    Rng r = rng_stream(seed, 3);
    return (uint32_t)(rng_next(&r) >> 32);
}
