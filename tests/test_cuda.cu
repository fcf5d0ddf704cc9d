/*
tests/test_cuda.cu: every CUDA kernel of grpo_kernels.cu against the CPU function of grpo.c
it replaces. Built with nvcc (make test-cuda), linked with grpo_kernels.o and cuBLAS.

grpo.c is included as CUDA C++ (it compiles so: g++ accepts its two C99 constructs, the
variable-length arrays (attention_decode, the matmuls) and the compound literals, as
extensions). For each kernel: seeded random inputs (never all zeros; accumulated-into
gradients start non-zero so += is checked), several sizes including ones that are not
multiples of the block size or of 32, and several block sizes (cuda_block_size 32, 100, 128,
256, 1024: 100 is neither a power of two nor whole warps). The CPU result is computed once per
size; the GPU runs once per block size on fresh copies of the inputs. A check passes when
|gpu − cpu| <= atol + rtol·|cpu| for every element; each line prints the worst difference.
Sums reduced in a different order get atol growing with the length K of the sum (rounding of
float partial sums of size ~sqrt(K)).
Reductions that must be deterministic are also run twice and compared bit for bit.

  ./tests/test_cuda            all sizes and block sizes
  ./tests/test_cuda --quick    small sizes, block sizes 100 and 1024 (for compute-sanitizer)
  ./tests/test_cuda --kernels  the kernel tests alone; --steps: the PyTorch reference and the
                               full steps alone
  ./tests/test_cuda --reference-cpu   the PyTorch-reference test on the CPU model (no GPU
                               needed): checks the harness that runs on the GPU model

Without a GPU it prints `test-cuda: no GPU found, skipped` and exits 0. Otherwise it ends with
a table per kernel and `N passed, N failed`; exit status 1 on any failure.

Then the CUDA build itself (grpo.c with GRPO_CUDA: a model built while cuda_enabled = 1
lives on the GPU): a checkpoint saved from the GPU and reloaded on the CPU; one GRPO and one
λ-GRPO step (2 prompts x 8 completions, T = 0.9, β = 0.04, μ = 2, micro-batches of 5 on the
GPU) against the same step on the CPU from one checkpoint and seed: sampled token ids and
their log-probs, per-token logp/logp_ref/logp_old/ratio/kl/dlogp/clipped, the loss, all 16
gradient tensors before and after clipping, the gradient norm, and AdamW's parameters and
moments (tolerances stated at test_full_step); then grpo_update run twice on the GPU from the
same seed must give the same bits (tokens, loss, norm, kl, parameters).

  ./tests/test_cuda --steps    only the full-step tests
*/
#define TESTING
#ifndef GRPO_CUDA
#define GRPO_CUDA     // grpo.c's CUDA build: the cuda_* prototypes, models on the GPU after cuda_enabled = 1
#endif
#include "../grpo.c"
#include "ref_model.h"
#include <cuda_runtime.h>

// The part of grpo_kernels.cu's interface that only the tests use (grpo.c's CUDA seam
// declares the rest): launch settings, device count and teardown, the gradient norm's sum
// (grpo.c gets it inside cuda_clip_grad_norm) and a GPU token loss (grpo.c computes the
// loss on the host).
extern "C" {
extern int cuda_block_size, cuda_sync_launches;
void cuda_shutdown(void);
int cuda_device_count(void);
double cuda_grpo_token_loss(float clip_eps_low, float clip_eps_high, float beta, int n, const float *logp,
                            const float *logp_old, const float *logp_ref, const float *advantage,
                            const float *weight, const float *coef, float *dlogp, float *ratio, float *kl,
                            unsigned char *clipped);
double cuda_sum_squares(const float *x, size_t n);
}

// ----------------------------------------------------------------------------
// Bookkeeping: one check = one output array of one kernel at one size and block size

static int g_pass = 0, g_fail = 0, g_quick = 0;
typedef struct { const char *kernel; int checks, failed; double max_diff; } KernelStat;
static KernelStat g_stats[128];
static int g_nstats = 0;

static KernelStat *stat_for(const char *kernel) {
    for (int i = 0; i < g_nstats; i++) if (!strcmp(g_stats[i].kernel, kernel)) return &g_stats[i];
    KernelStat *s = &g_stats[g_nstats++];
    s->kernel = kernel; s->checks = 0; s->failed = 0; s->max_diff = 0.0;
    return s;
}

static void record(const char *kernel, const char *label, const char *what, int ok, double max_diff,
                   double atol, double rtol) {
    KernelStat *s = stat_for(kernel);
    s->checks++; s->failed += !ok;
    if (!(max_diff <= s->max_diff)) s->max_diff = max_diff;   // NaN sticks
    if (ok) g_pass++; else g_fail++;
    printf("%s  %-22s %-34s bs=%-4d %-8s max|diff| %.3g  (tol %.2g + %.2g|ref|)\n", ok ? "PASS" : "FAIL", kernel,
           label, cuda_block_size, what, max_diff, atol, rtol);
}

// Compares n floats got with ref (both host); skip (may be NULL) marks elements left out.
static int check_values(const char *kernel, const char *label, const char *what, const float *ref,
                        const float *got, size_t n, double atol, double rtol, const unsigned char *skip) {
    double max_diff = 0.0;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (skip && skip[i]) continue;
        double d = fabs((double)got[i] - (double)ref[i]);
        if (!(d <= atol + rtol * fabs((double)ref[i]))) ok = 0;    // NaN fails
        if (!(d <= max_diff)) max_diff = isnan(d) ? INFINITY : d;
    }
    record(kernel, label, what, ok, max_diff, atol, rtol);
    return ok;
}

// As check_values, for n floats at dev (device memory).
static int check(const char *kernel, const char *label, const char *what, const float *ref, const float *dev,
                 size_t n, double atol, double rtol, const unsigned char *skip) {
    float *got = (float *)mallocCheck(n * sizeof(float) + 1);
    cuda_memcpy_d2h(got, dev, n * sizeof(float));
    int ok = check_values(kernel, label, what, ref, got, n, atol, rtol, skip);
    free(got);
    return ok;
}

static void check_scalar(const char *kernel, const char *label, const char *what, double ref, double got,
                         double atol, double rtol) {
    double d = fabs(got - ref);
    record(kernel, label, what, d <= atol + rtol * fabs(ref), isnan(d) ? INFINITY : d, atol, rtol);
}

static void check_bits(const char *kernel, const char *label, const char *what, const void *a, const void *b,
                       size_t bytes) {
    record(kernel, label, what, memcmp(a, b, bytes) == 0, 0.0, 0.0, 0.0);
}

// tolerance for a float sum of K terms of size ~1 summed in another order
// (rounding errors of partial sums of size ~sqrt(K)/3 add up to about 5e-9·K, times 4.5 for
// the worst of 10^5 outputs, on each side)
static double sum_atol(double K) { return 1e-6 + 5e-8 * K; }

// ----------------------------------------------------------------------------
// Data: seeded uniform values, never exactly zero

static Rng g_rng;

static float *rand_floats(size_t n, float lo, float hi) {
    float *x = (float *)mallocCheck(n * sizeof(float) + 1);
    for (size_t i = 0; i < n; i++) {
        x[i] = lo + (hi - lo) * rng_uniform(&g_rng);
        if (x[i] == 0.0f) x[i] = 1e-3f;
    }
    return x;
}
static int *rand_ints(size_t n, int lo, int hi) {   // uniform in [lo, hi)
    int *x = (int *)mallocCheck(n * sizeof(int) + 1);
    for (size_t i = 0; i < n; i++) x[i] = lo + rng_int(&g_rng, hi - lo);
    return x;
}
static float *copy_floats(const float *src, size_t n) {
    float *x = (float *)mallocCheck(n * sizeof(float) + 1);
    memcpy(x, src, n * sizeof(float));
    return x;
}
static void *to_device(const void *host, size_t bytes) {
    void *d = cuda_malloc(bytes ? bytes : 1);
    cuda_memcpy_h2d(d, host, bytes);
    return d;
}
#define DEV_F(h, n) ((float *)to_device((h), (size_t)(n) * sizeof(float)))
#define DEV_I(h, n) ((int *)to_device((h), (size_t)(n) * sizeof(int)))

static const int BLOCK_SIZES[] = {32, 100, 128, 256, 1024};
static const int QUICK_BLOCK_SIZES[] = {100, 1024};
static int num_block_sizes(void) { return g_quick ? 2 : 5; }
static int use_block_size(int i) { cuda_block_size = (g_quick ? QUICK_BLOCK_SIZES : BLOCK_SIZES)[i]; return 1; }
// runs the statement that follows once per block size, with cuda_block_size set
#define FOR_BLOCK_SIZES for (int bs_i = 0; bs_i < num_block_sizes() && use_block_size(bs_i); bs_i++)

