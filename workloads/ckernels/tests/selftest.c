/* `ckernels selftest`: the forward kernels against double-precision references, then every
 * gradient of a small block against central finite differences of the loss sum(out * dout).
 * Shapes are deliberately odd (BT = 10, C = 12, 3 heads) so blocked or unrolled kernels must
 * handle their remainders. Exit 0 when everything holds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/data.h"
#include "../block.h"
#include "../kernels.h"

static int failures = 0;

static void expect(int ok, const char *what, double got, double want) {
    if (!ok) {
        failures++;
        printf("FAIL %s: got %.9g, want %.9g\n", what, got, want);
    }
}

static void fill_pattern(float *v, size_t n, unsigned k) {
    for (size_t i = 0; i < n; i++) {
        unsigned h = (unsigned)(i * 2654435761u + k * 40503u);
        v[i] = (float)((h >> 8) % 2001u) / 1000.0f - 1.0f;
    }
}

static void test_matmul_forward(void) {
    enum { BT = 7, C = 13, OC = 11 };
    float x[BT * C], w[OC * C], b[OC], y[BT * OC];
    fill_pattern(x, BT * C, 1);
    fill_pattern(w, OC * C, 2);
    fill_pattern(b, OC, 3);
    matmul_forward(y, x, w, b, BT, C, OC);
    for (int r = 0; r < BT; r++) {
        for (int o = 0; o < OC; o++) {
            double ref = b[o], mag = fabs(b[o]);
            for (int i = 0; i < C; i++) {
                ref += (double)x[r * C + i] * w[o * C + i];
                mag += fabs((double)x[r * C + i] * w[o * C + i]);
            }
            double got = y[r * OC + o];
            expect(fabs(got - ref) <= 1e-6 * mag + 1e-7, "matmul_forward vs double", got, ref);
        }
    }
}

static void test_layernorm_forward(void) {
    enum { BT = 3, C = 37 };
    float x[BT * C], y[BT * C], w[C], b[C], mean[BT], rstd[BT];
    fill_pattern(x, BT * C, 4);
    for (int i = 0; i < C; i++) {
        w[i] = 1.0f;
        b[i] = 0.0f;
    }
    layernorm_forward(y, mean, rstd, x, w, b, BT, C);
    for (int r = 0; r < BT; r++) {
        double m = 0, v = 0;
        for (int i = 0; i < C; i++) {
            m += y[r * C + i];
        }
        m /= C;
        for (int i = 0; i < C; i++) {
            v += (y[r * C + i] - m) * (y[r * C + i] - m);
        }
        v /= C;
        expect(fabs(m) < 1e-6, "layernorm output mean", m, 0.0);
        expect(fabs(v - 1.0) < 1e-3, "layernorm output variance", v, 1.0);
    }
}

static void test_attention_forward(void) {
    enum { B = 2, T = 5, C = 12, NH = 3 };
    float qkv[B * T * 3 * C], out[B * T * C], att[B * NH * T * T];
    fill_pattern(qkv, B * T * 3 * C, 5);
    attention_forward(out, att, qkv, B, T, C, NH);
    for (int row = 0; row < B * NH * T; row++) {
        int t = row % T;
        double sum = 0;
        for (int t2 = 0; t2 < T; t2++) {
            float a = att[row * T + t2];
            if (t2 > t) {
                expect(a == 0.0f, "attention is causal", a, 0.0);
            } else {
                expect(a > 0.0f, "attention weights are positive", a, 0.0);
            }
            sum += a;
        }
        expect(fabs(sum - 1.0) < 1e-6, "attention rows sum to 1", sum, 1.0);
    }
}

static void test_gelu_forward(void) {
    for (int i = -40; i <= 40; i++) {
        float x = (float)i / 8.0f, y;
        gelu_forward(&y, &x, 1);
        double ref = 0.5 * x * (1.0 + tanh(sqrt(2.0 / acos(-1.0)) * (x + 0.044715 * x * x * x)));
        expect(fabs(y - ref) <= 1e-6 * (1.0 + fabs(ref)), "gelu vs double", y, ref);
    }
}

static double loss_of(const Acts *a, const float *dout, size_t n) {
    double l = 0.0;
    for (size_t i = 0; i < n; i++) {
        l += (double)a->out[i] * dout[i];
    }
    return l;
}

/* Central difference of the loss w.r.t. *v, compared with the analytic gradient. */
static double check_one(float *v, float analytic, Acts *a, const Params *p, const Inputs *in,
                        Shape s, uint32_t dseed, const char *name) {
    const float eps = 5e-3f;
    size_t n = (size_t)s.B * s.T * s.C;
    float saved = *v;
    *v = saved + eps;
    block_forward(a, p, in->x, s, dseed);
    double up = loss_of(a, in->dout, n);
    *v = saved - eps;
    block_forward(a, p, in->x, s, dseed);
    double down = loss_of(a, in->dout, n);
    *v = saved;
    double fd = (up - down) / (2.0 * eps);
    double err = fabs(fd - analytic) / fmax(1.0, fabs(fd));
    expect(err <= 2e-3, name, analytic, fd);
    return err;
}

static void test_gradients(void) {
    Shape s = {2, 5, 12, 3};
    uint64_t seed = 7;
    Params p, dp;
    Acts a;
    Grads g;
    Inputs in;
    if (params_alloc(&p, s) || params_alloc(&dp, s) || acts_alloc(&a, s) || grads_alloc(&g, s) ||
        inputs_alloc(&in, s)) {
        printf("FAIL out of memory\n");
        exit(1);
    }
    fill_params(&p, s, seed);
    fill_inputs(&in, s, seed);
    uint32_t dseed = dropout_seed(seed);
    block_forward(&a, &p, in.x, s, dseed);
    block_backward(&g, &dp, &a, &p, in.x, in.dout, s, dseed);
    /* Copies: the finite differences rerun the forward pass over the same buffers. */
    size_t n = (size_t)s.B * s.T * s.C;
    float *dx = malloc(n * sizeof(float));
    float *dparams = malloc(dp.total * sizeof(float));
    memcpy(dx, g.dx, n * sizeof(float));
    memcpy(dparams, dp.mem, dp.total * sizeof(float));

    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, check_one(&in.x[i], dx[i], &a, &p, &in, s, dseed, "dx"));
    }
    for (int t = 0; t < NPARAMS; t++) {
        size_t off = (size_t)(p.t[t] - p.mem);
        for (size_t i = 0; i < p.n[t]; i++) {
            worst = fmax(worst, check_one(&p.t[t][i], dparams[off + i], &a, &p, &in, s, dseed,
                                          PARAM_NAMES[t]));
        }
    }
    printf("gradients: %zu checked against finite differences, worst relative error %.2e\n",
           n + p.total, worst);
    free(dx);
    free(dparams);
    params_free(&p);
    params_free(&dp);
    acts_free(&a);
    grads_free(&g);
    inputs_free(&in);
}

int run_selftest(void) {
    test_matmul_forward();
    test_layernorm_forward();
    test_attention_forward();
    test_gelu_forward();
    test_gradients();
    if (failures) {
        printf("selftest: %d failure(s)\n", failures);
        return 1;
    }
    printf("selftest: ok\n");
    return 0;
}
