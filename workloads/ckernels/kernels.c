/* The kernels a GPT block spends its time in. These are the straightforward versions: each
 * output of the forward matmul is one serial dot product, which is what the candidates in
 * campaigns/c_kernels/ try to speed up. */
#include "kernels.h"

#include <math.h>
#include <stddef.h>

/* ---- matmul ------------------------------------------------------------------------------- */

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                    int BT, int C, int OC) {
    for (int bt = 0; bt < BT; bt++) {
        const float *x = inp + (size_t)bt * C;
        float *y = out + (size_t)bt * OC;
        for (int o = 0; o < OC; o++) {
            const float *w = weight + (size_t)o * C;
            float acc = bias ? bias[o] : 0.0f;
            for (int i = 0; i < C; i++) {
                acc += x[i] * w[i];
            }
            y[o] = acc;
        }
    }
}

void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int BT, int C, int OC) {
    /* dinp = dout @ weight: each row of dinp gathers the weight rows scaled by dout. */
    for (int bt = 0; bt < BT; bt++) {
        const float *dy = dout + (size_t)bt * OC;
        float *dx = dinp + (size_t)bt * C;
        for (int o = 0; o < OC; o++) {
            const float *w = weight + (size_t)o * C;
            float d = dy[o];
            for (int i = 0; i < C; i++) {
                dx[i] += d * w[i];
            }
        }
    }
    /* dweight = dout^T @ inp, dbias = column sums of dout. */
    for (int o = 0; o < OC; o++) {
        float *dw = dweight + (size_t)o * C;
        float db = 0.0f;
        for (int bt = 0; bt < BT; bt++) {
            const float *x = inp + (size_t)bt * C;
            float d = dout[(size_t)bt * OC + o];
            db += d;
            for (int i = 0; i < C; i++) {
                dw[i] += d * x[i];
            }
        }
        if (dbias) {
            dbias[o] += db;
        }
    }
}

/* ---- layernorm ---------------------------------------------------------------------------- */

#define LN_EPS 1e-5f

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                       const float *weight, const float *bias, int BT, int C) {
    for (int bt = 0; bt < BT; bt++) {
        const float *x = inp + (size_t)bt * C;
        float *y = out + (size_t)bt * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++) {
            m += x[i];
        }
        m /= (float)C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) {
            float d = x[i] - m;
            v += d * d;
        }
        v /= (float)C;
        float s = 1.0f / sqrtf(v + LN_EPS);
        for (int i = 0; i < C; i++) {
            y[i] = (x[i] - m) * s * weight[i] + bias[i];
        }
        mean[bt] = m;
        rstd[bt] = s;
    }
}

void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *mean,
                        const float *rstd, int BT, int C) {
    for (int bt = 0; bt < BT; bt++) {
        const float *dy = dout + (size_t)bt * C;
        const float *x = inp + (size_t)bt * C;
        float *dx = dinp + (size_t)bt * C;
        float m = mean[bt];
        float s = rstd[bt];
        /* The two row means the normalization's Jacobian needs. */
        float mean_dn = 0.0f;
        float mean_dn_n = 0.0f;
        for (int i = 0; i < C; i++) {
            float n = (x[i] - m) * s;
            float dn = weight[i] * dy[i];
            mean_dn += dn;
            mean_dn_n += dn * n;
        }
        mean_dn /= (float)C;
        mean_dn_n /= (float)C;
        for (int i = 0; i < C; i++) {
            float n = (x[i] - m) * s;
            float dn = weight[i] * dy[i];
            dbias[i] += dy[i];
            dweight[i] += n * dy[i];
            dx[i] += s * (dn - mean_dn - n * mean_dn_n);
        }
    }
}

/* ---- causal softmax attention ------------------------------------------------------------- */

void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH) {
    int hs = C / NH;
    size_t C3 = (size_t)3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < NH; h++) {
                const float *q = qkv + ((size_t)b * T + t) * C3 + (size_t)h * hs;
                float *a = att + (((size_t)b * NH + h) * T + t) * T;
                float maxv = -INFINITY;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *k = qkv + ((size_t)b * T + t2) * C3 + C + (size_t)h * hs;
                    float dot = 0.0f;
                    for (int i = 0; i < hs; i++) {
                        dot += q[i] * k[i];
                    }
                    dot *= scale;
                    a[t2] = dot;
                    if (dot > maxv) {
                        maxv = dot;
                    }
                }
                float sum = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    float e = expf(a[t2] - maxv);
                    a[t2] = e;
                    sum += e;
                }
                float inv = 1.0f / sum;
                for (int t2 = 0; t2 < T; t2++) {
                    a[t2] = t2 <= t ? a[t2] * inv : 0.0f;
                }
                float *y = out + ((size_t)b * T + t) * C + (size_t)h * hs;
                for (int i = 0; i < hs; i++) {
                    y[i] = 0.0f;
                }
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *v = qkv + ((size_t)b * T + t2) * C3 + 2 * (size_t)C + (size_t)h * hs;
                    float w = a[t2];
                    for (int i = 0; i < hs; i++) {
                        y[i] += w * v[i];
                    }
                }
            }
        }
    }
}

void attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                        const float *att, int B, int T, int C, int NH) {
    int hs = C / NH;
    size_t C3 = (size_t)3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    float *datt = scratch;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < NH; h++) {
                size_t row = ((size_t)b * T + t) * C3 + (size_t)h * hs;
                const float *q = qkv + row;
                float *dq = dqkv + row;
                const float *a = att + (((size_t)b * NH + h) * T + t) * T;
                const float *dy = dout + ((size_t)b * T + t) * C + (size_t)h * hs;
                /* Through the weighted sum of values. */
                for (int t2 = 0; t2 <= t; t2++) {
                    size_t vrow = ((size_t)b * T + t2) * C3 + 2 * (size_t)C + (size_t)h * hs;
                    const float *v = qkv + vrow;
                    float *dv = dqkv + vrow;
                    float d = 0.0f;
                    for (int i = 0; i < hs; i++) {
                        d += dy[i] * v[i];
                        dv[i] += a[t2] * dy[i];
                    }
                    datt[t2] = d;
                }
                /* Through the softmax: dpre = a * (datt - sum(a * datt)). */
                float s = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    s += a[t2] * datt[t2];
                }
                /* Through the scaled dot products. */
                for (int t2 = 0; t2 <= t; t2++) {
                    size_t krow = ((size_t)b * T + t2) * C3 + C + (size_t)h * hs;
                    const float *k = qkv + krow;
                    float *dk = dqkv + krow;
                    float dpre = a[t2] * (datt[t2] - s) * scale;
                    for (int i = 0; i < hs; i++) {
                        dq[i] += dpre * k[i];
                        dk[i] += dpre * q[i];
                    }
                }
            }
        }
    }
}

/* ---- GELU (tanh approximation) ------------------------------------------------------------ */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_A 0.044715f

void gelu_forward(float *out, const float *inp, int n) {
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_K * (x + GELU_A * x * x * x);
        out[i] = 0.5f * x * (1.0f + tanhf(u));
    }
}

void gelu_backward(float *dinp, const float *inp, const float *dout, int n) {
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_K * (x + GELU_A * x * x * x);
        float th = tanhf(u);
        float sech2 = 1.0f - th * th;
        float du = GELU_K * (1.0f + 3.0f * GELU_A * x * x);
        float grad = 0.5f * (1.0f + th) + 0.5f * x * sech2 * du;
        dinp[i] += grad * dout[i];
    }
}

/* ---- dropout ------------------------------------------------------------------------------ */

/* A 32-bit integer finalizer: every input bit affects every output bit. */
static inline uint32_t hash32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* The random bits for element i: a Weyl sequence over the index, then the finalizer. */
static inline uint32_t dropout_bits(uint32_t seed, int i) {
    return hash32(seed + (uint32_t)i * 0x61c88647U);
}

static inline uint32_t dropout_threshold(float p) {
    return (uint32_t)(p * 16777216.0f); /* p in units of 2^-24 */
}

long dropout_forward(float *out, const float *inp, int n, float p, uint32_t seed) {
    uint32_t thr = dropout_threshold(p);
    float keep_scale = 1.0f / (1.0f - p);
    long kept = 0;
    for (int i = 0; i < n; i++) {
        int keep = (dropout_bits(seed, i) >> 8) >= thr;
        out[i] = keep ? inp[i] * keep_scale : 0.0f;
        kept += keep;
    }
    return kept;
}

void dropout_backward(float *dinp, const float *dout, int n, float p, uint32_t seed) {
    uint32_t thr = dropout_threshold(p);
    float keep_scale = 1.0f / (1.0f - p);
    for (int i = 0; i < n; i++) {
        int keep = (dropout_bits(seed, i) >> 8) >= thr;
        dinp[i] += keep ? dout[i] * keep_scale : 0.0f;
    }
}

/* ---- residual ----------------------------------------------------------------------------- */

void residual_forward(float *out, const float *a, const float *b, int n) {
    for (int i = 0; i < n; i++) {
        out[i] = a[i] + b[i];
    }
}