// ----------------------------------------------------------------------------
// Kernels

static void test_encoder(void) {
    int cases[][5] = {{1, 1, 1, 2, 1}, {3, 17, 37, 11, 1}, {4, 64, 128, 24, 1}, {64, 64, 128, 24, 0}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int B = cases[ci][0], T = cases[ci][1], C = cases[ci][2], V = cases[ci][3];
        if (g_quick && !cases[ci][4]) continue;
        char label[80];
        snprintf(label, sizeof label, "B=%d T=%d C=%d V=%d", B, T, C, V);
        size_t BTC = (size_t)B * T * C;
        int *inp = rand_ints((size_t)B * T, 0, V);
        float *wte = rand_floats((size_t)V * C, -1, 1), *wpe = rand_floats((size_t)T * C, -1, 1);
        float *dout = rand_floats(BTC, -1, 1), *dwte0 = rand_floats((size_t)V * C, -1, 1);
        float *dwpe0 = rand_floats((size_t)T * C, -1, 1);
        float *out = (float *)mallocCheck(BTC * sizeof(float));
        float *dwte = copy_floats(dwte0, (size_t)V * C), *dwpe = copy_floats(dwpe0, (size_t)T * C);
        encoder_forward(out, inp, wte, wpe, B, T, C);
        encoder_backward(dwte, dwpe, dout, inp, B, T, C);
        int *d_inp = DEV_I(inp, B * T);
        float *d_wte = DEV_F(wte, V * C), *d_wpe = DEV_F(wpe, T * C), *d_dout = DEV_F(dout, BTC);
        float *d_out = (float *)cuda_malloc(BTC * sizeof(float));
        FOR_BLOCK_SIZES {
            float *d_dwte = DEV_F(dwte0, V * C), *d_dwpe = DEV_F(dwpe0, T * C);
            cuda_encoder_forward(d_out, d_inp, d_wte, d_wpe, B, T, C);
            cuda_encoder_backward(d_dwte, d_dwpe, d_dout, d_inp, B, T, C, V);
            check("encoder_forward", label, "out", out, d_out, BTC, 0, 0, NULL);
            check("encoder_backward", label, "dwte", dwte, d_dwte, (size_t)V * C, sum_atol(B * T), 1e-6, NULL);
            check("encoder_backward", label, "dwpe", dwpe, d_dwpe, (size_t)T * C, 0, 0, NULL);   // same order
            cuda_free(d_dwte); cuda_free(d_dwpe);
        }
        cuda_free(d_inp); cuda_free(d_wte); cuda_free(d_wpe); cuda_free(d_dout); cuda_free(d_out);
        free(inp); free(wte); free(wpe); free(dout); free(dwte0); free(dwpe0); free(out); free(dwte); free(dwpe);
    }
}

static void test_layernorm(void) {
    int cases[][3] = {{1, 1, 1}, {7, 33, 1}, {130, 128, 1}, {33, 1000, 1}, {4096, 128, 0}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int N = cases[ci][0], C = cases[ci][1];
        if (g_quick && !cases[ci][2]) continue;
        char label[80];
        snprintf(label, sizeof label, "N=%d C=%d", N, C);
        size_t NC = (size_t)N * C;
        float *inp = rand_floats(NC, -2, 3), *w = rand_floats(C, 0.5, 1.5), *b = rand_floats(C, -0.5, 0.5);
        float *dout = rand_floats(NC, -1, 1), *dinp0 = rand_floats(NC, -1, 1);
        float *dw0 = rand_floats(C, -1, 1), *db0 = rand_floats(C, -1, 1);
        float *out = (float *)mallocCheck(NC * sizeof(float)), *mean = (float *)mallocCheck(N * sizeof(float));
        float *rstd = (float *)mallocCheck(N * sizeof(float));
        float *dinp = copy_floats(dinp0, NC), *dw = copy_floats(dw0, C), *db = copy_floats(db0, C);
        layernorm_forward(out, mean, rstd, inp, w, b, N, C);
        layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
        float *d_inp = DEV_F(inp, NC), *d_w = DEV_F(w, C), *d_b = DEV_F(b, C), *d_dout = DEV_F(dout, NC);
        float *d_out = (float *)cuda_malloc(NC * sizeof(float)), *d_mean = (float *)cuda_malloc(N * sizeof(float));
        float *d_rstd = (float *)cuda_malloc(N * sizeof(float));
        // backward from the CPU's mean/rstd, so its check does not inherit the forward's rounding
        float *d_mean_ref = DEV_F(mean, N), *d_rstd_ref = DEV_F(rstd, N);
        FOR_BLOCK_SIZES {
            float *d_dinp = DEV_F(dinp0, NC), *d_dw = DEV_F(dw0, C), *d_db = DEV_F(db0, C);
            cuda_layernorm_forward(d_out, d_mean, d_rstd, d_inp, d_w, d_b, N, C);
            cuda_layernorm_backward(d_dinp, d_dw, d_db, d_dout, d_inp, d_w, d_mean_ref, d_rstd_ref, N, C);
            // rstd of a row of one channel is 1/sqrt(1e-5) ≈ 316: relative tolerances
            check("layernorm_forward", label, "out", out, d_out, NC, 1e-5, 1e-5, NULL);
            check("layernorm_forward", label, "mean", mean, d_mean, N, 1e-6, 1e-5, NULL);
            check("layernorm_forward", label, "rstd", rstd, d_rstd, N, 1e-6, 1e-5, NULL);
            check("layernorm_backward", label, "dinp", dinp, d_dinp, NC, 1e-5 + 1e-7 * C, 1e-5, NULL);
            check("layernorm_backward", label, "dweight", dw, d_dw, C, 2 * sum_atol(N), 1e-5, NULL);
            check("layernorm_backward", label, "dbias", db, d_db, C, sum_atol(N), 1e-5, NULL);
            cuda_free(d_dinp); cuda_free(d_dw); cuda_free(d_db);
        }
        cuda_free(d_inp); cuda_free(d_w); cuda_free(d_b); cuda_free(d_dout); cuda_free(d_out); cuda_free(d_mean);
        cuda_free(d_rstd); cuda_free(d_mean_ref); cuda_free(d_rstd_ref);
        free(inp); free(w); free(b); free(dout); free(dinp0); free(dw0); free(db0); free(out); free(mean);
        free(rstd); free(dinp); free(dw); free(db);
    }
}

// tf32: also run with TF32 tensor cores, at TF32's tolerance (about 10 mantissa bits per input)
static void test_matmul_case(int N, int C, int OC, int with_bias, int tf32) {
    char label[80];
    snprintf(label, sizeof label, "N=%d C=%d OC=%d%s", N, C, OC, with_bias ? "" : " nobias");
    const char *fwd = tf32 ? "matmul_forward_tf32" : "matmul_forward";
    const char *bwd = tf32 ? "matmul_backward_tf32" : "matmul_backward";
    size_t NC = (size_t)N * C, NO = (size_t)N * OC, OCC = (size_t)OC * C;
    float *inp = rand_floats(NC, -1, 1), *w = rand_floats(OCC, -1, 1), *bias = rand_floats(OC, -1, 1);
    float *dout = rand_floats(NO, -1, 1), *dinp0 = rand_floats(NC, -1, 1), *dw0 = rand_floats(OCC, -1, 1);
    float *db0 = rand_floats(OC, -1, 1);
    float *out = (float *)mallocCheck(NO * sizeof(float));
    float *dinp = copy_floats(dinp0, NC), *dw = copy_floats(dw0, OCC), *db = copy_floats(db0, OC);
    matmul_forward(out, inp, w, with_bias ? bias : NULL, N, C, OC);
    matmul_backward(dinp, dw, with_bias ? db : NULL, dout, inp, w, N, C, OC);
    float *d_inp = DEV_F(inp, NC), *d_w = DEV_F(w, OCC), *d_bias = DEV_F(bias, OC), *d_dout = DEV_F(dout, NO);
    float *d_out = (float *)cuda_malloc(NO * sizeof(float));
    cuda_init(tf32);
    FOR_BLOCK_SIZES {
        if (tf32 && cuda_block_size != 256) continue;   // the block size only shapes the bias kernels
        float *d_dinp = DEV_F(dinp0, NC), *d_dw = DEV_F(dw0, OCC), *d_db = DEV_F(db0, OC);
        cuda_matmul_forward(d_out, d_inp, d_w, with_bias ? d_bias : NULL, N, C, OC);
        cuda_matmul_backward(d_dinp, d_dw, with_bias ? d_db : NULL, d_dout, d_inp, d_w, N, C, OC);
        double r = tf32 ? 0.0 : 1e-5;
        check(fwd, label, "out", out, d_out, NO, tf32 ? 2e-3 * sqrt(C) : sum_atol(C), r, NULL);
        check(bwd, label, "dinp", dinp, d_dinp, NC, tf32 ? 2e-3 * sqrt(OC) : sum_atol(OC), r, NULL);
        check(bwd, label, "dweight", dw, d_dw, OCC, tf32 ? 2e-3 * sqrt(N) : sum_atol(N), r, NULL);
        if (with_bias) check(bwd, label, "dbias", db, d_db, OC, sum_atol(N), 1e-5, NULL);
        cuda_free(d_dinp); cuda_free(d_dw); cuda_free(d_db);
    }
    cuda_init(0);
    cuda_free(d_inp); cuda_free(d_w); cuda_free(d_bias); cuda_free(d_dout); cuda_free(d_out);
    free(inp); free(w); free(bias); free(dout); free(dinp0); free(dw0); free(db0); free(out); free(dinp);
    free(dw); free(db);
}

