/*
tests/test_grpo.c: the test suite of grpo.c (make test).

Includes grpo.c (its main is compiled out with TESTING) and checks every piece against an
independent reference: PyTorch autograd (tests/ref_model.bin, written by
tests/gen_reference.py), finite differences, brute-force counts, closed-form vectors, and
fixtures produced with verl and TRL (tests/fixtures/). Each check prints one line; the
run ends with `N passed, N failed` and exits non-zero when anything failed.
Run one group with ./tests/test_grpo GROUP (model, tree, objective, verifier, treepack, mcprm,
critic, ppo, select, ...), several as GROUP,GROUP,...
*/
#define TESTING
#ifndef GRPO_SRC
#define GRPO_SRC "../grpo.c"   // tests/grade.sh compiles the suite against a student's copy
#endif
#include GRPO_SRC
#include <stdarg.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>

// fclose of a fixture the test wrote: a failed write (now or at an earlier flush) stops the tests
#define fcloseCheck(f) \
    do { \
        int failed_ = ferror(f); \
        if (fclose(f) != 0 || failed_) fail_at(__FILE__, __LINE__, "test: writing a fixture failed", NULL); \
    } while (0)

static int tests_passed = 0, tests_failed = 0;
static const char *self_bin = "./tests/test_grpo";   // this program (argv[0]), for child processes

// the program under test for tests that run it as a process (make test-asan sets GRPO_BIN)
static const char *grpo_bin(void) {
    const char *b = getenv("GRPO_BIN");
    return b && *b ? b : "./grpo";
}

/* check: one line `PASS|FAIL  name  detail` (a detail that quotes a program's output on several
   lines is joined with " | ", so that the line after a check is never part of it) */
static void check(int ok, const char *name, const char *fmt, ...) {
    char detail[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    printf("%s  %-58s ", ok ? "PASS" : "FAIL", name);
    for (const char *c = detail; *c; c++) {
        if (*c != '\n') { putchar(*c); continue; }
        while (c[1] == '\n' || c[1] == ' ') c++;   // a line end and the next line's indent
        if (c[1]) fputs(" | ", stdout);
    }
    printf("\n");
    fflush(stdout);
    if (ok) tests_passed++; else tests_failed++;
}

/* same_ints: got[0..n) == want[0..n); else prints `      what: got [..], expected [..]` (a detail
   line before the check's FAIL line, as compare() prints them) and returns 0 */
static int same_ints(const char *what, const int *got, const int *want, int n) {
    if (!memcmp(got, want, n * sizeof(int))) return 1;
    printf("      %s: got [", what);
    for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", got[i]);
    printf("], expected [");
    for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", want[i]);
    printf("]\n");
    return 0;
}

/* compare: passes when max |a−b| <= tol · S with S = max(max|b|, scale): the error is measured
   against the magnitude of the whole tensor, not element by element. float32 arithmetic (unit
   roundoff u = 2^-24 = 6.0e-8) errs relative to the size of the terms a value is computed
   from, so an element that cancels to near 0 (a logit of 1e-5 from terms of size 1) carries
   the same absolute error as a large one, and another summation order, vector width or FMA
   contraction changes it by that much: a per-element relative test fails there on some CPUs.
   `scale` is a lower bound for S where the expected values are smaller than the terms they
   are computed from (an exact 0, a sum that cancels). Every call states its error argument:
   the float32 error it allows, the worst error measured on the three builds `make test` runs
   (-march=native, -march=x86-64, the widest vector ISA), and what a real bug gives.
   Prints max |a−b| / S, S, and on failure the first few elements beyond tol · S. */
static int compare(const char *name, const float *a, const float *b, size_t n, float tol, float scale) {
    double S = scale, maxd = 0.0;
    size_t worst = 0;
    int shown = 0;
    for (size_t i = 0; i < n; i++) S = fmax(S, fabs(b[i]));
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= maxd)) { maxd = d; worst = i; }
        if (!(d <= tol * S) && shown < 3) {
            printf("      %s[%zu]: got %.9g, expected %.9g\n", name, i, a[i], b[i]);
            shown++;
        }
    }
    double err = S > 0 ? maxd / S : maxd;
    int ok = err <= tol;
    check(ok, name, "max |a−b| = %.2e of scale %.3g (tol %.0e), at [%zu]", err, S, tol, worst);
    return ok;
}

/* compare_params: compare() on a vector laid out like m's parameters, each tensor against its
   own magnitude (S_t = max(max|b| over tensor t, scale)), so that a tensor of small entries
   is not judged against the largest one; one check, naming the worst tensor. */
static int compare_params(const char *name, const GPT *m, const float *a, const float *b, float tol,
                          float scale) {
    double worst_err = 0.0, worst_S = 0.0;
    int worst_t = 0, shown = 0;
    size_t off = 0, worst_i = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        size_t n = m->param_sizes[t];
        double S = scale, maxd = 0.0;
        size_t wi = 0;
        for (size_t i = 0; i < n; i++) S = fmax(S, fabs(b[off + i]));
        for (size_t i = 0; i < n; i++) {
            double d = fabs((double)a[off + i] - b[off + i]);
            if (!(d <= maxd)) { maxd = d; wi = i; }
            if (!(d <= tol * S) && shown < 3) {
                printf("      %s %s[%zu]: got %.9g, expected %.9g\n", name, PARAM_NAMES[t], i, a[off + i],
                       b[off + i]);
                shown++;
            }
        }
        double err = S > 0 ? maxd / S : maxd;
        if (!(err <= worst_err)) { worst_err = err; worst_S = S; worst_t = t; worst_i = wi; }
        off += n;
    }
    int ok = worst_err <= tol;
    check(ok, name, "max |a−b| = %.2e of scale %.3g (tol %.0e), at %s[%zu]", worst_err, worst_S, tol,
          PARAM_NAMES[worst_t], worst_i);
    return ok;
}

/* The suite's tolerances, as fractions of compare's scale S. float32 rounds each operation to
   within u = 2^-24 = 6.0e-8 of its result. A sum or dot product of K terms errs by at most
   γ_K ≈ K·u of Σ|terms|, in any order, with or without FMA (Higham, Accuracy and Stability of
   Numerical Algorithms, §3.1); roundings of random sign give about sqrt(K)·u. Another vector
   width or FMA contraction changes the order and the roundings, not these bounds. Each call
   says what it measured on the three builds of `make test` (native here: AVX-512, FMA;
   x86-64: SSE2, no FMA; x86-64-v4) and what a real bug gives. */
#define TOL_FWD 1e-5f   // the model's forward: its longest dot products have K = 4C = 128 terms,
                        // γ_128 = 7.6e-6 of the terms' size, passed on by the layers at gain ~1
#define TOL_BWD 2e-5f   // gradients: the backward's own γ_K (K <= 128 channels or B·T = 48
                        // positions) on top of the forward's error that it starts from
#define TOL_FEW 1e-6f   // a value from a handful of roundings (an advantage, a coefficient, k3,
                        // one log-softmax): 16 u

/* child_stderr: runs fn(arg) in a child process (its stdout to /dev/null), puts what it
   wrote on standard error in err (cap bytes, NUL-terminated); returns its exit code, −1 when
   a signal ended it, −2 when no pipe could be made. */
static int child_stderr(void (*fn)(void *), void *arg, char *err, size_t cap) {
    int fds[2];
    err[0] = 0;
    if (pipe(fds) != 0) return -2;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        if (!freopen("/dev/null", "w", stdout)) _exit(99);
        fn(arg);
        fflush(stdout);
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while ((r = read(fds[0], err + got, cap - 1 - got)) > 0) got += r;
    err[got] = 0;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* expect_exit: runs fn(arg) in a child process and checks that it exits with `code`
   and that its standard error contains `needle`. */
static void expect_exit(const char *name, void (*fn)(void *), void *arg, int code, const char *needle) {
    char err[8192];
    int exit_code = child_stderr(fn, arg, err, sizeof err);
    if (exit_code == -2) { check(0, name, "pipe failed"); return; }
    int ok = exit_code == code && strstr(err, needle) != NULL;
    char first[160];
    snprintf(first, sizeof first, "%.150s", err);
    char *nl = strchr(first, '\n');
    if (nl) *nl = 0;
    check(ok, name, "exit %d (want %d): %s", exit_code, code, first);
}

/* run_binary: runs a shell command line (the real ./grpo: a fresh process, since OpenMP's
   thread pool does not survive fork), captures stdout+stderr; returns the exit status. */
static int run_binary(const char *cmdline, char *out, size_t cap) {
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmdline);
    fflush(stdout);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t got = 0, r;
    char sink[4096];
    while ((r = fread(got < cap - 1 ? out + got : sink, 1, got < cap - 1 ? cap - 1 - got : sizeof sink, p)) > 0)
        if (got < cap - 1) got += r;
    out[got] = 0;
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// the groups named on the command line (one, or several joined by commas); none: all of them
static int want(const char *group, const char *only) {
    if (!only) return 1;
    size_t n = strlen(group);
    for (const char *p = strstr(only, group); p; p = strstr(p + n, group))
        if ((p == only || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

// ----------------------------------------------------------------------------
// The model against PyTorch (tests/ref_model.bin)

#include "ref_model.h"

static void test_model_vs_pytorch(void) {
    Reference r;
    load_reference(&r, "tests/ref_model.bin");
    int BT = r.B * r.T, V = r.m.config.vocab_size;
    size_t P = r.m.num_parameters;
    printf("# reference: L=%d NH=%d C=%d V=%d maxT=%d, batch %dx%d, %zu parameters\n", r.m.config.num_layers,
           r.m.config.num_heads, r.m.config.channels, V, r.m.config.max_seq_len, r.B, r.T, P);
    gpt_forward(&r.m, r.inputs, r.B, r.T);
    // PyTorch computed in float64 from the same float32 weights, so every difference is
    // grpo.c's float32 rounding. A logit near 0 is a sum of terms of size ~1 and carries their
    // rounding, hence S = max|logit|. Measured (native / x86-64 / v4): 3.8e-7 / 4.1e-7 /
    // 3.8e-7 of S. LayerNorm's eps at 1e-6 instead of 1e-5 gives 9.7e-5.
    compare("model: logits vs PyTorch", r.m.acts.logits, r.logits, (size_t)BT * V, TOL_FWD, 0.0f);
    float *lp = (float *)mallocCheck(BT * 4);
    logprob_forward(lp, r.m.acts.probs, r.m.acts.logits, r.targets, BT, V, r.hp[0], NULL);
    // the logits' error / T, plus a log-sum-exp of 24 terms. Measured 2.4e-7 / 1.8e-7 / 2.4e-7.
    compare("model: logp at T=0.7 vs PyTorch", lp, r.logp, BT, TOL_FWD, 0.0f);
    float loss = reference_loss_backward(&r, 1);
    // the mean of the log-probs (T = 1): their error. Measured 0 / 0 / 0.
    compare("model: masked SFT loss vs PyTorch", &loss, &r.loss, 1, TOL_FWD, 0.0f);
    // every parameter tensor's gradient, with its name, against the tensor's max|grad|.
    // Measured: at most 5.9e-7 / 5.8e-7 / 7.4e-7 of S (ln1w, attprojw, ln1w). A wrong GELU
    // derivative (3% off in its x² term) gives 1.7e-3; LayerNorm eps 1e-6 gives 1.9e-4.
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        char name[96];
        snprintf(name, sizeof name, "model: d loss/d %s vs PyTorch", PARAM_NAMES[t]);
        size_t off = (size_t)(((float **)&r.m.grads)[t] - r.m.grads_memory);
        compare(name, ((float **)&r.m.grads)[t], r.grads + off, r.m.param_sizes[t], TOL_BWD, 0.0f);
    }
    // gradient through the temperature log-prob: S = Σ w·logp(T=0.7)
    float *w = (float *)mallocCheck(BT * 4);
    for (int b = 0; b < r.B; b++) for (int t = 0; t < r.T; t++) w[b * r.T + t] = ((b * r.T + t) % 7 - 3) / 10.0f;
    gpt_forward(&r.m, r.inputs, r.B, r.T);
    logprob_forward(lp, r.m.acts.probs, r.m.acts.logits, r.targets, BT, V, r.hp[0], NULL);
    gpt_zero_grad(&r.m);
    logprob_backward(r.m.grads_acts.logits, r.m.acts.probs, r.targets, w, BT, V, r.hp[0]);
    gpt_backward(&r.m, r.inputs);
    // each tensor against its own max|grad| (the 1/T makes this gradient larger). Measured
    // 1.1e-6 / 6.0e-7 / 1.0e-6 of S. The wrong GELU derivative above gives 1.9e-3.
    compare_params("model: d(Σ w·logp at T=0.7)/dθ vs PyTorch", &r.m, r.m.grads_memory, r.grad_logp, TOL_BWD,
                   0.0f);
    // AdamW with clipping: five steps on the same batch
    AdamWConfig opt = {r.hp[1], r.hp[2], r.hp[3], r.hp[4], r.hp[5], r.hp[6], 0, 100, 2, 1.0f};
    float losses[16];
    memcpy(r.m.params_memory, r.params0, P * 4);
    for (int s = 0; s < r.h[9]; s++) {
        losses[s] = reference_loss_backward(&r, 1);
        clip_grad_norm(&r.m, opt.grad_clip);
        adamw_update(&r.m, &opt, opt.lr, s + 1);
    }
    // forward losses of the moved model. Measured 6.1e-8 / 6.1e-8 / 1.2e-7 of S; AdamW
    // without its weight decay gives 4.1e-5.
    compare("model: losses of 5 AdamW steps vs PyTorch", losses, r.adam_losses, r.h[9], TOL_FWD, 0.0f);
    // The key bias (rows C..2C of qkvb) has an exactly zero gradient in exact arithmetic
    // (softmax is invariant to adding q·b_k to every score of a query). Its float gradient is
    // rounding noise (~1e-9) that Adam's normalisation turns into full-size steps, in a
    // direction no two implementations share, so those entries are compared separately.
    int C = r.m.config.channels, L = r.m.config.num_layers;
    size_t qkvb_off = (size_t)(r.m.params.qkvb - r.m.params_memory);
    float *mine = (float *)mallocCheck(P * 4), *theirs = (float *)mallocCheck(P * 4);
    for (size_t i = 0; i < P; i++) {   // the movement Δθ of each entry over the 5 steps
        mine[i] = r.m.params_memory[i] - r.params0[i];
        theirs[i] = r.final_params[i] - r.params0[i];
    }
    for (int l = 0; l < L; l++)
        for (int i = C; i < 2 * C; i++) mine[qkvb_off + l * 3 * C + i] = theirs[qkvb_off + l * 3 * C + i] = 0.0f;
    // Compared: each entry's movement Δθ, against S = max|Δθ| (about 5 steps x lr 1e-3). Adam
    // moves an entry by ~lr per step whatever its gradient's size, so an entry with a small
    // gradient, whose relative rounding error is large, can turn a fraction of its step:
    // 1e-2 of S allows 1% of the movement. Measured 7.8e-4 / 4.0e-4 / 8.2e-4 of S (one qkvw
    // entry). AdamW without weight decay gives 7.3e-2; the GELU coefficient 0.0447 instead
    // of 0.044715 (5.9e-6 on the logits, within TOL_FWD) gives 2.2e-2.
    compare("model: parameters after 5 AdamW steps vs PyTorch (but k bias)", mine, theirs, P, 1e-2f, 0.0f);
    double kb = 0, gmax = 0;
    memcpy(r.m.params_memory, r.params0, P * 4);
    reference_loss_backward(&r, 1);
    for (size_t i = 0; i < r.m.param_sizes[5]; i++) gmax = fmax(gmax, fabs(r.m.grads.qkvb[i]));
    for (int l = 0; l < L; l++)
        for (int i = C; i < 2 * C; i++) kb = fmax(kb, fabs(r.m.grads.qkvb[l * 3 * C + i]));
    // exactly 0 in exact arithmetic, so what is left is rounding of terms of the size of the
    // qkvb gradient: measured 3.4e-8 / 5.9e-8 / 4.2e-8 of its max (about 1 u).
    check(kb <= TOL_FWD * gmax, "model: key-bias gradient is zero up to rounding",
          "max |g| = %.2e of the qkvb gradient's scale %.3g (tol 1e-05)", kb / gmax, gmax);
    free(mine); free(theirs);
    free(lp); free(w);
    free_gpt(&r.m);
}

// ----------------------------------------------------------------------------
// Finite differences on a micro model (independent of PyTorch)

static double fd_objective(GPT *m, const int *inp, const int *tg, const float *w, int B, int T, float temp) {
    int V = m->config.vocab_size;
    float lp[64];
    gpt_forward(m, inp, B, T);
    logprob_forward(lp, m->acts.probs, m->acts.logits, tg, B * T, V, temp, NULL);
    double s = 0;
    for (int i = 0; i < B * T; i++) s += (double)w[i] * lp[i];
    return s;
}

static void test_finite_differences(void) {
    GPTConfig c = {6, VOCAB_SIZE, 1, 2, 8};   // a few hundred parameters (plus embeddings)
    GPT m;
    build_gpt(&m, c, 2, 7);
    Rng rng;
    rng_seed(&rng, 42, 0);
    for (size_t i = 0; i < m.num_parameters; i++) m.params_memory[i] = 0.3f * rng_normal(&rng) + (m.params_memory[i] == 1.0f);
    int B = 2, T = 6, inp[12], tg[12];
    float w[12];
    for (int i = 0; i < B * T; i++) { inp[i] = rng_int(&rng, VOCAB_SIZE); tg[i] = rng_int(&rng, VOCAB_SIZE); w[i] = rng_normal(&rng); }
    tg[3] = -1;
    float temp = 0.8f;
    fd_objective(&m, inp, tg, w, B, T, temp);
    gpt_zero_grad(&m);
    logprob_backward(m.grads_acts.logits, m.acts.probs, tg, w, B * T, VOCAB_SIZE, temp);
    gpt_backward(&m, inp);
    float *analytic = (float *)mallocCheck(m.num_parameters * 4);
    memcpy(analytic, m.grads_memory, m.num_parameters * 4);
    // central differences on every parameter
    float *numeric = (float *)mallocCheck(m.num_parameters * 4);
    float h = 1e-2f;
    for (size_t i = 0; i < m.num_parameters; i++) {
        float save = m.params_memory[i];
        m.params_memory[i] = save + h; double fp = fd_objective(&m, inp, tg, w, B, T, temp);
        m.params_memory[i] = save - h; double fm = fd_objective(&m, inp, tg, w, B, T, temp);
        m.params_memory[i] = save;
        numeric[i] = (float)((fp - fm) / (2 * h));
    }
    // the central difference errs by h²/6 times the third derivative (truncation, the same
    // on every build) plus ~u·|f|/h (rounding: ~1e-4, 6e-6 of S). Measured 1.7e-3 of S (wte)
    // on all three builds. A GELU backward without its second term gives 0.51.
    compare_params("model: gradient vs central finite differences", &m, analytic, numeric, 1e-2f, 0.0f);
    free(numeric);
    free(analytic); free_gpt(&m);
}

// Feeds sequences inp (B,T) to the KV cache one position per decode step; out (B,T,V) gets
// the logits after each position.
static void decode_positions(GPT *m, KVCache *kv, const int *inp, int B, int T, float *out) {
    int pos[64], tok[64];
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++) { tok[b] = inp[b * T + t]; pos[b] = t; }
        gpt_decode_step(m, kv, tok, pos, B);
        for (int b = 0; b < B; b++)
            memcpy(out + ((size_t)b * T + t) * VOCAB_SIZE, kv->logits + b * VOCAB_SIZE, VOCAB_SIZE * 4);
    }
}

static void test_kv_cache(void) {
    GPTConfig c = {32, VOCAB_SIZE, 3, 4, 64};
    GPT m;
    build_gpt(&m, c, 5, 11);
    Rng rng;
    rng_seed(&rng, 5, 0);
    for (size_t i = 0; i < m.num_parameters; i++) m.params_memory[i] += 0.05f * rng_normal(&rng);
    int B = 5, T = 32, inp[5 * 32];
    for (int i = 0; i < B * T; i++) inp[i] = rng_int(&rng, VOCAB_SIZE);
    gpt_forward(&m, inp, B, T);
    KVCache kv;
    build_kvcache(&kv, &c, B);
    float *inc = (float *)mallocCheck((size_t)B * T * VOCAB_SIZE * 4);
    decode_positions(&m, &kv, inp, B, T, inc);
    // both sides are grpo.c's float32 forward: the same dot products (K <= 4C = 256), whose
    // order the decode step may change, which moves a logit by ~sqrt(K)·u per layer of the
    // terms' size. Measured 0 on all three builds (the same order today); a wrong cache
    // position or a missing causal mask changes logits by O(1).
    compare("kv-cache: incremental logits == full forward", inc, m.acts.logits, (size_t)B * T * VOCAB_SIZE,
            TOL_FWD, 0.0f);
    free(inc); free_kvcache(&kv); free_gpt(&m);
}

/* The sampler's packed weights (kv_pack_weights): decoding on them gives the logits of
   decoding without them bit for bit (the same panels, summed in the same order), at a width
   that leaves every matmul a partial last panel (C = 40, V = 24); and the sampler unpacks
   when it returns, so a decode after the weights change sees the new ones. */
static void test_kv_packed_weights(void) {
    GPTConfig c = {16, VOCAB_SIZE, 2, 4, 40};
    GPT m;
    build_gpt(&m, c, 3, 12);
    Rng rng;
    rng_seed(&rng, 6, 0);
    for (size_t i = 0; i < m.num_parameters; i++) m.params_memory[i] += 0.05f * rng_normal(&rng);
    int B = 3, T = 16, inp[3 * 16], pos[3], tok[3];
    for (int i = 0; i < B * T; i++) inp[i] = rng_int(&rng, VOCAB_SIZE);
    KVCache kv;
    build_kvcache(&kv, &c, B);
    size_t n = (size_t)B * T * VOCAB_SIZE;
    float *logits[2] = {(float *)mallocCheck(n * 4), (float *)mallocCheck(n * 4)};
    for (int packed = 0; packed < 2; packed++) {
        if (packed) kv_pack_weights(&kv, &m);
        decode_positions(&m, &kv, inp, B, T, logits[packed]);
        kv.packed = 0;
    }
    size_t diff = 0;
    for (size_t i = 0; i < n; i++) diff += memcmp(&logits[0][i], &logits[1][i], 4) != 0;
    check(diff == 0, "kv-cache: decode on packed weights == unpacked, bit for bit", "%zu of %zu logits differ",
          diff, n);
    // a sampling call packs and unpacks; then a changed weight must change the logits
    const int *pp[3] = {inp, inp + T, inp + 2 * T};
    int plen[3] = {4, 5, 6}, comp[3 * 4], clen[3];
    float clp[3 * 4];
    Rng rngs[3];
    for (int b = 0; b < B; b++) rng_seed(&rngs[b], 7, b);
    sample_completions(&m, &kv, B, pp, plen, 4, 1.0f, 0, rngs, NULL, comp, clp, clen);
    int left_packed = kv.packed;
    for (int i = 0; i < 40; i++) m.params.attprojw[i] += 1.0f;   // read only through the matmul's panels
    for (int b = 0; b < B; b++) { tok[b] = inp[b * T]; pos[b] = 0; }
    gpt_decode_step(&m, &kv, tok, pos, B);
    check(!left_packed && memcmp(kv.logits, logits[0], VOCAB_SIZE * 4) != 0,
          "kv-cache: the sampler unpacks on return (a changed weight is seen)", "packed after the call: %d",
          left_packed);
    free(logits[0]); free(logits[1]); free_kvcache(&kv); free_gpt(&m);
}

/* attention_forward (vector sums, exp_simd) against attention_forward_ref (textbook loops,
   expf) on random q, k, v in [-1, 1]. Error argument, u = 2^-24: a score q·k/sqrt(hs) is a
   dot product of length hs, so each version's rounding error is at most (hs+1)·u·Σ|q_i k_i|
   /sqrt(hs) <= (hs+1)·sqrt(hs)·u, and the two differ by ds <= 2(hs+1)sqrt(hs)·u. A shift of
   ds in the scores moves each softmax weight by a factor of at most e^{2ds} ≈ 1 + 2ds; the
   exps (exp_simd ~1 ulp, expf <= 1 ulp), the sum of <= T terms and the division add at most
   (T+4)·u per version. So |Δatt| <= (2ds + 2(T+4)u)·max|att_ref| (max|att_ref| = 1: the
   first row), and out = Σ_{t2<=t} a v (<= T terms, weights >= 0 summing to 1) adds 2T·u:
   |Δout| <= (2ds + 2(T+4)u + 2T·u)·max|v|, max|v| being the scale of Σ a|v|. These are
   worst-case bounds; typical errors are a few u. Shapes cover T = 1, T not a multiple of 8
   (padding of the transposed keys), hs not a multiple of 8 (attn_rows' leftover channels)
   and odd hs (attn_scores' odd tail). out and att start as NaN: entries not written fail. */
/* attention at a head size and context whose scratch (hs × T floats of keys, of values) is
   8.5 MB: it was a stack array, and `./grpo bench --channels 4096 --heads 1 --context 520`
   died of a stack overflow (break finding 1). Forward and backward must run, with every
   softmax row summing to 1 and finite gradients. */
static void test_attention_large_head(void) {
    int B = 1, T = 520, C = 4096, NH = 1;
    size_t nin = (size_t)B * T * 3 * C, natt = (size_t)B * NH * T * T;
    float *inp = (float *)mallocCheck(nin * sizeof(float));
    float *dinp = (float *)callocCheck(nin, sizeof(float));
    float *out = (float *)mallocCheck((size_t)B * T * C * sizeof(float));
    float *dout = (float *)mallocCheck((size_t)B * T * C * sizeof(float));
    float *att = (float *)mallocCheck(natt * sizeof(float));
    float *datt = (float *)mallocCheck(natt * sizeof(float));
    Rng rng;
    rng_seed(&rng, 7, 0);
    for (size_t i = 0; i < nin; i++) inp[i] = 0.05f * rng_normal(&rng);
    for (size_t i = 0; i < (size_t)B * T * C; i++) dout[i] = rng_normal(&rng);
    attention_forward(out, att, inp, B, T, C, NH);
    attention_backward(dinp, datt, dout, inp, att, B, T, C, NH);
    double worst = 0.0;
    for (int t = 0; t < T; t++) {
        double sum = 0.0;
        for (int t2 = 0; t2 < T; t2++) sum += att[(size_t)t * T + t2];
        if (fabs(sum - 1.0) > worst) worst = fabs(sum - 1.0);
    }
    int finite = 1;
    for (size_t i = 0; i < nin; i++) finite &= isfinite(dinp[i]) != 0;
    // a row of ≤ 520 softmax terms sums to 1 within 520 float32 roundings (3.1e-5)
    check(worst <= 520 * 6e-8 && finite, "attention: head size 4096 at T=520 (8.5 MB of scratch) runs",
          "max |row sum - 1| %.2e, gradients finite %d", worst, finite);
    free(inp);
    free(dinp);
    free(out);
    free(dout);
    free(att);
    free(datt);
}

static void test_attention_ref(void) {
    static const int shapes[][4] = {{2, 13, 48, 3}, {1, 1, 32, 2}, {3, 8, 24, 4}, {2, 37, 30, 2}, {1, 9, 5, 1},
                                    {1, 64, 128, 2}};
    const double u = 1.0 / 16777216.0;
    Rng rng;
    rng_seed(&rng, 13, 0);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int B = shapes[s][0], T = shapes[s][1], C = shapes[s][2], NH = shapes[s][3], hs = C / NH;
        size_t ni = (size_t)B * T * 3 * C, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
        float *inp = (float *)mallocCheck(ni * 4), *out = (float *)mallocCheck(no * 4), *att = (float *)mallocCheck(na * 4);
        float *out_ref = (float *)mallocCheck(no * 4), *att_ref = (float *)mallocCheck(na * 4);
        for (size_t i = 0; i < ni; i++) inp[i] = 2.0f * rng_uniform(&rng) - 1.0f;
        memset(out, 0xff, no * 4); memset(att, 0xff, na * 4);   // NaN
        memset(out_ref, 0xff, no * 4); memset(att_ref, 0xff, na * 4);
        attention_forward(out, att, inp, B, T, C, NH);
        attention_forward_ref(out_ref, att_ref, inp, B, T, C, NH);
        double vmax = 0.0, amax = 0.0, dout = 0.0, datt = 0.0;
        for (size_t i = 0; i < ni; i++)
            if ((i / C) % 3 == 2 && fabs(inp[i]) > vmax) vmax = fabs(inp[i]);   // v: third C of each row
        for (size_t i = 0; i < na; i++) if (fabs(att_ref[i]) > amax) amax = fabs(att_ref[i]);
        for (size_t i = 0; i < no; i++) { double d = fabs((double)out[i] - out_ref[i]); if (!(d <= dout)) dout = d; }
        for (size_t i = 0; i < na; i++) { double d = fabs((double)att[i] - att_ref[i]); if (!(d <= datt)) datt = d; }
        double ds = 2.0 * (hs + 1) * sqrt((double)hs) * u;
        double tol_att = (2 * ds + 2 * (T + 4) * u) * amax, tol_out = (2 * ds + 2 * (T + 4) * u + 2 * T * u) * vmax;
        char name[96];
        snprintf(name, sizeof name, "model: attention_forward vs _ref B%d T%d C%d NH%d", B, T, C, NH);
        check(dout <= tol_out && datt <= tol_att, name, "out max diff %.2e (tol %.1e), att %.2e (tol %.1e)",
              dout, tol_out, datt, tol_att);
        free(inp); free(out); free(att); free(out_ref); free(att_ref);
    }
}

/* attention_backward against the textbook gradient in double precision, given the same
   float att (from attention_forward): da[t2] = dout_t·v_t2, dscore = a (da − Σ a da)/sqrt(hs),
   dq_t = Σ_t2 dscore k_t2, dk_t2 = Σ_t dscore q_t, dv_t2 = Σ_t a dout_t. Shapes: hs = 64 and
   32 with T = 37 and 64 (the 32-wide blocks of attn_scores and attn_rows and their tails), hs
   = 15 (8-wide block and single channels), T = 1. dinp starts non-zero (the function adds).
   Error: every value is a sum of at most hs terms (da) or T terms (the rest) of float products,
   each sum within (K+1)·u of Σ|terms| (Higham §3.1), da feeds dscore through one more sum of T
   terms, and dscore feeds dq/dk: at most (2T + hs + 8)·u of the size of the terms, which is
   max|ref| or less for inputs in [-1, 1]: tol = 2(2T + hs + 8)·u of max|ref| (measured at
   most 4u on all three builds). A dropped block of positions or channels errs by O(1). */
static void test_attention_backward_ref(void) {
    static const int shapes[][4] = {{2, 37, 128, 2}, {2, 64, 128, 4}, {1, 37, 30, 2}, {2, 1, 64, 2}};
    const double u = 1.0 / 16777216.0;
    Rng rng;
    rng_seed(&rng, 23, 0);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int B = shapes[s][0], T = shapes[s][1], C = shapes[s][2], NH = shapes[s][3], hs = C / NH, C3 = 3 * C;
        size_t ni = (size_t)B * T * C3, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
        float *inp = (float *)mallocCheck(ni * 4), *out = (float *)mallocCheck(no * 4);
        float *att = (float *)mallocCheck(na * 4), *datt = (float *)mallocCheck(na * 4);
        float *dout = (float *)mallocCheck(no * 4), *dinp = (float *)mallocCheck(ni * 4);
        float *init = (float *)mallocCheck(ni * 4), *want_ = (float *)mallocCheck(ni * 4);
        double *ref = (double *)mallocCheck(ni * sizeof(double));
        double *ds = (double *)mallocCheck((size_t)T * T * 8);
        for (size_t i = 0; i < ni; i++) inp[i] = 2.0f * rng_uniform(&rng) - 1.0f;
        for (size_t i = 0; i < ni; i++) init[i] = 2.0f * rng_uniform(&rng) - 1.0f;
        for (size_t i = 0; i < no; i++) dout[i] = 2.0f * rng_uniform(&rng) - 1.0f;
        attention_forward(out, att, inp, B, T, C, NH);
        memcpy(dinp, init, ni * 4);
        attention_backward(dinp, datt, dout, inp, att, B, T, C, NH);
        for (size_t i = 0; i < ni; i++) ref[i] = init[i];
        double scale = 1.0 / sqrt((double)hs);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                const float *x = inp + (size_t)b * T * C3 + h * hs, *a = att + ((size_t)b * NH + h) * T * T;
                const float *d = dout + (size_t)b * T * C + h * hs;
                double *r = ref + (size_t)b * T * C3 + h * hs;
                for (int t = 0; t < T; t++) {
                    double dot = 0.0;
                    for (int t2 = 0; t2 <= t; t2++) {
                        double da = 0.0;
                        for (int i = 0; i < hs; i++)
                            da += (double)d[(size_t)t * C + i] * x[(size_t)t2 * C3 + 2 * C + i];
                        ds[(size_t)t * T + t2] = da;
                        dot += a[(size_t)t * T + t2] * da;
                    }
                    for (int t2 = 0; t2 <= t; t2++) {
                        double *g = ds + (size_t)t * T + t2;
                        *g = a[(size_t)t * T + t2] * (*g - dot) * scale;
                    }
                }
                for (int t = 0; t < T; t++)
                    for (int t2 = 0; t2 <= t; t2++)
                        for (int i = 0; i < hs; i++) {
                            double g = ds[(size_t)t * T + t2];
                            r[(size_t)t * C3 + i] += g * x[(size_t)t2 * C3 + C + i];   // dq
                            r[(size_t)t2 * C3 + C + i] += g * x[(size_t)t * C3 + i];   // dk
                            r[(size_t)t2 * C3 + 2 * C + i] += a[(size_t)t * T + t2] * d[(size_t)t * C + i];
                        }
            }
        for (size_t i = 0; i < ni; i++) want_[i] = (float)ref[i];
        char name[96];
        snprintf(name, sizeof name, "model: attention_backward vs double loops B%d T%d C%d NH%d", B, T, C,
                 NH);
        compare(name, dinp, want_, ni, (float)(2 * (2 * T + hs + 8) * u), 0.0f);
        free(inp);
        free(out);
        free(att);
        free(datt);
        free(dout);
        free(dinp);
        free(init);
        free(want_);
        free(ref);
        free(ds);
    }
}

/* clip_grad_norm on a model of ~160,000 parameters (many CLIP_BLOCK blocks, the last one
   partial) against a plain double sum, and with 1 and 3 threads: the norm and the clipped
   gradients must be the same bit for bit. Error: a double sum of n terms errs by at most
   n·2^-53 of the sum (~2e-11 here), far below float's rounding of the norm: the two norms
   may differ by 1 ulp of a float (6e-8 relative) at most. A block missed or added twice
   changes the norm by ~1/sqrt(#blocks) of itself. */
static void test_clip_ref(void) {
    GPT m;
    build_gpt(&m, (GPTConfig){16, VOCAB_SIZE, 2, 2, 80}, 1, 3);
    Rng rng;
    rng_seed(&rng, 29, 0);
    size_t n = m.num_parameters;
    float *g0 = (float *)mallocCheck(n * 4), *g1 = (float *)mallocCheck(n * 4);
    for (size_t i = 0; i < n; i++) g0[i] = rng_normal(&rng);
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)g0[i] * g0[i];
    memcpy(m.grads_memory, g0, n * 4);
    float norm = clip_grad_norm(&m, 1.0f);
    double rel = fabs(norm - sqrt(ss)) / sqrt(ss);
    check(rel <= 1.2e-7 && n > 8 * 16384, "model: clip_grad_norm vs a double sum",
          "%zu parameters, norm %.6g, relative difference %.2e (tol 1.2e-7)", n, norm, rel);
#ifdef _OPENMP
    int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    memcpy(m.grads_memory, g0, n * 4);
    float n1 = clip_grad_norm(&m, 1.0f);
    memcpy(g1, m.grads_memory, n * 4);
    omp_set_num_threads(3);
    memcpy(m.grads_memory, g0, n * 4);
    float n3 = clip_grad_norm(&m, 1.0f);
    omp_set_num_threads(nt);
    check(n1 == n3 && memcmp(g1, m.grads_memory, n * 4) == 0, "model: clip_grad_norm, 1 thread == 3 threads",
          "norm %.9g vs %.9g", n1, n3);
#endif
    free(g0);
    free(g1);
    free_gpt(&m);
}

/* matmul_forward, matmul_backward, layernorm_forward and layernorm_backward against textbook
   double-precision loops, on shapes that span several of the fast paths' blocks (N > MM_NB,
   MM_KB and LN_RB rows, not multiples of them; C and OC not multiples of MM_W = 16, and up to
   4C = 512), with gradients that start non-zero (the backward functions accumulate). Error
   bound (Higham §3.1): a float32 sum of K products errs by at most γ_K·Σ|terms| <= (K+1)·u·Σ|
   terms|, u = 2^-24, in any order; each output is checked against its own Σ|terms| (computed
   in the reference), plus |initial value| for the accumulated ones. LayerNorm's outputs are
   short chains of such sums: its bound is 4(C+4)·u of the terms' size (measured below ~C·u/20
   on all three builds). An output summed over a missing or repeated block of rows errs by the
   size of a term (O(1) of the bound's scale), far beyond it. Then every function again on 1
   and on 3 threads: the results must be identical bit for bit (each output is computed by one
   thread in a fixed order). */
static double layer_err(const float *got, const double *want, const double *scale, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]) / (scale[i] > 0 ? scale[i] : 1.0);
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

// the outputs of one layers_run, each its own allocation (sizes in layers_alloc)
#define LAYER_OUTS 10
typedef struct { float *y, *dx, *dw, *db, *ln, *mean, *rstd, *dln, *dlw, *dlb; } LayerOuts;

static void layers_sizes(size_t *n, int N, int C, int OC) {
    size_t s[LAYER_OUTS] = {(size_t)N * OC, (size_t)N * C, (size_t)OC * C, OC, (size_t)N * C, N, N,
                            (size_t)N * C, C, C};
    memcpy(n, s, sizeof s);
}

// inputs x (N,C), w (OC,C), b (OC), dy (N,OC); init: the gradients' starting values
static void layers_run(LayerOuts *r, const float *x, const float *w, const float *b, const float *dy,
                       const float *init, int N, int C, int OC) {
    size_t NC = (size_t)N * C;
    matmul_forward(r->y, x, w, b, N, C, OC);
    memcpy(r->dx, init, NC * 4);
    memcpy(r->dw, init, (size_t)OC * C * 4);
    memcpy(r->db, init, OC * 4);
    matmul_backward(r->dx, r->dw, r->db, dy, x, w, N, C, OC);
    // LayerNorm's weight and bias: the first C of w and b; its dout: dy read as (N,C)
    layernorm_forward(r->ln, r->mean, r->rstd, x, w, b, N, C);
    memcpy(r->dln, init, NC * 4);
    memcpy(r->dlw, init, C * 4);
    memcpy(r->dlb, init, C * 4);
    layernorm_backward(r->dln, r->dlw, r->dlb, dy, x, w, r->mean, r->rstd, N, C);
}

/* ref_products: the double reference of a float matmul and the scale of its error bound:
   ref[r*cols + c] = start[r*s_r + c*s_c] + Σ_k A[r*a_r + k*a_k] · B[c*b_c + k*b_k] and
   sc[r*cols + c] = |start| + Σ_k |term|, k in order. Strides name the layout (forward, dx, dw). */
static void ref_products(double *ref, double *sc, int rows, int cols, int K, const float *start, size_t s_r,
                         size_t s_c, const float *A, size_t a_r, size_t a_k, const float *B, size_t b_c,
                         size_t b_k) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            double v = start[r * s_r + c * s_c], a = fabs(v);
            for (int k = 0; k < K; k++) {
                double t = (double)A[r * a_r + k * a_k] * B[c * b_c + k * b_k];
                v += t;
                a += fabs(t);
            }
            ref[(size_t)r * cols + c] = v;
            sc[(size_t)r * cols + c] = a;
        }
}

static void test_layers_ref(void) {
    static const int shapes[][3] = {{1, 16, 16}, {7, 5, 3}, {200, 40, 24}, {301, 128, 512}, {300, 512, 128},
                                    {513, 24, 100}};
    const double u = 1.0 / 16777216.0;
    Rng rng;
    rng_seed(&rng, 17, 0);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s][0], C = shapes[s][1], OC = shapes[s][2];
        size_t NC = (size_t)N * C, NO = (size_t)N * OC, OCC = (size_t)OC * C;
        size_t big = NC > NO ? NC : NO;
        big = big > OCC ? big : OCC;
        size_t sizes[LAYER_OUTS];
        layers_sizes(sizes, N, C, OC);
        LayerOuts r[2];
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < LAYER_OUTS; j++) ((float **)&r[k])[j] = (float *)mallocCheck(sizes[j] * 4);
        float *x = (float *)mallocCheck(big * 4), *dy = (float *)mallocCheck(big * 4);
        float *init = (float *)mallocCheck(big * 4), *w = (float *)mallocCheck(big * 4);
        float *b = (float *)mallocCheck(big * 4);
        for (size_t i = 0; i < big; i++) {
            x[i] = 2.0f * rng_uniform(&rng) - 1.0f;
            dy[i] = 2.0f * rng_uniform(&rng) - 1.0f;
            init[i] = 2.0f * rng_uniform(&rng) - 1.0f;
            w[i] = 2.0f * rng_uniform(&rng) - 1.0f;
            b[i] = 2.0f * rng_uniform(&rng) - 1.0f;
        }
        LayerOuts *o = &r[0];
        layers_run(o, x, w, b, dy, init, N, C, OC);
        // the plain loops of the reference (matmul_forward_ref, matmul_backward_ref) on the same inputs
        float *py = (float *)mallocCheck(NO * 4), *pdx = (float *)mallocCheck(NC * 4);
        float *pdw = (float *)mallocCheck(OCC * 4), *pdb = (float *)mallocCheck(OC * 4);
        matmul_forward_ref(py, x, w, b, N, C, OC);
        memcpy(pdx, init, NC * 4);
        memcpy(pdw, init, OCC * 4);
        memcpy(pdb, init, OC * 4);
        matmul_backward_ref(pdx, pdw, pdb, dy, x, w, N, C, OC);
        // references in double: value and Σ|terms| (the error bound's scale) of every output
        double *ref = (double *)mallocCheck(2 * big * sizeof(double)), *sc = ref + big;
        ref_products(ref, sc, N, OC, C, b, 0, 1, x, C, 1, w, C, 1);   // y = x wᵀ + b
        double e_y = layer_err(o->y, ref, sc, NO) / ((C + 2) * u);
        double p_y = layer_err(py, ref, sc, NO) / ((C + 2) * u);
        ref_products(ref, sc, N, C, OC, init, C, 1, dy, OC, 1, w, 1, C);   // dx += dy w
        double e_dx = layer_err(o->dx, ref, sc, NC) / ((OC + 2) * u);
        double p_dx = layer_err(pdx, ref, sc, NC) / ((OC + 2) * u);
        ref_products(ref, sc, OC, C, N, init, C, 1, dy, 1, OC, x, 1, C);   // dw += dyᵀ x
        double e_dw = layer_err(o->dw, ref, sc, OCC) / ((N + 2) * u);
        double p_dw = layer_err(pdw, ref, sc, OCC) / ((N + 2) * u);
        for (int j = 0; j < OC; j++) {
            double v = init[j], a = fabs(v);
            for (int n = 0; n < N; n++) {
                v += dy[(size_t)n * OC + j];
                a += fabs(dy[(size_t)n * OC + j]);
            }
            ref[j] = v;
            sc[j] = a;
        }
        double e_db = layer_err(o->db, ref, sc, OC) / ((N + 2) * u);
        double p_db = layer_err(pdb, ref, sc, OC) / ((N + 2) * u);
        char pname[96];
        snprintf(pname, sizeof pname, "model: matmul_forward_ref / matmul_backward_ref vs double loops N%d C%d OC%d",
                 N, C, OC);
        double p_worst = fmax(fmax(p_y, p_dx), fmax(p_dw, p_db));
        check(p_worst <= 1.0, pname, "error / bound: worst %.3f (out %.3f dinp %.3f dW %.3f db %.3f)", p_worst,
              p_y, p_dx, p_dw, p_db);
        free(py);
        free(pdx);
        free(pdw);
        free(pdb);
        // LayerNorm: x̂ = (x - mean)·rstd; out = x̂·w + b; dx += rstd·(g - mean(g) - x̂·mean(g·x̂))
        // with g = w·dout; dw += Σ_n x̂·dout; db += Σ_n dout
        double *xh = (double *)mallocCheck(NC * sizeof(double));
        for (int n = 0; n < N; n++) {
            const float *xr = x + (size_t)n * C;
            double m = 0.0, v = 0.0, gm = 0.0, gxm = 0.0, ga = 0.0;
            for (int i = 0; i < C; i++) m += xr[i];
            m /= C;
            for (int i = 0; i < C; i++) v += (xr[i] - m) * (xr[i] - m);
            v /= C;
            double rs = 1.0 / sqrt(v + 1e-5);
            for (int i = 0; i < C; i++) xh[(size_t)n * C + i] = (xr[i] - m) * rs;
            for (int i = 0; i < C; i++) {
                double g = (double)w[i] * dy[(size_t)n * C + i];
                gm += g / C;
                gxm += g * xh[(size_t)n * C + i] / C;
                ga += fabs(g) / C;
            }
            for (int i = 0; i < C; i++) {
                double g = (double)w[i] * dy[(size_t)n * C + i], xv = xh[(size_t)n * C + i];
                ref[(size_t)n * C + i] = init[(size_t)n * C + i] + rs * (g - gm - xv * gxm);
                sc[(size_t)n * C + i] = fabs(init[(size_t)n * C + i]) + rs * (fabs(g) + ga * (1 + fabs(xv)));
            }
        }
        double e_dln = layer_err(o->dln, ref, sc, NC) / (4 * (C + 4) * u);
        for (size_t i = 0; i < NC; i++) {
            ref[i] = xh[i] * w[i % C] + b[i % C];
            sc[i] = fabs(xh[i] * w[i % C]) + fabs(b[i % C]);
        }
        double e_ln = layer_err(o->ln, ref, sc, NC) / (4 * (C + 4) * u);
        for (int i = 0; i < C; i++) {
            double vw = init[i], aw = fabs(vw), vb = init[i], ab = fabs(vb);
            for (int n = 0; n < N; n++) {
                double d = dy[(size_t)n * C + i], xv = xh[(size_t)n * C + i];
                vw += xv * d;
                aw += fabs(xv * d);
                vb += d;
                ab += fabs(d);
            }
            ref[i] = vw;
            sc[i] = aw;
            ref[C + i] = vb;
            sc[C + i] = ab;
        }
        // x̂ itself carries 4(C+4)u of relative error into each term of dw
        double e_dlw = layer_err(o->dlw, ref, sc, C) / ((N + 2 + 4 * (C + 4)) * u);
        double e_dlb = layer_err(o->dlb, ref + C, sc + C, C) / ((N + 2) * u);
        double worst = fmax(fmax(fmax(e_y, e_dx), fmax(e_dw, e_db)),
                            fmax(fmax(e_ln, e_dln), fmax(e_dlw, e_dlb)));
        char name[96];
        snprintf(name, sizeof name, "model: matmul and layernorm vs double loops N%d C%d OC%d", N, C, OC);
        check(worst <= 1.0, name, "error / bound: worst %.3f (out %.3f dinp %.3f dW %.3f db %.3f ln %.3f "
              "dln %.3f dlw %.3f dlb %.3f)", worst, e_y, e_dx, e_dw, e_db, e_ln, e_dln, e_dlw, e_dlb);
#ifdef _OPENMP
        // the same again on 1 and 3 threads: identical bits
        int nt = omp_get_max_threads(), same = 1;
        for (int k = 0; k < 2; k++) {
            omp_set_num_threads(k == 0 ? 1 : 3);
            layers_run(&r[k], x, w, b, dy, init, N, C, OC);
        }
        omp_set_num_threads(nt);
        for (int j = 0; j < LAYER_OUTS; j++)
            same &= memcmp(((float **)&r[0])[j], ((float **)&r[1])[j], sizes[j] * 4) == 0;
        snprintf(name, sizeof name, "model: matmul and layernorm, 1 thread == 3 threads N%d C%d OC%d", N, C,
                 OC);
        check(same, name, "");
#endif
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < LAYER_OUTS; j++) free(((float **)&r[k])[j]);
        free(x);
        free(dy);
        free(init);
        free(w);
        free(b);
        free(ref);
        free(xh);
    }
}

static void test_logprob(void) {
    float logits[3] = {1000.0f, 1000.0f, 0.0f}, probs[3], lp[3];
    int tg[3] = {0, 1, 2};
    float all[9], p9[27];
    for (int i = 0; i < 3; i++) memcpy(all + 3 * i, logits, sizeof logits);
    logprob_forward(lp, p9, all, tg, 3, 3, 1.0f, NULL);
    float want_[3] = {-0.693147f, -0.693147f, -1000.693147f};
    // a log-softmax is exact to a few u of its inputs' size (here 1000: S = max|b| = 1000.7,
    // where float32's spacing is 6.1e-5); measured 1.8e-10 of S. Without the max subtracted,
    // exp(1000) overflows and the result is not finite.
    compare("logprob: logits [1000,1000,0] are stable", lp, want_, 3, TOL_FEW, 0.0f);
    (void)probs;
    // temperature: T=2 halves the logits
    float z[4] = {1.0f, 2.0f, 3.0f, 4.0f}, pr[4], lp2;
    int t3 = 3;
    logprob_forward(&lp2, pr, z, &t3, 1, 4, 2.0f, NULL);
    double ref = 2.0 - log(exp(0.5) + exp(1.0) + exp(1.5) + exp(2.0));
    float reff = (float)ref;
    // S >= 2, the largest logit / T (as above); measured 0. Without the division: error 0.5 of S.
    compare("logprob: temperature divides the logits", &lp2, &reff, 1, TOL_FEW, 2.0f);
    // masked softmax: only tokens 1 and 3 allowed
    unsigned char allowed[4] = {0, 1, 0, 1};
    logprob_forward(&lp2, pr, z, &t3, 1, 4, 1.0f, allowed);
    reff = (float)(4.0 - log(exp(2.0) + exp(4.0)));
    // S >= 4, the largest logit: the result, -0.127, is a difference of terms of size 4.
    // Measured 7.5e-9 of S.
    compare("logprob: masked tokens leave the softmax", &lp2, &reff, 1, TOL_FEW, 4.0f);
    check(pr[0] == 0.0f && pr[2] == 0.0f, "logprob: masked tokens get probability 0", "p = %g %g", pr[0], pr[2]);
}

static void test_tokenizer(void) {
    const char *s = "12 7 25 3>100:25*3=75,12+7=19,75+19=94 LR";
    int toks[128], bad = -1, n = encode(s, (int)strlen(s), toks, &bad);
    char back[256];
    decode(toks, n, back, sizeof back);
    check(n == (int)strlen(s) && !strcmp(back, s), "tokenizer: decode(encode(s)) == s", "'%s'", back);
    int ok = encode("7 3 x5", 6, toks, &bad) < 0 && bad == 4;
    check(ok, "tokenizer: rejects a character outside the vocabulary", "bad position %d (want 4)", bad);
    int sp[3] = {TOK_BOS, 3, TOK_EOS};
    decode(sp, 3, back, sizeof back);
    check(!strcmp(back, "<bos>0<eos>"), "tokenizer: special tokens decode by name", "'%s'", back);
    check(VOCAB_SIZE == 24, "tokenizer: vocabulary of 24 tokens", "%d", VOCAB_SIZE);
}

/* This run's own directory, $TMPDIR/grpo-test.XXXXXX (/tmp without TMPDIR), so that two test
   runs at once share no files, and a caller can have them made inside a directory it removes
   (tests/grade.sh does, for runs that crash or time out). 0 on success. */
static int make_run_tmpdir(char *dir, size_t n) {
    const char *base = getenv("TMPDIR");
    // /tmp instead of a TMPDIR that the shell quoting, the tests' rewriting of "/tmp/grpo_test"
    // paths (TMP_PREFIX below) or their path buffers would trip over
    if (!base || !*base || strchr(base, '\'') || strstr(base, "/tmp/grpo_test") || strlen(base) > 80)
        base = "/tmp";
    snprintf(dir, n, "%s/grpo-test.XXXXXX", base);
    return mkdtemp(dir) ? 0 : -1;
}

/* The end of a run: a passing run removes its directory and what the tests wrote in it; a
   failing one keeps the files to look at, but never an empty directory (a failing group that
   writes nothing, as tests/grade.sh's stubbed copies run many of). 1 when dir is still there. */
static int finish_run_tmpdir(const char *dir, int failed) {
    if (failed) return rmdir(dir) != 0;   // removes the directory only when it is empty
    char rm[160];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    struct stat sb;
    return system(rm) != 0 || stat(dir, &sb) == 0;
}

// the run's directory (above) goes under $TMPDIR and is never left empty: each failing run of a
// group that writes no file used to leave an empty /tmp/grpo-test.* behind
static void test_run_tmpdir(void) {
    char parent[128], dir[128], file[160];
    struct stat sb;
    int ok = make_run_tmpdir(parent, sizeof parent) == 0;
    const char *env = getenv("TMPDIR");
    char *saved = env ? strdup(env) : NULL;
    setenv("TMPDIR", parent, 1);
    ok &= make_run_tmpdir(dir, sizeof dir) == 0;
    int inside = ok && !strncmp(dir, parent, strlen(parent)) && dir[strlen(parent)] == '/';
    int kept = finish_run_tmpdir(dir, 1);
    int gone = stat(dir, &sb) != 0;
    check(inside && !kept && gone, "tmpdir: made under $TMPDIR; a failing run leaves no empty one",
          "%s", dir);
    ok = make_run_tmpdir(dir, sizeof dir) == 0;
    snprintf(file, sizeof file, "%s/kept.txt", dir);
    FILE *f = fopen(file, "w");
    int wrote = f != NULL;
    if (f) fclose(f);
    kept = finish_run_tmpdir(dir, 1);
    int file_kept = stat(file, &sb) == 0;
    int removed = finish_run_tmpdir(dir, 0) == 0 && stat(dir, &sb) != 0;
    check(ok && wrote && kept && file_kept && removed,
          "tmpdir: a failing run keeps its files, a passing one not", "");
    if (saved) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    free(saved);
    rmdir(parent);
}

// ----------------------------------------------------------------------------
// Checkpoints and bad input

/* This run's own directory (mkdtemp in main), so that two test runs at once share no files.
   Tests write its paths as "/tmp/grpo_test/..."; run_cmd and tmp_path rewrite that prefix to
   it (the real directory is /tmp/grpo-test.XXXXXX, which the prefix cannot match twice). */
#define TMP_PREFIX "/tmp/grpo_test"
static char TMPDIR_[128] = TMP_PREFIX;

// s with every TMP_PREFIX replaced by TMPDIR_, into out (n bytes)
static void rewrite_tmp(char *out, size_t n, const char *s) {
    size_t len = strlen(TMP_PREFIX), o = 0;
    while (*s && o + 1 < n) {
        if (!strncmp(s, TMP_PREFIX, len)) { o += (size_t)snprintf(out + o, n - o, "%s", TMPDIR_); s += len; }
        else out[o++] = *s++;
    }
    out[o < n ? o : n - 1] = 0;
}

// a "/tmp/grpo_test/..." path inside this run's directory (four calls may be in use at once)
static const char *tmp_path(const char *path) {
    static char buf[4][512];
    static int next = 0;
    next = (next + 1) % 4;
    rewrite_tmp(buf[next], sizeof buf[next], path);
    return buf[next];
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopenCheck(path, "wb");
    if (fwrite(data, 1, n, f) != n) fail_at(__FILE__, __LINE__, "test: a write failed", path);
    fclose(f);
}

static void *read_all(const char *path, size_t *n) {
    FILE *f = fopenCheck(path, "rb");
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = mallocCheck(*n);
    if (fread(buf, 1, *n, f) != *n) fail_at(__FILE__, __LINE__, "test: a short read", path);
    fclose(f);
    return buf;
}

/* reseal_checkpoint: recomputes every CRC-32 of a format-4 checkpoint in buf (n bytes) after a
   test edited it on purpose, so that the load reaches the check the test is about (a vocabulary,
   a section length, a run record) instead of stopping at the checksum. The sizes come from the
   header as it now stands. */
static void reseal_checkpoint(unsigned char *buf, size_t n) {
    int32_t h[CKPT_HEADER_INTS];
    memcpy(h, buf, sizeof h);
    GPTConfig c = {h[2], h[3], h[4], h[5], h[6]};
    size_t sz[NUM_PARAM_TENSORS], np = 0;
    param_sizes(sz, &c);
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) np += sz[i];
    size_t at = sizeof h, len[6] = {(size_t)h[9], np * 4, h[7] ? np * 4 : 0, h[7] ? np * 4 : 0, h[7] ? 32 : 0,
                                    h[7] ? (size_t)h[11] : 0};
    for (int s = 0; s < 6 && at + len[s] <= n; at += len[s], s++)
        h[CKPT_CRC_VOCAB + s] = s >= 2 && !h[7] ? 0 : (int32_t)crc32_update(0, buf + at, len[s]);
    for (int i = 0; i < (h[7] ? h[12] : 0) && i < CKPT_MAX_SECTIONS && at + 16 <= n; i++) {
        uint64_t bytes;
        memcpy(&bytes, buf + at + 8, 8);
        size_t take = at + 16 + bytes <= n ? (size_t)bytes : n - at - 16;
        h[CKPT_CRC_SECTIONS + i] = ckpt_section_crc((const char *)buf + at, bytes, buf + at + 16);
        if (take != bytes) h[CKPT_CRC_SECTIONS + i] = 0;   // cut short: the load says truncated
        at += 16 + take;
    }
    h[CKPT_CRC_HEADER] = (int32_t)crc32_update(0, h, CKPT_CRC_HEADER * sizeof *h);
    memcpy(buf, h, sizeof h);
}

/* save_weights_only: path, a checkpoint of m's parameters (any values) without optimizer state (h[7] 0):
   what --init reads, and what a resume refuses. save_checkpoint's file, cut after the parameters. */
static char test_last_good[1100];   // what the tests' saves name as the last good checkpoint
static void save_weights_only(const char *path, const GPT *m) {
    TrainState st = {0};
    GPT zero = *m;   // its parameters 0 for the save's check_params: a test writes diverged ones too
    zero.params_memory = (float *)callocCheck(m->num_parameters, sizeof(float));
    save_checkpoint(path, &zero, &st, st.step, test_last_good);
    free(zero.params_memory);
    size_t n, pb = m->num_parameters * sizeof(float);
    unsigned char *buf = (unsigned char *)read_all(path, &n);
    int32_t h[CKPT_HEADER_INTS];
    memcpy(h, buf, sizeof h);
    h[7] = h[11] = 0;   // no optimizer state, no run record
    memcpy(buf, h, sizeof h);
    memcpy(buf + sizeof h + h[9], m->params_memory, pb);
    n = sizeof h + (size_t)h[9] + pb;
    reseal_checkpoint(buf, n);
    write_bytes(path, buf, n);
    free(buf);
}

static void load_ckpt_fn(void *path) { GPT m; load_checkpoint((const char *)path, &m, 1, NULL); }
static void load_resume_fn(void *path) { GPT m; TrainState st = {0}; load_checkpoint((const char *)path, &m, 1, &st); }
static void load_train_resume_fn(void *path) { GPT m; TrainState st = {0}; st.kind = 2; load_checkpoint((const char *)path, &m, 1, &st); }

static void test_checkpoints(void) {
    char path[256], bad[300];
    make_dir(TMPDIR_);
    uint32_t crc = crc32_update(0, "123456789", 9);
    uint32_t pieces = crc32_update(crc32_update(0, "1234", 4), "56789", 5);
    check(crc == 0xCBF43926u && pieces == crc,
          "checkpoint: CRC-32 check value crc32(\"123456789\") = 0xCBF43926, also when fed in pieces",
          "%08x, %08x", crc, pieces);
    snprintf(path, sizeof path, "%s/ckpt.bin", TMPDIR_);
    GPTConfig c = {16, VOCAB_SIZE, 2, 2, 16};
    GPT a, b;
    build_gpt(&a, c, 2, 3);
    TrainState st = {.step = 17, .rng = {{1, 2, 3, 4}}, .kind = 2};
    for (size_t i = 0; i < a.num_parameters; i++) a.m_memory[i] = 0.001f * i;
    save_checkpoint(path, &a, &st, st.step, test_last_good);
    TrainState st2 = {0};   // kind 0: accept any writer
    load_checkpoint(path, &b, 2, &st2);
    int inp[8] = {1, 5, 6, 7, 1, 9, 10, 11};
    gpt_forward(&a, inp, 2, 4);
    gpt_forward(&b, inp, 2, 4);
    check(!memcmp(a.acts.logits, b.acts.logits, (size_t)8 * VOCAB_SIZE * 4) && st2.step == 17 &&
          st2.rng.s[3] == 4 && !memcmp(a.m_memory, b.m_memory, a.num_parameters * 4),
          "checkpoint: save -> load gives identical logits and state", "step %d", st2.step);
    struct stat sb;
    snprintf(bad, sizeof bad, "%s.tmp", path);
    check(stat(bad, &sb) != 0, "checkpoint: no .tmp file left after save", "");
    size_t n;
    unsigned char *buf = (unsigned char *)read_all(path, &n);
    snprintf(bad, sizeof bad, "%s/truncated.bin", TMPDIR_);
    write_bytes(bad, buf, n - 100);
    expect_exit("checkpoint: truncated file is refused", load_ckpt_fn, bad, 1, "truncated");
    write_bytes(bad, buf, 50);
    expect_exit("checkpoint: file shorter than a header is refused", load_ckpt_fn, bad, 1, "too short");
    unsigned char *mod = (unsigned char *)mallocCheck(n);
    memcpy(mod, buf, n); mod[0] ^= 0xff;
    snprintf(bad, sizeof bad, "%s/magic.bin", TMPDIR_);
    write_bytes(bad, mod, n);
    expect_exit("checkpoint: another format (magic) is refused", load_ckpt_fn, bad, 1, "magic");
    memcpy(mod, buf, n); mod[4] = 9;
    snprintf(bad, sizeof bad, "%s/version.bin", TMPDIR_);
    write_bytes(bad, mod, n);
    expect_exit("checkpoint: another version is refused", load_ckpt_fn, bad, 1, "version 9");
    memcpy(mod, buf, n);
    mod[CKPT_HEADER_INTS * 4 + 6] = 'X';   // change one vocabulary entry
    reseal_checkpoint(mod, n);   // with its checksums: the vocabulary check itself refuses it
    snprintf(bad, sizeof bad, "%s/vocab.bin", TMPDIR_);
    write_bytes(bad, mod, n);
    expect_exit("checkpoint: different vocabulary is refused", load_ckpt_fn, bad, 1, "vocabulary");
    snprintf(bad, sizeof bad, "%s/trailing.bin", TMPDIR_);
    unsigned char *longer = (unsigned char *)mallocCheck(n + 4);
    memcpy(longer, buf, n); memset(longer + n, 0, 4);
    write_bytes(bad, longer, n + 4);
    expect_exit("checkpoint: trailing bytes are refused", load_ckpt_fn, bad, 1, "trailing");
    save_weights_only(path, &a);
    expect_exit("checkpoint: resume needs optimizer state", load_resume_fn, path, 1, "optimizer state");
    expect_exit("checkpoint: missing file names the path", load_ckpt_fn, "/nonexistent/x.bin", 1, "/nonexistent/x.bin");
    expect_exit("checkpoint: missing file says which command writes one", load_ckpt_fn, "/nonexistent/x.bin", 1, "./grpo sft writes");
    expect_exit("checkpoint: a directory is refused as a file", load_ckpt_fn, "/tmp", 1, "is a directory");
    st.kind = 1;   // written by sft: train --resume must refuse it
    save_checkpoint(path, &a, &st, st.step, test_last_good);
    expect_exit("checkpoint: train --resume refuses an SFT checkpoint", load_train_resume_fn, path, 1, "written by ./grpo sft");
    free(buf); free(mod); free(longer); free_gpt(&a); free_gpt(&b);
}

static void load_init_fn(void *path) { GPT m; load_checkpoint((const char *)path, &m, 1, NULL); free_gpt(&m); }

// A train resume's checks of a checkpoint's run record: the load, then the options (train's defaults).
static void resume_record_fn(void *path) {
    GPT m;
    TrainState st = {0};
    st.kind = 2;
    load_checkpoint((const char *)path, &m, 1, &st);
    Options o;
    default_options(&o);
    train_defaults(&o);
    check_resume_options(&o, &st, (const char *)path, TRAIN_RUN_OPTIONS);
}

/* Checkpoint format 4: a CRC-32 per section. One bit flipped in any section of a small
   checkpoint (optimizer state, a run record, two state sections) is refused with exit 1 and a
   message naming the section: every byte of the header, the vocabulary, the RNG state, the run
   record and the state sections, and 97 positions spread over each of the parameters and the
   two moments (each byte's bit b = position mod 8). Format 3 (the same bytes, no checksums)
   still loads, with a note that it is unchecked. A run record whose 'seed=' reads 'reed=' (its
   CRC made to match) is refused as unknown, not resumed without the seed check; one without
   gen_tokens is refused too. */
static void test_checkpoint_checksums(void) {
    char path[256], bad[300];
    snprintf(path, sizeof path, "%s/crc.bin", TMPDIR_);
    GPT a;
    build_gpt(&a, (GPTConfig){8, VOCAB_SIZE, 1, 1, 8}, 1, 9);
    for (size_t i = 0; i < a.num_parameters; i++) {
        a.m_memory[i] = 1e-3f * (float)(i % 17);
        a.v_memory[i] = 1e-6f * (float)(i % 13);
    }
    TrainState st = {.step = 5, .rng = {{11, 12, 13, 14}}, .kind = 2, .gen_tokens = 321};
    Options o;
    default_options(&o);
    train_defaults(&o);
    record_options(st.options, sizeof st.options, &o, TRAIN_RUN_OPTIONS, OPTIMIZER_OPTIONS);
    snprintf(st.log_row, sizeof st.log_row, "5,0.25");
    double blob[3] = {1, 2, 3};
    unsigned char tiny[5] = {1, 2, 3, 4, 5};
    ckpt_add_section(&st, "mopps", blob, sizeof blob, 0);
    ckpt_add_section(&st, "x", tiny, sizeof tiny, 0);
    save_checkpoint(path, &a, &st, st.step, test_last_good);
    size_t n;
    unsigned char *buf = (unsigned char *)read_all(path, &n);
    expect_exit("checkpoint: format 4 resumes with its checks (intact file)", resume_record_fn, path, 0, "");
    int32_t h[CKPT_HEADER_INTS];
    memcpy(h, buf, sizeof h);
    size_t np4 = a.num_parameters * 4, vocab_at = sizeof h, params_at = vocab_at + (size_t)h[9];
    size_t rng_at = params_at + 3 * np4, record_at = rng_at + 32, sections_at = record_at + (size_t)h[11];
    struct { const char *name; size_t from, to, stride; } part[] = {
        {"header", 0, vocab_at, 1}, {"vocabulary", vocab_at, params_at, 1},
        {"parameters", params_at, params_at + np4, np4 / 97 + 1},
        {"AdamW first moments", params_at + np4, params_at + 2 * np4, np4 / 97 + 1},
        {"AdamW second moments", params_at + 2 * np4, rng_at, np4 / 97 + 1}, {"RNG state", rng_at, record_at, 1},
        {"run record", record_at, sections_at, 1}, {"state section", sections_at, n, 1}};
    static const char *needle[] = {"header", "vocabulary", "parameters", "first moments", "second moments",
                                   "RNG state", "run record", "state section"};
    snprintf(bad, sizeof bad, "%s/crc_flip.bin", TMPDIR_);
    int total = 0, refused_all = 0;
    for (int p = 0; p < 8; p++) {
        int flips = 0, refused = 0, named = 0;
        char first_miss[200] = "";
        for (size_t at = part[p].from; at < part[p].to; at += part[p].stride) {
            buf[at] ^= (unsigned char)(1u << (at % 8));
            write_bytes(bad, buf, n);
            buf[at] ^= (unsigned char)(1u << (at % 8));
            char err[4096];
            int code = child_stderr(resume_record_fn, bad, err, sizeof err);
            flips++;
            int ok_named = strstr(err, needle[p]) != NULL ||
                           (p == 0 && (strstr(err, "magic") || strstr(err, "format version")));
            refused += code == 1;
            named += code == 1 && ok_named;
            if ((code != 1 || !ok_named) && !first_miss[0])
                snprintf(first_miss, sizeof first_miss, "byte %zu: exit %d: %.120s", at, code, err);
        }
        char name[128];
        snprintf(name, sizeof name, "checkpoint: a bit flipped in the %s is refused, naming it", part[p].name);
        check(flips > 0 && refused == flips && named == flips, name, "%d of %d flips refused, %d named%s%s", refused,
              flips, named, first_miss[0] ? "; " : "", first_miss);
        total += flips;
        refused_all += refused;
    }
    printf("# checkpoint checksums: %d of %d single-bit flips refused\n", refused_all, total);
    // format 3 (no checksums; an older grpo.c's): refused, naming its format and what to do
    unsigned char *old = (unsigned char *)mallocCheck(n);
    memcpy(old, buf, n);
    int32_t h3[CKPT_HEADER_INTS];
    memcpy(h3, old, sizeof h3);
    h3[1] = 3;
    for (int i = CKPT_CRC_VOCAB; i < CKPT_HEADER_INTS; i++) h3[i] = 0;
    memcpy(old, h3, sizeof h3);
    snprintf(bad, sizeof bad, "%s/crc_v3.bin", TMPDIR_);
    write_bytes(bad, old, n);
    expect_exit("checkpoint: format 3 (no checksums) is refused, naming the format and an older build",
                load_resume_fn, bad, 1, "format version 3, this build reads version 4 only (an older grpo.c");
    // a run record edited with its CRC made to match: 'seed=' read as 'reed='
    memcpy(old, buf, n);
    char *rec = (char *)old + record_at, *seed = NULL;
    for (size_t i = 0; i + 5 <= (size_t)h[11]; i++)
        if (!memcmp(rec + i, "seed=", 5) && (i == 0 || rec[i - 1] == '\n')) seed = rec + i;
    if (seed) seed[0] = 'r';
    reseal_checkpoint(old, n);
    write_bytes(bad, old, n);
    expect_exit("checkpoint: a run record whose seed= reads reed= is refused (not resumed unchecked)",
                resume_record_fn, bad, 1, "its run record holds 'reed', which this build does not know");
    memcpy(old, buf, n);
    rec = (char *)old + record_at;
    char *tokens = strstr(rec, "gen_tokens=");
    if (tokens) tokens[9] = 'z';
    reseal_checkpoint(old, n);
    write_bytes(bad, old, n);
    expect_exit("checkpoint: a run record without gen_tokens= is refused", resume_record_fn, bad, 1,
                "its run record has no count 'gen_tokens=N'");
    free(old);
    free(buf);
    free_gpt(&a);
}

// State sections (checkpoint format 3): what a save writes after the run record comes back by
// tag, byte for byte; --init skips them; a section longer than the header says is refused.
static void test_checkpoint_sections(void) {
    char path[256], bad[300];
    make_dir(TMPDIR_);
    snprintf(path, sizeof path, "%s/sections.bin", TMPDIR_);
    GPTConfig c = {16, VOCAB_SIZE, 1, 2, 16};
    GPT a, b, d;
    build_gpt(&a, c, 1, 5);
    TrainState st = {.step = 4, .rng = {{5, 6, 7, 8}}, .kind = 2};
    float beta_table[6] = {1, 2, 3.5f, 4, 5, 6.25f};
    unsigned char blob[3] = {9, 0, 255};
    ckpt_add_section(&st, "mopps", beta_table, sizeof beta_table, 0);
    ckpt_add_section(&st, "x", blob, sizeof blob, 0);
    ckpt_add_section(&st, "x", blob, 2, 0);   // replaces the section of that name
    save_checkpoint(path, &a, &st, st.step, test_last_good);
    TrainState back = {0};
    load_checkpoint(path, &b, 1, &back);
    uint64_t n1 = 0, n2 = 0, n3 = 0;
    float *t1 = (float *)ckpt_section(&back, "mopps", &n1);
    unsigned char *t2 = (unsigned char *)ckpt_section(&back, "x", &n2);
    void *t3 = ckpt_section(&back, "critic", &n3);
    check(back.num_sections == 2 && t1 && n1 == sizeof beta_table && !memcmp(t1, beta_table, n1) && t2 &&
          n2 == 2 && t2[0] == 9 && t2[1] == 0 && !t3 && back.step == 4,
          "checkpoint: state sections come back by tag, byte for byte (format 3)", "%d sections, %llu and %llu bytes",
          back.num_sections, (unsigned long long)n1, (unsigned long long)n2);
    load_checkpoint(path, &d, 1, NULL);   // --init: weights only, sections skipped, no trailing-bytes error
    check(!memcmp(a.params_memory, d.params_memory, a.num_parameters * sizeof(float)),
          "checkpoint: --init skips the state sections", "");
    size_t n;
    unsigned char *buf = (unsigned char *)read_all(path, &n);
    int32_t h[CKPT_HEADER_INTS];
    memcpy(h, buf, sizeof h);
    h[13] -= 1;   // the header now says the sections hold one byte less than they do
    memcpy(buf, h, sizeof h);
    reseal_checkpoint(buf, n - 1);
    snprintf(bad, sizeof bad, "%s/sections_bad.bin", TMPDIR_);
    write_bytes(bad, buf, n - 1);
    expect_exit("checkpoint: a section longer than the header says is refused", load_resume_fn, bad, 1,
                "state section disagrees");
    h[13] += 1;   // the true header, one byte short of the last section
    memcpy(buf, h, sizeof h);
    reseal_checkpoint(buf, n - 1);
    write_bytes(bad, buf, n - 1);
    expect_exit("checkpoint: a file that ends inside a state section is refused (--init too)", load_init_fn, bad,
                1, "truncated");
    for (int i = 0; i < back.num_sections; i++) free(back.section[i].data);
    free(buf);
    free_gpt(&a);
    free_gpt(&b);
    free_gpt(&d);
}

// Runs a command function in-process with an argument vector (for end-to-end tests).
typedef int (*CmdFn)(int, char **, Options *);
static int run_cmd(CmdFn fn, const char *args) {
    char buf[2048], *argv[64];
    int argc = 0;
    memcpy(buf, "cmd ", 4);
    rewrite_tmp(buf + 4, sizeof buf - 4, args);
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " ")) argv[argc++] = t;
    argv[argc] = NULL;
    Options o;
    default_options(&o);
    return fn(argc, argv, &o);
}

typedef struct { CmdFn fn; const char *args; } CmdCall;
static void cmd_call_fn(void *p) { CmdCall *c = (CmdCall *)p; run_cmd(c->fn, c->args); }

// Runs a command with stdout sent to a file (to keep the test log readable).
static int run_cmd_quiet(CmdFn fn, const char *args, const char *log) {
    fflush(stdout);
    int saved = dup(1);
    FILE *f = fopenCheck(tmp_path(log), "w");
    dup2(fileno(f), 1);
    int rc = run_cmd(fn, args);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    fclose(f);
    return rc;
}

static int files_equal(const char *p1, const char *p2) {
    size_t n1, n2;
    void *a = read_all(p1, &n1), *b = read_all(p2, &n2);
    int eq = n1 == n2 && !memcmp(a, b, n1);
    free(a); free(b);
    return eq;
}

static void test_sft_end_to_end(void) {
    char args[1024], log[256];
    snprintf(log, sizeof log, "%s/sft.log", TMPDIR_);
    const char *common = "--layers 2 --heads 2 --channels 32 --context 64 --batch-size 8 --eval-every 3 --lr 1e-3 --seed 5 "
                         "--train-data data/countdown_train.txt --val-data tests/fixtures/val_small.txt";
    snprintf(args, sizeof args, "%s --steps 6 --run-dir %s/sft_a", common, TMPDIR_);
    run_cmd_quiet(cmd_sft, args, log);
    snprintf(args, sizeof args, "%s --steps 6 --run-dir %s/sft_b", common, TMPDIR_);
    run_cmd_quiet(cmd_sft, args, log);
    char pa[256], pb[256];
    snprintf(pa, sizeof pa, "%s/sft_a/model.bin", TMPDIR_);
    snprintf(pb, sizeof pb, "%s/sft_b/model.bin", TMPDIR_);
    check(files_equal(pa, pb), "sft: same seed gives a bit-identical checkpoint", "");
    // resume: a run that saved a resumable checkpoint at step 3, continued to 6 == 6 straight
    snprintf(args, sizeof args, "%s --steps 6 --save-every 3 --run-dir %s/sft_c", common, TMPDIR_);
    run_cmd_quiet(cmd_sft, args, log);
    snprintf(args, sizeof args, "%s --steps 6 --run-dir %s/sft_d --resume %s/sft_c/ckpt.bin", common, TMPDIR_, TMPDIR_);
    run_cmd_quiet(cmd_sft, args, log);
    snprintf(pb, sizeof pb, "%s/sft_d/model.bin", TMPDIR_);
    check(files_equal(pa, pb), "sft: resume from the step-3 checkpoint == 6 steps straight (bit for bit)", "");
    snprintf(pb, sizeof pb, "%s/sft_a/sft.csv", TMPDIR_);
    size_t n;
    char *csv = (char *)read_all(pb, &n);
    int lines = 0;
    for (size_t i = 0; i < n; i++) lines += csv[i] == '\n';
    check(lines == 7 && strstr(csv, "step,loss,val_loss"), "sft: CSV log has a header and one row per step", "%d lines", lines);
    free(csv);
}

// ----------------------------------------------------------------------------
// Run directories, logs and checkpoints under failure: concurrent runs, killed runs, a full
// disk, a diverging run (the hostile-input pass of 2026-12-01)

// the number of entries of directory dir whose name starts with prefix
static int count_prefixed(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL; ) n += !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return n;
}

/* run_binary_fsize: run_binary with the file size limit RLIMIT_FSIZE at `limit` bytes and
   SIGXFSZ ignored (both survive exec), so writes past the limit fail with EFBIG as they
   would on a full disk. */
static int run_binary_fsize(const char *cmdline, long limit, char *out, size_t cap) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {(rlim_t)limit, (rlim_t)limit};
        setrlimit(RLIMIT_FSIZE, &rl);
        execl("/bin/sh", "sh", "-c", cmdline, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    char sink[4096];
    for (;;) {
        int room = got < cap - 1;
        r = read(fds[0], room ? out + got : sink, room ? cap - 1 - got : sizeof sink);
        if (r <= 0) break;
        if (room) got += (size_t)r;
    }
    out[got] = 0;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// the first line of s that contains needle, into buf (n bytes, cut to fit); "(not found)" if none
static const char *line_into(char *buf, size_t n, const char *s, const char *needle) {
    const char *at = strstr(s, needle);
    if (!at) return "(not found)";
    while (at > s && at[-1] != '\n') at--;
    snprintf(buf, n, "%.*s", (int)strcspn(at, "\n"), at);
    return buf;
}

// the first line of s that contains needle, for a check's message (static buffer, 255 characters)
static const char *line_with(const char *s, const char *needle) {
    static char buf[256];
    return line_into(buf, sizeof buf, s, needle);
}

// The whole line of s that holds needle (line_with's, not cut at 255 characters): a banner
static const char *whole_line_with(const char *s, const char *needle) {
    static char buf[8192];
    return line_into(buf, sizeof buf, s, needle);
}

/* Two runs on one --run-dir: the second is refused (exit 1, naming the directory) while the
   first holds it; here the test holds the lock itself, as a live run would. And a save
   writes its own temporary file, so it never writes into (or renames away) another
   process's PATH.tmp. */
static void test_run_dir_lock(void) {
    static char cmd[2048], out[16384];
    char dir[256], lockpath[300];
    snprintf(dir, sizeof dir, "%s/locked_run", TMPDIR_);
    make_dir(dir);
    snprintf(lockpath, sizeof lockpath, "%s/.lock", dir);
    int fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    int locked = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (locked && (ftruncate(fd, 0) != 0 || pwrite(fd, pid, len, 0) != len)) locked = 0;
    snprintf(cmd, sizeof cmd, "%s sft --threads 1 --steps 2 --layers 1 --heads 1 --channels 8 --batch-size 2 "
             "--eval-every 0 --val-data tests/fixtures/val_small.txt --run-dir %s", grpo_bin(), dir);
    int code = run_binary(cmd, out, sizeof out);
    pid[len - 1] = 0;
    const char *err = line_with(out, "error");
    check(locked && code == 1 && strstr(err, dir) && strstr(err, "in use") && strstr(err, pid),
          "run dir: a second run on a run dir in use is refused, naming it", "exit %d: %s", code, err);
    char model[300];
    snprintf(model, sizeof model, "%s/model.bin", dir);
    struct stat sb;
    check(stat(model, &sb) != 0, "run dir: ... and writes nothing there", "");
    // a second compare on a study in use: the hint names compare's option, --study
    char study[256], study_lock[300];
    snprintf(study, sizeof study, "%s/locked_study", TMPDIR_);
    make_dir(study);
    snprintf(study_lock, sizeof study_lock, "%s/.lock", study);
    int sfd = open(study_lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    int slocked = sfd >= 0 && flock(sfd, LOCK_EX | LOCK_NB) == 0;
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s", grpo_bin(), study);
    code = run_binary(cmd, out, sizeof out);
    check(slocked && code == 1 && strstr(out, "in use by another compare") && strstr(out, "another --study") &&
          !strstr(out, "--run-dir"), "compare: a study in use is refused, the hint naming --study",
          "exit %d: %s", code, line_with(out, "hint:"));
    if (sfd >= 0) close(sfd);
    snprintf(cmd, sizeof cmd, "%s sft --threads 1 --steps 2 --layers 1 --heads 1 --channels 8 --batch-size 2 "
             "--eval-every 0 --val-data tests/fixtures/val_small.txt --run-dir %s", grpo_bin(), dir);
    if (fd >= 0) close(fd);   // the "first run" ends: its lock goes with it
    code = run_binary(cmd, out, sizeof out);
    check(code == 0 && stat(model, &sb) == 0, "run dir: once the first run has ended, the directory is free",
          "exit %d", code);
    // another process's temporary file for the same checkpoint is left alone
    char foreign[320];
    snprintf(foreign, sizeof foreign, "%s.tmp", model);
    write_bytes(foreign, "another run's bytes", 19);
    GPT m;
    build_gpt(&m, (GPTConfig){16, VOCAB_SIZE, 1, 1, 8}, 1, 4);
    TrainState st = {.step = 3, .rng = {{1, 2, 3, 4}}, .kind = 1};
    save_checkpoint(model, &m, &st, st.step, test_last_good);
    size_t n = 0;
    char *back = stat(foreign, &sb) == 0 ? (char *)read_all(foreign, &n) : NULL;
    check(back && n == 19 && !memcmp(back, "another run's bytes", 19),
          "checkpoint: a save never writes into another process's PATH.tmp", "%s", back ? "intact" : "gone");
    free(back);
    unlink(foreign);
    GPT b;
    TrainState st2 = {0};
    load_checkpoint(model, &b, 1, &st2);
    check(st2.step == 3 && !memcmp(m.params_memory, b.params_memory, m.num_parameters * sizeof(float)) &&
          count_prefixed(dir, "model.bin.tmp") == 0,
          "checkpoint: ... the checkpoint is complete, and no temporary file is left", "");
    free_gpt(&m); free_gpt(&b);
}

typedef struct { const char *path; const GPT *m; long fsize; } SaveCall;

// saves a checkpoint under a file size limit (the full disk of the test)
static void save_limited_fn(void *p) {
    SaveCall *c = (SaveCall *)p;
    signal(SIGXFSZ, SIG_IGN);
    if (c->fsize > 0) {
        struct rlimit rl = {(rlim_t)c->fsize, (rlim_t)c->fsize};
        setrlimit(RLIMIT_FSIZE, &rl);
    }
    TrainState st = {.step = 5, .rng = {{1, 2, 3, 4}}, .kind = 1};
    save_checkpoint(c->path, c->m, &st, st.step, test_last_good);
}

// A save that fails (disk full, or the rename) stops with a message, leaves no temporary
// file, and leaves the checkpoint already under that name as it was.
static void test_save_failure(void) {
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/full_disk", TMPDIR_);
    make_dir(dir);
    snprintf(path, sizeof path, "%s/model.bin", dir);
    GPT m;
    build_gpt(&m, (GPTConfig){16, VOCAB_SIZE, 2, 2, 16}, 1, 6);
    SaveCall ok = {path, &m, 0};
    save_limited_fn(&ok);
    size_t n0, n1;
    void *before = read_all(path, &n0);
    m.params_memory[0] += 1.0f;   // a different model, which must not reach the file
    SaveCall full = {path, &m, 4096};
    expect_exit("checkpoint: a save on a full disk stops the run, naming the file", save_limited_fn, &full, 1,
                "model.bin");
    void *after = read_all(path, &n1);
    check(count_prefixed(dir, "model.bin.tmp") == 0, "checkpoint: ... and leaves no temporary file behind",
          "%d left", count_prefixed(dir, "model.bin.tmp"));
    check(n0 == n1 && !memcmp(before, after, n0),
          "checkpoint: ... and the older file under that name is intact", "");
    free(before); free(after);
    // the rename fails when the target is a directory
    char target[320];
    snprintf(target, sizeof target, "%s/sub", dir);
    make_dir(target);
    SaveCall into_dir = {target, &m, 0};
    expect_exit("checkpoint: a failed rename stops the run, naming the file", save_limited_fn, &into_dir, 1,
                "sub");
    check(count_prefixed(dir, "sub.tmp") == 0, "checkpoint: ... and leaves no temporary file behind",
          "%d left", count_prefixed(dir, "sub.tmp"));
    free_gpt(&m);
}

// the rows of a CSV log: 1 when it is the header then rows 1..n in order, each with the
// header's number of fields and ending in a newline; *rows gets n
static int csv_well_formed(const char *path, const char *header_start, int *rows) {
    size_t n;
    char *text = (char *)read_all(path, &n);
    int ok = n > 0 && text[n - 1] == '\n' && !strncmp(text, header_start, strlen(header_start));
    int fields = 0, line = 0;
    *rows = 0;
    for (char *p = text; ok && p < text + n; line++) {
        char *nl = (char *)memchr(p, '\n', text + n - p);
        int f = 1;
        for (char *q = p; q < nl; q++) f += *q == ',';
        if (line == 0) fields = f;
        else {
            ok = f == fields && atoi(p) == line;
            *rows += ok;
        }
        p = nl + 1;
    }
    free(text);
    return ok;
}

/* A run killed after its last checkpoint leaves rows past it and possibly a half-written
   row; --resume must cut them off, so that the log again has exactly one row per step,
   and the resumed rows equal those of a run straight through. Resuming into a new run dir
   writes the header. A CSV write error stops the run, naming the file. */
static void test_csv_resume(void) {
    char args[1024], log[256], csv[300], straight[300];
    snprintf(log, sizeof log, "%s/csv_resume.log", TMPDIR_);
    const char *common = "--layers 1 --heads 1 --channels 16 --batch-size 4 --eval-every 0 --lr 1e-3 "
                         "--seed 9 --val-data tests/fixtures/val_small.txt --steps 6 --save-every 3";
    snprintf(args, sizeof args, "%s --run-dir %s/csv_a", common, TMPDIR_);
    run_cmd_quiet(cmd_sft, args, log);
    snprintf(straight, sizeof straight, "%s/csv_a/sft.csv", TMPDIR_);
    snprintf(args, sizeof args, "%s --run-dir %s/csv_b", common, TMPDIR_);
    run_cmd_quiet(cmd_sft, args, log);
    snprintf(csv, sizeof csv, "%s/csv_b/sft.csv", TMPDIR_);
    // the kill: csv_b's ckpt.bin holds step 3, its log rows 1-6, then half of a row 7
    FILE *f = fopenCheck(csv, "a");
    fprintf(f, "7,2.71");
    fcloseCheck(f);
    snprintf(args, sizeof args, "%s --run-dir %s/csv_b --resume %s/csv_b/ckpt.bin", common, TMPDIR_, TMPDIR_);
    int rc = run_cmd_quiet(cmd_sft, args, log);
    int rows = 0;
    int ok = csv_well_formed(csv, "step,loss", &rows);
    check(rc == 0 && ok && rows == 6, "csv: resume after a kill leaves one well-formed row per step",
          "%d rows, %s", rows, ok ? "well-formed" : "malformed");
    // rows 4-6 were written again by the resumed run: step and loss as in a straight run
    size_t n1, n2;
    char *a = (char *)read_all(straight, &n1), *b = (char *)read_all(csv, &n2);
    int same = ok && rows == 6;
    char *pa = a, *pb = b;
    for (int line = 0; line <= 6 && same; line++) {   // the fields before the second comma
        size_t ka = strcspn(pa, ","), kb = strcspn(pb, ",");
        ka += 1 + strcspn(pa + ka + 1, ",");
        kb += 1 + strcspn(pb + kb + 1, ",");
        same = ka == kb && !memcmp(pa, pb, ka);
        pa += strcspn(pa, "\n") + 1;
        pb += strcspn(pb, "\n") + 1;
    }
    check(same, "csv: ... the resumed rows hold the losses of a run straight through", "");
    free(a); free(b);
    // resuming into a new run dir: the header, then the rows of steps 4-6
    snprintf(args, sizeof args, "%s --run-dir %s/csv_c --resume %s/csv_a/ckpt.bin", common, TMPDIR_, TMPDIR_);
    rc = run_cmd_quiet(cmd_sft, args, log);
    snprintf(csv, sizeof csv, "%s/csv_c/sft.csv", TMPDIR_);
    char *c = (char *)read_all(csv, &n1);
    int lines = 0;
    for (size_t i = 0; i < n1; i++) lines += c[i] == '\n';
    check(rc == 0 && !strncmp(c, "step,loss", 9) && lines == 4 && atoi(strchr(c, '\n') + 1) == 4,
          "csv: resuming into a new run dir writes the header, then steps 4-6", "%d lines", lines);
    free(c);
    // a write error on the log (a 2,000-byte file size limit: about 36 rows) ends the run
    static char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd, "%s sft --threads 1 --steps 80 --layers 1 --heads 1 --channels 8 "
             "--batch-size 2 --eval-every 0 --val-data tests/fixtures/val_small.txt --run-dir %s/csv_full",
             grpo_bin(), TMPDIR_);
    int code = run_binary_fsize(cmd, 2000, out, sizeof out);
    const char *err = line_with(out, "error");
    check(code == 1 && strstr(err, "sft.csv"), "csv: a write error on the log stops the run, naming the file",
          "exit %d: %s", code, err);
}

typedef struct { const char *dir; int step; const char *log_row; } CsvOpenCall;
static void csv_open_fn(void *p) {
    CsvOpenCall *c = (CsvOpenCall *)p;
    CsvLog log = open_csv(c->dir, "log.csv", "step,a,b", 1, c->step, 2, c->log_row);
    close_csv(&log);
}

/* open_csv_case: writes RUN/log.csv (NULL: no file), opens it as a run resuming after `step`,
   and checks the file's rows after it (want) and that its notes on stderr hold each of the
   `notes` ('|'-separated) and not `never`. */
static void open_csv_case(const char *name, const char *text, int step, const char *log_row, const char *want,
                          const char *notes, const char *never) {
    char dir[256], path[300], err[4096];
    snprintf(dir, sizeof dir, "%s/csv_repair", TMPDIR_);
    make_dir(dir);
    snprintf(path, sizeof path, "%s/log.csv", dir);
    unlink(path);
    if (text) write_bytes(path, text, strlen(text));
    CsvOpenCall call = {dir, step, log_row};
    int rc = child_stderr(csv_open_fn, &call, err, sizeof err);
    size_t n = 0;
    char *got = (char *)read_all(path, &n);
    got = (char *)realloc(got, n + 1);
    got[n] = 0;
    int ok = rc == 0 && !strcmp(got, want);
    char missing[300] = "";
    for (const char *p = notes; ok && *p; ) {
        char one[200];
        size_t len = strcspn(p, "|");
        snprintf(one, sizeof one, "%.*s", (int)len, p);
        if (!strstr(err, one)) { ok = 0; snprintf(missing, sizeof missing, "  <- no note '%s'", one); }
        p += len + (p[len] == '|');
    }
    if (never && strstr(err, never)) { ok = 0; snprintf(missing, sizeof missing, "  <- says '%s'", never); }
    for (char *q = got; *q; q++) if (*q == '\n') *q = '/';
    for (char *q = err; *q; q++) if (*q == '\n') *q = ' ';
    check(ok, name, "exit %d, rows '%s'; %.300s%s", rc, got + strlen("step,a,b/"), err, missing);
    free(got);
}

/* A resumed run's log keeps every row the checkpoint vouches for (steps 1..step, in order)
   and says exactly which steps have none: a gap (a row deleted) keeps the rows after it;
   a missing or empty file, and a row cut off mid-way, name the steps not logged. */
static void test_csv_repair(void) {
    const char *H = "step,a,b\n";
    char t[512], w[512];
    snprintf(t, sizeof t, "%s1,x,y\n2,x,y\n4,x,y\n5,x,y\n6,x,y\n", H);
    snprintf(w, sizeof w, "%s1,x,y\n2,x,y\n4,x,y\n5,x,y\n", H);
    open_csv_case("csv: a gap (row 3 deleted): rows 4-5 kept, step 3 named, row 6 dropped", t, 5, "5,x", w,
                  "no row for step 3 |dropped the row of step 6 (line 6), written after the checkpoint of step 5",
                  "steps 4");
    open_csv_case("csv: a missing log: steps 1-4 named as not in it", NULL, 4, NULL, H,
                  "is new (it was missing or empty): steps 1-4", NULL);
    open_csv_case("csv: an empty log: steps 1-4 named as not in it", "", 4, NULL, H,
                  "is new (it was missing or empty): steps 1-4", NULL);
    snprintf(t, sizeof t, "%s1,x", H);
    open_csv_case("csv: a row cut off mid-way: named, and step 1 not logged (not 'steps 1-0')", t, 1, NULL, H,
                  "dropped line 2, a row cut off mid-way (3 bytes|no row for step 1 ", "1-0");
    snprintf(t, sizeof t, "%s1,x,y\n2,x,y\n2,x,y\n3,x\n3,x,y\nz,x,y\n4,x,y\n5,x,y\n6,x", H);
    snprintf(w, sizeof w, "%s1,x,y\n2,x,y\n3,x,y\n4,x,y\n", H);
    open_csv_case("csv: a duplicate, a short and an unnumbered line dropped, the rows around them kept", t, 4,
                  "4,x", w, "dropped 3 lines that are not a row of this log, the first line 4 (step 2 after step 2"
                  "|dropped the row of step 5 (line 9)|dropped line 10, a row cut off", "no row");
    snprintf(t, sizeof t, "%s1,x,y\n2,x,y\n3,x,y\n", H);
    open_csv_case("csv: rows 4-5 deleted: steps 4-5 named", t, 5, NULL, t, "no row for steps 4-5 (the checkpoint was saved after step 5)",
                  "dropped");
    snprintf(t, sizeof t, "%s1,x,y\n2,x,y\n", H);
    open_csv_case("csv: a complete log up to the checkpoint: no note", t, 2, "2,x", t, "", "note");
    // the last row vouched for, after a gap, is still checked against the checkpoint's record
    char err[4096], dir[256];
    snprintf(dir, sizeof dir, "%s/csv_repair", TMPDIR_);
    snprintf(t, sizeof t, "%s1,x,y\n3,q,y\n", H);
    char path[300];
    snprintf(path, sizeof path, "%s/log.csv", dir);
    write_bytes(path, t, strlen(t));
    CsvOpenCall call = {dir, 3, "3,x"};
    int rc = child_stderr(csv_open_fn, &call, err, sizeof err);
    check(rc == 1 && strstr(err, "another run's log"), "csv: after a gap, the row of the checkpoint's step is "
          "still checked against it", "exit %d: %.200s", rc, err);
    // another header (an older build's log, other options): refused, naming the first column that differs
    const struct { const char *text, *want, *name; } heads[] = {
        {"step,a\n1,x\n", "the file has no column 3 'b' (it ends after column 2)", "a column fewer (an older build)"},
        {"step,a,b,c\n1,x,y,z\n", "the file has a column 4 'c' that this run does not write", "a column more"},
        {"step,a,q\n1,x,y\n", "column 3 is 'q' in the file, 'b' in this run", "a column renamed"},
        {"\n1,x,y\n", "its first line is empty", "an empty header line"},
        {"step,a,b\r\n1,x,y\r\n", "column 3 is 'b\\x0d' in the file, 'b' in this run", "CRLF line ends"},
        {"\xef\xbb\xbfstep,a,b\n1,x,y\n", "column 1 is '\\xef\\xbb\\xbfstep' in the file", "a UTF-8 BOM"},
        {"step,a,b", "the names agree, but the header line has no line end", "the header without its line end"},
        {"step,a,bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n",
         "column 3 is 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb...' in the file, 'b' in this run", "a long name, cut"},
    };
    for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++) {
        write_bytes(path, heads[h].text, strlen(heads[h].text));
        CsvOpenCall c2 = {dir, 1, NULL};
        rc = child_stderr(csv_open_fn, &c2, err, sizeof err);
        char name[160];
        snprintf(name, sizeof name, "csv: another header is refused, naming where it differs: %s", heads[h].name);
        check(rc == 1 && strstr(err, "does not start with the header this run writes") && strstr(err, heads[h].want),
              name, "exit %d: %.300s", rc, err);
    }
    char diff[200];
    csv_header_diff(diff, sizeof diff, "step,a,b\n", 9, "step,a,b");
    check(!strcmp(diff, "the names agree"), "csv: csv_header_diff of equal names says so", "'%s'", diff);
}

/* compare's load_run refuses a finished run whose files do not hold, naming the file and line:
   a valid pair (K = 2) is read; each edit of one value is refused. */
static int load_run_case(const char *eval, const char *result, char *err, size_t errn, CmpRun *r) {
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/load_run", TMPDIR_);
    make_dir(dir);
    snprintf(path, sizeof path, "%s/eval.csv", dir);
    write_bytes(path, eval, strlen(eval));
    snprintf(path, sizeof path, "%s/result.txt", dir);
    write_bytes(path, result, strlen(result));
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    err[0] = 0;
    return load_run(r, 2, err, errn);
}
static void test_load_run_checks(void) {
    const char *E = "point,budget_spent,step,gen_tokens,flops,seconds,val_acc\n0,0,0,0,0,0,0.100000\n"
                    "1,4100,3,4100,2000000,1.500000,0.200000\n2,8200,6,8200,4000000,3.000000,0.250000\n";
    const char *R = "test_acc 0.250000\ntest_n 40\nsft_test_acc 0.100000\nsteps 6\nbudget_done 1\n"
                    "gen_tokens_traj 8000\ngen_tokens_aux 200\ntrained_tokens 9000\nflops 4000000\nseconds 3.000000\n";
    char err[1024];
    CmpRun r;
    int rc = load_run_case(E, R, err, sizeof err, &r);
    check(rc == 0 && r.test_acc == 0.25 && r.test_n == 40 && r.val[2] == 0.25, "compare: a finished run's files are read",
          "%s", err);
    struct { const char *what, *from, *to, *needle; int in_result; } cases[] = {
        {"val_acc nan", "0.250000\n", "nan\n", "eval.csv: line 4: val_acc is not a number", 0},
        {"val_acc 1.5", "0.250000\n", "1.5\n", "eval.csv: line 4: val_acc 1.5 is not in [0, 1]", 0},
        {"val_acc -0.1", "0,0.100000", "0,-0.1", "line 2: val_acc -0.1", 0},
        {"val_acc ' 0.2'", ",0.200000", ", 0.2", "line 3: val_acc is not a number", 0},
        {"step 2.5", ",3,4100", ",2.5,4100", "line 3: step 2.5 is not a whole number", 0},
        {"gen_tokens down", "6,8200,4", "6,4000,4", "line 4: gen_tokens 4000 is below", 0},
        {"seconds inf", "1.500000", "inf", "line 3: seconds is not a number", 0},
        {"point 0 not the start", "0,0,0,0,0,0,", "0,0,1,0,0,0,", "line 2: point 0 (the start) has step 1", 0},
        {"test_acc 1.5", "test_acc 0.250000", "test_acc 1.5", "result.txt: test_acc 1.5 is not in [0, 1]", 1},
        {"test_acc nan", "test_acc 0.250000", "test_acc nan", "result.txt: line 1: the value of test_acc", 1},
        {"test_acc edited (0.26 of 40)", "test_acc 0.250000", "test_acc 0.260000", "not a count of test_n", 1},
        {"test_acc line deleted (sft_test_acc is not it)", "test_acc 0.250000\n", "", "no test_acc", 1},
        {"test_n 'abc'", "test_n 40", "test_n abc", "the value of test_n is not a number", 1},
        {"test_n 40.5", "test_n 40", "test_n 40.5", "test_n 40.5 is not a whole number", 1},
        {"budget_done 10", "budget_done 1", "budget_done 10", "budget_done 10", 1},
        {"steps edited", "steps 6", "steps 7", "steps 7, but eval.csv's last point is at step 6", 1},
        {"flops edited", "flops 4000000", "flops 4000001", "flops 4000001, but", 1},
        {"test_acc twice", "steps 6", "test_acc 0.5", "test_acc given twice", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char e[1024], res[1024], name[160];
        const char *src = cases[i].in_result ? R : E;
        char *dst = cases[i].in_result ? res : e;
        const char *at = strstr(src, cases[i].from);
        snprintf(dst, 1024, "%.*s%s%s", (int)(at ? at - src : 0), src, cases[i].to, at ? at + strlen(cases[i].from) : "");
        if (!cases[i].in_result) snprintf(res, sizeof res, "%s", R);
        else snprintf(e, sizeof e, "%s", E);
        rc = load_run_case(e, res, err, sizeof err, &r);
        snprintf(name, sizeof name, "compare: a run with %s is refused, naming file and line", cases[i].what);
        check(at && rc == -1 && strstr(err, cases[i].needle), name, "%s", err);
    }
}

/* train never overwrites its --init (the SFT model, also π_ref): a --run-dir that holds it
   is refused before anything runs. */
static void test_train_keeps_init(void) {
    char dir[256], init[300], copy[300];
    snprintf(dir, sizeof dir, "%s/own_init", TMPDIR_);
    make_dir(dir);
    snprintf(init, sizeof init, "%s/model.bin", dir);
    snprintf(copy, sizeof copy, "%s/own_init_copy.bin", TMPDIR_);
    GPT m;
    build_gpt(&m, (GPTConfig){64, VOCAB_SIZE, 1, 1, 8}, 1, 8);
    save_weights_only(init, &m);
    save_weights_only(copy, &m);
    free_gpt(&m);
    static char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd, "%s train --threads 1 --steps 1 --prompts-per-step 1 --group-size 2 "
             "--max-new-tokens 4 --eval-every 0 --pass-k 0 --val-data tests/fixtures/val_small.txt "
             "--test-data tests/fixtures/val_small.txt --init %s --run-dir %s", grpo_bin(), init, dir);
    int code = run_binary(cmd, out, sizeof out);
    const char *err = line_with(out, "error");
    check(code == 2 && strstr(err, "--init") && strstr(err, dir),
          "train: a --run-dir holding the --init is refused", "exit %d: %s", code, err);
    check(files_equal(init, copy), "train: ... and the --init checkpoint is unchanged", "");
}

/* overflow_logits: finite weights that give NaN logits: every token embedding 1 and every final
   LayerNorm bias 3e38, so each logit is C·3e38 = +inf and the softmax computes inf − inf. (A
   checkpoint with a NaN or Inf weight is refused at load; this one is not.) */
static void overflow_logits(GPT *m) {
    for (size_t i = 0; i < m->param_sizes[0]; i++) m->params.wte[i] = 1.0f;
    for (int c = 0; c < m->config.channels; c++) m->params.lnfb[c] = 3e38f;
}

/* A diverging run: lr x weight decay >= 1 is refused; parameters beyond PARAM_LIMIT are
   never saved (so "last good checkpoint" is good); a NaN's step is the log's step. */
static void test_divergence(void) {
    static char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd, "%s sft --threads 1 --steps 2 --layers 1 --heads 1 --channels 8 "
             "--batch-size 2 --lr 10 --weight-decay 0.3 --eval-every 0 "
             "--val-data tests/fixtures/val_small.txt --run-dir %s/wd", grpo_bin(), TMPDIR_);
    int code = run_binary(cmd, out, sizeof out);
    const char *wd_err = line_with(out, "error");
    check(code == 2 && strstr(wd_err, "--weight-decay"), "diverge: lr x weight-decay >= 1 is a usage error",
          "exit %d: %s", code, wd_err);
    // an --init with one weight at 1e5: finite loss and gradients, but not a model to save
    GPT m;
    build_gpt(&m, (GPTConfig){64, VOCAB_SIZE, 1, 1, 8}, 1, 8);
    m.params_memory[50] = 1e5f;
    char init[300], dir[300], path[400];
    snprintf(init, sizeof init, "%s/huge_weight.bin", TMPDIR_);
    save_weights_only(init, &m);
    snprintf(dir, sizeof dir, "%s/diverged", TMPDIR_);
    const char *common = "--threads 1 --prompts-per-step 1 --group-size 2 --max-new-tokens 4 --eval-every 0 "
                         "--pass-k 0 --val-data tests/fixtures/val_small.txt "
                         "--test-data tests/fixtures/val_small.txt";
    snprintf(cmd, sizeof cmd, "%s train %s --steps 3 --save-every 1 --init %s --run-dir %s", grpo_bin(),
             common, init, dir);
    code = run_binary(cmd, out, sizeof out);
    snprintf(path, sizeof path, "%s/ckpt.bin", dir);
    struct stat sb;
    int saved = stat(path, &sb) == 0;
    snprintf(path, sizeof path, "%s/model.bin", dir);
    saved += stat(path, &sb) == 0;
    const char *err = line_with(out, "error");
    check(code == 1 && strstr(err, "step 1:") && strstr(err, "diverged") && !saved,
          "diverge: parameters beyond the limit are never saved", "exit %d, %d files saved: %s", code, saved,
          err);
    // finite weights whose logits overflow (overflow_logits): the loss is NaN at the first step,
    // which the log calls step 1 (a NaN weight itself is refused when the checkpoint is loaded)
    overflow_logits(&m);
    snprintf(init, sizeof init, "%s/nan_weight.bin", TMPDIR_);
    save_weights_only(init, &m);
    free_gpt(&m);
    snprintf(cmd, sizeof cmd, "%s train %s --steps 2 --init %s --run-dir %s/nan_step", grpo_bin(), common,
             init, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    const char *nan_err = line_with(out, "error");
    check(code == 1 && strstr(nan_err, "error: step 1: the loss is") && strstr(nan_err, "nan"),
          "diverge: the NaN's step number is the log's", "exit %d: %s", code, nan_err);
}

/* After train --resume, the result line's 'before' is the --init (SFT) model's accuracy,
   not the resumed checkpoint's: here --init is a random model (accuracy 0 on one prompt)
   and the resumed checkpoint has learnt that prompt by heart (accuracy 1). */
static void test_resume_before(void) {
    char args[1024], log[256], data[256], mem[300], init[300], resume[300];
    snprintf(log, sizeof log, "%s/resume_before.log", TMPDIR_);
    snprintf(data, sizeof data, "%s/one_prompt.txt", TMPDIR_);
    FILE *f = fopenCheck(data, "w");
    fprintf(f, "8 4 5 8>9:\t8-5=3,8-3=5,5+4=9\n");
    fcloseCheck(f);
    snprintf(args, sizeof args, "--layers 1 --heads 1 --channels 16 --batch-size 4 --steps 30 --lr 1e-2 "
             "--warmup 0 --eval-every 0 --train-data %s --val-data %s --run-dir %s/memorised", data, data,
             TMPDIR_);
    run_cmd_quiet(cmd_sft, args, log);
    snprintf(mem, sizeof mem, "%s/memorised/model.bin", TMPDIR_);
    GPT m;
    TrainState st = {0};
    load_checkpoint(mem, &m, 1, &st);
    st.kind = 2;   // as if ./grpo train had written it after 1 step
    st.step = 1;
    GPT r;
    build_gpt(&r, m.config, 1, 11);
    snprintf(init, sizeof init, "%s/random_init.bin", TMPDIR_);
    save_weights_only(init, &r);
    Options ro;   // the run record the command below resumes with (format 4 holds every key)
    default_options(&ro);
    train_defaults(&ro);
    ro.prompts_per_step = 1;
    ro.group_size = 2;
    ro.max_new_tokens = 20;
    snprintf(ro.train_data, sizeof ro.train_data, "%s", data);
    snprintf(ro.val_data, sizeof ro.val_data, "%s", data);
    snprintf(ro.init, sizeof ro.init, "%s", init);
    record_options(st.options, sizeof st.options, &ro, TRAIN_RUN_OPTIONS, OPTIMIZER_OPTIONS);
    record_input_hashes(st.options, sizeof st.options, &ro, TRAIN_INPUTS, "");
    Budget spent = {.unit = ro.budget_unit, .next_point = 1};   // every train checkpoint holds its counters
    budget_to_section(&spent, &st);
    snprintf(resume, sizeof resume, "%s/memorised_train.bin", TMPDIR_);
    save_checkpoint(resume, &m, &st, st.step, test_last_good);
    free_gpt(&m); free_gpt(&r);
    static char cmd[2048], out[16384];
    double acc[2];
    const char *models[2] = {init, resume};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s eval --threads 1 --pass-k 0 --max-new-tokens 20 --model %s --data %s",
                 grpo_bin(), models[i], data);
        run_binary(cmd, out, sizeof out);
        const char *at = strstr(out, "greedy accuracy ");
        acc[i] = at ? atof(at + 16) : -1.0;
    }
    snprintf(cmd, sizeof cmd, "%s train --threads 1 --steps 2 --prompts-per-step 1 --group-size 2 "
             "--max-new-tokens 20 --eval-every 0 --pass-k 0 --train-data %s --val-data %s --test-data %s "
             "--init %s --resume %s --run-dir %s/resumed", grpo_bin(), data, data, data, init, resume,
             TMPDIR_);
    int code = run_binary(cmd, out, sizeof out);
    const char *res = strstr(out, "result: test accuracy ");
    double before = res ? atof(res + 22) : -1.0;
    check(code == 0 && acc[0] != acc[1] && before == acc[0],
          "train --resume: the result line's 'before' is the --init model's",
          "exit %d, before %.4f; --init %.4f, resumed checkpoint %.4f", code, before, acc[0], acc[1]);
}

/* save_tiny_init: TMPDIR_/file, the parameters of a random 1-layer model of width 8 (context
   64, seed `seed`): an --init for train runs that take a second; its path goes to path. */
static void save_tiny_init(char *path, size_t cap, const char *file, uint64_t seed) {
    snprintf(path, cap, "%s/%s", TMPDIR_, file);
    GPT m;
    build_gpt(&m, (GPTConfig){64, VOCAB_SIZE, 1, 1, 8}, 1, seed);
    save_weights_only(path, &m);
    free_gpt(&m);
}

/* --test-limit: 0 skips the test evaluation at the start and end (short try-outs), N scores
   the first N test prompts. */
static void test_test_limit(void) {
    char init[300];
    save_tiny_init(init, sizeof init, "limit_init.bin", 12);
    static char cmd[2048], out[16384];
    const char *common = "--threads 1 --steps 1 --prompts-per-step 1 --group-size 2 --max-new-tokens 4 "
                         "--eval-every 0 --pass-k 2 --val-data tests/fixtures/val_small.txt "
                         "--test-data tests/fixtures/val_small.txt";
    snprintf(cmd, sizeof cmd, "%s train %s --test-limit 0 --init %s --run-dir %s/limit0", grpo_bin(), common,
             init, TMPDIR_);
    int code = run_binary(cmd, out, sizeof out);
    check(code == 0 && strstr(out, "result: no test evaluation") && !strstr(out, "# start: test") &&
          !strstr(out, "pass@"), "train --test-limit 0: no test evaluation at the start or end",
          "exit %d: %s", code, line_with(out, "result"));
    // ... and the --test-data file is not read: a missing or malformed one does not stop the run
    snprintf(cmd, sizeof cmd, "%s train %s --test-limit 0 --test-data %s/no_such_test.txt --init %s "
             "--run-dir %s/limit0_nofile", grpo_bin(), common, TMPDIR_, init, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    check(code == 0 && strstr(out, "result: no test evaluation"),
          "train --test-limit 0: --test-data is not read (a missing file runs)", "exit %d: %s", code,
          line_with(out, "error"));
    snprintf(cmd, sizeof cmd, "%s train %s --test-limit 5 --init %s --run-dir %s/limit5", grpo_bin(), common,
             init, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    check(code == 0 && strstr(out, "(5 problems, "), "train --test-limit 5: scores the first 5 test prompts",
          "exit %d: %s", code, line_with(out, "result"));
}

/* ./grpo tree: --steps 0 is a usage error (it printed a table of NaN), and a NaN in a run
   prints one error, without a "last good checkpoint" (tree writes none), even when two
   threads meet one at once. */
static void test_tree_errors(void) {
    static char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd, "%s tree --threads 1 --steps 0 --seeds 1 --run-dir %s/tree0", grpo_bin(),
             TMPDIR_);
    int code = run_binary(cmd, out, sizeof out);
    check(code == 2 && strstr(line_with(out, "error"), "--steps") && !strstr(out, "-nan"),
          "tree: --steps 0 is a usage error", "exit %d: %s", code, line_with(out, "error"));
    // lr 10 with beta2 0 makes AdamW's step g/|g| x 10 per weight: NaN within a few steps
    snprintf(cmd, sizeof cmd, "%s tree --threads 2 --seeds 5 --steps 30 --lr 10 --beta1 0.99 --beta2 0 "
             "--run-dir %s/tree_nan --overwrite 1", grpo_bin(), TMPDIR_);
    int twice = 0, last_good = 0, codes_ok = 1;
    for (int i = 0; i < 3; i++) {
        code = run_binary(cmd, out, sizeof out);
        int errors = 0;
        for (const char *p = out; (p = strstr(p, "error:")) != NULL; p++) errors++;
        twice += errors != 1;
        last_good += strstr(out, "last good") != NULL;
        codes_ok &= code == 1;
    }
    check(codes_ok && !twice && !last_good, "tree: a NaN prints one error and names no checkpoint",
          "%d of 3 runs printed it more than once, %d named a checkpoint", twice, last_good);
    // stop_on_nan itself, called by 8 threads at once (in a fresh process: OpenMP does not
    // survive fork), 30 times: without the critical section two or more threads printed in
    // 10 to 20 runs of 30 on this 2-core machine
    snprintf(cmd, sizeof cmd, "%s --stop-on-nan-threads", self_bin);
    int more = 0;
    codes_ok = 1;
    for (int i = 0; i < 30; i++) {
        code = run_binary(cmd, out, sizeof out);
        int errors = 0;
        for (const char *p = out; (p = strstr(p, "error:")) != NULL; p++) errors++;
        more += errors != 1;
        codes_ok &= code == 1;
    }
    check(codes_ok && more == 0, "tree: stop_on_nan from 8 threads at once prints once",
          "%d of 30 runs printed it more than once", more);
}

// the child process of test_tree_errors: eight threads call stop_on_nan at the same moment
static int stop_on_nan_threads(void) {
    #pragma omp parallel num_threads(8)
    {
        #pragma omp barrier
        stop_on_nan("the loss", 1, NAN, "");
    }
    return 0;
}

/* A busy machine: libgomp's spin count as it reads OMP_WAIT_POLICY and GOMP_SPINCOUNT, the
   /proc/loadavg parser, when ./grpo warns (other jobs oversubscribe the CPUs, more than one
   thread, a policy that spins), and that the warning is one stderr line, once, stdout unchanged. */
// tree's "# R runs x S steps in T s" line: T blanked (a wall time, not an output of the run)
static void blank_seconds(char *out) {
    char *p = strstr(out, " steps in ");
    for (p = p ? p + 10 : NULL; p && *p && *p != ' '; p++) *p = '#';
}

static void test_busy_machine(void) {
    struct { const char *policy, *count; double spins; } sc[] = {
        {NULL, NULL, 300000}, {"PASSIVE", NULL, 0}, {" passive ", NULL, 0}, {"ACTIVE", NULL, 3e10},
        {"active", NULL, 3e10}, {"sleepy", NULL, 300000}, {NULL, "10000", 10000}, {NULL, "10k", 10000},
        {NULL, "2M", 2e6}, {"PASSIVE", "infinite", 1e18}, {NULL, "INFINITY", 1e18}, {"ACTIVE", "3000", 3000},
        {"PASSIVE", "lots", 0}, {NULL, "10x", 300000}};
    int bad = 0;
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
        double got = gomp_spin_count(sc[i].policy, sc[i].count);
        if (got != sc[i].spins) {
            bad++;
            printf("  OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s: %g spins, expected %g\n", sc[i].policy ? sc[i].policy : "(unset)",
                   sc[i].count ? sc[i].count : "(unset)", got, sc[i].spins);
        }
    }
    check(bad == 0, "busy: libgomp's spin count from OMP_WAIT_POLICY, GOMP_SPINCOUNT", "%d wrong", bad);
    struct { double load; int running, ncpu, threads; const char *policy, *count; int warns; } w[] = {
        {2.5, 3, 2, 2, NULL, NULL, 1},          // another job on a 2-core machine, the default policy
        {1.0, 2, 2, 2, NULL, NULL, 1},          // one busy loop beside 2 threads on 2 cores
        {2.5, 3, 2, 2, "ACTIVE", NULL, 1},
        {2.5, 3, 2, 2, "PASSIVE", NULL, 0},     // the threads sleep: nothing to say
        {2.5, 3, 2, 2, NULL, "1000", 0},        // a short spin
        {2.5, 3, 2, 2, NULL, "1001", 1},
        {2.5, 3, 2, 2, NULL, "10k", 1},         // measured: still slow beside other jobs
        {2.5, 3, 2, 2, "PASSIVE", "infinite", 1},   // GOMP_SPINCOUNT wins, as in libgomp
        {2.5, 3, 2, 1, NULL, NULL, 0},          // one thread waits for no one
        {2.0, 1, 2, 2, NULL, NULL, 0},          // only our own last run in the average: nothing runs now
        {0.5, 4, 2, 2, NULL, NULL, 0},          // a moment's burst, not the last minute
        {3.0, 4, 16, 8, NULL, NULL, 0},         // 3 others + 8 threads fit in 16 CPUs
        {9.0, 10, 16, 8, NULL, NULL, 1},        // 9 + 8 do not
        {-1, 9, 2, 2, NULL, NULL, 0}};          // not a load average (the text's parsing below)
    bad = 0;
    char msg[512], text[64];
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        snprintf(text, sizeof text, "%g 1.33 0.63 %d/99 13189\n", w[i].load, w[i].running);
        int got = busy_machine_warning(text, w[i].ncpu, w[i].threads, w[i].policy, w[i].count, "train", msg,
                                       sizeof msg);
        int msg_ok = got ? strstr(msg, "OMP_WAIT_POLICY=PASSIVE " PROG " train ...") && !strchr(msg, '\n')
                         : msg[0] == 0;
        if (i == 0) msg_ok &= strstr(msg, "(load 2.50, 3 runnable, 2 CPUs)") != NULL;   // the text as read
        if (got != w[i].warns || !msg_ok) {
            bad++;
            printf("  case %zu: load %g, %d runnable, %d CPUs, %d threads: warns %d, expected %d: '%s'\n", i,
                   w[i].load, w[i].running, w[i].ncpu, w[i].threads, got, w[i].warns, msg);
        }
    }
    // texts that are not /proc/loadavg's: no warning
    const char *not_loadavg[] = {"9 9 9", "", NULL, "9 9 9 x/9 1"};
    for (int i = 0; i < 4; i++)
        bad += busy_machine_warning(not_loadavg[i], 2, 2, NULL, NULL, "train", msg, sizeof msg);
    check(bad == 0, "busy: warns when other jobs oversubscribe the CPUs and the threads spin", "%d wrong", bad);
#ifdef _OPENMP
    // the command: one line on stderr, once; stdout byte for byte that of a run that does not warn
    static char cmd[2048], out_warn[4096], out_quiet[4096];
    char err[512];
    snprintf(err, sizeof err, "%s/busy_stderr.txt", TMPDIR_);
    const char *envs[2] = {"OMP_WAIT_POLICY=ACTIVE", "OMP_WAIT_POLICY=PASSIVE"};
    char *outs[2] = {out_warn, out_quiet};
    int codes[2], lines[2], named[2];
    for (int r = 0; r < 2; r++) {
        snprintf(cmd, sizeof cmd, "(env -u GOMP_SPINCOUNT %s GRPO_LOADAVG='3.00 2.00 1.00 3/120 999' %s tree "
                 "--threads 2 --steps 1 --seeds 1 --run-dir %s/busy_tree --overwrite 1 2>%s)", envs[r], grpo_bin(), TMPDIR_, err);
        codes[r] = run_binary(cmd, outs[r], sizeof out_warn);
        blank_seconds(outs[r]);
        size_t n = 0;
        char *text = (char *)read_all(err, &n);
        lines[r] = 0;
        for (size_t i = 0; text && i < n; i++) lines[r] += text[i] == '\n';
        char line[1024];
        snprintf(line, sizeof line, "%.*s", text ? (int)n : 0, text ? text : "");
        named[r] = strstr(line, "OMP_WAIT_POLICY=PASSIVE " PROG " tree ...") != NULL;
        free(text);
    }
    check(codes[0] == 0 && codes[1] == 0 && lines[0] == 1 && named[0] && lines[1] == 0 && !strcmp(out_warn, out_quiet)
          && out_warn[0], "busy: ./grpo warns in one stderr line, once; stdout unchanged",
          "exit %d/%d, stderr lines %d (ACTIVE), %d (PASSIVE), stdout %s", codes[0], codes[1], lines[0], lines[1],
          strcmp(out_warn, out_quiet) ? "differs" : "same");
    // with the policy unset (libgomp's default spins) the program restarts itself under PASSIVE: one
    // stderr line, no advice, stdout that of the PASSIVE run
    snprintf(cmd, sizeof cmd, "(env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY GRPO_LOADAVG='3.00 2.00 1.00 3/120 999' %s "
             "tree --threads 2 --steps 1 --seeds 1 --run-dir %s/busy_tree --overwrite 1 2>%s)", grpo_bin(), TMPDIR_, err);
    static char out_restart[4096];
    int rcode = run_binary(cmd, out_restart, sizeof out_restart);
    blank_seconds(out_restart);
    size_t rn = 0;
    char *rtext = (char *)read_all(err, &rn);
    int rlines = 0;
    for (size_t i = 0; rtext && i < rn; i++) rlines += rtext[i] == '\n';
    int restarted = rtext && strstr(rtext, "restarting with OMP_WAIT_POLICY=PASSIVE") && !strstr(rtext, "type OMP_WAIT");
    check(rcode == 0 && rlines == 1 && restarted && !strcmp(out_restart, out_quiet),
          "busy: with OMP_WAIT_POLICY unset, ./grpo says so once and restarts itself under PASSIVE (stdout unchanged)",
          "exit %d, stderr lines %d, %s, stdout %s: %.200s", rcode, rlines, restarted ? "restarted" : "no restart",
          strcmp(out_restart, out_quiet) ? "differs" : "same", rtext ? rtext : "");
    free(rtext);
    // the restart runs exactly the command typed: compare removes --plan, --only and --quick from its
    // argv as it parses, and --plan points standard output at standard error; the restart happens
    // before either. Under the faked load with the policy unset, against the same command without it:
    // the same plan on stdout, an --only line trains its one run, --quick before --threads 2 parses
    {
        static char c2[2048], busy_out[8192], calm_out[8192];
        const char *busy = "env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY GRPO_LOADAVG='5 5 5 6/200 1'";
        const char *calm = "env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=PASSIVE GRPO_LOADAVG='0 0 0 1/200 1'";
        char *outs2[2] = {busy_out, calm_out};
        int rc2[2];
        for (int r = 0; r < 2; r++) {
            snprintf(c2, sizeof c2, "(%s %s compare --quick --study %s/restart_%d --threads 2 --plan 2>/dev/null)",
                     r ? calm : busy, grpo_bin(), TMPDIR_, r);
            rc2[r] = run_binary(c2, outs2[r], sizeof busy_out);
        }
        for (char *mark = strstr(calm_out, "/restart_1"); mark; mark = strstr(mark, "/restart_1"))
            mark[9] = '0';   // the plans differ in the study's name only
        int nlines = 0;
        for (const char *c = busy_out; *c; c++) nlines += *c == '\n';
        check(rc2[0] == 0 && rc2[1] == 0 && nlines == 4 && !strcmp(busy_out, calm_out) && strstr(busy_out, "--only"),
              "busy: compare --quick ... --threads 2 --plan restarted under load: the same 4 plan lines",
              "exit %d/%d, %d lines, %s: %.200s", rc2[0], rc2[1], nlines, strcmp(busy_out, calm_out) ? "differ" : "same",
              busy_out);
        // the plan's first line, under the load: that run alone
        char *nl = strchr(busy_out, '\n');
        if (nl) *nl = 0;
        char script[512];
        snprintf(script, sizeof script, "%s/restart_only.sh", TMPDIR_);
        FILE *sf = fopen(script, "w");
        if (sf) fprintf(sf, "%s\n", busy_out), fclose(sf);
        snprintf(c2, sizeof c2, "(%s sh %s >/dev/null 2>&1; ls %s/restart_0/runs/*/)", busy, script, TMPDIR_);
        int rc_only = run_binary(c2, calm_out, sizeof calm_out);
        int seeds = 0;
        for (const char *c = strstr(calm_out, "seed_"); c; c = strstr(c + 1, "seed_")) seeds++;
        check(rc_only == 0 && seeds == 1, "busy: a plan line restarted under load trains its one run, not the study",
              "exit %d, %d run directories: %.200s", rc_only, seeds, calm_out);
    }
    // verify and check take milliseconds: they never advise
    snprintf(cmd, sizeof cmd, "(env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=ACTIVE GRPO_LOADAVG='3.00 2.00 1.00 3/120 999' "
             "%s verify --threads 2 tests/fixtures/val_small.txt 2>&1 >/dev/null)", grpo_bin());
    int vcode = run_binary(cmd, out_warn, sizeof out_warn);
    check(vcode == 0 && !strstr(out_warn, "other jobs hold the CPUs"), "busy: verify, which takes milliseconds, "
          "does not advise on the wait policy", "exit %d: %.200s", vcode, out_warn);
#endif
    // the Makefile's choice (make wait-policy, its LOADAVG file): PASSIVE exactly where ./grpo's own
    // busy test sees other jobs (2 threads on 2 CPUs, libgomp's default spin count), unset elsewhere;
    // a given OMP_WAIT_POLICY wins
    static const char *avgs[] = {"3.00 2.00 1.00 3/120 999", "0.10 0.20 0.30 1/120 999", "3.00 2.00 1.00 1/120 9",
                                 "0.40 1.00 1.00 4/120 9", "1.00 0.50 0.20 2/99 9", "0.99 0.50 0.20 2/99 9"};
    int mk_bad = 0, mk_n = (int)(sizeof avgs / sizeof avgs[0]);
    static char mcmd[2048];
    char la[512], mout[512];
    snprintf(la, sizeof la, "%s/busy_loadavg.txt", TMPDIR_);
    for (int i = 0; i <= mk_n; i++) {
        const char *text = avgs[i < mk_n ? i : 0];
        FILE *f = fopen(la, "w");
        if (!f) { mk_bad++; break; }
        fprintf(f, "%s\n%s", text, i == 0 ? "3.00 2.00 1.00 3/120 999\n" : "");   // a 2nd line is not read
        fclose(f);
        char msg[512];
        int busy = busy_machine_warning(text, 2, 2, NULL, NULL, "train", msg, sizeof msg);
        const char *given = i < mk_n ? "env -u OMP_WAIT_POLICY" : "env OMP_WAIT_POLICY=ACTIVE";
        snprintf(mcmd, sizeof mcmd, "%s make -s --no-print-directory wait-policy LOADAVG=%s 2>&1", given, la);
        mout[0] = 0;
        run_binary(mcmd, mout, sizeof mout);
        const char *want = i == mk_n ? "OMP_WAIT_POLICY=ACTIVE" : busy ? "OMP_WAIT_POLICY=PASSIVE" : "(unset";
        if (!strstr(mout, want) || strstr(mout, "PASSIVE PASSIVE")) {
            mk_bad++;
            printf("  loadavg '%s' (%s): make printed '%s', expected '%s'\n", text, given, mout, want);
        }
    }
    check(mk_bad == 0, "busy: the Makefile's wait policy is PASSIVE exactly where ./grpo sees other jobs",
          "%d of %d wrong", mk_bad, mk_n + 1);
    // make run's first line says the choice and why; a load file that cannot be read is said so
    // (not "no other jobs"), an empty LOADAVG reads nothing (it does not wait on standard input)
    const struct { const char *args, *want; } run_lines[] = {
        {"LOADAVG=/nonexistent/loadavg", "OMP_WAIT_POLICY=unset (could not read a load average from '/nonexistent/loadavg'"},
        {"LOADAVG=", "OMP_WAIT_POLICY=unset (could not read a load average from ''"},
        {"OMP_WAIT_POLICY=ACTIVE", "OMP_WAIT_POLICY=ACTIVE (given;"},
        {"OMP_WAIT_POLICY=", "OMP_WAIT_POLICY=unset (given empty"},
    };
    int line_bad = 0;
    for (size_t i = 0; i < sizeof run_lines / sizeof run_lines[0]; i++) {
        snprintf(mcmd, sizeof mcmd, "env -u OMP_WAIT_POLICY make -n --no-print-directory run %s </dev/null 2>&1 | grep -m1 'make: OMP_WAIT_POLICY'",
                 run_lines[i].args);
        mout[0] = 0;
        run_binary(mcmd, mout, sizeof mout);
        if (!strstr(mout, run_lines[i].want)) {
            line_bad++;
            printf("  make run %s: first line '%s', expected '%s'\n", run_lines[i].args, mout, run_lines[i].want);
        }
    }
    check(line_bad == 0, "busy: make run's first line says the wait policy and why (unreadable load, given, empty)",
          "%d of 4 wrong", line_bad);
}

static void test_usage_errors(void) {
    static CmdCall calls[] = {
        {cmd_sft, "--no-such-option 3"}, {cmd_sft, "--steps"}, {cmd_sft, "--steps -4"}, {cmd_sft, "--lr abc"},
        {cmd_train, "--group-size 1"}, {cmd_train, "--temperature 0"}, {cmd_train, "--clip-eps-low 1"},
        {cmd_train, "--objective reinforce"}, {cmd_sft, "--heads 3"}, {cmd_tree, "--heads 3"},
        {cmd_bench, "--heads 3 --channels 32"},
    };
    const char *needles[] = {"--no-such-option", "--steps", "--steps", "--lr", "--group-size", "--temperature",
                             "--clip-eps-low", "--objective", "--heads must divide --channels",
                             "--heads must divide --channels", "--heads must divide --channels"};
    const char *names[] = {"usage: unknown option names it, exit 2", "usage: missing value names the option, exit 2",
                           "usage: out-of-range value names the option, exit 2", "usage: unparsable number names the option, exit 2",
                           "usage: group size 1 is rejected for training", "usage: temperature 0 is rejected",
                           "usage: clip-eps-low outside [0,1) is rejected", "usage: unknown objective is rejected",
                           "usage: heads not dividing channels is rejected (sft)", "... (tree)", "... (bench)"};
    for (int i = 0; i < (int)(sizeof calls / sizeof calls[0]); i++) expect_exit(names[i], cmd_call_fn, &calls[i], 2, needles[i]);
    static char heads_cmd[1024], heads_out[8192];   // compare's --sft-args: through sft's option parsing
    snprintf(heads_cmd, sizeof heads_cmd, "%s compare --quick --study %s/heads --sft-args '--heads 3'", grpo_bin(),
             TMPDIR_);
    int heads_rc = run_binary(heads_cmd, heads_out, sizeof heads_out);
    check(heads_rc == 2 && strstr(heads_out, "(--sft-args): --heads must divide --channels"),
          "usage: heads not dividing channels is rejected (compare --sft-args)", "exit %d: %s", heads_rc, heads_out);
    GPT tiny;
    build_gpt(&tiny, (GPTConfig){64, VOCAB_SIZE, 1, 1, 8}, 1, 1);
    save_weights_only(tmp_path("/tmp/grpo_test/tiny_model.bin"), &tiny);
    free_gpt(&tiny);
    static CmdCall ctx = {cmd_train, "--max-new-tokens 60 --init /tmp/grpo_test/tiny_model.bin"};
    expect_exit("usage: prompt + max-new-tokens beyond the context is rejected", cmd_call_fn, &ctx, 2, "context");
    static CmdCall badfile = {cmd_sft, "--steps 1 --train-data tests/fixtures/bad_char.txt --run-dir /tmp/grpo_test/x"};
    expect_exit("data: a character outside the vocabulary names FILE:LINE", cmd_call_fn, &badfile, 1, "bad_char.txt:3:");
    static CmdCall nodemo = {cmd_sft, "--steps 1 --train-data data/countdown_test.txt --run-dir /tmp/grpo_test/x"};
    expect_exit("data: SFT data without demonstrations names FILE:LINE", cmd_call_fn, &nodemo, 1, "countdown_test.txt:");
    static CmdCall eval_t0 = {cmd_eval, "--temperature 0 --pass-k 0 --model /tmp/grpo_test/tiny_model.bin"};
    expect_exit("usage: eval refuses --temperature 0 (logits / T)", cmd_call_fn, &eval_t0, 2, "--temperature");
    static CmdCall eval_self = {cmd_eval, "--pass-k 0 --model /tmp/grpo_test/tiny_model.bin "
                                          "--completions /tmp/grpo_test/./tiny_model.bin"};
    expect_exit("usage: eval --completions refuses the model's own path", cmd_call_fn, &eval_self, 2, "--completions");
    GPT back;
    load_checkpoint(tmp_path("/tmp/grpo_test/tiny_model.bin"), &back, 1, NULL);   // exits (fails the suite) if it was overwritten
    check(back.config.max_seq_len == 64, "usage: ... and leaves the model file intact", "");
    free_gpt(&back);
    // a second TAB in `./grpo verify` input is an error, not a silently wrong completion
    FILE *f = fopenCheck(tmp_path("/tmp/grpo_test/two_tabs.txt"), "w");
    fprintf(f, "9 7 3 2>26:\t2+3=5,5*7=35,35-9=26\t1\n");
    fcloseCheck(f);
    static CmdCall two_tabs = {cmd_verify, "/tmp/grpo_test/two_tabs.txt"};
    expect_exit("verify: a line with two TABs names FILE:LINE", cmd_call_fn, &two_tabs, 1, "two_tabs.txt:1: more than one TAB");
    // prompts-only commands ignore a demonstration, even one longer than the context
    f = fopenCheck(tmp_path("/tmp/grpo_test/long_demo.txt"), "w");
    fprintf(f, "9 7 3 2>26:\t");
    for (int i = 0; i < 8; i++) fprintf(f, "2+3=5,");
    fprintf(f, "5*7=35\n");
    fcloseCheck(f);
    static CmdCall long_sft = {cmd_sft, "--steps 1 --train-data /tmp/grpo_test/long_demo.txt --run-dir /tmp/grpo_test/x"};
    expect_exit("data: SFT refuses a demonstration longer than the context", cmd_call_fn, &long_sft, 1, "long_demo.txt:1:");
    int rc = run_cmd_quiet(cmd_eval, "--pass-k 0 --max-new-tokens 4 --model /tmp/grpo_test/tiny_model.bin "
                                     "--data /tmp/grpo_test/long_demo.txt", "/tmp/grpo_test/eval.log");
    check(rc == 0, "data: eval ignores the demonstration (only prompt + max-new-tokens must fit)", "rc %d", rc);
}

// ----------------------------------------------------------------------------
// Read and write errors, over-long lines, byte-order marks, and the messages they give

#include <ctype.h>
#include <sys/resource.h>
#if defined(__SANITIZE_ADDRESS__)
#define TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_UNDER_ASAN 1
#endif
#endif

// Caps the child's address space (about 512 MiB above what it uses now), so that a reader
// that takes a file without newlines into memory fails fast instead of eating the machine
// (not under AddressSanitizer, whose shadow memory needs a huge address space).
static void limit_memory(void) {
#ifndef TEST_UNDER_ASAN
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%ld", &pages) != 1) pages = 0;
    if (f) fclose(f);
    rlim_t cap = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)512 << 20);
    struct rlimit r = {cap, cap};
    setrlimit(RLIMIT_AS, &r);
#endif
}
static void load_prompts_fn(void *path) {
    Dataset d;
    limit_memory();
    load_dataset(&d, (const char *)path, 64, 0, &TASKS[TASK_COUNTDOWN]);
    free_dataset(&d);
}
static void load_sft_data_fn(void *path) {
    Dataset d;
    limit_memory();
    load_dataset(&d, (const char *)path, 64, 1, &TASKS[TASK_COUNTDOWN]);
    free_dataset(&d);
}
/* The 5-number countdown files (data/countdown_n5_{train,val,test}.txt, made by
   data/regenerate.sh): each loads (train and val: every demonstration verifies), has the size
   regenerate.sh asks for, exactly 5 numbers from 1..9 and a target in 1..50 on every line,
   fits the 64-token context with --max-new-tokens 36 (notes/reference.md), and no problem
   (multiset of numbers + target) of one split is in another. Runs in a child: a violation
   exits 1 naming the file and line. */
static long long cd5_key(const int *nums, int target) {   // sorted digits, then the target
    int s[5];
    memcpy(s, nums, sizeof s);
    for (int i = 1; i < 5; i++)
        for (int j = i; j > 0 && s[j - 1] > s[j]; j--) { int t = s[j]; s[j] = s[j - 1]; s[j - 1] = t; }
    long long k = 0;
    for (int i = 0; i < 5; i++) k = k * 10 + s[i];
    return k * 100 + target;
}
static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}
static void countdown_n5_data_fn(void *unused) {
    (void)unused;
    static const char *paths[3] = {"data/countdown_n5_test.txt", "data/countdown_n5_val.txt",
                                   "data/countdown_n5_train.txt"};
    static const int want_n[3] = {400, 400, 20000};
    long long *keys[3];
    int nkeys[3];
    limit_memory();
    for (int f = 0; f < 3; f++) {
        Dataset d;
        load_dataset(&d, paths[f], 64, f > 0, &TASKS[TASK_COUNTDOWN]);
        if (d.n != want_n[f]) { fprintf(stderr, "%s: %d examples, want %d\n", paths[f], d.n, want_n[f]); exit(1); }
        keys[f] = (long long *)mallocCheck((size_t)d.n * sizeof(long long));
        nkeys[f] = d.n;
        for (int i = 0; i < d.n; i++) {
            const int *nums = d.nums + (size_t)i * MAX_NUMS;
            int ok = d.num_count[i] == 5 && d.target[i] >= 1 && d.target[i] <= 50;
            for (int j = 0; ok && j < 5; j++) ok = nums[j] >= 1 && nums[j] <= 9;
            if (!ok) { fprintf(stderr, "%s:%d: not 5 numbers in 1..9 and a target in 1..50\n", paths[f], d.line[i]); exit(1); }
            if (d.completion_len[i] > 36 || d.prompt_len[i] + 36 > 64) {
                fprintf(stderr, "%s:%d: prompt %d + completion %d tokens do not fit (--max-new-tokens 36, context 64)\n",
                        paths[f], d.line[i], d.prompt_len[i], d.completion_len[i]);
                exit(1);
            }
            keys[f][i] = cd5_key(nums, d.target[i]);
        }
        qsort(keys[f], (size_t)d.n, sizeof(long long), cmp_ll);
        free_dataset(&d);
    }
    for (int a = 0; a < 3; a++)
        for (int b = a + 1; b < 3; b++)
            for (int i = 0, j = 0; i < nkeys[a] && j < nkeys[b];) {
                if (keys[a][i] == keys[b][j]) {
                    fprintf(stderr, "%s and %s share the problem %lld (sorted numbers, then target)\n", paths[a],
                            paths[b], keys[a][i]);
                    exit(1);
                }
                if (keys[a][i] < keys[b][j]) i++;
                else j++;
            }
    for (int f = 0; f < 3; f++) free(keys[f]);
}
static void read_check_fn(void *path) {
    CheckRecord *r;
    limit_memory();
    read_check_file((const char *)path, &r);
}

static void test_io_errors(void) {
    char out[4096], cmd[1024];
    int rc;
    // a full standard output is an error, not a result that looks complete (exit 0)
    if (access("/dev/full", W_OK) == 0) {
        const char *full[3] = {"check tests/fixtures/check/trl_grpo.txt",
                               "verify tests/fixtures/val_small.txt", "--help"};
        for (int i = 0; i < 3; i++) {
            snprintf(cmd, sizeof cmd, "{ %s %s > /dev/full; }", grpo_bin(), full[i]);
            rc = run_binary(cmd, out, sizeof out);
            char name[128];
            snprintf(name, sizeof name, "io: './grpo %.20s ... > /dev/full' exits 1 with a message", full[i]);
            int ok = rc == 1 && strstr(out, "error: writing standard output: No space left on device");
            check(ok, name, "exit %d: %.*s", rc, (int)strcspn(out, "\n"), out);
        }
    }
    // a read error is not the end of the file: standard input that is a directory (EISDIR)
    const char *dir_cmds[2] = {"check -", "verify -"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s %s < tests", grpo_bin(), dir_cmds[i]);
        rc = run_binary(cmd, out, sizeof out);
        char name[128];
        snprintf(name, sizeof name, "io: '%s < DIRECTORY' is a read error, exit 1", dir_cmds[i]);
        int ok = rc == 1 && strstr(out, "-:1: read error: Is a directory");
        check(ok, name, "exit %d: %.*s", rc, (int)strcspn(out, "\n"), out);
    }
    // reading /proc/self/mem at offset 0 fails with EIO: a data file that cannot be read
    if (access("/proc/self/mem", R_OK) == 0)
        expect_exit("io: a data file that fails to read is an error, not 'no examples'", load_prompts_fn,
                    "/proc/self/mem", 1, "/proc/self/mem:1: read error: Input/output error");
    // a line is cut off at the maximum length, not read whole into memory first
    expect_exit("io: --data /dev/zero: line too long, at once", load_prompts_fn, "/dev/zero", 1,
                "/dev/zero:1: line too long (over 4095 characters)");
    expect_exit("io: check /dev/zero: line too long, at once", read_check_fn, "/dev/zero", 1,
                "/dev/zero:1: line too long");
    // a UTF-8 byte-order mark is named, not taken as part of the first prompt or key
    write_bytes(tmp_path("/tmp/grpo_test/bom.txt"), "\xEF\xBB\xBF" "7 3 5>26:\t7*3=21,21+5=26\n", 28);
    expect_exit("io: a data file with a UTF-8 BOM names it", load_prompts_fn,
                (void *)tmp_path("/tmp/grpo_test/bom.txt"), 1, "bom.txt:1: UTF-8 byte-order mark");
    static CmdCall verify_bom = {cmd_verify, "/tmp/grpo_test/bom.txt"};
    expect_exit("io: verify input with a UTF-8 BOM names it", cmd_call_fn, &verify_bom, 1,
                "bom.txt:1: UTF-8 byte-order mark");
}

// A command's hint for an allocation that fails names only options that command has.
static void oom_fn(void *arg) {
    unsigned mask = *(const unsigned *)arg;
    char name[] = "cmd", *argv[2] = {name, NULL};
    Options o;
    default_options(&o);
    parse_options(1, argv, mask, &o, "cmd", "");
    mallocCheck((size_t)1 << 62);
}

/* The hostile pass's cases, on the program as a user runs it: no output over an input (by any
   spelling or link), temporary files that follow no link, standard input read once, a NUL in a
   name, terminal escapes shown as \xHH, a prompt-only file's budget note, a finished run kept. */
// p made absolute (the tests below cd into the temporary directory); a rotating buffer of four
static const char *abs_path(const char *p) {
    static char buf[4][4096];
    static int k = 0;
    k = (k + 1) % 4;
    if (!realpath(p, buf[k])) snprintf(buf[k], sizeof buf[k], "%s", p);
    return buf[k];
}

static int sh_run(char *out, size_t cap, const char *fmt, ...) {
    static char line[4096];
    va_list ap;
    va_start(ap, fmt);
    line[0] = '(';
    vsnprintf(line + 1, sizeof line - 2, fmt, ap);
    va_end(ap);
    strcat(line, ")");
    return run_binary(line, out, cap);
}

static void test_hostile_inputs(void) {
    static char out[8192];
    const char *G = grpo_bin(), *T = TMPDIR_;
    int rc = sh_run(out, sizeof out, "cd %s && mkdir -p hp && head -12 %s/tests/fixtures/val_small.txt > hp/v.txt && "
                    "ln -sf v.txt hp/link.txt && %s sft --layers 1 --heads 1 --channels 16 --steps 2 --eval-every 0 "
                    "--val-data hp/v.txt --train-data hp/v.txt --run-dir hp/sft", T, abs_path("."), abs_path(G));
    check(rc == 0, "hostile: a tiny SFT model for the cases below", "exit %d: %.200s", rc, out);
    // --html over --val-data, directly and through a link: refused, the file intact
    rc = sh_run(out, sizeof out, "cd %s && %s sample --model hp/sft/model.bin --val-data hp/v.txt --html hp/v.txt", T,
                abs_path(G));
    int rc2 = sh_run(out + 4096, 4096, "cd %s && %s sample --model hp/sft/model.bin --val-data hp/v.txt --html "
                     "./hp/link.txt; head -12 %s/tests/fixtures/val_small.txt | cmp -s - hp/v.txt && echo intact",
                     T, abs_path(G), abs_path("."));
    check(rc == 2 && strstr(out, "--html hp/v.txt: that is the --val-data file") && rc2 == 0 &&   // (head's)
          strstr(out + 4096, "./hp/link.txt: it is a link") && strstr(out + 4096, "\nintact"),
          "hostile: sample --html naming its --val-data (or a link to it) is refused, the file kept",
          "exit %d, %d: %.150s | %.150s", rc, rc2, out, out + 4096);
    // a link planted under the page's temporary name (this shell's pid, which exec keeps): not followed
    rc = sh_run(out, sizeof out, "cd %s && printf keep > hp/victim && sh -c 'for n in 0 1 2 3; do ln -s victim "
                "hp/page.html.tmp.$$.$n; done; ln -s victim hp/page.html.tmp.$$; exec %s sample --model "
                "hp/sft/model.bin --val-data hp/v.txt --group-size 4 --html hp/page.html' >/dev/null 2>&1; "
                "cat hp/victim; echo; head -c 15 hp/page.html", T, abs_path(G));
    check(rc == 0 && !strncmp(out, "keep\n<!DOCTYPE html>", 20),
          "hostile: links planted under --html's temporary names are not followed", "exit %d: %.100s", rc, out);
    // two inputs that are both standard input; a NUL byte in --token-names; escapes in a message
    rc = sh_run(out, sizeof out, "cd %s && cat %s/notes/examples/worked_example.txt | %s check - --token-names "
                "/dev/stdin --html hp/o.html", T, abs_path("."), abs_path(G));
    check(rc == 2 && strstr(out, "FILE - and --token-names /dev/stdin: both are standard input"),
          "hostile: check - --token-names /dev/stdin is refused (standard input is read once)", "exit %d: %.150s", rc, out);
    rc = sh_run(out, sizeof out, "cd %s && printf 'a\\nb\\000c\\nd\\n' > hp/nul.txt && %s check "
                "%s/notes/examples/worked_example.txt --token-names hp/nul.txt --html hp/o.html >/dev/null",
                T, abs_path(G), abs_path("."));
    check(rc == 1 && strstr(out, "--token-names hp/nul.txt:2: a NUL byte"),
          "hostile: a NUL byte in --token-names is refused with FILE:LINE", "exit %d: %.150s", rc, out);
    rc = sh_run(out, sizeof out, "cd %s && printf 'group=1 reward=1 tokens=1 \\033]0;PWN\\007\\033[2J=1\\n' > "
                "hp/e.txt && %s check hp/e.txt", T, abs_path(G));
    check(rc != 0 && !strchr(out, 0x1b) && !strchr(out, 0x07) && strstr(out, "\\x1b]0;PWN\\x07\\x1b[2J"),
          "hostile: terminal escapes in a quoted input line are shown as \\xHH, not sent", "exit %d: %.150s", rc, out);
    // a prompt-only file of 5-number problems: the note says the budget cannot be read from it
    rc = sh_run(out, sizeof out, "%s eval --model %s/hp/sft/model.bin --data data/countdown_n5_test.txt --eval-limit 2",
                G, T);
    check(rc == 0 && strstr(out, "data/countdown_n5_test.txt holds prompts only") && strstr(out, "up to 5 numbers"),
          "hostile: eval on 5-number prompts without demonstrations says the budget cannot be read off them",
          "exit %d: %.200s", rc, out);
    // a finished run is not replaced without --overwrite 1
    rc = sh_run(out, sizeof out, "cd %s && %s sft --layers 1 --heads 1 --channels 16 --steps 2 --eval-every 0 "
                "--val-data hp/v.txt --train-data hp/v.txt --run-dir hp/sft", T, abs_path(G));
    rc2 = sh_run(out + 4096, 4096, "cd %s && %s sft --layers 1 --heads 1 --channels 16 --steps 2 --eval-every 0 "
                 "--val-data hp/v.txt --train-data hp/v.txt --run-dir hp/sft --overwrite 1 >/dev/null", T, abs_path(G));
    check(rc == 2 && strstr(out, "--run-dir hp/sft holds a finished run ('hp/sft/model.bin'): give another --run-dir, "
          "or --overwrite 1") && rc2 == 0, "hostile: a finished run is refused unless --overwrite 1", "exit %d, %d: %.200s",
          rc, rc2, out);
    // the second hostile pass: outputs that are no regular file; check -'s input as its --html; links
    // planted as a run's .lock and log; tree's finished run; a line end in a plan; C1 controls; --only
    // twice; a positive log-probability
    rc = sh_run(out, sizeof out, "cd %s && rm -f hp/fifo && mkfifo hp/fifo && %s eval --model hp/sft/model.bin "
                "--data hp/v.txt --eval-limit 2 --completions hp/fifo; test -p hp/fifo && echo still-fifo", T,
                abs_path(G));
    check(strstr(out, "--completions hp/fifo: it is a device, FIFO or socket") && strstr(out, "still-fifo"),
          "hostile: an output that is a FIFO (or device) is refused, not replaced", "%.150s", out);
    rc = sh_run(out, sizeof out, "cd %s && cp %s/notes/examples/worked_example.txt hp/batch.txt && %s check - --html "
                "hp/batch.txt < hp/batch.txt; head -c 5 hp/batch.txt", T, abs_path("."), abs_path(G));
    check(strstr(out, "--html hp/batch.txt: that is the FILE file '-'") && !strstr(out, "<!DOC"),
          "hostile: check - --html naming the file on standard input is refused", "%.150s", out);
    rc = sh_run(out, sizeof out, "cd %s && printf precious > hp/victim2 && mkdir -p hp/s7 hp/s8 && ln -sf ../victim2 "
                "hp/s7/.lock && ln -sf ../victim2 hp/s8/sft.csv && for d in s7 s8; do %s sft --layers 1 --heads 1 "
                "--channels 16 --steps 1 --eval-every 0 --val-data hp/v.txt --train-data hp/v.txt --run-dir hp/$d "
                ">/dev/null 2>&1; echo rc=$?; done; cat hp/victim2", T, abs_path(G));
    check(strstr(out, "rc=1\nrc=2\nprecious") != NULL,
          "hostile: links planted as a run's .lock or log are not followed (the run stops, the target kept)", "%.150s",
          out);
    rc = sh_run(out, sizeof out, "cd %s && %s tree --steps 1 --seeds 1 --run-dir hp/tr >/dev/null && %s tree --steps 1 "
                "--seeds 1 --run-dir hp/tr; echo rc=$?; %s tree --steps 1 --seeds 1 --run-dir hp/tr --overwrite 1 "
                ">/dev/null; echo rc=$?", T, abs_path(G), abs_path(G), abs_path(G));
    check(strstr(out, "--run-dir hp/tr holds an earlier run") && strstr(out, "rc=2\nrc=0"),
          "hostile: tree refuses a finished run's directory unless --overwrite 1", "%.200s", out);
    rc = sh_run(out, sizeof out, "%s compare --quick --study '%s/hp/q\ntouch %s/hp/PWNED #' --plan; ls %s/hp/PWNED", G,
                T, T, T);
    check(strstr(out, "holds a line end") && strstr(out, "No such file"),
          "hostile: compare --plan refuses an argument with a line end (a plan line could run another command)",
          "%.150s", out);
    rc = sh_run(out, sizeof out, "cd %s && printf 'group=1 reward=1 tokens=1 \\302\\2332J=1\\n' > hp/c1.txt && %s "
                "check hp/c1.txt", T, abs_path(G));
    check(rc == 1 && strstr(out, "\\xc2\\x9b2J") && !strstr(out, "\xc2\x9b"),
          "hostile: C1 controls (U+009B) in a message are shown as \\xHH", "exit %d: %.150s", rc, out);
    rc = sh_run(out, sizeof out, "%s compare --only grpo/seed_1 --only=grpo/seed_2", G);
    check(rc == 2 && strstr(out, "--only given twice"), "hostile: compare --only given twice is refused",
          "exit %d: %.150s", rc, out);
    rc = sh_run(out, sizeof out, "cd %s && printf 'group=1 reward=1 tokens=1,2 logp=-0.5,0.5\\ngroup=1 reward=0 "
                "tokens=1\\n' > hp/lp.txt && %s check hp/lp.txt", T, abs_path(G));
    check(rc == 1 && strstr(out, "hp/lp.txt:1: logp's number 2 is 0.5: a log-probability is <= 0"),
          "hostile: a positive log-probability in a check file is refused with FILE:LINE", "exit %d: %.150s", rc, out);
    // the third pass: a single-file output over a file of another kind (a checkpoint); a study path with
    // shell text is quoted where prereg.txt and hints print it; another spelling of the study's path
    rc = sh_run(out, sizeof out, "cd %s && cp hp/sft/model.bin hp/other.bin && %s eval --model hp/sft/model.bin --data "
                "hp/v.txt --eval-limit 2 --completions hp/other.bin; head -c 4 hp/other.bin | od -An -c", T, abs_path(G));
    check(strstr(out, "the file holds something other than what this option writes") && strstr(out, "G   R   P   O"),
          "hostile: --completions over a checkpoint (no input of eval) is refused, the checkpoint kept", "%.200s", out);
    rc = sh_run(out, sizeof out, "%s compare --quick --study '%s/hp/s;touch PWN;' --plan >/dev/null 2>&1; grep -c "
                "\"run-dir '%s/hp/s;touch PWN;/sft'\" '%s/hp/s;touch PWN;/prereg.txt'; %s compare --quick --study "
                "%s//hp/s\\;touch\\ PWN\\;/ --plan 2>/dev/null | wc -l", G, T, T, T, G, T);
    check(!strncmp(out, "1\n", 2) && strstr(out, "\n4\n"),
          "hostile: prereg.txt quotes a study path with shell text; another spelling of the path is the same study",
          "%.200s", out);
    rc = sh_run(out, sizeof out, "%s compare --target-acc -1 --budget -1 2>&1", G);
    check(rc == 2 && !strstr(out, "target-acc") && strstr(out, "--budget"),
          "hostile: compare --target-acc -1, the documented default, is accepted as typed", "exit %d: %.150s", rc, out);
}

static void test_input_messages(void) {
    // -xy: getopt is still inside the argument, so argv[optind - 1] is the one before it
    static CmdCall xy = {cmd_sft, "-xy"};
    expect_exit("usage: '-xy' is named in the message", cmd_call_fn, &xy, 2, "unknown option '-xy'");
    static CmdCall xy2 = {cmd_check, "F --beta 0.1 -xy"};
    expect_exit("usage: '-xy' after other options is named", cmd_call_fn, &xy2, 2, "unknown option '-xy'");
    // options match whole: getopt_long's unique prefixes (--step for --steps) are refused, naming the option
    static CmdCall pre1 = {cmd_train, "--step 10"}, pre2 = {cmd_train, "--ste=10"}, pre3 = {cmd_sft, "--steps 1 --run-di x"};
    expect_exit("usage: a prefix of an option (--step) is refused, naming --steps", cmd_call_fn, &pre1, 2,
                "unknown option '--step' for './grpo train' (did you mean --steps?");
    expect_exit("usage: a prefix with its value (--ste=10) is refused", cmd_call_fn, &pre2, 2, "unknown option '--ste'");
    expect_exit("usage: a prefix after another option (--run-di) is refused", cmd_call_fn, &pre3, 2,
                "unknown option '--run-di' for './grpo sft' (did you mean --run-dir?");
    // a prompt that does not fit with --max-new-tokens is named by FILE:LINE, in train and eval
    GPT tiny;
    build_gpt(&tiny, (GPTConfig){64, VOCAB_SIZE, 1, 1, 8}, 1, 1);
    save_weights_only(tmp_path("/tmp/grpo_test/tiny_msg.bin"), &tiny);
    free_gpt(&tiny);
    static CmdCall train_ctx = {cmd_train, "--max-new-tokens 60 --init /tmp/grpo_test/tiny_msg.bin"};
    expect_exit("usage: train names the too-long prompt's FILE:LINE", cmd_call_fn, &train_ctx, 2,
                "(data/countdown_train.txt:");
    FILE *f = fopenCheck(tmp_path("/tmp/grpo_test/prompts.txt"), "w");
    fprintf(f, "# prompts\n7 3 5>26:\n70 30 50 2>260:\n7 3>21:\n");
    fcloseCheck(f);
    static CmdCall eval_ctx = {cmd_eval, "--max-new-tokens 50 --pass-k 0 --model /tmp/grpo_test/tiny_msg.bin "
                                         "--data /tmp/grpo_test/prompts.txt"};
    expect_exit("usage: eval names the too-long prompt's FILE:LINE", cmd_call_fn, &eval_ctx, 2,
                "prompts.txt:3, the longest prompt");
    // --micro-batch's help: the same gradient up to float rounding (not "changes no gradient")
    static char help[65536];
    char help_cmd[256];
    snprintf(help_cmd, sizeof help_cmd, "%s train --help", grpo_bin());
    int help_rc = run_binary(help_cmd, help, sizeof help);
    const char *mb = line_with(help, "--micro-batch");
    check(help_rc == 0 && strstr(mb, "the same gradient up to float rounding"),
          "help: --micro-batch gives the same gradient up to float rounding", "%s", mb);
    // an empty file has no line 0: its line 1 is named (check's file; a data file)
    write_bytes(tmp_path("/tmp/grpo_test/empty.txt"), "", 0);
    expect_exit("check: an empty file is reported at line 1, not 0", read_check_fn,
                (void *)tmp_path("/tmp/grpo_test/empty.txt"), 1, "empty.txt:1: no completions in file (it is empty)");
    expect_exit("data: an empty data file is reported at line 1, not 0", load_prompts_fn,
                (void *)tmp_path("/tmp/grpo_test/empty.txt"), 1, "empty.txt:1: no examples in file (it is empty)");
    // SFT demonstrations must be what the verifier scores 1; the shipped files are
    f = fopenCheck(tmp_path("/tmp/grpo_test/demo_space.txt"), "w");
    fprintf(f, "7 3 5>26:\t7*3=21,21+5=26\n7 3 5>26:\t7*3=21,21+5=26 \n");
    fcloseCheck(f);
    expect_exit("data: SFT refuses a demonstration with a trailing space", load_sft_data_fn,
                (void *)tmp_path("/tmp/grpo_test/demo_space.txt"), 1,
                "demo_space.txt:2: demonstration does not solve the prompt");
    f = fopenCheck(tmp_path("/tmp/grpo_test/demo_wrong.txt"), "w");
    fprintf(f, "7 3 5>26:\t7*3=21,21+5=27\n");
    fcloseCheck(f);
    expect_exit("data: SFT refuses a demonstration that misses the target", load_sft_data_fn,
                (void *)tmp_path("/tmp/grpo_test/demo_wrong.txt"), 1,
                "demo_wrong.txt:1: demonstration does not solve the prompt");
    expect_exit("data: every demonstration of data/countdown_train.txt verifies", load_sft_data_fn,
                "data/countdown_train.txt", 0, "");
    expect_exit("data: every demonstration of data/countdown_val.txt verifies", load_sft_data_fn,
                "data/countdown_val.txt", 0, "");
    expect_exit("data: the 5-number countdown splits load, have 5 numbers, fit 36 new tokens, are disjoint",
                countdown_n5_data_fn, NULL, 0, "");
    // the out-of-memory hint names only options of the command that ran out
#ifndef TEST_UNDER_ASAN
    static const unsigned masks[8] = {CMD_SFT, CMD_TRAIN, CMD_EVAL, CMD_SAMPLE,
                                      CMD_CHECK, CMD_VERIFY, CMD_TREE, CMD_BENCH};
    static const char *cmds[8] = {"sft", "train", "eval", "sample", "check", "verify", "tree", "bench"};
    for (int c = 0; c < 8; c++) {
        char err[2048];
        int ok = child_stderr(oom_fn, (void *)&masks[c], err, sizeof err) == 1;
        ok = ok && strstr(err, "out of memory") && strstr(err, "hint:");
        char bad[64] = "";
        for (const char *p = strstr(err, "--"); p; p = strstr(p + 2, "--")) {   // each --name in the message
            char opt[48];
            int n = 0;
            while (n < 47 && (isalnum((unsigned char)p[2 + n]) || p[2 + n] == '-')) {
                opt[n] = p[2 + n];
                n++;
            }
            opt[n] = 0;
            int known = 0;
            for (int i = 0; i < NUM_OPTIONS; i++)
                if (!strcmp(OPTIONS[i].name, opt) && (OPTIONS[i].cmds & masks[c])) known = 1;
            if (!known) { snprintf(bad, sizeof bad, "--%s", opt); ok = 0; }
        }
        char name[128], *nl = strstr(err, "hint:");
        snprintf(name, sizeof name, "oom: the hint of './grpo %s' names only its own options", cmds[c]);
        if (nl) nl[strcspn(nl, "\n")] = 0;
        check(ok, name, "%s%s%s", bad, bad[0] ? " is not an option of it; " : "", nl ? nl : err);
    }
#endif
}

// The checkpoint messages for an unknown kind and a vocabulary of the same size.
static void test_checkpoint_messages(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/kind.bin", TMPDIR_);
    GPT a;
    build_gpt(&a, (GPTConfig){16, VOCAB_SIZE, 1, 1, 8}, 1, 3);
    TrainState st = {.step = 3, .rng = {{1, 2, 3, 4}}, .kind = 7};
    save_checkpoint(path, &a, &st, st.step, test_last_good);
    expect_exit("checkpoint: an unknown kind is named as such", load_train_resume_fn, path, 1,
                "unknown checkpoint kind 7 (this build knows sft=1, train=2)");
    save_weights_only(path, &a);
    size_t n;
    unsigned char *buf = (unsigned char *)read_all(path, &n);
    buf[CKPT_HEADER_INTS * 4 + 6] = 'X';   // "<pad>\n<bos>\n...": token 1 becomes "Xbos>"
    reseal_checkpoint(buf, n);
    char bad[300];
    snprintf(bad, sizeof bad, "%s/vocab_same_size.bin", TMPDIR_);
    write_bytes(bad, buf, n);
    expect_exit("checkpoint: a changed vocabulary names the token that differs", load_ckpt_fn, bad, 1,
                "token 1 is 'Xbos>' in the file, '<bos>' here");
    free(buf);
    free_gpt(&a);
}

// ----------------------------------------------------------------------------
// The countdown verifier (cases in tests/verifier_cases.h)

#include "verifier_cases.h"

static void test_verifier(void) {
    int nv = (int)(sizeof verify_cases / sizeof verify_cases[0]), bad = 0;
    for (int i = 0; i < nv; i++) {
        const VerifyCase *c = &verify_cases[i];
        int len = c->len < 0 ? (int)strlen(c->text) : c->len;
        char *buf = (char *)mallocCheck(len > 0 ? len : 1);
        memcpy(buf, c->text, len);
        float r = countdown_verify(c->nums, c->n, c->target, buf, len);
        if (r != c->expect) { printf("      verify case '%s': got %g, want %g\n", c->name, r, c->expect); bad++; }
        free(buf);
    }
    check(bad == 0, "verifier: unit cases (correct and every failure kind)", "%d cases, %d wrong", nv, bad);
    int np = (int)(sizeof prompt_cases / sizeof prompt_cases[0]);
    bad = 0;
    for (int i = 0; i < np; i++) {
        const PromptCase *c = &prompt_cases[i];
        int len = c->len < 0 ? (int)strlen(c->text) : c->len, nums[MAXN], n = -1, target = -1;
        char *buf = (char *)mallocCheck(len > 0 ? len : 1);
        memcpy(buf, c->text, len);
        int rc = countdown_parse_prompt(buf, len, nums, c->max_nums, &n, &target);
        int ok = rc == c->expect_rc && (rc != 0 || (n == c->n && target == c->target && !memcmp(nums, c->nums, n * sizeof(int))));
        if (!ok) { printf("      prompt case '%s' wrong\n", c->name); bad++; }
        free(buf);
    }
    check(bad == 0, "verifier: prompt parser cases", "%d cases, %d wrong", np, bad);
    // the reward wrapper on token ids: <eos> ends the text, special tokens inside make it wrong
    int nums[3] = {7, 3, 5}, toks[32], b2;
    const char *sol = "7*3=21,21+5=26";
    int n = encode(sol, (int)strlen(sol), toks, &b2);
    toks[n] = TOK_EOS;
    float r1 = countdown_reward(nums, 3, 26, toks, n + 1, 0.0f), r2 = countdown_reward(nums, 3, 26, toks, n, 0.0f);
    toks[3] = TOK_PAD;
    float r3 = countdown_reward(nums, 3, 26, toks, n + 1, 0.0f);
    const char *wrong = "7*3=21,21+5=27";
    n = encode(wrong, (int)strlen(wrong), toks, &b2); toks[n] = TOK_EOS;
    float r4 = countdown_reward(nums, 3, 26, toks, n + 1, 0.1f), r5 = countdown_reward(nums, 3, 26, toks, n + 1, 0.0f);
    check(r1 == 1 && r2 == 1 && r3 == 0 && r4 == 0.1f && r5 == 0, "verifier: reward on token ids, <eos>, format reward",
          "%g %g %g %g %g", r1, r2, r3, r4, r5);
}

// ----------------------------------------------------------------------------
// The prefix tree B(G) against a brute-force count

static int brute_lambda(const int *const *tok, const int *len, int k, int i, int t) {
    int c = 0;
    for (int j = 0; j < k; j++) {
        if (len[j] <= t) continue;
        int same = 1;
        for (int u = 0; u <= t && same; u++) same = tok[j][u] == tok[i][u];
        c += same;
    }
    return c;
}

static void test_tree_brute_force(void) {
    Rng rng;
    rng_seed(&rng, 2024, 0);
    int groups = 3000, bad_lambda = 0, bad_nodes = 0, bad_reward = 0, maxk = 64, maxL = 12;
    PrefixTree tree;
    build_prefix_tree_buffers(&tree, maxk);
    int *store = (int *)mallocCheck((size_t)maxk * maxL * sizeof(int));
    int *lam = (int *)mallocCheck((size_t)maxk * maxL * sizeof(int)), *node = (int *)mallocCheck((size_t)maxk * maxL * sizeof(int));
    const int *tok[64];
    int len[64];
    float r[64], a[64];
    for (int g = 0; g < groups; g++) {
        int k = g % 3 == 0 ? 2 : (g % 3 == 1 ? 64 : 2 + rng_int(&rng, 20));
        int alphabet = 2 + rng_int(&rng, 3);
        for (int i = 0; i < k; i++) {
            int *row = store + (size_t)i * maxL;
            tok[i] = row;
            int kind = rng_int(&rng, 6);
            if (i > 0 && kind == 0) {            // duplicate of an earlier completion
                int j = rng_int(&rng, i); len[i] = len[j]; memcpy(row, tok[j], len[j] * sizeof(int));
            } else if (i > 0 && kind == 1) {     // a proper prefix of an earlier one
                int j = rng_int(&rng, i); len[i] = len[j] > 0 ? rng_int(&rng, len[j]) : 0; memcpy(row, tok[j], len[i] * sizeof(int));
            } else if (i > 0 && kind == 2) {     // diverges then re-converges (A B C vs A X C)
                int j = rng_int(&rng, i); len[i] = len[j]; memcpy(row, tok[j], len[j] * sizeof(int));
                if (len[i] > 1) row[rng_int(&rng, len[i])] = 100 + rng_int(&rng, 3);
            } else if (kind == 3) {
                len[i] = 0;                      // empty completion
            } else {
                len[i] = 1 + rng_int(&rng, maxL);
                for (int t = 0; t < len[i]; t++) row[t] = rng_int(&rng, alphabet);
            }
            r[i] = (float)rng_int(&rng, 2);
            a[i] = rng_normal(&rng);
        }
        build_prefix_tree(&tree, tok, len, k, r, a, lam, node, maxL);
        // |λ(i,t)| against the brute-force count
        for (int i = 0; i < k; i++)
            for (int t = 0; t < len[i]; t++)
                if (lam[i * maxL + t] != brute_lambda(tok, len, k, i, t)) bad_lambda++;
        // nodes: one per distinct process set; each position's node has the right size and span
        int distinct = 0;
        for (int i = 0; i < k; i++)
            for (int t = 0; t < len[i]; t++) {
                // (i,t) starts a new process set iff t == 0 or λ(i,t) differs from λ(i,t-1),
                // counted once per set (smallest member index)
                int first = 1;
                for (int j = 0; j < i && first; j++) {
                    if (len[j] <= t) continue;
                    int same = 1;
                    for (int u = 0; u <= t && same; u++) same = tok[j][u] == tok[i][u];
                    if (same) first = 0;
                }
                int changed = t == 0 || brute_lambda(tok, len, k, i, t) != brute_lambda(tok, len, k, i, t - 1);
                distinct += first && changed;
                const ProcessNode *nd = &tree.nodes[node[i * maxL + t]];
                if (nd->size != lam[i * maxL + t] || t < nd->start || t >= nd->end) bad_nodes++;
                double rs = 0, as = 0, amax = 0; int m = 0;
                for (int j = 0; j < k; j++) {
                    if (len[j] <= t) continue;
                    int same = 1;
                    for (int u = 0; u <= t && same; u++) same = tok[j][u] == tok[i][u];
                    if (same) { rs += r[j]; as += a[j]; amax = fmax(amax, fabs(a[j])); m++; }
                }
                // means of float members, taken in double and rounded once: <= u/2 of the
                // members' size (rewards 0 or 1; advantages up to amax)
                int bad_r = fabs(nd->step_reward - rs / m) > TOL_FEW;
                int bad_a = fabs(nd->step_advantage - as / m) > TOL_FEW * amax;
                if (bad_r || bad_a) bad_reward++;
            }
        if (distinct != tree.num_nodes) bad_nodes++;
    }
    check(bad_lambda == 0, "tree: |λ(i,t)| == brute-force count", "%d groups (k = 2..64, duplicates, prefixes, "
          "re-convergence, empty), %d mismatches", groups, bad_lambda);
    check(bad_nodes == 0, "tree: one node per distinct process set, spans and sizes", "%d mismatches", bad_nodes);
    check(bad_reward == 0, "tree: step reward R̂ and step advantage A_λ == member means", "%d mismatches", bad_reward);
    free(store); free(lam); free(node); free_prefix_tree(&tree);
}

// builds the tree of completions given as strings (one char = one token; '$' = <eos>)
static int tree_of_strings(PrefixTree *tree, const char **s, int k, int *lam, int *node, int stride,
                           const float *r, const float *a) {
    static int store[64][64];
    const int *tok[64];
    int len[64];
    for (int i = 0; i < k; i++) {
        len[i] = (int)strlen(s[i]);
        for (int t = 0; t < len[i]; t++) store[i][t] = s[i][t] == '$' ? TOK_EOS : s[i][t];
        tok[i] = store[i];
    }
    float zr[64] = {0}, za[64] = {0};
    return build_prefix_tree(tree, tok, len, k, r ? r : zr, a ? a : za, lam, node, stride);
}

static int row_equals(const int *row, const int *want_, int n) { return same_ints("|λ| along it", row, want_, n); }

static void test_tree_cases(void) {
    PrefixTree tree;
    build_prefix_tree_buffers(&tree, 8);
    int lam[8 * 16], node[8 * 16];
    const char *g1[] = {"ABC$", "ABD$", "AE$"};
    tree_of_strings(&tree, g1, 3, lam, node, 16, NULL, NULL);
    int w1[] = {3, 2, 1, 1}, w3[] = {3, 1, 1};
    check(row_equals(lam, w1, 4) && row_equals(lam + 16, w1, 4) && row_equals(lam + 32, w3, 3),
          "tree: A B C <eos> / A B D <eos> / A E <eos> -> [3,2,1,1] [3,2,1,1] [3,1,1]", "%d nodes", tree.num_nodes);
    const char *g2[] = {"AB$", "AB$", "C$"};
    tree_of_strings(&tree, g2, 3, lam, node, 16, NULL, NULL);
    int d1[] = {2, 2, 2}, d3[] = {1, 1};
    check(row_equals(lam, d1, 3) && row_equals(lam + 16, d1, 3) && row_equals(lam + 32, d3, 2) && tree.num_nodes == 2,
          "tree: duplicates A B <eos> x2 + C <eos> -> [2,2,2] [2,2,2] [1,1]", "%d nodes", tree.num_nodes);
    const char *g3[] = {"ABC", "AXC"};
    tree_of_strings(&tree, g3, 2, lam, node, 16, NULL, NULL);
    int rc[] = {2, 1, 1};
    check(row_equals(lam, rc, 3) && row_equals(lam + 16, rc, 3), "tree: re-convergence A B C / A X C shares only A", "");
    const char *g4[] = {"", "AB", "A"};
    tree_of_strings(&tree, g4, 3, lam, node, 16, NULL, NULL);
    int p1[] = {2, 1}, p2[] = {2};
    check(row_equals(lam + 16, p1, 2) && row_equals(lam + 32, p2, 1) && tree.num_nodes == 2,
          "tree: empty completion and a prefix of another", "%d nodes", tree.num_nodes);
    free_prefix_tree(&tree);
}

// ----------------------------------------------------------------------------
// Objectives: closed-form vectors

static ObjectiveConfig default_obj(void) {
    Options o;
    default_options(&o);
    return o.obj;
}

// compute_advantages works in double and rounds each a_i once to float (<= u/2 of |a_i|); the
// expected values are exact or given to >= 6 digits (<= 5e-8 of S). TOL_FEW; measured at most
// 8.0e-8 of S on all three builds. A wrong std (population for sample) errs by 0.4 of S.
static void test_advantages(void) {
    ObjectiveConfig c = default_obj();
    int st[2] = {0, 4};
    float r1[4] = {1, 1, 1, 1}, a[4];
    compute_advantages(a, r1, 1, st, &c);
    check(a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == 0, "advantage: equal rewards give exactly 0", "%g %g %g %g", a[0], a[1], a[2], a[3]);
    float r07[4] = {0.7f, 0.7f, 0.7f, 0.7f};
    compute_advantages(a, r07, 1, st, &c);
    check(a[0] == 0 && a[3] == 0, "advantage: equal rewards 0.7 give exactly 0", "");
    float r2[4] = {1, 0, 0, 0}, w1[4] = {1.49970f, -0.499900f, -0.499900f, -0.499900f};
    compute_advantages(a, r2, 1, st, &c);
    compare("advantage: [1,0,0,0] default (sample std, eps 1e-4)", a, w1, 4, TOL_FEW, 0.0f);
    c.adv_std = STD_NONE;
    float w2[4] = {0.75f, -0.25f, -0.25f, -0.25f};
    compute_advantages(a, r2, 1, st, &c);
    compare("advantage: [1,0,0,0] with no std", a, w2, 4, TOL_FEW, 0.0f);
    c = default_obj(); c.adv_eps = 0.0f;
    int st2[2] = {0, 2};
    float r3[2] = {1, 0}, w3[2] = {0.70710678f, -0.70710678f}, w4[2] = {1, -1};
    compute_advantages(a, r3, 1, st2, &c);
    compare("advantage: {1,0} sample std -> ±0.7071", a, w3, 2, TOL_FEW, 0.0f);
    c.adv_std = STD_POPULATION;
    compute_advantages(a, r3, 1, st2, &c);
    compare("advantage: {1,0} population std -> ±1", a, w4, 2, TOL_FEW, 0.0f);
    // Σ a = 0 within each group; batch scope uses one std for all groups
    c = default_obj();
    Rng rng; rng_seed(&rng, 9, 0);
    float rr[40], aa[40]; int st4[5];
    equal_groups(st4, 4, 10);
    for (int i = 0; i < 40; i++) rr[i] = rng_uniform(&rng);
    compute_advantages(aa, rr, 4, st4, &c);
    // each a_i is rounded once (<= u/2 of |a_i|) and summed here in double, so |Σ a| <= u/2 ·
    // Σ|a|: measured 1.4e-8 of Σ|a|. Subtracting the batch mean instead of the group's: 0.1.
    double worst = 0;
    for (int g = 0; g < 4; g++) {
        double s = 0, sa = 0;
        for (int i = 0; i < 10; i++) {
            s += aa[g * 10 + i];
            sa += fabs(aa[g * 10 + i]);
        }
        worst = fmax(worst, fabs(s) / sa);
    }
    check(worst <= TOL_FEW, "advantage: Σ_i a_i = 0 within every group",
          "max |Σ a| = %.2e of Σ|a| (tol 1e-06)", worst);
    c.adv_std_scope = SCOPE_BATCH;
    compute_advantages(aa, rr, 4, st4, &c);
    double m0 = 0, all = 0, ss = 0;
    for (int i = 0; i < 40; i++) all += rr[i];
    all /= 40;
    for (int i = 0; i < 40; i++) ss += (rr[i] - all) * (rr[i] - all);
    for (int i = 0; i < 10; i++) m0 += rr[i];
    m0 /= 10;
    float expect = (float)((rr[0] - m0) / (sqrt(ss / 39) + 1e-4));
    compare("advantage: batch scope (group mean, batch std)", aa, &expect, 1, TOL_FEW, 0.0f);
}

// Runs the objective on completions of given lengths with one advantage each; fills dlogp.
static double run_objective(const ObjectiveConfig *c, int N, const int *len, const float *adv, const float *ratio,
                            float *dlogp_out) {
    float coef[16];
    loss_agg_coef(coef, len, N, c);
    double loss = 0;
    for (int i = 0; i < N; i++) {
        float lp[64], lo[64], at[64], w[64], ct[64];
        for (int t = 0; t < len[i]; t++) { lp[t] = -1.0f; lo[t] = -1.0f - logf(ratio ? ratio[i] : 1.0f); at[t] = adv[i]; w[t] = 1; ct[t] = coef[i]; }
        TokenLossOut out = {dlogp_out + i * 64, NULL, NULL, NULL};
        loss += grpo_token_loss(c, len[i], lp, lo, NULL, at, w, ct, &out);
    }
    return loss;
}

static void test_aggregation(void) {
    ObjectiveConfig c = default_obj();
    int len[2] = {3, 7};
    float adv[2] = {1, -1}, d[128];
    const char *names[4] = {"token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"};
    float want_[4] = {0.4f, 0.0f, 2.0f, 0.25f};
    c.max_new_tokens = 8;
    for (int m = 0; m < 4; m++) {
        c.loss_agg = m;
        float loss = (float)run_objective(&c, 2, len, adv, NULL, d);
        char name[96];
        snprintf(name, sizeof name, "loss-agg: lengths 3,7 adv ±1 ratio 1: %s = %g", names[m], want_[m]);
        // the loss sums 10 token terms c_i·A·ratio (|A| = 1, ratio 1), each from a few float
        // roundings, in double; S >= 1, the size of the terms (seq-mean-token-mean cancels to
        // 0). Measured 7.5e-9. A wrong normaliser errs by >= 0.1.
        compare(name, &loss, &want_[m], 1, TOL_FEW, 1.0f);
        if (m == 1) check(isfinite(d[0]) && isfinite(d[64]) && d[0] != 0.0f && d[64] != 0.0f,
                          "loss-agg: seq-mean-token-mean loss 0 with non-zero gradient", "dloss/dlogp %g, %g", d[0], d[64]);
    }
    // the coefficients themselves: token-mean 1/Σlen, seq-mean-token-mean 1/(N len_i),
    // seq-mean-token-sum 1/N, seq-mean-token-sum-norm 1/(N max_new_tokens)
    float got[8], want_c[8] = {0.1f, 0.1f, 1.0f / 6, 1.0f / 14, 0.5f, 0.5f, 1.0f / 16, 1.0f / 16};
    for (int m = 0; m < 4; m++) { c.loss_agg = m; loss_agg_coef(got + 2 * m, len, 2, &c); }
    // one division each, rounded once (<= u/2); measured 0.
    compare("loss-agg: coefficients c_i of every mode (lengths 3, 7)", got, want_c, 8, TOL_FEW, 0.0f);
}

static void test_kl_and_clip(void) {
    ObjectiveConfig c = default_obj();
    c.beta = 1.0f;
    float lp = -1.0f, ref = -1.5f, adv = 0.0f, w = 1.0f, coef = 1.0f, dl, kl;
    TokenLossOut out = {&dl, NULL, &kl, NULL};
    float loss = (float)grpo_token_loss(&c, 1, &lp, &lp, &ref, &adv, &w, &coef, &out);
    // k3 = e^d − d − 1 and its derivative 1 − e^d at d = ref − logp = −0.5, in double. k3 is a
    // difference of terms of size 1, so S >= 1; a few roundings: measured 0 on all three
    // builds. The k1 estimate (logp − ref = 0.5) instead of k3 errs by 0.39.
    float wk[2] = {(float)(exp(-0.5) + 0.5 - 1.0), (float)(1.0 - exp(-0.5))}, got[2] = {loss, dl};
    compare("kl: k3 at logp -1, ref -1.5: value 0.106531, d/dlogp 0.393469", got, wk, 2, TOL_FEW, 1.0f);
    check(fabsf(kl - wk[0]) <= TOL_FEW, "kl: per-token kl output", "%g", kl);
    c = default_obj();
    c.clip_eps_low = 0.2f; c.clip_eps_high = 0.28f;
    struct { float ratio, A, loss; int grad; } cases[4] = {{1.30f, 1, -1.28f, 0}, {1.30f, -1, 1.30f, 1},
                                                           {0.70f, -1, 0.80f, 0}, {0.70f, 1, -0.70f, 1}};
    for (int i = 0; i < 4; i++) {
        float lpi = logf(cases[i].ratio), old = 0.0f;
        unsigned char clipped;
        TokenLossOut o2 = {&dl, NULL, NULL, &clipped};
        float l = (float)grpo_token_loss(&c, 1, &lpi, &old, NULL, &cases[i].A, &w, &coef, &o2);
        char name[96];
        snprintf(name, sizeof name, "clip: ratio %.2f, A %+g -> loss %+.2f, %s", cases[i].ratio, cases[i].A, cases[i].loss,
                 cases[i].grad ? "gradient" : "no gradient");
        // exp(log ratio) and one product or clip: a few roundings of the term's size ratio·|A|;
        // measured 0. Clipping at 1 + clip-eps-low = 1.2 instead of 1.28 errs by 0.06.
        float err = fabsf(l - cases[i].loss) / cases[i].ratio;
        check(err <= TOL_FEW && ((dl != 0.0f) == cases[i].grad) && clipped == !cases[i].grad, name,
              "loss %g (off by %.1e of ratio·|A|), dloss/dlogp %g", l, err, dl);
    }
}

/* --mask-truncated 1 in training (mark_truncated, grpo_prepare_tokens): one group of 4 with max_new 4, GRPO,
   ratio 1, β 0, so ℓ_{i,t} = −a_i and ∂loss/∂logp_{i,t} = −c_i a_i. Completion 1 is cut at
   max_new without <eos> (truncated); completion 3 also has max_new tokens but ends with
   <eos> (not truncated: TRL's test is the last token). Masked, completion 1 contributes 0 and
   the normalisers see only lengths 3, 2, 4 (Σ 9, N 3):
     token-mean            −(3·1 + 2·0.5 − 4·0.5)/9     = −2/9;  ∂: −1/9, −0.5/9, +0.5/9
     seq-mean-token-mean   −(1 + 0.5 − 0.5)/3           = −1/3;  ∂: −1/9, −0.5/6, +0.5/12
     seq-mean-token-sum    −(3 + 1 − 2)/3               = −2/3;  ∂: −1/3, −0.5/3, +0.5/3
     seq-mean-token-sum-norm −(3 + 1 − 2)/(3·4)         = −1/6;  ∂: −1/12, −0.5/12, +0.5/12
   Unmasked (the default), token-mean is −(3 − 4 + 1 − 2)/13 = 2/13. */
static void test_mask_truncated(void) {
    Options o;
    default_options(&o);
    GRPOConfig cfg = grpo_config_from_options(&o);
    cfg.obj.objective = OBJ_GRPO;
    cfg.obj.max_new_tokens = 4;
    const int k = 4, MN = 4;
    GroupBatch g;
    build_group_batch(&g, 1, k, MN, k, 32);
    const char *comps[4] = {"12$", "1234", "5$", "567$"};
    float adv[4] = {1.0f, -1.0f, 0.5f, -0.5f};
    for (int i = 0; i < k; i++) {
        int n = (int)strlen(comps[i]);
        for (int t = 0; t < n; t++) {
            g.comp[i * MN + t] = comps[i][t] == '$' ? TOK_EOS : char_to_token(comps[i][t]);
            g.lambda_size[i * MN + t] = 1;
        }
        g.clen[i] = n;
        g.advantage[i] = adv[i];
    }
    mark_truncated(&g);   // as sample_group does after sampling: completion 1 only
    const char *names[4] = {"token-mean", "seq-mean-token-mean", "seq-mean-token-sum",
                            "seq-mean-token-sum-norm"};
    float want_loss[4] = {-2.0f / 9, -1.0f / 3, -2.0f / 3, -1.0f / 6};
    float want_d[4][4] = {{-1.0f / 9, 0.0f, -0.5f / 9, 0.5f / 9},
                          {-1.0f / 9, 0.0f, -0.5f / 6, 0.5f / 12},
                          {-1.0f / 3, 0.0f, -0.5f / 3, 0.5f / 3},
                          {-1.0f / 12, 0.0f, -0.5f / 12, 0.5f / 12}};
    for (int mask = 1; mask >= 0; mask--)
        for (int m = 0; m < 4; m++) {
            if (!mask && m > 0) break;          // unmasked: token-mean, the default, is enough here
            cfg.mask_truncated = mask;
            cfg.obj.loss_agg = m;
            UpdateStats us;
            grpo_prepare_tokens(&g, &cfg, &us);
            float lp[4] = {-1.0f, -1.0f, -1.0f, -1.0f}, dl[16] = {0}, got_d[4];
            double loss = 0.0;
            for (int i = 0; i < k; i++) {
                TokenLossOut out = {dl + i * MN, NULL, NULL, NULL};
                size_t row = (size_t)i * MN;
                loss += grpo_token_loss(&cfg.obj, g.clen[i], lp, lp, NULL, g.adv_tok + row, g.weight + row,
                                        g.coef + row, &out);
            }
            int same_in_row = 1;                // one ∂ per completion: every token of it alike
            for (int i = 0; i < k; i++) {
                got_d[i] = dl[i * MN];
                for (int t = 1; t < g.clen[i]; t++) same_in_row &= dl[i * MN + t] == dl[i * MN];
            }
            float got_loss = (float)loss, unmasked = 2.0f / 13;
            char name[128];
            if (mask) {
                snprintf(name, sizeof name, "mask-truncated: %s loss, the truncated one out of N", names[m]);
                compare(name, &got_loss, &want_loss[m], 1, 1e-6f, 0.1f);
                snprintf(name, sizeof name, "mask-truncated: %s dloss/dlogp, 0 on the truncated", names[m]);
                compare(name, got_d, want_d[m], 4, 1e-6f, 0.01f);
                snprintf(name, sizeof name, "mask-truncated: %s, one dloss/dlogp per completion", names[m]);
                check(same_in_row, name, "");
            } else {
                compare("mask-truncated 0 (default): the truncated completion is trained, token-mean 2/13",
                        &got_loss, &unmasked, 1, 1e-6f, 0.1f);
            }
        }
    free_group_batch(&g);
}

// The paper's worked example (notes/paper.md): six completions, letters are tokens.
static const char *WE[6] = {"ABCD", "ABEFHI", "JKLM", "JKLNQST", "JKLNQU", "VWYZ"};
static const float WE_R[6] = {0.5f, 0.5f, 1.0f, 0.0f, 0.0f, 0.5f};

static void test_worked_example(void) {
    ObjectiveConfig c = default_obj();
    c.adv_eps = 0.0f;   // the paper's numbers are without eps
    float a[6];
    int st[2] = {0, 6};
    compute_advantages(a, WE_R, 1, st, &c);
    // the paper's values, to 6 decimals: ±5e-7, 3.2e-7 of S = 1.55, plus one rounding (u/2):
    // 2e-6 is 5x that; measured 2.3e-7 of S. A population std instead of the sample std
    // errs by 0.09 of S.
    float wa[6] = {0.221404f, 0.221404f, 1.549826f, -1.107019f, -1.107019f, 0.221404f};
    compare("worked example: advantages", a, wa, 6, 2e-6f, 0.0f);
    PrefixTree tree;
    build_prefix_tree_buffers(&tree, 6);
    int lam[6 * 8], node[6 * 8], len[6], total = 0;
    tree_of_strings(&tree, WE, 6, lam, node, 8, WE_R, a);
    for (int i = 0; i < 6; i++) { len[i] = (int)strlen(WE[i]); total += len[i]; }
    int jk[7] = {3, 3, 3, 2, 2, 1, 1}, ab[4] = {2, 2, 1, 1};
    check(row_equals(lam + 3 * 8, jk, 7) && row_equals(lam, ab, 4) && total == 31,
          "worked example: |λ| along JKLNQST and ABCD, Σ len = 31", "Σ len %d", total);
    // R̂ is a mean of rewards <= 1 rounded once (TOL_FEW of 1); A_λ is checked against the
    // paper's 4 decimals (±5e-5), so to 1e-4.
    const ProcessNode *jkl = &tree.nodes[node[2 * 8 + 0]];
    check(jkl->size == 3 && fabsf(jkl->step_reward - 1.0f / 3) <= TOL_FEW &&
          fabsf(jkl->step_advantage + 0.2214f) <= 1e-4f,
          "worked example: node JKL has R̂ 0.3333, A_λ −0.2214", "R̂ %.4f A %.4f", jkl->step_reward, jkl->step_advantage);
    // net per-token coefficient on a shared step = Σ over members of weight·a (before 1/Σlen)
    for (int obj = 0; obj < 2; obj++) {
        c.objective = obj;
        float net[3] = {0, 0, 0};   // AB (pos 0 of ABCD), JKL (pos 0 of JKLM), NQ (pos 3 of JKLNQST)
        int which[3][2] = {{0, 0}, {2, 0}, {3, 3}};
        for (int q = 0; q < 3; q++) {
            int i0 = which[q][0], t0 = which[q][1], n0 = node[i0 * 8 + t0];
            for (int i = 0; i < 6; i++)
                if (len[i] > t0 && node[i * 8 + t0] == n0) net[q] += lambda_weight(&c, lam[i * 8 + t0]) * a[i];
        }
        // the paper's values, to 4 decimals: ±5e-5, at most 4.5e-5 of S (1.11 for λ-GRPO);
        // 2e-4 is 4x that. Measured 1.7e-5 of S. GRPO's weight 1 in λ-GRPO errs by 1 of S.
        float wg[3] = {0.4428f, -0.6642f, -2.2140f}, wl[3] = {0.2214f, -0.2214f, -1.1070f};
        compare(obj ? "worked example: λ-GRPO net coefficients AB, JKL, NQ" : "worked example: GRPO net coefficients AB, JKL, NQ",
                net, obj ? wl : wg, 3, 2e-4f, 0.0f);
    }
    free_prefix_tree(&tree);
}

// ----------------------------------------------------------------------------
// Objectives through the model: Theorem 1, λ-GRPO identities, micro-batches, sampler

// Fills g (P = 1 group of k) with completions given as strings over the vocabulary
// ('$' = <eos>) for one prompt, their rewards, advantages and trees.
static void fill_group(GroupBatch *g, const int *prompt, int plen, const char **comps, const float *r,
                       const ObjectiveConfig *cfg) {
    for (int i = 0; i < g->N; i++) {
        g->prompt[i] = prompt; g->plen[i] = plen;
        int n = (int)strlen(comps[i]);
        for (int t = 0; t < n; t++) g->comp[(size_t)i * g->max_new + t] = comps[i][t] == '$' ? TOK_EOS : char_to_token(comps[i][t]);
        g->clen[i] = n;
        g->reward[i] = r[i];
    }
    compute_advantages(g->advantage, g->reward, g->num_groups, g->group_start, cfg);
    build_group_trees(g);
}

static GPT test_model(int max_batch, uint64_t seed) {
    GPT m;
    build_gpt(&m, (GPTConfig){32, VOCAB_SIZE, 2, 2, 16}, max_batch, seed);
    Rng rng;
    rng_seed(&rng, seed, 1);
    for (size_t i = 0; i < m.num_parameters; i++) m.params_memory[i] += 0.1f * rng_normal(&rng);
    return m;
}

static const char *GROUP[8] = {"7*3=21,21+5=26$", "7*3=21,21+5=27$", "7*3=21,5+21=26$", "7+3=10$",
                               "7*3=21,21+5=26$", "3*7=21,21+5=26$", "7*", "7+3=10,10*5=50$"};
static const float GROUP_R[8] = {1, 0, 1, 0, 1, 1, 0, 0};

static void test_theorem1_and_lambda(void) {
    Options o;
    default_options(&o);
    GRPOConfig cfg = grpo_config_from_options(&o);
    cfg.obj.objective = OBJ_GRPO; cfg.obj.beta = 0.04f; cfg.temperature = 0.9f;
    int k = 8, MN = 20, prompt[12], bad;
    prompt[0] = TOK_BOS;
    encode("7 3 5>26:", 9, prompt + 1, &bad);
    GPT m = test_model(k, 3), ref = test_model(k, 4);
    GroupBatch g;
    build_group_batch(&g, 1, k, MN, k, 32);
    fill_group(&g, prompt, 10, GROUP, GROUP_R, &cfg.obj);
    size_t P = m.num_parameters;
    float *g1 = (float *)mallocCheck(P * 4), *g2 = (float *)mallocCheck(P * 4);
    UpdateStats us;
    double kl = 0; int clipped = 0;
    // GRPO with outcome advantages a_i
    grpo_prepare_tokens(&g, &cfg, &us);
    float l1 = (float)grpo_loss_backward(&m, &ref, &g, &cfg, 0, NULL, &kl, &clipped);
    memcpy(g1, m.grads_memory, P * 4);
    // the PRM form: every token carries its step advantage A_λ(i,t) (Theorem 1)
    PrefixTree *tr = &g.tree;   // the group's tree is the last one built (P = 1)
    for (int i = 0; i < k; i++)
        for (int t = 0; t < g.clen[i]; t++) g.adv_tok[i * MN + t] = tr->nodes[g.node_of[i * MN + t]].step_advantage;
    float l2 = (float)grpo_loss_backward(&m, &ref, &g, &cfg, 0, NULL, &kl, &clipped);
    memcpy(g2, m.grads_memory, P * 4);
    // Both sides run the same float32 forward; only the advantages on the tokens differ, so the
    // losses differ by the rounding of a token mean of terms A·ratio + β·k3 of size ~1 (|A| <=
    // 1.6 here; the mean cancels to ~0.2): TOL_FEW of S >= 1. Measured 0 on all three builds.
    // The gradients go through the backward with other per-token weights: TOL_BWD of each
    // tensor's max; measured 4.3e-7 / 4.1e-7 / 3.7e-7. A real violation of Theorem 1 (the
    // seq-mean-token-mean check below) differs by 1.07 of the gradient's max.
    compare("theorem 1: GRPO loss with a_i == loss with A_λ(i,t)", &l2, &l1, 1, TOL_FEW, 1.0f);
    compare_params("theorem 1: GRPO gradient with a_i == gradient with A_λ(i,t)", &m, g2, g1, TOL_BWD, 0.0f);
    // the same substitution under per-sequence normalisation does change the gradient
    cfg.obj.loss_agg = AGG_SEQ_MEAN_TOKEN_MEAN;
    grpo_prepare_tokens(&g, &cfg, &us);
    grpo_loss_backward(&m, &ref, &g, &cfg, 0, NULL, &kl, &clipped);
    memcpy(g1, m.grads_memory, P * 4);
    for (int i = 0; i < k; i++)
        for (int t = 0; t < g.clen[i]; t++) g.adv_tok[i * MN + t] = tr->nodes[g.node_of[i * MN + t]].step_advantage;
    grpo_loss_backward(&m, &ref, &g, &cfg, 0, NULL, &kl, &clipped);
    // a real difference, far above rounding: at least 100 TOL_BWD of the gradient's max
    double diff = 0, gmax = 0;
    for (size_t i = 0; i < P; i++) {
        diff = fmax(diff, fabs(g1[i] - m.grads_memory[i]));
        gmax = fmax(gmax, fabs(g1[i]));
    }
    check(diff > 100 * TOL_BWD * gmax,
          "theorem 1: does not hold under seq-mean-token-mean (as the paper says)",
          "max grad diff = %.2e of the gradient's max %.3g (want > 2e-03)", diff / gmax, gmax);
    cfg.obj.loss_agg = AGG_TOKEN_MEAN;
    // λ-GRPO == each node once with A_λ: a representative member carries the node's tokens
    cfg.obj.objective = OBJ_LAMBDA_GRPO; cfg.obj.beta = 0.0f;
    grpo_prepare_tokens(&g, &cfg, &us);
    float l3 = (float)grpo_loss_backward(&m, NULL, &g, &cfg, 0, NULL, &kl, &clipped);
    memcpy(g1, m.grads_memory, P * 4);
    for (int i = 0; i < k; i++)
        for (int t = 0; t < g.clen[i]; t++) {
            const ProcessNode *nd = &tr->nodes[g.node_of[i * MN + t]];
            g.weight[i * MN + t] = nd->member == i ? 1.0f : 0.0f;
            g.adv_tok[i * MN + t] = nd->step_advantage;
        }
    float l4 = (float)grpo_loss_backward(&m, NULL, &g, &cfg, 0, NULL, &kl, &clipped);
    // as for Theorem 1 above; measured 7.5e-9 (loss) and 2.9e-7 / 4.0e-7 / 2.8e-7 (gradient)
    compare("λ-GRPO: loss == each tree node once with A_λ", &l4, &l3, 1, TOL_FEW, 1.0f);
    compare_params("λ-GRPO: gradient == each tree node once with A_λ", &m, m.grads_memory, g1, TOL_BWD, 0.0f);
    // no shared first token: λ-GRPO is GRPO exactly
    const char *distinct[8] = {"7*3=21$", "3*7=21$", "5+3=8$", "1$", "2*", "4$", "6$", "8+$"};
    fill_group(&g, prompt, 10, distinct, GROUP_R, &cfg.obj);
    grpo_prepare_tokens(&g, &cfg, &us);
    float l5 = (float)grpo_loss_backward(&m, NULL, &g, &cfg, 0, NULL, &kl, &clipped);
    memcpy(g1, m.grads_memory, P * 4);
    cfg.obj.objective = OBJ_GRPO;
    grpo_prepare_tokens(&g, &cfg, &us);
    float l6 = (float)grpo_loss_backward(&m, NULL, &g, &cfg, 0, NULL, &kl, &clipped);
    check(l5 == l6 && !memcmp(g1, m.grads_memory, P * 4), "λ-GRPO: equals GRPO exactly when no first token is shared",
          "loss %g vs %g", l5, l6);
    // micro-batches change no gradient
    fill_group(&g, prompt, 10, GROUP, GROUP_R, &cfg.obj);
    cfg.obj.objective = OBJ_LAMBDA_GRPO; cfg.obj.beta = 0.04f; cfg.micro_batch = 0;
    grpo_prepare_tokens(&g, &cfg, &us);
    float l7 = (float)grpo_loss_backward(&m, &ref, &g, &cfg, 0, NULL, &kl, &clipped);
    memcpy(g1, m.grads_memory, P * 4);
    cfg.micro_batch = 3;
    float l8 = (float)grpo_loss_backward(&m, &ref, &g, &cfg, 0, NULL, &kl, &clipped);
    // micro-batches run the forward on 3 sequences at a time (the same per-row dot products,
    // which a kernel may order otherwise for another row count: TOL_FWD of S >= 1 for the
    // loss) and add up the gradients in another order (TOL_BWD). Measured 0 (loss) and
    // 3.4e-7 / 4.8e-7 / 3.4e-7 (gradient).
    compare("micro-batch: loss with micro-batches of 3 == whole step", &l8, &l7, 1, TOL_FWD, 1.0f);
    compare_params("micro-batch: gradient with micro-batches of 3 == whole step", &m, m.grads_memory, g1,
                   TOL_BWD, 0.0f);
    cfg.micro_batch = 0;
    // ratio is exactly 1 at μ = 1 (π_old = detached π_θ)
    int ones = 1;
    for (int i = 0; i < k; i++) for (int t = 0; t < g.clen[i]; t++) ones &= g.ratio[i * MN + t] == 1.0f;
    check(ones, "objective: ratio is exactly 1 at μ = 1", "");
    free(g1); free(g2); free_group_batch(&g); free_gpt(&m); free_gpt(&ref);
}

static void test_sampler_logp(void) {
    int k = 16, MN = 20, prompt[12], bad;
    prompt[0] = TOK_BOS;
    encode("7 3 5>26:", 9, prompt + 1, &bad);
    GPT m = test_model(k, 8);
    GroupBatch g;
    build_group_batch(&g, 1, k, MN, k, 32);
    KVCache kv;
    build_kvcache(&kv, &m.config, k);
    for (int i = 0; i < k; i++) { g.prompt[i] = prompt; g.plen[i] = 10; rng_seed(&g.rngs[i], 77, i); }
    float temp = 0.8f;
    sample_completions(&m, &kv, k, g.prompt, g.plen, MN, temp, 0, g.rngs, NULL, g.comp, g.sample_logp, g.clen);
    policy_logp(&m, &g, 0, k, temp, NULL, g.logp);
    double maxd = 0, S = 0; int distinct_streams = 0, tokens = 0;
    for (int i = 0; i < k; i++) {
        for (int t = 0; t < g.clen[i]; t++) {
            maxd = fmax(maxd, fabs(g.logp[i * MN + t] - g.sample_logp[i * MN + t]));
            S = fmax(S, fabs(g.logp[i * MN + t]));
        }
        tokens += g.clen[i];
        if (i > 0 && (g.clen[i] != g.clen[0] || memcmp(g.comp + i * MN, g.comp, g.clen[0] * 4))) distinct_streams++;
    }
    // the decode step's logits against the full forward's (see kv-cache), / T, then a
    // log-softmax: TOL_FWD of S = max|logp|. Measured 0 on all three builds.
    check(maxd <= TOL_FWD * S, "sampler: log-probs == training forward's (T = 0.8)",
          "%d tokens, max |a−b| = %.2e of scale %.3g (tol 1e-05)", tokens, maxd / S, S);
    check(distinct_streams > 0, "sampler: each completion has its own stream", "%d of %d differ from the first", distinct_streams, k - 1);
    // same seeds, same completions
    int *copy = (int *)mallocCheck((size_t)k * MN * 4);
    memcpy(copy, g.comp, (size_t)k * MN * 4);
    for (int i = 0; i < k; i++) rng_seed(&g.rngs[i], 77, i);
    sample_completions(&m, &kv, k, g.prompt, g.plen, MN, temp, 0, g.rngs, NULL, g.comp, g.sample_logp, g.clen);
    check(!memcmp(copy, g.comp, (size_t)k * MN * 4), "sampler: same streams give the same completions", "");
    // stops at <eos> or max-new-tokens
    int ok = 1;
    for (int i = 0; i < k; i++) {
        int n = g.clen[i];
        ok &= n >= 1 && n <= MN && (g.comp[i * MN + n - 1] == TOK_EOS || n == MN);
        for (int t = 0; t < n - 1; t++) ok &= g.comp[i * MN + t] != TOK_EOS;
    }
    check(ok, "sampler: stops after <eos> or at max-new-tokens", "");
    free(copy); free_kvcache(&kv); free_group_batch(&g); free_gpt(&m);
}

/* ref_sample_row: the reference for one sequence of sample_completions: a KV cache of its
   own, the prompt fed one token per decode step, then one new token per step until <eos> or
   max_new (the sampler before prompt sharing and packing, for one row). */
static void ref_sample_row(GPT *m, const int *prompt, int plen, int max_new, float temp, int greedy, Rng *rng,
                           const unsigned char *allowed, int *comp, float *lp, int *clen) {
    KVCache kv;
    build_kvcache(&kv, &m->config, 1);
    float probs[VOCAB_SIZE];
    int n = 0;
    for (int t = 0; n == 0 || (comp[n - 1] != TOK_EOS && n < max_new); t++) {
        int tok = t < plen ? prompt[t] : comp[n - 1];
        gpt_decode_step(m, &kv, &tok, &t, 1);
        if (t + 1 < plen) continue;
        comp[n] = draw_token(kv.logits, VOCAB_SIZE, temp, greedy, rng, allowed, probs, &lp[n]);
        n++;
    }
    *clen = n;
    free_kvcache(&kv);
}

/* The sampler feeds each distinct prompt once, copies its cache to the other rows with that
   prompt, and drops finished rows from the decode step (the last unfinished row moves into
   their cache slot). A sequence's tokens and log-probs must not depend on that: 19 rows with 4
   prompts of 4 lengths, groups interleaved, rows ending at different steps, sampled together,
   one by one, as one group alone and in reverse order, on 1 and 3 threads, and with
   kv->pack off (no sharing or packing, as on the GPU), all equal bit for bit to ref_sample_row. Bit for bit, not within a tolerance: every row of a decode step is
   computed on its own, in an order that does not depend on the other rows or the row count
   (matmul_forward's comment), and a copied cache holds the very floats that feeding the
   prompt would have written, so equal inputs give equal floats. A copy one position short,
   or a moved row losing its last position, changes the logits by O(1). */
static void test_sampler_batch_independent(void) {
    enum { B = 19, MN = 20 };
    static const char *texts[4] = {"7 3 5>26:", "1 2>3:", "9 9 9 9>81:", "4>4:"};
    static const int which[B] = {0, 1, 0, 2, 0, 3, 1, 1, 2, 0, 0, 2, 1, 3, 0, 2, 1, 0, 0};
    int prompts[4][16], plens[4], bad;
    for (int p = 0; p < 4; p++) {
        prompts[p][0] = TOK_BOS;
        plens[p] = 1 + encode(texts[p], (int)strlen(texts[p]), prompts[p] + 1, &bad);
    }
    const int *pp[B];
    int pl[B];
    for (int b = 0; b < B; b++) {
        pp[b] = prompts[which[b]];
        pl[b] = plens[which[b]];
    }
    GPT m = test_model(B, 21);
    KVCache kv;
    build_kvcache(&kv, &m.config, B);
    unsigned char allowed[VOCAB_SIZE];
    for (int v = 0; v < VOCAB_SIZE; v++) allowed[v] = v == TOK_EOS || v % 5 != 2;
    static int ref[B * MN], comp[B * MN], rlen[B], clen[B];
    static float rlp[B * MN], lp[B * MN];
    Rng rngs[B];
    for (int mode = 0; mode < 3; mode++) {   // sampling at T = 1.3; greedy at 0.9; masked at 1.3
        float temp = mode == 1 ? 0.9f : 1.3f;
        int greedy = mode == 1;
        const unsigned char *mask = mode == 2 ? allowed : NULL;
        for (int b = 0; b < B; b++) {
            Rng r;
            rng_seed(&r, 31 + mode, b);
            ref_sample_row(&m, pp[b], pl[b], MN, temp, greedy, &r, mask, ref + b * MN, rlp + b * MN, &rlen[b]);
        }
        int lens[MN + 1] = {0}, eos_early = 0, distinct = 0;
        for (int b = 0; b < B; b++) {
            lens[rlen[b]] = 1;
            eos_early += rlen[b] < MN;
            distinct += b > 0 && memcmp(ref + b * MN, ref, MN * sizeof(int)) != 0;
        }
        int nlens = 0;
        for (int n = 0; n <= MN; n++) nlens += lens[n];
        // the test needs rows that end at different steps (greedy ones here all run to max_new)
        check(greedy || (nlens >= 3 && eos_early > 0 && eos_early < B && distinct > 0),
              "sampler: the batch-independence test has rows of different lengths",
              "mode %d: %d lengths, %d of %d end before max_new", mode, nlens, eos_early, B);
        for (int variant = 0; variant < 6; variant++) {
            int order[B], n = B, threads = 0;
            for (int b = 0; b < B; b++) order[b] = variant == 3 ? B - 1 - b : b;
            if (variant == 2) {   // the rows of prompt 0 alone
                n = 0;
                for (int b = 0; b < B; b++)
                    if (which[b] == 0) order[n++] = b;
            }
#ifdef _OPENMP
            threads = omp_get_max_threads();
            if (variant == 4) omp_set_num_threads(3);
            if (variant == 3) omp_set_num_threads(1);
#endif
            kv.pack = variant != 5;   // 0: every row keeps its slot (the GPU's way)
            memset(comp, 0xff, sizeof comp);
            memset(lp, 0xff, sizeof lp);
            if (variant == 1) {   // one row per call
                for (int i = 0; i < n; i++) {
                    int b = order[i];
                    rng_seed(&rngs[0], 31 + mode, b);
                    sample_completions(&m, &kv, 1, pp + b, pl + b, MN, temp, greedy, rngs, mask, comp + b * MN,
                                       lp + b * MN, clen + b);
                }
            } else {
                const int *qp[B];
                int ql[B], qc[B * MN], qn[B];
                float qlp[B * MN];
                for (int i = 0; i < n; i++) {
                    qp[i] = pp[order[i]];
                    ql[i] = pl[order[i]];
                    rng_seed(&rngs[i], 31 + mode, order[i]);
                }
                sample_completions(&m, &kv, n, qp, ql, MN, temp, greedy, rngs, mask, qc, qlp, qn);
                for (int i = 0; i < n; i++) {
                    int b = order[i];
                    clen[b] = qn[i];
                    memcpy(comp + b * MN, qc + i * MN, qn[i] * sizeof(int));
                    memcpy(lp + b * MN, qlp + i * MN, qn[i] * sizeof(float));
                }
            }
#ifdef _OPENMP
            omp_set_num_threads(threads);
#endif
            (void)threads;
            int same = 0, first_bad = -1;
            for (int i = 0; i < n; i++) {
                int b = order[i];
                int eq = clen[b] == rlen[b] && !memcmp(comp + b * MN, ref + b * MN, rlen[b] * sizeof(int)) &&
                         !memcmp(lp + b * MN, rlp + b * MN, rlen[b] * sizeof(float));
                same += eq;
                if (!eq && first_bad < 0) first_bad = b;
            }
            static const char *names[6] = {"19 rows together", "one row per call", "one group alone",
                                           "reverse order, 1 thread", "3 threads", "no packing"};
            char name[160];
            snprintf(name, sizeof name, "sampler: %s (%s) == each row alone, bit for bit", names[variant],
                     mode == 0 ? "T = 1.3" : mode == 1 ? "greedy" : "masked");
            check(same == n, name, "%d of %d rows equal; row %d: length %d vs %d", same, n, first_bad,
                  first_bad >= 0 ? clen[first_bad] : 0, first_bad >= 0 ? rlen[first_bad] : 0);
        }
    }
    free_kvcache(&kv);
    free_gpt(&m);
}

/* shared_prompts (which rows the sampler feeds as one prompt) against a brute-force search.
   Rows drawn from prompts of 1 to 8 tokens over 2 token ids, zero past their length, each
   row at its own address (equal content, not pointers, makes rows share); many prompts are
   prefixes of others (equal tokens up to the shorter length: not shared). 3,000 rows from
   60 prompts (long runs of equal prompts); 500 rows, most of them distinct; 400 batches of
   2 rows, a prompt and itself one token longer or not. */
static void test_shared_prompts(void) {
    enum { N = 3000, NP = 2000 };
    static int pool[NP][8], rows[N][8], leader[N];
    static const int *pp[N];
    static int pl[N], plen_of[NP];
    Rng rng;
    rng_seed(&rng, 41, 0);
    for (int p = 0; p < NP; p++) {
        plen_of[p] = 1 + rng_int(&rng, 8);
        for (int t = 0; t < 8; t++) pool[p][t] = t < plen_of[p] ? rng_int(&rng, 2) : 0;
    }
    int pairs_ok = 0;
    for (int run = 0; run < 402; run++) {
        int n = run == 0 ? N : run == 1 ? 500 : 2;
        int np = run == 0 ? 60 : NP;
        for (int b = 0; b < n; b++) {
            int p = rng_int(&rng, np);
            memcpy(rows[b], pool[p], sizeof rows[b]);
            pp[b] = rows[b];
            pl[b] = plen_of[p];
        }
        if (run >= 2) {   // row 1: row 0, or row 0 with one more token (0, as the padding)
            memcpy(rows[1], rows[0], sizeof rows[1]);
            pl[1] = pl[0] + (pl[0] < 8 ? rng_int(&rng, 2) : 0);
        }
        int distinct = shared_prompts(leader, n, pp, pl);
        int ok = 0, want_distinct = 0;
        for (int b = 0; b < n; b++) {
            int first = b;
            for (int a = 0; a < b && first == b; a++)
                if (pl[a] == pl[b] && !memcmp(rows[a], rows[b], pl[b] * sizeof(int))) first = a;
            ok += leader[b] == first;
            want_distinct += first == b;
        }
        if (run < 2)
            check(ok == n && distinct == want_distinct, "sampler: rows with equal prompts share one (brute force)",
                  "%d of %d leaders right, %d distinct (want %d)", ok, n, distinct, want_distinct);
        else
            pairs_ok += ok == n && distinct == want_distinct;
    }
    check(pairs_ok == 400, "sampler: a prompt and its one-token extension are not shared",
          "%d of 400 pairs right", pairs_ok);
}

// sample_completions with max_new = 0: must stop with a message, not write past comp
static void sample_no_budget_fn(void *arg) {
    (void)arg;
    alarm(20);   // without the check it would run on past the buffers: end it as a failure
    GPT m;
    build_gpt(&m, (GPTConfig){16, VOCAB_SIZE, 1, 1, 8}, 1, 1);
    KVCache kv;
    build_kvcache(&kv, &m.config, 1);
    static const int prompt[2] = {TOK_BOS, TOK_BOS};
    const int *pp[1] = {prompt};
    int plen[1] = {2}, comp[1], clen[1];
    float lp[1];
    Rng rng;
    rng_seed(&rng, 1, 1);
    sample_completions(&m, &kv, 1, pp, plen, 0, 1.0f, 0, &rng, NULL, comp, lp, clen);
}

/* Token budgets: a command whose budget leaves no room for a new token is a usage error
   naming the flag (exit 2), never a write past a buffer. bench samples after a fixed 8-token
   prompt, so --context 8 (inside the option's range) left max_new = 0. */
static void test_token_budget(void) {
    static char out[16384];
    char cmd[512];
    const char *tiny = "--layers 1 --heads 1 --channels 8 --batch-size 1";
    snprintf(cmd, sizeof cmd, "%s bench --context 8 %s", grpo_bin(), tiny);
    int rc = run_binary(cmd, out, sizeof out);
    check(rc == 2 && strstr(out, "--context"), "budget: bench --context 8 is a usage error naming --context",
          "exit %d: %.*s", rc, (int)strcspn(out, "\n"), out);
    snprintf(cmd, sizeof cmd, "%s bench --context 9 %s", grpo_bin(), tiny);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 0 && strstr(out, "bench train_tok_s="), "budget: bench --context 9 samples one new token",
          "exit %d", rc);
    expect_exit("budget: sample_completions refuses max_new = 0 itself", sample_no_budget_fn, NULL, 1,
                "max_new");
}

/* eval counts verified answers only: a model that writes one well-formed answer to a
   problem with no solution (1 1 1 1 cannot reach 50) solves 0 of 20, whatever
   --format-reward gives that answer as a reward. */
static void test_eval_counts_verified(void) {
    // SFT memorises a correct answer to 1 1 1 1>4 (SFT refuses demonstrations the verifier
    // rejects); eval asks for target 9 (no solution: four 1s reach at most 4) and gets it back
    const char *train = tmp_path("/tmp/grpo_test/memorise.txt");
    const char *data = tmp_path("/tmp/grpo_test/unsolvable.txt");
    FILE *f = fopenCheck(train, "w");
    for (int i = 0; i < 20; i++) fprintf(f, "1 1 1 1>4:\t1+1=2,2+1=3,3+1=4\n");
    fcloseCheck(f);
    f = fopenCheck(data, "w");
    for (int i = 0; i < 20; i++) fprintf(f, "1 1 1 1>9:\n");
    fcloseCheck(f);
    static char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd, "%s sft --layers 1 --heads 1 --channels 16 --context 32 --batch-size 4 "
             "--steps 150 --lr 1e-2 --eval-every 0 --train-data %s --val-data %s --run-dir %s/memorise",
             grpo_bin(), train, train, TMPDIR_);
    int rc = run_binary(cmd, out, sizeof out);
    char dump[256];
    snprintf(dump, sizeof dump, "%s/memorise/completions.tsv", TMPDIR_);
    snprintf(cmd, sizeof cmd, "%s eval --model %s/memorise/model.bin --data %s --max-new-tokens 20 "
             "--pass-k 4 --format-reward 1 --completions %s", grpo_bin(), TMPDIR_, data, dump);
    if (rc == 0) rc = run_binary(cmd, out, sizeof out);
    // the answers are well formed and end with <eos> (so the format reward applies), and wrong
    int well_formed = 0;
    size_t n = 0;
    char *text = rc == 0 ? (char *)read_all(dump, &n) : NULL;
    for (char *line = text; line && line < text + n; ) {
        char *end = strchr(line, '\n');
        if (!end) break;
        *end = 0;
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (t2) {
            *t2 = 0;
            well_formed += countdown_well_formed(t1 + 1, (int)strlen(t1 + 1)) && atof(t2 + 1) == 1.0;
        }
        line = end + 1;
    }
    free(text);
    check(rc == 0 && well_formed == 20, "eval: the memorised answers are well formed (format reward 1)",
          "exit %d, %d of 20", rc, well_formed);
    const char *result = strstr(out, "eval:") ? strstr(out, "eval:") : out;
    check(rc == 0 && strstr(out, "greedy accuracy 0.0000, pass@4 0.0000"),
          "eval --format-reward 1: accuracy and pass@k count verified answers (0 of 20)", "%.*s",
          (int)strcspn(result, "\n"), result);
}

// ----------------------------------------------------------------------------
// GRPO end to end: a few steps from a tiny SFT checkpoint

static void test_train_end_to_end(void) {
    char args[2048], log[256], sft[256], pa[256], pb[256];
    snprintf(log, sizeof log, "%s/train.log", TMPDIR_);
    snprintf(args, sizeof args, "--layers 2 --heads 2 --channels 32 --batch-size 16 --steps 30 --lr 3e-3 --eval-every 0 "
             "--val-data tests/fixtures/val_small.txt --run-dir %s/tiny_sft", TMPDIR_);
    run_cmd_quiet(cmd_sft, args, log);
    snprintf(sft, sizeof sft, "%s/tiny_sft/model.bin", TMPDIR_);
    const char *common = "--prompts-per-step 2 --group-size 4 --max-new-tokens 24 --eval-every 2 --eval-limit 8 --pass-k 2 "
                         "--val-data tests/fixtures/val_small.txt --test-data tests/fixtures/val_small.txt --beta 0.04 --seed 3";
    snprintf(args, sizeof args, "%s --steps 4 --init %s --run-dir %s/grpo_a", common, sft, TMPDIR_);
    int rc = run_cmd_quiet(cmd_train, args, log);
    snprintf(args, sizeof args, "%s --steps 4 --init %s --run-dir %s/grpo_b --save-every 2", common, sft, TMPDIR_);
    run_cmd_quiet(cmd_train, args, log);
    snprintf(pa, sizeof pa, "%s/grpo_a/model.bin", TMPDIR_);
    snprintf(pb, sizeof pb, "%s/grpo_b/model.bin", TMPDIR_);
    check(rc == 0 && files_equal(pa, pb), "train: same seed gives a bit-identical model", "");
    snprintf(args, sizeof args, "%s --steps 4 --init %s --run-dir %s/grpo_c --resume %s/grpo_b/ckpt.bin", common, sft, TMPDIR_, TMPDIR_);
    run_cmd_quiet(cmd_train, args, log);
    snprintf(pb, sizeof pb, "%s/grpo_c/model.bin", TMPDIR_);
    check(files_equal(pa, pb), "train: resume from the step-2 checkpoint == 4 steps straight", "");
    size_t n;
    char *out = (char *)read_all(log, &n);
    check(strstr(out, "result: test accuracy") != NULL, "train: ends with the result line", "");
    free(out);
    snprintf(pb, sizeof pb, "%s/grpo_a/train.csv", TMPDIR_);
    char *csv = (char *)read_all(pb, &n);
    int lines = 0;
    for (size_t i = 0; i < n; i++) lines += csv[i] == '\n';
    check(lines == 5 && strstr(csv, "mean_lambda"), "train: CSV has one row per step with the tree statistics", "%d lines", lines);
    free(csv);
    // a model whose logits overflow to NaN (finite weights: a NaN weight is refused at load):
    // the run stops with a message and writes nothing
    GPT m;
    load_checkpoint(sft, &m, 1, NULL);
    overflow_logits(&m);
    snprintf(pa, sizeof pa, "%s/nan_model.bin", TMPDIR_);
    save_weights_only(pa, &m);
    free_gpt(&m);
    static char nan_args[2048], nan_out[16384];
    snprintf(nan_args, sizeof nan_args, "%s train %s --steps 2 --max-new-tokens 4 --init %s --run-dir %s/grpo_nan",
             grpo_bin(), common, pa, TMPDIR_);
    int code = run_binary(nan_args, nan_out, sizeof nan_out);
    char *msg = strstr(nan_out, "error:");
    check(code == 1 && msg && strstr(nan_out, "nan"), "train: a NaN loss stops the run with a message", "exit %d: %.*s", code,
          (int)strcspn(msg ? msg : nan_out, "\n"), msg ? msg : nan_out);
    snprintf(pb, sizeof pb, "%s/grpo_nan/model.bin", TMPDIR_);
    struct stat sb;
    check(stat(pb, &sb) != 0, "train: no checkpoint written after a NaN", "");
    // eval --completions: one line per prompt, prompt<TAB>completion<TAB>reward<TAB>eos|no-eos,
    // and the rewards agree with the accuracy it prints
    snprintf(pb, sizeof pb, "%s/eval_completions.tsv", TMPDIR_);
    snprintf(args, sizeof args, "--model %s --data tests/fixtures/val_small.txt --pass-k 0 --completions %s", sft, pb);
    rc = run_cmd_quiet(cmd_eval, args, log);
    out = (char *)read_all(log, &n);
    const char *acc_at = strstr(out, "greedy accuracy ");
    double acc = acc_at ? atof(acc_at + 16) : -1.0;
    free(out);
    Dataset vd;
    load_dataset(&vd, "tests/fixtures/val_small.txt", 64, 0, &TASKS[TASK_COUNTDOWN]);
    csv = (char *)read_all(pb, &n);
    int rows = 0, solved = 0, well_formed = 1;
    for (char *line = csv; line < csv + n; ) {
        char *end = strchr(line, '\n');
        if (!end) { well_formed = 0; break; }
        *end = 0;
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        char *t3 = t2 ? strchr(t2 + 1, '\t') : NULL;
        int eos_column = t3 && (!strcmp(t3 + 1, "eos") || !strcmp(t3 + 1, "no-eos"));
        if (!t1 || !t2 || !eos_column || t1 == line) well_formed = 0;
        else {                              // the reward column is the verifier's verdict on the text
            int nums[MAX_NUMS], nn, target;
            float r = (float)atof(t2 + 1);
            solved += r == 1.0f;
            *t2 = 0;
            if (countdown_parse_prompt(line, (int)(t1 - line), nums, MAX_NUMS, &nn, &target) != 0 ||
                countdown_verify(nums, nn, target, t1 + 1, (int)strlen(t1 + 1)) != r)
                well_formed = 0;
        }
        rows++;
        line = end + 1;
    }
    check(rc == 0 && well_formed && rows == vd.n,
          "eval --completions: one prompt<TAB>completion<TAB>reward<TAB>eos line per prompt",
          "%d lines for %d prompts", rows, vd.n);
    // eval prints the accuracy with 4 decimals: ±5e-5
    check(fabs(acc - (double)solved / vd.n) < 1e-4, "eval --completions: rewards agree with the printed accuracy",
          "accuracy %.4f, %d of %d lines with reward 1", acc, solved, vd.n);
    free(csv); free_dataset(&vd);
}

// ----------------------------------------------------------------------------
// The tree-packed update (--update-layout tree) against the padded one

/* A random batch for the tree-packed tests: P groups of the sizes in `size` (1 included), each
   with its own prompt of its own length (group 1 takes group 0's prompt, as a prompt drawn twice
   does; group 2's prompt is group 0's plus its first completion token, so a completion of group
   0 runs through a prompt row of group 2), completions over three characters and <eos> so that
   members repeat each other: duplicates, shared prefixes, prefixes cut off (one completion a
   prefix of another), re-convergence (another first token, then the same suffix), empty ones
   and ones truncated at max_new. Rewards in {0, 0.5, 1}; advantages and trees as a step makes
   them. prompts holds the prompt tokens (P, 8). */
static void random_pack_batch(GroupBatch *g, int *prompts, int P, const int *size, int max_new, Rng *rng,
                              const ObjectiveConfig *obj) {
    const char alphabet[3] = {'1', '2', '+'};
    int start[16] = {0};
    for (int p = 0; p < P; p++) start[p + 1] = start[p] + size[p];
    build_group_batch_starts(g, P, start, max_new, start[P], 32);
    int first_tok = char_to_token('1');
    for (int p = 0; p < P; p++) {
        int *pr = prompts + p * 8;
        int len = 2 + rng_int(rng, 4);
        pr[0] = TOK_BOS;
        for (int t = 1; t < len; t++) pr[t] = char_to_token(alphabet[rng_int(rng, 3)]);
        if (p == 1) {
            memcpy(pr, prompts, 8 * sizeof(int));
            len = g->plen[0];
        }
        if (p == 2) {   // group 0's prompt followed by the first completion token of group 0
            memcpy(pr, prompts, 8 * sizeof(int));
            len = g->plen[0] + 1;
            pr[len - 1] = first_tok;
        }
        for (int i = start[p]; i < start[p + 1]; i++) {
            g->prompt[i] = pr;
            g->plen[i] = len;
        }
    }
    for (int p = 0; p < P; p++)
        for (int i = start[p]; i < start[p + 1]; i++) {
            int *c = g->comp + (size_t)i * max_new;
            int n = 0, kind = rng_int(rng, 6);
            int other = i > start[p] ? start[p] + rng_int(rng, i - start[p]) : -1;   // an earlier member
            const int *o = other >= 0 ? g->comp_row[other] : NULL;
            int olen = other >= 0 ? g->clen[other] : 0;
            int through = p == 0 && i == start[p] && P > 2;   // runs through group 2's last prompt row
            if (through) kind = 5;
            if (kind == 0 && o) {                         // a duplicate
                memcpy(c, o, olen * sizeof(int));
                n = olen;
            } else if (kind == 1 && o && olen > 0) {      // a prefix of another, cut off (no <eos>)
                n = rng_int(rng, olen);
                memcpy(c, o, n * sizeof(int));
                if (n > 0 && c[n - 1] == TOK_EOS) n--;
            } else if (kind == 2 && o && olen > 1) {      // another first token, then the same suffix
                memcpy(c, o, olen * sizeof(int));
                c[0] = c[0] == first_tok ? char_to_token('2') : first_tok;
                n = olen;
            } else {                                      // a shared stem or not, then random to <eos>
                if (kind == 3 && o) {
                    n = rng_int(rng, olen + 1);
                    memcpy(c, o, n * sizeof(int));
                    if (n > 0 && c[n - 1] == TOK_EOS) n--;
                }
                if (kind == 5) c[n++] = first_tok;
                while (n < max_new) {
                    int x = rng_int(rng, 5);
                    c[n++] = x == 4 ? TOK_EOS : char_to_token(alphabet[x % 3]);
                    if (c[n - 1] == TOK_EOS) break;
                }
                if (through && n < 2) c[n++] = TOK_EOS;   // (position plen is an input only when clen >= 2)
                if (!through && rng_int(rng, 8) == 0) n = 0;   // an empty completion
            }
            g->clen[i] = n;
            g->reward[i] = 0.5f * rng_int(rng, 3);
        }
    mark_truncated(g);
    compute_advantages(g->advantage, g->reward, g->num_groups, g->group_start, obj);
    build_group_trees(g);
}

// the tokens of sequence b of a batch: <bos> prompt completion, position t
static int seq_token(const GroupBatch *g, int i, int t) {
    return t < g->plen[i] ? g->prompt[i][t] : g->comp_row[i][t - g->plen[i]];
}

/* pack_shared_prefix_batch against brute force, on random batches: the row count is the number of distinct
   prefixes of the input positions (0..plen+clen−2 of each sequence with a completion token),
   counted by comparing every prefix with every other; every row's root path spells such a
   prefix, with pos = depth, its parent before it, and its subtree exactly the rows whose path
   runs through it, contiguous; every completion token's edge is the row of its prefix and its
   token; a row's edges are distinct; att_off counts pos + 1 per row. */
static void test_pack_brute_force(void) {
    Rng rng;
    rng_seed(&rng, 77, 1);
    ObjectiveConfig obj = default_obj();
    int bad_count = 0, bad_rows = 0, bad_edges = 0, batches = 300;
    int max_rows = 0, total_rows = 0, total_padded = 0;
    for (int it = 0; it < batches; it++) {
        int P = 1 + rng_int(&rng, 4), size[4], prompts[4 * 8], max_new = 2 + rng_int(&rng, 7);
        for (int p = 0; p < P; p++) size[p] = 1 + rng_int(&rng, 6);
        GroupBatch g;
        random_pack_batch(&g, prompts, P, size, max_new, &rng, &obj);
        int N = g.N;
        SharedPrefixBatch *pk = g.spb;
        int rows = pack_shared_prefix_batch(pk, N, g.prompt, g.plen, g.comp_row, g.clen);
        // brute force: prefix (i, t) is new unless an earlier prefix (i2, t) has the same tokens
        int distinct = 0;
        for (int i = 0; i < N; i++) {
            if (g.clen[i] == 0) continue;
            for (int t = 0; t < g.plen[i] + g.clen[i] - 1; t++) {
                int seen = 0;
                for (int i2 = 0; i2 < i && !seen; i2++) {
                    if (g.clen[i2] == 0 || g.plen[i2] + g.clen[i2] - 1 <= t) continue;
                    int same = 1;
                    for (int u = 0; u <= t && same; u++) same = seq_token(&g, i, u) == seq_token(&g, i2, u);
                    seen = same;
                }
                distinct += !seen;
            }
        }
        bad_count += rows != distinct || pk->rows != rows;
        max_rows = imax(max_rows, rows);
        total_rows += rows;
        total_padded += N * make_batch(g.inputs, g.targets, N, g.prompt, g.plen, g.comp_row, g.clen);
        // structure
        size_t off = 0;
        for (int r = 0; r < rows; r++) {
            int par = pk->parent[r];
            int ok = par < r && (par < 0 ? pk->pos[r] == 0 : pk->pos[r] == pk->pos[par] + 1);
            ok &= pk->att_off[r] == off;
            off += pk->pos[r] + 1;
            for (int r2 = 0; r2 < rows; r2++) {   // r2 in the subtree of r <=> r is on r2's root path
                int through = 0;
                for (int a = r2; a >= 0 && !through; a = pk->parent[a]) through = a == r;
                ok &= through == (r2 >= r && r2 < pk->subtree_end[r]);
            }
            for (int e = pk->edge_start[r]; e < pk->edge_start[r + 1]; e++)
                for (int e2 = e + 1; e2 < pk->edge_start[r + 1]; e2++)
                    ok &= pk->edge_token[e] != pk->edge_token[e2];
            bad_rows += !ok;
        }
        bad_rows += pk->att_size != off || pk->edge_start[rows] != pk->edges;
        // every completion token: its edge's row spells its prefix, its token is the edge's
        for (int i = 0; i < N; i++)
            for (int j = 0; j < g.clen[i]; j++) {
                int e = pk->edge_of[(size_t)i * pk->max_new + j];
                int r = 0;
                while (r < rows && !(e >= pk->edge_start[r] && e < pk->edge_start[r + 1])) r++;
                int t = g.plen[i] - 1 + j;
                int ok = r < rows && pk->pos[r] == t && pk->edge_token[e] == g.comp_row[i][j];
                for (int a = r; ok && a >= 0; a = pk->parent[a])
                    ok = pk->token[a] == seq_token(&g, i, pk->pos[a]);
                bad_edges += !ok;
            }
        free_group_batch(&g);
    }
    check(bad_count == 0, "tree pack: rows == distinct input prefixes (brute force, 300 random batches)",
          "%d batches wrong; %d rows packed of %d padded (%.2f), at most %d in one batch", bad_count,
          total_rows, total_padded, (double)total_rows / total_padded, max_rows);
    check(bad_rows == 0, "tree pack: root paths, pos = depth, preorder subtrees, distinct edges, att_off",
          "%d rows wrong", bad_rows);
    check(bad_edges == 0, "tree pack: each completion token's edge is its prefix's row and its token",
          "%d tokens wrong", bad_edges);
}

/* Tree attention against two references on a random packed batch and random q, k, v, dout:
   (1) attention_forward_ref, the textbook form, on each sequence's root path; (2) the padded
   causal attention (attention_forward / attention_backward, tested against PyTorch) run on
   every sequence's own rows one after the other: the forward of a row equals that of its
   position in any sequence through it, and the backward of Σ_r dout_r · out_r is the sum over
   sequences when each row's dout is given to one sequence only (the first through it) and the
   gradients of a sequence's positions are added to their rows. */
static void test_tree_attention(void) {
    Rng rng;
    rng_seed(&rng, 78, 1);
    ObjectiveConfig obj = default_obj();
    int sizes[4] = {5, 3, 4, 2}, prompts[32], C = 16, NH = 2, C3 = 3 * C;
    GroupBatch g;
    random_pack_batch(&g, prompts, 4, sizes, 8, &rng, &obj);
    SharedPrefixBatch *pk = g.spb;
    int R = pack_shared_prefix_batch(pk, g.N, g.prompt, g.plen, g.comp_row, g.clen);
    size_t AS = pk->att_size;
    float *inp = (float *)mallocCheck((size_t)R * C3 * sizeof(float));
    float *dout = (float *)mallocCheck((size_t)R * C * sizeof(float));
    for (size_t i = 0; i < (size_t)R * C3; i++) inp[i] = rng_normal(&rng);
    for (size_t i = 0; i < (size_t)R * C; i++) dout[i] = rng_normal(&rng);
    float *out = (float *)callocCheck((size_t)R * C, sizeof(float));
    float *out_ref = (float *)callocCheck((size_t)R * C, sizeof(float));
    float *out_seq = (float *)callocCheck((size_t)R * C, sizeof(float));
    float *att = (float *)callocCheck(NH * AS, sizeof(float)), *att_ref = (float *)callocCheck(NH * AS, 4);
    float *datt = (float *)callocCheck(NH * AS, sizeof(float));
    float *dinp = (float *)callocCheck((size_t)R * C3, sizeof(float));
    float *dinp_ref = (float *)callocCheck((size_t)R * C3, sizeof(float));
    spb_attention_forward(out, att, inp, pk, C, NH);
    spb_attention_backward(dinp, datt, dout, inp, att, pk, C, NH);
    // the sequences: rows of sequence i's positions 0..n−2, found by walking from its last edge's row
    int T = 32;
    int *owner = (int *)mallocCheck(R * sizeof(int)), *rows_of = (int *)mallocCheck(T * sizeof(int));
    for (int r = 0; r < R; r++) owner[r] = -1;
    float *x = (float *)mallocCheck((size_t)T * C3 * 4), *y = (float *)mallocCheck((size_t)T * C * 4);
    float *a = (float *)mallocCheck((size_t)NH * T * T * 4);
    float *da = (float *)mallocCheck((size_t)NH * T * T * 4);
    float *dy = (float *)mallocCheck((size_t)T * C * 4), *dx = (float *)mallocCheck((size_t)T * C3 * 4);
    int covered = 0;
    for (int i = 0; i < g.N; i++) {
        if (g.clen[i] == 0) continue;
        int e = pk->edge_of[(size_t)i * pk->max_new + g.clen[i] - 1], r = 0;
        while (!(e >= pk->edge_start[r] && e < pk->edge_start[r + 1])) r++;
        int n = pk->pos[r] + 1;
        for (int u = r; u >= 0; u = pk->parent[u]) rows_of[pk->pos[u]] = u;
        for (int t = 0; t < n; t++) {
            int u = rows_of[t];
            memcpy(x + (size_t)t * C3, inp + (size_t)u * C3, C3 * sizeof(float));
            int mine = owner[u] < 0;
            if (mine) owner[u] = i;
            covered += mine;
            for (int c = 0; c < C; c++) dy[(size_t)t * C + c] = mine ? dout[(size_t)u * C + c] : 0.0f;
        }
        attention_forward(y, a, x, 1, n, C, NH);
        memset(dx, 0, (size_t)n * C3 * sizeof(float));
        attention_backward(dx, da, dy, x, a, 1, n, C, NH);
        for (int t = 0; t < n; t++) {
            int u = rows_of[t];
            if (owner[u] == i) memcpy(out_seq + (size_t)u * C, y + (size_t)t * C, C * sizeof(float));
            for (int c = 0; c < C3; c++) dinp_ref[(size_t)u * C3 + c] += dx[(size_t)t * C3 + c];
        }
        attention_forward_ref(y, a, x, 1, n, C, NH);   // the textbook form on the same root paths
        for (int t = 0; t < n; t++) {
            int u = rows_of[t];
            memcpy(out_ref + (size_t)u * C, y + (size_t)t * C, C * sizeof(float));
            for (int h = 0; h < NH; h++)
                memcpy(att_ref + h * AS + pk->att_off[u], a + ((size_t)h * n + t) * n, (t + 1) * sizeof(float));
        }
    }
    // The forward is the padded attention's arithmetic on the same values: equal bit for bit by
    // construction (measured 0 on all three builds); the textbook reference sums in another order:
    // TOL_FWD of the output's max (K <= 32 terms per sum). The backward adds a row's gradient once
    // per subtree in the tree and once per sequence in the reference: TOL_BWD of the max; measured
    // 1.4e-7 on the three builds. A task that skips loading its root path (keys of other rows) errs
    // by 0.36 of the scale forward and 0.40 backward; a subtree's last row left out of dk by 0.27.
    compare("tree attention: forward == textbook root-path attention", out, out_ref, (size_t)R * C, TOL_FWD,
            0.0f);
    compare("tree attention: weights == textbook root-path softmax", att, att_ref, NH * AS, TOL_FWD, 0.0f);
    compare("tree attention: forward == padded attention on each sequence", out, out_seq, (size_t)R * C,
            TOL_FWD, 0.0f);
    check(covered == R, "tree attention: the sequences cover every row", "%d of %d rows", covered, R);
    compare("tree attention: backward == padded attention_backward summed over sequences", dinp, dinp_ref,
            (size_t)R * C3, TOL_BWD, 0.0f);
    free(inp); free(dout); free(out); free(out_ref); free(out_seq); free(att); free(att_ref); free(datt);
    free(dinp); free(dinp_ref); free(owner); free(rows_of);
    free(x); free(y); free(a); free(da); free(dy); free(dx);
    free_group_batch(&g);
}

// max |a − b| / max(max |b|, scale) over n values (compare's measure, without a check line)
static double rel_err(const float *a, const float *b, size_t n, float scale) {
    double S = scale, d = 0.0;
    for (size_t i = 0; i < n; i++) S = fmax(S, fabs(b[i]));
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return S > 0 ? d / S : d;
}

// compare_params' measure: the worst over the tensors of max |a − b| / max |b over the tensor|
static double param_rel_err(const GPT *m, const float *a, const float *b) {
    double worst = 0.0;
    size_t off = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        worst = fmax(worst, rel_err(a + off, b + off, m->param_sizes[t], 0.0f));
        off += m->param_sizes[t];
    }
    return worst;
}

typedef struct {            // one grpo_loss_backward's outputs, copied out
    double loss, kl;
    int clipped;
    float *grads, *logp, *logp_old, *logp_ref, *ratio, *kl_tok;
    unsigned char *clip_tok;
} LossRun;

static void loss_run(LossRun *out, GPT *m, GPT *ref, GroupBatch *g, const GRPOConfig *cfg, int iter) {
    size_t NT = (size_t)g->N * g->max_new, P = m->num_parameters;
    out->kl = 0.0;
    out->clipped = 0;
    if (iter == 0) {   // what the run must write (iteration 1 reads them)
        memset(g->logp_old, 0, NT * sizeof(float));
        memset(g->logp_ref, 0, NT * sizeof(float));
    }
    memset(g->logp, 0, NT * sizeof(float));
    memset(g->ratio, 0, NT * sizeof(float));
    memset(g->kl, 0, NT * sizeof(float));
    out->loss = grpo_loss_backward(m, ref, g, cfg, iter, NULL, &out->kl, &out->clipped);
    float **dst[6] = {&out->grads, &out->logp, &out->logp_old, &out->logp_ref, &out->ratio, &out->kl_tok};
    const float *src[6] = {m->grads_memory, g->logp, g->logp_old, g->logp_ref, g->ratio, g->kl};
    for (int a = 0; a < 6; a++) {
        size_t n = a == 0 ? P : NT;
        *dst[a] = (float *)mallocCheck(n * sizeof(float));
        memcpy(*dst[a], src[a], n * sizeof(float));
    }
    out->clip_tok = (unsigned char *)mallocCheck(NT);
    memcpy(out->clip_tok, g->clipped, NT);
}

static void free_loss_run(LossRun *r) {
    free(r->grads); free(r->logp); free(r->logp_old); free(r->logp_ref); free(r->ratio); free(r->kl_tok);
    free(r->clip_tok);
}

/* The tree-packed update against the padded one (the reference), through grpo_loss_backward on
   a random batch per configuration (random_pack_batch: groups of 1 to 6, duplicates, prefixes,
   re-convergence, empty and truncated completions, groups with one prompt, a prompt through
   another's completion): both objectives x the 4 aggregations x β in {0, 0.04} x μ in {1, 2} x
   --mask-truncated 0/1 x micro-batches of all / 4 sequences. μ = 2: iteration 0 sets π_old, the
   parameters then move (noise of 0.05: ratios far from 1, some clipped) and iteration 1 runs on
   both. Compared: the loss, every parameter gradient, and per completion token logp, π_old, π_ref,
   ratio, k3 and the clipped flags. One check per configuration. */
/* SFT's tree-packed batch (sft_loss_spb, --update-layout tree) against the padded one
   (sft_loss_padded) on random demonstration batches shaped like countdown's: prompts over a few
   characters (so that the first tokens are shared by many), an example drawn twice (a duplicate
   whose tokens add up at every row), one completion a prefix of another's, and a one-token
   completion. The loss sums the same log-probs in the same order (equal bit for bit by
   construction; TOL_FWD allows another order); the gradient sums a shared row's terms before
   the backward instead of after it: TOL_BWD of each tensor's max, as the update's test. */
static void test_sft_tree_vs_padded(void) {
    Rng rng;
    rng_seed(&rng, 83, 1);
    const char alphabet[4] = {'1', '2', '+', '>'};
    int B = 12, maxT = 32, failed = 0;
    long rows = 0, positions = 0;
    double worst[2] = {0, 0};
    for (int trial = 0; trial < 40; trial++) {
        int prompt[12][32], comp[12][32], plen[12], clen[12];
        const int *pp[12], *cp[12];
        for (int b = 0; b < B; b++) {
            int src = b == 5 ? 2 : b;   // example 5 repeats example 2
            if (src != b) {
                memcpy(prompt[b], prompt[src], sizeof prompt[b]);
                memcpy(comp[b], comp[src], sizeof comp[b]);
                plen[b] = plen[src];
                clen[b] = clen[src];
            } else {
                plen[b] = 2 + rng_int(&rng, 6);
                prompt[b][0] = TOK_BOS;
                for (int t = 1; t < plen[b]; t++) prompt[b][t] = char_to_token(alphabet[rng_int(&rng, 2)]);
                clen[b] = b == 7 ? 1 : 2 + rng_int(&rng, 12);
                for (int j = 0; j < clen[b] - 1; j++) comp[b][j] = char_to_token(alphabet[rng_int(&rng, 4)]);
                comp[b][clen[b] - 1] = TOK_EOS;
            }
            if (b == 9) {   // example 9's completion is a prefix of example 8's, then <eos>
                memcpy(prompt[b], prompt[8], sizeof prompt[b]);
                plen[b] = plen[8];
                clen[b] = 1 + clen[8] / 2;
                memcpy(comp[b], comp[8], sizeof comp[b]);
                comp[b][clen[b] - 1] = TOK_EOS;
            }
            pp[b] = prompt[b];
            cp[b] = comp[b];
            positions += plen[b] + clen[b] - 1;
        }
        GPT m = test_model(B, 600 + trial);
        int *inputs = (int *)mallocCheck((size_t)B * maxT * sizeof(int));
        int *targets = (int *)mallocCheck((size_t)B * maxT * sizeof(int));
        float *logp = (float *)mallocCheck((size_t)B * maxT * sizeof(float));
        float *dlogp = (float *)mallocCheck((size_t)B * maxT * sizeof(float));
        float *grads = (float *)mallocCheck(m.num_parameters * sizeof(float));
        int T = make_batch(inputs, targets, B, pp, plen, cp, clen);
        float lp = (float)sft_loss_padded(&m, inputs, targets, logp, dlogp, B, T);
        memcpy(grads, m.grads_memory, m.num_parameters * sizeof(float));
        SharedPrefixBatch *pk = new_shared_prefix_batch(B, maxT, maxT);
        float lt = (float)sft_loss_spb(&m, pk, B, pp, plen, cp, clen);
        rows += pk->rows;
        double e[2] = {rel_err(&lt, &lp, 1, 1.0f), param_rel_err(&m, m.grads_memory, grads)};
        for (int q = 0; q < 2; q++) worst[q] = fmax(worst[q], e[q]);
        if (!(e[0] <= TOL_FWD) || !(e[1] <= TOL_BWD)) {
            if (failed++ < 3) printf("      trial %d: loss error %.2e, gradient error %.2e\n", trial, e[0], e[1]);
        }
        delete_shared_prefix_batch(pk);
        free(inputs);
        free(targets);
        free(logp);
        free(dlogp);
        free(grads);
        free_gpt(&m);
    }
    check(failed == 0, "sft --update-layout tree == padded: loss and every gradient",
          "40 batches of 12 (duplicate, prefix, 1-token completion), %ld positions in %ld rows; worst loss %.2e "
          "(tolerance %.0e), gradient %.2e of each tensor's max (tolerance %.0e)", positions, rows, worst[0],
          (double)TOL_FWD, worst[1], (double)TOL_BWD);
}

static void test_tree_update_vs_padded(void) {
    Rng rng;
    rng_seed(&rng, 79, 1);
    Options o;
    default_options(&o);
    int sizes[5] = {4, 3, 1, 5, 2}, prompts[40], max_new = 8;
    const char *names[6] = {"loss", "gradient", "logp", "ratio", "k3", "clipped"};
    long clipped_moved = 0, rows = 0, positions = 0;
    double ratio_spread = 0.0;
    for (int c0 = 0; c0 < 8; c0++) {
    int failed = 0;
    double worst[6] = {0};   // loss, gradient, logp (and π_old, π_ref), ratio, k3, clipped flags
    for (int c = c0; c < 2 * 4 * 2 * 2 * 2 * 2; c += 8) {
        GRPOConfig cfg = grpo_config_from_options(&o);
        cfg.obj.objective = c % 2;
        cfg.obj.loss_agg = c / 2 % 4;
        cfg.obj.beta = c / 8 % 2 ? 0.04f : 0.0f;
        int mu = 1 + c / 16 % 2;
        cfg.mask_truncated = c / 32 % 2;
        cfg.micro_batch = c / 64 % 2 ? 4 : 0;
        cfg.obj.max_new_tokens = max_new;
        cfg.temperature = 0.9f;
        GroupBatch g;
        random_pack_batch(&g, prompts, 5, sizes, max_new, &rng, &cfg.obj);
        int micro = cfg.micro_batch ? cfg.micro_batch : g.N;
        rows += pack_shared_prefix_batch(g.spb, g.N, g.prompt, g.plen, g.comp_row, g.clen);
        for (int i = 0; i < g.N; i++) positions += g.clen[i] ? g.plen[i] + g.clen[i] - 1 : 0;
        GPT m = test_model(micro, 300 + c), ref = test_model(micro, 400 + c);
        UpdateStats us;
        grpo_prepare_tokens(&g, &cfg, &us);
        LossRun run[2][2];   // [layout][iteration]
        float *saved = (float *)mallocCheck(m.num_parameters * sizeof(float));
        memcpy(saved, m.params_memory, m.num_parameters * sizeof(float));
        for (int layout = 0; layout < 2; layout++) {
            cfg.update_layout = layout;
            memcpy(m.params_memory, saved, m.num_parameters * sizeof(float));
            loss_run(&run[layout][0], &m, &ref, &g, &cfg, 0);
            if (mu == 2) {   // the parameters move between the iterations (the same move for both layouts)
                Rng move;
                rng_seed(&move, 500 + c, 2);
                for (size_t i = 0; i < m.num_parameters; i++) m.params_memory[i] += 0.05f * rng_normal(&move);
                loss_run(&run[layout][1], &m, &ref, &g, &cfg, 1);
            }
        }
        int ok = 1;
        for (int it = 0; it < mu; it++) {
            LossRun *p = &run[0][it], *t = &run[1][it];
            size_t NT = (size_t)g.N * max_new;
            float lp = (float)p->loss, lt = (float)t->loss;
            // logp: the same arithmetic on the same prefix (bit for bit by construction; measured 0
            // on the three builds); TOL_FWD of max |logp| allows another summation order. ratio and
            // k3 follow from logp (TOL_FWD of S >= 1), the loss from them (TOL_FWD of S >= 1, as the
            // micro-batch test). The gradients add the members' terms at a shared row before the
            // backward instead of after it (another order of the same sums): TOL_BWD of each tensor's
            // max; measured up to 2.1e-6 on the three builds. An edge weight from its last member only errs
            // by 2.9-5.1 of the max, a subtree's last row left out of dk by 0.09-0.3.
            double e_logp = fmax(rel_err(t->logp, p->logp, NT, 0.0f),
                                 rel_err(t->logp_old, p->logp_old, NT, 0.0f));
            double e[6] = {rel_err(&lt, &lp, 1, 1.0f), param_rel_err(&m, t->grads, p->grads), e_logp,
                           rel_err(t->ratio, p->ratio, NT, 1.0f), rel_err(t->kl_tok, p->kl_tok, NT, 1.0f),
                           0.0};
            if (cfg.obj.beta != 0.0f) e[2] = fmax(e[2], rel_err(t->logp_ref, p->logp_ref, NT, 0.0f));
            e[5] = memcmp(t->clip_tok, p->clip_tok, NT) != 0 || t->clipped != p->clipped;
            double tol[6] = {TOL_FWD, TOL_BWD, TOL_FWD, TOL_FWD, TOL_FWD, 0.0};
            for (int q = 0; q < 6; q++) {
                worst[q] = fmax(worst[q], e[q]);
                if (!(e[q] <= tol[q])) {
                    printf("      %s %s β=%g μ=%d mask=%d micro=%d iter %d: %s error %.2e\n",
                           OBJECTIVE_NAMES[cfg.obj.objective], LOSS_AGG_NAMES[cfg.obj.loss_agg], cfg.obj.beta,
                           mu, cfg.mask_truncated, cfg.micro_batch, it, names[q], e[q]);
                    ok = 0;
                }
            }
            if (it == 1) {
                clipped_moved += p->clipped;
                for (size_t j = 0; j < NT; j++) ratio_spread = fmax(ratio_spread, fabs(p->ratio[j] - 1.0f));
            }
        }
        failed += !ok;
        for (int l = 0; l < 2; l++)
            for (int it = 0; it < mu; it++) free_loss_run(&run[l][it]);
        free(saved);
        free_gpt(&m);
        free_gpt(&ref);
        free_group_batch(&g);
    }
    char name[160];
    snprintf(name, sizeof name, "tree update == padded: %s, %s (16 configurations)", OBJECTIVE_NAMES[c0 % 2],
             LOSS_AGG_NAMES[c0 / 2]);
    check(failed == 0, name, "%d failed; worst: loss %.1e, grad %.1e, logp %.1e, ratio %.1e, k3 %.1e", failed,
          worst[0], worst[1], worst[2], worst[3], worst[4]);
    }
    // not vacuous: at μ = 2 ratios far from 1 and tokens clipped; and rows shared
    check(clipped_moved > 0 && ratio_spread > 0.05 && rows < positions,
          "tree update test: ratios != 1 and clipped tokens at μ = 2, rows shared",
          "%ld tokens clipped, max |ratio - 1| %.2f, %ld rows packed of %ld positions", clipped_moved,
          ratio_spread, rows, positions);
}

// ----------------------------------------------------------------------------
// --probe-every: GRPO's and λ-GRPO's update directions (probe_directions)

// cos(a, b), ‖b‖/‖a‖ and ‖a‖ of two gradients (n), in double: the test's own sums
static void grad_cos_ratio(const float *a, const float *b, size_t n, double *cos, double *ratio) {
    double dot = 0.0, na = 0.0, nb = 0.0;
    for (size_t k = 0; k < n; k++) {
        dot += (double)a[k] * b[k];
        na += (double)a[k] * a[k];
        nb += (double)b[k] * b[k];
    }
    *cos = dot / sqrt(na * nb);
    *ratio = sqrt(nb / na);
}

// ‖a − b‖ / ‖b‖ (n values, in double)
static double grad_rel_dist(const float *a, const float *b, size_t n) {
    double d = 0.0, nb = 0.0;
    for (size_t k = 0; k < n; k++) {
        d += ((double)a[k] - b[k]) * ((double)a[k] - b[k]);
        nb += (double)b[k] * b[k];
    }
    return sqrt(d / nb);
}

/* probe_directions against the update's own gradient path. (1) A batch where every |λ(i,t)| = 1
   (each group's completions start with different tokens): both objectives weigh every token 1, so
   g_λ = g_GRPO bit for bit, cosine 1, norm ratio 1, share 0 (β = 0.04: the k3 term too). (2) The
   shared-prefix batches of the tree-update test (random_pack_batch) in 64 configurations (the 4
   aggregations x β 0/0.04 x --mask-truncated 0/1 x micro-batches of all or 4 x the run's objective
   grpo or lambda-grpo, which the probe's values do not depend on): in each --update-layout the
   probe's two gradients equal grpo_loss_backward's at iteration 0 with --objective grpo and
   lambda-grpo in that layout bit for bit (the same arithmetic), its cosine and ratio those of the
   test's own sums of them (to 1e-12: the same sums); across the layouts (other code: shared rows
   computed once) each gradient within TOL_BWD of each tensor's max (the tree path's own tolerance,
   test_tree_update_vs_padded) and the cosine within 2(ε_G + ε_λ), the ratio within
   (ε_G + ε_λ)/(1 − ε_G) of the other's, ε = ‖g_tree − g_padded‖/‖g_padded‖ (for unit vectors u, v
   and their perturbations: |cos' − cos| <= ‖u' − u‖ + ‖v' − v‖ <= 2ε each). The share: the test's count of
   the tokens with |λ| > 1 among those of unmasked completions. The probe leaves the model's
   parameters, its gradient buffer (pointer and contents) and the batch's arrays that the update
   reads (logp, π_old, π_ref, weights, coefficients, advantages, ∂loss/∂logp) as they were. Not
   vacuous: some configuration has cosine < 0.999 and ratio != 1 by > 1e-3. (3) The hook at steps
   every, 2·every: r->t[0..3] move later by exactly the probe's seconds (so spend_budget's
   t[6] − t[0] leaves it out), and at other steps nothing moves. */
static void test_probe_directions(void) {
    Options o;
    default_options(&o);
    // (1) all |λ| = 1
    {
        const char *comps[6] = {"12$", "2+1$", "+$", "1+2$", "21$", "$"};
        const float rewards[6] = {1.0f, 0.0f, 0.5f, 0.0f, 1.0f, 1.0f};
        int starts[3] = {0, 3, 6}, prompt[8] = {TOK_BOS, 0, 0, 0}, max_new = 6, bad;
        encode("1 2>3:", 6, prompt + 1, &bad);
        GroupBatch g;
        build_group_batch_starts(&g, 2, starts, max_new, 6, 32);
        for (int i = 0; i < 6; i++) {
            g.prompt[i] = prompt;
            g.plen[i] = 7;
            int n = (int)strlen(comps[i]);
            for (int t = 0; t < n; t++)
                g.comp[(size_t)i * max_new + t] = comps[i][t] == '$' ? TOK_EOS : char_to_token(comps[i][t]);
            g.clen[i] = n;
            g.reward[i] = rewards[i];
        }
        GRPOConfig cfg = grpo_config_from_options(&o);
        cfg.obj.beta = 0.04f;
        cfg.obj.max_new_tokens = max_new;
        mark_truncated(&g);
        compute_advantages(g.advantage, g.reward, g.num_groups, g.group_start, &cfg.obj);
        build_group_trees(&g);
        int all_one = 1;
        for (int i = 0; i < 6; i++)
            for (int t = 0; t < g.clen[i]; t++) all_one &= g.lambda_size[(size_t)i * max_new + t] == 1;
        GPT m = test_model(6, 901), ref = test_model(6, 902);
        Probe p;
        build_probe(&p, m.num_parameters, g.N, max_new, 1);
        probe_directions(&p, &m, &ref, &g, &cfg, NULL);
        double n0 = 0.0;
        for (size_t k = 0; k < m.num_parameters; k++) n0 += (double)p.grad[0][k] * p.grad[0][k];
        int same = !memcmp(p.grad[0], p.grad[1], m.num_parameters * sizeof(float));
        check(all_one && n0 > 0.0 && same && fabs(p.cos - 1.0) <= 1e-12 && fabs(p.norm_ratio - 1.0) <= 1e-12 &&
              p.share == 0.0, "probe: all |λ| = 1: g_λ = g_GRPO, cosine 1, norm ratio 1, share 0",
              "all |λ| 1: %d, |g|² %.3g, same %d, cos %.15f, ratio %.15f, share %g", all_one, n0, same, p.cos,
              p.norm_ratio, p.share);
        free_probe(&p);
        free_gpt(&m);
        free_gpt(&ref);
        free_group_batch(&g);
    }
    // (2) shared prefixes
    Rng rng;
    rng_seed(&rng, 83, 1);
    int sizes[5] = {4, 3, 1, 5, 2}, prompts[40], max_new = 8, failed = 0, moved = 0;
    double worst_cos = 0.0, worst_ratio = 0.0, min_cos = 1.0, max_dratio = 0.0, max_share = 0.0;
    for (int c = 0; c < 64; c++) {
        GRPOConfig cfg = grpo_config_from_options(&o);
        cfg.obj.loss_agg = c % 4;
        cfg.obj.beta = c / 4 % 2 ? 0.04f : 0.0f;
        cfg.mask_truncated = c / 8 % 2;
        cfg.micro_batch = c / 16 % 2 ? 4 : 0;
        cfg.obj.objective = c / 32;   // the run's objective: the probe's values must not depend on it
        cfg.obj.max_new_tokens = max_new;
        cfg.temperature = 0.9f;
        GroupBatch g;
        random_pack_batch(&g, prompts, 5, sizes, max_new, &rng, &cfg.obj);
        int micro = cfg.micro_batch ? cfg.micro_batch : g.N;
        GPT m = test_model(micro, 910 + c), ref = test_model(micro, 950 + c);
        size_t P = m.num_parameters, NT = (size_t)g.N * max_new;
        UpdateStats us;
        grpo_prepare_tokens(&g, &cfg, &us);   // the update's arrays, as a step has them before the update
        float *own = m.grads_memory;
        for (size_t k = 0; k < P; k++) own[k] = 7.0f;
        float *params = (float *)mallocCheck(P * sizeof(float));
        memcpy(params, m.params_memory, P * sizeof(float));
        float *arrays[7] = {g.logp, g.logp_old, g.logp_ref, g.weight, g.coef, g.adv_tok, g.dlogp};
        float *saved = (float *)mallocCheck(7 * NT * sizeof(float));
        for (int a = 0; a < 7; a++) memcpy(saved + a * NT, arrays[a], NT * sizeof(float));
        Probe p, pt;   // the probe in the padded layout, and in the tree layout
        build_probe(&p, P, g.N, max_new, 1);
        build_probe(&pt, P, g.N, max_new, 1);
        GRPOConfig cfg_tree = cfg;
        cfg.update_layout = LAYOUT_PADDED;
        cfg_tree.update_layout = LAYOUT_TREE;
        probe_directions(&p, &m, &ref, &g, &cfg, NULL);
        probe_directions(&pt, &m, &ref, &g, &cfg_tree, NULL);
        int untouched = m.grads_memory == own && m.grads.wte == own && !memcmp(params, m.params_memory, P * sizeof(float));
        for (size_t k = 0; k < P; k++) untouched &= own[k] == 7.0f;
        for (int a = 0; a < 7; a++) untouched &= !memcmp(saved + a * NT, arrays[a], NT * sizeof(float));
        // the references: grpo_loss_backward at iteration 0, each objective, padded then tree
        float *ref_grad[2][2];   // [layout][objective]
        for (int layout = 0; layout < 2; layout++)
            for (int obj = 0; obj < 2; obj++) {
                GRPOConfig rc = cfg;
                rc.obj.objective = obj;
                rc.update_layout = layout;
                grpo_prepare_tokens(&g, &rc, &us);
                LossRun run;
                loss_run(&run, &m, &ref, &g, &rc, 0);
                ref_grad[layout][obj] = run.grads;
                run.grads = NULL;
                free_loss_run(&run);
            }
        int bitwise = 1;
        for (int o2 = 0; o2 < 2; o2++)
            bitwise &= !memcmp(p.grad[o2], ref_grad[LAYOUT_PADDED][o2], P * sizeof(float)) &&
                       !memcmp(pt.grad[o2], ref_grad[LAYOUT_TREE][o2], P * sizeof(float));
        double cos_pad, ratio_pad, cos_tree, ratio_tree;
        grad_cos_ratio(ref_grad[LAYOUT_PADDED][0], ref_grad[LAYOUT_PADDED][1], P, &cos_pad, &ratio_pad);
        grad_cos_ratio(ref_grad[LAYOUT_TREE][0], ref_grad[LAYOUT_TREE][1], P, &cos_tree, &ratio_tree);
        double e0 = grad_rel_dist(ref_grad[LAYOUT_TREE][0], p.grad[0], P);
        double e1 = grad_rel_dist(ref_grad[LAYOUT_TREE][1], p.grad[1], P);
        double tensor_err = fmax(param_rel_err(&m, ref_grad[LAYOUT_TREE][0], p.grad[0]),
                                 param_rel_err(&m, ref_grad[LAYOUT_TREE][1], p.grad[1]));
        long counted = 0, shared = 0;
        for (int i = 0; i < g.N; i++)
            for (int t = 0; t < g.clen[i]; t++) {
                if (cfg.mask_truncated && g.truncated[i]) continue;
                counted++;
                shared += g.lambda_size[(size_t)i * max_new + t] > 1;
            }
        double share = (double)shared / counted;
        double d_cos = fabs(p.cos - cos_tree), d_ratio = fabs(ratio_tree / p.norm_ratio - 1.0);
        int ok = untouched && bitwise && fabs(p.cos - cos_pad) <= 1e-12 && fabs(p.norm_ratio - ratio_pad) <= 1e-12 &&
                 fabs(pt.cos - cos_tree) <= 1e-12 && fabs(pt.norm_ratio - ratio_tree) <= 1e-12 && pt.share == p.share &&
                 tensor_err <= TOL_BWD && d_cos <= 2.0 * (e0 + e1) + 1e-12 &&
                 d_ratio <= (e0 + e1) / (1.0 - e0) + 1e-12 && p.share == share;
        if (!ok)
            printf("      %s β=%g mask=%d micro=%d: untouched %d, bitwise %d, cos %.9f (padded %.9f, tree %.9f, "
                   "bound %.2e), ratio %.9f (padded %.9f, tree %.9f), tensor err %.2e, share %g (%g)\n",
                   LOSS_AGG_NAMES[cfg.obj.loss_agg], cfg.obj.beta, cfg.mask_truncated, cfg.micro_batch, untouched,
                   bitwise, p.cos, cos_pad, cos_tree, 2.0 * (e0 + e1), p.norm_ratio, ratio_pad, ratio_tree,
                   tensor_err, p.share, share);
        failed += !ok;
        worst_cos = fmax(worst_cos, d_cos);
        worst_ratio = fmax(worst_ratio, d_ratio);
        min_cos = fmin(min_cos, p.cos);
        max_dratio = fmax(max_dratio, fabs(p.norm_ratio - 1.0));
        max_share = fmax(max_share, p.share);
        moved += p.cos < 0.999 && fabs(p.norm_ratio - 1.0) > 1e-3;
        for (int l = 0; l < 2; l++) free(ref_grad[l][0]), free(ref_grad[l][1]);
        free(params);
        free(saved);
        free_probe(&p);
        free_probe(&pt);
        free_gpt(&m);
        free_gpt(&ref);
        free_group_batch(&g);
    }
    check(failed == 0, "probe: shared prefixes (64 configurations): g_GRPO and g_λ == grpo_loss_backward's bit for "
          "bit in each layout, cosine and ratio as the test's sums, across layouts within their bounds; share counted",
          "%d failed; |Δcos| vs tree up to %.1e, |Δratio| %.1e", failed, worst_cos, worst_ratio);
    check(moved > 0 && max_share > 0.0, "probe test: the two objectives' gradients differ (not vacuous)",
          "%d configurations with cos < 0.999 and |ratio - 1| > 1e-3; min cos %.4f, max |ratio - 1| %.4f, "
          "max share %.3f", moved, min_cos, max_dratio, max_share);
    // (3) the hook: the step's clock leaves the probe out
    {
        GroupBatch g;
        random_pack_batch(&g, prompts, 5, sizes, max_new, &rng, &o.obj);
        GPT m = test_model(g.N, 990);
        Probe p;
        build_probe(&p, m.num_parameters, g.N, max_new, 2);
        TrainRun run;
        memset(&run, 0, sizeof run);
        run.policy = &m;
        run.batch = &g;
        run.cfg = grpo_config_from_options(&o);
        run.cfg.obj.max_new_tokens = max_new;
        run.probe = &p;
        TrainState state;
        memset(&state, 0, sizeof state);
        run.state = &state;
        Budget budget;
        memset(&budget, 0, sizeof budget);
        run.budget = &budget;
        StepReport r;
        memset(&r, 0, sizeof r);
        double marks[7] = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 10.0};
        r.step = 3;
        memcpy(r.t, marks, sizeof marks);
        method_token_advantages(&run, &r);
        int quiet = p.step == 0 && !memcmp(r.t, marks, sizeof marks);
        r.step = 4;
        method_token_advantages(&run, &r);
        int shifted = p.step == 4 && p.seconds > 0.0;
        for (int k = 0; k < 7; k++) shifted &= r.t[k] == marks[k] + (k <= 3 ? p.seconds : 0.0);
        spend_budget(&run, &r);
        check(quiet && shifted && budget.seconds == marks[6] - (marks[0] + p.seconds),
              "probe: runs at steps every, 2·every only; the step's marks t[0..3] move by its seconds (not "
              "in the phases or --budget's seconds)", "step 3 quiet %d, step 4 shifted %d (%.4f s), budget %.6f s",
              quiet, shifted, p.seconds, budget.seconds);
        free_probe(&p);
        free_gpt(&m);
        free_group_batch(&g);
    }
}

/* The fields of one CSV line (NUL-separated in place: line is modified); returns their count. */
static int csv_fields(char *line, char **field, int cap) {
    int n = 0;
    for (char *f = line; n < cap; ) {
        field[n++] = f;
        char *comma = strchr(f, ',');
        if (!comma) break;
        *comma = 0;
        f = comma + 1;
    }
    return n;
}

/* probe_log_diff: train.csv of a run without the probe (a) and with it (b): b's header is a's with
   PROBE_CSV_COLUMNS before its last three (entropy, mean_lambda_mixed, lambda_share), and every row holds the same fields but the seconds (t_sample, t_score,
   t_tree, t_update, tok_per_s). Returns 1 when that holds; *probed has bit s set for each step s (< 31)
   whose row holds probe values (the others must have 4 empty cells), *below1 counts those whose
   cosine is < 1. */
static int probe_log_diff(const char *path_a, const char *path_b, int *probed, int *below1, char *why, size_t cap) {
    size_t na, nb;
    char *a = (char *)read_all(path_a, &na), *b = (char *)read_all(path_b, &nb);
    a = (char *)realloc(a, na + 1), b = (char *)realloc(b, nb + 1);
    a[na] = 0, b[nb] = 0;
    *probed = *below1 = 0;
    int ok = 1, row = 0, seconds[64] = {0}, cols = 0;
    char *la = a, *lb = b;
    for (; *la && *lb && ok; row++) {
        char *ea = strchr(la, '\n'), *eb = strchr(lb, '\n');
        if (!ea || !eb) { snprintf(why, cap, "row %d: no newline", row); ok = 0; break; }
        *ea = 0, *eb = 0;
        if (row == 0) {
            char want[1024];
            const char *last = strstr(la, ",entropy,");
            snprintf(want, sizeof want, "%.*s%s%s", last ? (int)(last - la) : 0, la, PROBE_CSV_COLUMNS, last ? last : "");
            if (!last || strcmp(last, ",entropy,mean_lambda_mixed,lambda_share") || strcmp(want, lb)) { snprintf(why, cap, "header '%s'", lb); ok = 0; break; }
            char *f[64];
            cols = csv_fields(la, f, 64);
            for (int k = 0; k < cols; k++)
                seconds[k] = !strncmp(f[k], "t_", 2) || !strcmp(f[k], "tok_per_s");
        } else {
            char *fa[64], *fb[64];
            int ca = csv_fields(la, fa, 64), cb = csv_fields(lb, fb, 64);
            if (ca != cols || cb != cols + 4) { snprintf(why, cap, "row %d: %d and %d fields", row, ca, cb); ok = 0; break; }
            for (int k = 0; k < cols && ok; k++) {
                int kb = k < cols - 3 ? k : k + 4;   // b's last three are after its 4 probe cells
                if (!seconds[k] && strcmp(fa[k], fb[kb])) {
                    snprintf(why, cap, "row %d field %d: %s vs %s", row, k, fa[k], fb[kb]);
                    ok = 0;
                }
            }
            char **pc = fb + cols - 3;   // b's 4 probe cells
            int empty = 0;
            for (int k = 0; k < 4; k++) empty += pc[k][0] == 0;
            if (empty == 0) {
                *probed |= 1 << (row < 31 ? row : 0);
                double cosv = atof(pc[0]), ratio = atof(pc[1]), share = atof(pc[2]);
                if (!(fabs(cosv) <= 1.0 + 1e-9 && ratio > 0.0 && share >= 0.0 && share <= 1.0 && atof(pc[3]) >= 0.0)) {
                    snprintf(why, cap, "row %d: probe values %s %s %s", row, pc[0], pc[1], pc[2]);
                    ok = 0;
                }
                *below1 += cosv < 1.0;
            } else if (empty != 4) { snprintf(why, cap, "row %d: %d of 4 probe cells empty", row, empty); ok = 0; }
        }
        la = ea + 1, lb = eb + 1;
    }
    if (ok && (*la || *lb)) { snprintf(why, cap, "the logs have different row counts"); ok = 0; }
    free(a);
    free(b);
    return ok;
}

/* train --probe-every changes nothing in the run: a tiny SFT model (its completions earn rewards
   that differ within a group, so the gradients are not 0), 3 steps of λ-GRPO and of GRPO (β = 0.04,
   μ = 2, micro-batches of 5) with and without --probe-every 1: the same model.bin byte for byte and
   the same train.csv but for the seconds and the probe's columns (probe_log_diff), every row probed,
   some with cosine < 1; --probe-every 2: only step 2 probed. The test is seen to fail: with the
   probe drawing one number from the run's RNG, or applying an AdamW step with its g_λ
   (probe_test_fault), the models differ. MC-PRM and PPO refuse --probe-every. */
static void test_probe_train(void) {
    char args[2048], log[256], sft[300], pa[300], pb[300], ca[300], cb[300], why[512] = "";
    snprintf(log, sizeof log, "%s/probe.log", TMPDIR_);
    snprintf(args, sizeof args, "--layers 1 --heads 1 --channels 16 --batch-size 16 --steps 200 --lr 1e-2 "
             "--eval-every 0 --threads 1 --val-data tests/fixtures/val_small.txt --run-dir %s/probe_sft", TMPDIR_);
    run_cmd_quiet(cmd_sft, args, log);
    snprintf(sft, sizeof sft, "%s/probe_sft/model.bin", TMPDIR_);
    const char *common = "--threads 1 --steps 3 --prompts-per-step 2 --group-size 6 --max-new-tokens 24 "
                         "--temperature 0.6 --format-reward 0.5 --eval-every 0 --pass-k 0 --test-limit 0 --seed 3 "
                         "--beta 0.04 --num-iterations 2 --micro-batch 5 --val-data tests/fixtures/val_small.txt";
    const char *objectives[2] = {"lambda-grpo", "grpo"};
    for (int ob = 0; ob < 2; ob++) {
        int rc[2];
        for (int probe = 0; probe < 2; probe++) {
            snprintf(args, sizeof args, "%s --objective %s --init %s --run-dir %s/probe_%s_%d%s", common,
                     objectives[ob], sft, TMPDIR_, objectives[ob], probe, probe ? " --probe-every 1" : "");
            rc[probe] = run_cmd_quiet(cmd_train, args, log);
        }
        snprintf(pa, sizeof pa, "%s/probe_%s_0/model.bin", TMPDIR_, objectives[ob]);
        snprintf(pb, sizeof pb, "%s/probe_%s_1/model.bin", TMPDIR_, objectives[ob]);
        snprintf(ca, sizeof ca, "%s/probe_%s_0/train.csv", TMPDIR_, objectives[ob]);
        snprintf(cb, sizeof cb, "%s/probe_%s_1/train.csv", TMPDIR_, objectives[ob]);
        int probed = 0, below1 = 0, same_log = rc[0] == 0 && rc[1] == 0 &&
                                                 probe_log_diff(ca, cb, &probed, &below1, why, sizeof why);
        char name[200];
        snprintf(name, sizeof name, "train --objective %s --probe-every 1: the same model.bin byte for byte, the "
                 "same train.csv but the seconds and the probe's columns", objectives[ob]);
        check(rc[0] == 0 && rc[1] == 0 && files_equal(pa, pb) && same_log && probed == 0xe && below1 > 0, name,
              "exit %d %d, log: %s, steps probed 0x%x, %d with cos < 1", rc[0], rc[1], same_log ? "same" : why,
              probed, below1);
    }
    // every 2 of 3 steps: step 2 only
    snprintf(args, sizeof args, "%s --init %s --run-dir %s/probe_every2 --probe-every 2", common, sft, TMPDIR_);
    int rc = run_cmd_quiet(cmd_train, args, log);
    snprintf(ca, sizeof ca, "%s/probe_lambda-grpo_0/train.csv", TMPDIR_);
    snprintf(cb, sizeof cb, "%s/probe_every2/train.csv", TMPDIR_);
    int probed = 0, below1 = 0, same_log = rc == 0 && probe_log_diff(ca, cb, &probed, &below1, why, sizeof why);
    check(same_log && probed == 1 << 2, "train --probe-every 2: step 2 probed, steps 1 and 3 empty cells",
          "exit %d, log: %s, steps probed 0x%x", rc, same_log ? "same" : why, probed);
    // the test fails when the probe changes the run
    const char *faults[2] = {"draws from the run's RNG", "applies an AdamW step"};
    snprintf(pa, sizeof pa, "%s/probe_lambda-grpo_0/model.bin", TMPDIR_);
    for (int f = 1; f <= 2; f++) {
        probe_test_fault = f;
        snprintf(args, sizeof args, "%s --init %s --run-dir %s/probe_fault%d --probe-every 1", common, sft, TMPDIR_, f);
        rc = run_cmd_quiet(cmd_train, args, log);
        probe_test_fault = 0;
        snprintf(pb, sizeof pb, "%s/probe_fault%d/model.bin", TMPDIR_, f);
        char name[160];
        snprintf(name, sizeof name, "probe test fails when the probe %s: the models differ", faults[f - 1]);
        check(rc == 0 && !files_equal(pa, pb), name, "exit %d", rc);
    }
    // MC-PRM and PPO refuse it
    const char *others[2] = {"mc-prm", "ppo"};
    for (int k = 0; k < 2; k++) {
        static char cmd[2048], out[16384];
        snprintf(cmd, sizeof cmd, "%s train %s --objective %s --probe-every 1 --init %s --run-dir %s/probe_%s",
                 grpo_bin(), common, others[k], sft, TMPDIR_, others[k]);
        int code = run_binary(cmd, out, sizeof out);
        char name[160];
        snprintf(name, sizeof name, "train --objective %s --probe-every 1: a usage error naming the option", others[k]);
        check(code == 2 && strstr(out, "--probe-every 1 applies to --objective grpo|lambda-grpo only"), name,
              "exit %d: %s", code, line_with(out, "probe"));
    }
}


// ----------------------------------------------------------------------------
// ./grpo check against fixtures computed with verl, TRL and the authors' code

#include "test_check.c"

// ----------------------------------------------------------------------------
// Inputs found by fuzzing (tests/fuzz/regressions/), replayed without libFuzzer

#include "fuzz/replay.c"

// ----------------------------------------------------------------------------
// The synthetic binary-tree task (paper §4.3)

static void test_tree_task(void) {
    // reward table: target 0b0110 (L R R L), n = 1 and n = 2
    int target = 6, bad1 = 0, bad2 = 0;
    for (int leaf = 0; leaf < 16; leaf++) {
        float r1 = tree_reward(leaf, target, 1, -1.0f), r2 = tree_reward(leaf, target, 2, -0.5f);
        float w1 = leaf == target ? 1.0f : (leaf < 8 ? -1.0f : 0.7f);            // first token L shared
        float w2 = leaf == target ? 1.0f : ((leaf >> 2) == 1 ? -0.5f : 0.7f);    // first two tokens L R shared
        bad1 += r1 != w1; bad2 += r2 != w2;
    }
    check(bad1 == 0 && bad2 == 0, "tree task: reward table (target +1, n-prefix siblings r_neg, others +0.7)",
          "%d + %d wrong leaves", bad1, bad2);
    int L = char_to_token('L'), R = char_to_token('R');
    int lrrl[4] = {L, R, R, L}, short3[3] = {L, R, R}, junk[4] = {L, R, TOK_EOS, L};
    check(tree_leaf(lrrl, 4) == 6 && tree_leaf(short3, 3) == -1 && tree_leaf(junk, 4) == -1,
          "tree task: leaf index of L R R L is 6; anything else is not a leaf", "");
    // masking: a random model samples only L and R, exactly 4 of them
    GPT m = test_model(64, 12);
    KVCache kv;
    build_kvcache(&kv, &m.config, 64);
    unsigned char allowed[VOCAB_SIZE];
    tree_allowed(allowed);
    int comp[64 * 4], clen[64], bos[1] = {TOK_BOS}, plen[64];
    const int *pp[64];
    float lp[64 * 4];
    Rng rngs[64];
    for (int i = 0; i < 64; i++) { pp[i] = bos; plen[i] = 1; rng_seed(&rngs[i], 5, i); }
    sample_completions(&m, &kv, 64, pp, plen, 4, 1.0f, 0, rngs, allowed, comp, lp, clen);
    int ok = 1, leaves[16] = {0}, distinct = 0;
    for (int i = 0; i < 64; i++) {
        ok &= clen[i] == 4 && tree_leaf(comp + 4 * i, 4) >= 0;
        if (ok) leaves[tree_leaf(comp + 4 * i, 4)]++;
    }
    for (int l = 0; l < 16; l++) distinct += leaves[l] > 0;
    check(ok && distinct > 4, "tree task: masked sampler draws exactly 4 tokens, each L or R", "%d distinct leaves in 64", distinct);
    free_kvcache(&kv); free_gpt(&m);
    // the metric and a short run: the frequency of T over the last steps is in [0, 1] and
    // equals the mean of the per-step frequencies; both objectives see the same target
    Options o;
    default_options(&o);
    o.steps = 6; o.group_size = 16; o.prompts_per_step = 1; o.lr = 3e-3f; o.schedule = 2; o.layers = 1; o.heads = 1; o.channels = 16;
    float f1[6], f2[6], r1[6], r2[6];
    int t1, t2;
    float m1 = tree_run(&o, OBJ_GRPO, 1, -1.0f, 3, f1, r1, &t1);
    float m2 = tree_run(&o, OBJ_LAMBDA_GRPO, 1, -1.0f, 3, f2, r2, &t2);
    double mean = 0;
    for (int s = 0; s < 6; s++) mean += f1[s];
    mean /= 6;
    // a mean of 6 frequencies in [0, 1], in float against double: a few u of 1 (TOL_FEW)
    check(fabs(m1 - mean) <= TOL_FEW && m1 >= 0 && m1 <= 1 && m2 >= 0 && m2 <= 1 && t1 == t2 &&
          f1[0] == f2[0],
          "tree task: short run, metric = mean target frequency of the last steps", "GRPO %.3f, λ-GRPO %.3f, target %d", m1, m2, t1);
}

// ----------------------------------------------------------------------------
// The hostile-input pass (2026-12-01), break findings: regression tests of the fixes (each failed before its fix)

/* parse_options: a number beyond a float's range says so (it said "is not a number"), a
   non-zero value that a float would store as 0 is refused (--lr 1e-50 ran at lr 0), and an
   integer beyond a long is out of the option's range. */
static void parse_float_fn(void *arg) {
    char name[] = "cmd", *argv[4] = {name, (char *)"--lr", (char *)arg, NULL};
    Options o;
    default_options(&o);
    parse_options(3, argv, CMD_SFT, &o, "cmd", "");
    exit(o.lr != 0.0f ? 0 : 3);   // 3: accepted, but stored as 0
}
static void parse_steps_fn(void *arg) {
    char name[] = "cmd", *argv[4] = {name, (char *)"--steps", (char *)arg, NULL};
    Options o;
    default_options(&o);
    parse_options(3, argv, CMD_SFT, &o, "cmd", "");
    exit(0);
}
static void test_option_float_range(void) {
    static CmdCall tiny_eps = {cmd_train, "--adv-eps 1e-320"};
    expect_exit("usage: --adv-eps 1e-320 (strtod underflows) is out of float range", cmd_call_fn, &tiny_eps,
                2, "--adv-eps: '1e-320' is out of float range");
    expect_exit("usage: --lr 1e-50 (0 as a float) is refused, not run at lr 0", parse_float_fn, "1e-50", 2,
                "--lr: '1e-50' is out of float range");
    expect_exit("usage: --lr 1e999 is out of float range", parse_float_fn, "1e999", 2,
                "--lr: '1e999' is out of float range");
    expect_exit("usage: --lr 1e-40 (a subnormal float, not 0) is kept", parse_float_fn, "1e-40", 0, "");
    static CmdCall huge_int = {cmd_sft, "--steps 99999999999999999999"};
    expect_exit("usage: --steps beyond a long is out of range, not 'not a number'", cmd_call_fn, &huge_int, 2,
                "--steps: '99999999999999999999' is out of range [0, 10000000]");
    // an integer option's range in digits, as the parser takes them (it refuses 1e+07 for --steps)
    static CmdCall big_steps = {cmd_sft, "--steps 10000001"};
    expect_exit("usage: an integer option's range is printed as integers ([0, 10000000])", cmd_call_fn,
                &big_steps, 2, "--steps: '10000001' is out of range [0, 10000000]");
    // a blank before or after a number: refused alike ('5 ' was refused, ' 5' taken as 5)
    const char *blanks[4] = {" 5", "5 ", "\t5", " 1e-3"};
    for (int i = 0; i < 4; i++) {
        char name[96];
        snprintf(name, sizeof name, "usage: --lr '%s' (a blank around the number) is refused", blanks[i]);
        expect_exit(name, parse_float_fn, (void *)blanks[i], 2, "is not a number (no blanks around it)");
    }
    expect_exit("usage: --steps ' 5' (an integer option) is refused as '5 ' is", parse_steps_fn, (void *)" 5", 2,
                "--steps: ' 5' is not a number (no blanks around it)");
    expect_exit("usage: --steps '5 ' is refused", parse_steps_fn, (void *)"5 ", 2,
                "--steps: '5 ' is not a number (no blanks around it)");
}

/* ./grpo tree's per-seed lines name the window of its metric, min(50, --steps) steps (they
   said "last 50 steps" whatever --steps was). */
static void test_tree_window(void) {
    static char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd, "%s tree --threads 1 --steps 10 --seeds 1 --run-dir %s/tree_window", grpo_bin(),
             TMPDIR_);
    int code = run_binary(cmd, out, sizeof out);
    check(code == 0 && strstr(out, "seed 1: first 10 steps") && strstr(out, "last 10 steps") &&
          !strstr(out, "last 50"), "tree --steps 10: the per-seed lines say 'last 10 steps'", "exit %d: %s",
          code, line_with(out, "seed 1:"));
}

/* ./grpo tree: a write error on tree_steps.csv (a 2,000-byte file size limit) stops the
   command with exit 1 naming the file (it ended with exit 0 and a truncated CSV). */
static void test_tree_csv_write_error(void) {
    static char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd, "%s tree --threads 1 --steps 30 --seeds 1 --run-dir %s/tree_full", grpo_bin(),
             TMPDIR_);
    int code = run_binary_fsize(cmd, 2000, out, sizeof out);
    const char *err = line_with(out, "error");
    check(code == 1 && strstr(err, "tree_steps.csv") && !strstr(out, "Table 1"),
          "tree: a write error on tree_steps.csv stops it (exit 1), naming the file", "exit %d: %s", code,
          err);
}

/* tree --beta: π_ref is the run's initial policy. At step 1 π_θ = π_ref, so k3 and its gradient
   are exactly 0 and the first update is the one of β = 0: step 2 samples the same completions
   (its target frequency and mean reward are equal, in every run). With π_ref's log-probs taken
   as 0 (the bug), k3's gradient 1 − 1/π is about −1 per token, and step 2 differs. */
static void test_tree_beta_ref(void) {
    Options o;
    default_options(&o);
    o.steps = 2; o.group_size = 16; o.prompts_per_step = 1; o.lr = 5e-2f; o.schedule = 2;
    o.layers = 1; o.heads = 1; o.channels = 16;
    int same = 0, runs = 0;
    for (int seed = 1; seed <= 3; seed++)
        for (int obj = 0; obj < 2; obj++) {
            float f0[2], f1[2], r0[2], r1[2];
            int t0, t1;
            o.obj.beta = 0.0f;
            tree_run(&o, obj, 1, -1.0f, seed, f0, r0, &t0);
            o.obj.beta = 1.0f;
            tree_run(&o, obj, 1, -1.0f, seed, f1, r1, &t1);
            same += f0[1] == f1[1] && r0[1] == r1[1];
            runs++;
        }
    check(same == runs, "tree --beta 1: π_ref is the initial policy (step 1's update equals β = 0's)",
          "%d of %d runs sample the same step 2", same, runs);
}

/* tree's Dr. GRPO constant is its completion length, 4 (it was --max-new-tokens' default, 40):
   every tree completion has 4 tokens, so seq-mean-token-sum-norm's factor 1/(N·4) equals
   token-mean's 1/Σ len. And its schedule spans steps·μ AdamW steps, as train's (it spanned
   steps, so with μ = 4 the last three quarters of a linear decay to 0 ran at lr 0). */
static void test_tree_step_config(void) {
    Options o;
    default_options(&o);
    o.steps = 10; o.num_iterations = 4; o.lr = 1e-3f; o.warmup = 0; o.schedule = 1; o.min_lr_frac = 0.0f;
    o.obj.loss_agg = AGG_SEQ_MEAN_TOKEN_SUM_NORM;
    GRPOConfig cfg;
    AdamWConfig opt;
    tree_step_config(&o, OBJ_LAMBDA_GRPO, 1, &cfg, &opt);
    int len[16];
    float norm[16], mean[16];
    for (int i = 0; i < 16; i++) len[i] = TREE_DEPTH;
    loss_agg_coef(norm, len, 16, &cfg.obj);
    ObjectiveConfig token_mean = cfg.obj;
    token_mean.loss_agg = AGG_TOKEN_MEAN;
    loss_agg_coef(mean, len, 16, &token_mean);
    check(cfg.obj.max_new_tokens == TREE_DEPTH && !memcmp(norm, mean, sizeof norm),
          "tree: Dr. GRPO constant = the completion length 4 (sum-norm == token-mean)",
          "constant %d, c %g vs %g",
          cfg.obj.max_new_tokens, norm[0], mean[0]);
    int last = o.steps * o.num_iterations - 1;
    check(lr_at(&opt, last) > 0.0f && lr_at(&opt, o.steps) > 0.5f * o.lr,
          "tree --num-iterations 4: the schedule spans steps x μ AdamW steps",
          "lr at AdamW step %d: %g, at %d: %g",
          last, lr_at(&opt, last), o.steps, lr_at(&opt, o.steps));
    static char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd, "%s tree --threads 1 --steps 2 --seeds 1 --loss-agg seq-mean-token-sum-norm "
             "--run-dir %s/tree_norm", grpo_bin(), TMPDIR_);
    int code = run_binary(cmd, out, sizeof out);
    check(code == 0 && strstr(out, "Dr. GRPO constant 4"),
          "tree --loss-agg seq-mean-token-sum-norm prints its "
          "constant, 4", "exit %d: %s", code, line_with(out, "# loss"));
}

/* load_checkpoint refuses a NaN or Inf parameter, naming the file, the tensor and the index
   (it loaded them: eval printed accuracy 0, sft --resume called the file "last good"), and a
   resume refuses a non-finite AdamW moment (--init, which discards the moments, does not). */
static void test_checkpoint_not_finite(void) {
    GPT m;
    build_gpt(&m, (GPTConfig){16, VOCAB_SIZE, 1, 1, 8}, 1, 3);
    TrainState st = {.step = 3, .rng = {{1, 2, 3, 4}}, .kind = 2};
    char path[256], want[400];
    snprintf(path, sizeof path, "%s/nan_param.bin", TMPDIR_);
    m.params.wte[50] = NAN;
    save_weights_only(path, &m);
    snprintf(want, sizeof want, "checkpoint '%s': parameter tensor wte holds a NaN at index 50", path);
    expect_exit("checkpoint: a NaN parameter is refused, naming file, tensor and index", load_ckpt_fn, path,
                1,
                want);
    m.params.wte[50] = 0.0f;
    m.params.lnfb[3] = -INFINITY;
    snprintf(path, sizeof path, "%s/inf_param.bin", TMPDIR_);
    save_weights_only(path, &m);
    snprintf(want, sizeof want, "checkpoint '%s': parameter tensor lnfb holds a -Inf at index 3", path);
    expect_exit("checkpoint: an Inf parameter is refused, naming file, tensor and index", load_ckpt_fn, path,
                1,
                want);
    m.params.lnfb[3] = 0.0f;
    m.v_memory[m.param_sizes[0] + 7] = INFINITY;   // wpe[7]'s second moment
    snprintf(path, sizeof path, "%s/inf_moment.bin", TMPDIR_);
    save_checkpoint(path, &m, &st, st.step, test_last_good);
    expect_exit("checkpoint: resume refuses an Inf AdamW moment", load_train_resume_fn, path, 1,
                "AdamW second moment of tensor wpe holds an Inf at index 7");
    expect_exit("checkpoint: ... --init, which discards the moments, takes that file", load_ckpt_fn, path, 0,
                "");
    free_gpt(&m);
}

/* eval --completions: `cut -f1,2 FILE | ./grpo verify -` scores every line as its reward
   column says, and a fourth column says whether the completion ended with <eos>. A model
   that has memorised one answer (17 characters) writes it whole at --max-new-tokens 17,
   without <eos>: reward 1, and the completion column must still verify (the " [no <eos>]"
   appended to it made verify score it 0). */
static void test_eval_completions_verify(void) {
    const char *train = tmp_path("/tmp/grpo_test/memorise_eos.txt");
    FILE *f = fopenCheck(train, "w");
    for (int i = 0; i < 20; i++) fprintf(f, "1 1 1 1>4:\t1+1=2,2+1=3,3+1=4\n");
    fcloseCheck(f);
    static char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd,
             "%s sft --threads 1 --layers 1 --heads 1 --channels 16 --context 32 --batch-size 4 "
             "--steps 150 --lr 1e-2 --eval-every 0 --train-data %s --val-data %s --run-dir %s/memorise_eos",
             grpo_bin(), train, train, TMPDIR_);
    int rc = run_binary(cmd, out, sizeof out);
    const int budgets[2] = {17, 20};
    const char *marks[2] = {"no-eos", "eos"};
    for (int b = 0; b < 2; b++) {
        char dump[300], scores[300];
        snprintf(dump, sizeof dump, "%s/memorise_eos/completions_%d.tsv", TMPDIR_, budgets[b]);
        snprintf(scores, sizeof scores, "%s/memorise_eos/verify_%d.txt", TMPDIR_, budgets[b]);
        snprintf(cmd, sizeof cmd, "%s eval --threads 1 --model %s/memorise_eos/model.bin --data %s "
                 "--max-new-tokens %d --pass-k 0 --completions %s && cut -f1,2 %s | %s verify - > %s",
                 grpo_bin(),
                 TMPDIR_, train, budgets[b], dump, dump, grpo_bin(), scores);
        if (rc == 0) rc = run_binary(cmd, out, sizeof out);
        size_t n1 = 0, n2 = 0;
        char *rows = NULL, *verdicts = NULL;
        if (rc == 0) {   // as strings (read_all does not end them with a NUL)
            char *a = (char *)read_all(dump, &n1), *v = (char *)read_all(scores, &n2);
            rows = (char *)realloc(a, n1 + 1);
            verdicts = (char *)realloc(v, n2 + 1);
            rows[n1] = 0;
            verdicts[n2] = 0;
        }
        int lines = 0, agree = 0, marked = 0, solved = 0;
        char *save1 = NULL, *save2 = NULL;
        char *row = rows ? strtok_r(rows, "\n", &save1) : NULL;
        char *verdict = verdicts ? strtok_r(verdicts, "\n", &save2) : NULL;
        for (; row && verdict; row = strtok_r(NULL, "\n", &save1), verdict = strtok_r(NULL, "\n", &save2)) {
            char *col[4] = {row, NULL, NULL, NULL};
            int cols = 1;
            for (char *p = row; *p && cols < 5; p++)
                if (*p == '\t') {
                    *p = 0;
                    if (cols < 4) col[cols] = p + 1;
                    cols++;
                }
            lines++;
            agree += cols == 4 && atof(col[2]) == atof(verdict);
            marked += cols == 4 && !strcmp(col[3], marks[b]);
            solved += cols == 4 && atof(col[2]) == 1.0;
        }
        free(rows);
        free(verdicts);
        char name[160];
        snprintf(name, sizeof name,
                 "eval --completions at --max-new-tokens %d: verify agrees with the reward, "
                 "column 4 '%s'", budgets[b], marks[b]);
        check(rc == 0 && lines == 20 && agree == 20 && marked == 20 && solved == 20, name,
              "exit %d, %d lines: %d agree, %d marked %s, %d with reward 1", rc, lines, agree, marked,
              marks[b],
              solved);
    }
}

/* A save interrupted by SIGTERM or SIGINT leaves no PATH.tmp.<pid>.<n> behind (it stayed
   forever), and the process still ends by that signal. A forked child saves a 10 MB
   checkpoint (0.8 M parameters with the AdamW moments) over and over, after telling the
   parent that the first save is done; the parent kills it a few milliseconds later, almost
   always in the middle of a save (which is nearly all the child does). */
static void test_save_interrupted(void) {
    char dir[256];
    snprintf(dir, sizeof dir, "%s/interrupted_save", TMPDIR_);
    make_dir(dir);
    int killed_ok = 0, left = 0, tries = 6;
    for (int k = 0; k < tries; k++) {
        int sig = k % 2 ? SIGINT : SIGTERM;
        int ready[2];
        if (pipe(ready) != 0) break;
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            close(ready[0]);
#ifdef _OPENMP
            omp_set_num_threads(1);   // the parent's thread pool does not survive fork
#endif
            char path[300];
            snprintf(path, sizeof path, "%s/ckpt.bin", dir);
            GPT m;
            build_gpt(&m, (GPTConfig){64, VOCAB_SIZE, 4, 4, 128}, 1, 5);
            TrainState st = {.step = 1, .rng = {{1, 2, 3, 4}}, .kind = 2};
            save_checkpoint(path, &m, &st, st.step, test_last_good);
            if (write(ready[1], "x", 1) != 1) _exit(98);
            for (;;) save_checkpoint(path, &m, &st, st.step, test_last_good);
        }
        close(ready[1]);
        char c;
        int up = read(ready[0], &c, 1) == 1;
        close(ready[0]);
        usleep(2000 + 3000 * k);
        kill(pid, sig);
        int status = 0;
        waitpid(pid, &status, 0);
        killed_ok += up && WIFSIGNALED(status) && WTERMSIG(status) == sig;
        left += count_prefixed(dir, "ckpt.bin.tmp");
    }
    check(killed_ok == tries && left == 0,
          "checkpoint: SIGTERM/SIGINT during a save leaves no temporary file",
          "%d of %d children ended by the signal; %d temporary files left", killed_ok, tries, left);
    // SIGKILL cannot be caught: a save killed by it leaves its temporary file (checkpoint-sized); the
    // next save in that directory removes it, and leaves a live process's file and any other file alone
    char path[300], live[400], other[400], litter[400];
    snprintf(path, sizeof path, "%s/ckpt.bin", dir);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = atomic_open(&ckpt_file, path);
        ckpt_tmp_live = 1;
        int32_t h[CKPT_HEADER_INTS] = {CKPT_MAGIC, CKPT_VERSION};
        fwrite(h, sizeof h, 1, f);
        fflush(f);
        raise(SIGKILL);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    snprintf(litter, sizeof litter, "ckpt.bin.tmp.%ld.", (long)pid);   // the prefix of its name
    snprintf(live, sizeof live, "%s.tmp.%ld.0", path, (long)getppid());   // a live process's save
    snprintf(other, sizeof other, "%s.tmp.%ld.999999", path, (long)pid);   // not a checkpoint's bytes
    int32_t magic = CKPT_MAGIC;
    write_bytes(live, &magic, 4);
    write_bytes(other, "a user's own file", 17);
    struct stat sb;
    int planted = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && count_prefixed(dir, litter) == 2;
    GPT m;
    build_gpt(&m, (GPTConfig){16, VOCAB_SIZE, 1, 1, 8}, 1, 4);
    char err[4096];
    SaveCall sc = {path, &m, 0};   // no size limit
    child_stderr(save_limited_fn, &sc, err, sizeof err);
    free_gpt(&m);
    check(planted && count_prefixed(dir, litter) == 1 && strstr(err, "note: removed") && strstr(err, litter),
          "checkpoint: the next save removes the temporary file of a save killed by SIGKILL, with a note",
          "%s; %.200s", planted ? "left by the killed save" : "NOT planted", err);
    check(stat(live, &sb) == 0 && stat(other, &sb) == 0,
          "checkpoint: ... and keeps a live process's temporary file and a file that is no checkpoint's", "");
    unlink(live);
    unlink(other);
}

// the n-th field (0-based) of row `row` (1-based) of a CSV file, as a number (-1: absent)
static double csv_field(const char *path, int row, int n) {
    size_t len;
    char *text = (char *)read_all(path, &len);
    char *p = text, *end = text + len;
    for (int r = 0; r < row && p < end; r++) {   // past the header and rows 1 .. row-1
        char *nl = (char *)memchr(p, '\n', end - p);
        p = nl ? nl + 1 : end;
    }
    for (int f = 0; f < n && p < end && *p != '\n'; p++) f += *p == ',';
    double v = p < end && *p != '\n' ? atof(p) : -1.0;
    free(text);
    return v;
}

// the train options of the resume tests: 4 steps of 2 prompts x 4 from the tiny --init
static void tiny_train_args(char *out, size_t cap, const char *init) {
    snprintf(out, cap,
             "--threads 1 --steps 4 --prompts-per-step 2 --group-size 4 --max-new-tokens 8 "
             "--eval-every 0 --pass-k 0 --test-limit 0 --val-data tests/fixtures/val_small.txt --init %s",
             init);
}

/* train --resume continues the run's gen_tokens column (it started again at 0), and refuses
   another --seed or another option that shapes the samples (usage error naming the option and
   both values; it went on with the command line's seed: another model), while another --lr is
   taken with a note (lowering it is how a diverging run is rescued). A checkpoint of format 1
   (no run record) is refused, naming the file, its format and what to do. */
static void test_resume_run_record(void) {
    char init[300], ckpt[300], csv_a[300], csv_b[300];
    save_tiny_init(init, sizeof init, "record_init.bin", 21);
    static char cmd[2048], out[16384];
    char common[1024];
    tiny_train_args(common, sizeof common, init);
    snprintf(cmd, sizeof cmd, "%s train %s --save-every 2 --run-dir %s/record_a", grpo_bin(), common,
             TMPDIR_);
    int code = run_binary(cmd, out, sizeof out);
    snprintf(ckpt, sizeof ckpt, "%s/record_a/ckpt.bin", TMPDIR_);
    snprintf(cmd, sizeof cmd, "%s train %s --resume %s --run-dir %s/record_b", grpo_bin(), common, ckpt,
             TMPDIR_);
    if (code == 0) code = run_binary(cmd, out, sizeof out);
    snprintf(csv_a, sizeof csv_a, "%s/record_a/train.csv", TMPDIR_);
    snprintf(csv_b, sizeof csv_b, "%s/record_b/train.csv", TMPDIR_);
    double straight = code == 0 ? csv_field(csv_a, 4, 12) : -1, resumed = code == 0 ? csv_field(csv_b, 2,
                                                                                                12) : -2;
    double at_step2 = code == 0 ? csv_field(csv_a, 2, 12) : -1;
    check(code == 0 && straight > at_step2 && at_step2 > 0 && resumed == straight,
          "train --resume: gen_tokens goes on counting (step 4 as in a run straight through)",
          "exit %d: step 4 gen_tokens %.0f straight, %.0f resumed (step 2: %.0f)", code, straight, resumed,
          at_step2);
    // another seed, another group size: refused, naming the option and both values
    const char *bad[2] = {"--seed 7", "--group-size 2"};
    const char *want[2] = {"--seed 7: '", "--group-size 2: '"};
    const char *then[2] = {"with --seed 1337", "with --group-size 4"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s train %s %s --resume %s --run-dir %s/record_c", grpo_bin(), common,
                 bad[i],
                 ckpt, TMPDIR_);
        code = run_binary(cmd, out, sizeof out);
        const char *err = line_with(out, "usage error");
        char name[128];
        snprintf(name, sizeof name, "train --resume with %s: a usage error naming both values", bad[i]);
        check(code == 2 && strstr(err, want[i]) && strstr(err, then[i]), name, "exit %d: %s", code, err);
    }
    snprintf(cmd, sizeof cmd, "%s train %s --lr 5e-5 --resume %s --run-dir %s/record_d", grpo_bin(), common,
             ckpt,
             TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    check(code == 0 && strstr(out, "note: --lr 5e-05: the run in") && strstr(out, "had --lr 0.0001"),
          "train --resume with another --lr: goes on, with a note naming both values", "exit %d: %s", code,
          line_with(out, "note: --lr"));
    // other inputs on resume: another --train-data (the run record holds its hash), another --init of
    // the same shape where the resume loads it (--test-limit: the start of the test comparison)
    char other_init[300];
    save_tiny_init(other_init, sizeof other_init, "record_other_init.bin", 22);
    const char *swap[2] = {"--train-data tests/fixtures/val_small.txt", "--test-limit 2 --init "};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s train %s %s%s --resume %s --run-dir %s/record_f", grpo_bin(), common, swap[i],
                 i ? other_init : "", ckpt, TMPDIR_);
        code = run_binary(cmd, out, sizeof out);
        const char *err = line_with(out, "usage error");
        char name[160];
        snprintf(name, sizeof name, "train --resume with another %s: refused, naming it", i ? "--init" : "--train-data");
        check(code == 2 && strstr(err, i ? "--init " : "--train-data ") && strstr(err, "its bytes"), name,
              "exit %d: %s", code, err);
    }
    // the same checkpoint in format 1: header version 1, no run record
    size_t n;
    unsigned char *buf = (unsigned char *)read_all(ckpt, &n);
    int32_t h[CKPT_HEADER_INTS];
    memcpy(h, buf, sizeof h);
    size_t record = (size_t)h[11] + (size_t)h[13] + ((size_t)h[14] << 31) + (size_t)h[12] * (CKPT_TAG_BYTES + 8);
    h[1] = 1;   // and no state sections (the budget counters' one): format 1 has none
    h[11] = 0;
    memcpy(buf, h, sizeof h);
    char old[300];
    snprintf(old, sizeof old, "%s/record_v1.bin", TMPDIR_);
    write_bytes(old, buf, n - record);
    free(buf);
    snprintf(cmd, sizeof cmd, "%s train %s --resume %s --run-dir %s/record_e", grpo_bin(), common, old,
             TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    check(code == 1 && strstr(out, "record_v1.bin': format version 1") && strstr(out, "older grpo.c build"),
          "train --resume of a format-1 checkpoint: refused, naming the file, its format and what to do",
          "exit %d: %s", code, line_with(out, "error"));
}

/* A new run in a run dir that holds ckpt.bin from an earlier run is refused (a later --resume
   mixed the two: the new run's log rows, then the old run); and a checkpoint is tied to its
   log: resuming into a run dir whose log is another run's stops, naming the log (it kept the
   other run's rows up to the checkpoint's step and went on after them). */
static void test_stale_checkpoint(void) {
    char init[300];
    save_tiny_init(init, sizeof init, "stale_init.bin", 22);
    static char cmd[2048], out[16384];
    char common[1024];
    tiny_train_args(common, sizeof common, init);
    snprintf(cmd, sizeof cmd, "%s train %s --save-every 2 --run-dir %s/stale_a", grpo_bin(), common, TMPDIR_);
    int code = run_binary(cmd, out, sizeof out);
    snprintf(cmd, sizeof cmd, "%s train %s --seed 5 --run-dir %s/stale_a", grpo_bin(), common, TMPDIR_);
    if (code == 0) code = run_binary(cmd, out, sizeof out);
    const char *err = line_with(out, "usage error");
    check(code == 2 && strstr(err, "stale_a/ckpt.bin") && strstr(err, "--overwrite 1"),
          "run dir: a new run beside an earlier run's ckpt.bin is refused", "exit %d: %s", code, err);
    // run B's log in its own dir (another seed: other samples), then run A resumed into it
    snprintf(cmd, sizeof cmd, "%s train %s --seed 5 --run-dir %s/stale_b", grpo_bin(), common, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    snprintf(cmd, sizeof cmd, "%s train %s --resume %s/stale_a/ckpt.bin --run-dir %s/stale_b", grpo_bin(),
             common,
             TMPDIR_, TMPDIR_);
    if (code == 0) code = run_binary(cmd, out, sizeof out);
    err = line_with(out, "error");
    check(code == 1 && strstr(err, "stale_b/train.csv' is another run's log"),
          "run dir: resuming into a run dir whose log is another run's stops, naming the log", "exit %d: %s",
          code,
          err);
    // the run's own log is accepted: A resumed into its own run dir
    snprintf(cmd, sizeof cmd, "%s train %s --resume %s/stale_a/ckpt.bin --run-dir %s/stale_a", grpo_bin(),
             common,
             TMPDIR_, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    check(code == 0, "run dir: ... and resuming into the run's own run dir goes on", "exit %d: %s", code,
          line_with(out, "error"));
}

/* The same rules for sft: a resume refuses another --batch-size (its examples per step), and a
   new run beside an earlier run's ckpt.bin is refused. */
static void test_sft_run_record(void) {
    static char cmd[2048], out[16384];
    const char *common = "--threads 1 --steps 4 --layers 1 --heads 1 --channels 8 --batch-size 2 "
                         "--eval-every 0 "
                         "--val-data tests/fixtures/val_small.txt";
    snprintf(cmd, sizeof cmd, "%s sft %s --save-every 2 --run-dir %s/sft_record", grpo_bin(), common,
             TMPDIR_);
    int code = run_binary(cmd, out, sizeof out);
    snprintf(cmd, sizeof cmd,
             "%s sft %s --batch-size 4 --resume %s/sft_record/ckpt.bin --run-dir %s/sft_record2",
             grpo_bin(), common, TMPDIR_, TMPDIR_);
    if (code == 0) code = run_binary(cmd, out, sizeof out);
    const char *err = line_with(out, "usage error");
    check(code == 2 && strstr(err, "--batch-size 4: '") && strstr(err, "with --batch-size 2"),
          "sft --resume with another --batch-size: a usage error naming both values", "exit %d: %s", code,
          err);
    snprintf(cmd, sizeof cmd, "%s sft %s --train-data tests/fixtures/val_small.txt --resume %s/sft_record/ckpt.bin "
             "--run-dir %s/sft_record3", grpo_bin(), common, TMPDIR_, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    err = line_with(out, "usage error");
    check(code == 2 && strstr(err, "--train-data tests/fixtures/val_small.txt: its bytes"),
          "sft --resume with another --train-data: refused, naming it", "exit %d: %s", code, err);
    snprintf(cmd, sizeof cmd, "%s sft %s --run-dir %s/sft_record", grpo_bin(), common, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    err = line_with(out, "usage error");
    check(code == 2 && strstr(err, "sft_record/ckpt.bin") && strstr(err, "--overwrite 1"),
          "sft: a new run beside an earlier run's ckpt.bin is refused", "exit %d: %s", code, err);
    snprintf(cmd, sizeof cmd, "%s sft %s --seed 9 --resume %s/sft_record/ckpt.bin --run-dir %s/sft_record9", grpo_bin(),
             common, TMPDIR_, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    err = line_with(out, "usage error");
    check(code == 2 && strstr(err, "--seed 9"), "sft --resume with another --seed: refused, naming it", "exit %d: %s",
          code, err);
    // --overwrite 1 replaces the finished run and its last periodic checkpoint; a resume keeps its --seed
    snprintf(cmd, sizeof cmd, "%s sft %s --run-dir %s/sft_record --overwrite 1", grpo_bin(), common, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    check(code == 0, "sft --overwrite 1 replaces a finished run with its ckpt.bin (--save-every)", "exit %d: %s", code,
          line_with(out, "error"));
}

// ----------------------------------------------------------------------------
// ./grpo compare (the compute-matched protocol): statistics, methods, budget accounting, a quick study

static void test_compare_stats(void) {
    // Student t, 0.975 quantile: the printed tables' values (4 decimals) ...
    const double df[] = {1, 2, 4, 9, 29, 1e9};
    const double table[] = {12.7062, 4.3027, 2.7764, 2.2622, 2.0452, 1.9600};
    double worst = 0.0;
    for (int i = 0; i < 6; i++) worst = fmax(worst, fabs(t_quantile(0.05, df[i]) - table[i]));
    check(worst < 1e-4, "compare: t quantile 0.975, df 1 2 4 9 29 1e9 = the tables' values",
          "worst |error| %.1e (tables round to 1e-4)", worst);
    // ... and to 15 digits (mpmath's betainc root), df 1 to 1e5 (bisection on the incomplete beta)
    const double df2[] = {1, 30, 1000, 1001, 100000};
    const double exact[] = {12.7062047361747, 2.04227245630124, 1.96233908082641, 1.96233670528088,
                            1.95998770753461};
    worst = 0.0;
    for (int i = 0; i < 5; i++) worst = fmax(worst, fabs(t_quantile(0.05, df2[i]) - exact[i]));
    check(worst < 1e-9 && isnan(t_quantile(0.05, 0)),
          "compare: t quantile to 1e-9 at df 1, 30, 1000, 1001, 1e5", "worst |error| %.1e", worst);
    // mean and 95% CI of 1..5: mean 3, sd sqrt(10/4) = 1.58113883008419, half-width
    // t(4)·sd/sqrt(5) = 2.77644510519779 · 0.707106781186548 = 1.96324316147756
    double x[5] = {1, 2, 3, 4, 5};
    MeanCI c = mean_ci(x, 5), one = mean_ci(x, 1);
    check(c.n == 5 && fabs(c.mean - 3.0) < 1e-12 && fabs(c.sd - 1.58113883008419) < 1e-12 &&
          fabs(c.half - 1.96324316147756) < 1e-9 && one.mean == 1.0 && isnan(one.half),
          "compare: mean and 95% CI of 1..5 (3 ± 1.9632); one value has no interval", "%.6f ± %.6f",
          c.mean, c.half);
    // the paired t test and the 80%-power detectable difference, d = 1..5 against 0 (mpmath: t = 4.2426,
    // p = I_{4/(4+t²)}(2, 1/2) = 0.0132355995636827; (t_{0.975,4} + t_{0.8,4})·sd/√5 = 2.62860559489689)
    double zero5[5] = {0};
    PairedDiff pt = paired_diff(x, zero5, 5);
    check(fabs(pt.p - 0.0132355995636827) < 1e-9 && fabs(pt.mde - 2.62860559489689) < 1e-9,
          "compare: paired t test p and minimum detectable difference of 1..5 (mpmath's values)", "p %.12f mde %.12f",
          pt.p, pt.mde);
    // Holm over {0.01, 0.04, 0.03, untested}: sorted 0.01·3, 0.03·2, 0.04·1, kept non-decreasing
    double hp_in[4] = {0.01, 0.04, 0.03, NAN}, hadj[4];
    holm(hp_in, hadj, 4);
    check(fabs(hadj[0] - 0.03) < 1e-15 && fabs(hadj[1] - 0.06) < 1e-15 && fabs(hadj[2] - 0.06) < 1e-15 && isnan(hadj[3]),
          "compare: Holm's adjusted p of 0.01, 0.04, 0.03 is 0.03, 0.06, 0.06; an untested one stays out",
          "%g %g %g %g", hadj[0], hadj[1], hadj[2], hadj[3]);
    // paired: d = (0.05, 0, 0.10, -0.02): mean 0.0325, sd 0.0537742193496723, half-width
    // t(3)·sd/2 = 3.18244630528371 · 0.0268871096748361 = 0.0855667828444401; 2 favour a, 1 b, 1 tie
    double a[4] = {0.30, 0.25, 0.40, 0.20}, b[4] = {0.25, 0.25, 0.30, 0.22};
    PairedDiff p = paired_diff(a, b, 4);
    check(fabs(p.d.mean - 0.0325) < 1e-12 && fabs(p.d.sd - 0.0537742193496723) < 1e-12 &&
          fabs(p.d.half - 0.0855667828444401) < 1e-9 && p.favour_a == 2 && p.favour_b == 1 && p.ties == 1,
          "compare: paired difference on hand-made vectors", "%+.4f ± %.4f, %d/%d/%d", p.d.mean, p.d.half,
          p.favour_a, p.favour_b, p.ties);
    // interpolation between evaluations; a repeated x takes the first segment reaching it
    double xs[5] = {0, 100, 250, 250, 400}, ys[5] = {0.1, 0.2, 0.5, 0.6, 0.3};
    double at[6] = {0, 50, 175, 250, 325, 400}, want[6] = {0.1, 0.15, 0.35, 0.5, 0.45, 0.3};
    worst = 0.0;
    for (int i = 0; i < 6; i++) worst = fmax(worst, fabs(interp_at(xs, ys, 5, at[i]) - want[i]));
    check(worst < 1e-12 && isnan(interp_at(xs, ys, 5, 401)) && isnan(interp_at(xs, ys, 5, -1)),
          "compare: linear interpolation, none outside the curve", "worst %.1e", worst);
    // the views: two runs with K = 2. Per-step view (not the budget's unit): a grid up to the
    // shorter run (20 steps): run B (evaluated at steps 12, 24) at step 10 = 0.1 + 0.1·10/12,
    // at 20 = 0.2 + 0.2·8/12. The budget's own view (tokens) reads the evaluations themselves.
    CmpRun runs[2];
    memset(runs, 0, sizeof runs);
    double steps_a[3] = {0, 10, 20}, steps_b[3] = {0, 12, 24}, val_a[3] = {0.1, 0.3, 0.5},
           val_b[3] = {0.1, 0.2, 0.4}, tok_a[3] = {0, 1010, 2030}, tok_b[3] = {0, 1005, 2001};
    for (int j = 0; j < 3; j++) {
        runs[0].x[AX_STEP][j] = steps_a[j];
        runs[1].x[AX_STEP][j] = steps_b[j];
        runs[0].x[AX_TOKENS][j] = tok_a[j];
        runs[1].x[AX_TOKENS][j] = tok_b[j];
        runs[0].val[j] = val_a[j];
        runs[1].val[j] = val_b[j];
    }
    // (as two methods of one seed: print_table's column j holds run A's value, then run B's)
    static Study vst;
    Options vo;
    vo.budget = 2000;
    vst.o = &vo;
    vst.runs = runs;
    vst.nm = vst.nruns = 2;
    vst.S = 1;
    vst.K = 2;
    vst.budget_axis = AX_TOKENS;
    double vx[3], tx[3], *v = view_values(&vst, AX_STEP, vx), *tv = view_values(&vst, AX_TOKENS, tx);
    double want_v[6] = {0.1, 0.3, 0.5, 0.1, 0.1 + 0.1 * 10 / 12, 0.2 + 0.2 * 8 / 12};
    worst = 0.0;
    for (int i = 0; i < 6; i++) {   // i: run i / 3, point i % 3
        double direct = i < 3 ? val_a[i] : val_b[i - 3];
        size_t at = (size_t)(i % 3) * 2 + i / 3;
        worst = fmax(worst, fabs(v[at] - want_v[i]) + fabs(tv[at] - direct));
    }
    free(v);
    free(tv);
    check(worst < 1e-12 && vx[1] == 10 && vx[2] == 20 && tx[1] == 1000 && tx[2] == 2000,
          "compare: views: interpolated grid up to the shortest run; the budget's unit read directly",
          "worst %.1e; grid %g %g, %g %g", worst, vx[1], vx[2], tx[1], tx[2]);
    // methods: name[:--option=value...]
    Method m[CMP_MAX_METHODS];
    char err[512];
    const char *list = "grpo,lambda-grpo,lambda-grpo:--temperature=0.7,mine:--objective=grpo:--group-size=8";
    int n = parse_methods(list, m, CMP_MAX_METHODS, err, sizeof err);
    check(n == 4 && m[0].objective == OBJ_GRPO && m[1].objective == OBJ_LAMBDA_GRPO && m[1].nopts == 0 &&
          m[2].objective == OBJ_LAMBDA_GRPO && m[2].nopts == 1 && !strcmp(m[2].args, " --temperature=0.7") &&
          !strcmp(m[2].dir, "lambda-grpo+temperature=0.7") &&
          m[3].objective == -1 && m[3].nopts == 2 && !strcmp(m[3].dir, "mine+objective=grpo+group-size=8"),
          "compare: --methods parses names, labels and their options", "%d methods%s%s", n, n < 0 ? ": " : "",
          n < 0 ? err : "");
    const char *bad[][2] = {{"grpo,grpo", "twice"}, {"grpo,,lambda-grpo", "empty"}, {"grpo,", "empty"},
                            {"", "no method"}, {"grpo:--steps=3", "set by compare"},
                            {"grpo:--nope=1", "not an option"}, {"grpo:temperature=0.7", "--option=value"},
                            {"grpo:--temperature", "--option=value"}, {"a b", "character"},
                            {"grpo:--objective=lambda-grpo", "objective already"}, {":--lr=1", "no name"},
                            // a bare name that is not an objective (a misspelt one ran the default
                            // under its name); . and .. (their runs landed outside runs/)
                            {"grpo,PPO", "'PPO' is not an objective"}, {"lamda-grpo", "PPO"},
                            {".", "cannot name a method"}, {"..:--lr=1e-4", "cannot name a method"}};
    bad[12][1] = "lamda-grpo:--objective=NAME";   // the message says how to give a label its options
    int refused = 0, nbad = (int)(sizeof bad / sizeof bad[0]);
    for (int i = 0; i < nbad; i++) {
        err[0] = 0;
        int r = parse_methods(bad[i][0], m, CMP_MAX_METHODS, err, sizeof err);
        if (r == -1 && strstr(err, bad[i][1])) refused++;
        else printf("      '%s': %d, '%s'\n", bad[i][0], r, err);
    }
    check(refused == nbad, "compare: --methods refuses bad lists with a message", "%d of %d", refused, nbad);
    // FNV-1a 64 of the prereg: the published test vectors
    check(fnv1a64("", 0) == 0xcbf29ce484222325ull && fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull &&
          fnv1a64("foobar", 6) == 0x85944171f73967e8ull, "compare: FNV-1a 64 test vectors", "");
}

// Column `name` of a CSV text (header, then rows) into out; returns the number of rows.
static int csv_column(const char *text, const char *name, double *out, int max) {
    const char *nl = strchr(text, '\n');
    if (!nl) return -1;
    int col = -1, c = 0;
    size_t len = strlen(name);
    for (const char *f = text; f && f < nl; c++) {
        if (!strncmp(f, name, len) && (f[len] == ',' || f[len] == '\n')) col = c;
        f = strchr(f, ',');
        if (f) f++;
    }
    if (col < 0) return -1;
    int rows = 0;
    for (const char *line = nl + 1; *line && rows < max; rows++) {
        const char *f = line;
        for (int k = 0; k < col && f; k++) {
            f = strchr(f, ',');
            if (f) f++;
        }
        out[rows] = f ? atof(f) : NAN;
        line = strchr(line, '\n');
        if (!line) break;
        line++;
    }
    return rows;
}

/* train.csv's entropy column (batch_stats): a model whose logits are all 0 (wte, tied to
   the output, set to 0) samples uniformly over the V tokens, so every sampled token has
   log-prob −log V and the column is log V (float32 log-softmax: off by ~1e-7); then a batch
   made by hand, with values past each completion's length that must not count. */
static void test_entropy_column(void) {
    char sft[256], zero[256], args[2048], logf[256], path[512];
    snprintf(logf, sizeof logf, "%s/entropy.log", TMPDIR_);
    snprintf(sft, sizeof sft, "%s/tiny_sft/model.bin", TMPDIR_);
    snprintf(args, sizeof args, "--layers 2 --heads 2 --channels 32 --batch-size 16 --steps 30 --lr 3e-3 --eval-every 0 "
             "--val-data tests/fixtures/val_small.txt --run-dir %s/tiny_sft", TMPDIR_);
    struct stat sb;
    if (stat(sft, &sb) != 0) run_cmd_quiet(cmd_sft, args, logf);
    GPT m;
    load_checkpoint(sft, &m, 1, NULL);
    for (size_t i = 0; i < m.param_sizes[0]; i++) m.params.wte[i] = 0.0f;
    snprintf(zero, sizeof zero, "%s/zero_logits.bin", TMPDIR_);
    save_weights_only(zero, &m);
    int V = m.config.vocab_size;
    free_gpt(&m);
    snprintf(args, sizeof args, "--prompts-per-step 2 --group-size 4 --max-new-tokens 8 --steps 2 --eval-every 0 "
             "--test-limit 0 --pass-k 0 --val-data tests/fixtures/val_small.txt --init %s --run-dir %s/entropy",
             zero, TMPDIR_);
    int rc = run_cmd_quiet(cmd_train, args, logf);
    snprintf(path, sizeof path, "%s/entropy/train.csv", TMPDIR_);
    size_t n;
    char *csv = (char *)read_all(path, &n);
    csv = (char *)realloc(csv, n + 1);
    csv[n] = 0;
    double h[4] = {0};
    int rows = csv_column(csv, "entropy", h, 4);
    free(csv);
    check(rc == 0 && rows == 2 && fabs(h[0] - log((double)V)) < 1e-5 && fabs(h[1] - log((double)V)) < 1e-5,
          "train.csv: entropy of a uniform policy is log V", "rc %d, %d rows, %.7f %.7f vs %.7f", rc, rows, h[0],
          h[1], log((double)V));
    // batch_stats by hand: group 0 (completions 0, 1) mixed, group 1 (completion 2 alone) all equal;
    // the mixed group's tokens (|λ|, |a|) = (2, 1), (1, 1), (2, 0.5) -> mean |λ| 5/3, share (0.5 + 0 + 0.25)/2.5
    GroupBatch g;
    memset(&g, 0, sizeof g);
    int clen[3] = {2, 1, 3}, start[3] = {0, 2, 3}, lam[3 * 4] = {2, 1, 9, 9, 2, 9, 9, 9, 7, 7, 7, 9};
    float logp[3 * 4] = {-0.5f, -1.5f, 9, 9, -2.0f, 9, 9, 9, -0.25f, -0.75f, -1.0f, 9};
    float reward[3] = {1, 0, 1}, adv[3] = {1.0f, -0.5f, 0};
    g.N = 3, g.max_new = 4, g.clen = clen, g.sample_logp = logp;
    g.num_groups = 2, g.group_start = start, g.lambda_size = lam, g.reward = reward, g.advantage = adv;
    double want = (0.5 + 1.5 + 2.0 + 0.25 + 0.75 + 1.0) / 6;
    BatchStats b = batch_stats(&g);
    check(fabs(b.entropy - want) < 1e-12, "batch_stats: entropy, the mean -log p over the tokens of each length",
          "%.9f vs %.9f", b.entropy, want);
    check(fabs(b.mean_lambda_mixed - 5.0 / 3) < 1e-12 && fabs(b.lambda_share - 0.75 / 2.5) < 1e-12 &&
          b.all_equal == 0.5 && fabs(b.mean_reward - 2.0 / 3) < 1e-12 && b.mean_len == 2.0,
          "batch_stats: mean |λ| and the 1/|λ| share over the mixed groups' tokens only; the means",
          "%.9f %.9f, all equal %g, reward %g, len %g", b.mean_lambda_mixed, b.lambda_share, b.all_equal,
          b.mean_reward, b.mean_len);
    reward[1] = 1;
    b = batch_stats(&g);
    check(isnan(b.mean_lambda_mixed) && isnan(b.lambda_share) && b.all_equal == 1.0,
          "batch_stats: no mixed group gives NAN", "%g %g", b.mean_lambda_mixed, b.lambda_share);
}

/* One budget run of the tiny model: checks that it stops at the first step that spends the
   budget, that every step's FLOPs are the formula on its counts (ratio = flops/(F·trained),
   from μ and β), and that the evaluation points sit at the first steps past j/K of it. */
static void check_budget_run(const char *dir, const char *unit, double budget, int K, double ratio) {
    char path[512], name[160];
    size_t n;
    double F = model_flops_per_token(&(GPTConfig){64, VOCAB_SIZE, 2, 2, 32});
    snprintf(path, sizeof path, "%s/train.csv", dir);
    char *csv = (char *)read_all(path, &n);
    csv = (char *)realloc(csv, n + 1);
    csv[n] = 0;
    static double spent[4096], flops[4096], trained[4096], traj[4096], aux[4096], gen[4096];
    int rows = csv_column(csv, "budget_spent", spent, 4096);
    csv_column(csv, "flops", flops, 4096);
    csv_column(csv, "trained_tokens", trained, 4096);
    csv_column(csv, "gen_tokens_traj", traj, 4096);
    csv_column(csv, "gen_tokens_aux", aux, 4096);
    csv_column(csv, "gen_tokens", gen, 4096);
    free(csv);
    snprintf(name, sizeof name, "budget: a %s run stops at the first step that spends %g", unit, budget);
    double before = rows >= 2 ? spent[rows - 2] : 0.0, after = rows >= 1 ? spent[rows - 1] : 0.0;
    check(rows >= 1 && after >= budget && before < budget, name, "%d steps, spent %g then %g", rows, before,
          after);
    int formula = rows > 0, sums = rows > 0;
    double cum_traj = 0.0, cum_flops = 0.0;
    for (int i = 0; i < rows; i++) {
        formula &= flops[i] == ratio * F * trained[i] && trained[i] > traj[i];
        cum_traj += traj[i];
        cum_flops += flops[i];
        sums &= aux[i] == 0 && gen[i] == cum_traj;
        if (!strcmp(unit, "gen-tokens")) sums &= spent[i] == cum_traj;
        if (!strcmp(unit, "flops")) sums &= spent[i] == cum_flops;
        if (!strcmp(unit, "steps")) sums &= spent[i] == i + 1;
    }
    snprintf(name, sizeof name, "budget: %s run: FLOPs = %g·F·trained tokens every step, F = %.0f", unit,
             ratio, F);
    check(formula && sums, name, "%d steps; counts add up: %s", rows, sums ? "yes" : "no");
    // eval.csv: point 0, then point j at the first step whose spending reaches j/K of the budget
    snprintf(path, sizeof path, "%s/eval.csv", dir);
    csv = (char *)read_all(path, &n);
    csv = (char *)realloc(csv, n + 1);
    csv[n] = 0;
    double point[128], estep[128], eflops[128];
    int erows = csv_column(csv, "point", point, 128);
    csv_column(csv, "step", estep, 128);
    csv_column(csv, "flops", eflops, 128);
    free(csv);
    int ok = erows == K + 1 && point[0] == 0 && estep[0] == 0;
    for (int j = 1; ok && j <= K; j++) {
        int s = (int)estep[j];   // steps are numbered from 1: row s−1 of train.csv
        double mark = budget * j / K, sum = 0.0;
        for (int i = 0; i < s && i < rows; i++) sum += flops[i];
        ok &= point[j] == j && s >= 1 && s <= rows && spent[s - 1] >= mark;
        ok &= (s == 1 || spent[s - 2] < mark) && eflops[j] == sum;
    }
    snprintf(name, sizeof name, "budget: %s run: eval.csv holds points 0..%d at the first steps past j/%d",
             unit, K, K);
    check(ok, name, "%d rows", erows);
}

// A whole file, NUL-terminated.
static char *read_text(const char *path) {
    size_t n;
    char *t = (char *)read_all(path, &n);
    t = (char *)realloc(t, n + 1);
    t[n] = 0;
    return t;
}

static void test_budget_accounting(void) {
    // F = 2N + 2CV + 2L·maxT·C with N = L(12C² + 13C) + 2C (non-embedding parameters)
    GPTConfig tiny = {64, VOCAB_SIZE, 2, 2, 32}, base = {64, VOCAB_SIZE, 4, 4, 128};
    double n_tiny = 2.0 * (12 * 32 * 32 + 13 * 32) + 2 * 32;
    double n_base = 4.0 * (12 * 128 * 128 + 13 * 128) + 2 * 128;
    check(model_flops_per_token(&tiny) == 2 * n_tiny + 2.0 * 32 * VOCAB_SIZE + 2.0 * 2 * 64 * 32 &&
          model_flops_per_token(&base) == 2 * n_base + 2.0 * 128 * VOCAB_SIZE + 2.0 * 4 * 64 * 128 &&
          n_tiny == 25472 && n_base == 793344,
          "budget: FLOPs per token = 2N + 2CV + 2L·maxT·C (L2 C32; L4 C128)", "%.0f, %.0f",
          model_flops_per_token(&tiny), model_flops_per_token(&base));
    char args[2048], log[256];
    snprintf(log, sizeof log, "%s/budget.log", TMPDIR_);
    run_cmd_quiet(cmd_sft, "--layers 2 --heads 2 --channels 32 --batch-size 8 --steps 20 --lr 3e-3 "
                  "--eval-every 0 --val-data tests/fixtures/val_small.txt "
                  "--run-dir /tmp/grpo_test/budget_sft", log);
    const char *common = "--init /tmp/grpo_test/budget_sft/model.bin --prompts-per-step 2 --group-size 4 "
                         "--max-new-tokens 24 --eval-limit 8 --test-limit 8 --pass-k 0 --eval-every 0 "
                         "--steps 1000 --val-data tests/fixtures/val_small.txt "
                         "--test-data tests/fixtures/val_small.txt --seed 2";
    // μ = 1, β = 0: sampled R + trained 3R: 4·F·R, R = trained tokens
    snprintf(args, sizeof args, "%s --budget-unit gen-tokens --budget 1500 --eval-points 3 "
             "--run-dir /tmp/grpo_test/budget_tok", common);
    int rc = run_cmd_quiet(cmd_train, args, log);
    check(rc == 0, "budget: gen-tokens run exits 0", "exit %d", rc);
    check_budget_run(tmp_path("/tmp/grpo_test/budget_tok"), "gen-tokens", 1500, 3, 4.0);
    // μ = 2, β = 0: R + 3·2R = 7R, trained 2R: 3.5·F·trained
    double F = model_flops_per_token(&tiny);
    snprintf(args, sizeof args, "%s --num-iterations 2 --budget-unit flops --budget %.0f --eval-points 2 "
             "--run-dir /tmp/grpo_test/budget_flops", common, 5000.0 * F);
    rc = run_cmd_quiet(cmd_train, args, log);
    check(rc == 0, "budget: flops run exits 0", "exit %d", rc);
    check_budget_run(tmp_path("/tmp/grpo_test/budget_flops"), "flops", 5000.0 * F, 2, 3.5);
    // μ = 1, β = 0.04: R + 3R + π_ref's R = 5R
    snprintf(args, sizeof args, "%s --beta 0.04 --budget-unit seconds --budget 0.02 --eval-points 1 "
             "--run-dir /tmp/grpo_test/budget_sec", common);
    rc = run_cmd_quiet(cmd_train, args, log);
    check(rc == 0, "budget: seconds run exits 0", "exit %d", rc);
    check_budget_run(tmp_path("/tmp/grpo_test/budget_sec"), "seconds", 0.02, 1, 5.0);
    // steps: --budget-unit steps --budget 5 stops after step 5 with its points at steps 1..5, and it is
    // train --steps 5 step for step (constant schedule): the same weights, bit for bit
    snprintf(args, sizeof args, "%s --budget-unit steps --budget 5 --eval-points 5 "
             "--run-dir /tmp/grpo_test/budget_steps", common);
    rc = run_cmd_quiet(cmd_train, args, log);
    check(rc == 0, "budget: steps run exits 0", "exit %d", rc);
    check_budget_run(tmp_path("/tmp/grpo_test/budget_steps"), "steps", 5, 5, 4.0);
    {
        static char fcmd[4096], fout[4096];
        snprintf(fcmd, sizeof fcmd, "%s train %s --budget-unit steps --budget 2.5 --run-dir /tmp/grpo_test/budget_frac",
                 grpo_bin(), common);
        rewrite_tmp(fout, sizeof fout, fcmd);
        snprintf(fcmd, sizeof fcmd, "%.4000s", fout);
        int frc = run_binary(fcmd, fout, sizeof fout);
        check(frc == 2 && strstr(fout, "--budget 2.5: --budget-unit steps counts whole steps"),
              "budget: a fractional --budget of steps is refused, naming it", "exit %d: %.200s", frc, fout);
    }
    {
        char a5[2048], ev[512], mp[2][512];
        snprintf(a5, sizeof a5, "%s --steps 5 --run-dir /tmp/grpo_test/budget_steps5", common);
        int rc5 = run_cmd_quiet(cmd_train, a5, log);
        snprintf(ev, sizeof ev, "%s", tmp_path("/tmp/grpo_test/budget_steps/eval.csv"));
        char *evt = read_text(ev);
        double st_col[16];
        int np = evt ? csv_column(evt, "step", st_col, 16) : 0, at_steps = np == 6;
        for (int i = 0; at_steps && i < np; i++) at_steps = st_col[i] == i;
        free(evt);
        snprintf(mp[0], sizeof mp[0], "%s", tmp_path("/tmp/grpo_test/budget_steps/model.bin"));
        snprintf(mp[1], sizeof mp[1], "%s", tmp_path("/tmp/grpo_test/budget_steps5/model.bin"));
        GPT ma, mb;
        TrainState sa = {0}, sb = {0};
        load_checkpoint(mp[0], &ma, 1, &sa);
        load_checkpoint(mp[1], &mb, 1, &sb);
        int same = rc5 == 0 && sa.step == 5 && sb.step == 5 && ma.num_parameters == mb.num_parameters &&
                   !memcmp(ma.params_memory, mb.params_memory, ma.num_parameters * sizeof(float));
        check(at_steps && same, "budget: --budget-unit steps --budget 5 is train --steps 5, bit for bit; "
              "its points at steps 0..5", "exit %d, steps %d and %d, %d points%s", rc5, sa.step, sb.step, np,
              same ? "" : ", weights differ");
        free_gpt(&ma);
        free_gpt(&mb);
    }
    static char call_args[2][1024];
    snprintf(call_args[0], sizeof call_args[0], "%s --budget 1000 --resume "
             "/tmp/grpo_test/budget_tok/model.bin --run-dir /tmp/grpo_test/budget_r", common);
    snprintf(call_args[1], sizeof call_args[1], "%s --eval-points 2 --run-dir /tmp/grpo_test/budget_r",
             common);
    CmdCall resume = {cmd_train, call_args[0]}, points = {cmd_train, call_args[1]};
    (void)resume;
    // --budget with --resume: the counters are in the checkpoint, so an interrupted budget run goes
    // on counting (train.csv's budget_spent and eval.csv's points as in the run straight through);
    // another --budget, or a run that has spent it, is refused. Fresh processes (OpenMP after fork).
    static char cmd[4096], out[16384];
    snprintf(args, sizeof args, "%s --budget-unit gen-tokens --budget 1500 --eval-points 3 --save-every 3 "
             "--run-dir /tmp/grpo_test/budget_sv", common);
    rc = run_cmd_quiet(cmd_train, args, log);
    char sv_csv[512], sv_eval[512];
    snprintf(sv_csv, sizeof sv_csv, "%s", tmp_path("/tmp/grpo_test/budget_sv/train.csv"));
    snprintf(sv_eval, sizeof sv_eval, "%s", tmp_path("/tmp/grpo_test/budget_sv/eval.csv"));
    char *csv1 = read_text(sv_csv), *ev1 = read_text(sv_eval);
    double spent1[256], spent2[256], pts1[8], pts2[8];
    int rows1 = csv_column(csv1, "budget_spent", spent1, 256);
    snprintf(cmd, sizeof cmd, "%s train %s --budget-unit gen-tokens --budget 1500 --eval-points 3 --save-every 3 "
             "--resume %s --run-dir %s", grpo_bin(), common, tmp_path("/tmp/grpo_test/budget_sv/ckpt.bin"),
             tmp_path("/tmp/grpo_test/budget_sv"));
    rewrite_tmp(out, sizeof out, cmd);
    snprintf(cmd, sizeof cmd, "%.4000s", out);
    int rc2 = run_binary(cmd, out, sizeof out);
    char *csv2 = read_text(sv_csv), *ev2 = read_text(sv_eval);
    int rows2 = csv_column(csv2, "budget_spent", spent2, 256);
    int np1 = csv_column(ev1, "budget_spent", pts1, 8), np2 = csv_column(ev2, "budget_spent", pts2, 8);
    int same = rc == 0 && rc2 == 0 && rows1 == rows2 && rows1 > 3 && np1 == 4 && np2 == 4;
    for (int i = 0; same && i < rows1; i++) same = spent1[i] == spent2[i];
    for (int i = 0; same && i < np1; i++) same = pts1[i] == pts2[i];
    check(same, "budget: --budget --resume goes on counting: budget_spent and eval.csv as straight through",
          "exit %d, %d; %d and %d rows, %d and %d points: %.80s", rc, rc2, rows1, rows2, np1, np2,
          line_with(out, "error"));
    free(csv1); free(csv2); free(ev1); free(ev2);
    snprintf(cmd, sizeof cmd, "%s train %s --budget 1000 --resume %s --run-dir %s", grpo_bin(), common,
             tmp_path("/tmp/grpo_test/budget_sv/ckpt.bin"), tmp_path("/tmp/grpo_test/budget_r"));
    rewrite_tmp(out, sizeof out, cmd);
    snprintf(cmd, sizeof cmd, "%.4000s", out);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 2 && strstr(out, "--budget 1000: the run in") && strstr(out, "had --budget 1500"),
          "budget: --resume with another --budget is refused, naming both", "exit %d: %s", rc,
          line_with(out, "error"));
    snprintf(cmd, sizeof cmd, "%s train %s --budget 1500 --eval-points 3 --resume %s --run-dir %s", grpo_bin(), common,
             tmp_path("/tmp/grpo_test/budget_tok/model.bin"), tmp_path("/tmp/grpo_test/budget_r"));
    rewrite_tmp(out, sizeof out, cmd);
    snprintf(cmd, sizeof cmd, "%.4000s", out);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 2 && strstr(out, "has spent it already"), "budget: --resume of a run that spent its --budget is "
          "refused", "exit %d: %s", rc, line_with(out, "error"));
    expect_exit("budget: --eval-points without --budget is refused", cmd_call_fn, &points, 2,
                "needs --budget");
}

// modification time of a file in nanoseconds (0 when missing)
static long long mtime_ns(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) return 0;
    return (long long)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
}

/* ./grpo compare --quick end to end: the table, points.csv, the prereg hash; a second
   invocation redoes nothing; a run without its done marker is rerun to the same model (one
   run at a time instead of two); another configuration and a failing run are refused. */
static void test_compare_quick(void) {
    static char cmd[2048], out[65536];
    char study[256], path[512], path2[512];
    snprintf(study, sizeof study, "%s/study", TMPDIR_);
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s --jobs 2", grpo_bin(), study);
    double t0 = wall_seconds();
    int rc = run_binary(cmd, out, sizeof out);
    double secs = wall_seconds() - t0;
    int table = strstr(out, "per-step view") && strstr(out, "matched generated tokens") &&
                strstr(out, "matched time") && strstr(out, "Δ vs grpo") && strstr(out, "steps to peak") &&
                strstr(out, "H1 lambda-grpo vs grpo");
    check(rc == 0 && table, "compare --quick: exits 0 and prints the three views and the tests",
          "exit %d in %.1f s%s", rc, secs, rc ? out : "");
    // (timed for the optimised build only: make test-asan runs it under AddressSanitizer, ~50x slower)
    int optimised = !strcmp(grpo_bin(), "./grpo");
    check(secs < 60 || !optimised, "compare --quick: under a minute", "%.1f s%s", secs,
          optimised ? "" : " (not timed: GRPO_BIN is not ./grpo)");
    // the prereg's hash line: FNV-1a 64 of every byte above it, also printed before the runs
    snprintf(path, sizeof path, "%s/prereg.txt", study);
    size_t n;
    char *pre = (char *)read_all(path, &n);
    pre = (char *)realloc(pre, n + 1);
    pre[n] = 0;
    char *hash_line = strstr(pre, "\nhash: fnv1a64 ");
    char want[64] = "";
    if (hash_line) snprintf(want, sizeof want, "hash: fnv1a64 %016llx",
                            (unsigned long long)fnv1a64(pre, (size_t)(hash_line + 1 - pre)));
    char *printed = strstr(out, "hash: fnv1a64 ");
    int hashed = hash_line && !strncmp(hash_line + 1, want, strlen(want));
    int shown = printed && !strncmp(printed, want, strlen(want)) && printed < strstr(out, "start:");
    check(hashed && shown && strstr(pre, "hypotheses") && strstr(pre, "# config:"),
          "compare --quick: prereg.txt (config, hypotheses) and its hash, printed before the first run",
          "%s", want);
    free(pre);
    // points.csv: every point of every run (2 methods x 2 seeds x points 0..2)
    snprintf(path, sizeof path, "%s/points.csv", study);
    char *pts = (char *)read_all(path, &n);
    pts = (char *)realloc(pts, n + 1);
    pts[n] = 0;
    double point[64], seed[64];
    int rows = csv_column(pts, "point", point, 64);
    csv_column(pts, "seed", seed, 64);
    int ok = rows == 12 && !strncmp(pts, "method,seed,point,", 18);
    for (int i = 0; ok && i < rows; i++) ok &= point[i] == i % 3 && seed[i] == 1 + i / 6;
    check(ok, "compare --quick: points.csv has every point of every run", "%d rows", rows);
    free(pts);
    // a second invocation: nothing is redone
    snprintf(path, sizeof path, "%s/runs/grpo/seed_1/model.bin", study);
    snprintf(path2, sizeof path2, "%s/sft/model.bin", study);
    long long m1 = mtime_ns(path), s1 = mtime_ns(path2);
    rc = run_binary(cmd, out, sizeof out);
    int redone = strstr(out, "start:") || strstr(out, "sft: making") || mtime_ns(path) != m1 ||
                 mtime_ns(path2) != s1;
    check(rc == 0 && strstr(out, "4 done already, 0 to run") && !redone && strstr(out, "per-step view"),
          "compare --quick: a second invocation redoes nothing", "exit %d", rc);
    // an interrupted run (no done marker) is rerun, alone: the same model bit for bit
    char saved[512], done[512];
    snprintf(saved, sizeof saved, "%s/lambda_seed2.bin", TMPDIR_);
    snprintf(path, sizeof path, "%s/runs/lambda-grpo/seed_2/model.bin", study);
    snprintf(done, sizeof done, "%s/runs/lambda-grpo/seed_2/done", study);
    rename(path, saved);
    unlink(done);
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s --jobs 1", grpo_bin(), study);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 0 && strstr(out, "3 done already, 1 to run") && strstr(out, "start: lambda-grpo/seed_2") &&
          files_equal(path, saved),
          "compare --quick: an interrupted run is rerun to the same model (1 job, not 2)", "exit %d", rc);
    // another configuration is refused; so is a study whose runs fail (the log is named)
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s --seeds 3", grpo_bin(), study);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 1 && strstr(out, "pre-registered with another configuration"),
          "compare: another configuration in the same study is refused", "exit %d", rc);
    // prereg.txt is checked against its own hash: edited text (another seed range) or a line added
    // below the hash is refused, naming the file, before anything runs
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s --jobs 1", grpo_bin(), study);
    snprintf(path, sizeof path, "%s/prereg.txt", study);
    snprintf(path2, sizeof path2, "%s/prereg.saved", TMPDIR_);
    char *orig = (char *)read_all(path, &n);
    orig = (char *)realloc(orig, n + 1);
    orig[n] = 0;
    write_bytes(path2, orig, n);
    check(strstr(orig, "\n" PREREG_SFT_LINE) != NULL, "compare: prereg.txt records the made SFT checkpoint's hash",
          "");
    char *edited = (char *)mallocCheck(n + 64);
    memcpy(edited, orig, n + 1);
    char *seeds = strstr(edited, "seeds: 1..2");
    if (seeds) seeds[10] = '5';
    write_bytes(path, edited, n);
    rc = run_binary(cmd, out, sizeof out);
    check(seeds && rc == 1 && strstr(out, "does not match its own hash") && strstr(out, path) && !strstr(out, "runs:"),
          "compare: a prereg.txt edited after its hash (seeds 1..5) is refused, naming it", "exit %d: %s", rc,
          line_with(out, "error"));
    snprintf(edited, n + 64, "%sseeds: 1..5\n", orig);
    write_bytes(path, edited, strlen(edited));
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 1 && strstr(out, "below its hash line") && strstr(out, path),
          "compare: a line added below prereg.txt's hash is refused", "exit %d: %s", rc, line_with(out, "error"));
    write_bytes(path, orig, n);
    // the study's SFT checkpoint swapped mid-study: the run that is to be redone does not start
    char sft_path[512], other[512], sft_saved[512];
    snprintf(sft_path, sizeof sft_path, "%s/sft/model.bin", study);
    snprintf(sft_saved, sizeof sft_saved, "%s/sft_saved.bin", TMPDIR_);
    snprintf(other, sizeof other, "%s/runs/grpo/seed_1/model.bin", study);   // another model, the same shape
    rename(sft_path, sft_saved);
    size_t on;
    void *other_bytes = read_all(other, &on);
    write_bytes(sft_path, other_bytes, on);
    free(other_bytes);
    unlink(done);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 1 && strstr(out, "is not the one") && strstr(out, sft_path) && !strstr(out, "start:"),
          "compare: a swapped SFT checkpoint is refused before a run starts from it", "exit %d: %s", rc,
          line_with(out, "error"));
    rename(sft_saved, sft_path);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 0 && strstr(out, "start: lambda-grpo/seed_2") && files_equal(path, path2),
          "compare: ... the restored one runs it, prereg.txt unchanged", "exit %d", rc);
    free(orig);
    free(edited);
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s/study_bad --init %s/sft/model.bin "
             "--methods grpo:--max-new-tokens=60", grpo_bin(), TMPDIR_, study);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 1 && strstr(out, "error: run grpo+max-new-tokens=60/seed_1 failed") &&
          strstr(out, "seed_1/run.log") && strstr(out, "exceed the model's context"),
          "compare: a failing run is reported with its log, exit 1", "exit %d", rc);
    // --sft-args after --quick add to its SFT settings (they replaced them: a 1-layer default model)
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s/study_sft_args --seeds 1 "
             "--sft-args '--steps 7 --context 8'", grpo_bin(), TMPDIR_);
    rc = run_binary(cmd, out, sizeof out);
    const char *sft_cmd = whole_line_with(out, " sft ");
    check(strstr(sft_cmd, "--layers 2 --heads 2 --channels 32") && strstr(sft_cmd, "--steps 300") &&
          strstr(sft_cmd, "--steps 7 --context 8") && strstr(out, "layers=2"),
          "compare --quick --sft-args: added to the quick SFT settings (the later --steps wins)", "exit %d: %s",
          rc, sft_cmd);
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s/study_bad2 --methods grpo:--steps=5", grpo_bin(),
             TMPDIR_);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 2 && strstr(out, "--steps is set by compare"),
          "compare: a method may not set what compare sets", "exit %d", rc);
}

/* cost_to_reach on hand-made evaluation curves (x: generated tokens at points 0..3): reached
   between two evaluations (linear interpolation: 0.3 -> 0.5 over 100 -> 200 tokens reaches 0.4
   at 150), exactly at an evaluation (that point's x), at point 0 (the SFT model: its x), first
   crossing taken when the curve later dips, and never (NAN, censored, whatever the curve). */
static void test_compare_cost_to_reach(void) {
    const double xs[4] = {0, 100, 200, 300};
    const double rising[4] = {0.1, 0.3, 0.5, 0.6}, dip[4] = {0.2, 0.45, 0.1, 0.9}, flat[4] = {0.2, 0.2, 0.3, 0.35};
    double between = cost_to_reach(xs, rising, 4, 0.4);    // 100 + (0.4-0.3)/(0.5-0.3)*100
    double at_point = cost_to_reach(xs, rising, 4, 0.5);   // val[2] = 0.5 exactly
    double at_zero = cost_to_reach(xs, rising, 4, 0.1);
    double first = cost_to_reach(xs, dip, 4, 0.4);          // 0.2 -> 0.45: 0 + 0.2/0.25*100 = 80
    double never = cost_to_reach(xs, flat, 4, 0.4);
    double top = cost_to_reach(xs, rising, 4, 0.6);         // reached at the last point only
    check(fabs(between - 150.0) < 1e-9 && at_point == 200.0 && at_zero == 0.0 && fabs(first - 80.0) < 1e-9 &&
              isnan(never) && top == 300.0,
          "compare: cost_to_reach interpolates between evaluations, takes a point's x, the first crossing, NAN "
          "when never reached",
          "between %g at %g zero %g first %g never %g top %g", between, at_point, at_zero, first, never, top);
}

/* summary.txt without what depends on the machine's speed: the matched-time view (its section,
   to the blank line after it) and the end table's seconds column (the last field of each of its
   lines). Everything else stays, byte for byte. */
static char *summary_without_seconds(const char *text) {
    size_t n = strlen(text);
    char *out = (char *)mallocCheck(n + 1), *o = out;
    int in_time = 0, in_end = 0;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (!strncmp(line, "matched time", 12)) in_time = 1;
        if (!strncmp(line, "at the end of the budget", 24)) in_end = 1;
        if (len == 0) in_time = in_end = 0;
        if (!in_time) {
            size_t keep = len;
            if (in_end && strncmp(line, "at the end", 10)) {   // drop the last field (seconds)
                while (keep && line[keep - 1] == ' ') keep--;
                while (keep && line[keep - 1] != ' ') keep--;
                while (keep && line[keep - 1] == ' ') keep--;   // and its padding (9.9 s and 10.2 s)
            }
            memcpy(o, line, keep);
            o += keep;
            *o++ = '\n';
        }
        line += len + (nl ? 1 : 0);
    }
    *o = 0;
    return out;
}

/* ./grpo compare --plan: its standard output is one shell line per run not done and nothing
   else; `xargs -P 2` runs them, then a plain compare with the same options collects, and its
   summary.txt is the in-process study's but for the seconds (summary_without_seconds, a
   strcmp of the rest). --target-acc: a run that never reaches X is counted (the quick model's
   accuracy is 0: 2 of 2 for both methods), and a rerun with another X is refused. */
/* compare --only: the same plan line started twice at once. While one holds the run, the other
   stops with exit 1 before it opens (and would truncate) the run's log; then the line runs. */
// compare refuses a study whose runs scored test sets of different sizes (an edited result.txt)
static void test_compare_test_n(void) {
    static char cmd[2048], out[65536];
    char st[256], res[320];
    snprintf(st, sizeof st, "%s/test_n_study", TMPDIR_);
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s", grpo_bin(), st);
    int rc0 = run_binary(cmd, out, sizeof out);
    snprintf(res, sizeof res, "%s/runs/grpo/seed_2/result.txt", st);
    char *text = slurp(res);
    char *at = text ? strstr(text, "test_n ") : NULL;
    int edited = 0;
    if (at && at[7] >= '1' && at[7] <= '9') {   // test_n N -> 0, test_acc already 0 for the quick model
        FILE *f = fopen(res, "w");
        if (f) {
            fwrite(text, 1, (size_t)(at - text) + 7, f);
            fputs("0", f);
            char *nl = strchr(at, '\n');
            if (nl) fputs(nl, f);
            edited = fclose(f) == 0;
        }
    }
    free(text);
    int rc = run_binary(cmd, out, sizeof out);
    check(rc0 == 0 && edited && rc == 1 && strstr(out, "result.txt: test_n 0, but ") && strstr(out, "score one test set"),
          "compare: runs whose result.txt hold another test_n are refused, naming both files",
          "exit %d, edited %d, exit %d: %s", rc0, edited, rc, line_with(out, "test_n"));
}

// compare refuses --save-every (its checkpoint would make the rerun of an interrupted run refuse)
static void test_compare_no_save_every(void) {
    static char cmd[2048], out[16384];
    const char *how[3] = {"--train-args '--save-every 3'", "--sft-args '--save-every 3'",
                          "--methods grpo,mine:--objective=lambda-grpo:--save-every=3"};
    int ok = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s compare --quick --study %s/no_save_%d %s", grpo_bin(), TMPDIR_, i, how[i]);
        int rc = run_binary(cmd, out, sizeof out);
        ok += rc == 2 && strstr(out, "--save-every: compare reruns an interrupted run") != NULL;
    }
    check(ok == 3, "compare: --save-every in --train-args, --sft-args or a method is refused, saying why",
          "%d of 3 refused", ok);
}

/* A decaying --schedule in compare: refused (before the prereg) unless the budget counts steps,
   and then each run's --steps is the budget, so that the decay ends at the budget's end. */
static void test_compare_schedule(void) {
    static char cmd[2048], out[16384];
    char path[512];
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s/sched_a --methods grpo,cos:--objective=grpo:--schedule=cosine",
             grpo_bin(), TMPDIR_);
    int rc = run_binary(cmd, out, sizeof out);
    snprintf(path, sizeof path, "%s/sched_a/prereg.txt", TMPDIR_);
    struct stat sb;
    check(rc == 2 && strstr(out, "--schedule cosine decays the learning rate over --steps") && stat(path, &sb) != 0,
          "compare: a decaying schedule under a gen-tokens budget is refused before the prereg", "exit %d: %.300s", rc, out);
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s/sched_b --seeds 1 --budget-unit steps --budget 3 "
             "--methods cos:--objective=grpo:--schedule=cosine --plan", grpo_bin(), TMPDIR_);
    rc = run_binary(cmd, out, sizeof out);
    snprintf(path, sizeof path, "%s/sched_b/prereg.txt", TMPDIR_);
    char *pre = slurp(path);
    check(rc == 0 && pre && strstr(pre, " --schedule cosine --steps 3 --budget-unit steps --budget 3 "),
          "compare: under --budget-unit steps a run's --steps is the budget (a cosine decays over it)", "exit %d", rc);
    free(pre);
    // another unit without its own --budget: the default (tokens) would be read as steps or seconds
    int refused = 0;
    const char *units[3] = {"steps", "seconds", "flops"};
    for (int u = 0; u < 3; u++) {
        snprintf(cmd, sizeof cmd, "%s compare --quick --study %s/sched_c%d --budget-unit %s", grpo_bin(), TMPDIR_, u,
                 units[u]);
        rc = run_binary(cmd, out, sizeof out);
        snprintf(path, sizeof path, "%s/sched_c%d", TMPDIR_, u);
        refused += rc == 2 && strstr(out, "give --budget N in") && stat(path, &sb) != 0;
    }
    check(refused == 3, "compare: --budget-unit steps, seconds or flops without --budget is refused, nothing written",
          "%d of 3 refused", refused);
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s/sched_d --budget-unit steps --budget 3e9", grpo_bin(), TMPDIR_);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 2 && strstr(out, "--budget 3e+09: with --budget-unit steps at most 10000000"),
          "compare: a steps budget beyond train's --steps range is refused, naming --budget", "exit %d: %.200s", rc, out);
}

static void test_compare_only_lock(void) {
    static char cmd[4096], out[65536];
    char c[256], run[300], lockp[320], logp[320], donep[320];
    snprintf(c, sizeof c, "%s/only_lock", TMPDIR_);
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s --plan", grpo_bin(), c);
    int rc = run_binary(cmd, out, sizeof out);
    snprintf(run, sizeof run, "%s/runs/grpo/seed_1", c);
    make_dir(run);
    snprintf(lockp, sizeof lockp, "%s/.only-lock", run);
    snprintf(logp, sizeof logp, "%s/run.log", run);
    snprintf(donep, sizeof donep, "%s/done", run);
    int fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0666);   // as a running --only holds it
    int held = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s --only grpo/seed_1", grpo_bin(), c);
    int rc1 = run_binary(cmd, out, sizeof out);
    struct stat sb;
    int untouched = stat(logp, &sb) != 0;
    int named = strstr(out, "--only 'grpo/seed_1': that run is in use") != NULL;
    if (fd >= 0) close(fd);
    int rc2 = run_binary(cmd, out, sizeof out);
    int done = stat(donep, &sb) == 0;
    check(rc == 0 && held && rc1 == 1 && untouched && named && rc2 == 0 && done,
          "compare --only: a second start of a running line stops before touching its log; then it runs",
          "plan exit %d, held %d, exit %d, log untouched %d, named %d; then exit %d, done %d", rc, held, rc1,
          untouched, named, rc2, done);
}

static void test_compare_plan(void) {
    static char cmd[4096], out[65536];
    char a[256], b[256], plan[512], path[512];
    snprintf(a, sizeof a, "%s/plan_a", TMPDIR_);
    snprintf(b, sizeof b, "%s/plan_b", TMPDIR_);
    snprintf(plan, sizeof plan, "%s/plan.txt", TMPDIR_);
    snprintf(cmd, sizeof cmd, "%s compare --quick --train-args '--temperature 1' --study %s --target-acc 0.5 --jobs 2", grpo_bin(), a);
    int rc = run_binary(cmd, out, sizeof out);
    const char *cost = strstr(out, "cost at equal accuracy");
    int counted = cost && strstr(cost, "grpo ") && strstr(cost, "2 of 2") && strstr(strstr(cost, "2 of 2") + 6, "2 of 2");
    check(rc == 0 && counted && strstr(out, "linearly interpolated"),
          "compare --target-acc 0.5: the cost view counts the runs that never reach it (2 of 2)", "exit %d%s", rc,
          rc ? out : "");
    snprintf(cmd, sizeof cmd, "%s compare --quick --train-args '--temperature 1' --study %s --target-acc 0.6", grpo_bin(), a);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 1 && strstr(out, "pre-registered with another configuration"),
          "compare: a rerun with another --target-acc is refused (it is pre-registered)", "exit %d", rc);
    snprintf(cmd, sizeof cmd, "(%s compare --quick --train-args '--temperature 1' --study %s --target-acc 0.5 --plan > %s)", grpo_bin(), b, plan);
    rc = run_binary(cmd, out, sizeof out);
    char *lines = slurp(plan);
    int nlines = 0, ok = lines != NULL;
    for (char *l = lines; ok && l && *l; nlines++) {
        char *nl = strchr(l, '\n');
        ok = nl && !strncmp(l, "cd '/", 5) && strstr(l, " compare '--quick' ") && strstr(l, " --only '") < nl &&
             strstr(l, " --only '");
        l = nl ? nl + 1 : NULL;
    }
    snprintf(path, sizeof path, "%s/runs", b);
    struct stat sb;
    check(rc == 0 && ok && nlines == 4 && stat(path, &sb) != 0,
          "compare --plan: prints one --only line per run (4) on stdout, nothing else, runs none", "exit %d, %d lines",
          rc, nlines);
    free(lines);
    // one line a command: xargs without -0 would strip the lines' quotes (--train-args' value has a space)
    snprintf(cmd, sizeof cmd, "cd / && tr '\\n' '\\0' < %s | xargs -0 -P 2 -I{} sh -c {}", plan);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 0, "compare --plan | xargs -P 2: every line runs", "exit %d: %s", rc, line_with(out, "error"));
    snprintf(cmd, sizeof cmd, "(%s compare --quick --train-args '--temperature 1' --study %s --target-acc 0.5 --plan > %s)", grpo_bin(), b, plan);
    rc = run_binary(cmd, out, sizeof out);
    lines = slurp(plan);
    check(rc == 0 && lines && !*lines && strstr(out, "plan: 0 runs to do of 4"),
          "compare --plan: once they ran, no line", "exit %d", rc);
    free(lines);
    snprintf(cmd, sizeof cmd, "%s compare --quick --train-args '--temperature 1' --study %s --target-acc 0.5", grpo_bin(), b);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 0 && strstr(out, "4 done already, 0 to run") && !strstr(out, "start:"),
          "compare after --plan's runs: collects, runs nothing", "exit %d", rc);
    snprintf(path, sizeof path, "%s/summary.txt", a);
    char *sa = slurp(path);
    snprintf(path, sizeof path, "%s/summary.txt", b);
    char *sb_ = slurp(path);
    char *ta = sa ? summary_without_seconds(sa) : NULL, *tb = sb_ ? summary_without_seconds(sb_) : NULL;
    const char *diff = "";
    if (ta && tb) {   // the first line that differs
        const char *p = ta, *q = tb;
        while (*p && *p == *q) p++, q++;
        while (p > ta && p[-1] != '\n') p--;
        diff = p;
    }
    check(ta && tb && !strcmp(ta, tb) && strstr(ta, "per-step view") && strstr(ta, "cost at equal accuracy") &&
              !strstr(ta, "\nmatched time:"),
          "compare --plan, xargs -P 2, compare: summary.txt is the in-process study's but for seconds",
          "first difference: %.200s", diff);
    free(sa);
    free(sb_);
    free(ta);
    free(tb);
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s/plan_c --only grpo/seed_1", grpo_bin(), TMPDIR_);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 1 && strstr(out, "--plan first"), "compare --only without --plan's prereg and SFT is refused",
          "exit %d", rc);
}

/* ---- compare --one-batch P: the one-batch prediction view */

/* the count an independent reading of the view's definition gives: M samples for each of the
   first P prompts, sample s of prompt i on stream (1, 2^41 + i·M + s), one sequence per sampler
   call (compare's batch is 64), the verifier's reward 1 counted */
static long onebatch_count_by_hand(GPT *m, const Dataset *d, int P, int M, int max_new, float T) {
    KVCache kv;
    build_kvcache(&kv, &m->config, 1);
    int *comp = (int *)mallocCheck((size_t)max_new * sizeof(int)), clen = 0;
    float *lp = (float *)mallocCheck((size_t)max_new * sizeof(float));
    long correct = 0;
    for (int i = 0; i < P; i++)
        for (int s = 0; s < M; s++) {
            Rng rng;
            rng_seed(&rng, 1, (1ull << 41) + (uint64_t)i * M + s);
            const int *pp = d->prompt + (size_t)i * d->maxT;
            sample_completions(m, &kv, 1, &pp, &d->prompt_len[i], max_new, T, 0, &rng, NULL, comp, lp, &clen);
            correct += task_reward(d->task, d->nums + (size_t)i * MAX_NUMS, d->num_count[i], d->target[i], comp,
                                   clen, 0.0f) == 1.0f;
        }
    free(comp);
    free(lp);
    free_kvcache(&kv);
    return correct;
}

static long read_count(const char *path) {
    char *t = slurp(path);
    long c = -1, n = -1;
    if (t && sscanf(t, "correct %ld\nsamples %ld\n", &c, &n) != 2) c = -1;
    free(t);
    return c;
}

/* A quick chain-sum study (its tiny model solves some prompts) made by --plan, xargs and a
   collecting compare: (a) grpo seed 1's one-batch count is that of an independent `./grpo
   train --steps 1` with the run's command line (from prereg.txt), scored by hand, and its first
   train.csv row is the full run's (the same first batch); (b) the SFT model scored twice (and at
   another batch size) gives the same count: Δ exactly 0; the view and the cache; (d) another
   --one-batch, or none, against its prereg is refused. */
static void test_compare_one_batch(void) {
    static char cmd[4096], out[65536];
    char st[256], plan[320], path[1024], dir[512];
    // a first update that changes samples of this tiny model: 8 x 8 completions, lr 3e-3 (warm-up 1
    // step: the full run's step 1 at lr too, and the one-batch run's config must still say warmup=0)
    const char *args = "--quick --sft-args '--task chain-sum --steps 600' --train-args '--task chain-sum --group-size 8 "
                       "--prompts-per-step 8 --lr 3e-3 --warmup 1' --one-batch 24";
    snprintf(st, sizeof st, "%s/onebatch_study", TMPDIR_);
    snprintf(plan, sizeof plan, "%s/onebatch_plan.txt", TMPDIR_);
    // (sh runs the plan's lines: xargs would take their quotes, here around blanks, as its own)
    snprintf(cmd, sizeof cmd, "((%s compare %s --study %s --plan > %s) && (cd / && sh %s) && %s compare %s --study %s)",
             grpo_bin(), args, st, plan, plan, grpo_bin(), args, st);
    int rc = run_binary(cmd, out, sizeof out);
    const char *view = strstr(out, "one-batch prediction (pre-registered --one-batch 24)");
    int shown = view && strstr(view, "one-batch Δ") && strstr(view, "verdict: ") && strstr(view, " ranking: ") &&
                strstr(out, "one-batch: grpo/seed_1's first update");
    snprintf(path, sizeof path, "%s/summary.txt", st);
    char *sum = slurp(path);
    check(rc == 0 && shown && sum && strstr(sum, "one-batch prediction") && strstr(sum, "verdict: "),
          "compare --one-batch after --plan and xargs: the view, in the report and summary.txt", "exit %d: %s", rc,
          rc ? line_with(out, "error") : "");
    // a rerun measures nothing again (the counts are cached) and prints the same view
    snprintf(cmd, sizeof cmd, "%s compare %s --study %s", grpo_bin(), args, st);
    rc = run_binary(cmd, out, sizeof out);
    snprintf(path, sizeof path, "%s/summary.txt", st);
    char *sum2 = slurp(path);
    check(rc == 0 && !strstr(out, "first update (log") && sum && sum2 && strstr(sum2, "verdict: ") &&
              !strcmp(strstr(sum, "one-batch prediction"), strstr(sum2, "one-batch prediction")),
          "compare --one-batch: a rerun measures nothing again and prints the same view", "exit %d", rc);
    free(sum);
    free(sum2);
    // a try stopped after its first update but before probe.txt: its model.bin stays, and a rerun
    // measures that run again (the same count) instead of refusing the finished run in its directory
    snprintf(path, sizeof path, "%s/onebatch/grpo/seed_1/probe.txt", st);
    char *probe = slurp(path);
    unlink(path);
    rc = run_binary(cmd, out, sizeof out);
    char *probe2 = slurp(path);
    check(rc == 0 && strstr(out, "grpo/seed_1's first update (log") && probe && probe2 && !strcmp(probe, probe2),
          "compare --one-batch: a run's probe.txt lost after its first update is measured again, the same",
          "exit %d: %s", rc, rc ? line_with(out, "error") : "");
    free(probe);
    free(probe2);
    // (a) the independent first update: the run's command line from prereg.txt, --steps 1, no budget
    snprintf(path, sizeof path, "%s/prereg.txt", st);
    char *pre = slurp(path);
    char line[2048] = "";
    float T = 0;
    int P = 0, M = 0, max_new = 0;
    const char *at = pre ? strstr(pre, "  method grpo (seed 1") : NULL;
    at = at ? strstr(at, " train ") : NULL;
    if (at) snprintf(line, sizeof line, "%.*s", (int)(strchr(at, '\n') - at), at);
    const char *ob = pre ? strstr(pre, "  one-batch: the first ") : NULL;
    char val[512] = "";
    int parsed = ob && sscanf(ob, "  one-batch: the first %d prompts of %511s x %d samples at temperature %f, "
                              "max-new-tokens %d", &P, val, &M, &T, &max_new) == 5;
    free(pre);
    char *cut = strstr(line, " --steps 10000000 --budget-unit gen-tokens --budget 8000 --eval-points 2");
    char *rd = strstr(line, " --run-dir ");
    if (cut && rd) {
        memmove(cut, cut + strlen(" --steps 10000000 --budget-unit gen-tokens --budget 8000 --eval-points 2"),
                strlen(cut + strlen(" --steps 10000000 --budget-unit gen-tokens --budget 8000 --eval-points 2")) + 1);
        rd = strstr(line, " --run-dir ");
        *rd = 0;
    }
    snprintf(dir, sizeof dir, "%s/onebatch_by_hand", TMPDIR_);
    snprintf(cmd, sizeof cmd, "%s%s --steps 1 --run-dir %s", grpo_bin(), line, dir);
    int rc_train = cut && rd ? run_binary(cmd, out, sizeof out) : -1;
    GPT sft, after;
    Dataset d;
    long sft_hand = -1, after_hand = -1, sft_again = -1, sft_b7 = -1, sft_seed2 = -1;
    snprintf(path, sizeof path, "%s/sft/model.bin", st);
    if (rc_train == 0 && parsed) {
        load_checkpoint(path, &sft, 1, NULL);
        load_dataset(&d, val, sft.config.max_seq_len, 0, &TASKS[1]);
        snprintf(path, sizeof path, "%s/model.bin", dir);
        load_checkpoint(path, &after, 1, NULL);
        sft_hand = onebatch_count_by_hand(&sft, &d, P, M, max_new, T);
        after_hand = onebatch_count_by_hand(&after, &d, P, M, max_new, T);
        // (b) common random numbers: the same model twice, at another batch size too; another seed differs
        sft_again = onebatch_score(&sft, &d, P, M, max_new, T, OB_SEED, 64);
        sft_b7 = onebatch_score(&sft, &d, P, M, max_new, T, OB_SEED, 7);
        sft_seed2 = onebatch_score(&sft, &d, P, M, max_new, T, OB_SEED + 1, 64);
        free_gpt(&after);
        free_gpt(&sft);
        free_dataset(&d);
    }
    snprintf(path, sizeof path, "%s/onebatch/sft.txt", st);
    long sft_cached = read_count(path);
    snprintf(path, sizeof path, "%s/onebatch/grpo/seed_1/probe.txt", st);
    long after_cached = read_count(path);
    check(rc_train == 0 && parsed && P == 24 && M == 16 && sft_hand == sft_cached && after_hand == after_cached &&
              after_hand >= 0 && sft_hand > 0 && after_hand != sft_hand,
          "compare --one-batch: grpo seed 1's counts = an independent train --steps 1 scored by hand",
          "train exit %d, parsed %d; SFT %ld by hand, %ld cached; after %ld by hand, %ld cached", rc_train, parsed,
          sft_hand, sft_cached, after_hand, after_cached);
    // the same first batch as the full run: train.csv's first row, but its timings (13 fields)
    char *r1 = NULL, *r2 = NULL;
    snprintf(path, sizeof path, "%s/onebatch/grpo/seed_1/train.csv", st);
    char *t1 = slurp(path);
    snprintf(path, sizeof path, "%s/runs/grpo/seed_1/train.csv", st);
    char *t2 = slurp(path);
    int same_row = 0;
    if (t1 && t2 && (r1 = strchr(t1, '\n')) && (r2 = strchr(t2, '\n'))) {
        r1++;
        r2++;
        int n = 0, k = 1;
        while (k <= 13 && r1[n] && r1[n] != '\n') k += r1[n++] == ',';
        same_row = k == 14 && n > 13 && !strncmp(r1, r2, (size_t)n);
    }
    free(t1);
    free(t2);
    snprintf(path, sizeof path, "%s/onebatch/grpo/seed_1/run.log", st);
    char *obl = slurp(path);
    snprintf(path, sizeof path, "%s/runs/grpo/seed_1/run.log", st);
    char *fl = slurp(path);
    check(obl && fl && strstr(obl, " warmup=0 ") && strstr(fl, " warmup=1 "),
          "compare --one-batch: the first update runs at the peak --lr (warmup=0; the study's runs: warmup=1)",
          "%s", obl ? "" : "no log");
    free(obl);
    free(fl);
    check(same_row, "compare --one-batch: its first update's train.csv row 1 is the full run's (the same first batch)",
          "%s", same_row ? "" : "differs");
    check(sft_again == sft_hand && sft_b7 == sft_hand && sft_hand >= 0 && sft_seed2 != sft_hand,
          "compare --one-batch: the SFT model scored twice (batch 64, 7) gives Δ exactly 0; another seed differs",
          "%ld, %ld, %ld; seed 2 %ld", sft_hand, sft_again, sft_b7, sft_seed2);
    // (d) pre-registered: another P, or none, is refused
    char other[600];
    snprintf(other, sizeof other, "%s", args);
    memcpy(strstr(other, "--one-batch 24"), "--one-batch 25", 14);
    snprintf(cmd, sizeof cmd, "%s compare %s --study %s", grpo_bin(), other, st);
    int rc1 = run_binary(cmd, out, sizeof out);
    int named1 = strstr(out, "pre-registered with another configuration") != NULL;
    *strstr(other, " --one-batch 25") = 0;
    snprintf(cmd, sizeof cmd, "%s compare %s --study %s", grpo_bin(), other, st);
    int rc2 = run_binary(cmd, out, sizeof out);
    int named2 = strstr(out, "pre-registered with another configuration") != NULL;
    check(rc1 == 1 && named1 && rc2 == 1 && named2,
          "compare: another --one-batch, or none, against its prereg is refused", "exit %d %d, exit %d %d", rc1,
          named1, rc2, named2);
}

// (c) the verdict's arithmetic on hand-made numbers
static void test_compare_one_batch_verdict(void) {
    const char *labels[3] = {"grpo", "a", "b"};
    char *text = NULL;
    size_t n = 0;
    // same ranking: Δ 0.02±0.005, 0.03, 0.01; gains 0.10, 0.13, 0.04 -> a: predicted 0.10·0.01/0.02 = +5 points
    MeanCI d1[3] = {{3, 0.02, 0.001, 0.005}, {3, 0.03, 0.001, 0.005}, {3, 0.01, 0.001, 0.005}};
    double g1[3] = {0.10, 0.13, 0.04}, act1[3] = {0.0, 0.03, -0.06};
    FILE *f = open_memstream(&text, &n);
    OneBatchVerdict v1 = onebatch_verdict(f, 3, 0, labels, d1, g1, act1, "test gain");
    fclose(f);
    int ok1 = v1.same && v1.determined && fabs(v1.predicted[1] - 0.05) < 1e-12 && fabs(v1.predicted[2] + 0.05) < 1e-12 &&
              strstr(text, "verdict: same ranking: one-batch Δ a > grpo > b; training (test gain) a > grpo > b") &&
              strstr(text, "a: predicted +5.00, actual +3.00: the one-batch test overstates the gap by 2.00 points") &&
              strstr(text, "b: predicted -5.00, actual -6.00: the one-batch test understates the gap by 1.00 points");
    check(ok1, "compare --one-batch verdict: same ranking, predicted gap gain_ref·(Δ−Δ_ref)/Δ_ref against actual",
          "%s", ok1 ? "" : text);
    free(text);
    // different ranking (b ahead in training); means equal to within rounding are ties
    MeanCI d2[3] = {{3, 0.02, 0.001, 0.005}, {3, 0.1 + 0.2, 0.001, 0.005}, {3, 0.3, 0.001, 0.005}};
    double g2[3] = {0.10, 0.05, 0.20}, act2[3] = {0, -0.05, 0.10};
    f = open_memstream(&text, &n);
    OneBatchVerdict v2 = onebatch_verdict(f, 3, 0, labels, d2, g2, act2, "val gain");
    fclose(f);
    int ok2 = !v2.same && strstr(text, "verdict: different ranking: one-batch Δ a = b > grpo; training (val gain) "
                                       "b > grpo > a") && strstr(text, "(and gets its sign wrong)");
    check(ok2, "compare --one-batch verdict: different ranking, ties within rounding, a wrong sign", "%s", ok2 ? "" : text);
    free(text);
    // Δ_ref's interval includes 0, or one seed (no interval): the scale is not determined
    MeanCI d3[3] = {{3, 0.002, 0.001, 0.005}, {3, 0.03, 0.001, 0.005}, {3, 0.01, 0.001, 0.005}};
    MeanCI d4[3] = {{1, 0.02, NAN, NAN}, {1, 0.03, NAN, NAN}, {1, 0.01, NAN, NAN}};
    f = open_memstream(&text, &n);
    OneBatchVerdict v3 = onebatch_verdict(f, 3, 0, labels, d3, g1, act1, "test gain");
    OneBatchVerdict v4 = onebatch_verdict(f, 3, 0, labels, d4, g1, act1, "test gain");
    fclose(f);
    int ok3 = !v3.determined && !v4.determined && isnan(v3.predicted[1]) && !strstr(text, "predicted +") &&
              strstr(text, "grpo's one-batch Δ is +0.0020±0.0050, its 95% interval includes 0") &&
              strstr(text, "grpo's one-batch Δ is +0.0200, with no interval (one seed)");
    check(ok3, "compare --one-batch verdict: Δ_ref's interval includes 0 (or none): the scale is not determined",
          "%s", ok3 ? "" : text);
    free(text);
}

// (e) bad --one-batch values, and a probe set too small or not shared, are refused before any run
static void test_compare_one_batch_usage(void) {
    static char cmd[2048], out[16384];
    const char *bad[3] = {"-1", "abc", "100001"};
    int ok = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s compare --quick --study %s/ob_bad_%d --one-batch %s", grpo_bin(), TMPDIR_, i,
                 bad[i]);
        int rc = run_binary(cmd, out, sizeof out);
        ok += rc == 2 && strstr(out, "--one-batch") != NULL;
    }
    check(ok == 3, "compare --one-batch: -1, abc, 100001 are refused naming the option", "%d of 3", ok);
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s/ob_big --one-batch 100000", grpo_bin(), TMPDIR_);
    int rc = run_binary(cmd, out, sizeof out);
    char runs[512], pre[512];
    snprintf(runs, sizeof runs, "%s/ob_big/runs", TMPDIR_);
    snprintf(pre, sizeof pre, "%s/ob_big/prereg.txt", TMPDIR_);
    struct stat sb;
    check(rc == 2 && strstr(out, "--one-batch 100000: the probe set, --val-data ") && strstr(out, " prompts") &&
              stat(runs, &sb) != 0 && stat(pre, &sb) != 0,
          "compare --one-batch P beyond the validation set is refused before any run or pre-registration", "exit %d: %s", rc,
          line_with(out, "one-batch"));
    snprintf(cmd, sizeof cmd, "%s compare --quick --study %s/ob_mixed --one-batch 10 --methods "
             "grpo,short:--objective=grpo:--max-new-tokens=10", grpo_bin(), TMPDIR_);
    rc = run_binary(cmd, out, sizeof out);
    check(rc == 2 && strstr(out, "--one-batch: method 'short:--objective=grpo:--max-new-tokens=10' runs another"),
          "compare --one-batch: methods with another probe set (--max-new-tokens) are refused", "exit %d: %s", rc,
          line_with(out, "one-batch"));
}

/* The tree-packed update with per-token advantages (GroupBatch.token_adv, as MC-PRM's A_j and
   PPO's A_t reach the loss): on random batches (random_pack_batch) with a random advantage on
   every token, grpo_prepare_tokens puts token_adv's value on each token with weight 1, and the
   tree layout's loss and gradients match the padded layout's as test_tree_update_vs_padded's do
   (the same tolerances): per-token advantages change nothing the layout sees but the loss's
   coefficients. Both objectives, token-mean and seq-mean-token-sum-norm, micro-batches of all
   and of 4. */
static void test_tree_update_token_adv(void) {
    Rng rng;
    rng_seed(&rng, 83, 1);
    Options o;
    default_options(&o);
    int sizes[4] = {4, 3, 5, 2}, prompts[40], max_new = 8, ok = 1, seam = 1;
    double worst[2] = {0, 0};
    for (int c = 0; c < 8; c++) {
        GRPOConfig cfg = grpo_config_from_options(&o);
        cfg.obj.objective = c % 2 ? OBJ_PPO : OBJ_MC_PRM;
        cfg.obj.loss_agg = c / 2 % 2 ? AGG_SEQ_MEAN_TOKEN_SUM_NORM : AGG_TOKEN_MEAN;
        cfg.micro_batch = c / 4 ? 4 : 0;
        cfg.obj.max_new_tokens = max_new;
        cfg.temperature = 0.9f;
        GroupBatch g;
        random_pack_batch(&g, prompts, 4, sizes, max_new, &rng, &cfg.obj);
        size_t NT = (size_t)g.N * max_new;
        float *adv = (float *)mallocCheck(NT * sizeof(float));
        for (size_t j = 0; j < NT; j++) adv[j] = rng_normal(&rng);
        g.token_adv = adv;
        UpdateStats us;
        grpo_prepare_tokens(&g, &cfg, &us);
        for (int i = 0; i < g.N; i++)
            for (int t = 0; t < g.clen[i]; t++) {
                size_t at = (size_t)i * max_new + t;
                seam &= g.adv_tok[at] == adv[at] && g.weight[at] == 1.0f;
            }
        int micro = cfg.micro_batch ? cfg.micro_batch : g.N;
        GPT m = test_model(micro, 600 + c);
        LossRun run[2];
        for (int layout = 0; layout < 2; layout++) {
            cfg.update_layout = layout;
            loss_run(&run[layout], &m, NULL, &g, &cfg, 0);
        }
        float lp = (float)run[0].loss, lt = (float)run[1].loss;
        double e[2] = {rel_err(&lt, &lp, 1, 1.0f), param_rel_err(&m, run[1].grads, run[0].grads)};
        for (int q = 0; q < 2; q++) worst[q] = fmax(worst[q], e[q]);
        ok &= e[0] <= TOL_FWD && e[1] <= TOL_BWD;
        for (int layout = 0; layout < 2; layout++) free_loss_run(&run[layout]);
        free_gpt(&m);
        free(adv);
        free_group_batch(&g);
    }
    check(seam, "tree-packed update: grpo_prepare_tokens trains token_adv's advantage, weight 1", "");
    check(ok, "tree-packed update == padded with per-token advantages (mc-prm, ppo; 8 configurations)",
          "worst loss %.2e, gradient %.2e (of each tensor's max)", worst[0], worst[1]);
}

/* --update-layout tree end to end (./grpo train, tiny model): the same seed gives a bit-identical
   model, on 1 thread and on 3; a resume from the step-2 checkpoint continues bit for bit; the
   banner names the layout (tree by default on the CPU build); ./grpo tree takes it too. And
   ./grpo sft, whose default is tree as well: its first loss is padded's to the last printed
   digit (the same log-probs summed in the same order), a 1-thread and a 3-thread run give the
   same model, bit for bit. */
static void test_tree_layout_train(void) {
    char init[300], common[1024], pa[300], pb[300];
    save_tiny_init(init, sizeof init, "treepack_init.bin", 23);
    tiny_train_args(common, sizeof common, init);
    static char cmd[2048], out[16384];
    const char *dirs[3] = {"treepack_a", "treepack_b", "treepack_c"};
    const char *extra[3] = {"--threads 1", "--threads 3 --save-every 2", "--threads 1"};
    int rc[3];
    for (int r = 0; r < 3; r++) {
        char resume[400] = "";
        if (r == 2) snprintf(resume, sizeof resume, "--resume %s/treepack_b/ckpt.bin", TMPDIR_);
        // tiny_train_args starts with --threads 1; a later --threads wins
        snprintf(cmd, sizeof cmd, "%s train %s %s --update-layout tree %s --run-dir %s/%s", grpo_bin(),
                 common, extra[r], resume, TMPDIR_, dirs[r]);
        rc[r] = run_binary(cmd, out, sizeof out);
        if (r == 0)
            check(rc[0] == 0 && strstr(out, " update-layout=tree") != NULL,
                  "train --update-layout tree: runs, the banner names the layout", "exit %d", rc[0]);
    }
    snprintf(pa, sizeof pa, "%s/treepack_a/model.bin", TMPDIR_);
    snprintf(pb, sizeof pb, "%s/treepack_b/model.bin", TMPDIR_);
    check(rc[1] == 0 && files_equal(pa, pb),
          "train --update-layout tree: same seed, 1 or 3 threads: bit-identical", "exit %d", rc[1]);
    snprintf(pb, sizeof pb, "%s/treepack_c/model.bin", TMPDIR_);
    check(rc[2] == 0 && files_equal(pa, pb),
          "train --update-layout tree: resume from step 2 == 4 steps straight", "exit %d", rc[2]);
    snprintf(cmd, sizeof cmd, "%s train %s --steps 1 --run-dir %s/treepack_padded", grpo_bin(), common,
             TMPDIR_);
    int code = run_binary(cmd, out, sizeof out);
    check(code == 0 && strstr(out, " update-layout=tree"), "train: the default layout is tree, and the banner "
          "names it", "exit %d", code);
    const char *sft_dirs[3] = {"treepack_sft1", "treepack_sft3", "treepack_sftp"};
    const char *sft_extra[3] = {"--threads 1", "--threads 3", "--threads 1 --update-layout padded"};
    char first_loss[3][32] = {"", "", ""};
    int sft_rc[3];
    for (int r = 0; r < 3; r++) {
        snprintf(cmd, sizeof cmd, "%s sft --layers 1 --heads 2 --channels 16 --context 40 --batch-size 8 "
                 "--steps 6 --eval-every 0 %s --run-dir %s/%s", grpo_bin(), sft_extra[r], TMPDIR_, sft_dirs[r]);
        sft_rc[r] = run_binary(cmd, out, sizeof out);
        if (r == 0)
            check(sft_rc[0] == 0 && strstr(out, " update-layout=tree"), "sft: the default layout is tree, "
                  "and the banner names it", "exit %d", sft_rc[0]);
        char csv[400];
        snprintf(csv, sizeof csv, "%s/%s/sft.csv", TMPDIR_, sft_dirs[r]);
        size_t n = 0;
        char *text = sft_rc[r] == 0 ? (char *)read_all(csv, &n) : NULL;
        char *row = text ? memchr(text, '\n', n) : NULL;   // the header, then step 1's row
        if (row) sscanf(row + 1, "%*[^,],%31[^,]", first_loss[r]);
        free(text);
    }
    snprintf(pa, sizeof pa, "%s/treepack_sft1/model.bin", TMPDIR_);
    snprintf(pb, sizeof pb, "%s/treepack_sft3/model.bin", TMPDIR_);
    check(sft_rc[0] == 0 && sft_rc[1] == 0 && files_equal(pa, pb),
          "sft --update-layout tree: 1 or 3 threads: bit-identical", "exit %d, %d", sft_rc[0], sft_rc[1]);
    check(sft_rc[2] == 0 && first_loss[0][0] && !strcmp(first_loss[0], first_loss[2]),
          "sft: step 1's loss, tree == padded", "tree %s, padded %s", first_loss[0], first_loss[2]);
    snprintf(cmd, sizeof cmd, "%s tree --steps 3 --seeds 1 --update-layout tree --run-dir %s/treepack_tree",
             grpo_bin(), TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    check(code == 0 && strstr(out, "update-layout=tree"), "tree --update-layout tree: runs", "exit %d", code);
}

/* The reference's own code against the CPU's default speed paths, end to end: 3 steps of λ-GRPO
   (β = 0.04, μ = 2, micro-batches of 5) from a tiny SFT model whose groups have mixed rewards, run
   three ways: the defaults (--sampler shared, --update-layout tree), --sampler plain, and
   --sampler plain --update-layout padded (only the reference's loops). The plain sampler gives the
   same model byte for byte (the same tokens, bit for bit). The padded update gives the same samples
   in every step (train.csv's reward, length and |λ| columns equal) and the same model up to float
   rounding: the two models lie within 2% of the distance they moved from the SFT model. The
   gradients agree to TOL_BWD (test_tree_update_vs_padded); AdamW divides each by √v, which turns a
   rounding difference in an element near 0 into a visible one (measured: 0.5%, 19 of 4,720
   parameters apart by more than 1e-6, on an AMD EPYC with AVX-512, Dec 2026). */
static void test_reference_paths(void) {
    char args[2048], log[256], sft[300], path[3][300];
    snprintf(log, sizeof log, "%s/refpaths.log", TMPDIR_);
    snprintf(args, sizeof args, "--layers 1 --heads 1 --channels 16 --batch-size 16 --steps 200 --lr 1e-2 "
             "--eval-every 0 --threads 1 --val-data tests/fixtures/val_small.txt --run-dir %s/refpaths_sft", TMPDIR_);
    run_cmd_quiet(cmd_sft, args, log);
    snprintf(sft, sizeof sft, "%s/refpaths_sft/model.bin", TMPDIR_);
    const char *ways[3] = {"", "--sampler plain", "--sampler plain --update-layout padded"};
    int rc[3];
    char *csv[3];
    for (int w = 0; w < 3; w++) {
        snprintf(args, sizeof args, "--threads 1 --steps 3 --prompts-per-step 2 --group-size 6 --max-new-tokens 24 "
                 "--temperature 0.6 --format-reward 0.5 --eval-every 0 --pass-k 0 --test-limit 0 --seed 3 "
                 "--beta 0.04 --num-iterations 2 --micro-batch 5 --lr 1e-3 --val-data tests/fixtures/val_small.txt "
                 "--objective lambda-grpo --init %s --run-dir %s/refpaths_%d %s", sft, TMPDIR_, w, ways[w]);
        rc[w] = run_cmd_quiet(cmd_train, args, log);
        snprintf(path[w], sizeof path[w], "%s/refpaths_%d/train.csv", TMPDIR_, w);
        size_t n;
        csv[w] = rc[w] == 0 ? (char *)read_all(path[w], &n) : NULL;
        snprintf(path[w], sizeof path[w], "%s/refpaths_%d/model.bin", TMPDIR_, w);
    }
    check(rc[0] == 0 && rc[1] == 0 && files_equal(path[0], path[1]),
          "reference paths: --sampler plain trains the same model as shared, byte for byte", "exit %d, %d",
          rc[0], rc[1]);
    int same_samples = csv[0] && csv[2];
    double mixed = 0.0;
    for (char *a = csv[0], *b = csv[2]; same_samples && (a = strchr(a, '\n')) && (b = strchr(b, '\n'));) {
        a++, b++;   // each row's step, mean_reward, frac_all_equal, mean_len, mean_lambda: the first 5 fields
        char fa[5][32] = {{0}}, fb[5][32] = {{0}};
        if (sscanf(a, "%31[^,],%31[^,],%31[^,],%31[^,],%31[^,]", fa[0], fa[1], fa[2], fa[3], fa[4]) < 5) break;
        sscanf(b, "%31[^,],%31[^,],%31[^,],%31[^,],%31[^,]", fb[0], fb[1], fb[2], fb[3], fb[4]);
        for (int f = 0; f < 5; f++) same_samples &= !strcmp(fa[f], fb[f]);
        mixed += atof(fa[2]) < 1.0;   // a step with a group whose rewards differ: a gradient
    }
    double worst = INFINITY, moved = 0.0, apart = INFINITY;
    if (rc[0] == 0 && rc[2] == 0) {
        GPT a, b, s;
        load_checkpoint(path[0], &a, 1, NULL);
        load_checkpoint(path[2], &b, 1, NULL);
        load_checkpoint(sft, &s, 1, NULL);
        worst = apart = 0.0;
        for (size_t i = 0; i < a.num_parameters; i++) {
            double d = fabs((double)a.params_memory[i] - b.params_memory[i]);
            worst = fmax(worst, d);
            apart += d * d;
            moved += ((double)a.params_memory[i] - s.params_memory[i]) * ((double)a.params_memory[i] - s.params_memory[i]);
        }
        free_gpt(&a);
        free_gpt(&b);
        free_gpt(&s);
    }
    double rel = sqrt(apart / (moved > 0.0 ? moved : 1.0));
    check(same_samples && mixed == 3 && moved > 0.0 && rel <= 0.02, "reference paths: --sampler plain "
          "--update-layout padded (the reference's code only) trains the same model up to rounding, from the same "
          "samples", "samples %s, %g of 3 steps with mixed rewards, |θ_tree − θ_padded| = %.2g of |θ_tree − θ_sft| "
          "(max element %.2g)", same_samples ? "equal" : "differ", mixed, rel, worst);
    for (int w = 0; w < 3; w++) free(csv[w]);
}

// ----------------------------------------------------------------------------
// MC-PRM (VinePPO, notes/credit-assignment.md §3): steps, states, V̂, step advantages, budget, runs

/* A fake verifier with known continuation rewards: under a token mask that allows <eos> alone,
   every continuation is exactly <eos>, so the verifier sees a state's completion tokens and
   <eos>; it looks the state's text up in its table and returns that state's rewards r[s][0..K)
   in turn (so V̂ must be their mean), counting its calls per state. */
typedef struct {
    int n, k;
    const char *prefix[8];
    float r[8][16];
    int calls[8];
    int unknown;                 // calls for a text not in the table, or not ending in <eos>
} FakeVerifier;

static float fake_reward(const void *task, int group, const int *comp, int len) {
    FakeVerifier *f = (FakeVerifier *)task;
    (void)group;
    char text[256];
    int ok = len >= 1 && comp[len - 1] == TOK_EOS && len < 200;
    if (ok) decode(comp, len - 1, text, sizeof text);
    for (int s = 0; ok && s < f->n; s++)
        if (!strcmp(text, f->prefix[s])) return f->r[s][f->calls[s]++ % f->k];
    f->unknown++;
    return 0.0f;
}

// Fills group p of g (completions first..first+n−1) with one prompt, completions given as text
// ('$' = <eos>) and their rewards.
static void fill_completions(GroupBatch *g, int first, int n, const int *prompt, int plen, const char **comps,
                             const float *r) {
    for (int a = 0; a < n; a++) {
        int i = first + a, len = (int)strlen(comps[a]);
        g->prompt[i] = prompt;
        g->plen[i] = plen;
        for (int t = 0; t < len; t++)
            g->comp[(size_t)i * g->max_new + t] = comps[a][t] == '$' ? TOK_EOS : char_to_token(comps[a][t]);
        g->clen[i] = len;
        g->reward[i] = r[a];
    }
}

/* mc_segment by hand: countdown steps end after each ',' that is not the last token (the last
   step holds the <eos>; a completion cut right after a ',' has no empty step); the tree task's
   steps are its tokens. */
static void test_mc_segment(void) {
    const char *text[] = {"7*3=21,21+5=26$", "7*3=21,$", "7*3=21,", ",,1", "12", "", "7+3=10,10*5=50,5$"};
    int want[][4] = {{0, 7}, {0, 7}, {0}, {0, 1, 2}, {0}, {0}, {0, 7, 15}};
    int want_m[] = {2, 2, 1, 3, 1, 0, 3};
    int bad = 0;
    for (int c = 0; c < 7; c++) {
        int comp[32], start[32], len = (int)strlen(text[c]);
        for (int t = 0; t < len; t++) comp[t] = text[c][t] == '$' ? TOK_EOS : char_to_token(text[c][t]);
        int m = mc_segment(comp, len, MC_SEGMENT_COMMA, start);
        bad += m != want_m[c];
        for (int j = 0; j < m && m == want_m[c]; j++) bad += start[j] != want[c][j];
    }
    int L = char_to_token('L'), R = char_to_token('R'), leaf[4] = {L, R, R, L}, start[4];
    int m = mc_segment(leaf, 4, MC_SEGMENT_TOKEN, start);
    int tokens_ok = m == 4 && start[0] == 0 && start[1] == 1 && start[2] == 2 && start[3] == 3;
    check(bad == 0 && tokens_ok, "mc-prm: steps end after each ',' (not a last one); tree: every token",
          "%d wrong boundaries; tree: %d steps", bad, m);
}

/* MC-PRM's step advantages through mc_prm_advantages with the fake verifier, against vectors
   computed by hand: six completions of one prompt, their four distinct states (the prompt,
   "7*3=21," shared by four of them, "7+3=10," and "7+3=10,10*5=50,"), V̂ the mean of each state's
   table rewards; A_j = V̂(s_j+1) − V̂(s_j), the last step r − V̂(s_last) on every token of it
   (<eos> included, a lone <eos> step too); and whitened: (A − mean)/sqrt(var + 1e-8) over all
   tokens, var with n − 1, re-computed here in double. */
static void test_mc_advantages(void) {
    const char *comps[6] = {"7*3=21,21+5=26$", "7*3=21,21+5=27$", "7+3=10,10*5=50,5$", "7*", "7*3=21,$",
                            "7*3=21,21+5=26,"};
    const float r[6] = {1, 0, 1, 0, 0, 0};
    // V̂: "" 0.5, "7*3=21," 0.75, "7+3=10," 0.25, "7+3=10,10*5=50," 0.25
    FakeVerifier fv = {4, 4, {"", "7*3=21,", "7+3=10,", "7+3=10,10*5=50,"},
                       {{1, 0, 0, 1}, {1, 1, 0, 1}, {0, 0, 0, 1}, {0, 1, 0, 0}}, {0}, 0};
    // by hand, runs of (tokens, A) per completion
    const int runs[6][3][2] = {{{7, 0}, {8, 0}}, {{7, 0}, {8, 0}}, {{7, 0}, {8, 0}, {2, 0}}, {{2, 0}},
                               {{7, 0}, {1, 0}}, {{7, 0}, {8, 0}}};
    const float run_adv[6][3] = {{0.25f, 0.25f}, {0.25f, -0.75f}, {-0.25f, 0.0f, 0.75f}, {-0.5f},
                                 {0.25f, -0.75f}, {0.25f, -0.75f}};
    const int nruns[6] = {2, 2, 3, 1, 2, 2};
    int k = 6, MN = 20, prompt[16], bad_enc;
    prompt[0] = TOK_BOS;
    encode("7 3 5>26:", 9, prompt + 1, &bad_enc);
    GPT m = test_model(8, 21);
    GroupBatch g;
    build_group_batch(&g, 1, k, MN, 0, 32);
    fill_completions(&g, 0, k, prompt, 10, comps, r);
    unsigned char eos_only[VOCAB_SIZE];
    for (int v = 0; v < VOCAB_SIZE; v++) eos_only[v] = v == TOK_EOS;
    Options o;
    default_options(&o);
    GRPOConfig cfg = grpo_config_from_options(&o);
    cfg.obj.objective = OBJ_MC_PRM;
    float want[6 * 20] = {0}, got_raw[6 * 20];
    for (int i = 0; i < k; i++) {
        int t = 0;
        for (int q = 0; q < nruns[i]; q++)
            for (int c = 0; c < runs[i][q][0]; c++) want[i * MN + t++] = run_adv[i][q];
    }
    for (int whiten = 0; whiten <= 1; whiten++) {
        MCPRM mc;
        build_mcprm(&mc, &m.config, k, MN, 4, whiten, MC_SEGMENT_COMMA, fake_reward, &fv, eos_only);
        memset(fv.calls, 0, sizeof fv.calls);
        fv.unknown = 0;
        MCStats st = mc_prm_advantages(&mc, &m, &g, &cfg, 0);
        int once = fv.unknown == 0;
        for (int s = 0; s < 4; s++) once &= fv.calls[s] == 4;
        if (!whiten) {
            check(st.states == 4 && once && st.tokens == 16 && st.calls == 1,
                  "mc-prm: 4 distinct states of 6 completions, each estimated once (K = 4 calls)",
                  "%d states, %ld continuation tokens, %d sampler calls", st.states, st.tokens, st.calls);
            float values[4] = {mc.value[0], mc.value[1], mc.value[2], mc.value[3]};
            float vw[4] = {0.5f, 0.75f, 0.25f, 0.25f};
            // a mean of 4 rewards in {0, 1}: exact
            compare("mc-prm: V̂ = mean of the state's K continuation rewards", values, vw, 4, 0.0f, 1.0f);
            // A_j: one subtraction of two exact values: exact
            compare("mc-prm: A_j by hand (V̂(s_j+1) − V̂(s_j); last step r − V̂, <eos> in it)", mc.adv,
                    want, (size_t)k * MN, 0.0f, 1.0f);
            check(g.token_adv == mc.adv, "mc-prm: the batch trains on MC-PRM's advantages (token_adv)", "");
            memcpy(got_raw, mc.adv, sizeof got_raw);
        } else {
            double sum = 0, ss = 0;
            int n = 0;
            for (int i = 0; i < k; i++)
                for (int t = 0; t < g.clen[i]; t++) { sum += want[i * MN + t]; n++; }
            double mean = sum / n;
            for (int i = 0; i < k; i++)
                for (int t = 0; t < g.clen[i]; t++) {
                    double d = want[i * MN + t] - mean;
                    ss += d * d;
                }
            float white[6 * 20] = {0};
            for (int i = 0; i < k; i++)
                for (int t = 0; t < g.clen[i]; t++)
                    white[i * MN + t] = (float)((want[i * MN + t] - mean) / sqrt(ss / (n - 1) + 1e-8));
            // double arithmetic both sides, one float rounding of values ~1: TOL_FEW of S >= 1
            compare("mc-prm --mc-whiten 1: whitened over the step's tokens (n − 1, eps 1e-8)", mc.adv,
                    white, (size_t)k * MN, TOL_FEW, 1.0f);
        }
        free_mcprm(&mc);
    }
    // the update reads them: grpo_prepare_tokens puts A_j on each token with weight 1
    g.token_adv = got_raw;
    UpdateStats us;
    grpo_prepare_tokens(&g, &cfg, &us);
    int seam = 1;
    for (int i = 0; i < k; i++)
        for (int t = 0; t < g.clen[i]; t++)
            seam &= g.adv_tok[i * MN + t] == want[i * MN + t] && g.weight[i * MN + t] == 1.0f;
    check(seam, "mc-prm: grpo_prepare_tokens trains A_j on every token, weight 1", "");
    // whiten_advantages on its own: [1, 2, 3] -> [-1, 0, 1]/sqrt(1 + 1e-8); all equal -> exactly 0
    float v3[3] = {1, 2, 3}, w3[3];
    int len3[1] = {3};
    for (int i = 0; i < 3; i++) w3[i] = (float)((i - 1.0) / sqrt(1.0 + 1e-8));
    whiten_advantages(v3, v3, len3, 1, 3);
    compare("mc-prm: whitening [1, 2, 3] -> [-1, 0, 1] (sample var 1)", v3, w3, 3, TOL_FEW, 1.0f);
    float eq[4] = {0.1f, 0.1f, 0.1f, 0.1f};
    int len4[2] = {2, 2};
    whiten_advantages(eq, eq, len4, 2, 2);
    check(eq[0] == 0 && eq[1] == 0 && eq[2] == 0 && eq[3] == 0,
          "mc-prm: whitening equal advantages gives exactly 0", "%g %g %g %g", eq[0], eq[1], eq[2], eq[3]);
    free_group_batch(&g);
    free_gpt(&m);
}

/* De-duplication: three groups, two of them with the same prompt (draw_prompts draws with
   replacement) and completions that repeat prefixes within and across groups. The distinct
   states mc_build_states finds are counted by brute force here (every candidate <bos> prompt
   prefix against every other, token by token); candidates with equal tokens share one state
   (so one V̂), others never do; each distinct state's K continuations are sampled once. */
static void test_mc_dedup(void) {
    const char *ga[3] = {"7*3=21,21+5=26$", "7*3=21,21-5=16$", "3*7=21,21+5=26$"};
    const char *gb[3] = {"7*3=21,21+5=26$", "7*3=21,5+21=26$", "7+3=10$"};
    const char *gc[3] = {"7*3=21,21+5=26$", "5+3=8,8*7=56$", "5+3=8,$"};
    const float r[3] = {1, 0, 1};
    int pa[16], pc[16], bad;
    pa[0] = pc[0] = TOK_BOS;
    encode("7 3 5>26:", 9, pa + 1, &bad);
    encode("7 3 5>26:", 9, pc + 1, &bad);   // the same prompt, another copy
    int pb[16];
    pb[0] = TOK_BOS;
    encode("5 3 7>56:", 9, pb + 1, &bad);
    GroupBatch g;
    build_group_batch(&g, 3, 3, 20, 0, 32);
    fill_completions(&g, 0, 3, pa, 10, ga, r);
    fill_completions(&g, 3, 3, pb, 10, gb, r);
    fill_completions(&g, 6, 3, pc, 10, gc, r);
    GPT m = test_model(8, 22);
    unsigned char eos_only[VOCAB_SIZE];
    for (int v = 0; v < VOCAB_SIZE; v++) eos_only[v] = v == TOK_EOS;
    FakeVerifier fv = {0, 4, {0}, {{0}}, {0}, 0};   // no table: every call counts as unknown, reward 0
    MCPRM mc;
    build_mcprm(&mc, &m.config, 9, 20, 4, 0, MC_SEGMENT_COMMA, fake_reward, &fv, eos_only);
    int D = mc_build_states(&mc, &g, 0);
    // brute force: every candidate's tokens, and the distinct ones
    int cand_len[64], cand_i[64], C = 0;
    int seqs[64][40];
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < mc.num_steps[i]; j++) {
            int b = mc.step_start[i * 20 + j];
            memcpy(seqs[C], g.prompt[i], (size_t)g.plen[i] * sizeof(int));
            memcpy(seqs[C] + g.plen[i], g.comp_row[i], (size_t)b * sizeof(int));
            cand_len[C] = g.plen[i] + b;
            cand_i[C] = i * 20 + j;
            C++;
        }
    int distinct = 0, wrong = 0;
    for (int a = 0; a < C; a++) {
        int first = 1;
        for (int b = 0; b < C; b++) {
            size_t bytes = (size_t)cand_len[a] * sizeof(int);
            int same = cand_len[a] == cand_len[b] && !memcmp(seqs[a], seqs[b], bytes);
            wrong += same != (mc.state_of[cand_i[a]] == mc.state_of[cand_i[b]]);
            if (same && b < a) first = 0;
        }
        distinct += first;
    }
    // by hand: group a+c (one prompt): "", "7*3=21,", "3*7=21,", "5+3=8,"; group b: "", "7*3=21,"
    check(D == distinct && D == 6 && wrong == 0 && C == 17,
          "mc-prm: distinct states by content (within and across groups) = brute force",
          "%d states, brute force %d of %d candidates, %d pairs mis-assigned", D, distinct, C, wrong);
    MCStats st = mc_estimate_values(&mc, &m, 1.0f, 5);
    check(st.states == 6 && fv.unknown == 6 * 4 && st.tokens == 6 * 4,
          "mc-prm: each distinct state's K continuations sampled once", "%d verifier calls, %ld tokens",
          fv.unknown, st.tokens);
    free_mcprm(&mc);
    free_group_batch(&g);
    free_gpt(&m);
}

/* V̂ on the tree task with a fixed policy against the exact expected reward of each of the 15
   prefixes (0 to 3 tokens), computed by enumerating the 16 leaves: their log-probs from the
   teacher-forced forward (gpt_forward, not the sampler), π(leaf | s) = exp(Σ over the tokens
   after s), V(s) = Σ π(leaf | s) r(leaf), σ²(s) = Σ π(leaf | s) (r − V)². Each V̂ from K
   continuations is a mean of K draws of the reward: within 4σ/√K of V (a 4-sigma bound; a
   float32 term of 1e-5 besides), and the RMS error over the 15 states shrinks from K = 16 to
   K = 1024 (by about 8; required: at least 2). And V̂ is the same bit for bit when the
   continuations go to the sampler one state per call instead of many. */
static void test_mc_tree_values(void) {
    GPT m;
    build_gpt(&m, (GPTConfig){8, VOCAB_SIZE, 2, 2, 32}, 16, 31);
    Rng rng;
    rng_seed(&rng, 31, 1);
    for (size_t i = 0; i < m.num_parameters; i++) m.params_memory[i] += 0.3f * rng_normal(&rng);
    unsigned char allowed[VOCAB_SIZE];
    tree_allowed(allowed);
    int Lt = char_to_token('L'), Rt = char_to_token('R'), target = 6;
    TreeTask task = {target, 1, -1.0f};
    float temperature = 0.9f;
    // exact: the 16 leaves' per-token log-probs, teacher-forced
    int inputs[16 * 4], targets[16 * 4];
    for (int leaf = 0; leaf < 16; leaf++) {
        inputs[leaf * 4] = TOK_BOS;
        for (int d = 0; d < 4; d++) {
            int tok = (leaf >> (3 - d)) & 1 ? Rt : Lt;
            targets[leaf * 4 + d] = tok;
            if (d < 3) inputs[leaf * 4 + d + 1] = tok;
        }
    }
    gpt_forward(&m, inputs, 16, 4);
    float logp[16 * 4];
    gpt_logprob_forward(&m, logp, targets, 16 * 4, temperature, allowed);
    // the 15 states: prefix b tokens of a leaf whose remaining bits are 0 (one per prefix)
    double V[15], sigma[15];
    int prefix_len[15], prefix_bits[15], S = 0;
    for (int b = 0; b < 4; b++)
        for (int bits = 0; bits < (1 << b); bits++) {
            double v = 0, v2 = 0;
            for (int leaf = 0; leaf < 16; leaf++) {
                if ((leaf >> (4 - b)) != bits) continue;
                double lp = 0;
                for (int d = b; d < 4; d++) lp += logp[leaf * 4 + d];
                double rew = tree_reward(leaf, target, 1, -1.0f);
                v += exp(lp) * rew;
                v2 += exp(lp) * rew * rew;
            }
            V[S] = v;
            sigma[S] = sqrt(fmax(v2 - v * v, 0.0));
            prefix_len[S] = b;
            prefix_bits[S] = bits;
            S++;
        }
    int seqs[15][5];
    for (int s = 0; s < 15; s++) {
        seqs[s][0] = TOK_BOS;
        for (int d = 0; d < prefix_len[s]; d++)
            seqs[s][1 + d] = (prefix_bits[s] >> (prefix_len[s] - 1 - d)) & 1 ? Rt : Lt;
    }
    const int Ks[2] = {16, 1024};
    double rms[2];
    int within[2];
    float first_values[15];
    for (int kk = 0; kk < 2; kk++) {
        int K = Ks[kk];
        for (int pass = 0; pass < (kk == 0 ? 2 : 1); pass++) {
            MCPRM mc;
            build_mcprm(&mc, &m.config, 4, 4, K, 0, MC_SEGMENT_TOKEN, tree_outcome_reward, &task, allowed);
            if (pass == 1) mc.rows = K;   // one state per sampler call
            for (int s = 0; s < 15; s++) {
                mc.state_seq[s] = seqs[s];
                mc.state_len[s] = 1 + prefix_len[s];
                mc.state_prefix[s] = prefix_len[s];
                mc.state_group[s] = 0;
                mc.state_stream[s] = mc_stream(0, s, prefix_len[s]);
            }
            mc.num_states = 15;
            MCStats st = mc_estimate_values(&mc, &m, temperature, 9);
            if (pass == 1) {
                check(!memcmp(first_values, mc.value, sizeof first_values) && st.calls == 15,
                      "mc-prm: V̂ bit-identical with one state per sampler call (15 calls)", "%d calls",
                      st.calls);
            } else {
                memcpy(first_values, mc.value, sizeof first_values);
                double ss = 0;
                within[kk] = 0;
                for (int s = 0; s < 15; s++) {
                    double err = fabs(mc.value[s] - V[s]);
                    ss += err * err;
                    within[kk] += err <= 4.0 * sigma[s] / sqrt((double)K) + 1e-5;
                }
                rms[kk] = sqrt(ss / 15);
                long want_tokens = 0;
                for (int s = 0; s < 15; s++) want_tokens += (long)K * (4 - prefix_len[s]);
                check(within[kk] == 15 && st.tokens == want_tokens,
                      kk == 0 ? "mc-prm tree: V̂ (K = 16) within 4σ/√K of the exact value, 15 states"
                              : "mc-prm tree: V̂ (K = 1024) within 4σ/√K of the exact value, 15 states",
                      "%d of 15 within; RMS error %.4f; %ld tokens (want %ld)", within[kk], rms[kk],
                      st.tokens, want_tokens);
            }
            free_mcprm(&mc);
        }
    }
    check(rms[1] < 0.5 * rms[0], "mc-prm tree: the error shrinks as K grows (RMS, K = 16 -> 1024)",
          "%.4f -> %.4f", rms[0], rms[1]);
    free_gpt(&m);
}

/* The budget counters of an MC-PRM step: its continuation tokens (gen_aux) and the FLOPs
   F·(R + 3μR + R_mc), R_mc = each state's tokens once + each continuation's tokens but its last,
   against a per-state reference: every state's K continuations sampled again on their own
   (sample_completions_budget, one call per state, the same streams), which also shows the
   batched continuations are the same tokens. Then spend_budget on the step. */
static void test_mc_budget(void) {
    int k = 4, P = 2, N = P * k, MN = 20, prompt[16], bad;
    prompt[0] = TOK_BOS;
    encode("7 3 5>26:", 9, prompt + 1, &bad);
    GPT m = test_model(N, 23);
    KVCache kv;
    build_kvcache(&kv, &m.config, N);
    GroupBatch g;
    build_group_batch(&g, P, k, MN, N, 32);
    for (int i = 0; i < N; i++) {
        g.prompt[i] = prompt;
        g.plen[i] = 10;
    }
    Options o;
    default_options(&o);
    GRPOConfig cfg = grpo_config_from_options(&o);
    cfg.obj.objective = OBJ_MC_PRM;
    cfg.temperature = 0.8f;
    sample_group(&m, &kv, &g, &cfg, 0, NULL);
    // a random model writes few commas: make some steps (the same in two completions)
    int comma = char_to_token(',');
    for (int i = 0; i < N; i += 2)
        if (g.clen[i] > 4) g.comp[(size_t)i * MN + 2] = comma;
    memcpy(g.comp + (size_t)MN, g.comp, (size_t)MN * sizeof(int));
    g.clen[1] = g.clen[0];
    Dataset d;
    load_dataset(&d, "tests/fixtures/val_small.txt", 32, 0, &TASKS[TASK_COUNTDOWN]);
    g.prompt_idx[0] = 0;
    g.prompt_idx[1] = 1;
    TaskProblems task = {&d, g.prompt_idx, NULL, 0, 0, 0.0f, NULL};
    for (int i = 0; i < N; i++)
        g.reward[i] = task_outcome_reward(&task, i / k, g.comp_row[i], g.clen[i]);
    MCPRM mc;
    build_mcprm(&mc, &m.config, N, MN, 3, 1, MC_SEGMENT_COMMA, task_outcome_reward, &task, NULL);
    MCStats st = mc_prm_advantages(&mc, &m, &g, &cfg, 4);
    // the reference: one state at a time
    long tokens = 0, positions = 0;
    int same = st.calls == 1, K = 3;
    KVCache kv1;
    build_kvcache(&kv1, &m.config, K);
    for (int s = 0; s < st.states; s++) {
        const int *pp[3];
        int plen[3], budget[3], comp[3 * 20], clen[3];
        float lp[3 * 20];
        Rng rngs[3];
        for (int c = 0; c < K; c++) {
            pp[c] = mc.state_seq[s];
            plen[c] = mc.state_len[s];
            budget[c] = MN - mc.state_prefix[s];
            rng_seed(&rngs[c], (uint64_t)cfg.seed, mc.state_stream[s] + (uint64_t)c);
        }
        sample_completions_budget(&m, &kv1, K, pp, plen, budget, MN, cfg.temperature, 0, rngs, NULL, comp, lp,
                                  clen);
        positions += mc.state_len[s];
        for (int c = 0; c < K; c++) {
            tokens += clen[c];
            positions += clen[c] - 1;
            int r = s * K + c;
            const int *batched = mc.cont + (size_t)r * MN;
            same &= clen[c] == mc.cont_len[r] && !memcmp(comp + c * MN, batched, clen[c] * sizeof(int));
        }
    }
    check(same && st.tokens == tokens && st.positions == positions && st.states > P,
          "mc-prm: batched continuations == per-state sampling; tokens and positions counted",
          "%d states, %ld tokens (per state: %ld), %ld positions (%ld)", st.states, st.tokens, tokens,
          st.positions, positions);
    // spend_budget: gen_aux = the continuation tokens, flops = F·(R + 3R + R_mc) at μ = 1, β = 0
    TrainRun run;
    memset(&run, 0, sizeof run);
    Budget budget;
    memset(&budget, 0, sizeof budget);
    run.policy = &m;   // spend_budget reads F off the policy's config
    run.budget = &budget;
    run.batch = &g;
    run.cfg = cfg;
    TrainState state;   // as a real run's: spend_budget records its counters there
    memset(&state, 0, sizeof state);
    run.state = &state;
    StepReport rep;
    memset(&rep, 0, sizeof rep);
    rep.mc_prm = 1;
    rep.mc = st;
    spend_budget(&run, &rep);
    long R = 0, traj = 0;
    for (int i = 0; i < N; i++) {
        R += g.plen[i] + g.clen[i] - 1;
        traj += g.clen[i];
    }
    double F = model_flops_per_token(&m.config), want = F * ((double)R + 3.0 * R + (double)positions);
    check(rep.gen_aux == tokens && rep.gen_traj == traj && fabs(rep.flops - want) <= 1e-12 * want,
          "mc-prm: budget gen_aux = continuation tokens, flops = F·(R + 3μR + R_mc)",
          "gen_aux %ld (want %ld), flops %.0f (want %.0f)", rep.gen_aux, tokens, rep.flops, want);
    free_kvcache(&kv1);
    free_mcprm(&mc);
    free_dataset(&d);
    free_group_batch(&g);
    free_kvcache(&kv);
    free_gpt(&m);
}

/* ./grpo train --objective mc-prm end to end on a tiny model: two runs with one seed give the
   same model bit for bit, at 1 thread and at 2 (the continuations' streams are the states');
   --resume from the step-2 checkpoint continues bit for bit; a resume with another --mc-k is
   refused; train.csv ends with mc_states, aux_share, t_mc, and aux_share =
   gen_tokens_aux / (gen_tokens_traj + gen_tokens_aux). */
static void test_mc_train(void) {
    char init[300];
    save_tiny_init(init, sizeof init, "mc_init.bin", 14);
    static char cmd[2048], out[16384];
    const char *common = "train --objective mc-prm --mc-k 3 --steps 4 --prompts-per-step 2 --group-size 3 "
                         "--max-new-tokens 12 --eval-every 0 --test-limit 0 --pass-k 0 --lr 3e-3 --seed 4 "
                         "--train-data tests/fixtures/val_small.txt --val-data tests/fixtures/val_small.txt";
    const char *dirs[4] = {"mc_a", "mc_b", "mc_c", "mc_r"};
    const char *extra[4] = {"--threads 1", "--threads 2", "--threads 1 --save-every 2", ""};
    int codes = 0;
    for (int r = 0; r < 3; r++) {
        snprintf(cmd, sizeof cmd, "%s %s %s --init %s --run-dir %s/%s", grpo_bin(), common, extra[r], init,
                 TMPDIR_, dirs[r]);
        codes += run_binary(cmd, out, sizeof out) != 0;
    }
    snprintf(cmd, sizeof cmd, "%s %s --threads 1 --init %s --resume %s/mc_c/ckpt.bin --run-dir %s/mc_r",
             grpo_bin(), common, init, TMPDIR_, TMPDIR_);
    codes += run_binary(cmd, out, sizeof out) != 0;
    char pa[512], pb[512];
    int same_threads, same_resume;
    snprintf(pa, sizeof pa, "%s/mc_a/model.bin", TMPDIR_);
    snprintf(pb, sizeof pb, "%s/mc_b/model.bin", TMPDIR_);
    same_threads = files_equal(pa, pb);
    snprintf(pb, sizeof pb, "%s/mc_r/model.bin", TMPDIR_);
    same_resume = files_equal(pa, pb);
    check(codes == 0 && same_threads, "mc-prm train: same seed, 1 and 2 threads: bit-identical model",
          "%d failed", codes);
    check(codes == 0 && same_resume, "mc-prm train: resume from the step-2 checkpoint == 4 steps straight",
          "");
    snprintf(cmd, sizeof cmd, "%s %s --mc-k 5 --steps 6 --init %s --resume %s/mc_c/model.bin "
             "--run-dir %s/mc_k5", grpo_bin(), common, init, TMPDIR_, TMPDIR_);
    int code = run_binary(cmd, out, sizeof out);
    check(code == 2 && strstr(out, "--mc-k 5") && strstr(out, "--mc-k 3"),
          "mc-prm train: --resume with another --mc-k is refused", "exit %d: %s", code,
          line_with(out, "error"));
    snprintf(pa, sizeof pa, "%s/mc_a/train.csv", TMPDIR_);
    size_t n;
    char *csv = (char *)read_all(pa, &n);
    csv = (char *)realloc(csv, n + 1);
    csv[n] = 0;
    double states[8], share[8], traj[8], aux[8];
    int rows = csv_column(csv, "mc_states", states, 8);
    csv_column(csv, "aux_share", share, 8);
    csv_column(csv, "gen_tokens_traj", traj, 8);
    csv_column(csv, "gen_tokens_aux", aux, 8);
    int ok = rows == 4 && strstr(csv, ",budget_spent,mc_states,aux_share,t_mc,entropy,mean_lambda_mixed,lambda_share\n") != NULL;
    for (int r = 0; ok && r < rows; r++)   // aux_share is printed with 6 decimals
        ok &= states[r] >= 2 && aux[r] > 0 && fabs(share[r] - aux[r] / (traj[r] + aux[r])) < 1e-6;
    check(ok, "mc-prm train: train.csv ends with mc_states, aux_share, t_mc (aux_share = aux/(traj+aux))",
          "%d rows; step 1: %g states, aux share %g", rows, rows > 0 ? states[0] : 0,
          rows > 0 ? share[0] : 0);
    free(csv);
}

/* ./grpo tree --objective mc-prm: the grid's third method (its column in the table, its rows in
   tree_steps.csv); ./grpo sample: V̂ beside R̂ on every node of B(G), V̂ = R̂ = the reward at a
   leaf of one completion, and the tokens the inner nodes' V̂ cost add up to the total printed. */
static void test_mc_commands(void) {
    static char cmd[2048], out[65536];
    snprintf(cmd, sizeof cmd, "%s tree --threads 1 --objective mc-prm --steps 3 --seeds 1 "
             "--run-dir %s/tree_mc", grpo_bin(), TMPDIR_);
    int code = run_binary(cmd, out, sizeof out);
    char path[512];
    snprintf(path, sizeof path, "%s/tree_mc/tree_steps.csv", TMPDIR_);
    size_t n = 0;
    char *csv = code == 0 ? (char *)read_all(path, &n) : NULL;
    int mc_rows = 0;
    for (size_t i = 0; csv && i + 8 < n; i++)
        mc_rows += (i == 0 || csv[i - 1] == '\n') && !strncmp(csv + i, "mc-prm,", 7);
    check(code == 0 && strstr(out, "MC-PRM (ours)") && strstr(out, "mc-prm      seed 1") && mc_rows == 6 * 3,
          "tree --objective mc-prm: an MC-PRM column and its runs in tree_steps.csv",
          "exit %d, %d mc-prm rows", code, mc_rows);
    free(csv);
    // sample, from a tiny random model (it writes no valid answer: every reward and V̂ is 0, but the
    // tree, the leaves and the costs are those of any model)
    char model[300];
    save_tiny_init(model, sizeof model, "mc_sample.bin", 15);
    snprintf(cmd, sizeof cmd, "%s sample --threads 1 --model %s --group-size 6 --max-new-tokens 10 --mc-k 3 "
             "--temperature 0.5", grpo_bin(), model);
    code = run_binary(cmd, out, sizeof out);
    long sum = 0, total = -1;
    int lines = 0, leaves = 0, leaf_ok = 1;
    const char *at = strstr(out, " inner nodes cost ");
    if (at) total = atol(at + strlen(" inner nodes cost "));
    for (char *line = strstr(out, "<prompt>"); line && (line = strchr(line, '\n')); line++) {
        char *v = strstr(line, "V̂="), *rh = strstr(line, "R̂=");
        char *nl = strchr(line + 1, '\n');
        if (!v || (nl && v > nl)) continue;
        lines++;
        char *tok = strstr(v, "(");
        if (tok && !strncmp(tok, "(leaf)", 6)) {
            leaves++;
            leaf_ok &= rh && atof(rh + strlen("R̂=")) == atof(v + strlen("V̂="));
        }
        else if (tok) sum += atol(tok + 1);
    }
    check(code == 0 && lines > 0 && leaves > 0 && leaf_ok && sum == total,
          "sample: V̂ beside R̂ on each node; leaves V̂ = R̂; the costs add up",
          "exit %d: %d nodes, %d leaves, %ld tokens (printed %ld)", code, lines, leaves, sum, total);
    // that run had no --prompt: it tried validation prompts for a group with mixed rewards (a random
    // model has none), said so, and showed the last; every reward equal, the group gives no gradient
    char first_prompt[256] = "", *pl = strstr(out, "\nprompt ");
    if (pl) sscanf(pl + 1, "prompt %255[^(]", first_prompt);
    check(code == 0 && strstr(out, "prompt drawn from data/countdown_val.txt (line ") &&
          strstr(out, "none of the 16 tried had a group with mixed rewards") && first_prompt[0],
          "sample without --prompt: a validation prompt, how many tried, none mixed", "exit %d: %s", code,
          line_with(out, "drawn"));
    check(code == 0 && strstr(out, "all 6 rewards are 0: this group gives no gradient") &&
          strstr(out, "is 0 under GRPO and under λ-GRPO") && strstr(out, "try another --seed or --prompt"),
          "sample: a group of equal rewards says it gives no gradient, why, and what to try", "exit %d", code);
    code = run_binary(cmd, out, sizeof out);   // the same seed: the same prompt
    pl = strstr(out, "\nprompt ");
    char again[256] = "";
    if (pl) sscanf(pl + 1, "prompt %255[^(]", again);
    check(code == 0 && first_prompt[0] && !strcmp(first_prompt, again), "sample without --prompt: the same "
          "--seed draws the same prompt", "'%s' then '%s'", first_prompt, again);
    // sample's test of a group: group_rewards_equal on one group of k = 3 (and k = 1)
    int three[2] = {0, 3}, one[2] = {0, 1};
    GroupBatch g3 = {0}, g1 = {0};
    g3.group_start = three;
    g1.group_start = one;
    g3.reward = (float[]){1, 0, 1};
    int mixed_ok = !group_rewards_equal(&g3, 0);
    g3.reward = (float[]){1, 1, 1};
    mixed_ok &= group_rewards_equal(&g3, 0);
    g1.reward = (float[]){0.5f};
    mixed_ok &= group_rewards_equal(&g1, 0);
    g3.reward = (float[]){0, 0, 0.5f};
    mixed_ok &= !group_rewards_equal(&g3, 0);
    check(mixed_ok, "sample: a group's rewards mixed or all equal (group_rewards_equal)", "");
}

/* Usage errors of MC-PRM's options: --mc-k out of range or not a number, MC-PRM's options in a
   run without MC-PRM (train, tree), an unknown objective in tree's list, and check, which has
   no model to sample continuations from. */
static void test_mc_usage(void) {
    static CmdCall calls[] = {
        {cmd_train, "--objective mc-prm --mc-k 0"}, {cmd_train, "--objective mc-prm --mc-k 2000"},
        {cmd_train, "--objective mc-prm --mc-k four"}, {cmd_train, "--mc-k 8"},
        {cmd_train, "--objective grpo --mc-whiten 0"}, {cmd_tree, "--mc-k 8"},
        {cmd_tree, "--objective mc-prn"}, {cmd_tree, "--objective mc-prm,"},
        {cmd_tree, "--objective mc-prm,ppo,mc-prm"},
        {cmd_compare, "--study /tmp/grpo_test_never --methods grpo,x:--objective=grpo:--prompt-select=mopps:"
                      "--select-target=3"},
        {cmd_check, "--objective mc-prm tests/fixtures/check/authors_dapo_clip.txt"},
        {cmd_sample, "--mc-k 0"},
    };
    const char *needles[] = {"--mc-k: '0' is out of range [1, 1024]", "--mc-k: '2000' is out of range",
                             "--mc-k: 'four' is not a number", "--mc-k 8 applies to --objective mc-prm only, and "
                             "this run has --objective lambda-grpo",
                             "--mc-whiten 0 applies to --objective mc-prm only",
                             "--mc-k 8 applies to --objective mc-prm only, and tree runs it only with mc-prm in "
                             "its --objective list",
                             "'mc-prn' is not an objective", "an empty name",
                             "'mc-prm' is named twice",
                             "--methods: method 'x:--objective=grpo:--prompt-select=mopps:--select-target=3' "
                             "(--train-args, then its own options): --select-target: '3' is out of range",
                             "--objective mc-prm: check runs the GRPO objectives on a dumped batch, with no model",
                             "--mc-k: '0' is out of range"};
    const char *names[] = {"usage: --mc-k 0 is out of range", "usage: --mc-k 2000 is out of range",
                           "usage: --mc-k four is not a number",
                           "usage: train --mc-k without mc-prm is refused",
                           "usage: train --mc-whiten without mc-prm is refused",
                           "usage: tree --mc-k without --objective mc-prm is refused",
                           "usage: tree --objective names an unknown objective",
                           "usage: tree --objective with an empty name",
                           "usage: tree --objective names an objective twice",
                           "usage: compare: a bad value in --methods names the method",
                           "usage: check refuses --objective mc-prm",
                           "usage: sample --mc-k 0 is out of range"};
    for (int i = 0; i < (int)(sizeof calls / sizeof calls[0]); i++)
        expect_exit(names[i], cmd_call_fn, &calls[i], 2, needles[i]);
}

// ----------------------------------------------------------------------------
// --objective ppo: GAE, whitening, the value loss, the critic's gradients
// and forward, training end to end (determinism, resume, budget), usage errors, the tree task

/* GAE against a direct float64 implementation: A_t = Σ_{l>=0} (γλ)^l δ_{t+l} with δ_u = r_u +
   γ V_{u+1} − V_u (V after the last token 0, r on the last token), on random values and lengths,
   γ and λ in {1, 0.95}; at γ = λ = 1 the identity A_t = r − V_t (and return_t = r); and one
   vector by hand. */
static void test_gae(void) {
    enum { N = 6, S = 26 };
    int clen[N] = {1, 5, 26, 13, 2, 20};
    float value[N * S], reward[N], adv[N * S], ret[N * S], want_a[N * S], want_r[N * S];
    Rng rng;
    rng_seed(&rng, 11, 0);
    for (int i = 0; i < N * S; i++) value[i] = rng_normal(&rng);
    for (int i = 0; i < N; i++) reward[i] = i % 3 == 0 ? 1.0f : (i % 3 == 1 ? 0.0f : 0.1f * (float)i);
    const float gl[4][2] = {{1, 1}, {1, 0.95f}, {0.95f, 1}, {0.95f, 0.95f}};
    for (int k = 0; k < 4; k++) {
        float gamma = gl[k][0], lam = gl[k][1];
        memset(adv, 0, sizeof adv); memset(ret, 0, sizeof ret);
        memset(want_a, 0, sizeof want_a); memset(want_r, 0, sizeof want_r);
        gae_advantages(adv, ret, value, reward, clen, N, S, gamma, lam);
        for (int i = 0; i < N; i++)
            for (int t = 0; t < clen[i]; t++) {
                double a = 0.0, w = 1.0;
                for (int u = t; u < clen[i]; u++) {   // the sum, not the recursion
                    double r = u == clen[i] - 1 ? reward[i] : 0.0;
                    double next = u + 1 < clen[i] ? value[i * S + u + 1] : 0.0;
                    a += w * (r + (double)gamma * next - value[i * S + u]);
                    w *= (double)gamma * lam;
                }
                want_a[i * S + t] = (float)a;
                want_r[i * S + t] = (float)(a + value[i * S + t]);
            }
        char name[128];
        // the recursion and the sum of up to 26 terms of size ~1 in double: both round once to
        // float at the end, so they agree to about 1 u of the largest |A|. Measured 0 / 0 / 0
        // (native / x86-64 / v4; returns: 0 / 2.8e-17 / 0). λ in place of γ in δ gives 9.4e-2.
        snprintf(name, sizeof name, "critic: GAE vs the float64 sum, γ = %g, λ = %g", gamma, lam);
        compare(name, adv, want_a, N * S, TOL_FEW, 1.0f);
        snprintf(name, sizeof name, "critic: GAE returns = A + V, γ = %g, λ = %g", gamma, lam);
        compare(name, ret, want_r, N * S, TOL_FEW, 1.0f);
        if (k > 0) continue;
        float identity[N * S] = {0}, r_tok[N * S] = {0};
        for (int i = 0; i < N; i++)
            for (int t = 0; t < clen[i]; t++) {
                identity[i * S + t] = (float)((double)reward[i] - value[i * S + t]);
                r_tok[i * S + t] = reward[i];
            }
        // the telescoping sum of up to 26 terms in double, then one rounding: 1 u. Measured 0.
        compare("critic: GAE at γ = λ = 1 is A_t = r − V_t", adv, identity, N * S, TOL_FEW, 1.0f);
        compare("critic: ... and return_t = r at every token", ret, r_tok, N * S, TOL_FEW, 1.0f);
    }
    // by hand: V = (0.5, 0.25), r = 1, γ = 0.9, λ = 0.5: δ_1 = 1 − 0.25 = 0.75, A_1 = 0.75;
    // δ_0 = 0.9·0.25 − 0.5 = −0.275, A_0 = −0.275 + 0.45·0.75 = 0.0625; returns 0.5625, 1.0
    float v2[2] = {0.5f, 0.25f}, r2[1] = {1.0f}, a2[2], ret2[2];
    int len2[1] = {2};
    gae_advantages(a2, ret2, v2, r2, len2, 1, 2, 0.9f, 0.5f);
    check(fabsf(a2[0] - 0.0625f) < 1e-7f && fabsf(a2[1] - 0.75f) < 1e-7f && fabsf(ret2[0] - 0.5625f) < 1e-7f &&
          fabsf(ret2[1] - 1.0f) < 1e-7f, "critic: GAE by hand (V = 0.5, 0.25; r = 1; γ 0.9, λ 0.5)",
          "A = %.7g %.7g, returns %.7g %.7g", a2[0], a2[1], ret2[0], ret2[1]);
}

/* Whitening over the batch's completion tokens (verl's masked_whiten: sample variance, eps 1e-8
   inside the square root), on hand-made numbers; positions past a completion are not read and
   not written. */
static void test_whitening(void) {
    // verl's docstring example: [1, 2, 3] (a 100 of padding) -> [-1, 0, 1] / sqrt(1 + 1e-8)
    float a[4] = {1, 2, 3, 100}, out[4] = {0, 0, 0, -7};
    int len[1] = {3};
    whiten_advantages(out, a, len, 1, 4);
    double s = 1.0 / sqrt(1.0 + 1e-8);
    check(out[0] == (float)-s && out[1] == 0.0f && out[2] == (float)s && out[3] == -7.0f,
          "critic: whitening [1, 2, 3 | pad] gives [-1, 0, 1] (sample std), padding untouched",
          "%.9g %.9g %.9g %.9g", out[0], out[1], out[2], out[3]);
    // two completions, rows of 3: (1, 2, 3) and (6 | pad, pad): mean 3, sample variance 14/3
    float b[6] = {1, 2, 3, 6, 50, 50}, w[6];
    int len2[2] = {3, 1};
    memcpy(w, b, sizeof b);
    whiten_advantages(w, w, len2, 2, 3);   // in place
    double sd = sqrt(14.0 / 3.0 + 1e-8);
    float tokens[4] = {w[0], w[1], w[2], w[3]};
    float want[4] = {(float)(-2 / sd), (float)(-1 / sd), 0.0f, (float)(3 / sd)};
    // (x − mean)·(1/sd) in double, rounded once: 1 u. Measured 0 on the three builds; the
    // population variance (n, not n − 1) gives 1.6e-1.
    compare("critic: whitening over two completions (mean 3, var 14/3), in place", tokens, want, 4, TOL_FEW, 0.0f);
    check(w[4] == 50.0f && w[5] == 50.0f, "critic: ... positions past a completion untouched", "");
}

/* The clipped value loss and its gradient: each branch by hand (inside the clip range; outside
   with the clipped branch larger: no gradient; outside with the unclipped one larger), and
   ∂loss/∂V against central differences of the loss itself on random tokens away from the kinks. */
static void test_value_loss(void) {
    // V_old = 0, c = 0.5; cases: inside | above, clipped larger | above, unclipped larger |
    // below, unclipped larger | below, clipped larger
    float v[5] = {0.2f, 1.0f, 1.0f, -0.8f, -0.8f}, v_old[5] = {0}, ret[5] = {1.0f, 0.9f, 0.0f, -0.6f, -0.9f};
    float dv[5];
    unsigned char clipped[5];
    double loss = value_loss(5, v, v_old, ret, 0.25f, 0.5f, dv, clipped);
    // ½·coef·max(l1, l2): 0.64 | max(0.01, 0.16) | max(1, 0.25) | max(0.04, 0.01) | max(0.01, 0.16)
    double want = 0.5 * 0.25 * (0.64 + 0.16 + 1.0 + 0.04 + 0.16);
    float want_dv[5] = {0.25f * -0.8f, 0.0f, 0.25f * 1.0f, 0.25f * -0.2f, 0.0f};
    int flags = clipped[0] == 0 && clipped[1] == 1 && clipped[2] == 0 && clipped[3] == 0 && clipped[4] == 1;
    check(fabs(loss - want) < 1e-7 && flags, "critic: value loss by hand, each branch of the clip",
          "loss %.9g (want %.9g), clipped %d%d%d%d%d", loss, want, clipped[0], clipped[1], clipped[2], clipped[3],
          clipped[4]);
    // a few roundings of numbers of size ~1 (TOL_FEW). Measured 1.5e-8 on the three builds; the
    // clipped branch's gradient (coef·(clip(V) − ret)) in place of 0 gives 0.40.
    compare("critic: ∂(value loss)/∂V by hand (0 on the clipped branch)", dv, want_dv, 5, TOL_FEW, 0.0f);
    // random tokens, each at least 0.1 from a kink (V_old ± c, and l1 = l2)
    enum { n = 64 };
    float rv[n], rold[n], rret[n], rdv[n], fd[n];
    unsigned char rc[n];
    Rng rng;
    rng_seed(&rng, 12, 0);
    int got = 0, on_clip = 0;
    while (got < n) {
        float vo = rng_normal(&rng), x = vo + 1.5f * rng_normal(&rng), r = x + rng_normal(&rng);
        float lo = vo - 0.5f, hi = vo + 0.5f, xc = x < lo ? lo : (x > hi ? hi : x);
        float l1 = (x - r) * (x - r), l2 = (xc - r) * (xc - r);
        if (fabsf(x - lo) < 0.1f || fabsf(x - hi) < 0.1f || (xc != x && fabsf(l1 - l2) < 0.1f)) continue;
        rv[got] = x; rold[got] = vo; rret[got] = r;
        on_clip += l2 > l1;
        got++;
    }
    value_loss(n, rv, rold, rret, 1.0f / n, 0.5f, rdv, rc);
    float h = 1e-2f, scratch[n];
    for (int j = 0; j < n; j++) {
        float save = rv[j];
        rv[j] = save + h; double lp = value_loss(n, rv, rold, rret, 1.0f / n, 0.5f, scratch, NULL);
        rv[j] = save - h; double lm = value_loss(n, rv, rold, rret, 1.0f / n, 0.5f, scratch, NULL);
        rv[j] = save;
        fd[j] = (float)((lp - lm) / (2 * h));
    }
    // the loss is quadratic in V on each side of a kink, so the central difference has no
    // truncation error; what is left is the float rounding of the perturbed token's term (at
    // most ~0.1): u·0.1/h = 6e-7, 2.4e-5 of S = 0.025. Measured 2.2e-5 / 2.2e-5 / 2.2e-5. A
    // gradient on the clipped branch (coef·(clip(V) − ret) instead of 0) gives 3.1.
    compare("critic: ∂(value loss)/∂V vs central differences (64 tokens)", rdv, fd, n, 1e-4f, 0.0f);
    check(on_clip > 4 && on_clip < n - 4, "critic: ... the random tokens take both branches",
          "%d of %d on the clipped branch", on_clip, n);
}

// Σ w·V over the positions of a batch, V from the trunk and head (the finite differences' objective)
static double value_sum(GPT *m, const float *head, const int *inp, const float *w, int B, int T, float *v) {
    gpt_forward_trunk(m, inp, B, T);
    value_head_forward(v, m->acts.lnf, head, B * T, m->config.channels);
    double s = 0;
    for (int i = 0; i < B * T; i++) s += (double)w[i] * v[i];
    return s;
}

/* The value head's gradient into the trunk (value_head_backward, then gpt_backward_trunk from
   ∂/∂lnf) and into the head, against central differences on every parameter of a micro model. */
static void test_value_head_gradient(void) {
    GPTConfig cfg = {6, VOCAB_SIZE, 1, 2, 8};
    GPT m;
    build_gpt(&m, cfg, 2, 7);
    Rng rng;
    rng_seed(&rng, 43, 0);
    for (size_t i = 0; i < m.num_parameters; i++)
        m.params_memory[i] = 0.3f * rng_normal(&rng) + (m.params_memory[i] == 1.0f);
    int C = cfg.channels, B = 2, T = 6, inp[12];
    float head[9], w[12], v[12], dhead[9] = {0};
    for (int i = 0; i <= C; i++) head[i] = 0.5f * rng_normal(&rng);
    for (int i = 0; i < B * T; i++) { inp[i] = rng_int(&rng, VOCAB_SIZE); w[i] = rng_normal(&rng); }
    value_sum(&m, head, inp, w, B, T, v);
    gpt_zero_grad(&m);
    gpt_zero_act_grads(&m);
    value_head_backward(m.grads_acts.lnf, dhead, w, m.acts.lnf, head, B * T, C);
    gpt_backward_trunk(&m, inp);
    float *analytic = (float *)mallocCheck(m.num_parameters * 4);
    float *numeric = (float *)mallocCheck(m.num_parameters * 4);
    memcpy(analytic, m.grads_memory, m.num_parameters * 4);
    float h = 1e-2f, num_head[9];
    for (size_t i = 0; i < m.num_parameters; i++) {
        float save = m.params_memory[i];
        m.params_memory[i] = save + h; double fp = value_sum(&m, head, inp, w, B, T, v);
        m.params_memory[i] = save - h; double fm = value_sum(&m, head, inp, w, B, T, v);
        m.params_memory[i] = save;
        numeric[i] = (float)((fp - fm) / (2 * h));
    }
    for (int i = 0; i <= C; i++) {
        float save = head[i];
        head[i] = save + h; double fp = value_sum(&m, head, inp, w, B, T, v);
        head[i] = save - h; double fm = value_sum(&m, head, inp, w, B, T, v);
        head[i] = save;
        num_head[i] = (float)((fp - fm) / (2 * h));
    }
    // as the LM head's finite-difference test: h²/6 times the third derivative plus ~u|f|/h.
    // Measured 3.0e-4 / 3.0e-4 / 3.1e-4 of S (wte). No gradient into the trunk (dlnf = 0)
    // gives 1.0; dlnf = dV without w gives 1.8.
    compare_params("critic: trunk gradient of Σ w·V vs central finite differences", &m, analytic, numeric, 1e-2f,
                   0.0f);
    // V is linear in the head: no truncation error, rounding ~u|f|/h. Measured 1.6e-6 / 1.6e-6
    // / 1.9e-6 of S.
    compare("critic: value head gradient of Σ w·V vs central finite differences", dhead, num_head, C + 1, 1e-4f,
            0.0f);
    free(analytic); free(numeric); free_gpt(&m);
}

/* The critic against PyTorch (tests/ref_model.bin, version 2): V = ln_f(trunk(x))·w + b on the
   reference batch, and the gradients of S_V = Σ w·V with respect to every trunk parameter and
   to the head, from float64 autograd. */
static void test_critic_vs_pytorch(void) {
    Reference r;
    load_reference(&r, "tests/ref_model.bin");
    int BT = r.B * r.T, C = r.m.config.channels;
    float *v = (float *)mallocCheck(BT * 4), *w = (float *)mallocCheck(BT * 4), dhead[64] = {0};
    gpt_forward_trunk(&r.m, r.inputs, r.B, r.T);
    value_head_forward(v, r.m.acts.lnf, r.value_head, BT, C);
    // a dot product of C = 32 LayerNorm outputs (size ~1) with w (0.3): γ_32 of the terms on top
    // of the trunk's error (the logits' 3.8e-7 above). Measured 4.9e-7 / 3.6e-7 / 4.9e-7 of S.
    compare("critic: values V vs PyTorch", v, r.values, BT, TOL_FWD, 0.0f);
    for (int b = 0; b < r.B; b++) for (int t = 0; t < r.T; t++) w[b * r.T + t] = ((b * r.T + t) % 7 - 3) / 10.0f;
    gpt_zero_grad(&r.m);
    gpt_zero_act_grads(&r.m);
    value_head_backward(r.m.grads_acts.lnf, dhead, w, r.m.acts.lnf, r.value_head, BT, C);
    gpt_backward_trunk(&r.m, r.inputs);
    // as the LM head's gradients: each tensor against its own max|grad|. Measured 1.0e-6 /
    // 1.3e-6 / 9.8e-7 (fcprojb, attprojb). dlnf = dV without w gives 5.0; no gradient into the
    // trunk gives 1.0.
    compare_params("critic: d(Σ w·V)/dθ of the trunk vs PyTorch", &r.m, r.m.grads_memory, r.grad_values, TOL_BWD,
                   0.0f);
    // sums of 48 products of size ~1 on top of the forward's error: measured 4.6e-7 / 4.9e-7 /
    // 4.6e-7 of S.
    compare("critic: d(Σ w·V)/d(value head) vs PyTorch", dhead, r.grad_values_head, C + 1, TOL_BWD, 0.0f);
    free(v); free(w); free_gpt(&r.m);
}

/* A batch of 2 groups of 2 completions for the critic's tests: prompts of 3 and 4 tokens,
   completions of 2 to 4 tokens (max_new 4) that share their first tokens within each group,
   rewards 1, 0, 0.5, 1. */
static const int PPO_PROMPT_A[3] = {TOK_BOS, 5, 7}, PPO_PROMPT_B[4] = {TOK_BOS, 9, 4, 11};
static void ppo_test_batch(GroupBatch *g, int micro) {
    build_group_batch(g, 2, 2, 4, micro, 12);
    static const int clen[4] = {4, 2, 3, 4};
    static const int comp[4][4] = {{6, 8, 10, 12}, {6, TOK_EOS, 0, 0}, {13, 14, TOK_EOS, 0}, {13, 14, 4, 5}};
    static const float reward[4] = {1.0f, 0.0f, 0.5f, 1.0f};
    for (int i = 0; i < 4; i++) {
        g->prompt[i] = i < 2 ? PPO_PROMPT_A : PPO_PROMPT_B;
        g->plen[i] = i < 2 ? 3 : 4;
        g->clen[i] = clen[i];
        g->reward[i] = reward[i];
        for (int t = 0; t < 4; t++) g->comp[i * 4 + t] = comp[i][t];
    }
}

static Critic ppo_test_critic(uint64_t seed) {
    GPT m;
    build_gpt(&m, (GPTConfig){12, VOCAB_SIZE, 1, 2, 8}, 4, seed);
    Rng rng;
    rng_seed(&rng, seed, 1);
    for (size_t i = 0; i < m.num_parameters; i++)
        m.params_memory[i] = 0.3f * rng_normal(&rng) + (m.params_memory[i] == 1.0f);
    CriticConfig cfg = {1.0f, 1.0f, 0.5f, {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0, 10, 2, 1.0f}};
    Critic c;
    build_critic(&c, &m, 4, 4, 4, cfg, seed);
    for (int i = 0; i <= c.C; i++) c.head[i] = 0.5f * rng_normal(&rng);
    free_gpt(&m);
    return c;
}

/* The critic on a GroupBatch: V(i,t) is read at the state before token t (a forward of the
   prefix prompt + y_<t alone, its last position); ppo_advantages gives A_t = r − V_old at
   γ = λ = 1, whitened, and grpo_prepare_tokens trains on them with weight 1; the step's value
   loss gradient (critic_loss_backward: the scatter to positions, the head, the trunk) against
   central differences with tokens on both branches of the clip; micro-batches change no
   gradient; one AdamW step of the value head against the formula in double. */
static void test_critic_step(void) {
    GroupBatch g;
    ppo_test_batch(&g, 4);
    Critic c = ppo_test_critic(5);
    GRPOConfig cfg = {0};
    cfg.obj.objective = OBJ_PPO;
    cfg.num_iterations = 1;
    CriticStats stats = {0};
    ppo_advantages(&c, &g, &cfg, &stats);
    float got[16], want[16], v1[1];
    int n = 0;
    for (int i = 0; i < 4; i++)
        for (int t = 0; t < g.clen[i]; t++) {
            int seq[12];
            memcpy(seq, g.prompt[i], g.plen[i] * sizeof(int));
            memcpy(seq + g.plen[i], g.comp + i * 4, t * sizeof(int));
            int T = g.plen[i] + t;
            gpt_forward_trunk(&c.trunk, seq, 1, T);
            value_head_forward(v1, c.trunk.acts.lnf + (size_t)(T - 1) * c.C, c.head, 1, c.C);
            got[n] = c.value_old[i * 4 + t];
            want[n++] = v1[0];
        }
    // the same arithmetic on another batch shape (1 x T instead of 4 x 7): the matmuls' panel
    // order may differ, TOL_FWD. Measured 0 / 0 / 0. Reading V at plen + t (the state after
    // token t) gives 0.77.
    compare("critic: V(i,t) is the value of the prefix prompt + y_<t (the state before token t)", got, want, n,
            TOL_FWD, 0.0f);
    float a_raw[16], a_want[16], adv_tok[16], adv_white[16];
    int weight_one = 1;
    build_group_trees(&g);   // |λ| > 1 where the completions share a prefix: the weight stays 1
    UpdateStats us;
    g.token_adv = c.adv;
    grpo_prepare_tokens(&g, &cfg, &us);
    n = 0;
    for (int i = 0; i < 4; i++)
        for (int t = 0; t < g.clen[i]; t++) {
            a_raw[n] = c.adv_raw[i * 4 + t];
            a_want[n] = (float)((double)g.reward[i] - c.value_old[i * 4 + t]);
            adv_tok[n] = g.adv_tok[i * 4 + t];
            adv_white[n++] = c.adv[i * 4 + t];
            weight_one &= g.weight[i * 4 + t] == 1.0f;
        }
    compare("critic: ppo_advantages at γ = λ = 1: A_t = r − V_old", a_raw, a_want, n, TOL_FEW, 1.0f);
    check(!memcmp(adv_tok, adv_white, n * sizeof(float)) && weight_one && us.mean_lambda > 1.0,
          "critic: grpo_prepare_tokens trains on the whitened A_t (token_adv), weight 1", "mean |λ| %.2f",
          us.mean_lambda);
    // V_old and returns moved off the current V so that tokens sit on every branch of the clip,
    // each at least 0.2 from a kink: inside (0, 0.3) and outside (±0.8) the range V_old ± 0.5
    static const float VOLD_OFF[4] = {0.0f, 0.8f, -0.8f, 0.3f}, RET_OFF[4] = {0.4f, -0.5f, -1.0f, 0.2f};
    for (int i = 0, k = 0; i < 4; i++)
        for (int t = 0; t < g.clen[i]; t++, k++) {
            c.value_old[i * 4 + t] += VOLD_OFF[k % 4];
            c.returns[i * 4 + t] = c.value_old[i * 4 + t] - VOLD_OFF[k % 4] + RET_OFF[k % 4];
        }
    double clip_frac = 0.0;
    critic_loss_backward(&c, &g, &cfg, &clip_frac);
    size_t P = c.trunk.num_parameters;
    int H = c.C + 1;
    float *analytic = (float *)mallocCheck(P * 4), *numeric = (float *)mallocCheck(P * 4);
    float head_an[16], head_num[16];
    memcpy(analytic, c.trunk.grads_memory, P * 4);
    memcpy(head_an, c.head_grad, H * 4);
    float h = 3e-3f;
    double scratch;
    for (size_t i = 0; i < P + H; i++) {
        float *p = i < P ? c.trunk.params_memory + i : c.head + (i - P), save = *p;
        *p = save + h; double fp = critic_loss_backward(&c, &g, &cfg, &scratch);
        *p = save - h; double fm = critic_loss_backward(&c, &g, &cfg, &scratch);
        *p = save;
        if (i < P) numeric[i] = (float)((fp - fm) / (2 * h));
        else head_num[i - P] = (float)((fp - fm) / (2 * h));
    }
    // as the other finite-difference tests (h²/6 · f''' + u|f|/h; h = 3e-3, as 1e-2 gave
    // 6.9e-3). Measured 6.4e-4 / 6.4e-4 / 6.4e-4 of S (qkvw). ∂V scattered one position late
    // gives 3.8; the clipped branch's gradient in place of 0, 3.0; V read one position late, 1.9.
    compare_params("critic: value loss gradient of the step vs central differences (trunk)", &c.trunk, analytic,
                   numeric, 1e-2f, 0.0f);
    // rounding ~u|f|/h: measured 3.1e-5 / 2.4e-5 / 2.8e-5 of S.
    compare("critic: value loss gradient of the step vs central differences (head)", head_an, head_num, H, 1e-3f,
            0.0f);
    check(clip_frac > 0.0 && clip_frac < 1.0, "critic: ... with tokens on both branches of the clip",
          "%.0f of 13 clipped", clip_frac * 13);
    // micro-batches of 3 sequences then 1: the same gradients up to summation order (TOL_BWD).
    // Measured 1.3e-7 / 1.2e-7 / 1.2e-7. ∂V scattered one position late gives 0.50.
    cfg.micro_batch = 3;
    critic_loss_backward(&c, &g, &cfg, &scratch);
    compare_params("critic: micro-batches change no gradient (4 vs 3 + 1)", &c.trunk, c.trunk.grads_memory,
                   analytic, TOL_BWD, 0.0f);
    // one AdamW step of the head (critic_update, μ = 1, no clipping: t = 1, lr 1e-2, wd 0.1 on w only) against
    // the formula in double, on the gradient critic_loss_backward gave just now (critic_update computes it again)
    float head0[16], want_head[16], g0[16];
    memcpy(head0, c.head, H * 4);
    memcpy(g0, c.head_grad, H * 4);
    const AdamWConfig *o = &c.cfg.opt;
    for (int i = 0; i < H; i++) {
        double m1 = (1 - (double)o->beta1) * g0[i], m2 = (1 - (double)o->beta2) * g0[i] * g0[i];
        double mh = m1 / (1 - o->beta1), vh = m2 / (1 - o->beta2), wd = i < c.C ? o->weight_decay : 0.0;
        want_head[i] = (float)(head0[i] * (1 - o->lr * wd) - o->lr * mh / (sqrt(vh) + o->eps));
    }
    c.cfg.opt.grad_clip = 0.0f;
    critic_update(&c, &g, &cfg, &stats);
    // a handful of roundings per entry (TOL_FEW of the head's size). Measured 1.1e-7 on the
    // three builds. Weight decay on the bias too gives 5.5e-4.
    compare("critic: one AdamW step of the value head (decay on w, not b) vs the formula", c.head, want_head, H,
            TOL_FEW, 0.0f);
    free(analytic); free(numeric); free_critic(&c); free_group_batch(&g);
}

// A checkpoint without its state sections: the header's count and total set to 0, the file cut after the record.
static void strip_sections(const char *from, const char *to) {
    size_t n;
    unsigned char *buf = (unsigned char *)read_all(from, &n);
    int32_t h[CKPT_HEADER_INTS];
    memcpy(h, buf, sizeof h);
    size_t sections = (size_t)h[13] + ((size_t)h[14] << 31) + (size_t)h[12] * (CKPT_TAG_BYTES + 8);
    h[12] = h[13] = h[14] = 0;
    memcpy(buf, h, sizeof h);
    reseal_checkpoint(buf, n - sections);
    write_bytes(to, buf, n - sections);
    free(buf);
}

/* ./grpo train --objective ppo end to end (fresh processes): two runs with one seed give the same
   model.bin (policy and critic); 2 steps saved then resumed to 4 give it too; the log holds the
   critic's columns; a resume refuses a checkpoint without the critic (naming the file) and
   another --gae-lambda; a GRPO run's log and checkpoint record are what they were (no critic
   columns, no GAE options). */
static void test_ppo_train(void) {
    char init[300], a[300], b[300], path[300];
    save_tiny_init(init, sizeof init, "ppo_init.bin", 31);
    static char cmd[2048], out[16384];
    char common[1024];
    tiny_train_args(common, sizeof common, init);
    strcat(common, " --objective ppo --micro-batch 3");
    const char *dirs[3] = {"ppo_a", "ppo_b", "ppo_c"};
    const char *extra[3] = {"", "--save-every 2", ""};
    int code = 0;
    for (int k = 0; k < 3 && code == 0; k++) {
        snprintf(cmd, sizeof cmd, "%s train %s %s --run-dir %s/%s", grpo_bin(), common, extra[k], TMPDIR_,
                 dirs[k]);
        if (k == 2) {   // resumed from ppo_b's step-2 checkpoint, into a new run dir
            snprintf(path, sizeof path, "%s/ppo_b/ckpt.bin", TMPDIR_);
            snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " --resume %s", path);
        }
        code = run_binary(cmd, out, sizeof out);
    }
    snprintf(a, sizeof a, "%s/ppo_a/model.bin", TMPDIR_);
    snprintf(b, sizeof b, "%s/ppo_b/model.bin", TMPDIR_);
    check(code == 0 && files_equal(a, b), "ppo: same seed gives a bit-identical model.bin (policy and critic)",
          "exit %d: %s", code, line_with(out, "error"));
    snprintf(b, sizeof b, "%s/ppo_c/model.bin", TMPDIR_);
    check(code == 0 && files_equal(a, b), "ppo: resume from the step-2 checkpoint == 4 steps straight", "");
    GPT m;
    TrainState st = {0};
    st.kind = 2;
    load_checkpoint(a, &m, 1, &st);
    uint64_t bytes = 0;
    const char *sec = (const char *)ckpt_section(&st, "critic", &bytes);
    int64_t head[3] = {0, 0, 0};
    if (sec) memcpy(head, sec, sizeof head);
    check(sec && bytes == critic_section_bytes(m.num_parameters, 8) && head[0] == 4 &&
          head[1] == (int64_t)m.num_parameters && strstr(st.options, "gae-lambda=1\n"),
          "ppo: model.bin holds the critic (4 AdamW steps) and GAE's options in its record",
          "%llu bytes, %lld steps", (unsigned long long)bytes, (long long)head[0]);
    free_gpt(&m);
    for (int i = 0; i < st.num_sections; i++) free(st.section[i].data);
    snprintf(path, sizeof path, "%s/ppo_a/train.csv", TMPDIR_);
    size_t n;
    char *csv = (char *)read_all(path, &n);
    csv = (char *)realloc(csv, n + 1);
    csv[n] = 0;
    double vloss[8], tc[8];
    int rows = csv_column(csv, "value_loss", vloss, 8);
    csv_column(csv, "t_critic", tc, 8);
    free(csv);
    check(rows == 4 && vloss[0] > 0 && vloss[3] > 0 && tc[0] > 0, "ppo: train.csv has the critic's columns",
          "%d rows, value loss %g .. %g", rows, rows > 0 ? vloss[0] : -1, rows > 3 ? vloss[3] : -1);
    // the step-2 checkpoint without its sections: refused, naming the file
    char bare[300];
    snprintf(path, sizeof path, "%s/ppo_b/ckpt.bin", TMPDIR_);
    snprintf(bare, sizeof bare, "%s/ppo_bare.bin", TMPDIR_);
    strip_sections(path, bare);
    snprintf(cmd, sizeof cmd, "%s train %s --resume %s --run-dir %s/ppo_d", grpo_bin(), common, bare, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    const char *err = line_with(out, "error");
    check(code == 1 && strstr(err, "ppo_bare.bin") && strstr(err, "holds no critic"),
          "ppo: --resume of a checkpoint without the critic is refused, naming the file", "exit %d: %s", code, err);
    snprintf(cmd, sizeof cmd, "%s train %s --gae-lambda 0.9 --resume %s --run-dir %s/ppo_e", grpo_bin(), common,
             path, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    err = line_with(out, "usage error");
    check(code == 2 && strstr(err, "--gae-lambda 0.9: '") && strstr(err, "with --gae-lambda 1"),
          "ppo: --resume with another --gae-lambda: a usage error naming both values", "exit %d: %s", code, err);
    // GRPO beside it: no critic columns, no critic options in the record
    tiny_train_args(common, sizeof common, init);
    snprintf(cmd, sizeof cmd, "%s train %s --objective grpo --run-dir %s/ppo_grpo", grpo_bin(), common, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    snprintf(path, sizeof path, "%s/ppo_grpo/train.csv", TMPDIR_);
    csv = code == 0 ? (char *)read_all(path, &n) : NULL;
    if (csv) {
        csv = (char *)realloc(csv, n + 1);
        csv[n] = 0;
    }
    int plain_log = csv && !strstr(csv, "value_loss");
    free(csv);
    snprintf(path, sizeof path, "%s/ppo_grpo/model.bin", TMPDIR_);
    TrainState st2 = {0};
    st2.kind = 2;
    if (code == 0) {
        load_checkpoint(path, &m, 1, &st2);
        free_gpt(&m);
    }
    check(code == 0 && plain_log && !strstr(st2.options, "gae") && !strstr(st2.options, "critic") &&
          !ckpt_section(&st2, CRITIC_TAG, &(uint64_t){0}) && !strstr(out, "gae-gamma="),
          "ppo: a GRPO run prints, logs and records no critic option or column", "exit %d", code);
}

/* --budget-unit flops with ppo on the tiny model (L 2, C 32, maxT 64): F_critic = F − 2CV + 2C;
   per step, flops = (F + F_critic)·(R + 3μR) and trained tokens = 2μR (policy and critic), at μ = 2. */
static void test_ppo_budget(void) {
    GPTConfig tiny = {64, VOCAB_SIZE, 2, 2, 32};
    double n_tiny = 2.0 * (12 * 32 * 32 + 13 * 32) + 2 * 32;
    double F = model_flops_per_token(&tiny), Fc = critic_flops_per_token(&tiny);
    check(Fc == 2 * n_tiny + 2.0 * 32 + 2.0 * 2 * 64 * 32 && F - Fc == 2.0 * 32 * (VOCAB_SIZE - 1),
          "ppo budget: critic FLOPs per token = 2N + 2C + 2L·maxT·C (L2 C32)", "%.0f (policy %.0f)", Fc, F);
    char args[2048], log[256];
    snprintf(log, sizeof log, "%s/ppo_budget.log", TMPDIR_);
    run_cmd_quiet(cmd_sft, "--layers 2 --heads 2 --channels 32 --batch-size 8 --steps 5 --lr 3e-3 "
                  "--eval-every 0 --val-data tests/fixtures/val_small.txt "
                  "--run-dir /tmp/grpo_test/ppo_budget_sft", log);
    snprintf(args, sizeof args, "--objective ppo --init /tmp/grpo_test/ppo_budget_sft/model.bin "
             "--prompts-per-step 2 --group-size 4 --max-new-tokens 24 --eval-limit 8 --test-limit 0 --pass-k 0 --eval-every 0 "
             "--steps 1000 --val-data tests/fixtures/val_small.txt --seed 2 --num-iterations 2 "
             "--budget-unit flops --budget %.0f --run-dir /tmp/grpo_test/ppo_budget", 5000.0 * (F + Fc));
    int rc = run_cmd_quiet(cmd_train, args, log);
    size_t n;
    char *csv = rc == 0 ? (char *)read_all(tmp_path("/tmp/grpo_test/ppo_budget/train.csv"), &n) : NULL;
    static double flops[4096], trained[4096], spent[4096];
    int rows = 0;
    if (csv) {
        csv = (char *)realloc(csv, n + 1);
        csv[n] = 0;
        rows = csv_column(csv, "flops", flops, 4096);
        csv_column(csv, "trained_tokens", trained, 4096);
        csv_column(csv, "budget_spent", spent, 4096);
        free(csv);
    }
    int ok = rows > 1, sums = rows > 1;
    double cum = 0.0;
    for (int i = 0; i < rows; i++) {
        double R = trained[i] / 4.0;   // μ = 2, two models: trained = 4R
        ok &= R == floor(R) && fabs(flops[i] - (F + Fc) * 7.0 * R) <= 1e-12 * flops[i];
        cum += flops[i];
        sums &= fabs(spent[i] - cum) <= 1e-12 * cum;
    }
    check(rc == 0 && ok && sums && spent[rows - 1] >= 5000.0 * (F + Fc) && spent[rows - 2] < 5000.0 * (F + Fc),
          "ppo budget: FLOPs = (F + F_critic)(R + 3μR), trained = 2μR, every step; the run stops at the budget",
          "exit %d, %d steps", rc, rows);
}

/* Usage errors of --objective ppo's options. */
static void test_ppo_usage(void) {
    static CmdCall calls[] = {
        {cmd_train, "--objective ppo --gae-gamma 1.5"}, {cmd_train, "--objective ppo --gae-lambda -0.1"},
        {cmd_train, "--objective ppo --critic-lr -1"}, {cmd_train, "--gae-lambda 0.9"},
        {cmd_tree, "--critic-lr 1e-3"}, {cmd_train, "--objective ppo --critic-lr 2 --weight-decay 0.6"},
        {cmd_check, "--objective ppo tests/fixtures/check/authors_dapo_clip.txt"},
    };
    const char *needles[] = {"--gae-gamma: '1.5' is out of range [0, 1]",
                             "--gae-lambda: '-0.1' is out of range", "--critic-lr: '-1' is out of range",
                             "--gae-lambda 0.9 applies to --objective ppo only, and this run has --objective "
                             "lambda-grpo",
                             "--critic-lr 0.001 applies to --objective ppo only",
                             "--critic-lr 2 x --weight-decay 0.6", "--objective ppo: check"};
    const char *names[] = {"ppo usage: --gae-gamma above 1 is refused",
                           "ppo usage: a negative --gae-lambda is refused",
                           "ppo usage: a negative --critic-lr is refused",
                           "ppo usage: --gae-lambda without --objective ppo is refused (it would be ignored)",
                           "ppo usage: ... and --critic-lr on the tree task without it",
                           "ppo usage: --critic-lr x --weight-decay >= 1 is refused",
                           "ppo usage: check refuses --objective ppo (no critic values in its format)"};
    for (int i = 0; i < (int)(sizeof calls / sizeof calls[0]); i++)
        expect_exit(names[i], cmd_call_fn, &calls[i], 2, needles[i]);
}

/* The tree task with --objective ppo: a run is deterministic, its metric the mean target frequency;
   its first step samples what GRPO's does (the same initial policy and streams); ./grpo tree
   --objective ppo adds the PPO column and its rows in tree_steps.csv. */
static void test_tree_ppo(void) {
    Options o;
    default_options(&o);
    o.steps = 8; o.group_size = 16; o.prompts_per_step = 1; o.lr = 3e-3f; o.schedule = 2; o.layers = 1;
    o.heads = 1; o.channels = 16;
    float f1[8], f2[8], fg[8], r1[8], r2[8], rg[8];
    int t1, t2, tg;
    float m1 = tree_run(&o, OBJ_PPO, 1, -1.0f, 3, f1, r1, &t1);
    float m2 = tree_run(&o, OBJ_PPO, 1, -1.0f, 3, f2, r2, &t2);
    tree_run(&o, OBJ_GRPO, 1, -1.0f, 3, fg, rg, &tg);
    double mean = 0;
    for (int s = 0; s < 8; s++) mean += f1[s];
    mean /= 8;
    // a mean of 8 frequencies in [0, 1], float against double: a few u of 1 (TOL_FEW)
    check(!memcmp(f1, f2, sizeof f1) && !memcmp(r1, r2, sizeof r1) && m1 == m2 && fabs(m1 - mean) <= TOL_FEW &&
          m1 >= 0 && m1 <= 1 && t1 == tg && r1[0] == rg[0] && f1[0] == fg[0],
          "tree task: ppo runs are deterministic, and sample GRPO's first step", "metric %.3f, target %d", m1, t1);
    char log[256];
    snprintf(log, sizeof log, "%s/tree_ppo.log", TMPDIR_);
    int rc = run_cmd_quiet(cmd_tree, "--objective ppo --steps 3 --seeds 1 --layers 1 --heads 1 --channels 8 "
                           "--run-dir /tmp/grpo_test/tree_ppo", log);
    size_t n;
    char *text = (char *)read_all(log, &n);
    text = (char *)realloc(text, n + 1);
    text[n] = 0;
    char *csv = (char *)read_all(tmp_path("/tmp/grpo_test/tree_ppo/tree_steps.csv"), &n);
    csv = (char *)realloc(csv, n + 1);
    csv[n] = 0;
    int ppo_rows = 0;
    for (char *p = csv; (p = strstr(p, "\nppo,")); p++) ppo_rows++;
    check(rc == 0 && strstr(text, "PPO (ours)") && strstr(text, "\n  ppo ") && ppo_rows == 6 * 3,
          "tree task: --objective ppo adds the PPO column and its rows", "exit %d, %d ppo rows", rc, ppo_rows);
    free(text); free(csv);
}

// ----------------------------------------------------------------------------
// The comparison objectives together: MC-PRM and PPO with the tree-packed update, the four methods
// in one tree table, and their options on the commands that run them

// Column `name` of RUN_DIR/train.csv (TMPDIR_/dir) into out (max rows); returns the rows (-1: none).
static int train_csv_column(const char *dir, const char *name, double *out, int max) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s/train.csv", TMPDIR_, dir);
    size_t n;
    char *csv = (char *)read_all(path, &n);
    if (!csv) return -1;
    csv = (char *)realloc(csv, n + 1);
    csv[n] = 0;
    int rows = csv_column(csv, name, out, max);
    free(csv);
    return rows;
}

/* --objective mc-prm and ppo with --update-layout tree (train, tiny model): both change the
   per-token advantages only (GroupBatch.token_adv), so the policy's update may be tree-packed;
   PPO's critic keeps the padded layout (its value head reads every position of a padded batch).
   Each runs in both layouts; step 1's loss (iteration 0, before any update: the log-probs are
   bit-identical across layouts and the per-token loss is the same code) prints identically, its
   gradient norm agrees to float rounding, MC-PRM's states and the critic's value loss (the
   critic has not seen the policy's update) print identically; and the banner names the layout.
   (The tiny random model earns no reward, so MC-PRM's advantages are 0 here: the gradients with
   per-token advantages are test_tree_update_token_adv's.) */
static void test_objectives_tree_layout(void) {
    char init[300], common[1024];
    save_tiny_init(init, sizeof init, "obj_layout_init.bin", 37);
    tiny_train_args(common, sizeof common, init);
    static char cmd[2048], out[16384];
    const char *objectives[2] = {"mc-prm", "ppo"};
    const char *same_col[2] = {"mc_states", "value_loss"};
    for (int k = 0; k < 2; k++) {
        double loss[2][4], norm[2][4], same[2][4];
        int rc[2], rows[2], named = 0;
        for (int lay = 0; lay < 2; lay++) {
            char dir[64];
            snprintf(dir, sizeof dir, "obj_layout_%s_%s", objectives[k], UPDATE_LAYOUT_NAMES[lay]);
            snprintf(cmd, sizeof cmd, "%s train %s --steps 2 --micro-batch 3 --objective %s "
                     "--update-layout %s --run-dir %s/%s", grpo_bin(), common, objectives[k],
                     UPDATE_LAYOUT_NAMES[lay], TMPDIR_, dir);
            rc[lay] = run_binary(cmd, out, sizeof out);
            if (lay == 1) named = strstr(out, " update-layout=tree") != NULL;
            rows[lay] = train_csv_column(dir, "loss", loss[lay], 4);
            train_csv_column(dir, "grad_norm", norm[lay], 4);
            train_csv_column(dir, same_col[k], same[lay], 4);
        }
        int ran = rc[0] == 0 && rc[1] == 0 && rows[0] == 2 && rows[1] == 2;
        char name[160];
        snprintf(name, sizeof name, "%s --update-layout tree: runs, step 1's loss%s as padded's, its gradient "
                 "norm to rounding", objectives[k], k ? " and value loss" : " and states");
        // grad_norm: %.5f in the log, the gradients agree to ~2e-6 of each tensor's max (treepack)
        check(ran && named && loss[0][0] == loss[1][0] && same[0][0] == same[1][0] &&
              fabs(norm[0][0] - norm[1][0]) <= 1e-4 * (1 + norm[0][0]), name,
              "exit %d/%d, loss %.8g/%.8g, %s %g/%g, grad norm %.5f/%.5f", rc[0], rc[1],
              ran ? loss[0][0] : 0, ran ? loss[1][0] : 0, same_col[k], ran ? same[0][0] : 0,
              ran ? same[1][0] : 0, ran ? norm[0][0] : 0, ran ? norm[1][0] : 0);
    }
}

/* ./grpo tree --objective mc-prm,ppo: four methods in one table, in OBJECTIVE_NAMES order whatever
   the list's (GRPO, λ-GRPO, MC-PRM, PPO: four cells per row), each with its rows in
   tree_steps.csv; the banner holds the options of both (--mc-k, --critic-lr), which a list
   without their objective refuses. */
static void test_tree_four_methods(void) {
    static char cmd[2048], out[32768];
    snprintf(cmd, sizeof cmd, "%s tree --objective ppo,mc-prm --mc-k 2 --critic-lr 2e-3 --steps 3 --seeds 1 "
             "--layers 1 --heads 1 --channels 8 --threads 2 --run-dir %s/tree_four", grpo_bin(), TMPDIR_);
    int rc = run_binary(cmd, out, sizeof out);
    const char *head = strstr(out, "GRPO (ours)");
    const char *l = head ? strstr(head, "λ-GRPO (ours)") : NULL;
    const char *m = l ? strstr(l, "MC-PRM (ours)") : NULL;
    const char *p = m ? strstr(m, "PPO (ours)") : NULL;
    int cells = 0;   // "±" in the row n = 1, r_neg = -1.0
    const char *row = strstr(out, "  1   -1.0 |");
    for (const char *c = row; c && *c && *c != '\n'; c++) cells += !strncmp(c, "±", strlen("±"));
    size_t n;
    char path[400];
    snprintf(path, sizeof path, "%s/tree_four/tree_steps.csv", TMPDIR_);
    char *csv = (char *)read_all(path, &n);
    int count[4] = {0, 0, 0, 0};
    if (csv) {
        csv = (char *)realloc(csv, n + 1);
        csv[n] = 0;
        for (int k = 0; k < 4; k++) {
            char key[32];
            snprintf(key, sizeof key, "\n%s,", OBJECTIVE_NAMES[k]);
            for (const char *q = csv; (q = strstr(q, key)); q++) count[k]++;
        }
        free(csv);
    }
    int csv_rows = count[0] == 18 && count[1] == 18 && count[2] == 18 && count[3] == 18;
    check(rc == 0 && p && cells == 4 && strstr(out, " objective=ppo,mc-prm") && strstr(out, " mc-k=2") &&
          strstr(out, " critic-lr=0.002") && csv_rows,
          "tree --objective ppo,mc-prm: GRPO, λ-GRPO, MC-PRM, PPO in one table and in tree_steps.csv",
          "exit %d, %d cells, rows %d %d %d %d", rc, cells, count[0], count[1], count[2], count[3]);
    static CmdCall calls[] = {
        {cmd_tree, "--objective mc-prm --critic-lr 1e-3"}, {cmd_tree, "--objective ppo --mc-whiten 0"},
        {cmd_train, "--objective mc-prm --gae-gamma 0.9"}, {cmd_train, "--objective ppo --mc-k 2"},
    };
    const char *needles[] = {
        "--critic-lr 0.001 applies to --objective ppo only, and tree runs it only with ppo",
        "--mc-whiten 0 applies to --objective mc-prm only, and tree runs it only with mc-prm",
        "--gae-gamma 0.9 applies to --objective ppo only, and this run has --objective mc-prm",
        "--mc-k 2 applies to --objective mc-prm only, and this run has --objective ppo"};
    const char *names[] = {"usage: tree --objective mc-prm refuses PPO's --critic-lr",
                           "usage: tree --objective ppo refuses MC-PRM's --mc-whiten",
                           "usage: train --objective mc-prm refuses PPO's --gae-gamma",
                           "usage: train --objective ppo refuses MC-PRM's --mc-k"};
    for (int i = 0; i < (int)(sizeof calls / sizeof calls[0]); i++)
        expect_exit(names[i], cmd_call_fn, &calls[i], 2, needles[i]);
}

// ----------------------------------------------------------------------------
// Prompt selection: the Beta sampler, MoPPS's rule and update, DAPO's dynamic
// sampling, Spearman, and the runs (resume, refusals, usage errors, compare)

/* The gamma and Beta samplers against their exact mean and variance. The sample mean of n
   draws has standard error sqrt(var/n); the sample variance has sqrt((μ4 − var²)/n), μ4 the
   central fourth moment (exact: Gamma(a): var = a, μ4 = 3a² + 6a; Beta: from the raw moments
   E[X^r] = Π_{j<r} (α+j)/(α+β+j)). Each passes within 5 standard errors: a correct sampler
   fails one check with probability 6e-7 (the RNG is fixed, so the outcome is too); a sampler
   that skipped the U^(1/a) boost (a < 1), or returned X/(X+Y) with Y's parameter for X, is off
   by dozens of errors. Includes a, α, β < 1 and values near 0 and 1 (Beta(0.02, 0.05)). */
static void test_beta_sampler(void) {
    const int n = 100000;
    Rng rng;
    rng_seed(&rng, 17, 0x17);
    const double shapes[5] = {0.05, 0.5, 1.0, 2.5, 30.0};
    int ok = 1;
    double worst = 0.0;
    for (int s = 0; s < 5; s++) {
        double a = shapes[s], sum = 0.0, sum2 = 0.0;
        for (int i = 0; i < n; i++) {
            double x = exp(rng_gamma_log(&rng, a));
            sum += x;
            sum2 += x * x;
        }
        double mean = sum / n, var = sum2 / n - mean * mean;
        double z_mean = fabs(mean - a) / sqrt(a / n);
        double z_var = fabs(var - a) / sqrt((3 * a * a + 6 * a - a * a) / n);
        worst = fmax(worst, fmax(z_mean, z_var));
        ok &= z_mean < 5 && z_var < 5;
    }
    check(ok, "select: Gamma(a) draws: mean a and variance a (a = 0.05 ... 30)", "worst %.2f standard errors "
          "of 5, %d draws each", worst, n);
    const double ab[8][2] = {{1, 1}, {0.3, 0.5}, {0.5, 2}, {2, 5}, {20, 3}, {0.1, 0.1}, {0.02, 0.05},
                             {200, 300}};
    ok = 1;
    worst = 0.0;
    int in_range = 1;
    for (int c = 0; c < 8; c++) {
        double a = ab[c][0], b = ab[c][1];
        double m1 = a / (a + b), m2 = m1 * (a + 1) / (a + b + 1);
        double m3 = m2 * (a + 2) / (a + b + 2), m4 = m3 * (a + 3) / (a + b + 3);
        double var = m2 - m1 * m1;
        double mu4 = m4 - 4 * m1 * m3 + 6 * m1 * m1 * m2 - 3 * m1 * m1 * m1 * m1;
        double sum = 0.0, sum2 = 0.0;
        for (int i = 0; i < n; i++) {
            double x = rng_beta(&rng, a, b);
            in_range &= x >= 0.0 && x <= 1.0;
            sum += x;
            sum2 += x * x;
        }
        double mean = sum / n, v = sum2 / n - mean * mean;
        double z_mean = fabs(mean - m1) / sqrt(var / n), z_var = fabs(v - var) / sqrt((mu4 - var * var) / n);
        if (fmax(z_mean, z_var) > worst) worst = fmax(z_mean, z_var);
        if (!(z_mean < 5 && z_var < 5)) {
            printf("      Beta(%g, %g): mean %.6f (exact %.6f), variance %.6f (exact %.6f)\n", a, b, mean, m1,
                   v, var);
            ok = 0;
        }
    }
    check(ok && in_range, "select: Beta(α, β) draws: exact mean and variance, α, β from 0.02 to 300",
          "worst %.2f standard errors of 5, %d draws each, all in [0, 1]: %d", worst, n, in_range);
}

// A hand-made dataset of n prompts (only what selection reads: the prompt rows and lengths).
static Dataset hand_dataset(int n) {
    Dataset d;
    memset(&d, 0, sizeof d);
    d.n = n;
    d.maxT = 4;
    d.prompt = (int *)callocCheck((size_t)n * d.maxT, sizeof(int));
    d.prompt_len = (int *)callocCheck(n, sizeof(int));
    for (int q = 0; q < n; q++) {
        d.prompt[q * d.maxT] = TOK_BOS;
        d.prompt[q * d.maxT + 1] = 3 + q;
        d.prompt_len[q] = 2;
    }
    return d;
}

/* MoPPS's rule: of the candidates, the P with the smallest (p̂ − τ)², nearest first, equal
   distances in candidate order; on a hand table of p̂ (posterior means, exact binary fractions,
   so the ties are exact) with M = n, against a selection by brute force in the order the
   candidates were drawn; then on another table through select_prompts, and with Thompson draws. */
static void test_mopps_select(void) {
    const double table_a[8] = {7, 3, 5, 1, 1, 3, 3, 1}, table_b[8] = {1, 5, 3, 7, 1, 5, 1, 3};
    Dataset d8 = hand_dataset(8);
    Rng rng;
    rng_seed(&rng, 3, 9);
    int ok = 1, ties = 0;
    for (int run = 0; run < 2; run++) {   // τ 0.5 keeps 5 (p̂ 0.375 and 0.625 tie), τ 0.25 keeps 3
        double tau = run == 0 ? 0.5 : 0.25;
        int P = run == 0 ? 5 : 3, used[8] = {0};
        PromptSelector s;
        build_prompt_selector(&s, SELECT_MOPPS, tau, 8, 1.0, 1, 8, P, 2, 4, 8);
        memcpy(s.alpha, table_a, sizeof table_a);
        memcpy(s.beta, table_b, sizeof table_b);
        s.thompson = 0;
        GroupBatch g;
        build_group_batch(&g, P, 2, 4, 0, 8);
        SelectStats stats;
        select_prompts(&s, &g, &d8, &rng, &stats);
        for (int p = 0; p < P; p++) {   // the nearest unused candidate, the first drawn among equals
            int best = -1;
            double dist[8];
            for (int c = 0; c < 8; c++) {
                double ph = table_a[s.cand[c]] / (table_a[s.cand[c]] + table_b[s.cand[c]]);
                dist[c] = (ph - tau) * (ph - tau);
                if (!used[c] && (best < 0 || dist[c] < dist[best])) best = c;
            }
            for (int c = best + 1; c < 8; c++) ties += !used[c] && dist[c] == dist[best];
            used[best] = 1;
            ok &= g.prompt_idx[p] == s.cand[best] && s.step_pred[p] == s.phat[best];
        }
        free_group_batch(&g);
        free_prompt_selector(&s);
    }
    free_dataset(&d8);
    check(ok && ties > 0, "select: MoPPS keeps the P candidates nearest τ, ties in candidate order (hand table)",
          "%d ties", ties);
    // candidates (mopps_select): distinct, in range, the scratch left clean; all n of n is a permutation
    Dataset d40 = hand_dataset(40);
    int perm = 1, clean = 1;
    for (int M = 40; M >= 7; M -= 33) {   // M = n, then 7 of 40
        PromptSelector c;
        build_prompt_selector(&c, SELECT_MOPPS, 0.5, M, 1.0, 1, 40, 1, 2, 4, 8);
        GroupBatch one;
        build_group_batch(&one, 1, 2, 4, 0, 8);
        SelectStats stats;
        select_prompts(&c, &one, &d40, &rng, &stats);
        int seen[40] = {0};
        for (int e = 0; e < M; e++) perm &= c.cand[e] >= 0 && c.cand[e] < 40 && seen[c.cand[e]]++ == 0;
        for (int q = 0; q < 40; q++) clean &= c.taken[q] == 0;
        free_group_batch(&one);
        free_prompt_selector(&c);
    }
    free_dataset(&d40);
    check(perm && clean, "select: MoPPS candidates are distinct prompts (M = n: a permutation)", "");
    // the whole selection on a posterior table: means 0.5, 0.9, 0.25, 0.375, 0.55, 0.1
    Dataset d = hand_dataset(6);
    PromptSelector s;
    build_prompt_selector(&s, SELECT_MOPPS, 0.5, 6, 1.0, 1, 6, 3, 2, 4, 8);
    const double alpha[6] = {1, 9, 1, 3, 11, 1}, beta[6] = {1, 1, 3, 5, 9, 9};
    memcpy(s.alpha, alpha, sizeof alpha);
    memcpy(s.beta, beta, sizeof beta);
    s.thompson = 0;
    GroupBatch g;
    build_group_batch(&g, 3, 2, 4, 0, 8);
    SelectStats stats;
    select_prompts(&s, &g, &d, &rng, &stats);
    const int want[3] = {0, 4, 3};   // distances 0, 0.0025, 0.015625
    ok = !memcmp(g.prompt_idx, want, sizeof want) && fabs(s.step_pred[1] - 0.55) < 1e-15;
    for (int i = 0; i < g.N; i++)
        ok &= g.prompt[i] == d.prompt + (size_t)want[i / 2] * d.maxT && g.plen[i] == 2;
    check(ok, "select: MoPPS on a posterior table (posterior means): prompts 0, 4, 3", "got %d %d %d",
          g.prompt_idx[0], g.prompt_idx[1], g.prompt_idx[2]);
    // Thompson draws: Beta(200, 200) (p̂ within 0.1 of 0.5 all but 6e-5 of the time) against
    // Beta(1, 30) (p̂ above 0.4 with probability 0.6^30 = 2e-7): P = 1 of M = 2 picks the first
    PromptSelector t;
    build_prompt_selector(&t, SELECT_MOPPS, 0.5, 2, 1.0, 1, 2, 1, 2, 4, 8);
    t.alpha[0] = 1;
    t.beta[0] = 30;
    t.alpha[1] = 200;
    t.beta[1] = 200;
    GroupBatch one;
    build_group_batch(&one, 1, 2, 4, 0, 8);
    Dataset d2 = hand_dataset(2);
    int picked = 0;
    for (int i = 0; i < 1000; i++) {
        select_prompts(&t, &one, &d2, &rng, &stats);
        picked += one.prompt_idx[0] == 1;
    }
    check(picked == 1000, "select: MoPPS's Thompson draws pick the prompt whose posterior sits at τ",
          "%d of 1000", picked);
    free_group_batch(&g);
    free_group_batch(&one);
    free_prompt_selector(&s);
    free_prompt_selector(&t);
    free_dataset(&d);
    free_dataset(&d2);
}

/* The posterior update (notes/credit-assignment.md §5) by hand, through select_observe on the GROUP
   batch (8 completions of "7 3 5>26:", 4 accepted by the verifier) scored with --format-reward 0.1:
   the well-formed wrong answers' 0.1 is no success, so at d = 1 (1, 1) -> (5, 5), realised success
   0.5, and the pair (p̂, 0.5) joins the history. Then from (4, 2) at d = 0.5 the same group gives
   (0.5·4 + 0.5 + 4, 0.5·2 + 0.5 + 4) = (6.5, 5.5) (all exact in binary). */
static void test_mopps_update(void) {
    char path[300];
    snprintf(path, sizeof path, "%s/select_group.txt", TMPDIR_);
    FILE *f = fopenCheck(path, "w");
    fprintf(f, "9 9>9:\n7 3 5>26:\n");
    fclose(f);
    Dataset d;
    load_dataset(&d, path, 64, 0, &TASKS[TASK_COUNTDOWN]);
    PromptSelector s;
    build_prompt_selector(&s, SELECT_MOPPS, 0.5, 2, 1.0, 1, d.n, 1, 8, 24, 64);
    GroupBatch g;
    build_group_batch(&g, 1, 8, 24, 0, 64);
    g.prompt_idx[0] = 1;
    set_group_prompts(&g, &d);
    Options o;
    default_options(&o);
    fill_group(&g, g.prompt[0], g.plen[0], GROUP, GROUP_R, &o.obj);
    score_group(&g, &d, 0.1f);
    int partial = 0;
    for (int i = 0; i < g.N; i++) partial += g.reward[i] > 0.0f && g.reward[i] < 1.0f;
    s.step_pred[0] = 0.625;
    SelectStats stats = {0};
    select_observe(&s, &g, &d, &stats);
    int ok = partial > 0 && s.alpha[1] == 5.0 && s.beta[1] == 5.0 && s.alpha[0] == 1.0 && s.groups == 1 &&
         s.history[0] == 0.625 && s.history[1] == 0.5 && stats.p_real == 0.5 && stats.p_pred == 0.625 &&
         mopps_state_bytes(&s) == (2 + 2 * 2 + 2) * sizeof(double) && s.state[1] == 1.0;
    check(ok, "select: a group's verifier successes update its prompt (format reward is no success)",
          "%d partial rewards; (%g, %g), realised %.3f", partial, s.alpha[1], s.beta[1], stats.p_real);
    s.alpha[1] = 4.0;
    s.beta[1] = 2.0;
    s.decay = 0.5;
    select_observe(&s, &g, &d, &stats);
    check(s.alpha[1] == 6.5 && s.beta[1] == 5.5 && s.alpha[0] == 1.0 && s.beta[0] == 1.0 && s.groups == 2,
          "select: MoPPS posterior update by hand at d = 0.5 (decayed towards (1, 1))", "(%g, %g)", s.alpha[1],
          s.beta[1]);
    free_group_batch(&g);
    free_prompt_selector(&s);
    free_dataset(&d);
}

// spare holds its first m groups from now on, as select_after_scoring sets a refill round's batch
static void spare_first(GroupBatch *spare, int m) {
    spare->num_groups = m;
    spare->N = spare->group_start[m];
}

// group p of g: rewards r[0..k), completion lengths len[0..k) (token t of completion i is 3 + t),
// prompt index q with plen prompt tokens
static void hand_group(GroupBatch *g, int p, const float *r, const int *len, int q, int plen) {
    static const int prompt[8] = {TOK_BOS, 3, 4, 5, 6, 7, 8, 9};
    g->prompt_idx[p] = q;
    for (int j = 0; j < g->group_start[p + 1] - g->group_start[p]; j++) {
        int i = g->group_start[p] + j;
        g->reward[i] = r[j];
        g->clen[i] = len[j];
        g->plen[i] = plen;
        g->prompt[i] = prompt;
        for (int t = 0; t < len[j]; t++) g->comp[(size_t)i * g->max_new + t] = 3 + q + t;
    }
}

/* DAPO's filter, by hand: a batch of 4 groups of 3, groups 1 and 2 all equal; round 1 brings
   an all-equal group (dropped) and one with signal (replaces group 1, which is dropped); round 2
   brings one with signal (a format reward's 0.1: not all equal) into group 2. The auxiliary
   tokens are exactly the three dropped groups' completion tokens, their positions
   Σ (prompt + completion − 1), the kept batch has no all-equal group, and the replaced groups
   hold the new groups' prompt, rewards and tokens. Then a cap that leaves one all-equal group. */
static void test_dynamic_filter(void) {
    GroupBatch g, spare;
    build_group_batch(&g, 4, 3, 6, 0, 16);
    build_group_batch(&spare, 4, 3, 6, 0, 16);
    const float r_sig[3] = {1, 0, 0}, r_zero[3] = {0, 0, 0}, r_one[3] = {1, 1, 1}, r_sig2[3] = {0, 1, 0};
    const float r_new[3] = {1, 0, 1}, r_fmt[3] = {0.1f, 0, 0};
    const int l0[3] = {2, 3, 4}, l1[3] = {5, 1, 2}, l2[3] = {6, 6, 1}, l3[3] = {3, 3, 3};
    const int l4[3] = {1, 2, 1}, l5[3] = {4, 4, 5}, l6[3] = {2, 2, 6};
    hand_group(&g, 0, r_sig, l0, 10, 5);
    hand_group(&g, 1, r_zero, l1, 11, 5);   // all equal: slot 1
    hand_group(&g, 2, r_one, l2, 12, 4);    // all equal: slot 2
    hand_group(&g, 3, r_sig2, l3, 13, 5);
    int nfree = 2;   // groups 1 and 2
    SelectStats st = {0};
    spare_first(&spare, 2);
    hand_group(&spare, 0, r_one, l4, 20, 3);   // all equal: dropped
    hand_group(&spare, 1, r_new, l5, 21, 6);   // signal: into slot 1
    nfree -= dynamic_merge(&g, &spare, &st);
    int ok1 = nfree == 1 && group_rewards_equal(&g, 2) && st.groups_dropped == 2 && g.prompt_idx[1] == 21;
    spare_first(&spare, 1);
    hand_group(&spare, 0, r_fmt, l6, 22, 2);   // signal: into slot 2
    nfree -= dynamic_merge(&g, &spare, &st);
    long aux = (1 + 2 + 1) + (5 + 1 + 2) + (6 + 6 + 1);             // spare's first, g's groups 1 and 2
    long positions = (3 * 3 + 4 - 3) + (3 * 5 + 8 - 3) + (3 * 4 + 13 - 3);
    int same = g.prompt_idx[1] == 21 && g.prompt_idx[2] == 22;
    for (int j = 0; j < 3; j++) {
        same &= g.reward[3 + j] == r_new[j] && g.clen[3 + j] == l5[j] && g.plen[3 + j] == 6;
        same &= g.reward[6 + j] == r_fmt[j] && g.clen[6 + j] == l6[j] && g.plen[6 + j] == 2;
        for (int t = 0; t < l5[j]; t++) same &= g.comp[(size_t)(3 + j) * 6 + t] == 21 + 3 + t;
        for (int t = 0; t < l6[j]; t++) same &= g.comp[(size_t)(6 + j) * 6 + t] == 22 + 3 + t;
    }
    same &= g.prompt_idx[0] == 10 && g.prompt_idx[3] == 13 && g.clen[0] == 2 && g.clen[11] == 3;
    check(ok1 && nfree == 0 && batch_stats(&g).all_equal == 0 && st.gen_aux == aux &&
          st.aux_positions == positions && st.groups_dropped == 3 && same,
          "select: DAPO filter: aux tokens = the dropped groups' tokens, kept batch all with signal",
          "aux %ld (hand %ld), positions %ld (hand %ld), %d dropped", st.gen_aux, aux, st.aux_positions,
          positions, st.groups_dropped);
    // the cap: a round whose every group is all equal leaves the slots as they were
    hand_group(&g, 1, r_zero, l1, 11, 5);
    nfree = 1;   // group 1
    SelectStats capped = {0};
    spare_first(&spare, 1);
    hand_group(&spare, 0, r_zero, l4, 23, 3);
    nfree -= dynamic_merge(&g, &spare, &capped);
    check(nfree == 1 && g.prompt_idx[1] == 11 && batch_stats(&g).all_equal * g.num_groups == 1 && capped.gen_aux == 4 &&
          capped.groups_dropped == 1,
          "select: DAPO filter: an all-equal refill is dropped, the batch keeps its all-equal group",
          "aux %ld", capped.gen_aux);
    free_group_batch(&g);
    free_group_batch(&spare);
}

/* Spearman's ρ with average ranks: a hand pair with a tie (x = 1 2 2 3, y = 1 3 2 4: ranks
   1 2.5 2.5 4 and 1 3 2 4, ρ = 4.5 / sqrt(4.5·5) = 3/sqrt(10)); without ties against
   1 − 6Σd²/(n(n² − 1)); with many ties against a direct computation (rank = #smaller +
   (#equal + 1)/2, then Pearson in long double); NaN for a constant side and for n < 2. */
static void test_spearman(void) {
    const double x[4] = {1, 2, 2, 3}, y[4] = {1, 3, 2, 4};
    double rho = spearman(x, y, 4);
    check(fabs(rho - 3.0 / sqrt(10.0)) < 1e-15, "select: Spearman with a tie, by hand (3/sqrt(10))", "%.17g",
          rho);
    Rng rng;
    rng_seed(&rng, 5, 5);
    enum { N = 200 };
    double a[N], b[N];
    // no ties: a permutation against another
    for (int i = 0; i < N; i++) a[i] = b[i] = i;
    for (int i = N - 1; i > 0; i--) {
        int j = rng_int(&rng, i + 1);
        double t = b[i];
        b[i] = b[j];
        b[j] = t;
    }
    double d2 = 0.0;
    for (int i = 0; i < N; i++) d2 += (a[i] - b[i]) * (a[i] - b[i]);
    double classic = 1.0 - 6.0 * d2 / ((double)N * ((double)N * N - 1));
    double got = spearman(a, b, N);
    check(fabs(got - classic) < 1e-12, "select: Spearman without ties = 1 − 6Σd²/(n(n²−1))", "%.12f vs %.12f",
          got, classic);
    // ties: values from 5 levels (x) and 3 levels correlated with it (y)
    for (int i = 0; i < N; i++) {
        a[i] = rng_int(&rng, 5) * 0.25;
        b[i] = a[i] > 0.5 ? (rng_int(&rng, 4) > 0) : rng_int(&rng, 3) * 0.5;
    }
    long double ra[N], rb[N], ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < N; i++) {
        int less_a = 0, eq_a = 0, less_b = 0, eq_b = 0;
        for (int j = 0; j < N; j++) {
            less_a += a[j] < a[i];
            eq_a += a[j] == a[i];
            less_b += b[j] < b[i];
            eq_b += b[j] == b[i];
        }
        ra[i] = less_a + (eq_a + 1) / 2.0L;
        rb[i] = less_b + (eq_b + 1) / 2.0L;
        ma += ra[i] / N;
        mb += rb[i] / N;
    }
    for (int i = 0; i < N; i++) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    double direct = (double)(sab / sqrtl(saa * sbb));
    got = spearman(a, b, N);
    check(fabs(got - direct) < 1e-12 && direct > 0.3,
          "select: Spearman with many ties = ranks by counting, Pearson", "%.12f vs %.12f", got, direct);
    const double c[3] = {0.5, 0.5, 0.5};
    check(isnan(spearman(x, c, 3)) && isnan(spearman(x, y, 1)),
          "select: Spearman of a constant side, or n < 2: NaN", "");
}

/* The runs: MoPPS's --resume continues bit for bit (model.bin, which holds the posteriors and
   the history, and train.csv's rows); a checkpoint whose posteriors are reset to the prior
   resumes into another run (the state is what makes it the same); a resume with another
   --prompt-select or τ is refused; a checkpoint without posteriors or of another training set
   is refused, naming the file; dynamic sampling with a model that never succeeds hits its cap
   every step, logs it, counts every refill group as auxiliary, and trains step 1 on uniform's
   batch. Tiny random --init, 20 training prompts (tests/fixtures/val_small.txt). */
static void test_select_runs(void) {
    char init[300], common[1024], a[300], b[300];
    save_tiny_init(init, sizeof init, "select_init.bin", 31);
    static char cmd[3072], out[16384];
    tiny_train_args(common, sizeof common, init);
    const char *data = "--train-data tests/fixtures/val_small.txt";
    snprintf(cmd, sizeof cmd, "%s train %s %s --prompt-select mopps --save-every 2 --run-dir %s/mopps_a",
             grpo_bin(), common, data, TMPDIR_);
    int code = run_binary(cmd, out, sizeof out);
    int spearman_line = strstr(out, "# mopps: predicted p vs realised success over the run's 8 groups") != 0;
    // option_in_force: mopps's options in its banner, dynamic's not (the run record: below)
    const char *config = whole_line_with(out, "# config:");
    check(code == 0 && strstr(config, " prompt-select=mopps select-target=0.5 select-candidates=0 "
                                      "select-decay=1 ") && !strstr(config, "dynamic-max-rounds"),
          "select: a mopps run's banner names --prompt-select and MoPPS's options, not dynamic's", "%.80s",
          strstr(config, "prompt-select") ? strstr(config, "prompt-select") : config);
    snprintf(cmd, sizeof cmd, "%s train %s %s --prompt-select mopps --resume %s/mopps_a/ckpt.bin "
             "--run-dir %s/mopps_b", grpo_bin(), common, data, TMPDIR_, TMPDIR_);
    if (code == 0) code = run_binary(cmd, out, sizeof out);
    snprintf(a, sizeof a, "%s/mopps_a/model.bin", TMPDIR_);
    snprintf(b, sizeof b, "%s/mopps_b/model.bin", TMPDIR_);
    int same = code == 0 && files_equal(a, b);
    double gen_a = code == 0 ? csv_field(tmp_path("/tmp/grpo_test/mopps_a/train.csv"), 4, 12) : -1;
    double gen_b = code == 0 ? csv_field(tmp_path("/tmp/grpo_test/mopps_b/train.csv"), 2, 12) : -2;
    double pred_a = code == 0 ? csv_field(tmp_path("/tmp/grpo_test/mopps_a/train.csv"), 4, 24) : -1;
    double pred_b = code == 0 ? csv_field(tmp_path("/tmp/grpo_test/mopps_b/train.csv"), 2, 24) : -2;
    snprintf(a, sizeof a, "%s/mopps_a/prompt_select.txt", TMPDIR_);
    snprintf(b, sizeof b, "%s/mopps_b/prompt_select.txt", TMPDIR_);
    check(same && gen_a == gen_b && pred_a == pred_b && pred_a > 0 && spearman_line && files_equal(a, b),
          "select: MoPPS --resume == 4 steps straight (model.bin with the posteriors, log, Spearman)",
          "exit %d; step 4 gen_tokens %.0f / %.0f, p_pred %.4f / %.4f", code, gen_a, gen_b, pred_a, pred_b);
    // the same checkpoint with every posterior back at the prior: another run (the state matters)
    GPT m;
    TrainState st = {0};
    st.kind = 2;
    snprintf(a, sizeof a, "%s/mopps_a/ckpt.bin", TMPDIR_);
    load_checkpoint(a, &m, 1, &st);
    const char *recorded = "\nprompt-select=mopps\nselect-target=0.5\nselect-candidates=0\nselect-decay=1\n";
    check(strstr(st.options, recorded) && !strstr(st.options, "dynamic-max-rounds"),
          "select: ... and its run record holds them (the values a resume must give)", "%.70s",
          strstr(st.options, "prompt-select") ? strstr(st.options, "prompt-select") : st.options);
    uint64_t bytes = 0;
    double *sec = (double *)ckpt_section(&st, "mopps", &bytes);
    int n = sec ? (int)sec[0] : 0;
    int learned = 0;
    for (int i = 0; i < 2 * n; i++) {
        learned += sec[2 + i] != 1.0;
        sec[2 + i] = 1.0;
    }
    snprintf(b, sizeof b, "%s/mopps_prior.bin", TMPDIR_);
    save_checkpoint(b, &m, &st, st.step, test_last_good);
    // the same again without its section: as a build before MoPPS would have written it
    char none[300];
    snprintf(none, sizeof none, "%s/mopps_none.bin", TMPDIR_);
    st.num_sections = 0;
    save_checkpoint(none, &m, &st, st.step, test_last_good);
    free_gpt(&m);
    snprintf(cmd, sizeof cmd, "%s train %s %s --prompt-select mopps --resume %s --run-dir %s/mopps_c",
             grpo_bin(), common, data, b, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    snprintf(a, sizeof a, "%s/mopps_a/model.bin", TMPDIR_);
    snprintf(b, sizeof b, "%s/mopps_c/model.bin", TMPDIR_);
    check(n == 20 && learned > 0 && code == 0 && !files_equal(a, b),
          "select: ... and resumed with the posteriors reset to the prior, it is another run",
          "%d of %d values had moved from 1; exit %d", learned, 2 * n, code);
    snprintf(cmd, sizeof cmd, "%s train %s %s --prompt-select mopps --resume %s --run-dir %s/mopps_d",
             grpo_bin(), common, data, none, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    const char *err = line_with(out, "error");
    check(code == 1 && strstr(err, "mopps_none.bin") && strstr(err, "MoPPS state section is missing"),
          "select: a MoPPS resume from a checkpoint without posteriors is refused, naming the file",
          "exit %d: %s", code, err);
    // another --prompt-select, another τ: refused (the run record); another training set: refused
    const char *bad[2] = {"--prompt-select uniform", "--prompt-select mopps --select-target 0.25"};
    const char *want[2] = {"--prompt-select uniform: '", "--select-target 0.25: '"};
    const char *then[2] = {"with --prompt-select mopps", "with --select-target 0.5"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s train %s %s %s --resume %s/mopps_a/ckpt.bin --run-dir %s/mopps_e",
                 grpo_bin(), common, data, bad[i], TMPDIR_, TMPDIR_);
        code = run_binary(cmd, out, sizeof out);
        err = line_with(out, "usage error");
        char name[160];
        snprintf(name, sizeof name, "select: --resume with %s is refused, naming both values", bad[i]);
        check(code == 2 && strstr(err, want[i]) && strstr(err, then[i]), name, "exit %d: %s", code, err);
    }
    char other[300];
    snprintf(other, sizeof other, "%s/select_train19.txt", TMPDIR_);
    size_t len;
    char *text = (char *)read_all("tests/fixtures/val_small.txt", &len);
    char *last = text + len - 1;
    while (last > text && last[-1] != '\n') last--;   // drop the last line: 19 prompts
    write_bytes(other, text, (size_t)(last - text));
    free(text);
    snprintf(cmd, sizeof cmd, "%s train %s --train-data %s --prompt-select mopps --resume "
             "%s/mopps_a/ckpt.bin --run-dir %s/mopps_f", grpo_bin(), common, other, TMPDIR_, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    err = line_with(out, "error");
    // the run record's hash of --train-data refuses it first (before MoPPS's own size check)
    check(code == 2 && strstr(err, "--train-data") && strstr(err, "its bytes") && strstr(err, "ckpt.bin"),
          "select: a MoPPS resume on another training set is refused (its hash)", "exit %d: %s", code, err);
    // dynamic sampling with a model that never succeeds: every step hits the cap
    snprintf(cmd, sizeof cmd, "%s train %s %s --prompt-select dynamic --dynamic-max-rounds 3 "
             "--run-dir %s/dyn", grpo_bin(), common, data, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    int noted = strstr(out, "note: step 1: dynamic sampling left 2 of 2 groups with all-equal rewards after "
                            "3 refill rounds") != NULL;
    config = whole_line_with(out, "# config:");
    int dyn_banner = strstr(config, " prompt-select=dynamic dynamic-max-rounds=3 ") &&
                     !strstr(config, "select-");
    snprintf(cmd, sizeof cmd, "%s train %s %s --save-every 2 --run-dir %s/uni", grpo_bin(), common, data,
             TMPDIR_);
    if (code == 0) code = run_binary(cmd, out, sizeof out);
    int ok = code == 0 && noted;
    double spent = 0.0;
    for (int row = 1; row <= 4 && ok; row++) {
        const char *dyn = tmp_path("/tmp/grpo_test/dyn/train.csv");
        double traj = csv_field(dyn, row, 19), aux = csv_field(dyn, row, 20);
        double budget = csv_field(dyn, row, 23);
        spent += traj + aux;
        // 2 groups + 3 rounds x 2 groups sampled, all equal; at least 1 token per completion (x 4)
        ok &= csv_field(dyn, row, 26) == 8 && csv_field(dyn, row, 27) == 1 && csv_field(dyn, row, 28) == 1 &&
              csv_field(dyn, row, 2) == 1 && aux >= 6 * 4 && budget == spent && csv_field(dyn, row, 24) == -1;
    }
    const char *dyn = tmp_path("/tmp/grpo_test/dyn/train.csv");
    const char *uni = tmp_path("/tmp/grpo_test/uni/train.csv");
    ok &= csv_field(dyn, 1, 19) == csv_field(uni, 1, 19) && csv_field(dyn, 1, 3) == csv_field(uni, 1, 3) &&
          csv_field(uni, 1, 20) == 0;
    check(ok, "select: dynamic at its cap: logged, 3 x 2 refill groups auxiliary, step 1 = uniform's batch",
          "exit %d, noted %d; step 1 aux %.0f tokens", code, noted, csv_field(dyn, 1, 20));
    check(dyn_banner, "select: a dynamic run's banner names --prompt-select and its round cap, not MoPPS's",
          "%.50s", strstr(config, "prompt-select") ? strstr(config, "prompt-select") : config);
    // uniform, the default: no selection option in the banner or the run record, and train.csv's
    // header and rows as before prompt selection (24 fields), then entropy, mean_lambda_mixed, lambda_share
    const char *uni_config = whole_line_with(out, "# config:");
    int uni_banner = strstr(uni_config, " format-reward=0 ") && !strstr(uni_config, "prompt-select") &&
                     !strstr(uni_config, "select-") && !strstr(uni_config, "dynamic-max-rounds");
    TrainState ust = {0};
    ust.kind = 2;
    snprintf(a, sizeof a, "%s/uni/ckpt.bin", TMPDIR_);
    load_checkpoint(a, &m, 1, &ust);
    free_gpt(&m);
    int uni_record = strstr(ust.options, "\nformat-reward=0\n") && !strstr(ust.options, "select") &&
                     !strstr(ust.options, "dynamic");   // the record holds no paths
    size_t csv_len;
    char *csv = (char *)read_all(uni, &csv_len);
    const char *header = "step,mean_reward,frac_all_equal,mean_len,mean_lambda,nontrivial,path_depth,"
                         "intermediate,loss,kl,clip_frac,grad_norm,gen_tokens,t_sample,t_score,t_tree,"
                         "t_update,tok_per_s,val_acc,gen_tokens_traj,gen_tokens_aux,trained_tokens,flops,"
                         "budget_spent,entropy,mean_lambda_mixed,lambda_share\n";
    int uni_csv = csv_len > strlen(header) && !strncmp(csv, header, strlen(header));
    const char *row1 = csv + strlen(header);
    int commas = 0;
    for (const char *c = row1; uni_csv && *c && *c != '\n'; c++) commas += *c == ',';
    uni_csv &= commas == 26;
    free(csv);
    check(uni_banner && uni_record && uni_csv,
          "select: a uniform run: no selection option in its banner or run record, train.csv as before",
          "banner %d, record %d, csv %d (%d fields)", uni_banner, uni_record, uni_csv, commas + 1);
    // ... and a uniform checkpoint resumed with another selector is refused, though its record
    // leaves --prompt-select out (check_resume_options: out of force there, in force now)
    snprintf(cmd, sizeof cmd, "%s train %s %s --prompt-select dynamic --resume %s/uni/ckpt.bin "
             "--run-dir %s/uni_dyn", grpo_bin(), common, data, TMPDIR_, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    err = line_with(out, "usage error");
    check(code == 2 && strstr(err, "--prompt-select dynamic: '") &&
          strstr(err, "with --prompt-select uniform"),
          "select: a uniform run's --resume with --prompt-select dynamic is refused, naming both",
          "exit %d: %s", code, err);
}

/* One GRPO step of train_loop in this process (what cmd_train sets up, without its files but
   train.csv): --prompt-select dynamic, the objective given, P = 2 groups of k = 4, 20 new tokens,
   --format-reward 0.1 (a well-formed wrong answer's reward: groups with signal from a small SFT
   model), K = 2 continuations (MC-PRM), the critic from the --init trunk (ppo), on
   tests/fixtures/val_small.txt. What the step leaves (the final batch, MC-PRM's states and
   advantages, the critic's V_old and advantages, the CSV row) stays for the checks. */
typedef struct {
    GPT policy;
    KVCache kv;
    GroupBatch g;
    Dataset train;
    PromptSelector select;
    MCPRM mc;
    TaskProblems task;
    Critic critic;
    TrainState st;
    Options o;
    TrainRun run;
    Budget budget;
    CsvLog csv;
    char csv_path[400];
} SelectStepRun;

static void select_step_run(SelectStepRun *r, const char *init, int objective, const char *dir) {
    memset(r, 0, sizeof *r);
    Options *o = &r->o;
    default_options(o);
    train_defaults(o);
    o->prompts_per_step = 2;
    o->group_size = 4;
    o->max_new_tokens = 20;
    o->obj.objective = objective;
    o->obj.max_new_tokens = o->max_new_tokens;
    o->format_reward = 0.1f;
    o->mc_k = 2;
    o->prompt_select = SELECT_DYNAMIC;
    o->dynamic_max_rounds = DYNAMIC_MAX_ROUNDS;   // room to refill whatever the tiny SFT model solves
    o->steps = 1;
    o->eval_every = 0;
    int P = o->prompts_per_step, k = o->group_size, N = P * k, T = o->max_new_tokens;
    load_checkpoint(init, &r->policy, N, NULL);
    int maxT = r->policy.config.max_seq_len;
    build_kvcache(&r->kv, &r->policy.config, N);
    build_group_batch(&r->g, P, k, T, N, maxT);
    load_dataset(&r->train, "tests/fixtures/val_small.txt", maxT, 0, &TASKS[TASK_COUNTDOWN]);
    build_prompt_selector(&r->select, o->prompt_select, o->select_target, 0, o->select_decay,
                          o->dynamic_max_rounds, r->train.n, P, k, T, maxT);
    TrainRun *run = &r->run;
    if (objective == OBJ_MC_PRM) {
        r->task = (TaskProblems){&r->train, r->g.prompt_idx, NULL, 0, 0, o->format_reward, NULL};
        build_mcprm(&r->mc, &r->policy.config, N, T, o->mc_k, o->mc_whiten, MC_SEGMENT_COMMA,
                    task_outcome_reward, &r->task, NULL);
        run->mc = &r->mc;
    }
    if (objective == OBJ_PPO) {
        build_critic(&r->critic, &r->policy, N, N, T, critic_config_from_options(o, 1), (uint64_t)o->seed);
        run->critic = &r->critic;
    }
    r->st.kind = 2;
    rng_seed(&r->st.rng, o->seed, 2);
    make_dir(dir);
    char header[1024];
    train_csv_header(header, sizeof header, o);
    r->csv = open_csv(dir, "train.csv", header, 1, 0, 13, NULL);
    snprintf(r->csv_path, sizeof r->csv_path, "%s/train.csv", dir);
    run->policy = &r->policy;
    run->kv = &r->kv;
    run->batch = &r->g;
    run->train = run->val = &r->train;
    run->select = &r->select;
    run->cfg = grpo_config_from_options(o);
    run->opt = adamw_from_options(o, 1);
    run->state = &r->st;
    run->steps = 1;
    run->format_reward = o->format_reward;
    run->csv = &r->csv;
    run->budget = &r->budget;
    start_budget(&r->budget, o, run);
    fflush(stdout);
    int saved = dup(1);   // the step's log line goes to the void
    int null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, 1);
    train_loop(run);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    close(null_fd);
    close_csv(&r->csv);
}

static void free_select_step_run(SelectStepRun *r) {
    if (r->run.mc) free_mcprm(&r->mc);
    if (r->run.critic) free_critic(&r->critic);
    free_prompt_selector(&r->select);
    free_group_batch(&r->g);
    free_kvcache(&r->kv);
    free_dataset(&r->train);
    free_gpt(&r->policy);
}

/* Dynamic sampling with MC-PRM and with PPO (train_loop's order: the refill rounds, then
   MC-PRM's phase or the critic's V_old and GAE on the final batch, and the critic's update on
   it). From a 400-step SFT model, one step each with --objective grpo, mc-prm and ppo, same
   seed: the refill replaced groups (more groups sampled than trained, none all-equal left), the
   three steps trained the same final batch (MC-PRM and the critic draw nothing from the run's
   RNG); MC-PRM's advantages are, bit for bit, those recomputed on that final batch with the
   step's π_old (the SFT model; mc_prm_advantages on fresh buffers), and the critic's V_old and
   A_t those of a fresh critic from the same trunk and seed (ppo_advantages). The budget: the
   MC-PRM step's gen_tokens_aux is the GRPO step's (the dropped groups) plus the recomputed
   continuations' tokens, its FLOPs the GRPO step's plus F·R_mc; the PPO step's aux is the GRPO
   step's, its FLOPs GRPO's plus F_critic·(R + 3·μ·R) (notes/compare.md's formula: the terms add up). */
static void test_select_dynamic_objectives(void) {
    char args[1024], log[300], sft[300], dir_a[300], dir_b[300];
    snprintf(log, sizeof log, "%s/select_sft.log", TMPDIR_);
    snprintf(args, sizeof args, "--threads 1 --layers 2 --heads 2 --channels 32 --context 48 --batch-size 16 "
             "--steps 400 --warmup 10 --lr 1e-2 --eval-every 0 --val-data tests/fixtures/val_small.txt "
             "--run-dir %s/select_sft", TMPDIR_);
    int rc = run_cmd_quiet(cmd_sft, args, log);
    snprintf(sft, sizeof sft, "%s/select_sft/model.bin", TMPDIR_);
    snprintf(dir_a, sizeof dir_a, "%s/select_dyn_grpo", TMPDIR_);
    snprintf(dir_b, sizeof dir_b, "%s/select_dyn_mc", TMPDIR_);
    static SelectStepRun a, b;
    select_step_run(&a, sft, OBJ_GRPO, dir_a);
    select_step_run(&b, sft, OBJ_MC_PRM, dir_b);
    // the GRPO row: the 24 columns, then p_pred (24), ..., groups_sampled (26), frac_all_equal_sampled
    // (27); the MC-PRM row has mc_states, aux_share, t_mc (24..26) before them
    double sampled = csv_field(a.csv_path, 1, 26), eq_sampled = csv_field(a.csv_path, 1, 27);
    int refilled = rc == 0 && sampled > 2 && csv_field(a.csv_path, 1, 2) == 0 && eq_sampled > 0 &&
                   csv_field(b.csv_path, 1, 29) == sampled;
    int same_batch = a.g.N == b.g.N;
    for (int p = 0; p < 2 && same_batch; p++) same_batch &= a.g.prompt_idx[p] == b.g.prompt_idx[p];
    for (int i = 0; i < a.g.N && same_batch; i++) {
        same_batch &= a.g.clen[i] == b.g.clen[i] && a.g.reward[i] == b.g.reward[i];
        same_batch &= !memcmp(a.g.comp_row[i], b.g.comp_row[i], (size_t)a.g.clen[i] * sizeof(int));
    }
    check(refilled && same_batch,
          "select: dynamic + mc-prm: the refill replaced groups; GRPO, MC-PRM trained the same final batch",
          "sft exit %d; %.0f groups sampled for 2, %.2f of them all-equal", rc, sampled, eq_sampled);
    // MC-PRM's phase again, on the final batch, with π_old (the SFT model) and fresh buffers
    GPT old;
    load_checkpoint(sft, &old, b.g.N, NULL);
    MCPRM mc;
    build_mcprm(&mc, &old.config, b.g.N, 20, 2, 1, MC_SEGMENT_COMMA, task_outcome_reward, &b.task, NULL);
    MCStats spent = mc_prm_advantages(&mc, &old, &b.g, &b.run.cfg, 0);   // into mc.adv
    int same_adv = mc.num_states == b.mc.num_states;
    for (int i = 0; i < b.g.N && same_adv; i++)
        same_adv &= !memcmp(b.mc.adv + (size_t)i * 20, mc.adv + (size_t)i * 20,
                            (size_t)b.g.clen[i] * sizeof(float));
    check(same_adv && spent.tokens > 0 && csv_field(b.csv_path, 1, 24) == mc.num_states,
          "select: dynamic + mc-prm: MC-PRM's advantages are the final batch's, bit for bit",
          "%d states (%d in the step), %ld continuation tokens", mc.num_states, b.mc.num_states,
          spent.tokens);
    double aux_a = csv_field(a.csv_path, 1, 20), aux_b = csv_field(b.csv_path, 1, 20);
    double flops_a = csv_field(a.csv_path, 1, 22), flops_b = csv_field(b.csv_path, 1, 22);
    double F = model_flops_per_token(&old.config);
    double flops_mc = F * spent.positions;   // CSV flops are printed %.0f: within 1 of the sum
    check(aux_a > 0 && aux_b == aux_a + spent.tokens && fabs(flops_b - (flops_a + flops_mc)) <= 1.0 &&
          csv_field(b.csv_path, 1, 23) == csv_field(b.csv_path, 1, 19) + aux_b,
          "select: dynamic + mc-prm: gen_tokens_aux and FLOPs = the dropped groups' + the continuations'",
          "aux %.0f = %.0f + %ld; flops %.0f vs %.0f + F x %ld", aux_b, aux_a, spent.tokens, flops_b, flops_a,
          spent.positions);
    free_mcprm(&mc);
    // ppo: the critic's V_old and GAE's advantages are the final batch's (a fresh critic from the
    // SFT trunk, the same seed, on that batch: bit for bit); its FLOPs are GRPO's plus
    // F_critic·(R + 3·μ·R) and it generates nothing (the dropped groups' tokens only)
    static SelectStepRun c;
    char dir_c[300];
    snprintf(dir_c, sizeof dir_c, "%s/select_dyn_ppo", TMPDIR_);
    select_step_run(&c, sft, OBJ_PPO, dir_c);
    int same_ppo_batch = c.g.N == a.g.N && c.g.prompt_idx[0] == a.g.prompt_idx[0] &&
                         c.g.prompt_idx[1] == a.g.prompt_idx[1];
    for (int i = 0; i < a.g.N && same_ppo_batch; i++)
        same_ppo_batch &= c.g.clen[i] == a.g.clen[i] &&
                          !memcmp(a.g.comp_row[i], c.g.comp_row[i], (size_t)a.g.clen[i] * sizeof(int));
    Critic fresh;
    build_critic(&fresh, &old, c.g.N, c.g.N, 20, c.critic.cfg, (uint64_t)c.o.seed);
    CriticStats fresh_stats;
    ppo_advantages(&fresh, &c.g, &c.run.cfg, &fresh_stats);
    int same_values = same_ppo_batch;
    for (int i = 0; i < c.g.N && same_values; i++) {
        size_t row = (size_t)i * 20, n = (size_t)c.g.clen[i] * sizeof(float);
        same_values &= !memcmp(c.critic.value_old + row, fresh.value_old + row, n) &&
                       !memcmp(c.critic.adv + row, fresh.adv + row, n);
    }
    long R = 0;
    for (int i = 0; i < c.g.N; i++) R += c.g.plen[i] + c.g.clen[i] - 1;
    double flops_c = csv_field(c.csv_path, 1, 22), aux_c = csv_field(c.csv_path, 1, 20);
    double flops_critic = critic_flops_per_token(&old.config) * 4.0 * R;   // μ = 1: (R + 3·μ·R)
    check(same_values && aux_c == aux_a && fabs(flops_c - (flops_a + flops_critic)) <= 1.0 &&
          csv_field(c.csv_path, 1, 32) == sampled,
          "select: dynamic + ppo: the critic's V_old, A_t are the final batch's; FLOPs GRPO's + F_critic·4R",
          "batch %d; aux %.0f vs %.0f; flops %.0f vs %.0f + %.0f", same_ppo_batch, aux_c, aux_a, flops_c,
          flops_a, flops_critic);
    free_critic(&fresh);
    free_gpt(&old);
    free_select_step_run(&a);
    free_select_step_run(&b);
    free_select_step_run(&c);
}

/* Usage errors of the selection options (train, before anything is loaded, and once the
   training set is known), and compare: a method's --prompt-select passes through to its runs'
   command line and configuration, and a bad value is refused before anything runs. */
static void test_select_usage(void) {
    static CmdCall calls[] = {
        {cmd_train, "--prompt-select mopps --select-target 1.5"},
        {cmd_train, "--prompt-select best"},
        {cmd_train, "--prompt-select mopps --select-candidates 7"},
        {cmd_train, "--prompt-select mopps --select-decay 0"},
        {cmd_train, "--prompt-select mopps --select-decay 1.5"},
        {cmd_train, "--select-target 0.3"},
        {cmd_train, "--prompt-select dynamic --select-candidates 64"},
        {cmd_train, "--prompt-select mopps --dynamic-max-rounds 4"},
        {cmd_train, "--prompt-select dynamic --dynamic-max-rounds 16"},
    };
    const char *needles[] = {"--select-target: '1.5' is out of range [0, 1]",
                             "--prompt-select: 'best'",
                             "--select-candidates 7: MoPPS keeps --prompts-per-step 8",
                             "--select-decay 0: ",
                             "--select-decay: '1.5' is out of range",
                             "--select-target 0.3 applies to --prompt-select mopps only, and this run has "
                             "--prompt-select uniform",
                             "--select-candidates 64 applies to --prompt-select mopps only, and this run has "
                             "--prompt-select dynamic",
                             "--dynamic-max-rounds 4 applies to --prompt-select dynamic only, and this run "
                             "has --prompt-select mopps",
                             "--dynamic-max-rounds: '16' is out of range [1, 15]"};
    const char *names[] = {"select: usage: τ outside [0, 1]", "select: usage: an unknown selector",
                           "select: usage: M < prompts-per-step", "select: usage: d = 0 (must be in (0, 1])",
                           "select: usage: d > 1", "select: usage: τ without mopps",
                           "select: usage: M with dynamic", "select: usage: the round cap without dynamic",
                           "select: usage: more than 15 refill rounds"};
    for (int i = 0; i < (int)(sizeof calls / sizeof calls[0]); i++)
        expect_exit(names[i], cmd_call_fn, &calls[i], 2, needles[i]);
    char init[300];
    save_tiny_init(init, sizeof init, "select_usage_init.bin", 32);
    static char args[1024];
    snprintf(args, sizeof args, "--init %s --train-data tests/fixtures/val_small.txt --prompt-select mopps "
             "--select-candidates 21 --prompts-per-step 2 --max-new-tokens 8 "
             "--run-dir /tmp/grpo_test/select_u", init);
    static CmdCall big = {cmd_train, args};
    expect_exit("select: usage: M larger than the training set", cmd_call_fn, &big, 2,
                "--select-candidates 21: --train-data tests/fixtures/val_small.txt holds 20 prompts");
    // compare: the method's options reach its runs, checked before the first run
    static Method ms[CMP_MAX_METHODS];
    char err[512] = "";
    const char *spec = "grpo,grpo+mopps:--objective=grpo:--prompt-select=mopps:--select-decay=0.9";
    int n = parse_methods(spec, ms, CMP_MAX_METHODS, err, sizeof err);
    Options o;
    default_options(&o);
    train_defaults(&o);
    ArgList al;
    method_args(&al, &o, &ms[1], 1, "/tmp/x", "/tmp/sft.bin");
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    int threads = num_threads();
    Options resolved;
    resolved_config(mem, &al, 1, NULL, &resolved);   // parses --threads 1: this process's count is put back
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    (void)threads;   // the build without OpenMP has no thread count to put back
    fclose(mem);
    const char *dir = "grpo+mopps+objective=grpo+prompt-select=mopps+select-decay=0.9";
    check(n == 2 && strstr(text, " prompt-select=mopps ") && strstr(text, " select-decay=0.9 ") &&
          strstr(text, " objective=grpo ") && !strcmp(ms[1].dir, dir),
          "select: compare passes a method's --prompt-select to its runs (resolved config)", "%d methods %s",
          n, err);
    free(text);
    static char bad_method[512];
    snprintf(bad_method, sizeof bad_method, "%s compare --quick --study %s/select_study --methods "
             "grpo,m:--prompt-select=mopps:--select-decay=0", grpo_bin(), TMPDIR_);
    static char cout[8192];
    int code = run_binary(bad_method, cout, sizeof cout);
    struct stat sb;
    char runs[400];
    snprintf(runs, sizeof runs, "%s/select_study/sft", TMPDIR_);
    check(code == 2 && strstr(cout, "--select-decay 0: the posterior decay must be in (0, 1]") &&
          stat(runs, &sb) != 0,
          "select: compare refuses a method's bad --select-decay before anything runs", "exit %d: %s", code,
          line_with(cout, "usage error"));
}

// ----------------------------------------------------------------------------

#include "test_html.c"   // the --html page of B(G) (group html)
#include "test_claims.c"   // the docs' study numbers against their records (group claims)

// the vector instructions and FMA this build may use (float32 results depend on them)
static const char *build_isa(void) {
#if defined(__AVX512F__)
    return "AVX-512, FMA";
#elif defined(__AVX2__) && defined(__FMA__)
    return "AVX2, FMA";
#elif defined(__AVX__)
    return "AVX, no FMA";
#elif defined(__SSE2__)
    return "SSE2, no FMA";
#elif defined(__ARM_FEATURE_FMA)
    return "FMA";
#else
    return "scalar";
#endif
}

// ----------------------------------------------------------------------------
// The second task, chain-sum, and the task interface (grpo.c "Task and verifier: chain-sum")

/* notes/failures.py on hand-classified lines: one of each class, a leading zero (malformed, as the
   verifier reads it), a right answer cut at the budget (no-eos: the verifier accepts it), plus a
   line whose reward column says 1 for a wrong answer (the script must count it as a disagreement); the false last step
   `5+2=9` comes after steps that are right and leave {2, 5}, from which 9 cannot be made, while
   {2, 3, 8} after step 1 still can (8+3-2): a dead end after step 2. Needs python3 (not for
   make test: without it the check is not run, and says so). */
static void test_failures_script(void) {
    static char cmd[1024], out[8192];
    if (run_binary("python3 -c 'import sys; sys.exit(0)'", out, sizeof out) != 0) {
        printf("note  notes/failures.py not checked: no python3\n");
        return;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/failures.tsv", TMPDIR_);
    FILE *f = fopen(path, "w");
    fputs("2 2 6 3>9:\t2+6=8,8-3=5,5+2=9\t0\teos\n"        // false last step, dead end after step 2
          "8 4 5 8>9:\t8-5=3,8-3=5,5+4=9\t1\teos\n"        // correct
          "8 4 5 8>10:\t8-5=3,8-3=5,5+4=9\t0\teos\n"       // misses the target
          "8 4 5 8>9:\t8-5=4,8-4=4,4+5=9\t0\teos\n"        // false earlier (and 5 used up)
          "8 4 5 8>9:\t8-5\t0\tno-eos\n"                   // malformed
          "2 2 6 3>9:\t2+6=8,8-3=5,5+2=9\t1\teos\n"        // a wrong reward column
          "2 2 6 3>9:\t2/2=1,1*6=06,06+3=9\t0\teos\n"      // malformed: a leading zero
          "8 4 5 8>9:\t8-5=3,8-3=5,5+4=9\t1\tno-eos\n", f); // cut at the budget, right: verified
    fclose(f);
    snprintf(cmd, sizeof cmd, "python3 notes/failures.py %s", path);
    int rc = run_binary(cmd, out, sizeof out);
    int n = -1, correct = -1, last = -1, earlier = -1, misses = -1, malformed = -1, disagree = -1;
    int problem = -1, step1 = -1, step2 = -1, later = -1, never = -1;
    const char *row = strstr(out, "failures.tsv ");
    if (row) sscanf(row, "%*s %d %d %d (%*f%%) %d (%*f%%) %d (%*f%%) %d (%*f%%) %d", &n, &correct, &last, &earlier,
                    &misses, &malformed, &disagree);
    row = row ? strstr(row + 1, "failures.tsv ") : NULL;
    if (row) sscanf(row, "%*s %d %d %d %d %d", &problem, &step1, &step2, &later, &never);
    check(rc == 0 && n == 8 && correct == 3 && last == 1 && earlier == 1 && misses == 1 && malformed == 2 &&
          disagree == 1 && problem == 0 && step1 == 0 && step2 == 1 && later == 0 && never == 0,
          "notes/failures.py: classes, dead ends and disagreements of hand-classified lines",
          "exit %d: %.600s", rc, out);
}

static void test_chain_sum_verifier(void) {
    static const struct { const char *text; int target; float expect; } cases[] = {
        {"12+7=19,19-3=16,16+25=41", 41, 1}, {"12+7=20,20-3=17,16+25=41", 41, 1},   // only the answer is read
        {"12+7=19,19-3=16,16+25=42", 41, 0}, {"41", 41, 0}, {"", 41, 0}, {"=41", 41, 1},
        {"16+25=41,", 41, 0}, {"16+25=41 ", 41, 0}, {"16+25=+41", 41, 0}, {"16+25=041", 41, 0},
        {"3-8=-5", -5, 1}, {"3-8=-5", 5, 0}, {"3-3=0", 0, 1}, {"3-3=-0", 0, 0}, {"3-3=", 0, 0},
        {"junk=7", 7, 1}, {"1+1=2=3", 3, 1}, {"1+1=2=3", 2, 0}, {"9=12345678", 12345678, 0},
        {"9=1234567", 1234567, 1}, {"9=-", 0, 0}, {"9=4-1", 3, 0}};
    int bad = 0, n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++) {
        int len = (int)strlen(cases[i].text);
        char *buf = (char *)mallocCheck(len > 0 ? len : 1);   // exact length: a read past it is a bug
        memcpy(buf, cases[i].text, len);
        float r = chain_sum_verify(NULL, 0, cases[i].target, buf, len);
        if (r != cases[i].expect) { printf("      chain-sum case '%s' (answer %d): got %g\n", cases[i].text, cases[i].target, r); bad++; }
        free(buf);
    }
    check(bad == 0, "chain-sum: verifier on hand-written cases (final answer only)", "%d cases, %d wrong", n, bad);
    static const struct { const char *text; int rc, n, target; } prompts[] = {
        {"12+7-3+25:", 0, 4, 41}, {"3-8:", 0, 2, -5}, {"0+0:", 0, 2, 0}, {"5:", -1, 0, 0}, {"12+7-3+25", -1, 0, 0},
        {"12+-7:", -1, 0, 0}, {"012+7:", -1, 0, 0}, {"1+2+3+4+5+6+7+8:", 0, 8, 36}, {"1+2+3+4+5+6+7+8+9:", -1, 0, 0},
        {"1 + 2:", -1, 0, 0}, {"1+2::", -1, 0, 0}};
    bad = 0;
    n = (int)(sizeof prompts / sizeof prompts[0]);
    for (int i = 0; i < n; i++) {
        int nums[MAX_NUMS], k = -1, target = -99;
        int rc = chain_sum_parse_prompt(prompts[i].text, (int)strlen(prompts[i].text), nums, MAX_NUMS, &k, &target);
        if (rc != prompts[i].rc || (rc == 0 && (k != prompts[i].n || target != prompts[i].target))) {
            printf("      chain-sum prompt '%s': rc %d n %d target %d\n", prompts[i].text, rc, k, target);
            bad++;
        }
    }
    check(bad == 0, "chain-sum: prompt parser cases", "%d cases, %d wrong", n, bad);
    const char *good = "3-8=-5,-5+2=-3", *wf_bad = "3-8=-5,,-5+2=-3";
    int wf1 = chain_sum_well_formed(good, (int)strlen(good)), wf2 = chain_sum_well_formed(wf_bad, (int)strlen(wf_bad));
    int toks[32], b2, nt = encode(good, (int)strlen(good), toks, &b2), nums[2] = {3, -8};
    toks[nt] = TOK_EOS;
    float r1 = task_reward(&TASKS[TASK_CHAIN_SUM], nums, 2, -3, toks, nt + 1, 0.0f);
    toks[2] = TOK_PAD;   // a special token inside the scratchpad, before the last '='
    float r2 = task_reward(&TASKS[TASK_CHAIN_SUM], nums, 2, -3, toks, nt + 1, 0.0f);
    int missing = 0;
    for (int t = 0; t < NUM_TASKS; t++)
        for (const char *c = TASKS[t].chars; *c; c++) missing += char_to_token((unsigned char)*c) < 0;
    check(wf1 && !wf2 && r1 == 1 && r2 == 0 && missing == 0,
          "chain-sum: well-formedness, reward on token ids, every task's characters in the vocabulary",
          "wf %d %d, reward %g %g, %d characters missing", wf1, wf2, r1, r2, missing);
}

// a tiny random model of task `task` (context 64), saved without optimizer state
static void save_tiny_task_init(char *path, size_t cap, const char *file, uint64_t seed, int task) {
    snprintf(path, cap, "%s/%s", TMPDIR_, file);
    GPT m;
    build_gpt(&m, (GPTConfig){64, VOCAB_SIZE, 1, 1, 8}, 1, seed);
    m.task = task;
    save_weights_only(path, &m);
    free_gpt(&m);
}

// --help after --task shows that task's defaults (data files, budget, train's lr)
static void test_help_task_defaults(void) {
    static char cmd[1024], out[65536];
    snprintf(cmd, sizeof cmd, "%s train --task chain-sum --help", grpo_bin());
    int rc = run_binary(cmd, out, sizeof out);
    int cs = strstr(out, "[data/chain_sum_t5_train.txt]") && strstr(out, "[1e-05]") && strstr(out, "[48]");
    snprintf(cmd, sizeof cmd, "%s train --help", grpo_bin());
    int rc2 = run_binary(cmd, out, sizeof out);
    int cd = strstr(out, "[data/countdown_train.txt]") && strstr(out, "[0.0001]") && strstr(out, "[26]");
    check(rc == 0 && cs && rc2 == 0 && cd, "help: train --task chain-sum --help shows chain-sum's defaults",
          "exit %d chain-sum %d, exit %d countdown %d", rc, cs, rc2, cd);
}

// sample refuses a group of one (no advantage, no tree to show), naming the option
static void test_sample_group_of_one(void) {
    static char cmd[2048], out[16384];
    char cd[300];
    save_tiny_task_init(cd, sizeof cd, "one_cd.bin", 25, TASK_COUNTDOWN);
    snprintf(cmd, sizeof cmd, "%s sample --threads 1 --model %s --group-size 1 --max-new-tokens 4 2>&1", grpo_bin(), cd);
    int code = run_binary(cmd, out, sizeof out);
    check(code == 2 && strstr(out, "--group-size 1: a group needs at least 2 completions"),
          "sample: --group-size 1 is refused, naming the option", "exit %d: %s", code, line_with(out, "group-size"));
}

// a --max-new-tokens shorter than a file's demonstrations: counted, and one note naming the file
static void test_note_cut_demonstrations(void) {
    static char cmd[4096], out[65536];
    Options o;
    default_options(&o);
    Dataset d = {0};
    d.path = "tests/fixtures/val_small.txt";
    long want[3] = {0, 0, 0}, got[3];
    int budget[3] = {4, 20, 1000};
    FILE *f = fopen(d.path, "r");   // the test's own count: characters after the TAB, + <eos>
    char line[4200];
    while (f && fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (!tab || line[0] == '#') continue;
        size_t len = strlen(tab + 1);
        while (len && (tab[len] == '\n' || tab[len] == '\r')) len--;
        for (int b = 0; b < 3; b++) want[b] += (long)len + 1 > budget[b];
    }
    if (f) fclose(f);
    for (int b = 0; b < 3; b++) { o.max_new_tokens = budget[b]; got[b] = note_cut_demonstrations(&o, &d); }
    check(got[0] == want[0] && got[1] == want[1] && got[2] == 0 && want[0] > want[1] && want[1] > 0,
          "data: demonstrations longer than --max-new-tokens are counted (4, 20, 1000 tokens)",
          "%ld %ld %ld, expected %ld %ld 0", got[0], got[1], got[2], want[0], want[1]);
    char cd[300];
    save_tiny_task_init(cd, sizeof cd, "cut_cd.bin", 24, TASK_COUNTDOWN);
    snprintf(cmd, sizeof cmd, "%s eval --threads 1 --model %s --data tests/fixtures/val_small.txt --max-new-tokens 4 "
             "--pass-k 0 2>&1", grpo_bin(), cd);
    int code = run_binary(cmd, out, sizeof out);
    int noted = strstr(out, "note: --max-new-tokens 4:") && strstr(out, "tests/fixtures/val_small.txt need more");
    snprintf(cmd, sizeof cmd, "%s eval --threads 1 --model %s --data tests/fixtures/val_small.txt --max-new-tokens 40 "
             "--pass-k 0 2>&1", grpo_bin(), cd);
    int code2 = run_binary(cmd, out, sizeof out);
    int quiet = strstr(out, "need more") == NULL;
    check(code == 0 && noted && code2 == 0 && quiet,
          "data: eval notes once that --max-new-tokens 4 cuts val_small.txt's demonstrations; 40: no note",
          "exit %d noted %d, exit %d quiet %d", code, noted, code2, quiet);
}

// train's --lr default follows the task (chain-sum: 1e-5); a given --lr and sft's default stay
static void test_task_train_lr(void) {
    unsigned char given[NUM_OPTIONS] = {0};
    Options o;
    float got[4];
    default_options(&o); train_defaults(&o); task_defaults(&o, given); got[0] = o.lr;
    default_options(&o); train_defaults(&o); o.task = TASK_CHAIN_SUM; task_defaults(&o, given); got[1] = o.lr;
    default_options(&o); sft_defaults(&o); o.task = TASK_CHAIN_SUM; task_defaults(&o, given); got[2] = o.lr;
    default_options(&o); train_defaults(&o); o.task = TASK_CHAIN_SUM;
    given[find_option("lr") - OPTIONS] = 1;   // --lr 1e-4 on the command line
    task_defaults(&o, given); got[3] = o.lr;
    check(got[0] == 1e-4f && got[1] == 1e-5f && got[2] == 2e-3f && got[3] == 1e-4f,
          "task: train's default --lr follows the task (countdown 1e-4, chain-sum 1e-5); a given --lr and sft's stay",
          "countdown %g, chain-sum %g, sft chain-sum %g, chain-sum with --lr 1e-4 %g", got[0], got[1], got[2], got[3]);
}

static void test_task_interface(void) {
    static char cmd[4096], out[65536];
    char cs[300], cd[300];
    save_tiny_task_init(cs, sizeof cs, "task_cs.bin", 21, TASK_CHAIN_SUM);
    save_tiny_task_init(cd, sizeof cd, "task_cd.bin", 22, TASK_COUNTDOWN);
    GPT m;
    load_checkpoint(cs, &m, 1, NULL);
    int recorded = m.task;
    free_gpt(&m);
    check(recorded == TASK_CHAIN_SUM, "task: the checkpoint records the model's task", "task %d", recorded);
    // a chain-sum model with countdown's data (the default task), and the other way round: refused
    snprintf(cmd, sizeof cmd, "%s eval --threads 1 --model %s --data tests/fixtures/val_small.txt --max-new-tokens 4",
             grpo_bin(), cs);
    int code = run_binary(cmd, out, sizeof out);
    int named = strstr(out, "model of task chain-sum") && strstr(out, "of task countdown");
    check(code == 1 && named, "task: eval refuses a chain-sum model on countdown's data, naming both tasks",
          "exit %d: %s", code, line_with(out, "error"));
    snprintf(cmd, sizeof cmd, "%s train --task chain-sum --threads 1 --steps 1 --init %s --run-dir %s/task_refuse "
             "--train-data tests/fixtures/chain_sum_small.txt --val-data tests/fixtures/chain_sum_small.txt "
             "--test-data tests/fixtures/chain_sum_small.txt --max-new-tokens 4", grpo_bin(), cd, TMPDIR_);
    code = run_binary(cmd, out, sizeof out);
    named = strstr(out, "model of task countdown") && strstr(out, "of task chain-sum");
    check(code == 1 && named, "task: train --task chain-sum refuses a countdown model, naming both tasks",
          "exit %d: %s", code, line_with(out, "error"));
    snprintf(cmd, sizeof cmd, "%s eval --task chain-sum --threads 1 --model %s --data tests/fixtures/chain_sum_small.txt "
             "--max-new-tokens 4 --pass-k 0", grpo_bin(), cs);
    code = run_binary(cmd, out, sizeof out);
    check(code == 0 && strstr(out, "greedy accuracy"), "task: eval --task chain-sum takes the chain-sum model",
          "exit %d", code);
    // the countdown prompt file read as chain-sum: the error names the file, the line and the format
    snprintf(cmd, sizeof cmd, "%s eval --task chain-sum --threads 1 --model %s --data tests/fixtures/val_small.txt "
             "--max-new-tokens 4", grpo_bin(), cs);
    code = run_binary(cmd, out, sizeof out);
    check(code == 1 && strstr(out, "tests/fixtures/val_small.txt:") && strstr(out, "(task chain-sum)"),
          "task: a countdown file read as chain-sum: FILE:LINE and the expected prompt", "exit %d: %s", code,
          line_with(out, "val_small"));
    snprintf(cmd, sizeof cmd, "%s sample --task chain-sum --threads 1 --model %s --group-size 4 --max-new-tokens 6 "
             "--mc-k 2", grpo_bin(), cs);
    code = run_binary(cmd, out, sizeof out);
    check(code == 0 && strstr(out, "prompt drawn from data/chain_sum_t5_val.txt (line ") && strstr(out, "B(G):"),
          "task: sample --task chain-sum draws B(G) for a prompt of the task's validation file", "exit %d", code);
    snprintf(cmd, sizeof cmd, "%s sample --task chain-sum --threads 1 --model %s --group-size 4 --max-new-tokens 6 "
             "--mc-k 2 --prompt 12+7-3+25:", grpo_bin(), cs);
    code = run_binary(cmd, out, sizeof out);
    check(code == 0 && strstr(out, "prompt 12+7-3+25:") && !strstr(out, "drawn from") && strstr(out, "B(G):"),
          "task: sample --task chain-sum --prompt draws B(G) for that prompt", "exit %d", code);
}

// every objective and prompt selector runs on chain-sum; tree statistics in the log
static void test_chain_sum_methods(void) {
    static char cmd[4096], out[65536];
    char cs[300];
    save_tiny_task_init(cs, sizeof cs, "methods_cs.bin", 23, TASK_CHAIN_SUM);
    const char *runs[] = {"--objective grpo", "--objective lambda-grpo", "--objective mc-prm --mc-k 2",
                          "--objective ppo", "--objective lambda-grpo --prompt-select mopps --select-candidates 4",
                          "--objective lambda-grpo --prompt-select dynamic --dynamic-max-rounds 2"};
    for (int r = 0; r < 6; r++) {
        snprintf(cmd, sizeof cmd, "%s train --task chain-sum --threads 1 --steps 2 --prompts-per-step 2 "
                 "--group-size 4 --max-new-tokens 8 --eval-every 0 --test-limit 0 --init %s --run-dir %s/cs_m%d "
                 "--train-data tests/fixtures/chain_sum_small.txt --val-data tests/fixtures/chain_sum_small.txt "
                 "--test-data tests/fixtures/chain_sum_small.txt %s", grpo_bin(), cs, TMPDIR_, r, runs[r]);
        int code = run_binary(cmd, out, sizeof out);
        char path[512];
        snprintf(path, sizeof path, "%s/cs_m%d/train.csv", TMPDIR_, r);
        size_t n = 0;
        char *csv = code == 0 ? (char *)read_all(path, &n) : NULL;
        int rows = 0;
        for (size_t i = 0; csv && i < n; i++) rows += csv[i] == '\n';
        check(code == 0 && strstr(out, "task=chain-sum") && csv && strstr(csv, "depth") && rows == 3,
              "chain-sum: train runs with this objective/selector, tree statistics logged", "%s: exit %d, %d rows",
              runs[r], code, rows);
        free(csv);
    }
}

// a chain-sum run resumed from its checkpoint ends bit for bit where the uninterrupted run ends
static void test_chain_sum_resume(void) {
    static char cmd[4096], out[65536];
    char cs[300];
    save_tiny_task_init(cs, sizeof cs, "resume_cs.bin", 24, TASK_CHAIN_SUM);
    const char *common = "--task chain-sum --threads 1 --prompts-per-step 2 --group-size 4 --max-new-tokens 8 "
                         "--eval-every 0 --test-limit 0 --objective lambda-grpo "
                         "--train-data tests/fixtures/chain_sum_small.txt --val-data tests/fixtures/chain_sum_small.txt "
                         "--test-data tests/fixtures/chain_sum_small.txt";
    snprintf(cmd, sizeof cmd, "%s train %s --steps 4 --init %s --run-dir %s/cs_full", grpo_bin(), common, cs, TMPDIR_);
    int c1 = run_binary(cmd, out, sizeof out);
    snprintf(cmd, sizeof cmd, "%s train %s --steps 2 --init %s --run-dir %s/cs_half", grpo_bin(), common, cs, TMPDIR_);
    int c2 = run_binary(cmd, out, sizeof out);
    snprintf(cmd, sizeof cmd, "%s train %s --steps 4 --init %s --resume %s/cs_half/model.bin --run-dir %s/cs_rest",
             grpo_bin(), common, cs, TMPDIR_, TMPDIR_);
    int c3 = run_binary(cmd, out, sizeof out);
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/cs_full/model.bin", TMPDIR_);
    snprintf(b, sizeof b, "%s/cs_rest/model.bin", TMPDIR_);
    size_t na = 0, nb = 0;
    unsigned char *fa = c1 == 0 ? (unsigned char *)read_all(a, &na) : NULL;
    unsigned char *fb = c3 == 0 ? (unsigned char *)read_all(b, &nb) : NULL;
    int same = fa && fb && na == nb && !memcmp(fa, fb, na);
    check(c1 == 0 && c2 == 0 && c3 == 0 && same, "chain-sum: a resumed run ends bit for bit as the uninterrupted one",
          "exits %d %d %d, %zu and %zu bytes, %s", c1, c2, c3, na, nb, same ? "equal" : "different");
    free(fa);
    free(fb);
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    self_bin = argv[0];
    if (only && !strcmp(only, "--stop-on-nan-threads")) return stop_on_nan_threads();
    if (make_run_tmpdir(TMPDIR_, sizeof TMPDIR_) != 0) {
        perror("test_grpo: mkdtemp $TMPDIR/grpo-test.XXXXXX");
        return 1;
    }
    printf("# grpo.c tests, %d threads%s, %s\n", num_threads(),
#ifdef _OPENMP
           ""
#else
           " (built without OpenMP)"
#endif
           , build_isa());
    if (want("model", only)) { test_model_vs_pytorch(); test_finite_differences(); test_kv_cache(); test_kv_packed_weights();
                             test_logprob(); test_tokenizer(); }
    if (want("model", only)) test_attention_ref();
    if (want("model", only)) test_attention_large_head();
    if (want("model", only)) test_layers_ref();
    if (want("model", only)) test_attention_backward_ref();
    if (want("model", only)) test_clip_ref();
    if (want("checkpoint", only)) test_checkpoints();
    if (want("checkpoint", only)) test_checkpoint_sections();
    if (want("checkpoint", only)) test_checkpoint_checksums();
    if (want("checkpoint", only)) test_run_tmpdir();
    if (want("cli", only)) test_usage_errors();
    if (want("cli", only)) test_busy_machine();
    if (want("cli", only)) test_io_errors();
    if (want("cli", only)) test_input_messages();
    if (want("cli", only)) test_hostile_inputs();
    if (want("checkpoint", only)) test_checkpoint_messages();
    if (want("sft", only)) test_sft_end_to_end();
    if (want("sft", only)) { test_run_dir_lock(); test_save_failure(); test_csv_resume(); test_csv_repair(); }
    if (want("train", only)) { test_train_keeps_init(); test_divergence(); test_resume_before(); }
    if (want("train", only)) test_test_limit();
    if (want("treetask", only)) test_tree_errors();
    if (want("verifier", only)) test_verifier();
    if (want("tree", only)) { test_tree_brute_force(); test_tree_cases(); }
    if (want("objective", only)) { test_advantages(); test_aggregation(); test_kl_and_clip(); test_worked_example(); test_theorem1_and_lambda(); }
    if (want("objective", only)) test_mask_truncated();
    if (want("sampler", only)) test_sampler_logp();
    if (want("sampler", only)) test_sampler_batch_independent();
    if (want("sampler", only)) test_shared_prompts();
    if (want("sampler", only)) test_token_budget();
    if (want("sampler", only)) test_eval_counts_verified();
    if (want("train", only)) test_train_end_to_end();
    if (want("treepack", only)) test_pack_brute_force();
    if (want("treepack", only)) test_tree_attention();
    if (want("treepack", only)) test_tree_update_vs_padded();
    if (want("treepack", only)) test_sft_tree_vs_padded();
    if (want("treepack", only)) test_tree_update_token_adv();
    if (want("treepack", only)) test_reference_paths();
    if (want("train", only)) test_tree_layout_train();
    if (want("probe", only)) test_probe_directions();
    if (want("train", only)) test_probe_train();
    if (want("train", only)) test_entropy_column();
    if (want("treetask", only)) test_tree_task();
    if (want("check", only)) test_check_fixtures();
    if (want("check", only)) test_check_mask_truncated();
    if (want("fuzz", only)) test_fuzz_regressions();
    if (want("cli", only)) test_option_float_range();
    if (want("treetask", only)) test_tree_window();
    if (want("treetask", only)) test_tree_csv_write_error();
    if (want("treetask", only)) test_tree_beta_ref();
    if (want("treetask", only)) test_tree_step_config();
    if (want("checkpoint", only)) test_checkpoint_not_finite();
    if (want("sampler", only)) test_eval_completions_verify();
    if (want("checkpoint", only)) test_save_interrupted();
    if (want("train", only)) test_resume_run_record();
    if (want("train", only)) test_stale_checkpoint();
    if (want("sft", only)) test_sft_run_record();
    if (want("compare", only)) { test_compare_stats(); test_budget_accounting(); test_compare_quick();
                                   test_compare_cost_to_reach(); test_compare_plan();
                                   test_compare_only_lock(); test_compare_no_save_every(); test_compare_schedule();
                                   test_compare_test_n(); test_compare_one_batch();
                                   test_compare_one_batch_verdict(); test_compare_one_batch_usage(); }
    if (want("compare", only)) test_load_run_checks();
    if (want("mcprm", only)) { test_mc_segment(); test_mc_advantages(); test_mc_dedup(); }
    if (want("mcprm", only)) { test_mc_tree_values(); test_mc_budget(); test_mc_train(); }
    if (want("mcprm", only)) { test_mc_commands(); test_mc_usage(); }
    if (want("critic", only)) { test_gae(); test_whitening(); test_value_loss(); test_value_head_gradient(); }
    if (want("critic", only)) { test_critic_vs_pytorch(); test_critic_step(); test_tree_ppo(); }
    if (want("ppo", only)) { test_ppo_usage(); test_ppo_train(); test_ppo_budget(); }
    if (want("methods", only)) { test_objectives_tree_layout(); test_tree_four_methods(); }
    if (want("select", only)) { test_beta_sampler(); test_mopps_select(); test_mopps_update(); }
    if (want("select", only)) test_dynamic_filter();
    if (want("select", only)) { test_spearman(); test_select_runs(); test_select_usage(); }
    if (want("select", only)) test_select_dynamic_objectives();
    if (want("claims", only)) test_claims();
    if (want("html", only)) { test_html_check(); test_html_sample_text(); test_html_sample_runs(); test_html_errors(); }
    if (want("verifier", only)) test_chain_sum_verifier();
    if (want("task", only)) { test_help_task_defaults(); test_sample_group_of_one(); test_note_cut_demonstrations(); test_task_train_lr(); test_failures_script(); test_task_interface(); test_chain_sum_methods(); }
    if (want("task", only)) test_chain_sum_resume();
    if (finish_run_tmpdir(TMPDIR_, tests_failed != 0))
        printf("# %s %s\n", tests_failed ? "files of this run kept in" : "could not remove", TMPDIR_);
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed != 0;
}
