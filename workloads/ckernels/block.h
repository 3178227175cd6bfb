/* One GPT-2 style transformer block (pre-layernorm, causal self-attention, GELU MLP, dropout on
 * the MLP's residual branch) built from the kernels, with its forward and backward passes. */
#ifndef CKERNELS_BLOCK_H
#define CKERNELS_BLOCK_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int B, T, C, NH;
} Shape;

/* Parameters (and their gradients) in one allocation, in this order. */
enum {
    P_LN1W, P_LN1B, P_QKVW, P_QKVB, P_ATTPROJW, P_ATTPROJB,
    P_LN2W, P_LN2B, P_FCW, P_FCB, P_FCPROJW, P_FCPROJB,
    NPARAMS
};

typedef struct {
    float *mem;
    size_t total;
    float *t[NPARAMS];
    size_t n[NPARAMS];
} Params;

/* What the forward pass keeps for the backward pass, and the output. */
typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att, *attproj, *res1;
    float *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu, *fcproj, *drop, *out;
    long kept; /* elements the dropout kept */
} Acts;

/* Gradient buffers for the activations (the parameter gradients live in a Params). */
typedef struct {
    float *dres1, *dfcproj, *dfch_gelu, *dfch, *dln2, *datty, *dqkv, *dln1, *dx;
    float *scratch;
} Grads;

extern const char *const PARAM_NAMES[NPARAMS];

/* All return 0 on success, -1 when out of memory. */
int params_alloc(Params *p, Shape s);
void params_free(Params *p);
int acts_alloc(Acts *a, Shape s);
void acts_free(Acts *a);
int grads_alloc(Grads *g, Shape s);
void grads_free(Grads *g);

#define DROPOUT_P 0.1f

void block_forward(Acts *a, const Params *p, const float *x, Shape s, uint32_t seed);
/* Zeroes every gradient, then backpropagates dout (the gradient of the loss w.r.t. a->out). */
void block_backward(Grads *g, Params *dp, const Acts *a, const Params *p, const float *x,
                    const float *dout, Shape s, uint32_t seed);

#endif