static void test_matmul(void) {
    // N, C, OC, bias, in quick mode
    int cases[][5] = {{1, 1, 1, 1, 1}, {7, 13, 5, 1, 1}, {65, 128, 384, 1, 1}, {257, 128, 24, 0, 1},
                      {1000, 512, 128, 1, 0}, {4096, 128, 512, 1, 0}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        if (!g_quick || cases[ci][4]) test_matmul_case(cases[ci][0], cases[ci][1], cases[ci][2], cases[ci][3], 0);
    if (!g_quick) {
        test_matmul_case(65, 128, 384, 1, 1);
        test_matmul_case(4096, 128, 512, 1, 1);
    }
}

static void test_attention(void) {
    // B, T, C, NH, in quick mode; T = 37 and 70 cross warp boundaries, NH = 3 gives hs = 16
    int cases[][5] = {{1, 1, 4, 1, 1}, {2, 5, 8, 2, 1}, {3, 37, 48, 3, 1}, {2, 64, 128, 4, 1},
                      {1, 70, 64, 4, 0}, {16, 64, 128, 4, 0}, {2, 256, 512, 8, 0}, {1, 300, 40, 5, 0}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int B = cases[ci][0], T = cases[ci][1], C = cases[ci][2], NH = cases[ci][3];
        if (g_quick && !cases[ci][4]) continue;
        char label[80];
        snprintf(label, sizeof label, "B=%d T=%d C=%d NH=%d", B, T, C, NH);
        size_t n3 = (size_t)B * T * 3 * C, n1 = (size_t)B * T * C, na = (size_t)B * NH * T * T;
        float *inp = rand_floats(n3, -1, 1), *dout = rand_floats(n1, -1, 1), *dinp0 = rand_floats(n3, -1, 1);
        float *out = (float *)mallocCheck(n1 * sizeof(float)), *att = (float *)mallocCheck(na * sizeof(float));
        float *datt = (float *)mallocCheck(na * sizeof(float)), *dinp = copy_floats(dinp0, n3);
        float *junk = rand_floats(na, -1, 1);     // stale att: the zeros above the diagonal must be written
        attention_forward(out, att, inp, B, T, C, NH);
        attention_backward(dinp, datt, dout, inp, att, B, T, C, NH);
        float *d_inp = DEV_F(inp, n3), *d_dout = DEV_F(dout, n1), *d_att_ref = DEV_F(att, na);
        float *d_out = (float *)cuda_malloc(n1 * sizeof(float)), *d_att = (float *)cuda_malloc(na * sizeof(float));
        float *d_datt = (float *)cuda_malloc(na * sizeof(float));
        FOR_BLOCK_SIZES {
            float *d_dinp = DEV_F(dinp0, n3);
            cuda_memcpy_h2d(d_att, junk, na * sizeof(float));
            cuda_attention_forward(d_out, d_att, d_inp, B, T, C, NH);
            cuda_attention_backward(d_dinp, d_datt, d_dout, d_inp, d_att_ref, B, T, C, NH);
            check("attention_forward", label, "out", out, d_out, n1, 2e-6, 1e-5, NULL);
            check("attention_forward", label, "att", att, d_att, na, 1e-6, 1e-5, NULL);  // zeros above diagonal too
            check("attention_backward", label, "dinp", dinp, d_dinp, n3, 1e-5 + 1e-7 * T, 1e-5, NULL);
            cuda_free(d_dinp);
        }
        cuda_free(d_inp); cuda_free(d_dout); cuda_free(d_att_ref); cuda_free(d_out); cuda_free(d_att); cuda_free(d_datt);
        free(inp); free(dout); free(dinp0); free(out); free(att); free(datt); free(dinp); free(junk);
    }
}

static void test_elementwise(void) {
    size_t sizes[] = {1, 1000, 100003};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t N = sizes[si];
        char label[80];
        snprintf(label, sizeof label, "N=%zu", N);
        float *x = rand_floats(N, -5, 5), *y = rand_floats(N, -1, 1), *dout = rand_floats(N, -1, 1);
        float *g0 = rand_floats(N, -1, 1), *h0 = rand_floats(N, -1, 1);
        float *gelu = (float *)mallocCheck(N * sizeof(float)), *dgelu = copy_floats(g0, N);
        float *res = (float *)mallocCheck(N * sizeof(float)), *da = copy_floats(g0, N), *db = copy_floats(h0, N);
        gelu_forward(gelu, x, N);
        gelu_backward(dgelu, x, dout, N);
        residual_forward(res, x, y, N);
        residual_backward(da, db, dout, N);
        float *d_x = DEV_F(x, N), *d_y = DEV_F(y, N), *d_dout = DEV_F(dout, N);
        float *d_out = (float *)cuda_malloc(N * sizeof(float));
        FOR_BLOCK_SIZES {
            float *d_g = DEV_F(g0, N), *d_h = DEV_F(h0, N);
            cuda_gelu_forward(d_out, d_x, N);
            check("gelu_forward", label, "out", gelu, d_out, N, 1e-6, 1e-6, NULL);
            cuda_gelu_backward(d_g, d_x, d_dout, N);
            // tanhf may differ by 2 ulp between CUDA and glibc; 1 − th² amplifies that by x(1 + 0.13x²)
            check("gelu_backward", label, "dinp", dgelu, d_g, N, 5e-6, 1e-6, NULL);
            cuda_memcpy_h2d(d_g, g0, N * sizeof(float));
            cuda_residual_forward(d_out, d_x, d_y, N);
            check("residual_forward", label, "out", res, d_out, N, 0, 0, NULL);
            cuda_residual_backward(d_g, d_h, d_dout, N);
            check("residual_backward", label, "da", da, d_g, N, 0, 0, NULL);
            check("residual_backward", label, "db", db, d_h, N, 0, 0, NULL);
            cuda_free(d_g); cuda_free(d_h);
        }
        cuda_free(d_x); cuda_free(d_y); cuda_free(d_dout); cuda_free(d_out);
        free(x); free(y); free(dout); free(g0); free(h0); free(gelu); free(dgelu); free(res); free(da); free(db);
    }
}

