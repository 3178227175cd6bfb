/* The forward and backward passes of one block: which kernel runs on which buffer. */
#include "block.h"

#include <stdlib.h>
#include <string.h>

#include "kernels.h"

const char *const PARAM_NAMES[NPARAMS] = {
    "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb",
};

static size_t bt_of(Shape s) { return (size_t)s.B * s.T; }

int params_alloc(Params *p, Shape s) {
    size_t C = (size_t)s.C;
    size_t sizes[NPARAMS] = {
        C, C, 3 * C * C, 3 * C, C * C, C,
        C, C, 4 * C * C, 4 * C, C * 4 * C, C,
    };
    p->total = 0;
    for (int i = 0; i < NPARAMS; i++) {
        p->n[i] = sizes[i];
        p->total += sizes[i];
    }
    p->mem = calloc(p->total, sizeof(float));
    if (!p->mem) {
        return -1;
    }
    float *cur = p->mem;
    for (int i = 0; i < NPARAMS; i++) {
        p->t[i] = cur;
        cur += sizes[i];
    }
    return 0;
}

void params_free(Params *p) {
    free(p->mem);
    p->mem = NULL;
}

/* Allocates each listed buffer with calloc; on failure frees what was allocated. */
static int alloc_all(float **bufs[], const size_t sizes[], int n) {
    for (int i = 0; i < n; i++) {
        *bufs[i] = calloc(sizes[i], sizeof(float));
        if (!*bufs[i]) {
            for (int j = 0; j < i; j++) {
                free(*bufs[j]);
                *bufs[j] = NULL;
            }
            return -1;
        }
    }
    return 0;
}

int acts_alloc(Acts *a, Shape s) {
    size_t BT = bt_of(s), C = (size_t)s.C;
    size_t att = (size_t)s.B * s.NH * s.T * s.T;
    float **bufs[] = {&a->ln1, &a->ln1_mean, &a->ln1_rstd, &a->qkv, &a->atty, &a->att,
                      &a->attproj, &a->res1, &a->ln2, &a->ln2_mean, &a->ln2_rstd, &a->fch,
                      &a->fch_gelu, &a->fcproj, &a->drop, &a->out};
    size_t sizes[] = {BT * C, BT, BT, BT * 3 * C, BT * C, att,
                      BT * C, BT * C, BT * C, BT, BT, BT * 4 * C,
                      BT * 4 * C, BT * C, BT * C, BT * C};
    a->kept = 0;
    return alloc_all(bufs, sizes, (int)(sizeof sizes / sizeof sizes[0]));
}

void acts_free(Acts *a) {
    float *bufs[] = {a->ln1, a->ln1_mean, a->ln1_rstd, a->qkv, a->atty, a->att,
                     a->attproj, a->res1, a->ln2, a->ln2_mean, a->ln2_rstd, a->fch,
                     a->fch_gelu, a->fcproj, a->drop, a->out};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(bufs[i]);
    }
}

int grads_alloc(Grads *g, Shape s) {
    size_t BT = bt_of(s), C = (size_t)s.C;
    float **bufs[] = {&g->dres1, &g->dfcproj, &g->dfch_gelu, &g->dfch, &g->dln2,
                      &g->datty, &g->dqkv, &g->dln1, &g->dx, &g->scratch};
    size_t sizes[] = {BT * C, BT * C, BT * 4 * C, BT * 4 * C, BT * C,
                      BT * C, BT * 3 * C, BT * C, BT * C, (size_t)s.T};
    return alloc_all(bufs, sizes, (int)(sizeof sizes / sizeof sizes[0]));
}

void grads_free(Grads *g) {
    float *bufs[] = {g->dres1, g->dfcproj, g->dfch_gelu, g->dfch, g->dln2,
                     g->datty, g->dqkv, g->dln1, g->dx, g->scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(bufs[i]);
    }
}

void block_forward(Acts *a, const Params *p, const float *x, Shape s, uint32_t seed) {
    int BT = (int)bt_of(s), C = s.C;
    float *const *w = p->t;
    layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, x, w[P_LN1W], w[P_LN1B], BT, C);
    matmul_forward(a->qkv, a->ln1, w[P_QKVW], w[P_QKVB], BT, C, 3 * C);
    attention_forward(a->atty, a->att, a->qkv, s.B, s.T, C, s.NH);
    matmul_forward(a->attproj, a->atty, w[P_ATTPROJW], w[P_ATTPROJB], BT, C, C);
    residual_forward(a->res1, x, a->attproj, BT * C);
    layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->res1, w[P_LN2W], w[P_LN2B], BT, C);
    matmul_forward(a->fch, a->ln2, w[P_FCW], w[P_FCB], BT, C, 4 * C);
    gelu_forward(a->fch_gelu, a->fch, BT * 4 * C);
    matmul_forward(a->fcproj, a->fch_gelu, w[P_FCPROJW], w[P_FCPROJB], BT, 4 * C, C);
    a->kept = dropout_forward(a->drop, a->fcproj, BT * C, DROPOUT_P, seed);
    residual_forward(a->out, a->res1, a->drop, BT * C);
}

void block_backward(Grads *g, Params *dp, const Acts *a, const Params *p, const float *x,
                    const float *dout, Shape s, uint32_t seed) {
    size_t BT = bt_of(s), C = (size_t)s.C;
    int bt = (int)BT, c = s.C;
    float *const *w = p->t;
    float *const *dw = dp->t;
    memset(dp->mem, 0, dp->total * sizeof(float));
    float *bufs[] = {g->dfcproj, g->dfch_gelu, g->dfch, g->dln2,
                     g->datty, g->dqkv, g->dln1};
    size_t sizes[] = {BT * C, BT * 4 * C, BT * 4 * C, BT * C,
                      BT * C, BT * 3 * C, BT * C};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        memset(bufs[i], 0, sizes[i] * sizeof(float));
    }

    /* out = res1 + dropout(fcproj) */
    memcpy(g->dres1, dout, BT * C * sizeof(float));
    dropout_backward(g->dfcproj, dout, bt * c, DROPOUT_P, seed);
    /* MLP */
    matmul_backward(g->dfch_gelu, dw[P_FCPROJW], dw[P_FCPROJB], g->dfcproj, a->fch_gelu,
                    w[P_FCPROJW], bt, 4 * c, c);
    gelu_backward(g->dfch, a->fch, g->dfch_gelu, bt * 4 * c);
    matmul_backward(g->dln2, dw[P_FCW], dw[P_FCB], g->dfch, a->ln2, w[P_FCW], bt, c, 4 * c);
    layernorm_backward(g->dres1, dw[P_LN2W], dw[P_LN2B], g->dln2, a->res1, w[P_LN2W],
                       a->ln2_mean, a->ln2_rstd, bt, c);
    /* res1 = x + attproj(attention(qkv(ln1(x)))) */
    memcpy(g->dx, g->dres1, BT * C * sizeof(float));
    matmul_backward(g->datty, dw[P_ATTPROJW], dw[P_ATTPROJB], g->dres1, a->atty,
                    w[P_ATTPROJW], bt, c, c);
    attention_backward(g->dqkv, g->scratch, g->datty, a->qkv, a->att, s.B, s.T, c, s.NH);
    matmul_backward(g->dln1, dw[P_QKVW], dw[P_QKVB], g->dqkv, a->ln1, w[P_QKVW], bt, c, 3 * c);
    layernorm_backward(g->dx, dw[P_LN1W], dw[P_LN1B], g->dln1, x, w[P_LN1W], a->ln1_mean,
                       a->ln1_rstd, bt, c);
}
