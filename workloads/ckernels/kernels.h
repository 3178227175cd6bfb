/* GPT-style forward/backward kernels on float32, row-major, single-threaded.
 *
 * Shapes follow a transformer block: BT = B*T rows of C channels. A linear layer's weight is
 * stored [OC][C] (one row per output channel), so out = inp @ weight^T + bias. Backward kernels
 * ACCUMULATE (+=) into their gradient buffers, as a trainer's backward pass does; callers zero
 * them first. qkv rows hold [q | k | v], each C wide, heads laid out contiguously inside each. */
#ifndef CKERNELS_KERNELS_H
#define CKERNELS_KERNELS_H

#include <stdint.h>

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                    int BT, int C, int OC);
void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int BT, int C, int OC);

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                       const float *weight, const float *bias, int BT, int C);
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *mean,
                        const float *rstd, int BT, int C);

/* Causal multi-head softmax attention. att is [B][NH][T][T] (post-softmax, zero above the
 * diagonal) and is kept for the backward pass; scratch needs T floats. */
void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
void attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                        const float *att, int B, int T, int C, int NH);

/* GELU, tanh approximation. */
void gelu_forward(float *out, const float *inp, int n);
void gelu_backward(float *dinp, const float *inp, const float *dout, int n);

/* Inverted dropout with probability p; the mask is a counter-based hash of (seed, index), so
 * the backward pass recomputes it instead of storing it. Returns the number of kept elements. */
long dropout_forward(float *out, const float *inp, int n, float p, uint32_t seed);
void dropout_backward(float *dinp, const float *dout, int n, float p, uint32_t seed);

void residual_forward(float *out, const float *a, const float *b, int n);

#endif