static void test_logprob(void) {
    // N, V, temperature·10, mask, in quick mode
    int cases[][5] = {{1, 3, 10, 0, 1}, {37, 24, 7, 1, 1}, {300, 24, 10, 1, 1}, {64, 100, 13, 0, 1},
                      {4096, 24, 10, 0, 0}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int N = cases[ci][0], V = cases[ci][1], masked = cases[ci][3];
        float temperature = cases[ci][2] / 10.0f;
        if (g_quick && !cases[ci][4]) continue;
        char label[80];
        snprintf(label, sizeof label, "N=%d V=%d temp=%.1f%s", N, V, temperature, masked ? " masked" : "");
        size_t NV = (size_t)N * V;
        unsigned char *allowed = (unsigned char *)mallocCheck(V);
        for (int v = 0; v < V; v++) allowed[v] = !masked || v == 0 || rng_uniform(&g_rng) < 0.7f;
        int *targets = rand_ints(N, 0, V);
        for (int n = 0; n < N; n++) {
            while (!allowed[targets[n]]) targets[n] = rng_int(&g_rng, V);
            if (N > 1 && rng_uniform(&g_rng) < 0.1f) targets[n] = -1;   // not scored
        }
        float *logits = rand_floats(NV, -4, 4), *dlogp = rand_floats(N, -1, 1);
        float *logp = (float *)mallocCheck(N * sizeof(float)), *probs = (float *)mallocCheck(NV * sizeof(float));
        float *dlogits = (float *)mallocCheck(NV * sizeof(float));
        logprob_forward(logp, probs, logits, targets, N, V, temperature, masked ? allowed : NULL);
        logprob_backward(dlogits, probs, targets, dlogp, N, V, temperature);
        float *d_logits = DEV_F(logits, NV), *d_dlogp = DEV_F(dlogp, N), *d_probs_ref = DEV_F(probs, NV);
        int *d_targets = DEV_I(targets, N);
        unsigned char *d_allowed = (unsigned char *)to_device(allowed, V);
        float *d_logp = (float *)cuda_malloc(N * sizeof(float)), *d_probs = (float *)cuda_malloc(NV * sizeof(float));
        float *d_dlogits = (float *)cuda_malloc(NV * sizeof(float));
        FOR_BLOCK_SIZES {
            cuda_memcpy_h2d(d_probs, logits, NV * sizeof(float));     // stale values must be overwritten
            cuda_memcpy_h2d(d_dlogits, logits, NV * sizeof(float));
            cuda_logprob_forward(d_logp, d_probs, d_logits, d_targets, N, V, temperature, masked ? d_allowed : NULL);
            cuda_logprob_backward(d_dlogits, d_probs_ref, d_targets, d_dlogp, N, V, temperature);
            check("logprob_forward", label, "logp", logp, d_logp, N, 2e-6, 1e-5, NULL);
            check("logprob_forward", label, "probs", probs, d_probs, NV, 1e-7, 1e-5, NULL);
            check("logprob_backward", label, "dlogits", dlogits, d_dlogits, NV, 1e-7, 1e-6, NULL);
        }
        cuda_free(d_logits); cuda_free(d_dlogp); cuda_free(d_probs_ref); cuda_free(d_targets); cuda_free(d_allowed);
        cuda_free(d_logp); cuda_free(d_probs); cuda_free(d_dlogits);
        free(allowed); free(targets); free(logits); free(dlogp); free(logp); free(probs); free(dlogits);
    }
}

static void test_grpo_token_loss(void) {
    int sizes[] = {1, 1000, 100001};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int with_ref = 0; with_ref <= 1; with_ref++) {
            int n = sizes[si];
            if (g_quick && n > 1000) continue;
            ObjectiveConfig cfg = {OBJ_LAMBDA_GRPO, AGG_TOKEN_MEAN, STD_SAMPLE, SCOPE_GROUP, 1e-4f, 0.2f, 0.28f,
                                   with_ref ? 0.04f : 0.0f, 40};
            char label[80];
            snprintf(label, sizeof label, "n=%d beta=%g%s", n, cfg.beta, with_ref ? " ref" : "");
            float *logp = rand_floats(n, -3, -0.01f), *logp_old = rand_floats(n, -0.3f, 0.3f);
            float *logp_ref = rand_floats(n, -0.5f, 0.5f), *adv = rand_floats(n, -2, 2);
            float *weight = (float *)mallocCheck(n * sizeof(float)), *coef = rand_floats(n, 0.002f, 0.02f);
            for (int j = 0; j < n; j++) {
                logp_old[j] += logp[j]; logp_ref[j] += logp[j];
                weight[j] = 1.0f / (1 + rng_int(&g_rng, 8));
            }
            float *dlogp = (float *)mallocCheck(n * sizeof(float)), *ratio = (float *)mallocCheck(n * sizeof(float));
            float *kl = (float *)mallocCheck(n * sizeof(float));
            unsigned char *clipped = (unsigned char *)mallocCheck(n), *near = (unsigned char *)mallocCheck(n);
            TokenLossOut out = {dlogp, ratio, kl, clipped};
            double loss = grpo_token_loss(&cfg, n, logp, logp_old, with_ref ? logp_ref : NULL, adv, weight, coef, &out);
            // a ratio within float rounding of a clip bound may take the other branch on the GPU
            int n_near = 0, n_clip_cpu = 0, n_clip_gpu = 0;
            for (int j = 0; j < n; j++) {
                near[j] = fabsf(ratio[j] - (1 - cfg.clip_eps_low)) < 1e-5f || fabsf(ratio[j] - (1 + cfg.clip_eps_high)) < 1e-5f;
                n_near += near[j]; n_clip_cpu += clipped[j];
            }
            float *d_logp = DEV_F(logp, n), *d_old = DEV_F(logp_old, n), *d_ref = DEV_F(logp_ref, n);
            float *d_adv = DEV_F(adv, n), *d_w = DEV_F(weight, n), *d_coef = DEV_F(coef, n);
            float *d_dlogp = (float *)cuda_malloc(n * sizeof(float)), *d_ratio = (float *)cuda_malloc(n * sizeof(float));
            float *d_kl = (float *)cuda_malloc(n * sizeof(float));
            unsigned char *d_clipped = (unsigned char *)cuda_malloc(n);
            unsigned char *got_clipped = (unsigned char *)mallocCheck(n);
            FOR_BLOCK_SIZES {
                double l1 = cuda_grpo_token_loss(cfg.clip_eps_low, cfg.clip_eps_high, cfg.beta, n, d_logp, d_old,
                                                 with_ref ? d_ref : NULL, d_adv, d_w, d_coef, d_dlogp, d_ratio, d_kl,
                                                 d_clipped);
                double l2 = cuda_grpo_token_loss(cfg.clip_eps_low, cfg.clip_eps_high, cfg.beta, n, d_logp, d_old,
                                                 with_ref ? d_ref : NULL, d_adv, d_w, d_coef, d_dlogp, d_ratio, d_kl,
                                                 d_clipped);
                check_scalar("grpo_token_loss", label, "loss", loss, l1, 1e-9, 1e-6);
                check_bits("grpo_token_loss", label, "loss-det", &l1, &l2, sizeof l1);
                check("grpo_token_loss", label, "dlogp", dlogp, d_dlogp, n, 1e-8, 1e-5, near);
                check("grpo_token_loss", label, "ratio", ratio, d_ratio, n, 0, 1e-6, NULL);
                check("grpo_token_loss", label, "kl", kl, d_kl, n, 1e-8, 1e-5, NULL);
                cuda_memcpy_d2h(got_clipped, d_clipped, n);
                int mismatch = 0;
                n_clip_gpu = 0;
                for (int j = 0; j < n; j++) { mismatch += !near[j] && got_clipped[j] != clipped[j]; n_clip_gpu += got_clipped[j]; }
                record("grpo_token_loss", label, "clipped", mismatch == 0, mismatch, 0, 0);
            }
            printf("      (%d of %d tokens clipped on the CPU, %d on the GPU; %d within 1e-5 of a clip bound, left out)\n",
                   n_clip_cpu, n, n_clip_gpu, n_near);
            cuda_free(d_logp); cuda_free(d_old); cuda_free(d_ref); cuda_free(d_adv); cuda_free(d_w); cuda_free(d_coef);
            cuda_free(d_dlogp); cuda_free(d_ratio); cuda_free(d_kl); cuda_free(d_clipped);
            free(logp); free(logp_old); free(logp_ref); free(adv); free(weight); free(coef); free(dlogp); free(ratio);
            free(kl); free(clipped); free(near); free(got_clipped);
        }
}

// AdamW and gradient clipping on a model's flat arrays (build_gpt: 16 tensors, PARAM_DECAY flags)
static void test_optimizer(void) {
    GPTConfig cfgs[] = {{8, VOCAB_SIZE, 2, 2, 16}, {64, VOCAB_SIZE, 4, 4, 128}};
    for (int ci = 0; ci < 2; ci++) {
        if (g_quick && ci == 1) continue;
        GPT m;
        build_gpt(&m, cfgs[ci], 1, 7);
        size_t np = m.num_parameters;
        char label[80];
        snprintf(label, sizeof label, "params=%zu", np);
        float *p0 = rand_floats(np, -1, 1), *g0 = rand_floats(np, -0.01f, 0.01f), *m0 = rand_floats(np, -1e-3f, 1e-3f);
        float *v0 = rand_floats(np, 1e-7f, 1e-4f);
        AdamWConfig o = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0, 100, 0, 0.1f};
        int steps[] = {1, 7};
        for (int si = 0; si < 2; si++) {
            int t = steps[si];
            char lab[160];
            snprintf(lab, sizeof lab, "%s t=%d", label, t);
            memcpy(m.params_memory, p0, np * 4); memcpy(m.grads_memory, g0, np * 4);
            memcpy(m.m_memory, m0, np * 4); memcpy(m.v_memory, v0, np * 4);
            adamw_update(&m, &o, 3e-4f, t);
            FOR_BLOCK_SIZES {
                float *d_p = DEV_F(p0, np), *d_g = DEV_F(g0, np), *d_m = DEV_F(m0, np), *d_v = DEV_F(v0, np);
                cuda_adamw_update(d_p, d_g, d_m, d_v, m.param_sizes, PARAM_DECAY, NUM_PARAM_TENSORS, 3e-4f,
                                  o.beta1, o.beta2, o.eps, o.weight_decay, t);
                check("adamw_update", lab, "params", m.params_memory, d_p, np, 1e-7, 1e-6, NULL);
                check("adamw_update", lab, "m", m.m_memory, d_m, np, 1e-10, 1e-6, NULL);
                check("adamw_update", lab, "v", m.v_memory, d_v, np, 1e-12, 1e-6, NULL);
                cuda_free(d_p); cuda_free(d_g); cuda_free(d_m); cuda_free(d_v);
            }
        }
        // gradient norm and clipping: off (0), not reached (1e9), clipping (1.0)
        float *gr = rand_floats(np, -1, 1);
        float max_norms[] = {0.0f, 1e9f, 1.0f};
        double ss_cpu = 0.0;
        for (size_t i = 0; i < np; i++) ss_cpu += (double)gr[i] * gr[i];
        for (int k = 0; k < 3; k++) {
            char lab[160];
            snprintf(lab, sizeof lab, "%s max_norm=%g", label, max_norms[k]);
            memcpy(m.grads_memory, gr, np * 4);
            float norm = clip_grad_norm(&m, max_norms[k]);
            FOR_BLOCK_SIZES {
                float *d_g = DEV_F(gr, np);
                double ss1 = cuda_sum_squares(d_g, np), ss2 = cuda_sum_squares(d_g, np);
                float n1 = cuda_clip_grad_norm(d_g, np, max_norms[k]);
                check_scalar("clip_grad_norm", lab, "sum_sq", ss_cpu, ss1, 0, 1e-12);
                check_bits("clip_grad_norm", lab, "sum-det", &ss1, &ss2, sizeof ss1);
                check_scalar("clip_grad_norm", lab, "norm", norm, n1, 0, 1e-6);
                check("clip_grad_norm", lab, "grads", m.grads_memory, d_g, np, 1e-9, 1e-6, NULL);
                cuda_free(d_g);
            }
        }
        free(p0); free(g0); free(m0); free(v0); free(gr);
        free_gpt(&m);
    }
}

// ----------------------------------------------------------------------------
// Decode-step kernels (the sampler's KV cache): encoder_forward_pos, kv_append, attention_decode

static void test_decode(void) {
    // B, C, NH, maxT, kvB (cache rows, >= B), in quick mode; maxT 37 and 300 are not multiples
    // of 8 or 32 (keys cross warp boundaries), NH = 3 gives hs = 16
    int cases[][6] = {{1, 8, 1, 8, 1, 1}, {3, 48, 3, 37, 5, 1}, {5, 128, 4, 64, 8, 1}, {64, 128, 4, 64, 64, 0},
                      {7, 64, 2, 300, 9, 0}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int B = cases[ci][0], C = cases[ci][1], NH = cases[ci][2], maxT = cases[ci][3], kvB = cases[ci][4];
        if (g_quick && !cases[ci][5]) continue;
        int V = VOCAB_SIZE, Tp = (maxT + 7) / 8 * 8;
        char label[80];
        snprintf(label, sizeof label, "B=%d C=%d NH=%d maxT=%d", B, C, NH, maxT);
        size_t nk = (size_t)kvB * C * Tp, nv = (size_t)kvB * maxT * C, BC = (size_t)B * C;
        int *tokens = rand_ints(B, 0, V), *pos = rand_ints(B, 0, maxT);
        pos[0] = maxT - 1;   // the last position of the context
        float *wte = rand_floats((size_t)V * C, -1, 1), *wpe = rand_floats((size_t)maxT * C, -1, 1);
        float *qkv = rand_floats(3 * BC, -1, 1), *kt = rand_floats(nk, -1, 1), *v = rand_floats(nv, -1, 1);
        float *x = (float *)mallocCheck(BC * sizeof(float)), *atty = (float *)mallocCheck(BC * sizeof(float));
        float *kt0 = copy_floats(kt, nk), *v0 = copy_floats(v, nv);
        encoder_forward_pos(x, tokens, pos, wte, wpe, B, C);
        kv_append(kt, v, qkv, pos, B, C, maxT);                   // the CPU cache after the append
        attention_decode(atty, kt, v, qkv, pos, B, C, NH, maxT);
        int *d_tokens = DEV_I(tokens, B), *d_pos = DEV_I(pos, B);
        float *d_wte = DEV_F(wte, V * C), *d_wpe = DEV_F(wpe, maxT * C), *d_qkv = DEV_F(qkv, 3 * BC);
        float *d_x = (float *)cuda_malloc(BC * sizeof(float)), *d_atty = (float *)cuda_malloc(BC * sizeof(float));
        float *d_kt_ref = DEV_F(kt, nk), *d_v_ref = DEV_F(v, nv);   // attention from the CPU's cache
        FOR_BLOCK_SIZES {
            float *d_kt = DEV_F(kt0, nk), *d_v = DEV_F(v0, nv);
            cuda_encoder_forward_pos(d_x, d_tokens, d_pos, d_wte, d_wpe, B, C);
            cuda_kv_append(d_kt, d_v, d_qkv, d_pos, B, C, maxT);
            cuda_attention_decode(d_atty, d_kt_ref, d_v_ref, d_qkv, d_pos, B, C, NH, maxT);
            check("encoder_forward_pos", label, "out", x, d_x, BC, 0, 0, NULL);        // one add: exact
            check("kv_append", label, "keys", kt, d_kt, nk, 0, 0, NULL);               // copies: exact
            check("kv_append", label, "values", v, d_v, nv, 0, 0, NULL);
            check("attention_decode", label, "out", atty, d_atty, BC, 2e-6, 1e-5, NULL);
            cuda_free(d_kt); cuda_free(d_v);
        }
        cuda_free(d_tokens); cuda_free(d_pos); cuda_free(d_wte); cuda_free(d_wpe); cuda_free(d_qkv); cuda_free(d_x);
        cuda_free(d_atty); cuda_free(d_kt_ref); cuda_free(d_v_ref);
        free(tokens); free(pos); free(wte); free(wpe); free(qkv); free(kt); free(v); free(x); free(atty); free(kt0);
        free(v0);
    }
}

// ----------------------------------------------------------------------------
// Full steps through grpo.c's CUDA build: a model on the GPU (built with cuda_enabled = 1)
// against the same model on the CPU, from the same checkpoint, batch and seeds.
//
// Tolerances (float32 everywhere; the two paths sum in different orders, and the CPU's exp
// and GELU are polynomial/one-exp forms, the GPU's expf/tanhf):
//   sampled token ids and lengths: identical; their log-probs 2e-5
//   per-token logp, logp_ref 2e-5; ratio 1e-5; kl 1e-6 + 1e-3|kl|; dlogp 1e-8 + 1e-4|dlogp|;
//   clipped identical (tokens whose ratio is within 1e-5 of a clip bound left out)
//   loss 1e-7 + 1e-5|loss|; gradient norm 1e-5 relative
//   each of the 16 gradient tensors, before and after clipping: 2e-4·max|cpu tensor| + 1e-4|cpu|
//   AdamW: params, m, v on the GPU against the CPU's adamw_update applied to the GPU's own
//   (clipped) gradients from the same state: 1e-7 + 1e-6|ref| (params), 1e-10/1e-12 + 1e-6|ref|
//   (m, v); the GPU's params, m and v against the CPU's own step are printed for information.
// Between the μ = 2 iterations the GPU model is reset to the CPU's parameters and moments, so
// each iteration is compared from the same state instead of accumulating differences.

#define STEP_P 2
#define STEP_K 8
#define STEP_MAX_NEW 12
static const char *STEP_PROMPTS[STEP_P] = {"7 3 5>26:", "8 2 9>25:"};
static const GPTConfig STEP_CONFIG = {32, VOCAB_SIZE, 2, 3, 48};   // hs = 16; C not a power of two
static char g_step_ckpt[256];
static char test_last_good[1100];   // (what a save names as the last good checkpoint)

typedef struct { GPT policy, ref; KVCache kv; GroupBatch g; int prompt[STEP_P][16]; } StepSide;

// A small random model with logits far from uniform (parameters x4), saved as a checkpoint.
static void write_step_checkpoint(void) {
    snprintf(g_step_ckpt, sizeof g_step_ckpt, "%s/grpo_test_cuda_%d.bin", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    GPT m;
    cuda_enabled = 0;
    build_gpt(&m, STEP_CONFIG, 1, 4242);
    for (size_t i = 0; i < m.num_parameters; i++) m.params_memory[i] *= 4.0f;
    TrainState st = {0};   // (zero moments, which an --init load discards)
    save_checkpoint(g_step_ckpt, &m, &st, st.step, test_last_good);
    free_gpt(&m);
}

static Options step_options(int objective, int micro) {
    Options o;
    default_options(&o);
    o.obj.objective = objective;
    o.max_new_tokens = o.obj.max_new_tokens = STEP_MAX_NEW;
    o.temperature = 0.9f;                                    // T != 1 everywhere
    o.obj.beta = 0.04f;                                      // the reference model and k3
    o.obj.clip_eps_low = o.obj.clip_eps_high = 0.02f;        // clipping in the second iteration
    o.num_iterations = 2;
    o.micro_batch = micro;
    o.lr = 3e-3f; o.warmup = 0; o.schedule = 2; o.weight_decay = 0.1f;
    return o;
}

static void step_setup(StepSide *s, int on_device, const Options *o) {
    int N = STEP_P * STEP_K, mb = o->micro_batch > 0 && o->micro_batch < N ? o->micro_batch : N;
    cuda_enabled = on_device;
    load_checkpoint(g_step_ckpt, &s->policy, mb, NULL);
    load_checkpoint(g_step_ckpt, &s->ref, mb, NULL);
    build_kvcache(&s->kv, &s->policy.config, N);
    cuda_enabled = 0;
    build_group_batch(&s->g, STEP_P, STEP_K, STEP_MAX_NEW, mb, s->policy.config.max_seq_len);
    for (int p = 0; p < STEP_P; p++) {
        int bad = 0;
        s->prompt[p][0] = TOK_BOS;
        encode(STEP_PROMPTS[p], (int)strlen(STEP_PROMPTS[p]), s->prompt[p] + 1, &bad);
    }
    for (int i = 0; i < N; i++) {
        s->g.prompt[i] = s->prompt[i / STEP_K];
        s->g.plen[i] = 1 + (int)strlen(STEP_PROMPTS[i / STEP_K]);
        rng_seed(&s->g.rngs[i], 1234, 65536 + i);
    }
}

static void step_free(StepSide *s) {
    free_gpt(&s->policy); free_gpt(&s->ref); free_kvcache(&s->kv); free_group_batch(&s->g);
}

static void step_sample(StepSide *s, const Options *o) {
    sample_completions(&s->policy, &s->kv, s->g.N, s->g.prompt, s->g.plen, s->g.max_new, o->temperature, 0, s->g.rngs,
                       NULL, s->g.comp, s->g.sample_logp, s->g.clen);
}

// rewards with variation inside every group (the random model solves nothing), advantages, trees
static void step_rewards_trees(StepSide *s, const Options *o) {
    for (int i = 0; i < s->g.N; i++) s->g.reward[i] = (i * 5 + 3) % 7 < 3 ? 1.0f : 0.0f;
    compute_advantages(s->g.advantage, s->g.reward, s->g.num_groups, s->g.group_start, &o->obj);
    build_group_trees(&s->g);
}

static float *host_copy(const float *dev, size_t n) {
    float *h = (float *)mallocCheck(n * sizeof(float) + 1);
    cuda_memcpy_d2h(h, dev, n * sizeof(float));
    return h;
}

// each of the 16 tensors of a flat (params or grads) array against the CPU model's
static void check_tensors(const char *kernel, const char *label, const GPT *cpu, const float *cpu_mem,
                          const float *dev_mem) {
    size_t off = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        size_t n = cpu->param_sizes[t];
        double mx = 0.0;
        for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(cpu_mem[off + i]));
        check(kernel, label, PARAM_NAMES[t], cpu_mem + off, dev_mem + off, n, 2e-4 * mx + 1e-12, 1e-4, NULL);
        off += n;
    }
}

// max |a − b| over n floats of a host array and a device array (for information)
static double max_diff_dev(const float *host, const float *dev, size_t n) {
    float *h = host_copy(dev, n);
    double mx = 0.0;
    for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs((double)h[i] - host[i]));
    free(h);
    return mx;
}

/* One GRPO or λ-GRPO step on both sides, stage by stage: sampling, trees, then μ = 2
   iterations of loss + backward, gradient norm and clipping, AdamW (grpo_update's loop). */
static void test_full_step(int objective) {
    const char *obj = OBJECTIVE_NAMES[objective];
    Options oc = step_options(objective, 0), og = step_options(objective, 5);   // GPU: micro-batches 5,5,5,1
    StepSide c, g;
    step_setup(&c, 0, &oc);
    step_setup(&g, 1, &og);
    int N = c.g.N, MN = STEP_MAX_NEW;
    size_t NT = (size_t)N * MN, np = c.policy.num_parameters, nb = np * sizeof(float);
    char label[120];
    snprintf(label, sizeof label, "%s sampling", obj);
    // sampling: the same seeds give the same tokens (the logits agree to ~1e-6)
    step_sample(&c, &oc);
    step_sample(&g, &og);
    int same_len = memcmp(c.g.clen, g.g.clen, N * sizeof(int)) == 0, tok_mismatch = 0, ntok = 0;
    float *lp_ref = (float *)callocCheck(NT, sizeof(float)), *lp_got = (float *)callocCheck(NT, sizeof(float));
    for (int i = 0; i < N; i++)
        for (int j = 0; j < c.g.clen[i] && j < g.g.clen[i]; j++) {
            size_t at = (size_t)i * MN + j;
            tok_mismatch += c.g.comp[at] != g.g.comp[at];
            lp_ref[ntok] = c.g.sample_logp[at]; lp_got[ntok] = g.g.sample_logp[at]; ntok++;
        }
    record("step_sample", label, "clen", same_len, !same_len, 0, 0);
    record("step_sample", label, "token ids", tok_mismatch == 0, tok_mismatch, 0, 0);
    float *d_lp = DEV_F(lp_got, ntok);
    check("step_sample", label, "sample_logp", lp_ref, d_lp, ntok, 2e-5, 0, NULL);
    cuda_free(d_lp); free(lp_ref); free(lp_got);
    printf("      (%d completions, %d tokens sampled; %d token ids differ)\n", N, ntok, tok_mismatch);
    // the same batch on both sides from here on (the CPU's), then rewards, advantages, trees
    memcpy(g.g.comp, c.g.comp, NT * sizeof(int)); memcpy(g.g.clen, c.g.clen, N * sizeof(int));
    step_rewards_trees(&c, &oc);
    step_rewards_trees(&g, &og);
    UpdateStats usc = {0}, usg = {0};
    GRPOConfig cfg_c = grpo_config_from_options(&oc), cfg_g = grpo_config_from_options(&og);
    grpo_prepare_tokens(&c.g, &cfg_c, &usc);
    grpo_prepare_tokens(&g.g, &cfg_g, &usg);
    printf("      (%d tokens, mean |λ| %.2f)\n", usc.tokens, usc.mean_lambda);
    AdamWConfig opt = adamw_from_options(&oc, 10);
    GPT h;                               // host scratch: the CPU's AdamW on the GPU's gradients
    cuda_enabled = 0;
    build_gpt(&h, c.policy.config, 1, 0);
    for (int iter = 0; iter < oc.num_iterations; iter++) {
        snprintf(label, sizeof label, "%s iter %d", obj, iter);
        float *p0 = (float *)mallocCheck(nb), *m0 = (float *)mallocCheck(nb), *v0 = (float *)mallocCheck(nb);
        memcpy(p0, c.policy.params_memory, nb); memcpy(m0, c.policy.m_memory, nb); memcpy(v0, c.policy.v_memory, nb);
        double klc = 0, klg = 0;
        int clc = 0, clg = 0;
        double loss_c = grpo_loss_backward(&c.policy, &c.ref, &c.g, &cfg_c, iter, NULL, &klc, &clc);
        double loss_g = grpo_loss_backward(&g.policy, &g.ref, &g.g, &cfg_g, iter, NULL, &klg, &clg);
        // per-token outputs (host arrays on both sides): gathered over the completion tokens
        unsigned char *near = (unsigned char *)callocCheck(NT, 1);
        int n_near = 0, clip_mismatch = 0, n_clipped = 0;
        for (size_t at = 0; at < NT; at++) {
            float r = c.g.ratio[at];
            near[at] = fabsf(r - (1 - oc.obj.clip_eps_low)) < 1e-5f || fabsf(r - (1 + oc.obj.clip_eps_high)) < 1e-5f;
        }
        for (int i = 0; i < N; i++)
            for (int j = 0; j < c.g.clen[i]; j++) {
                size_t at = (size_t)i * MN + j;
                n_near += near[at]; n_clipped += c.g.clipped[at];
                clip_mismatch += !near[at] && c.g.clipped[at] != g.g.clipped[at];
            }
        check_scalar("step_loss", label, "loss", loss_c, loss_g, 1e-7, 1e-5);
        const float *cpu_tok[6] = {c.g.logp, c.g.logp_ref, c.g.logp_old, c.g.ratio, c.g.kl, c.g.dlogp};
        const float *gpu_tok[6] = {g.g.logp, g.g.logp_ref, g.g.logp_old, g.g.ratio, g.g.kl, g.g.dlogp};
        const char *names[6] = {"logp", "logp_ref", "logp_old", "ratio", "kl", "dlogp"};
        // ratio = exp(logp - logp_old): log-prob errors e1, e2 change it by about ratio·(e1 + e2),
        // so its tolerance is relative, the sum of the two log-prob tolerances (after an update at
        // lr 3e-3 ratios reach 3 and more, and 1e-5 absolute was tighter than the log-probs allow)
        double atol[6] = {2e-5, 2e-5, 2e-5, 1e-6, 1e-6, 1e-8}, rtol[6] = {0, 0, 0, 4e-5, 1e-3, 1e-4};
        for (int a = 0; a < 6; a++) {   // rows of max_new tokens: entries past a completion are 0 on both
            float *d = DEV_F(gpu_tok[a], NT);
            check("step_tokens", label, names[a], cpu_tok[a], d, NT, atol[a], rtol[a], a == 5 ? near : NULL);
            cuda_free(d);
        }
        record("step_tokens", label, "clipped", clip_mismatch == 0, clip_mismatch, 0, 0);
        printf("      (loss %.9g / %.9g; %d tokens clipped on the CPU, %d on the GPU; %d within 1e-5 of a bound)\n",
               loss_c, loss_g, clc, clg, n_near);
        if (n_near) {   // the two sides may take different branches there: their gradients differ by design
            printf("      (gradient and update checks of this iteration skipped: a ratio at a clip bound)\n");
            free(near); free(p0); free(m0); free(v0);
            continue;
        }
        check_tensors("step_grads", label, &c.policy, c.policy.grads_memory, g.policy.grads_memory);
        float norm_c = clip_grad_norm(&c.policy, 0.0f), norm_g = clip_grad_norm(&g.policy, 0.0f);   // 0: no clipping
        check_scalar("step_grad_norm", label, "norm", norm_c, norm_g, 0, 1e-5);
        float max_norm = 0.5f * norm_c;                                // so that clipping happens
        clip_grad_norm(&c.policy, max_norm);
        clip_grad_norm(&g.policy, max_norm);
        char lab2[160];
        snprintf(lab2, sizeof lab2, "%s clipped", label);
        check_tensors("step_grads", lab2, &c.policy, c.policy.grads_memory, g.policy.grads_memory);
        float lr = lr_at(&opt, iter);
        adamw_update(&c.policy, &opt, lr, iter + 1);
        adamw_update(&g.policy, &opt, lr, iter + 1);
        memcpy(h.params_memory, p0, nb); memcpy(h.m_memory, m0, nb); memcpy(h.v_memory, v0, nb);
        cuda_memcpy_d2h(h.grads_memory, g.policy.grads_memory, nb);
        adamw_update(&h, &opt, lr, iter + 1);
        check("step_adamw", label, "params", h.params_memory, g.policy.params_memory, np, 1e-7, 1e-6, NULL);
        check("step_adamw", label, "m", h.m_memory, g.policy.m_memory, np, 1e-10, 1e-6, NULL);
        check("step_adamw", label, "v", h.v_memory, g.policy.v_memory, np, 1e-12, 1e-6, NULL);
        printf("      (GPU vs CPU step: max|Δparams| %.3g, max|Δm| %.3g, max|Δv| %.3g; lr %g)\n",
               max_diff_dev(c.policy.params_memory, g.policy.params_memory, np),
               max_diff_dev(c.policy.m_memory, g.policy.m_memory, np),
               max_diff_dev(c.policy.v_memory, g.policy.v_memory, np), lr);
        // the next iteration starts from the CPU's state on both sides
        cuda_memcpy_h2d(g.policy.params_memory, c.policy.params_memory, nb);
        cuda_memcpy_h2d(g.policy.m_memory, c.policy.m_memory, nb);
        cuda_memcpy_h2d(g.policy.v_memory, c.policy.v_memory, nb);
        free(near); free(p0); free(m0); free(v0);
    }
    free_gpt(&h);
    step_free(&c); step_free(&g);
}

/* Checkpoints through the GPU: load on the GPU, save from the GPU, reload on the CPU: the
   bytes of the parameters are those of the file. */
static void test_checkpoint_roundtrip(void) {
    GPT c, g, back;
    cuda_enabled = 0; load_checkpoint(g_step_ckpt, &c, 1, NULL);
    cuda_enabled = 1; load_checkpoint(g_step_ckpt, &g, 1, NULL);
    char path[300];
    snprintf(path, sizeof path, "%s.gpu", g_step_ckpt);
    TrainState st = {3, {{1, 2, 3, 4}}, 2};
    save_checkpoint(path, &g, &st, st.step, test_last_good);
    cuda_enabled = 0;
    TrainState st2 = {0};
    st2.kind = 2;
    load_checkpoint(path, &back, 1, &st2);
    size_t nb = c.num_parameters * sizeof(float);
    check_bits("checkpoint", "GPU save, CPU load", "params", c.params_memory, back.params_memory, nb);
    float *zeros = (float *)callocCheck(c.num_parameters, sizeof(float));
    check_bits("checkpoint", "GPU save, CPU load", "m (zero)", zeros, back.m_memory, nb);
    record("checkpoint", "GPU save, CPU load", "step", st2.step == 3, fabs((double)st2.step - 3), 0, 0);  // |step - 3|
    free(zeros); remove(path);
    free_gpt(&c); free_gpt(&g); free_gpt(&back);
}

typedef struct { double loss, grad_norm, kl, clip_frac; float *params; int *comp; } RunResult;

// one whole GRPO step through grpo_update (μ = 2, micro-batches of 5), from the checkpoint
static RunResult run_grpo_update(int on_device, int objective) {
    Options o = step_options(objective, 5);
    StepSide s;
    step_setup(&s, on_device, &o);
    step_sample(&s, &o);
    step_rewards_trees(&s, &o);
    AdamWConfig opt = adamw_from_options(&o, 10);
    int adam_t = 0;
    GRPOConfig cfg = grpo_config_from_options(&o);
    UpdateStats us;
    UpdateStatus status = grpo_update(&s.policy, &s.ref, &s.g, &cfg, &opt, &adam_t, NULL, &us);
    if (status != UPDATE_DONE)   // the program would stop here (stop_on_nan): a failed check
        record("step_update", UPDATE_STOPPED_BY[status], "not finite", 0, us.not_finite, 0, 0);
    RunResult r = {us.loss, us.grad_norm, us.kl, us.clip_frac, NULL, NULL};
    size_t np = s.policy.num_parameters, NT = (size_t)s.g.N * s.g.max_new;
    r.params = (float *)mallocCheck(np * sizeof(float));
    if (on_device) cuda_memcpy_d2h(r.params, s.policy.params_memory, np * sizeof(float));
    else memcpy(r.params, s.policy.params_memory, np * sizeof(float));
    r.comp = (int *)mallocCheck(NT * sizeof(int));
    memcpy(r.comp, s.g.comp, NT * sizeof(int));
    step_free(&s);
    return r;
}

/* Determinism: the same seed twice on the GPU gives the same bits (sampled tokens, loss,
   gradient norm, kl, parameters after the step); and grpo_update's loss and norm (iteration 0,
   before any update) against the CPU's. */
static void test_determinism(int objective) {
    const char *obj = OBJECTIVE_NAMES[objective];
    char label[80];
    snprintf(label, sizeof label, "%s grpo_update", obj);
    RunResult a = run_grpo_update(1, objective), b = run_grpo_update(1, objective), c = run_grpo_update(0, objective);
    size_t np, NT = (size_t)STEP_P * STEP_K * STEP_MAX_NEW;
    {   GPT tmp; cuda_enabled = 0; build_gpt(&tmp, STEP_CONFIG, 1, 0); np = tmp.num_parameters; free_gpt(&tmp); }
    check_bits("determinism", label, "tokens", a.comp, b.comp, NT * sizeof(int));
    check_bits("determinism", label, "loss", &a.loss, &b.loss, sizeof a.loss);
    check_bits("determinism", label, "grad_norm", &a.grad_norm, &b.grad_norm, sizeof a.grad_norm);
    check_bits("determinism", label, "kl", &a.kl, &b.kl, sizeof a.kl);
    check_bits("determinism", label, "params", a.params, b.params, np * sizeof(float));
    check_scalar("step_update", label, "loss vs CPU", c.loss, a.loss, 1e-7, 1e-5);
    check_scalar("step_update", label, "norm vs CPU", c.grad_norm, a.grad_norm, 0, 1e-5);
    printf("      (GPU loss %.9g norm %.9g kl %.3g clip %.3f; CPU loss %.9g norm %.9g kl %.3g clip %.3f)\n", a.loss,
           a.grad_norm, a.kl, a.clip_frac, c.loss, c.grad_norm, c.kl, c.clip_frac);
    free(a.params); free(b.params); free(c.params); free(a.comp); free(b.comp); free(c.comp);
}

static void test_full_steps(void) {
    int bs = cuda_block_size;
    cuda_block_size = 256;           // the program's default
    write_step_checkpoint();
    test_checkpoint_roundtrip();
    test_full_step(OBJ_GRPO);
    test_full_step(OBJ_LAMBDA_GRPO);
    test_determinism(OBJ_GRPO);
    test_determinism(OBJ_LAMBDA_GRPO);
    remove(g_step_ckpt);
    cuda_enabled = 0;
    cuda_block_size = bs;
}

// ----------------------------------------------------------------------------
// The model against PyTorch (tests/ref_model.bin, the core tests' reference)

// n floats of model m (device or host memory) as a fresh host array
static float *model_floats(const GPT *m, const float *p, size_t n) {
    float *h = (float *)mallocCheck(n * sizeof(float) + 1);
    if (m->on_device) cuda_memcpy_d2h(h, p, n * sizeof(float));
    else memcpy(h, p, n * sizeof(float));
    return h;
}

// got (from model m) against PyTorch's ref: |d| <= atol + rtol·|ref|
static void check_model(const GPT *m, const char *label, const char *what, const float *ref, const float *got,
                        size_t n, double atol, double rtol) {
    float *h = model_floats(m, got, n);
    check_values("pytorch_reference", label, what, ref, h, n, atol, rtol, NULL);
    free(h);
}

/* test_pytorch_reference: the model, on the GPU (on_device = 1) or the CPU, against PyTorch
   float64 autograd (tests/gen_reference.py) with the tolerances of test_grpo.c's
   test_model_vs_pytorch (|d| <= tol·(|ref| + floor), written here as atol = tol·floor and
   rtol = tol), except that the logits' and gradients' atol is 5e-6, about 3x the CPU's worst
   absolute error (1.5e-6 on logits, 1.1e-6 on d(Σw·logp)), since the GPU sums in another
   order: logits, log-probs at T = 0.7, the masked SFT loss, every parameter
   gradient, the gradient of Σ w·logp at T = 0.7, the losses of five clipped AdamW steps and
   the parameters after them (the key bias left out: its exact gradient is zero and its float
   one is rounding noise that Adam turns into full steps; test_grpo.c explains). Run on the CPU
   (./tests/test_cuda --reference-cpu, no GPU needed) it checks this harness itself. */
static void test_pytorch_reference(int on_device) {
    const char *label = on_device ? "GPU model vs PyTorch" : "CPU model vs PyTorch";
    Reference r;
    cuda_enabled = on_device;
    load_reference(&r, "tests/ref_model.bin");
    cuda_enabled = 0;
    GPT *m = &r.m;
    int BT = r.B * r.T, V = m->config.vocab_size;
    size_t P = m->num_parameters;
    gpt_forward(m, r.inputs, r.B, r.T);
    check_model(m, label, "logits", r.logits, m->acts.logits, (size_t)BT * V, 5e-6, 1e-4);
    float *lp = (float *)mallocCheck(BT * sizeof(float));
    gpt_logprob_forward(m, lp, r.targets, BT, r.hp[0], NULL);                  // host out on both sides
    check_values("pytorch_reference", label, "logp T=0.7", r.logp, lp, BT, 1e-6, 1e-4, NULL);
    float loss = reference_loss_backward(&r, 1);
    check_scalar("pytorch_reference", label, "loss", r.loss, loss, 0, 1e-5);
    size_t off = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        char what[32];
        snprintf(what, sizeof what, "d%s", PARAM_NAMES[t]);
        check_model(m, label, what, r.grads + off, m->grads_memory + off, m->param_sizes[t], 5e-6, 2e-3);
        off += m->param_sizes[t];
    }
    float *w = (float *)mallocCheck(BT * sizeof(float));
    for (int i = 0; i < BT; i++) w[i] = (i % 7 - 3) / 10.0f;
    gpt_forward(m, r.inputs, r.B, r.T);
    gpt_logprob_forward(m, lp, r.targets, BT, r.hp[0], NULL);
    gpt_zero_grad(m);
    gpt_logprob_backward(m, r.targets, w, BT, r.hp[0]);
    gpt_backward(m, r.inputs);
    check_model(m, label, "d(Σw·logp)", r.grad_logp, m->grads_memory, P, 5e-6, 2e-3);
    AdamWConfig opt = {r.hp[1], r.hp[2], r.hp[3], r.hp[4], r.hp[5], r.hp[6], 0, 100, 2, 1.0f};
    float losses[16];
    reference_set_params(m, r.params0);
    for (int s = 0; s < r.h[9] && s < 16; s++) {
        losses[s] = reference_loss_backward(&r, 1);
        clip_grad_norm(m, opt.grad_clip);
        adamw_update(m, &opt, opt.lr, s + 1);
    }
    check_values("pytorch_reference", label, "AdamW losses", r.adam_losses, losses, r.h[9] < 16 ? r.h[9] : 16, 0,
                 1e-5, NULL);
    float *mine = model_floats(m, m->params_memory, P), *theirs = copy_floats(r.final_params, P);
    int C = m->config.channels, L = m->config.num_layers;
    size_t kb = 0;   // offset of qkvb: the tensors before it
    for (int t = 0; t < NUM_PARAM_TENSORS && strcmp(PARAM_NAMES[t], "qkvb"); t++) kb += m->param_sizes[t];
    for (int l = 0; l < L; l++)
        for (int i = C; i < 2 * C; i++) mine[kb + (size_t)l * 3 * C + i] = theirs[kb + (size_t)l * 3 * C + i] = 0.0f;
    check_values("pytorch_reference", label, "AdamW params", theirs, mine, P, 1e-4 * 0.5, 1e-4, NULL);
    free(mine); free(theirs); free(lp); free(w);
    free(r.params0); free(r.inputs); free(r.targets); free(r.mask); free(r.logits); free(r.logp); free(r.grads);
    free(r.grad_logp); free(r.adam_losses); free(r.final_params);
    free_gpt(m);
}

int main(int argc, char **argv) {
    int only_steps = 0, only_kernels = 0, reference_cpu = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) g_quick = 1;
        else if (!strcmp(argv[i], "--steps")) only_steps = 1;
        else if (!strcmp(argv[i], "--kernels")) only_kernels = 1;
        else if (!strcmp(argv[i], "--reference-cpu")) reference_cpu = 1;
        else {
            fprintf(stderr, "%s: unknown argument '%s'\nusage: %s [--quick] [--steps | --kernels | --reference-cpu]\n",
                    argv[0], argv[i], argv[0]);
            return 2;
        }
    }
    if (only_steps && only_kernels) {
        fprintf(stderr, "%s: --steps and --kernels exclude each other (together they would run nothing)\n", argv[0]);
        return 2;
    }
    if (reference_cpu) {   // the PyTorch-reference harness on the CPU model: needs no GPU
        test_pytorch_reference(0);
        printf("%d passed, %d failed\n", g_pass, g_fail);
        return g_fail ? 1 : 0;
    }
    if (cuda_device_count() == 0) {
        printf("test-cuda: no GPU found, skipped\n");
        return 0;
    }
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        printf("test-cuda: %s, compute capability %d.%d, %d SMs%s\n", prop.name, prop.major, prop.minor,
               prop.multiProcessorCount, g_quick ? " (quick)" : "");
    cuda_sync_launches = 1;   // report a fault at the launch that caused it
    cuda_init(0);
    rng_seed(&g_rng, 1234, 5);
    double t0 = wall_seconds();
    if (!only_steps) {
        test_encoder();
        test_layernorm();
        test_matmul();
        test_attention();
        test_elementwise();
        test_logprob();
        test_grpo_token_loss();
        test_optimizer();
        test_decode();
    }
    if (!only_kernels) test_pytorch_reference(1);
    if (!only_kernels) test_full_steps();
    cuda_shutdown();
    printf("\n== summary (%.1f s)\n%-24s %7s %7s  %s\n", wall_seconds() - t0, "kernel", "checks", "failed", "worst max|diff|");
    for (int i = 0; i < g_nstats; i++)
        printf("%-24s %7d %7d  %.3g\n", g_stats[i].kernel, g_stats[i].checks, g_stats[i].failed, g_stats[i].max_diff);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
