/*
grpo.c: a minimal, readable, single-file reference implementation of GRPO and λ-GRPO.

What this file is
  A tiny GPT-2-style transformer (character-level tokenizer, forward and backward passes
  written out by hand, AdamW), checkable tasks (countdown; chain-sum) with their verifiers, a group
  sampler with a KV cache, the prefix tree B(G) of a group (the "process sets"), and the
  objectives:
    GRPO     Shao et al. 2024 (DeepSeekMath), with the conventions of TRL and verl.
    λ-GRPO   Sullivan & Koller, "GRPO is Secretly a Process Reward Model",
             arXiv 2509.21154 (ICML 2026); authors' code github.com/coli-saar/grpo-prm
             (lambda_grpo/utils.py builds the tree, lambda_grpo/trainer.py the loss).
    MC-PRM   explicit Monte-Carlo process rewards, VinePPO (Kazemnejad et al. 2024, arXiv
             2410.01679; github.com/McGill-NLP/VinePPO): a step's value from fresh continuations,
             the comparison point for λ-GRPO's implicit one (notes/credit-assignment.md §3).
    PPO      a learned critic and GAE (Schulman et al. 2017, with verl's conventions):
             a value model of the policy's shape, trained beside it, VinePPO's PPO baseline.
  It runs on the CPU with OpenMP. `make cuda` builds the CUDA variant (-DGRPO_CUDA, with
  grpo_kernels.cu): models, optimizer state, activations and the KV cache in GPU memory,
  every layer routed to its cuda_ twin through LAYER() (the CUDA seam), the loop, sampler
  control, verifier, tree and objectives still here on the host (tested against this file, kernel by kernel
  and step by step, by tests/test_cuda.cu on an H200: notes/cuda-integration.md).
  Everything here is checked by tests/test_grpo.c against independent references
  (PyTorch autograd, brute-force counts, closed-form vectors, finite differences).

What it deliberately does not do
  No BPE tokenizer, no mixed precision, no distributed training, no top-k/top-p sampling
  (truncation biases the importance ratio), no critic in the CUDA build. Where GRPO
  implementations disagree (std, epsilon, loss aggregation, KL, EOS), the choice is an
  option; notes/conventions.md lists them with the defaults, which every command prints at
  start-up.

How to read it
  From line 1 to the end of train_loop is the reference: what a reader of the paper needs for one
  GRPO or λ-GRPO step with uniform prompts, in the order the data flows. Read grpo_step (in "The
  training loop") first: it is the paper's algorithm, one call per phase, each citing its equation.
    Utilities → Tokenizer → Model layers → Model → Incremental decoding → Log-probabilities →
    Optimizer: AdamW → Task and verifier (countdown; then chain-sum) → The task interface →
    Task data → Group sampler → Prefix tree B(G) →
    Objectives → The GRPO step (its phases) → The training loop (grpo_step, train_loop)
  The functions that carry the paper: compute_advantages (a_i, eq. 2), build_prefix_tree and
  build_group_trees (B(G), §3.1), lambda_weight (1/|λ(i,t)|, eq. 11), grpo_token_loss (the
  clipped per-token objective and ∂loss/∂logp, eqs. 3–4), grpo_update (μ AdamW steps), grpo_step.
  On the CPU, by default, the sampler and the update run speed paths with the same results (the
  same tokens; the same gradient up to float rounding); `--sampler plain --update-layout padded`
  runs the reference's own loops only (grpo_step's comment says which is which).
  Then, under the OPTIONAL PARTS banner, what a first reading skips, each reached from the
  reference through a call whose declaration says in one line what it computes:
    Comparison method: MC-PRM → Comparison method: PPO → Prompt selection → Speed paths (register
    tiles, the shared-prefix batch of --update-layout tree, packed decode) → CUDA seam
  and under the TOOLING banner what the commands need around the algorithm:
    Options → Checkpoints → Run logs → SFT → train (cmd_train) → the paper's synthetic experiment
    (./grpo tree) → HTML page of B(G) → eval, sample, verify → check → bench → compare → Command line.
  "Prefix tree" and "tree" mean B(G). The shared-prefix batch is another trie, a speed path: it
  packs a micro-batch's sequences so that shared positions are computed once, and changes no
  weight. README.md maps the sections to line numbers.
*/
#ifndef _GNU_SOURCE   // (nvcc defines it)
#define _GNU_SOURCE   // fopencookie: standard error through one escaper (escape_stderr)
#endif
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <errno.h>
#include <float.h>
#include <stddef.h>
#include <stdarg.h>
#include <getopt.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <signal.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

// ----------------------------------------------------------------------------
// Utilities: checked wrappers that report file, line and a hint, then exit

#define EXIT_USAGE 2   // bad command line (option unknown, missing or out of range)
#define EXIT_INPUT 1   // bad input file or a failed run

static void fail_at(const char *file, int line, const char *what, const char *hint) {
    fprintf(stderr, "error: %s\n  at %s:%d\n", what, file, line);
    if (hint && hint[0]) fprintf(stderr, "  hint: %s\n", hint);
    exit(EXIT_INPUT);
}

// What to shrink when memory runs out: parse_options sets it to the options of the command
// being run, so the hint never names an option that command does not have.
static const char *oom_hint = "the machine has too little free memory for this command";

// Buffers of HUGE_MIN bytes and more (activations, their gradients, packed panels) are
// aligned to 2 MiB and offered to the kernel for transparent huge pages (its "madvise"
// mode): fewer TLB misses on the passes over megabytes of activations (300 SFT steps at 2
// threads: 1.5-2.5% faster, the same results). Elsewhere plain malloc.
#define HUGE_MIN ((size_t)4 << 20)
#define HUGE_PAGE ((size_t)2 << 20)

static void *malloc_check(size_t size, const char *file, int line) {
    void *p = NULL;
#if defined(MADV_HUGEPAGE)
    if (size >= HUGE_MIN) {
        if (posix_memalign(&p, HUGE_PAGE, size)) p = NULL;
        else madvise(p, size / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);   // whole pages only; advice only
    } else
#endif
        p = malloc(size ? size : 1);
    if (!p) {
        char msg[128];
        snprintf(msg, sizeof msg, "out of memory allocating %zu bytes", size);
        fail_at(file, line, msg, oom_hint);
    }
    return p;
}
#define mallocCheck(size) malloc_check(size, __FILE__, __LINE__)

static void *calloc_check(size_t n, size_t size, const char *file, int line) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        char msg[128];
        snprintf(msg, sizeof msg, "out of memory allocating %zu x %zu bytes", n, size);
        fail_at(file, line, msg, oom_hint);
    }
    return p;
}
#define callocCheck(n, size) calloc_check(n, size, __FILE__, __LINE__)

static FILE *fopen_nofollow(const char *path, const char *mode);   // a file it writes: through no link (tooling)
static FILE *fopen_check(const char *path, const char *mode, const char *file, int line) {
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        char msg[1200];
        snprintf(msg, sizeof msg, "'%s' is a directory, expected a file", path);
        fail_at(file, line, msg, "check the path");
    }
    FILE *f = mode[0] == 'r' && !strchr(mode, '+') ? fopen(path, mode) : fopen_nofollow(path, mode);
    if (!f) {
        char msg[1200];
        snprintf(msg, sizeof msg, "cannot open '%s' (mode %s): %s", path, mode, strerror(errno));
        fail_at(file, line, msg, mode[0] == 'r' ? "check the path; run from the repository root"
                                                : "check that the directory exists and is writable");
    }
    return f;
}
#define fopenCheck(path, mode) fopen_check(path, mode, __FILE__, __LINE__)

static double wall_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int num_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

// Random numbers: SplitMix64 seeds a xoshiro256** generator. A stream is identified by
// (seed, stream id); two different stream ids give independent sequences, so every
// sampled completion can own one (completion c of step s, 0-based, uses stream id (s+1)·65536 + c).
typedef struct {
    uint64_t s[4];
} Rng;

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void rng_seed(Rng *r, uint64_t seed, uint64_t stream) {
    uint64_t x = seed ^ (0xD1B54A32D192ED03ull * (stream + 1));
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_u64(Rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl64(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

// uniform in [0, 1) with 24 random bits (exactly representable as float)
static float rng_uniform(Rng *r) { return (rng_u64(r) >> 40) * (1.0f / 16777216.0f); }
// uniform integer in [0, n)
static int rng_int(Rng *r, int n) { return (int)((rng_u64(r) >> 33) % (uint64_t)n); }
// uniform in (0, 1) with 53 random bits, never 0 or 1 (a logarithm of it is finite)
static double rng_open01(Rng *r) { return ((rng_u64(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
// standard normal (Box-Muller, one value per call), in double: the gamma sampler's (MoPPS)
static double rng_normal64(Rng *r) {
    double u1 = ((rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
// the same draw as a float: initialisation's
static float rng_normal(Rng *r) { return (float)rng_normal64(r); }

// ----------------------------------------------------------------------------
// Tokenizer: character level, over one vocabulary declared once

// Token ids: 0 <pad>, 1 <bos>, 2 <eos>, then one id per character of VOCAB_CHARS.
// The countdown task uses digits, + - * / = , > : and space; the binary-tree task of
// the paper's synthetic experiment uses L and R. The checkpoint stores this list.
#define TOK_PAD 0
#define TOK_BOS 1
#define TOK_EOS 2
#define VOCAB_CHARS "0123456789+-*/=,>: LR"
#define NUM_SPECIAL 3
#define VOCAB_SIZE (NUM_SPECIAL + (int)(sizeof(VOCAB_CHARS) - 1))

static const char *SPECIAL_NAMES[NUM_SPECIAL] = {"<pad>", "<bos>", "<eos>"};

// Writes the vocabulary as one string: names separated by '\n' (stored in checkpoints).
static int vocab_string(char *out, int cap) {
    int n = 0;
    for (int i = 0; i < NUM_SPECIAL; i++) n += snprintf(out + n, cap - n, "%s\n", SPECIAL_NAMES[i]);
    for (int i = 0; VOCAB_CHARS[i]; i++) n += snprintf(out + n, cap - n, "%c\n", VOCAB_CHARS[i]);
    return n;
}

// Token id of one character, or -1 when it is not in the vocabulary.
static int char_to_token(unsigned char c) {
    const char *p = c ? strchr(VOCAB_CHARS, c) : NULL;
    return p ? NUM_SPECIAL + (int)(p - VOCAB_CHARS) : -1;
}

/* encode: text[0..len) → tokens[0..len). Returns len, or -1 when a character is not in
   the vocabulary; then *bad_pos is its 0-based position (the caller names the file/line). */
static int encode(const char *text, int len, int *tokens, int *bad_pos) {
    for (int i = 0; i < len; i++) {
        int t = char_to_token((unsigned char)text[i]);
        if (t < 0) {
            if (bad_pos) *bad_pos = i;
            return -1;
        }
        tokens[i] = t;
    }
    return len;
}

/* decode: tokens[0..n) → NUL-terminated text in out (capacity cap). Special tokens are
   written by name (<eos>), so decode(encode(s)) == s for any vocabulary text s. */
static void decode(const int *tokens, int n, char *out, int cap) {
    int k = 0;
    for (int i = 0; i < n && k < cap - 1; i++) {
        int t = tokens[i];
        if (t >= NUM_SPECIAL && t < VOCAB_SIZE) out[k++] = VOCAB_CHARS[t - NUM_SPECIAL];
        else {
            const char *name = (t >= 0 && t < NUM_SPECIAL) ? SPECIAL_NAMES[t] : "<?>";
            int name_len = (int)strlen(name);
            if (k + name_len >= cap) break;
            memcpy(out + k, name, name_len);
            k += name_len;
        }
    }
    out[k] = 0;
}

// ----------------------------------------------------------------------------
// Model layers: <layer>_forward / <layer>_backward on flat float arrays.
// B = batch (sequences), T = time (positions), C = channels, OC = output channels,
// NH = heads, V = vocabulary. Backward functions accumulate (+=) into gradients.
// OpenMP parallelises outer loops only; every output element is computed by one thread
// in a fixed order, so results do not depend on the number of threads.

// Vector helpers, defined under "Speed paths" after the training loop. Each computes the plain
// formula given here, in a fixed order of partial sums (the same on every thread count).
static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }
static inline float exp_simd(float x);                    // e^x to ~1 ulp, a loop of it vectorizes
static inline float sum16(const float *x, int n);         // Σ_{i<n} x[i]
static inline float dot16(const float *x, const float *y, int n);   // Σ_{i<n} x[i] y[i]
// s[t2] = scale · Σ_{i<hs} q[i] kt[i·Tp + t2] for t2 < n8 (a multiple of 8; kt zero-padded)
static inline void attn_scores(float *s, const float *q, const float *kt, int hs, int Tp, int n8, float scale);
// y[i] = (accumulate ? y[i] : 0) + Σ_{t0 <= t < t1} w[t·ws] x[t·xs + i], for i < hs
static inline void attn_rows(float *y, int accumulate, const float *w, size_t ws, const float *x, size_t xs,
                             int t0, int t1, int hs);
static inline void warm_cache(const float *p, size_t n);  // reads p[0..n) once, to prefetch it

// encoder: out (B,T,C) = wte[inp[b,t]] (V,C) + wpe[t] (maxT,C)
static void encoder_forward(float *out, const int *inp, const float *wte, const float *wpe,
                            int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *o = out + ((size_t)b * T + t) * C;
            const float *we = wte + (size_t)inp[b * T + t] * C, *pe = wpe + (size_t)t * C;
            for (int i = 0; i < C; i++) o[i] = we[i] + pe[i];
        }
}

// serial: several positions may hold the same token, so rows of dwte would race
static void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp,
                             int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *d = dout + ((size_t)b * T + t) * C;
            float *dwe = dwte + (size_t)inp[b * T + t] * C, *dpe = dwpe + (size_t)t * C;
            for (int i = 0; i < C; i++) { dwe[i] += d[i]; dpe[i] += d[i]; }
        }
}

// layernorm over the last axis, eps 1e-5, biased variance (as torch.nn.LayerNorm).
// inp, out (N,C); mean, rstd (N) saved for the backward pass; weight, bias (C)
static void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                              const float *weight, const float *bias, int N, int C) {
    #pragma omp parallel for
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *o = out + (size_t)n * C;
        float m = sum16(x, C) / C;
        for (int i = 0; i < C; i++) o[i] = x[i] - m;   // o holds x - m until the last line
        float v = dot16(o, o, C) / C;
        float s = 1.0f / sqrtf(v + 1e-5f);
        for (int i = 0; i < C; i++) o[i] = o[i] * s * weight[i] + bias[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

// Rows per task in layernorm_backward: each task sums its rows' dweight and dbias terms, and
// the tasks' sums are then added in row order (the same order whatever the thread count).
#define LN_RB 64

// layernorm's backward: dinp (N,C) += ∂L/∂inp, dweight, dbias (C) += their gradients, given
// dout (N,C) and the forward's inp, weight, mean and rstd (N); summed as LN_RB says.
static void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                               const float *inp, const float *weight, const float *mean,
                               const float *rstd, int N, int C) {
    int nrb = (N + LN_RB - 1) / LN_RB;
    float *part = (float *)mallocCheck((size_t)nrb * 2 * C * sizeof(float));   // (nrb, 2, C)
    #pragma omp parallel
    {
        float *norm = (float *)mallocCheck(2 * (size_t)C * sizeof(float));
        float *dnorm = norm + C;
        #pragma omp for
        for (int rb = 0; rb < nrb; rb++) {
            float *pw = part + (size_t)rb * 2 * C;
            float *pb = pw + C;
            for (int i = 0; i < 2 * C; i++) pw[i] = 0.0f;
            for (int n = rb * LN_RB; n < imin(N, (rb + 1) * LN_RB); n++) {
                const float *d = dout + (size_t)n * C;
                const float *x = inp + (size_t)n * C;
                float *di = dinp + (size_t)n * C;
                float m = mean[n];
                float s = rstd[n];
                for (int i = 0; i < C; i++) {
                    norm[i] = (x[i] - m) * s;
                    dnorm[i] = weight[i] * d[i];
                    pw[i] += norm[i] * d[i];
                    pb[i] += d[i];
                }
                float dnorm_mean = sum16(dnorm, C) / C;
                float dnorm_norm_mean = dot16(dnorm, norm, C) / C;
                for (int i = 0; i < C; i++) di[i] += (dnorm[i] - dnorm_mean - norm[i] * dnorm_norm_mean) * s;
            }
        }
        free(norm);
        // weight and bias gradients: the row blocks' sums, in row order, one thread per channel
        #pragma omp for
        for (int i = 0; i < C; i++) {
            float dw = 0.0f;
            float db = 0.0f;
            for (int rb = 0; rb < nrb; rb++) {
                dw += part[(size_t)rb * 2 * C + i];
                db += part[(size_t)rb * 2 * C + C + i];
            }
            dweight[i] += dw;
            dbias[i] += db;
        }
    }
    free(part);
}

// matmul: out (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC) (bias may be NULL), as plain loops.
// This is the readable version and the oracle for matmul_forward, which the model calls: the same
// products on register tiles (Speed paths), equal up to float rounding. Only the tests call it.
static void matmul_forward_ref(float *out, const float *inp, const float *weight, const float *bias,
                               int N, int C, int OC) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            float s = bias ? bias[o] : 0.0f;
            for (int i = 0; i < C; i++) s += inp[(size_t)n * C + i] * weight[(size_t)o * C + i];
            out[(size_t)n * OC + o] = s;
        }
}

// matmul's backward as plain loops (the oracle for matmul_backward): dinp (N,C) += dout (N,OC) @
// weight (OC,C); dweight (OC,C) += dout^T @ inp (N,C); dbias (OC) += Σ_n dout (dbias may be NULL).
static void matmul_backward_ref(float *dinp, float *dweight, float *dbias, const float *dout,
                                const float *inp, const float *weight, int N, int C, int OC) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            float d = dout[(size_t)n * OC + o];
            for (int i = 0; i < C; i++) {
                dinp[(size_t)n * C + i] += d * weight[(size_t)o * C + i];
                dweight[(size_t)o * C + i] += d * inp[(size_t)n * C + i];
            }
            if (dbias) dbias[o] += d;
        }
}

// What the model calls: matmul_forward_ref's and matmul_backward_ref's products on register tiles
// (Speed paths), each output summed by one thread in one order whatever N and the thread count.
static void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                           int N, int C, int OC);
static void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                            const float *inp, const float *weight, int N, int C, int OC);

// Causal multi-head self-attention in textbook form: the readable version of attention_forward
// below (same arguments, shapes in its comment, same result up to float rounding) and the
// oracle it is tested against. For each sequence b, head h and query t: scores q_t·k_t2 /
// sqrt(hs) for t2 <= t, softmax into att, out_t = Σ_t2 a_t2 v_t2. Only the tests call it.
static void attention_forward_ref(float *out, float *att, const float *inp, int B, int T, int C, int NH) {
    int C3 = 3 * C, hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *x = inp + (size_t)b * T * C3 + h * hs;   // position t: q at x + t*C3, k +C, v +2C
            for (int t = 0; t < T; t++) {
                const float *q = x + (size_t)t * C3;
                float *a = att + (((size_t)b * NH + h) * T + t) * T;
                float maxv = -FLT_MAX, sum = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {   // causal: query t sees positions t2 <= t only
                    const float *k = x + (size_t)t2 * C3 + C;
                    float s = 0.0f;
                    for (int i = 0; i < hs; i++) s += q[i] * k[i];
                    a[t2] = s * scale;
                    if (a[t2] > maxv) maxv = a[t2];
                }
                for (int t2 = 0; t2 <= t; t2++) { a[t2] = expf(a[t2] - maxv); sum += a[t2]; }
                for (int t2 = 0; t2 < T; t2++) a[t2] = t2 <= t ? a[t2] / sum : 0.0f;
                float *o = out + ((size_t)b * T + t) * C + h * hs;
                for (int i = 0; i < hs; i++) {   // out_t = Σ_{t2<=t} a[t2] v_t2
                    o[i] = 0.0f;
                    for (int t2 = 0; t2 <= t; t2++) o[i] += a[t2] * x[(size_t)t2 * C3 + 2 * C + i];
                }
            }
        }
}

// causal multi-head self-attention.
// inp (B,T,3C) holds q,k,v; out (B,T,C); att (B,NH,T,T) keeps the softmax for the backward
// pass (entries above the diagonal are 0). Scores are scaled by 1/sqrt(hs), hs = C/NH.
// One task per (b,h). The head's keys are copied transposed, kt (hs,Tp), so that a query's
// scores for all earlier positions are vector loops across positions.
static void attention_forward(float *out, float *att, const float *inp, int B, int T, int C, int NH) {
    int C3 = 3 * C, hs = C / NH, Tp = (T + 7) / 8 * 8;
    float scale = 1.0f / sqrtf((float)hs);
    #pragma omp parallel
    {
        // one per thread, on the heap: hs·Tp floats reach megabytes at large widths and contexts
        float *kt = (float *)mallocCheck(((size_t)hs + 1) * Tp * sizeof(float));
        float *s = kt + (size_t)hs * Tp;
        #pragma omp for
        for (int b = 0; b < B; b++) {
            warm_cache(inp + (size_t)b * T * C3, (size_t)T * C3);
            for (int h = 0; h < NH; h++) {
                const float *qkv = inp + (size_t)b * T * C3 + h * hs;  // q of position t at qkv + t*C3
                for (int t2 = 0; t2 < Tp; t2++)
                    for (int i = 0; i < hs; i++)
                        kt[i * Tp + t2] = t2 < T ? qkv[(size_t)t2 * C3 + C + i] : 0.0f;
                for (int t = 0; t < T; t++) {
                    float *a = att + (((size_t)b * NH + h) * T + t) * T;
                    attn_scores(s, qkv + (size_t)t * C3, kt, hs, Tp, (t + 8) / 8 * 8, scale);
                    float maxv = -FLT_MAX, sum = 0.0f;
                    for (int t2 = 0; t2 <= t; t2++) if (s[t2] > maxv) maxv = s[t2];
                    #pragma omp simd reduction(+:sum)
                    for (int t2 = 0; t2 <= t; t2++) { s[t2] = exp_simd(s[t2] - maxv); sum += s[t2]; }
                    float inv = 1.0f / sum;
                    for (int t2 = 0; t2 < T; t2++) a[t2] = t2 <= t ? s[t2] * inv : 0.0f;
                    // out = Σ_{t2<=t} a[t2] v[t2]
                    attn_rows(out + ((size_t)b * T + t) * C + h * hs, 0, a, 1, qkv + 2 * C, C3, 0, t + 1, hs);
                }
            }
        }
        free(kt);
    }
}

// dinp (B,T,3C) += ∂L/∂(q,k,v) given dout (B,T,C); datt (B,NH,T,T) is scratch (it ends
// up holding ∂L/∂scores). Parallel over (b,h) only: keys and values of position t2 receive
// gradient from every query t >= t2. Three passes per head, so that each gradient row is
// one sum in registers, added once: the score gradients of all (t, t2), then dq (a sum over
// t2 <= t), then dk and dv (sums over t >= t2).
static void attention_backward(float *dinp, float *datt, const float *dout, const float *inp,
                               const float *att, int B, int T, int C, int NH) {
    /* BEGIN SOLUTION: attention_backward */
    int C3 = 3 * C, hs = C / NH, Tp = (T + 7) / 8 * 8;
    float scale = 1.0f / sqrtf((float)hs);
    #pragma omp parallel
    {
        // one per thread, on the heap: hs·Tp floats reach megabytes at large widths and contexts
        float *vt = (float *)mallocCheck(((size_t)hs + 1) * Tp * sizeof(float));
        float *da = vt + (size_t)hs * Tp;
        #pragma omp for
        for (int b = 0; b < B; b++) {
            warm_cache(inp + (size_t)b * T * C3, (size_t)T * C3);
            warm_cache(dinp + (size_t)b * T * C3, (size_t)T * C3);
            warm_cache(dout + (size_t)b * T * C, (size_t)T * C);
            for (int h = 0; h < NH; h++) {
                const float *qkv = inp + (size_t)b * T * C3 + h * hs, *d = dout + (size_t)b * T * C + h * hs;
                float *dqkv = dinp + (size_t)b * T * C3 + h * hs;
                const float *A = att + ((size_t)b * NH + h) * T * T;
                float *dS = datt + ((size_t)b * NH + h) * T * T;
                for (int t2 = 0; t2 < Tp; t2++)
                    for (int i = 0; i < hs; i++)
                        vt[i * Tp + t2] = t2 < T ? qkv[(size_t)t2 * C3 + 2 * C + i] : 0.0f;
                // out = Σ a v: da[t2] = dout·v[t2]; softmax: dscore = a (da - Σ a da), times scale
                for (int t = 0; t < T; t++) {
                    const float *a = A + (size_t)t * T;
                    attn_scores(da, d + (size_t)t * C, vt, hs, Tp, (t + 8) / 8 * 8, 1.0f);
                    float dot = 0.0f;
                    #pragma omp simd reduction(+:dot)
                    for (int t2 = 0; t2 <= t; t2++) dot += a[t2] * da[t2];
                    for (int t2 = 0; t2 <= t; t2++) dS[(size_t)t * T + t2] = a[t2] * (da[t2] - dot) * scale;
                }
                for (int t = 0; t < T; t++)    // dq[t] += Σ_{t2<=t} dS[t][t2] k[t2]
                    attn_rows(dqkv + (size_t)t * C3, 1, dS + (size_t)t * T, 1, qkv + C, C3, 0, t + 1, hs);
                for (int t2 = 0; t2 < T; t2++) {
                    // dk[t2] += Σ_{t>=t2} dS[t][t2] q[t];  dv[t2] += Σ_{t>=t2} a[t][t2] dout[t]
                    attn_rows(dqkv + (size_t)t2 * C3 + C, 1, dS + t2, T, qkv, C3, t2, T, hs);
                    attn_rows(dqkv + (size_t)t2 * C3 + 2 * C, 1, A + t2, T, d, C, t2, T, hs);
                }
            }
        }
        free(vt);
    }
    /* END SOLUTION: attention_backward */
}

// GELU, tanh approximation (GPT-2; torch.nn.GELU(approximate="tanh")). inp, out (N).
// 0.5 (1 + tanh u) = 1 / (1 + e^{-2u}), so gelu(x) = x / (1 + e^{-2u}): one exp, no
// cancellation for negative x, and the loop vectorizes with exp_simd.
#define GELU_SCALE 0.7978845608028654f   // sqrt(2/pi)
static void gelu_forward(float *out, const float *inp, size_t N) {
    #pragma omp parallel for simd
    for (size_t i = 0; i < N; i++) {
        float x = inp[i], u = GELU_SCALE * (x + 0.044715f * x * x * x);
        out[i] = x / (1.0f + exp_simd(-2.0f * u));
    }
}

// d gelu/dx = s + x (1 - s) s 2 du/dx with s = 1 / (1 + t), t = e^{-2u}; 1 - s = t s
// keeps its precision when s is close to 1.
static void gelu_backward(float *dinp, const float *inp, const float *dout, size_t N) {
    #pragma omp parallel for simd
    for (size_t i = 0; i < N; i++) {
        float x = inp[i], u = GELU_SCALE * (x + 0.044715f * x * x * x);
        float t = exp_simd(-2.0f * u), s = 1.0f / (1.0f + t);
        float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += (s + 2.0f * x * du * (t * s) * s) * dout[i];
    }
}

// out = a + b, all (N)
static void residual_forward(float *out, const float *a, const float *b, size_t N) {
    #pragma omp parallel for
    for (size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}

static void residual_backward(float *da, float *db, const float *dout, size_t N) {
    #pragma omp parallel for
    for (size_t i = 0; i < N; i++) { da[i] += dout[i]; db[i] += dout[i]; }
}

// the memset of a model's buffers, as a layer so that LAYER() can route it to the GPU; in
// chunks of 64 KiB across the threads (a step zeroes megabytes: serially, the other threads
// would wait at the next barrier)
static void memset_zero(void *p, size_t bytes) {
    const size_t chunk = 65536;
    long n = (long)((bytes + chunk - 1) / chunk);
    #pragma omp parallel for if (n > 1)
    for (long i = 0; i < n; i++) {
        size_t off = (size_t)i * chunk;
        memset((char *)p + off, 0, bytes - off < chunk ? bytes - off : chunk);
    }
}

// The decode step's own layers (defined under "Incremental decoding"): the embedding of one token
// per sequence at its own position, the KV cache's append, and attention over the cached keys.
static void encoder_forward_pos(float *out, const int *tokens, const int *pos, const float *wte,
                                const float *wpe, int B, int C);
static void kv_append(float *kt, float *v, const float *qkv, const int *pos, int B, int C, int maxT);
static void attention_decode(float *atty, const float *kt, const float *v, const float *qkv, const int *pos,
                             int B, int C, int NH, int maxT);

// LAYER(m, f): the layer f, run where model (or KV cache) m lives. In the CUDA build each layer has
// a twin cuda_f in grpo_kernels.cu, the same arguments on GPU pointers, and LAYER picks it for m in
// GPU memory (the CUDA seam, after the training loop). A macro and the twins' declarations must
// precede their first use: this is why the one CUDA conditional of the reference stands here.
#ifdef GRPO_CUDA
#ifdef __cplusplus
#define CUDA_TWIN(f) extern "C" __typeof__(f) cuda_##f;
#else
#define CUDA_TWIN(f) extern __typeof__(f) cuda_##f;
#endif
CUDA_TWIN(encoder_forward) CUDA_TWIN(layernorm_forward) CUDA_TWIN(layernorm_backward) CUDA_TWIN(matmul_forward)
CUDA_TWIN(matmul_backward) CUDA_TWIN(attention_forward) CUDA_TWIN(attention_backward) CUDA_TWIN(gelu_forward)
CUDA_TWIN(gelu_backward) CUDA_TWIN(residual_forward) CUDA_TWIN(residual_backward) CUDA_TWIN(memset_zero)
CUDA_TWIN(encoder_forward_pos) CUDA_TWIN(kv_append) CUDA_TWIN(attention_decode)
#define LAYER(m, f) ((m)->on_device ? cuda_##f : f)
#else
#define LAYER(m, f) f
#endif

// ----------------------------------------------------------------------------
// Model: GPT-2-style decoder. Token and learned position embeddings, pre-LayerNorm
// blocks (causal multi-head attention, GELU MLP with 4x hidden), final LayerNorm,
// LM head tied to the token embedding. Parameters use PyTorch's nn.Linear layout
// (out, in), in the order of the size table below (tests/gen_reference.py relies on it).

typedef struct {
    int max_seq_len;   // maxT, context length in tokens
    int vocab_size;    // V
    int num_layers;    // L
    int num_heads;     // NH
    int channels;      // C
} GPTConfig;

#define NUM_PARAM_TENSORS 16
typedef struct {
    float *wte;      // (V, C)
    float *wpe;      // (maxT, C)
    float *ln1w;     // (L, C)
    float *ln1b;     // (L, C)
    float *qkvw;     // (L, 3C, C)
    float *qkvb;     // (L, 3C)
    float *attprojw; // (L, C, C)
    float *attprojb; // (L, C)
    float *ln2w;     // (L, C)
    float *ln2b;     // (L, C)
    float *fcw;      // (L, 4C, C)
    float *fcb;      // (L, 4C)
    float *fcprojw;  // (L, C, 4C)
    float *fcprojb;  // (L, C)
    float *lnfw;     // (C)
    float *lnfb;     // (C)
} ParameterTensors;

static const char *PARAM_NAMES[NUM_PARAM_TENSORS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"};
// weight decay applies to the 2-D weight matrices only (not biases, not LayerNorm)
static const int PARAM_DECAY[NUM_PARAM_TENSORS] = {1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0};

static void param_sizes(size_t *sizes, const GPTConfig *c) {
    size_t V = c->vocab_size, maxT = c->max_seq_len, L = c->num_layers, C = c->channels;
    size_t s[NUM_PARAM_TENSORS] = {V * C, maxT * C, L * C, L * C, L * 3 * C * C, L * 3 * C,
                                   L * C * C, L * C, L * C, L * C, L * 4 * C * C, L * 4 * C,
                                   L * 4 * C * C, L * C, C, C};
    memcpy(sizes, s, sizeof s);
}

// Carves one allocation into named tensors (same order as the struct's members).
static void point_tensors(float **ptrs, float *memory, const size_t *sizes, int n) {
    for (int i = 0; i < n; i++) {
        ptrs[i] = memory;
        memory += sizes[i];
    }
}

#define NUM_ACT_TENSORS 21
typedef struct {
    float *encoded;   // (B, T, C)
    float *ln1;       // (L, B, T, C)
    float *ln1_mean;  // (L, B, T)
    float *ln1_rstd;  // (L, B, T)
    float *qkv;       // (L, B, T, 3C)
    float *atty;      // (L, B, T, C)
    float *att;       // (L, B, NH, T, T)
    float *attproj;   // (L, B, T, C)
    float *residual2; // (L, B, T, C)
    float *ln2;       // (L, B, T, C)
    float *ln2_mean;  // (L, B, T)
    float *ln2_rstd;  // (L, B, T)
    float *fch;       // (L, B, T, 4C)
    float *fch_gelu;  // (L, B, T, 4C)
    float *fcproj;    // (L, B, T, C)
    float *residual3; // (L, B, T, C)
    float *lnf;       // (B, T, C)
    float *lnf_mean;  // (B, T)
    float *lnf_rstd;  // (B, T)
    float *logits;    // (B, T, V)
    float *probs;     // (B, T, V) softmax(logits / temperature), kept for the log-prob backward
} ActivationTensors;

// The activations of BT positions with A attention weights per head and layer (B·T·T for a
// B×T batch; a packed batch has fewer: SharedPrefixBatch's att_size).
static void act_sizes_rows(size_t *s, const GPTConfig *c, size_t BT, size_t A) {
    size_t L = c->num_layers, C = c->channels, NH = c->num_heads, V = c->vocab_size;
    size_t v[NUM_ACT_TENSORS] = {BT * C, L * BT * C, L * BT, L * BT, L * BT * 3 * C, L * BT * C,
                                 L * NH * A, L * BT * C, L * BT * C, L * BT * C, L * BT, L * BT,
                                 L * BT * 4 * C, L * BT * 4 * C, L * BT * C, L * BT * C, BT * C, BT, BT,
                                 BT * V, BT * V};
    memcpy(s, v, sizeof v);
}

static void act_sizes(size_t *s, const GPTConfig *c, int B, int T) {
    act_sizes_rows(s, c, (size_t)B * T, (size_t)B * T * T);
}

// Key/value cache for incremental decoding: keys k (L, B, C, Tp) stored transposed (for each
// channel, its keys over positions; Tp = maxT rounded up to a multiple of 8) so that a decode
// step computes attention scores exactly as attention_forward does; values v (L, B, maxT, C);
// plus scratch for one position of each of the B sequences.
typedef struct {
    int B;
    int pack;                 // 1: the sampler's speed path (sample_completions_shared; --sampler shared)
    float *k, *v;
    float *x, *ln, *qkv, *atty, *proj, *fch, *fch_gelu, *logits;
    float *mean, *rstd;       // (B) LayerNorm statistics of the step (not kept)
    float *panels;            // the weights packed for matmul_forward_packed (decode_panels_size)
    int packed;               // 1: panels holds the model's current weights (kv_pack_weights)
    // the CUDA build only (the CUDA seam; 0 and NULL on the CPU):
    int on_device;            // 1: all of the above but logits (the sampler's copy) on the GPU
    float *dev_logits;        // (B, V) the logits on the GPU
    int *tokens, *pos;        // (B) the step's token ids and positions on the GPU
} KVCache;

typedef struct {
    GPTConfig config;
    int task;                           // the task it learns: an index in TASKS (its checkpoint records it)
    ParameterTensors params;            // the tensors, pointing into params_memory
    size_t param_sizes[NUM_PARAM_TENSORS];
    float *params_memory;               // all parameters, one allocation
    size_t num_parameters;
    ParameterTensors grads;             // their gradients, pointing into grads_memory
    float *grads_memory;
    float *m_memory, *v_memory;         // AdamW first and second moments
    int max_batch;                      // activations are allocated for (max_batch, maxT)
    ActivationTensors acts;             // pointing into acts_memory (acts_capacity floats)
    float *acts_memory;
    size_t acts_capacity;
    ActivationTensors grads_acts;       // their gradients, pointing into grads_acts_memory
    float *grads_acts_memory;
    int B, T;                           // shape of the last forward pass (B = 0: a shared-prefix batch
                                        // of T rows, gpt_set_rows)
    size_t att_size;                    // attention weights per head and layer of that pass (B·T·T)
    // the CUDA build only (the CUDA seam; 0 and NULL on the CPU):
    int on_device;                      // 1: every array above lives in GPU memory
    int *dev_inputs, *dev_targets;      // (max_batch, maxT) the batch's token ids and targets
    float *dev_logp, *dev_dlogp;        // (max_batch, maxT) log-probs and their gradients
    unsigned char *dev_allowed;         // (V) the token mask of the log-probs
} GPT;

// The CUDA seam (after the training loop) puts models and KV caches in GPU memory in the CUDA
// build and defines these hooks there; the CPU build's hook is its last argument, doing nothing.
#ifdef GRPO_CUDA
#define GPU_HOOK(type, name, params, cpu) static type name params;
#else
#define GPU_HOOK(type, name, params, cpu) static type name params { cpu; }
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
typedef struct AdamWConfig AdamWConfig;
GPU_HOOK(void, gpu_adopt_model, (GPT *m), )   // moves a model just built on the host to the GPU (CUDA on)
GPU_HOOK(int, gpu_free_model, (GPT *m), return 0)   // frees a model that lives on the GPU; 1: it did
GPU_HOOK(const int *, gpu_inputs, (GPT *m, const int *inputs, size_t n), return inputs)  // the ids where m is
// the embedding's backward on the GPU (dres (B,T,C) into dwte, dwpe): 1 when m lives there
GPU_HOOK(int, gpu_encoder_backward, (GPT *m, float *dwte, float *dwpe, const float *dres, int B, int T,
                                     int C), return 0)
GPU_HOOK(int, gpu_build_kvcache, (KVCache *kv, const GPTConfig *c, int B), return 0)   // 1: built on the GPU
GPU_HOOK(int, gpu_free_kvcache, (KVCache *kv), return 0)                 // 1: it was on the GPU, freed
// a decode step's B token ids and positions to the GPU, *logits pointed at the GPU's (B,V)
GPU_HOOK(void, gpu_decode_inputs, (GPT *m, KVCache *kv, const int **tokens, const int **pos, float **logits,
                                   int B), )
GPU_HOOK(void, gpu_decode_logits, (GPT *m, KVCache *kv, const float *logits, int B), )  // kv->logits from GPU
// gpt_logprob_forward / _backward, clip_grad_norm and adamw_update for m on the GPU; 1: done there
GPU_HOOK(int, gpu_logprob_forward, (GPT *m, float *logp, const int *targets, int N, float temperature,
                                    const unsigned char *allowed), return 0)
GPU_HOOK(int, gpu_logprob_backward, (GPT *m, const int *targets, const float *dlogp, int N,
                                     float temperature), return 0)
GPU_HOOK(int, gpu_clip_grad_norm, (GPT *m, float max_norm, float *norm), return 0)
GPU_HOOK(int, gpu_adamw_update, (GPT *m, const AdamWConfig *o, float lr, int t), return 0)
GPU_HOOK(void, gpu_synchronize, (GPT *m), )   // waits for m's queued GPU work
#pragma GCC diagnostic pop

/* build_gpt: allocates parameters, gradients, AdamW state and activations for batches of
   up to max_batch sequences of up to maxT tokens. Parameters are initialised GPT-2 style:
   N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)), LayerNorm weight 1 and bias 0. */
static void build_gpt(GPT *m, GPTConfig cfg, int max_batch, uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->config = cfg;
    m->max_batch = max_batch;
    param_sizes(m->param_sizes, &cfg);
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) m->num_parameters += m->param_sizes[i];
    size_t np = m->num_parameters;
    m->params_memory = (float *)mallocCheck(np * sizeof(float));
    m->grads_memory = (float *)callocCheck(np, sizeof(float));
    m->m_memory = (float *)callocCheck(np, sizeof(float));
    m->v_memory = (float *)callocCheck(np, sizeof(float));
    point_tensors((float **)&m->params, m->params_memory, m->param_sizes, NUM_PARAM_TENSORS);
    point_tensors((float **)&m->grads, m->grads_memory, m->param_sizes, NUM_PARAM_TENSORS);
    size_t as[NUM_ACT_TENSORS];
    act_sizes(as, &cfg, max_batch, cfg.max_seq_len);
    for (int i = 0; i < NUM_ACT_TENSORS; i++) m->acts_capacity += as[i];
    m->acts_memory = (float *)mallocCheck(m->acts_capacity * sizeof(float));
    m->grads_acts_memory = (float *)mallocCheck(m->acts_capacity * sizeof(float));
    Rng rng;
    rng_seed(&rng, seed, 0x1417);
    float *p = m->params_memory;
    float proj_std = 0.02f / sqrtf(2.0f * cfg.num_layers);
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        const char *name = PARAM_NAMES[t];
        int is_ln_w = !strcmp(name, "ln1w") || !strcmp(name, "ln2w") || !strcmp(name, "lnfw");
        float std = (!strcmp(name, "attprojw") || !strcmp(name, "fcprojw")) ? proj_std : 0.02f;
        for (size_t i = 0; i < m->param_sizes[t]; i++, p++)
            *p = PARAM_DECAY[t] ? std * rng_normal(&rng) : (is_ln_w ? 1.0f : 0.0f);
    }
    gpu_adopt_model(m);   // the CUDA build: initialised here, then moved
}

static void free_gpt(GPT *m) {
    if (gpu_free_model(m)) return;
    free(m->params_memory);
    free(m->grads_memory);
    free(m->m_memory);
    free(m->v_memory);
    free(m->acts_memory);
    free(m->grads_acts_memory);
}

// Points the activation structs at the buffers for a batch of shape (B, T).
static void gpt_set_shape(GPT *m, int B, int T) {
    if (B > m->max_batch || T > m->config.max_seq_len || B < 1 || T < 1) {
        fprintf(stderr, "error: batch of %d x %d tokens exceeds the model's %d x %d\n",
                B, T, m->max_batch, m->config.max_seq_len);
        exit(EXIT_INPUT);
    }
    size_t as[NUM_ACT_TENSORS];
    act_sizes(as, &m->config, B, T);
    point_tensors((float **)&m->acts, m->acts_memory, as, NUM_ACT_TENSORS);
    point_tensors((float **)&m->grads_acts, m->grads_acts_memory, as, NUM_ACT_TENSORS);
    m->B = B; m->T = T;
    m->att_size = (size_t)B * T * T;
}

// The positions of the last shape set: B·T, or a packed batch's rows (gpt_set_rows).
static size_t gpt_positions(const GPT *m) {
    return m->B ? (size_t)m->B * m->T : (size_t)m->T;
}

// The shared-prefix batch (Speed paths): sequences packed as their prefix trie, one row per distinct
// prefix, so that a prefix several sequences share is computed once. The trunk runs on it row by
// row; these two are the only layers that differ.
typedef struct SharedPrefixBatch SharedPrefixBatch;
// the embedding of pk's rows, each at its own position: out (rows, C)
static void spb_encoder_forward(float *out, const SharedPrefixBatch *pk, const float *wte, const float *wpe, int C);
// attention_forward on pk's rows: each row attends to the rows on its path from the root
static void spb_attention_forward(float *out, float *att, const float *inp, const SharedPrefixBatch *pk, int C,
                                  int NH);
static void spb_attention_backward(float *dinp, float *datt, const float *dout, const float *inp,
                                   const float *att, const SharedPrefixBatch *pk, int C, int NH);
static void spb_encoder_backward(float *dwte, float *dwpe, const float *dres, const SharedPrefixBatch *pk, int C);

/* trunk_forward: the transformer without its LM head on the shape gpt_set_shape (B×T, inputs
   (B,T) token ids) or gpt_set_rows (pk's packed rows; inputs is pk->token) set → acts.lnf
   (positions, C), the final LayerNorm's output. Every layer but the embedding (a packed row has
   its own position) and attention (a packed row attends to its root path) is the same code on
   either shape, row by row. */
static void trunk_forward(GPT *m, const int *inputs, const SharedPrefixBatch *pk) {
    GPTConfig c = m->config;
    int L = c.num_layers, C = c.channels, NH = c.num_heads;
    int B = m->B, T = m->T;
    size_t BT = gpt_positions(m);
    size_t AL = (size_t)NH * m->att_size;   // attention weights per layer
    ParameterTensors p = m->params;
    ActivationTensors a = m->acts;
    if (pk) spb_encoder_forward(a.encoded, pk, p.wte, p.wpe, C);
    else LAYER(m, encoder_forward)(a.encoded, gpu_inputs(m, inputs, BT), p.wte, p.wpe, B, T, C);
    for (int l = 0; l < L; l++) {
        float *residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * BT * C;
        float *ln1 = a.ln1 + l * BT * C, *qkv = a.qkv + l * BT * 3 * C, *atty = a.atty + l * BT * C;
        float *att = a.att + l * AL, *attproj = a.attproj + l * BT * C;
        float *res2 = a.residual2 + l * BT * C, *ln2 = a.ln2 + l * BT * C;
        float *fch = a.fch + l * BT * 4 * C, *fchg = a.fch_gelu + l * BT * 4 * C;
        float *fcproj = a.fcproj + l * BT * C, *res3 = a.residual3 + l * BT * C;
        LAYER(m, layernorm_forward)(ln1, a.ln1_mean + l * BT, a.ln1_rstd + l * BT, residual,
                                    p.ln1w + l * C, p.ln1b + l * C, BT, C);
        LAYER(m, matmul_forward)(qkv, ln1, p.qkvw + (size_t)l * 3 * C * C, p.qkvb + l * 3 * C, BT, C, 3 * C);
        if (pk) spb_attention_forward(atty, att, qkv, pk, C, NH);
        else LAYER(m, attention_forward)(atty, att, qkv, B, T, C, NH);
        LAYER(m, matmul_forward)(attproj, atty, p.attprojw + (size_t)l * C * C, p.attprojb + l * C, BT, C, C);
        LAYER(m, residual_forward)(res2, residual, attproj, BT * C);
        LAYER(m, layernorm_forward)(ln2, a.ln2_mean + l * BT, a.ln2_rstd + l * BT, res2,
                                    p.ln2w + l * C, p.ln2b + l * C, BT, C);
        LAYER(m, matmul_forward)(fch, ln2, p.fcw + (size_t)l * 4 * C * C, p.fcb + l * 4 * C, BT, C, 4 * C);
        LAYER(m, gelu_forward)(fchg, fch, BT * 4 * C);
        LAYER(m, matmul_forward)(fcproj, fchg, p.fcprojw + (size_t)l * 4 * C * C, p.fcprojb + l * C, BT, 4 * C, C);
        LAYER(m, residual_forward)(res3, res2, fcproj, BT * C);
    }
    LAYER(m, layernorm_forward)(a.lnf, a.lnf_mean, a.lnf_rstd, a.residual3 + (L - 1) * BT * C,
                                p.lnfw, p.lnfb, BT, C);
}

// The LM head (tied to wte): acts.logits (positions, V) = acts.lnf (positions, C) · wteᵀ.
static void lm_head_forward(GPT *m) {
    LAYER(m, matmul_forward)(m->acts.logits, m->acts.lnf, m->params.wte, NULL, gpt_positions(m),
                             m->config.channels, m->config.vocab_size);
}

/* gpt_forward_trunk: inputs (B,T) token ids → acts.lnf (B,T,C), the final LayerNorm's output:
   the transformer without its LM head (gpt_forward adds the head; the critic's value head
   reads acts.lnf instead). */
static void gpt_forward_trunk(GPT *m, const int *inputs, int B, int T) {
    gpt_set_shape(m, B, T);
    trunk_forward(m, inputs, NULL);
}

/* gpt_forward: inputs (B,T) token ids → acts.logits (B,T,V), logits at position t predict
   token t+1. Sequences shorter than T are padded at the end; causal attention means the
   padding never changes the logits of earlier positions. */
static void gpt_forward(GPT *m, const int *inputs, int B, int T) {
    gpt_forward_trunk(m, inputs, B, T);
    lm_head_forward(m);
}

static void gpt_zero_grad(GPT *m) {
    LAYER(m, memset_zero)(m->grads_memory, m->num_parameters * sizeof(float));
}

// Sets to zero the activation gradients that a backward pass adds into (+=): ∂loss/∂lnf, the
// residual stream's (dres, in the last layer's residual3: trunk_backward) and each layer's
// ln1, qkv, atty, ln2, fch and fch_gelu. The others are written before they are read
// (dlogits, the attention's scratch datt) or not used at all.
static void gpt_zero_act_grads(GPT *m) {
    size_t BT = gpt_positions(m), C = m->config.channels, L = m->config.num_layers;
    ActivationTensors d = m->grads_acts;
    float *t[8] = {d.lnf, d.residual3 + (L - 1) * BT * C, d.ln1, d.qkv, d.atty, d.ln2, d.fch, d.fch_gelu};
    size_t n[8] = {BT * C, BT * C, L * BT * C, L * BT * 3 * C, L * BT * C, L * BT * C, L * BT * 4 * C,
                   L * BT * 4 * C};
    for (int i = 0; i < 8; i++) LAYER(m, memset_zero)(t[i], n[i] * sizeof(float));
}

/* trunk_backward: given grads_acts.lnf (positions, C) = ∂loss/∂(the final LayerNorm's output)
   of the last forward pass (trunk_forward on the same shape, B×T or pk's rows), every other
   activation gradient zero (gpt_zero_act_grads), accumulates ∂loss/∂θ of the trunk (every
   parameter; wte through the embedding only) into m->grads.
   The residual stream's gradient lives in one buffer, dres, from the final LayerNorm down to
   the embeddings: a residual connection passes its gradient on unchanged to both branches, so
   each block reads dres as the gradient of its two projections and its LayerNorms add into
   it. (This replaces residual_backward's copies; the values and their order of addition are
   the same.) */
static void trunk_backward(GPT *m, const int *inputs, const SharedPrefixBatch *pk) {
    GPTConfig c = m->config;
    int B = m->B;
    int T = m->T;
    int L = c.num_layers;
    int C = c.channels;
    int NH = c.num_heads;
    size_t BT = gpt_positions(m);
    size_t AL = (size_t)NH * m->att_size;   // attention weights per layer
    ParameterTensors p = m->params;
    ParameterTensors g = m->grads;
    ActivationTensors a = m->acts;
    ActivationTensors d = m->grads_acts;
    float *dres = d.residual3 + (L - 1) * BT * C;
    LAYER(m, layernorm_backward)(dres, g.lnfw, g.lnfb, d.lnf, a.residual3 + (L - 1) * BT * C, p.lnfw,
                                 a.lnf_mean, a.lnf_rstd, BT, C);
    for (int l = L - 1; l >= 0; l--) {
        float *residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * BT * C;
        size_t o1 = l * BT * C;
        size_t o3 = l * BT * 3 * C;
        size_t o4 = l * BT * 4 * C;
        size_t oa = l * AL;
        size_t w1 = (size_t)l * C * C;
        // MLP: dres is ∂loss/∂fcproj; then ln2 adds its part, making dres ∂loss/∂residual2
        LAYER(m, matmul_backward)(d.fch_gelu + o4, g.fcprojw + 4 * w1, g.fcprojb + l * C, dres,
                                  a.fch_gelu + o4, p.fcprojw + 4 * w1, BT, 4 * C, C);
        LAYER(m, gelu_backward)(d.fch + o4, a.fch + o4, d.fch_gelu + o4, BT * 4 * C);
        LAYER(m, matmul_backward)(d.ln2 + o1, g.fcw + 4 * w1, g.fcb + l * 4 * C, d.fch + o4, a.ln2 + o1,
                                  p.fcw + 4 * w1, BT, C, 4 * C);
        LAYER(m, layernorm_backward)(dres, g.ln2w + l * C, g.ln2b + l * C, d.ln2 + o1, a.residual2 + o1,
                                     p.ln2w + l * C, a.ln2_mean + l * BT, a.ln2_rstd + l * BT, BT, C);
        // attention: dres is ∂loss/∂attproj; then ln1 adds its part: ∂loss/∂(the block's input)
        LAYER(m, matmul_backward)(d.atty + o1, g.attprojw + w1, g.attprojb + l * C, dres, a.atty + o1,
                                  p.attprojw + w1, BT, C, C);
        if (pk)
            spb_attention_backward(d.qkv + o3, d.att + oa, d.atty + o1, a.qkv + o3, a.att + oa, pk, C, NH);
        else
            LAYER(m, attention_backward)(d.qkv + o3, d.att + oa, d.atty + o1, a.qkv + o3, a.att + oa, B, T, C,
                                         NH);
        LAYER(m, matmul_backward)(d.ln1 + o1, g.qkvw + 3 * w1, g.qkvb + l * 3 * C, d.qkv + o3, a.ln1 + o1,
                                  p.qkvw + 3 * w1, BT, C, 3 * C);
        LAYER(m, layernorm_backward)(dres, g.ln1w + l * C, g.ln1b + l * C, d.ln1 + o1, residual,
                                     p.ln1w + l * C, a.ln1_mean + l * BT, a.ln1_rstd + l * BT, BT, C);
    }
    if (gpu_encoder_backward(m, g.wte, g.wpe, dres, B, T, C)) return;
    if (pk) spb_encoder_backward(g.wte, g.wpe, dres, pk, C);
    else encoder_backward(g.wte, g.wpe, dres, inputs, B, T, C);
}

// lm_head_forward's backward: grads_acts.lnf = dlogits · wte, and dlogits' part of dwte; every
// other activation gradient set to zero first (gpt_zero_act_grads), for trunk_backward.
static void lm_head_backward(GPT *m) {
    gpt_zero_act_grads(m);
    LAYER(m, matmul_backward)(m->grads_acts.lnf, m->grads.wte, NULL, m->grads_acts.logits, m->acts.lnf,
                              m->params.wte, gpt_positions(m), m->config.channels, m->config.vocab_size);
}

// Refuses a padded backward pass after a packed forward (their activations are laid out apart).
static void refuse_packed(const GPT *m, const char *what) {
    if (m->B == 0) fail_at(__FILE__, __LINE__, what, "call gpt_backward_spb; please report this");
}

/* gpt_backward_trunk: given grads_acts.lnf (B,T,C) = ∂loss/∂(the final LayerNorm's output) of
   the last forward pass (gpt_forward_trunk or gpt_forward), every other activation gradient
   zero (gpt_zero_act_grads), accumulates ∂loss/∂θ of the trunk into m->grads (trunk_backward):
   the critic's value head starts here. */
static void gpt_backward_trunk(GPT *m, const int *inputs) {
    refuse_packed(m, "gpt_backward_trunk after a packed forward");
    trunk_backward(m, inputs, NULL);
}

/* gpt_backward: given grads_acts.logits (B,T,V) = ∂loss/∂logits for the last forward pass,
   accumulates ∂loss/∂θ into m->grads (call gpt_zero_grad first for a fresh step): the LM head
   (tied to wte) gives ∂loss/∂lnf, and the trunk goes on from there. */
static void gpt_backward(GPT *m, const int *inputs) {
    refuse_packed(m, "gpt_backward after a packed forward");
    lm_head_backward(m);
    trunk_backward(m, inputs, NULL);
}

// ----------------------------------------------------------------------------
// Incremental decoding: a key/value cache, one new token per sequence per call


// Packed decode (Speed paths): the decode step's weights packed once per sampling call, in the
// order gpt_decode_step's matmuls read them (the same sums as packing per matmul).
static size_t decode_panels_size(const GPTConfig *c);   // the floats the packed weights take
static void kv_pack_weights(KVCache *kv, const GPT *m); // kv->panels = m's weights packed; kv->packed = 1

static void build_kvcache(KVCache *kv, const GPTConfig *c, int B) {
    size_t L = c->num_layers, C = c->channels, T = c->max_seq_len, V = c->vocab_size, Tp = (T + 7) / 8 * 8;
    memset(kv, 0, sizeof *kv);
    if (gpu_build_kvcache(kv, c, B)) return;   // the CUDA build: the same buffers in GPU memory
    kv->B = B;
    kv->pack = 1;
    kv->k = (float *)callocCheck(L * B * C * Tp, sizeof(float));  // zeros: padding is read, never used
    kv->v = (float *)mallocCheck(L * B * T * C * sizeof(float));
    kv->x = (float *)mallocCheck((size_t)B * C * sizeof(float));
    kv->ln = (float *)mallocCheck((size_t)B * C * sizeof(float));
    kv->qkv = (float *)mallocCheck((size_t)B * 3 * C * sizeof(float));
    kv->atty = (float *)mallocCheck((size_t)B * C * sizeof(float));
    kv->proj = (float *)mallocCheck((size_t)B * C * sizeof(float));
    kv->fch = (float *)mallocCheck((size_t)B * 4 * C * sizeof(float));
    kv->fch_gelu = (float *)mallocCheck((size_t)B * 4 * C * sizeof(float));
    kv->logits = (float *)mallocCheck((size_t)B * V * sizeof(float));
    kv->mean = (float *)mallocCheck((size_t)B * sizeof(float));
    kv->rstd = (float *)mallocCheck((size_t)B * sizeof(float));
    kv->panels = (float *)mallocCheck(decode_panels_size(c) * sizeof(float));
    kv->packed = 0;
}

static void free_kvcache(KVCache *kv) {
    if (gpu_free_kvcache(kv)) return;
    free(kv->k); free(kv->v); free(kv->x); free(kv->ln); free(kv->qkv); free(kv->atty);
    free(kv->proj); free(kv->fch); free(kv->fch_gelu); free(kv->logits); free(kv->mean); free(kv->rstd);
    free(kv->panels);
}

// The three steps of a decode step that have no counterpart in the full forward. The cache of
// one layer: keys kt (kv->B, C, Tp) transposed, values v (kv->B, maxT, C), Tp = maxT rounded
// up to a multiple of 8; sequence b is at position pos[b].

// out (B,C) = wte[tokens[b]] + wpe[pos[b]]: one new token per sequence, each at its own position
static void encoder_forward_pos(float *out, const int *tokens, const int *pos, const float *wte,
                                const float *wpe, int B, int C) {
    for (int b = 0; b < B; b++)
        for (int i = 0; i < C; i++)
            out[(size_t)b * C + i] = wte[(size_t)tokens[b] * C + i] + wpe[(size_t)pos[b] * C + i];
}

// appends the key and value of sequence b's position pos[b], from qkv (B,3C), to the cache
static void kv_append(float *kt, float *v, const float *qkv, const int *pos, int B, int C, int maxT) {
    int Tp = (maxT + 7) / 8 * 8;
    #pragma omp parallel for
    for (int b = 0; b < B; b++) {
        float *k = kt + (size_t)b * C * Tp;
        for (int i = 0; i < C; i++) k[(size_t)i * Tp + pos[b]] = qkv[(size_t)b * 3 * C + C + i];
        memcpy(v + ((size_t)b * maxT + pos[b]) * C, qkv + (size_t)b * 3 * C + 2 * C, C * sizeof(float));
    }
}

// atty (B,C): attention of each sequence's new query (in qkv (B,3C)) over its cached keys
// 0..pos[b], with the arithmetic of attention_forward
static void attention_decode(float *atty, const float *kt, const float *v, const float *qkv, const int *pos,
                             int B, int C, int NH, int maxT) {
    int hs = C / NH, Tp = (maxT + 7) / 8 * 8;
    float scale = 1.0f / sqrtf((float)hs);
    #pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *k = kt + ((size_t)b * C + h * hs) * Tp;
            const float *vb = v + (size_t)b * maxT * C + h * hs;
            float s[Tp], maxv = -FLT_MAX, sum = 0.0f;
            int t = pos[b];
            attn_scores(s, qkv + (size_t)b * 3 * C + h * hs, k, hs, Tp, (t + 8) / 8 * 8, scale);
            for (int t2 = 0; t2 <= t; t2++) if (s[t2] > maxv) maxv = s[t2];
            #pragma omp simd reduction(+:sum)
            for (int t2 = 0; t2 <= t; t2++) { s[t2] = exp_simd(s[t2] - maxv); sum += s[t2]; }
            float inv = 1.0f / sum;
            for (int t2 = 0; t2 <= t; t2++) s[t2] *= inv;
            attn_rows(atty + (size_t)b * C + h * hs, 0, s, 1, vb, C, 0, t + 1, hs);
        }
}

// One matmul of a decode step: matmul_forward, or on the weights the sampler packed once for the
// whole sampling call (*panels, then moved past them; Speed paths: packed decode), the same sums
static void decode_matmul(GPT *m, const float **panels, float *out, const float *inp, const float *weight,
                          const float *bias, int B, int C, int OC);

/* gpt_decode_step: sequence b (0 <= b < B <= kv->B) consumes token tokens[b] at position
   pos[b] (its keys/values for positions < pos[b] must already be in the cache); writes
   kv->logits (B,V), the logits predicting position pos[b]+1. Same arithmetic as
   gpt_forward, so the logits agree with the full forward. */
static void gpt_decode_step(GPT *m, KVCache *kv, const int *tokens, const int *pos, int B) {
    GPTConfig c = m->config;
    int L = c.num_layers, C = c.channels, NH = c.num_heads, V = c.vocab_size, maxT = c.max_seq_len;
    int Tp = (maxT + 7) / 8 * 8;
    ParameterTensors p = m->params;
    float *logits = kv->logits;
    const float *panels = kv->packed ? kv->panels : NULL;   // NULL: each matmul packs its own
    gpu_decode_inputs(m, kv, &tokens, &pos, &logits, B);   // the CUDA build: they go to the GPU
    LAYER(m, encoder_forward_pos)(kv->x, tokens, pos, p.wte, p.wpe, B, C);
    for (int l = 0; l < L; l++) {
        float *kt = kv->k + (size_t)l * kv->B * C * Tp, *v = kv->v + (size_t)l * kv->B * maxT * C;
        LAYER(m, layernorm_forward)(kv->ln, kv->mean, kv->rstd, kv->x, p.ln1w + l * C, p.ln1b + l * C, B, C);
        decode_matmul(m, &panels, kv->qkv, kv->ln, p.qkvw + (size_t)l * 3 * C * C, p.qkvb + l * 3 * C, B, C, 3 * C);
        LAYER(m, kv_append)(kt, v, kv->qkv, pos, B, C, maxT);
        LAYER(m, attention_decode)(kv->atty, kt, v, kv->qkv, pos, B, C, NH, maxT);
        decode_matmul(m, &panels, kv->proj, kv->atty, p.attprojw + (size_t)l * C * C, p.attprojb + l * C, B, C, C);
        LAYER(m, residual_forward)(kv->x, kv->x, kv->proj, (size_t)B * C);
        LAYER(m, layernorm_forward)(kv->ln, kv->mean, kv->rstd, kv->x, p.ln2w + l * C, p.ln2b + l * C, B, C);
        decode_matmul(m, &panels, kv->fch, kv->ln, p.fcw + (size_t)l * 4 * C * C, p.fcb + l * 4 * C, B, C, 4 * C);
        LAYER(m, gelu_forward)(kv->fch_gelu, kv->fch, (size_t)B * 4 * C);
        decode_matmul(m, &panels, kv->proj, kv->fch_gelu, p.fcprojw + (size_t)l * 4 * C * C, p.fcprojb + l * C,
                      B, 4 * C, C);
        LAYER(m, residual_forward)(kv->x, kv->x, kv->proj, (size_t)B * C);
    }
    LAYER(m, layernorm_forward)(kv->ln, kv->mean, kv->rstd, kv->x, p.lnfw, p.lnfb, B, C);
    decode_matmul(m, &panels, logits, kv->ln, p.wte, NULL, B, C, V);
    gpu_decode_logits(m, kv, logits, B);   // the CUDA build: kv->logits from the GPU
}

/* kv_copy_positions: slot dst's cache of positions [0, n) becomes slot src's, in every layer.
   The sampler gives a group's members their shared prompt this way, and keeps the unfinished
   sequences in the first slots (a decode step computes slots 0..B-1). */
static void kv_copy_positions(KVCache *kv, const GPTConfig *c, int dst, int src, int n) {
    size_t C = c->channels;
    size_t maxT = c->max_seq_len;
    size_t Tp = (maxT + 7) / 8 * 8;
    size_t kd = (size_t)dst * C * Tp;
    size_t ks = (size_t)src * C * Tp;
    size_t vd = (size_t)dst * maxT * C;
    size_t vs = (size_t)src * maxT * C;
    for (int l = 0; l < c->num_layers; l++) {
        float *kt = kv->k + (size_t)l * kv->B * C * Tp;
        float *v = kv->v + (size_t)l * kv->B * maxT * C;
        // keys are transposed: positions [0, n) of each channel's row
        for (size_t i = 0; i < C; i++)
            memcpy(kt + kd + i * Tp, kt + ks + i * Tp, (size_t)n * sizeof(float));
        memcpy(v + vd, v + vs, (size_t)n * C * sizeof(float));
    }
}

// ----------------------------------------------------------------------------
// Log-probabilities: with temperature, logp = log_softmax(logits / temperature)[token]

/* softmax_temperature: probs (V) = softmax(z / temperature) over the allowed tokens
   (allowed == NULL: all V; a masked token gets probability 0). Returns log Σ exp(z/T − max)
   and writes *maxv = max z/T, so log p(v) = (z[v]/T − *maxv) − return value. The sampler
   and the training log-probs both go through this one function. */
static float softmax_temperature(float *probs, float *maxv, const float *z, int V,
                                 float temperature, const unsigned char *allowed) {
    float inv_t = 1.0f / temperature, mx = -FLT_MAX, sum = 0.0f;
    for (int v = 0; v < V; v++) if ((!allowed || allowed[v]) && z[v] * inv_t > mx) mx = z[v] * inv_t;
    for (int v = 0; v < V; v++) {
        probs[v] = (!allowed || allowed[v]) ? expf(z[v] * inv_t - mx) : 0.0f;
        sum += probs[v];
    }
    float inv = 1.0f / sum;
    for (int v = 0; v < V; v++) probs[v] *= inv;
    *maxv = mx;
    return logf(sum);
}

/* logprob_forward: logits (N,V), targets (N) token ids (a negative id marks a position
   that is not scored: logp 0, probs row 0). Writes logp (N) in nats and probs (N,V) =
   softmax(logits / temperature) for the backward pass. Stable for any finite logits:
   logp = (z_target − max z) − log Σ exp(z − max z), z = logits / temperature.
   allowed (V) masks tokens out of the softmax (NULL: none masked). */
static void logprob_forward(float *logp, float *probs, const float *logits, const int *targets,
                            int N, int V, float temperature, const unsigned char *allowed) {
    #pragma omp parallel for
    for (int n = 0; n < N; n++) {
        const float *z = logits + (size_t)n * V;
        float *pr = probs + (size_t)n * V;
        if (targets[n] < 0) {   // not scored
            logp[n] = 0.0f;
            memset(pr, 0, V * sizeof(float));
            continue;
        }
        float maxv, logsum = softmax_temperature(pr, &maxv, z, V, temperature, allowed);
        logp[n] = (z[targets[n]] * (1.0f / temperature) - maxv) - logsum;
    }
}

/* logprob_backward: dlogits (N,V) = dlogp[n] · (onehot(target) − probs) / temperature,
   the gradient through log_softmax(logits / T). Rows with a negative target get 0.
   Overwrites dlogits (the log-prob is the only consumer of the logits). */
static void logprob_backward(float *dlogits, const float *probs, const int *targets,
                             const float *dlogp, int N, int V, float temperature) {
    float inv_t = 1.0f / temperature;
    #pragma omp parallel for
    for (int n = 0; n < N; n++) {
        float *d = dlogits + (size_t)n * V;
        if (targets[n] < 0) {
            memset(d, 0, V * sizeof(float));
            continue;
        }
        const float *pr = probs + (size_t)n * V;
        float g = dlogp[n] * inv_t;
        for (int v = 0; v < V; v++) d[v] = -g * pr[v];
        d[targets[n]] += g;
    }
}

/* gpt_logprob_forward / gpt_logprob_backward: logprob_forward and logprob_backward on the
   model's last forward pass (acts.logits, acts.probs, grads_acts.logits), N = B·T positions;
   logp, targets, dlogp and allowed are host arrays. On the GPU, targets (and the mask) go
   down and the N log-probs come back; the backward sends the N gradients down. */
static void gpt_logprob_forward(GPT *m, float *logp, const int *targets, int N, float temperature,
                                const unsigned char *allowed) {
    if (gpu_logprob_forward(m, logp, targets, N, temperature, allowed)) return;
    logprob_forward(logp, m->acts.probs, m->acts.logits, targets, N, m->config.vocab_size, temperature,
                    allowed);
}

static void gpt_logprob_backward(GPT *m, const int *targets, const float *dlogp, int N, float temperature) {
    if (gpu_logprob_backward(m, targets, dlogp, N, temperature)) return;
    logprob_backward(m->grads_acts.logits, m->acts.probs, targets, dlogp, N, m->config.vocab_size,
                     temperature);
}

// ----------------------------------------------------------------------------
// Optimizer: AdamW (Loshchilov & Hutter 2019; torch.optim.AdamW), global norm clipping

struct AdamWConfig {
    float lr;            // peak learning rate
    float beta1, beta2, eps;
    float weight_decay;  // decoupled, on 2-D weights only (PARAM_DECAY)
    float grad_clip;     // max global L2 norm of the gradient; 0 disables clipping
    int warmup_steps;    // linear warm-up to lr: step s (0-based) gets lr·(s+1)/warmup_steps
    int total_steps;     // schedule length
    int schedule;        // 0 cosine to lr*min_lr_frac, 1 linear to lr*min_lr_frac, 2 constant
    float min_lr_frac;
};

/* lr_at: learning rate of optimizer step `step` (0-based): linear warm-up over
   warmup_steps, then cosine or linear decay to lr·min_lr_frac at total_steps. */
static float lr_at(const AdamWConfig *o, int step) {
    if (step < o->warmup_steps) return o->lr * (step + 1) / (float)o->warmup_steps;
    if (o->schedule == 2 || o->total_steps <= o->warmup_steps) return o->lr;
    float frac = (float)(step - o->warmup_steps) / (float)(o->total_steps - o->warmup_steps);
    if (frac > 1.0f) frac = 1.0f;
    float decay = o->schedule == 0 ? 0.5f * (1.0f + cosf((float)M_PI * frac)) : 1.0f - frac;
    return o->lr * (o->min_lr_frac + (1.0f - o->min_lr_frac) * decay);
}

/* grad_sum_squares: Σ g² over grads (n), summed in double: each block of CLIP_BLOCK gradients
   in 8 interleaved sums (vectorized), the blocks' sums then added in order, so the result does
   not depend on the thread count. */
#define CLIP_BLOCK 16384
static double grad_sum_squares(const float *grads, size_t n) {
    int nblocks = (int)((n + CLIP_BLOCK - 1) / CLIP_BLOCK);
    double *part = (double *)mallocCheck((size_t)nblocks * sizeof(double));
    #pragma omp parallel for
    for (int k = 0; k < nblocks; k++) {
        size_t i0 = (size_t)k * CLIP_BLOCK;
        size_t len = n - i0 < CLIP_BLOCK ? n - i0 : CLIP_BLOCK;
        double acc[8] = {0};
        size_t len8 = len / 8 * 8;
        for (size_t i = 0; i < len8; i += 8)
            #pragma omp simd
            for (int j = 0; j < 8; j++) acc[j] += (double)grads[i0 + i + j] * grads[i0 + i + j];
        for (size_t i = len8; i < len; i++) acc[i - len8] += (double)grads[i0 + i] * grads[i0 + i];
        part[k] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    }
    double ss = 0.0;
    for (int k = 0; k < nblocks; k++) ss += part[k];
    free(part);
    return ss;
}

/* clip_grad_norm: global L2 norm over all of m's gradients (grad_sum_squares); scales them by
   max_norm / (norm + 1e-6) when that is < 1 (as torch.nn.utils.clip_grad_norm_). Returns the
   norm before clipping (NaN/Inf if any gradient is not finite). */
static float clip_grad_norm(GPT *m, float max_norm) {
    float gpu_norm;
    if (gpu_clip_grad_norm(m, max_norm, &gpu_norm)) return gpu_norm;
    float *grads = m->grads_memory;
    size_t n = m->num_parameters;
    float norm = (float)sqrt(grad_sum_squares(grads, n));
    if (max_norm > 0.0f && isfinite(norm)) {
        float coef = max_norm / (norm + 1e-6f);
        if (coef < 1.0f) {
            #pragma omp parallel for
            for (size_t i = 0; i < n; i++) grads[i] *= coef;
        }
    }
    return norm;
}

/* adamw_update: one AdamW step t (1-based, for bias correction) with learning rate lr:
   m = β1 m + (1−β1) g; v = β2 v + (1−β2) g²; θ −= lr (m̂ / (sqrt(v̂) + eps) + wd θ). */
static void adamw_update(GPT *m, const AdamWConfig *o, float lr, int t) {
    if (gpu_adamw_update(m, o, lr, t)) return;
    /* BEGIN SOLUTION: adamw_update */
    float bc1 = 1.0f - powf(o->beta1, (float)t);
    float bc2 = 1.0f - powf(o->beta2, (float)t);
    float beta1 = o->beta1;
    float beta2 = o->beta2;
    float eps = o->eps;
    float *params = m->params_memory;
    float *grads = m->grads_memory;
    float *mom = m->m_memory;
    float *vel = m->v_memory;
    // one parallel region for all the tensors; no barrier between them (each element is its own)
    #pragma omp parallel
    {
        size_t off = 0;
        for (int k = 0; k < NUM_PARAM_TENSORS; k++) {
            float wd = PARAM_DECAY[k] ? o->weight_decay : 0.0f;
            size_t n = m->param_sizes[k];
            #pragma omp for nowait
            for (size_t i = off; i < off + n; i++) {
                float g = grads[i];
                float mi = beta1 * mom[i] + (1.0f - beta1) * g;
                float vi = beta2 * vel[i] + (1.0f - beta2) * g * g;
                mom[i] = mi;
                vel[i] = vi;
                float p = params[i] * (1.0f - lr * wd);
                params[i] = p - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
            }
            off += n;
        }
    }
    /* END SOLUTION: adamw_update */
}

// ----------------------------------------------------------------------------
// Task and verifier: countdown (the completion must reach the target with + − × ÷)
//
// Prompt:      "n1 n2 ... nk>target:"   e.g. "7 3 5>26:"
// Completion:  steps "a op b=c" joined by ',', op in + - * /, no spaces, e.g. "7*3=21,21+5=26"
//              (the <eos> token is not part of the text).
// The verifier (C99, no globals, no heap allocation) gives a completion 1.0 only if all hold,
// else 0.0:
//  - Numbers are decimal digits only: no sign, no leading zeros ("0" alone is a number but can
//    never be in the pool legitimately), at most 6 digits.
//  - The pool starts as the multiset of given numbers. In a step "a op b=c", a and b must both
//    be in the pool (a == b needs two copies); the step removes a and b and adds c. So every
//    given number and every intermediate result is used at most once.
//  - c must equal a op b exactly, and must be a positive integer: a-b needs a > b; a/b needs
//    b != 0 and a % b == 0.
//  - Steps are separated by exactly one ','; nothing may precede the first step or follow the
//    last one (no trailing comma, spaces, junk or NUL).
//  - At least one step. After the last step the pool must contain exactly one number (so every
//    given number was used) and it must equal the target.

#define COUNTDOWN_MAX_DIGITS 6   // numbers have at most 6 digits
#define COUNTDOWN_MAX_POOL 16    // countdown_verify rejects problems with more numbers

/* countdown_parse_number: a number at s[*pos..len): 1..COUNTDOWN_MAX_DIGITS decimal digits,
   no leading zero unless the number is exactly "0". On success advances *pos past it and
   returns the value; returns -1 (and leaves *pos) otherwise. */
static long long countdown_parse_number(const char *s, int len, int *pos) {
    int start = *pos, i = *pos;
    long long v = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        if (i - start == COUNTDOWN_MAX_DIGITS) return -1;   // a 7th digit
        v = v * 10 + (s[i] - '0');
        i++;
    }
    if (i == start) return -1;                         // no digits
    if (s[start] == '0' && i - start > 1) return -1;   // leading zero
    *pos = i;
    return v;
}

// Removes one copy of v from pool[0..*size); returns 1 if found, else 0.
static int countdown_pool_take(long long *pool, int *size, long long v) {
    for (int i = 0; i < *size; i++) {
        if (pool[i] == v) {
            pool[i] = pool[*size - 1];
            (*size)--;
            return 1;
        }
    }
    return 0;
}

/* countdown_parse_prompt: "n1 n2 ... nk>target:" (exactly the prompt text, len chars, not
   NUL-terminated). Returns 0 and fills nums[0..*n), *target on success; -1 if malformed or
   more than max_nums numbers. */
static int countdown_parse_prompt(const char *prompt, int len, int *nums, int max_nums, int *n, int *target) {
    int pos = 0, k = 0;
    long long v;
    if (!prompt || !nums || !n || !target || len <= 0) return -1;
    for (;;) {   // numbers separated by single spaces
        v = countdown_parse_number(prompt, len, &pos);
        if (v < 0 || k >= max_nums) return -1;
        nums[k++] = (int)v;
        if (pos >= len) return -1;
        if (prompt[pos] == '>') {
            pos++;
            break;
        }
        if (prompt[pos] != ' ') return -1;
        pos++;
    }
    v = countdown_parse_number(prompt, len, &pos);   // the target, then ':' ends the prompt
    if (v < 0 || pos != len - 1 || prompt[pos] != ':') return -1;
    *n = k;
    *target = (int)v;
    return 0;
}

/* countdown_verify: scores a completion (the text without <eos>, exactly len chars, may be
   len 0, may contain any bytes): 1.0f if it solves the problem by the rules above, else 0.0f.
   Never reads outside completion[0..len). */
static float countdown_verify(const int *nums, int n, int target, const char *completion, int len) {
    long long pool[COUNTDOWN_MAX_POOL];
    int size = n, pos = 0;
    if (!nums || n < 1 || n > COUNTDOWN_MAX_POOL || !completion || len <= 0) return 0.0f;
    for (int i = 0; i < n; i++) pool[i] = nums[i];
    for (;;) {
        long long a, b, c, r;
        char op;
        // syntax: a op b = c
        if ((a = countdown_parse_number(completion, len, &pos)) < 0) return 0.0f;
        if (pos >= len) return 0.0f;
        op = completion[pos++];
        if (op != '+' && op != '-' && op != '*' && op != '/') return 0.0f;
        if ((b = countdown_parse_number(completion, len, &pos)) < 0) return 0.0f;
        if (pos >= len || completion[pos] != '=') return 0.0f;
        pos++;
        if ((c = countdown_parse_number(completion, len, &pos)) < 0) return 0.0f;
        // a and b must be available; they are consumed
        if (!countdown_pool_take(pool, &size, a)) return 0.0f;
        if (!countdown_pool_take(pool, &size, b)) return 0.0f;
        // exact positive-integer arithmetic (operands <= 999999: no overflow)
        if (op == '+') r = a + b;
        else if (op == '-') r = a - b;
        else if (op == '*') r = a * b;
        else {
            if (b == 0 || a % b != 0) return 0.0f;
            r = a / b;
        }
        if (r <= 0 || r != c) return 0.0f;
        pool[size++] = c;   // size < n here: no overflow
        // then either the end, or ',' and another step
        if (pos == len) break;
        if (completion[pos] != ',') return 0.0f;
        pos++;
    }
    return (size == 1 && pool[0] == target) ? 1.0f : 0.0f;
}

/* countdown_well_formed: 1 if completion[0..len) is one or more `a op b=c` steps joined by
   ',' (digits only, any values), else 0. Used only by the optional --format-reward. */
static int countdown_well_formed(const char *completion, int len) {
    int pos = 0;
    for (;;) {
        if (countdown_parse_number(completion, len, &pos) < 0 || pos >= len) return 0;
        char op = completion[pos++];
        if (op != '+' && op != '-' && op != '*' && op != '/') return 0;
        if (countdown_parse_number(completion, len, &pos) < 0 || pos >= len) return 0;
        if (completion[pos++] != '=') return 0;
        if (countdown_parse_number(completion, len, &pos) < 0) return 0;
        if (pos == len) return 1;
        if (completion[pos++] != ',') return 0;
    }
}

// ----------------------------------------------------------------------------
// Second task and verifier: chain-sum (reasoning-gym's chain_sum: a left-to-right sum of + and −)
//
// Prompt:      the expression, no spaces, then ':'    e.g. "12+7-3+25:"
// Completion:  a scratchpad, one step "a op b=c" per operator, left to right, joined by ',':
//              "12+7=19,19-3=16,16+25=41". A running value may be negative: "3-8=-5,-5+2=-3"
//              ('-' is a token; the terms themselves are never negative).
// An outcome verifier of another kind than countdown's: it reads ONLY the text after the last
// '=' and gives 1.0 if that is exactly the answer (the sum), else 0.0, so a wrong step that still
// reaches the right answer passes. Malformed: no '=' (a bare "41"), nothing or anything but an
// integer after the last '=' (a trailing ',' or space, '+', a leading zero, "-0", 8+ digits): 0.
// The correct scratchpad is unique: a group's tree B(G) branches only where a completion errs.

#define CHAIN_SUM_MAX_DIGITS 7   // an answer has at most 7 digits (the data: at most 4)

/* chain_sum_parse_prompt: "t1+t2-t3...:" (exactly the prompt text, len chars, not
   NUL-terminated; 2 or more terms of 1..6 digits, no leading zeros, joined by '+' or '-').
   Returns 0 and fills nums[0..*n) with the signed terms (t1, +t2, −t3, ...) and *target with
   their sum; -1 if malformed or more than max_nums terms. */
static int chain_sum_parse_prompt(const char *prompt, int len, int *nums, int max_nums, int *n, int *target) {
    /* BEGIN SOLUTION: add_task stub: return -1; */
    int pos = 0, k = 0, sign = 1;
    long long sum = 0;
    if (!prompt || !nums || !n || !target || len <= 0) return -1;
    for (;;) {
        long long v = countdown_parse_number(prompt, len, &pos);
        if (v < 0 || k >= max_nums || pos >= len) return -1;
        nums[k++] = (int)(sign * v);
        sum += sign * v;
        if (prompt[pos] == ':') break;
        if (prompt[pos] != '+' && prompt[pos] != '-') return -1;
        sign = prompt[pos++] == '+' ? 1 : -1;
    }
    if (pos != len - 1 || k < 2) return -1;
    *n = k;
    *target = (int)sum;   // |sum| <= 8 x 999999
    return 0;
    /* END SOLUTION: add_task */
}

/* chain_sum_parse_int: an integer at s[*pos..len): an optional '-', 1..CHAIN_SUM_MAX_DIGITS
   digits, no leading zero, not "-0". On success advances *pos past it and returns 1 (value in
   *v); returns 0 (and leaves *pos) otherwise. */
static int chain_sum_parse_int(const char *s, int len, int *pos, long long *v) {
    int i = *pos, neg = i < len && s[i] == '-';
    i += neg;
    int start = i;
    long long x = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9' && i - start < CHAIN_SUM_MAX_DIGITS) x = x * 10 + (s[i++] - '0');
    if (i == start || (i < len && s[i] >= '0' && s[i] <= '9')) return 0;   // no digits, or too many
    if (s[start] == '0' && (i - start > 1 || neg)) return 0;                // leading zero, "-0"
    *pos = i;
    *v = neg ? -x : x;
    return 1;
}

/* chain_sum_verify: scores a completion (the text without <eos>, exactly len chars, may be
   len 0, may contain any bytes) for a problem whose answer is target: 1.0f if the text after
   its last '=' is exactly the integer target (rules above), else 0.0f. nums and n (the
   terms) are not read: the verifier checks the outcome only. Never reads outside
   completion[0..len). */
static float chain_sum_verify(const int *nums, int n, int target, const char *completion, int len) {
    /* BEGIN SOLUTION: add_task stub: return 0.0f; */
    (void)nums; (void)n;
    if (!completion || len <= 0) return 0.0f;
    int last = len - 1;
    while (last >= 0 && completion[last] != '=') last--;
    if (last < 0) return 0.0f;   // no '=': no final answer
    int pos = last + 1;
    long long v;
    if (!chain_sum_parse_int(completion, len, &pos, &v) || pos != len) return 0.0f;
    return v == target ? 1.0f : 0.0f;
    /* END SOLUTION: add_task */
}

static int chain_sum_well_formed(const char *completion, int len);   // --format-reward's check (below)

// ----------------------------------------------------------------------------
// The task interface: what a task gives the rest of the file. A problem is held as integers
// (nums[0..n), target): countdown's numbers offered and target; chain-sum's signed terms and
// their sum. --task NAME picks one of TASKS; a checkpoint records the index of its task.

typedef struct {
    const char *name;              // --task NAME
    const char *train, *val, *test;   // the default data files: prompt<TAB>demonstration lines
                                   // (train, val), prompts only (test, from reasoning-gym)
    const char *prompt_format;     // a prompt, as error messages describe it
    // the prompt's text (len chars) → the problem; 0, or -1 if malformed or more than max_nums
    int (*parse_prompt)(const char *prompt, int len, int *nums, int max_nums, int *n, int *target);
    // the verifier: 1.0f if completion[0..len) (no <eos>) solves the problem, else 0.0f
    float (*verify)(const int *nums, int n, int target, const char *completion, int len);
    int (*well_formed)(const char *completion, int len);   // --format-reward: 1 if well formed
    int max_new, max_new_nums;     // the budget its default data need (--max-new-tokens), for up to max_new_nums numbers
    char step_end;                 // MC-PRM: a step ends after each such character
    const char *chars;             // the characters of VOCAB_CHARS its text uses
} Task;

enum { TASK_COUNTDOWN = 0, TASK_CHAIN_SUM = 1 };   // indices in TASKS: never reorder (checkpoints)
static const Task TASKS[] = {
    {"countdown", "data/countdown_train.txt", "data/countdown_val.txt", "data/countdown_test.txt",
     "`n1 n2 ... nk>target:` with 1 to 8 numbers of at most 6 digits", countdown_parse_prompt,
     countdown_verify, countdown_well_formed, 26, 4, ',', "0123456789+-*/=,>: "},
    {"chain-sum", "data/chain_sum_t5_train.txt", "data/chain_sum_t5_val.txt", "data/chain_sum_t5_test.txt",
     "`t1+t2-t3...:` (task chain-sum) with 2 to 8 terms of at most 6 digits joined by + or -",
     chain_sum_parse_prompt, chain_sum_verify, chain_sum_well_formed, 48, 5, ',', "0123456789+-=,:"},
};
#define NUM_TASKS ((int)(sizeof TASKS / sizeof TASKS[0]))
static const char *TASK_NAMES[] = {"countdown", "chain-sum", NULL};   // --task's choices, as TASKS

/* task_reward: outcome reward r of a completion (token ids comp[0..len), <eos> last if it
   finished) for a problem (nums[0..n), target) of task t: 1 if t's verifier accepts it, else
   format_reward if it is well formed and ended with <eos>, else 0. A special token inside the
   text makes it wrong, whatever the task's verifier reads. */
static float task_reward(const Task *t, const int *nums, int n, int target, const int *comp, int len,
                         float format_reward) {
    char text[4096] = {0};
    int text_len = 0, ended = len > 0 && comp[len - 1] == TOK_EOS;
    for (int j = 0; j < len - ended && text_len < (int)sizeof text; j++) {
        int tok = comp[j];
        if (tok < NUM_SPECIAL || tok >= VOCAB_SIZE) return 0.0f;
        text[text_len++] = VOCAB_CHARS[tok - NUM_SPECIAL];
    }
    float r = t->verify(nums, n, target, text, text_len);
    int well_formed_end = ended && t->well_formed(text, text_len);
    if (r == 0.0f && format_reward > 0.0f && well_formed_end) r = format_reward;
    return r;
}

// countdown_reward: task_reward for countdown (the tests' and the tools' short form).
static float countdown_reward(const int *nums, int n, int target, const int *comp, int len, float format_reward) {
    return task_reward(&TASKS[TASK_COUNTDOWN], nums, n, target, comp, len, format_reward);
}

// ----------------------------------------------------------------------------
// Task data: a task's prompts and demonstrations from data/*.txt
// One example per line: `prompt<TAB>completion` (completion optional: the test split has
// prompts only); `#` starts a comment line; blank lines are ignored. The prompt's text is the
// task's (countdown: the numbers, `>`, the target, `:`, as `7 3 5>26:`; chain-sum:
// `12+7-3+25:`), read by its parse_prompt; the completion is its steps joined by `,`
// (`7*3=21,21+5=26`); the model ends it with <eos>.

#define MAX_NUMS 8

typedef struct {
    int n;                 // examples
    int *prompt;           // (n, maxT) <bos> + prompt tokens
    int *prompt_len;       // (n) including <bos>
    int *completion;       // (n, maxT) demonstration tokens + <eos>; empty when none
    int *completion_len;   // (n) including <eos>; 0 when the line has no demonstration
    int *nums;             // (n, MAX_NUMS) the numbers offered
    int *num_count;        // (n)
    int *target;           // (n)
    int *line;             // (n) line of the file the example is on
    const char *path;      // the file (for messages)
    int maxT;
    const Task *task;      // the task whose prompts these are
} Dataset;

// data_error: "PATH:LINE: " and the printf-style message on stderr (data files, verify, check); exits.
__attribute__((format(printf, 3, 4)))
static void data_error(const char *path, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", path, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(EXIT_INPUT);
}

/* read_line: reads line `lineno` of f (path: its name in messages) into *buf (capacity *cap,
   grown as needed), '\n' included, NUL-terminated. Returns its length in bytes (NUL bytes
   in the line count), or -1 at the end of the file. Unlike getline it tells a read error
   from the end of the file (then: FILE:LINE: read error, exit 1), and it stops at max_len
   bytes before the '\n' (then: FILE:LINE: line too long) instead of reading a file without
   newlines (/dev/zero) into memory. */
static long read_line(FILE *f, char **buf, size_t *cap, long max_len, const char *path, int lineno) {
    long n = 0;
    int c = 0;
    errno = 0;
    while ((c = getc(f)) != EOF) {
        if ((size_t)n + 2 > *cap) {
            size_t grown = *cap < 256 ? 256 : 2 * *cap;
            char *p = (char *)realloc(*buf, grown);
            if (!p) data_error(path, lineno, "out of memory reading the line");
            *buf = p;
            *cap = grown;
        }
        (*buf)[n++] = (char)c;
        if (c == '\n') break;
        if (n > max_len) data_error(path, lineno, "line too long (over %ld characters)", max_len);
    }
    if (c == EOF && ferror(f)) data_error(path, lineno, "read error: %s", errno ? strerror(errno) : "unknown");
    if (n == 0) return -1;
    (*buf)[n] = 0;
    return n;
}

// Line 1 of a text file must not start with a UTF-8 byte-order mark (EF BB BF, written by
// some Windows editors and Python's utf-8-sig): it would read as three invisible characters.
static void refuse_bom(const char *line, long len, const char *path, int lineno) {
    if (lineno == 1 && len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3))
        data_error(path, 1, "UTF-8 byte-order mark (bytes EF BB BF) at the start of the file; "
                            "save it without one (sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)");
}

/* load_dataset: reads a file of task's. need_completion = 1 (SFT data): every line must carry a
   demonstration and <bos> prompt completion <eos> must fit in maxT tokens. need_completion
   = 0 (prompts for train, eval): a demonstration is allowed but ignored, and <bos> prompt
   must fit (the caller checks prompt + --max-new-tokens). Errors name FILE:LINE and what
   was expected. An SFT demonstration must score 1 with the task's verifier: the model would
   learn whatever it is shown. */
static void load_dataset(Dataset *d, const char *path, int maxT, int need_completion, const Task *task) {
    FILE *f = fopenCheck(path, "r");
    memset(d, 0, sizeof *d);
    d->maxT = maxT;
    int cap = 1024;
    d->prompt = (int *)mallocCheck((size_t)cap * maxT * sizeof(int));
    d->completion = (int *)mallocCheck((size_t)cap * maxT * sizeof(int));
    d->prompt_len = (int *)mallocCheck(cap * sizeof(int));
    d->completion_len = (int *)mallocCheck(cap * sizeof(int));
    d->nums = (int *)mallocCheck((size_t)cap * MAX_NUMS * sizeof(int));
    d->num_count = (int *)mallocCheck(cap * sizeof(int));
    d->target = (int *)mallocCheck(cap * sizeof(int));
    d->line = (int *)mallocCheck(cap * sizeof(int));
    d->path = path;
    d->task = task;
    char *line = NULL;
    size_t lcap = 0;
    long got;
    int lineno = 0;
    while ((got = read_line(f, &line, &lcap, 4095, path, lineno + 1)) != -1) {   // counts NUL bytes too
        lineno++;
        refuse_bom(line, got, path, lineno);
        int len = (int)got;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len == 0 || line[0] == '#') continue;
        if ((int)strlen(line) != len) data_error(path, lineno, "NUL byte in line");
        char *tab = strchr(line, '\t');
        int plen = tab ? (int)(tab - line) : len;
        int clen = tab ? len - plen - 1 : 0;
        if (tab && strchr(tab + 1, '\t'))
            data_error(path, lineno, "more than one TAB: expected `prompt<TAB>completion`");
        if (need_completion && clen == 0)
            data_error(path, lineno, "no demonstration: expected `prompt<TAB>completion`");
        if (!need_completion) clen = 0;    // prompts only: the demonstration is not used
        if (1 + plen + clen + 1 > maxT)
            data_error(path, lineno, "example needs %d tokens, the model's context is %d", plen + clen + 2,
                       maxT);
        if (d->n == cap) {
            cap *= 2;
            d->prompt = (int *)realloc(d->prompt, (size_t)cap * maxT * sizeof(int));
            d->completion = (int *)realloc(d->completion, (size_t)cap * maxT * sizeof(int));
            d->prompt_len = (int *)realloc(d->prompt_len, cap * sizeof(int));
            d->completion_len = (int *)realloc(d->completion_len, cap * sizeof(int));
            d->nums = (int *)realloc(d->nums, (size_t)cap * MAX_NUMS * sizeof(int));
            d->num_count = (int *)realloc(d->num_count, cap * sizeof(int));
            d->target = (int *)realloc(d->target, cap * sizeof(int));
            d->line = (int *)realloc(d->line, cap * sizeof(int));
            if (!d->prompt || !d->completion || !d->prompt_len || !d->completion_len || !d->nums ||
                !d->num_count || !d->target || !d->line)
                fail_at(__FILE__, __LINE__, "out of memory reading data", path);
        }
        int i = d->n, bad = 0;
        int *pt = d->prompt + (size_t)i * maxT, *ct = d->completion + (size_t)i * maxT;
        pt[0] = TOK_BOS;
        int col = 0;   // 1-based column of a character outside the vocabulary
        if (encode(line, plen, pt + 1, &bad) < 0) col = bad + 1;
        else if (clen && encode(tab + 1, clen, ct, &bad) < 0) col = plen + 2 + bad;
        if (col) {
            unsigned char c = (unsigned char)line[col - 1];
            data_error(path, lineno, "character '%c' (byte %d) at column %d is not in the vocabulary \"%s\"",
                       c >= 32 && c < 127 ? c : '?', c, col, VOCAB_CHARS);
        }
        d->prompt_len[i] = plen + 1;
        d->completion_len[i] = clen ? clen + 1 : 0;
        if (clen) ct[clen] = TOK_EOS;
        if (task->parse_prompt(line, plen, d->nums + (size_t)i * MAX_NUMS, MAX_NUMS, &d->num_count[i],
                               &d->target[i]) != 0)
            data_error(path, lineno, "prompt is not %s", task->prompt_format);
        const int *nums = d->nums + (size_t)i * MAX_NUMS;
        if (clen && task->verify(nums, d->num_count[i], d->target[i], tab + 1, clen) != 1.0f) {
            const char *why = task == &TASKS[TASK_COUNTDOWN]
                                  ? "steps `a op b=c` joined by `,` must use each number once and end at the "
                                    "target"
                                  : "the number after its last `=` must be the answer";
            if (task == &TASKS[TASK_COUNTDOWN] && memchr(tab + 1, ' ', clen)) why = "it contains a space, which the verifier does not allow";
            data_error(path, lineno, "demonstration does not solve the prompt (the verifier scores it 0): %s",
                       why);
        }
        d->line[i] = lineno;
        d->n++;
    }
    free(line);
    fclose(f);
    if (d->n == 0) data_error(path, lineno ? lineno : 1, lineno ? "no examples in file" : "no examples in file (it is empty)");
}

static void free_dataset(Dataset *d) {
    free(d->prompt);
    free(d->prompt_len);
    free(d->completion);
    free(d->completion_len);
    free(d->nums);
    free(d->num_count);
    free(d->target);
    free(d->line);
}

// ----------------------------------------------------------------------------
// Group sampler: k completions per prompt with the KV cache, one RNG stream each

/* draw_token: the next token from logits z (V): softmax(z / temperature) over the allowed
   tokens, then the argmax when greedy, else a draw with rng. *logp: its log-prob under that
   distribution (nats). probs (V) is scratch. */
static int draw_token(const float *z, int V, float temperature, int greedy, Rng *rng,
                      const unsigned char *allowed, float *probs, float *logp) {
    float maxv;
    float logsum = softmax_temperature(probs, &maxv, z, V, temperature, allowed);
    int next = 0;
    if (greedy) {
        for (int v = 1; v < V; v++)
            if (probs[v] > probs[next]) next = v;
    } else {
        float u = rng_uniform(rng);
        float cdf = 0.0f;
        next = -1;
        for (int v = 0; v < V; v++) {
            if (probs[v] <= 0.0f) continue;
            next = v;                 // falls back to the last allowed token on rounding
            cdf += probs[v];
            if (u < cdf) break;
        }
    }
    *logp = (z[next] * (1.0f / temperature) - maxv) - logsum;
    return next;
}

/* sample_completions_budget: B sequences; sequence b starts from prompts[b] (prompt_len[b]
   tokens, <bos> included) and draws up to budget[b] tokens from softmax(logits / temperature)
   over the allowed tokens (NULL: all), or the argmax when greedy, using its own stream rngs[b].
   A sequence stops after <eos> (which is kept as its last token) or at budget[b] tokens.
   Writes comp (B, stride) token ids, comp_logp (B, stride) their log-probs under the
   sampling distribution (nats, temperature applied), comp_len (B).
   Requires 1 <= budget[b] <= stride, prompt_len[b] + budget[b] <= maxT and B <= kv->B: the
   commands refuse options that break them; they are checked here again because a caller that
   gets them wrong would write past comp. MC-PRM's continuations give each row its own budget.
   The loop below feeds every row one position per decode step: row b reads its prompt, then
   draws a token after each position from its last prompt token on. A row's logits depend on
   its own tokens only, so a sequence does not depend on the batch it is sampled in. */
static void sample_completions_shared(GPT *m, KVCache *kv, int B, const int *const *prompts,
                                      const int *prompt_len, const int *budget, int stride, float temperature,
                                      int greedy, Rng *rngs, const unsigned char *allowed,
                                      int *comp, float *comp_logp, int *comp_len);
// leader[b] = the first of the B rows whose prompt equals row b's; returns how many are distinct
static int shared_prompts(int *leader, int B, const int *const *prompts, const int *prompt_len);
static void sample_completions_budget(GPT *m, KVCache *kv, int B, const int *const *prompts,
                                      const int *prompt_len, const int *budget, int stride, float temperature,
                                      int greedy, Rng *rngs, const unsigned char *allowed,
                                      int *comp, float *comp_logp, int *comp_len) {
    const char *hint = "a command did not check its token budget; please report this";
    for (int b = 0; b < B; b++) {
        if (budget[b] < 1 || budget[b] > stride)
            fail_at(__FILE__, __LINE__, "sample_completions: a row's budget (max_new) is < 1 or longer than its row", hint);
        if (prompt_len[b] < 1 || prompt_len[b] + budget[b] > m->config.max_seq_len)
            fail_at(__FILE__, __LINE__, "sample_completions: prompt + max_new exceed the context", hint);
    }
    if (B > kv->B)
        fail_at(__FILE__, __LINE__, "sample_completions: more sequences than the KV cache holds",
                "a command built its KV cache too small; please report this");
    if (kv->pack) {   // the CPU's default (--sampler shared; Speed paths): the same tokens and log-probs,
                      // bit for bit, each distinct prompt fed once and finished rows no longer computed
        sample_completions_shared(m, kv, B, prompts, prompt_len, budget, stride, temperature, greedy, rngs,
                                  allowed, comp, comp_logp, comp_len);
        return;
    }
    int V = m->config.vocab_size;
    int *tok = (int *)mallocCheck((size_t)(B > 0 ? B : 1) * sizeof(int));
    int *pos = (int *)mallocCheck((size_t)(B > 0 ? B : 1) * sizeof(int));
    float *probs = (float *)mallocCheck((size_t)V * sizeof(float));
    int left = B;   // rows still drawing
    for (int b = 0; b < B; b++) comp_len[b] = 0;
    for (int t = 0; left > 0; t++) {
        for (int b = 0; b < B; b++) {   // position t of every row: a prompt token, its last draw, or padding
            int j = t - prompt_len[b];  // (a finished row's padding changes none of its tokens)
            tok[b] = j < 0 ? prompts[b][t] : j < comp_len[b] ? comp[(size_t)b * stride + j] : TOK_PAD;
            pos[b] = t;
        }
        gpt_decode_step(m, kv, tok, pos, B);
        for (int b = 0; b < B; b++) {
            int n = comp_len[b];
            if (t < prompt_len[b] - 1 || (n > 0 && (comp[(size_t)b * stride + n - 1] == TOK_EOS || n == budget[b])))
                continue;   // still reading its prompt, or finished
            size_t at = (size_t)b * stride + n;
            comp[at] = draw_token(kv->logits + (size_t)b * V, V, temperature, greedy, &rngs[b], allowed, probs,
                                  &comp_logp[at]);
            comp_len[b] = n + 1;
            left -= comp[at] == TOK_EOS || n + 1 == budget[b];
        }
    }
    free(tok);
    free(pos);
    free(probs);
}

/* sample_completions: sample_completions_budget with the same budget, max_new tokens, for
   every row (comp and comp_logp are (B, max_new)): a GRPO group, an evaluation batch. */
static void sample_completions(GPT *m, KVCache *kv, int B, const int *const *prompts,
                               const int *prompt_len, int max_new, float temperature, int greedy,
                               Rng *rngs, const unsigned char *allowed,
                               int *comp, float *comp_logp, int *comp_len) {
    int *budget = (int *)mallocCheck((size_t)(B > 0 ? B : 1) * sizeof(int));
    for (int b = 0; b < B; b++) budget[b] = max_new;
    sample_completions_budget(m, kv, B, prompts, prompt_len, budget, max_new, temperature, greedy, rngs,
                              allowed, comp, comp_logp, comp_len);
    free(budget);
}

// ----------------------------------------------------------------------------
// Prefix tree B(G): the process sets of a group (paper §3.1)
//
// λ(i,t) = { j in the group : len_j > t and y(j)_0..t == y(i)_0..t }, completion tokens only
// (the prompt is shared by the whole group; <eos> is a token; identical completions count
// separately). The distinct process sets, ordered by inclusion, are the nodes of the
// compacted prefix trie of the group; each node owns a process step, the span [start, end)
// of token positions its members share and its parent does not.

typedef struct {
    int parent;            // index of the parent node, -1 for a child of the root (the prompt)
    int start, end;        // process step: token positions [start, end)
    int size;              // |λ|: number of member completions
    int depth;             // 1 for a child of the root
    int num_children;
    int member;            // one member completion (to print the step's tokens)
    float step_reward;     // R̂(λ): mean outcome reward of the members (paper eq. 5)
    float step_advantage;  // A_λ = (R̂(λ) − mean r) / (std r + eps) = mean of the members' a_j;
                           // reported (./grpo sample, ./grpo check), not trained on: under
                           // token-level normalisation at μ = 1 (no clipping), Theorem 1 makes a_i
                           // on every token equivalent (see grpo_prepare_tokens)
} ProcessNode;

typedef struct {
    int num_nodes;
    ProcessNode *nodes;    // capacity 2(k+1) (a trie over k leaves has fewer than 2k nodes)
    int *members;          // scratch (k)
} PrefixTree;

static void build_prefix_tree_buffers(PrefixTree *tree, int k) {
    tree->nodes = (ProcessNode *)mallocCheck((size_t)2 * (k + 1) * sizeof(ProcessNode));
    tree->members = (int *)mallocCheck((size_t)(k + 1) * sizeof(int));
    tree->num_nodes = 0;
}

static void free_prefix_tree(PrefixTree *tree) {
    free(tree->nodes);
    free(tree->members);
}

typedef struct {           // the group being built (read-only inputs and outputs)
    const int *const *tokens;     // (k) completion i's token ids
    const int *len;               // (k)
    const float *reward, *advantage;
    int *lambda_size, *node_of;   // (k, stride) outputs
    int stride;
} TreeInput;

// sorts members[0..n) by their token at position t (stable: ties by completion index)
static void sort_by_token(int *members, int n, int t, const TreeInput *in) {
    for (int a = 1; a < n; a++) {       // insertion sort: groups are small and mostly sorted
        int x = members[a], tx = in->tokens[x][t], b = a - 1;
        while (b >= 0 && (in->tokens[members[b]][t] > tx ||
                          (in->tokens[members[b]][t] == tx && members[b] > x))) {
            members[b + 1] = members[b];
            b--;
        }
        members[b + 1] = x;
    }
}

/* Partition refinement: members[0..n) share tokens 0..s and all have len > s, so together
   they are λ(i,s) for each of them. The node they form extends while every member has a
   next token and all next tokens agree; then it splits into children. members is
   reordered in place (each child's members are contiguous). */
static void tree_add_node(PrefixTree *tree, const TreeInput *in, int *members, int n, int s,
                          int parent, int depth) {
    /* BEGIN SOLUTION: prefix_tree */
    int id = tree->num_nodes++;
    ProcessNode *node = &tree->nodes[id];
    node->parent = parent;
    node->start = s;
    node->size = n;
    node->depth = depth;
    node->num_children = 0;
    node->member = members[0];
    double reward_sum = 0.0, advantage_sum = 0.0;
    for (int a = 0; a < n; a++) {
        reward_sum += in->reward[members[a]];
        advantage_sum += in->advantage[members[a]];
    }
    node->step_reward = (float)(reward_sum / n);
    node->step_advantage = (float)(advantage_sum / n);
    int t = s;
    for (;;) {   // positions t in this process step
        for (int a = 0; a < n; a++) {
            in->lambda_size[(size_t)members[a] * in->stride + t] = n;
            in->node_of[(size_t)members[a] * in->stride + t] = id;
        }
        int next = t + 1, same = 1;
        for (int a = 0; a < n && same; a++)
            same = in->len[members[a]] > next && in->tokens[members[a]][next] == in->tokens[members[0]][next];
        if (!same) break;
        t = next;
    }
    node->end = t + 1;
    // children: members that continue past t, grouped by their token at t+1
    int continuing = 0, next = t + 1;
    for (int a = 0; a < n; a++)
        if (in->len[members[a]] > next) members[continuing++] = members[a];
    sort_by_token(members, continuing, next, in);
    for (int a = 0; a < continuing;) {   // members[a..b) share their token at t+1: one child
        int b = a + 1;
        while (b < continuing && in->tokens[members[b]][next] == in->tokens[members[a]][next]) b++;
        tree->nodes[id].num_children++;
        tree_add_node(tree, in, members + a, b - a, next, id, depth + 1);
        a = b;
    }
    /* END SOLUTION: prefix_tree */
}

/* build_prefix_tree: the tree B(G) of one group of k completions, O(k·L) plus a sort of
   the members at each branching position.
   tokens[i][0..len[i]) completion i's token ids (any ints; prompt excluded);
   reward (k), advantage (k) the outcome rewards r_i and advantages a_i (for R̂ and A_λ).
   Outputs, row i at lambda_size + i*stride: lambda_size[i][t] = |λ(i,t)| and
   node_of[i][t] = index of the node owning position t of completion i, for t < len[i].
   Fills tree->nodes in depth-first order (parents before children). Returns num_nodes. */
static int build_prefix_tree(PrefixTree *tree, const int *const *tokens, const int *len, int k,
                             const float *reward, const float *advantage,
                             int *lambda_size, int *node_of, int stride) {
    /* BEGIN SOLUTION: prefix_tree stub: tree->num_nodes = 0; return 0; */
    TreeInput in = {tokens, len, reward, advantage, lambda_size, node_of, stride};
    tree->num_nodes = 0;
    int nonempty = 0;
    for (int i = 0; i < k; i++)
        if (len[i] > 0) tree->members[nonempty++] = i;
    sort_by_token(tree->members, nonempty, 0, &in);
    for (int a = 0; a < nonempty;) {   // members[a..b) share their first token: a child of the root
        int b = a + 1;
        while (b < nonempty && tokens[tree->members[b]][0] == tokens[tree->members[a]][0]) b++;
        tree_add_node(tree, &in, tree->members + a, b - a, 0, -1, 1);
        a = b;
    }
    return tree->num_nodes;
    /* END SOLUTION: prefix_tree */
}

/* Tree statistics of the paper's §3.2 for one group:
   nontrivial: 1 if any two completions share a first token (some |λ| > 1);
   path depth: process steps on a completion's root-to-leaf path, mean over completions;
   intermediate proportion: share of a completion's tokens that lie in shared, non-leaf
   steps (nodes with children), mean over completions. Empty completions are skipped. */
typedef struct {
    int nontrivial;                    // 1 (or, summed over groups, their number)
    double mean_depth, intermediate;   // path depth and intermediate proportion
    int counted;                       // completions (or groups) averaged over
} TreeStats;

static TreeStats prefix_tree_stats(const PrefixTree *tree, const int *len, int k,
                                   const int *node_of, int stride) {
    TreeStats st = {0, 0.0, 0.0, 0};
    for (int n = 0; n < tree->num_nodes; n++)
        if (tree->nodes[n].size > 1) st.nontrivial = 1;
    for (int i = 0; i < k; i++) {
        if (len[i] == 0) continue;
        const int *node_row = node_of + (size_t)i * stride;
        const ProcessNode *leaf = &tree->nodes[node_row[len[i] - 1]];
        int intermediate_tokens = 0;
        for (int t = 0; t < len[i]; t++) intermediate_tokens += tree->nodes[node_row[t]].num_children > 0;
        st.mean_depth += leaf->depth;
        st.intermediate += (double)intermediate_tokens / len[i];
        st.counted++;
    }
    if (st.counted) {
        st.mean_depth /= st.counted;
        st.intermediate /= st.counted;
    }
    return st;
}

// ----------------------------------------------------------------------------
// Objectives: GRPO and λ-GRPO (conventions in notes/conventions.md); MC-PRM's values and PPO's
// critic have their own sections after the training loop

// GRPO and λ-GRPO (the paper's), then the comparison points: MC-PRM (explicit process
// rewards) and PPO (a learned critic)
enum { OBJ_GRPO = 0, OBJ_LAMBDA_GRPO = 1, OBJ_MC_PRM = 2, OBJ_PPO = 3 };
enum { AGG_TOKEN_MEAN = 0, AGG_SEQ_MEAN_TOKEN_MEAN, AGG_SEQ_MEAN_TOKEN_SUM, AGG_SEQ_MEAN_TOKEN_SUM_NORM };
enum { STD_SAMPLE = 0, STD_POPULATION, STD_NONE };
enum { SCOPE_GROUP = 0, SCOPE_BATCH };
static const char *OBJECTIVE_NAMES[] = {"grpo", "lambda-grpo", "mc-prm", "ppo", NULL};
static const char *LOSS_AGG_NAMES[] = {"token-mean", "seq-mean-token-mean", "seq-mean-token-sum",
                                       "seq-mean-token-sum-norm", NULL};
static const char *ADV_STD_NAMES[] = {"sample", "population", "none", NULL};
static const char *SCOPE_NAMES[] = {"group", "batch", NULL};

typedef struct {
    int objective;        // OBJ_GRPO, OBJ_LAMBDA_GRPO, OBJ_MC_PRM (notes/credit-assignment.md §3) or OBJ_PPO
    int loss_agg;         // AGG_*
    int adv_std;          // STD_*: std in the advantage's denominator
    int adv_std_scope;    // SCOPE_*: std over each group, or over the whole batch
    float adv_eps;        // added to the std (TRL 1e-4, verl 1e-6)
    float clip_eps_low;   // ratio clipped to [1 − clip_eps_low, 1 + clip_eps_high]
    float clip_eps_high;
    float beta;           // k3 KL coefficient
    int max_new_tokens;   // the Dr. GRPO constant for seq-mean-token-sum-norm
} ObjectiveConfig;

/* std_of: the std of r (n) around mean for the advantage's denominator (paper eq. 2): sample
   (n − 1; 0 when n <= 1), population (n), or 1 for STD_NONE (no division). */
static double std_of(const float *r, int n, int mode, double mean) {
    /* BEGIN SOLUTION: compute_advantages */
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (r[i] - mean) * (r[i] - mean);
    if (mode == STD_NONE) return 1.0;
    if (mode == STD_SAMPLE) return n > 1 ? sqrt(ss / (n - 1)) : 0.0;
    return sqrt(ss / n);
    /* END SOLUTION: compute_advantages */
}

/* compute_advantages: outcome advantages a_i = (r_i − mean_g r) / (std + eps) for
   num_groups groups; group g holds completions group_start[g] .. group_start[g+1]−1 of
   reward and advantage (group_start: num_groups+1 entries). Mean over the group; std per
   cfg (sample with k−1, population with k, or none: a_i = r_i − mean) over the group or,
   with scope batch, over all rewards (TRL scale_rewards="batch"). A group whose rewards
   are all equal gets a_i = 0 exactly. Source: paper eq. 2 and notes/conventions.md (authors'
   code and TRL: sample std, eps 1e-4). A group of one has equal rewards, so a = 0 (training
   rejects k = 1: it would learn nothing). */
static void compute_advantages(float *advantage, const float *reward, int num_groups,
                               const int *group_start, const ObjectiveConfig *cfg) {
    /* BEGIN SOLUTION: compute_advantages stub: for (int i = group_start[0]; i < group_start[num_groups]; i++) advantage[i] = reward[i]; */
    int total = group_start[num_groups] - group_start[0];
    const float *r0 = reward + group_start[0];
    double batch_mean = 0.0;
    for (int i = 0; i < total; i++) batch_mean += r0[i];
    double batch_std = std_of(r0, total, cfg->adv_std, batch_mean / (total > 0 ? total : 1));
    for (int g = 0; g < num_groups; g++) {
        int k = group_start[g + 1] - group_start[g];
        const float *r = reward + group_start[g];
        float *a = advantage + group_start[g];
        int all_equal = 1;
        double mean = 0.0;
        for (int i = 0; i < k; i++) {
            mean += r[i];
            all_equal &= r[i] == r[0];
        }
        mean /= k;
        double sd = cfg->adv_std_scope == SCOPE_BATCH ? batch_std : std_of(r, k, cfg->adv_std, mean);
        double denom = cfg->adv_std == STD_NONE ? 1.0 : sd + cfg->adv_eps;
        for (int i = 0; i < k; i++) a[i] = all_equal ? 0.0f : (float)((r[i] - mean) / denom);
    }
    /* END SOLUTION: compute_advantages */
}

// Group boundaries for num_groups groups of k consecutive completions: starts (num_groups+1).
static void equal_groups(int *starts, int num_groups, int k) {
    for (int g = 0; g <= num_groups; g++) starts[g] = g * k;
}

/* loss_agg_coef: the factor c_i that multiplies Σ_t ℓ_{i,t} of completion i in the loss
   (notes/conventions.md "loss aggregation"); len (N) completion lengths of every completion in
   the optimizer step, so the normaliser is the step's, however the step is micro-batched.
   token-mean 1/Σ len; seq-mean-token-mean 1/(N len_i); seq-mean-token-sum 1/N;
   seq-mean-token-sum-norm (Dr. GRPO) 1/(N · max_new_tokens). An empty completion gets 0. */
static void loss_agg_coef(float *coef, const int *len, int N, const ObjectiveConfig *cfg) {
    /* BEGIN SOLUTION: loss_agg_coef stub: for (int i = 0; i < N; i++) coef[i] = 1.0f; */
    double total = 0.0;
    for (int i = 0; i < N; i++) total += len[i];
    for (int i = 0; i < N; i++) {
        double c = 0.0;
        switch (cfg->loss_agg) {
            case AGG_TOKEN_MEAN:
                c = total > 0 ? 1.0 / total : 0.0;
                break;
            case AGG_SEQ_MEAN_TOKEN_MEAN:
                c = len[i] > 0 ? 1.0 / ((double)N * len[i]) : 0.0;
                break;
            case AGG_SEQ_MEAN_TOKEN_SUM:
                c = 1.0 / N;
                break;
            default:   // AGG_SEQ_MEAN_TOKEN_SUM_NORM
                c = 1.0 / ((double)N * cfg->max_new_tokens);
                break;
        }
        coef[i] = (float)c;
    }
    /* END SOLUTION: loss_agg_coef */
}

/* loss_agg_coef_masked: loss_agg_coef over the completions that are not masked (masked (N),
   NULL: none is). A masked completion (--mask-truncated) gets c_i = 0 and counts in no
   normaliser: not in token-mean's token count, not in the N of the seq-mean modes and of
   Dr. GRPO; the others get exactly the factors of a step without it. Its reward stays in
   its group's advantages and its tokens in |λ| (notes/conventions.md, EOS row). */
static void loss_agg_coef_masked(float *coef, const int *len, const unsigned char *masked, int N,
                                 const ObjectiveConfig *cfg) {
    int kept = 0;
    for (int i = 0; i < N; i++) kept += !(masked && masked[i]);
    if (kept == N) {                 // nothing masked: the plain factors, bit for bit
        loss_agg_coef(coef, len, N, cfg);
        return;
    }
    int *kept_len = (int *)callocCheck(N, sizeof(int));
    float *kept_coef = (float *)callocCheck(N, sizeof(float));
    int j = 0;
    for (int i = 0; i < N; i++)
        if (!masked[i]) kept_len[j++] = len[i];
    if (kept > 0) loss_agg_coef(kept_coef, kept_len, kept, cfg);
    j = 0;
    for (int i = 0; i < N; i++) coef[i] = masked[i] ? 0.0f : kept_coef[j++];
    free(kept_len);
    free(kept_coef);
}

/* lambda_weight: the factor the objective applies to token (i,t): 1 for GRPO, MC-PRM and PPO,
   1/|λ(i,t)| for λ-GRPO (paper eq. 11: the whole per-token term, policy and KL, no
   renormalisation). */
static inline float lambda_weight(const ObjectiveConfig *cfg, int lambda_size) {
    /* BEGIN SOLUTION: lambda_weight stub: return 1.0f; */
    return cfg->objective == OBJ_LAMBDA_GRPO ? 1.0f / (float)lambda_size : 1.0f;
    /* END SOLUTION: lambda_weight */
}

typedef struct {                // per-token outputs of grpo_token_loss, all (n)
    float *dlogp;               // ∂loss/∂logp, loss = Σ coef·weight·ℓ (the minimised quantity)
    float *ratio;               // π_θ / π_old = exp(logp − logp_old)
    float *kl;                  // k3 estimate exp(ref − logp) − (ref − logp) − 1 (0 when no ref)
    unsigned char *clipped;     // 1 where the clipped branch is taken (no policy gradient)
} TokenLossOut;

/* grpo_token_loss: n tokens, all arrays (n). ℓ = −min(ρ A, clip(ρ, 1−ε_low, 1+ε_high) A)
   + β k3, ρ = exp(logp − logp_old), k3 = exp(ref − logp) − (ref − logp) − 1 (Schulman's
   estimator, paper eq. 3; TRL/verl "k3"). advantage is per token (a_i for GRPO, or A_λ
   for the PRM form of Theorem 1); weight is lambda_weight(); coef is the aggregation
   factor of the token's completion. logp_ref may be NULL (then kl = 0); the KL enters the
   loss only through β.
   Returns the loss Σ coef·weight·ℓ (double) and fills out. ℓ is minimised (the paper's L is
   maximised: ℓ is its negative). When the clipped branch of ℓ is strictly larger (the paper's
   min picks the clipped surrogate), the policy term has no gradient (as torch.max in TRL/verl). */
static double grpo_token_loss(const ObjectiveConfig *cfg, int n, const float *logp,
                              const float *logp_old, const float *logp_ref, const float *advantage,
                              const float *weight, const float *coef, TokenLossOut *out) {
    /* BEGIN SOLUTION: grpo_token_loss stub: for (int j = 0; j < n; j++) { out->dlogp[j] = NAN; } return NAN; */
    double loss = 0.0;
    for (int j = 0; j < n; j++) {
        float ratio = expf(logp[j] - logp_old[j]), A = advantage[j];
        float lo = 1.0f - cfg->clip_eps_low, hi = 1.0f + cfg->clip_eps_high;
        float clipped_ratio = ratio < lo ? lo : (ratio > hi ? hi : ratio);
        float unclipped_loss = -ratio * A, clipped_loss = -clipped_ratio * A;
        int take_clip = clipped_loss > unclipped_loss;
        float pg = take_clip ? clipped_loss : unclipped_loss;
        float dpg = take_clip ? 0.0f : -ratio * A;      // d(−ρA)/dlogp = −ρA
        float kl = 0.0f, dkl = 0.0f;
        if (logp_ref) {     // in double: e − d − 1 cancels badly in float when d is small
            double diff = (double)logp_ref[j] - logp[j], e = exp(diff);
            kl = (float)(e - diff - 1.0);
            dkl = (float)(1.0 - e);                     // d/dlogp of k3
        }
        float w = coef[j] * weight[j];
        loss += (double)w * (pg + cfg->beta * kl);
        out->dlogp[j] = w * (dpg + cfg->beta * dkl);
        if (out->ratio) out->ratio[j] = ratio;
        if (out->kl) out->kl[j] = kl;
        if (out->clipped) out->clipped[j] = (unsigned char)take_clip;
    }
    return loss;
    /* END SOLUTION: grpo_token_loss */
}

// ----------------------------------------------------------------------------
// The GRPO step: its phases, sample → score → advantages → trees → update (paper §2–§4)
//
// The functions grpo_step (in "The training loop", next) calls, phase by phase: draw_prompts and
// sample_group (x, y(i)), score_group (r_i), compute_advantages (a_i, eq. 2; in "Objectives"),
// build_group_trees (B(G), |λ(i,t)|), grpo_update (μ AdamW steps on the objective, eqs. 3–4 and
// 11). ./grpo check and ./grpo sample run the same functions on their batches.

// How the update lays out its batch (the same loss and gradient, in float32 up to rounding):
// padded, B×T positions per micro-batch (below); or, as --update-layout tree, each micro-batch as a
// shared-prefix batch, every shared prefix computed once (Speed paths; notes/shared-prefix-batch.md)
enum { LAYOUT_PADDED = 0, LAYOUT_TREE };
static const char *UPDATE_LAYOUT_NAMES[] = {"padded", "tree", NULL};
// How the sampler runs (the same tokens bit for bit): plain, the loop of sample_completions_budget;
// or shared, sample_completions_shared (Speed paths), the CPU's default. It sets kv->pack.
enum { SAMPLER_PLAIN = 0, SAMPLER_SHARED };
static const char *SAMPLER_NAMES[] = {"plain", "shared", NULL};

/* GRPOConfig: what a GRPO step needs and nothing more. The commands (train, tree, check,
   sample) fill it from their options with grpo_config_from_options (tooling section). */
typedef struct {
    ObjectiveConfig obj;   // advantages, clipping, β, loss aggregation, GRPO or λ-GRPO
    float temperature;     // T of the sampler and of every log-prob: π_θ, π_old and π_ref
    int num_iterations;    // μ: optimizer steps per sampled batch (π_old: iteration 0's log-probs,
                           // frozen for all μ; grpo_loss_backward)
    int micro_batch;       // sequences per forward/backward (0: all N at once); the same gradient up to float rounding
    int mask_truncated;    // 1: a completion cut at max_new tokens without <eos> gets no loss
    int seed;              // the sampling streams derive from it and the step number
    int update_layout;     // LAYOUT_PADDED or LAYOUT_TREE (CPU build only)
} GRPOConfig;

/* GroupBatch: the completions of one step, in num_groups groups (one prompt each; train and
   the tree task: P groups of k, N = P·k), and every per-completion and per-token array the
   step fills. Per-token arrays are (N, max_new): row i holds completion i's tokens 0..clen[i]−1. */
typedef struct {
    int num_groups;              // P: groups, one prompt each
    int N;                       // completions in all groups
    int max_new;                 // the completion budget: the row length of every per-token array
    int *group_start;            // (P+1) group p is completions group_start[p] .. group_start[p+1]−1
    int *prompt_idx;             // (P) dataset index of each group's prompt
    const int **prompt;          // (N) <bos>+prompt tokens of completion i's prompt
    int *plen;                   // (N)
    int *comp;                   // (N, max_new) completion token ids
    const int **comp_row;        // (N) comp_row[i] = comp + i·max_new: completion i as the tree reads it
    float *sample_logp;          // (N, max_new) the sampler's log-probs (reported; the loss's π_old is
                                 // logp_old, recomputed by iteration 0's forward: grpo_loss_backward)
    int *clen;                   // (N) completion length (with <eos> when it finished)
    unsigned char *truncated;    // (N) 1: cut at max_new tokens without <eos>
    float *reward, *advantage;   // (N) r_i and a_i
    int *lambda_size, *node_of;  // (N, max_new) |λ(i,t)| and the node of B(G) that owns the token
    float *step_adv;             // (N, max_new) A_λ(i,t): reported (./grpo check), not trained on;
                                 // NULL unless the caller allocates it (check does)
    const float *token_adv;      // (N, max_new) per-token advantages that replace a_i in the loss
                                 // (mc-prm: its step advantages, mc_prm_advantages; ppo: whitened GAE,
                                 // ppo_advantages); NULL: a_i. Not owned
    // per completion token, (N, max_new)
    float *logp, *logp_old, *logp_ref, *adv_tok, *weight, *coef, *dlogp, *ratio, *kl;
    unsigned char *clipped;
    float *seq_coef;             // (N) the aggregation factor c_i of each completion
    Rng *rngs;                   // (N) one sampling stream per completion
    PrefixTree tree;             // the tree of the group built last (capacity: the largest group)
    // per-position scratch for one micro-batch, (micro, maxT)
    int *inputs, *targets;
    float *logp_pos, *dlogp_pos;
    SharedPrefixBatch *spb;      // one micro-batch as a shared-prefix batch (--update-layout tree)
} GroupBatch;

// The shared-prefix batch's part of the update (Speed paths): a micro-batch of B completions from
// `first` packed (the rows it takes), its log-probs (policy_logp's, bit for bit) and its backward.
static SharedPrefixBatch *new_shared_prefix_batch(int B, int maxT, int max_new);
static void delete_shared_prefix_batch(SharedPrefixBatch *pk);
static int pack_shared_prefix_batch(SharedPrefixBatch *pk, int B, const int *const *prompt, const int *plen,
                                    const int *const *comp, const int *clen);
static void policy_logp_spb(GPT *m, GroupBatch *g, int first, int B, float temperature,
                            const unsigned char *allowed, float *out);
static void policy_backward_spb(GPT *m, GroupBatch *g, int first, int B, float temperature);

/* build_group_batch_starts: the buffers of a step whose num_groups groups have any sizes:
   group p is completions group_start[p] .. group_start[p+1]−1 (num_groups+1 entries, the first
   0; copied), of up to max_new tokens each, with scratch for forward passes of micro
   sequences of up to maxT positions (micro = 0: no model is run on the batch). */
static void build_group_batch_starts(GroupBatch *g, int num_groups, const int *group_start, int max_new,
                                     int micro, int maxT) {
    memset(g, 0, sizeof *g);
    g->num_groups = num_groups;
    g->N = group_start[num_groups];
    g->max_new = max_new;
    size_t N = g->N, NT = N * max_new, MT = (size_t)micro * maxT;
    g->group_start = (int *)mallocCheck((size_t)(num_groups + 1) * sizeof(int));
    memcpy(g->group_start, group_start, (size_t)(num_groups + 1) * sizeof(int));
    int largest = 1;
    for (int p = 0; p < num_groups; p++) {
        int size = group_start[p + 1] - group_start[p];
        if (size > largest) largest = size;
    }
    g->prompt_idx = (int *)callocCheck(num_groups, sizeof(int));
    g->prompt = (const int **)callocCheck(N, sizeof(int *));
    g->plen = (int *)callocCheck(N, sizeof(int));
    g->comp = (int *)callocCheck(NT, sizeof(int));
    g->comp_row = (const int **)callocCheck(N, sizeof(int *));
    for (size_t i = 0; i < N; i++) g->comp_row[i] = g->comp + i * max_new;
    g->sample_logp = (float *)callocCheck(NT, sizeof(float));
    g->clen = (int *)callocCheck(N, sizeof(int));
    g->truncated = (unsigned char *)callocCheck(N, 1);
    g->reward = (float *)callocCheck(N, sizeof(float));
    g->advantage = (float *)callocCheck(N, sizeof(float));
    g->lambda_size = (int *)callocCheck(NT, sizeof(int));
    g->node_of = (int *)callocCheck(NT, sizeof(int));
    float **per_token[] = {&g->logp, &g->logp_old, &g->logp_ref, &g->adv_tok, &g->weight,
                           &g->coef, &g->dlogp, &g->ratio, &g->kl};
    for (size_t a = 0; a < sizeof per_token / sizeof per_token[0]; a++)
        *per_token[a] = (float *)callocCheck(NT, sizeof(float));
    g->clipped = (unsigned char *)callocCheck(NT, 1);
    g->seq_coef = (float *)callocCheck(N, sizeof(float));
    g->rngs = (Rng *)callocCheck(N, sizeof(Rng));
    build_prefix_tree_buffers(&g->tree, largest);
    g->inputs = (int *)callocCheck(MT, sizeof(int));
    g->targets = (int *)callocCheck(MT, sizeof(int));
    g->logp_pos = (float *)callocCheck(MT, sizeof(float));
    g->dlogp_pos = (float *)callocCheck(MT, sizeof(float));
    g->spb = new_shared_prefix_batch(micro, maxT, max_new);
}

// build_group_batch: the buffers of a step of P groups of k completions each (train, tree, sample).
static void build_group_batch(GroupBatch *g, int P, int k, int max_new, int micro, int maxT) {
    int *starts = (int *)mallocCheck((size_t)(P + 1) * sizeof(int));
    equal_groups(starts, P, k);
    build_group_batch_starts(g, P, starts, max_new, micro, maxT);
    free(starts);
}

static void free_group_batch(GroupBatch *g) {
    void *arrays[] = {g->group_start, g->prompt_idx, g->prompt, g->plen, g->comp, g->comp_row,
                      g->sample_logp, g->clen, g->truncated, g->reward, g->advantage, g->lambda_size,
                      g->node_of, g->step_adv, g->logp, g->logp_old, g->logp_ref, g->adv_tok, g->weight,
                      g->coef, g->dlogp, g->ratio, g->kl, g->clipped, g->seq_coef, g->rngs, g->inputs,
                      g->targets, g->logp_pos, g->dlogp_pos};
    for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++) free(arrays[a]);
    free_prefix_tree(&g->tree);
    delete_shared_prefix_batch(g->spb);
}

// set_group_prompts: every completion of group p gets the prompt g->prompt_idx[p] of d.
static void set_group_prompts(GroupBatch *g, const Dataset *d) {
    for (int p = 0; p < g->num_groups; p++) {
        int q = g->prompt_idx[p];
        for (int i = g->group_start[p]; i < g->group_start[p + 1]; i++) {
            g->prompt[i] = d->prompt + (size_t)q * d->maxT;
            g->plen[i] = d->prompt_len[q];
        }
    }
}

/* draw_prompts: the step's prompts x, one per group, drawn with replacement from d by the run's
   RNG (--prompt-select uniform; the other selectors are in "Prompt selection" below). */
static void draw_prompts(GroupBatch *g, const Dataset *d, Rng *run_rng) {
    for (int p = 0; p < g->num_groups; p++) g->prompt_idx[p] = rng_int(run_rng, d->n);
    set_group_prompts(g, d);
}

// mark_truncated: truncated[i] = 1 when completion i was cut at max_new tokens without <eos>
// (TRL's test: its last token is not <eos>), else 0.
static void mark_truncated(GroupBatch *g) {
    int budget = g->max_new;
    for (int i = 0; i < g->N; i++) {
        int truncated = g->clen[i] == budget && g->comp[(size_t)i * budget + budget - 1] != TOK_EOS;
        g->truncated[i] = (unsigned char)truncated;
    }
}

/* sample_group_streams: sample_group with completion i on stream (seed, first_stream + i). */
static void sample_group_streams(GPT *policy, KVCache *kv, GroupBatch *g, const GRPOConfig *cfg,
                                 uint64_t first_stream, const unsigned char *allowed) {
    for (int i = 0; i < g->N; i++) rng_seed(&g->rngs[i], cfg->seed, first_stream + i);
    sample_completions(policy, kv, g->N, g->prompt, g->plen, g->max_new, cfg->temperature, 0, g->rngs,
                       allowed, g->comp, g->sample_logp, g->clen);
    mark_truncated(g);
}

/* sample_group: y(i) ~ π_old(·|x) (paper §2) for every completion i of the batch, from the
   prompts already in g: up to max_new tokens at the temperature over the allowed tokens
   (NULL: all), each completion from its own stream (seed, (step+1)·65536 + i), so a
   completion does not depend on how many are sampled with it. Marks the truncated ones. */
static void sample_group(GPT *policy, KVCache *kv, GroupBatch *g, const GRPOConfig *cfg, int step,
                         const unsigned char *allowed) {
    sample_group_streams(policy, kv, g, cfg, ((uint64_t)step + 1) * 65536, allowed);
}

/* score_group: the outcome reward r_i of every completion (paper §2): 1 when the task's
   verifier accepts it for its prompt's problem, else format_reward for a well-formed answer
   that ended (when > 0), else 0 (task_reward). */
static void score_group(GroupBatch *g, const Dataset *d, float format_reward) {
    for (int p = 0; p < g->num_groups; p++) {
        int q = g->prompt_idx[p];
        const int *nums = d->nums + (size_t)q * MAX_NUMS;
        for (int i = g->group_start[p]; i < g->group_start[p + 1]; i++)
            g->reward[i] = task_reward(d->task, nums, d->num_count[q], d->target[q], g->comp_row[i], g->clen[i],
                                       format_reward);
    }
}

/* build_group_trees: for each group, its tree B(G) (paper §3.1, build_prefix_tree), and for
   every completion token |λ(i,t)|, the node that owns it and its step advantage A_λ(i,t).
   Needs reward and advantage (for R̂ and A_λ). Returns the tree statistics of §3.2: the count
   of non-trivial groups, and path depth and intermediate proportion averaged over the groups.
   g->tree is left holding the last group's tree. */
static TreeStats build_group_trees(GroupBatch *g) {
    int stride = g->max_new;
    TreeStats total = {0, 0.0, 0.0, 0};
    for (int p = 0; p < g->num_groups; p++) {
        int first = g->group_start[p];
        int k = g->group_start[p + 1] - first;
        int *lambda_size = g->lambda_size + (size_t)first * stride;
        int *node_of = g->node_of + (size_t)first * stride;
        build_prefix_tree(&g->tree, g->comp_row + first, g->clen + first, k, g->reward + first,
                          g->advantage + first, lambda_size, node_of, stride);
        if (g->step_adv)   // only ./grpo check prints it; training never reads it
            for (int i = first; i < first + k; i++)
                for (int t = 0; t < g->clen[i]; t++) {
                    size_t at = (size_t)i * stride + t;
                    g->step_adv[at] = g->tree.nodes[g->node_of[at]].step_advantage;
                }
        TreeStats group = prefix_tree_stats(&g->tree, g->clen + first, k, node_of, stride);
        total.nontrivial += group.nontrivial;
        total.mean_depth += group.mean_depth;
        total.intermediate += group.intermediate;
        total.counted++;
    }
    total.mean_depth /= g->num_groups;
    total.intermediate /= g->num_groups;
    return total;
}

/* make_batch: B sequences <bos> prompt completion (prompt[b] holds <bos>; lengths plen[b],
   clen[b]). inputs (B,T): the sequence without its last token, padded with <pad>; targets
   (B,T): the next token at completion positions, −1 elsewhere (prompt and padding are
   never scored). Returns T = the longest sequence minus one. */
static int make_batch(int *inputs, int *targets, int B, const int *const *prompt, const int *plen,
                      const int *const *comp, const int *clen) {
    int T = 1;
    for (int b = 0; b < B; b++) if (plen[b] + clen[b] - 1 > T) T = plen[b] + clen[b] - 1;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int n = plen[b] + clen[b];
            int tok = t < plen[b] ? prompt[b][t] : (t < n ? comp[b][t - plen[b]] : TOK_PAD);
            inputs[b * T + t] = t < n - 1 ? tok : TOK_PAD;
            targets[b * T + t] = (t + 1 >= plen[b] && t + 1 < n) ? comp[b][t + 1 - plen[b]] : -1;
        }
    return T;
}

/* policy_logp: teacher-forced forward of completions [first, first+B) of the batch through
   model m; writes rows first..first+B−1 of out (N, max_new) with log π(y_t | x, y_<t) at the
   temperature. Leaves m's activations in place for a backward pass. Returns T of the batch. */
static int policy_logp(GPT *m, GroupBatch *g, int first, int B, float temperature,
                       const unsigned char *allowed, float *out) {
    int T = make_batch(g->inputs, g->targets, B, g->prompt + first, g->plen + first, g->comp_row + first,
                       g->clen + first);
    gpt_forward(m, g->inputs, B, T);
    gpt_logprob_forward(m, g->logp_pos, g->targets, B * T, temperature, allowed);
    for (int b = 0; b < B; b++) {
        int i = first + b;
        for (int j = 0; j < g->clen[i]; j++)   // completion token j is predicted at position plen−1+j
            out[(size_t)i * g->max_new + j] = g->logp_pos[b * T + g->plen[i] - 1 + j];
    }
    return T;
}

typedef struct {                 // what grpo_update reports: iteration 0's values (before any update)
    double loss, kl, clip_frac, mean_lambda, grad_norm;
    int tokens;                  // completion tokens in the step
    float not_finite;            // the loss or gradient norm that stopped the update
} UpdateStats;

// grpo_update's status: done, or stopped (nothing applied) at a non-finite loss or gradient norm
typedef enum { UPDATE_DONE = 0, UPDATE_LOSS_NOT_FINITE, UPDATE_GRAD_NORM_NOT_FINITE } UpdateStatus;
static const char *UPDATE_STOPPED_BY[] = {"", "the loss", "the gradient norm"};

/* grpo_prepare_tokens: per completion token, its advantage (a_i, or g->token_adv's: MC-PRM's
   step advantage A_j, PPO's A_t), the objective's weight (1, or 1/|λ(i,t)| for λ-GRPO) and
   its completion's aggregation factor c_i. The normaliser is computed here, once over the
   whole step, before any backward pass, so micro-batching gives the same gradient up to float rounding. With
   cfg->mask_truncated, a completion marked truncated gets c_i = 0 and leaves every normaliser
   (loss_agg_coef_masked). Also counts the tokens and mean |λ|. */
static void grpo_prepare_tokens(GroupBatch *g, const GRPOConfig *cfg, UpdateStats *us) {
    int stride = g->max_new;
    const unsigned char *masked = cfg->mask_truncated ? g->truncated : NULL;
    loss_agg_coef_masked(g->seq_coef, g->clen, masked, g->N, &cfg->obj);
    us->mean_lambda = 0;
    us->tokens = 0;
    for (int i = 0; i < g->N; i++)
        for (int t = 0; t < g->clen[i]; t++) {
            size_t at = (size_t)i * stride + t;
            // a_i, not the step advantage A_λ(i,t) (step_adv): by Theorem 1 both give the same loss
            // and gradient at μ = 1 under token-mean (a node's members share its log-probs and
            // Σ_{j∈λ} a_j = |λ|·A_λ). Checked by test_theorem1_and_lambda in tests/test_grpo.c.
            // A method whose advantage differs from token to token (MC-PRM's A_j from step to step,
            // notes/credit-assignment.md §3; PPO's A_t) sets token_adv instead.
            g->adv_tok[at] = g->token_adv ? g->token_adv[at] : g->advantage[i];
            g->weight[at] = lambda_weight(&cfg->obj, g->lambda_size[at]);
            g->coef[at] = g->seq_coef[i];
            us->mean_lambda += g->lambda_size[at];
            us->tokens++;
        }
    if (us->tokens) us->mean_lambda /= us->tokens;
}

/* grpo_loss_backward: the loss of the step (Σ coef·weight·ℓ over every completion token)
   and its gradient, accumulated into policy->grads (zeroed here), in micro-batches of
   cfg->micro_batch sequences. Iteration 0 records π_old = detached π_θ (so the ratio is
   exactly 1 at μ = 1) and, when β > 0, π_ref from `ref`. Returns the loss; adds the
   summed k3 and the count of clipped tokens to *kl_sum and *clipped. With --update-layout
   tree each micro-batch is a shared-prefix batch (pack_shared_prefix_batch) and runs forward and
   backward once per trie row; the per-token loss is the same code either way. */
static double grpo_loss_backward(GPT *policy, GPT *ref, GroupBatch *g, const GRPOConfig *cfg, int iter,
                                 const unsigned char *allowed, double *kl_sum, int *clipped) {
    const ObjectiveConfig *obj = &cfg->obj;
    int N = g->N;
    int stride = g->max_new;
    int micro = cfg->micro_batch > 0 ? cfg->micro_batch : N;
    int use_ref = iter == 0 && ref && obj->beta != 0.0f;
    double loss = 0.0;
    gpt_zero_grad(policy);
    int tree = cfg->update_layout == LAYOUT_TREE;
    for (int first = 0; first < N; first += micro) {
        int B = first + micro <= N ? micro : N - first;
        int T = 0;
        if (tree) {
            pack_shared_prefix_batch(g->spb, B, g->prompt + first, g->plen + first, g->comp_row + first, g->clen + first);
            if (use_ref) policy_logp_spb(ref, g, first, B, cfg->temperature, allowed, g->logp_ref);
            policy_logp_spb(policy, g, first, B, cfg->temperature, allowed, g->logp);
        } else {
            if (use_ref) policy_logp(ref, g, first, B, cfg->temperature, allowed, g->logp_ref);
            T = policy_logp(policy, g, first, B, cfg->temperature, allowed, g->logp);
        }
        for (int i = first; i < first + B; i++) {
            size_t row = (size_t)i * stride;
            if (iter == 0) memcpy(g->logp_old + row, g->logp + row, g->clen[i] * sizeof(float));
            TokenLossOut out = {g->dlogp + row, g->ratio + row, g->kl + row, g->clipped + row};
            const float *logp_ref = obj->beta != 0.0f ? g->logp_ref + row : NULL;
            loss += grpo_token_loss(obj, g->clen[i], g->logp + row, g->logp_old + row, logp_ref,
                                    g->adv_tok + row, g->weight + row, g->coef + row, &out);
            for (int j = 0; j < g->clen[i]; j++) {
                *kl_sum += g->kl[row + j];
                *clipped += g->clipped[row + j];
            }
        }
        if (tree) {
            policy_backward_spb(policy, g, first, B, cfg->temperature);
            continue;
        }
        for (int b = 0; b < B; b++)         // scatter ∂loss/∂logp back to sequence positions
            for (int t = 0; t < T; t++) {
                int i = first + b;
                int j = t + 1 - g->plen[i];
                int scored = g->targets[b * T + t] >= 0;
                g->dlogp_pos[b * T + t] = scored ? g->dlogp[(size_t)i * stride + j] : 0.0f;
            }
        gpt_logprob_backward(policy, g->targets, g->dlogp_pos, B * T, cfg->temperature);
        gpt_backward(policy, g->inputs);
    }
    return loss;
}

/* grpo_update: μ = cfg->num_iterations optimizer steps on the sampled batch g (advantages
   and |λ| already set): per iteration the loss and its gradient (grpo_loss_backward), global
   norm clipping and AdamW at the schedule's rate for step *adam_t (counted up). Fills *stats.
   A non-finite loss or gradient norm stops it before that iteration's update: it returns
   UPDATE_LOSS_NOT_FINITE or UPDATE_GRAD_NORM_NOT_FINITE with the value in stats->not_finite,
   and stopping the run is the caller's job (stop_on_nan). */
static UpdateStatus grpo_update(GPT *policy, GPT *ref, GroupBatch *g, const GRPOConfig *cfg,
                                const AdamWConfig *opt, int *adam_t, const unsigned char *allowed,
                                UpdateStats *stats) {
    memset(stats, 0, sizeof *stats);
    grpo_prepare_tokens(g, cfg, stats);
    for (int iter = 0; iter < cfg->num_iterations; iter++) {
        double kl_sum = 0.0;
        int clipped = 0;
        double loss = grpo_loss_backward(policy, ref, g, cfg, iter, allowed, &kl_sum, &clipped);
        if (!isfinite(loss)) {
            stats->not_finite = (float)loss;
            return UPDATE_LOSS_NOT_FINITE;
        }
        float norm = clip_grad_norm(policy, opt->grad_clip);
        if (!isfinite(norm)) {
            stats->not_finite = norm;
            return UPDATE_GRAD_NORM_NOT_FINITE;
        }
        float lr = lr_at(opt, *adam_t);
        *adam_t += 1;
        adamw_update(policy, opt, lr, *adam_t);
        if (iter == 0) {
            stats->loss = loss;
            stats->grad_norm = norm;
            stats->kl = stats->tokens ? kl_sum / stats->tokens : 0.0;
            stats->clip_frac = stats->tokens ? (double)clipped / stats->tokens : 0.0;
        }
    }
    return UPDATE_DONE;
}

// ---- A run and one step's report: the types grpo_step and train_loop share with the tooling and
// the comparison methods (read grpo_step, just below the next banner, first)

/* TrainState: a run's progress besides the model, what a resumable checkpoint holds with
   the parameters and AdamW moments. */
typedef struct {
    int step;              // steps taken (sft: optimizer steps; train: GRPO steps)
    Rng rng;               // the run's data/sampling RNG after `step` steps
    int kind;              // 1: written by ./grpo sft, 2: by ./grpo train (a run resumes only its own kind)
    long long gen_tokens;  // train: completion tokens sampled so far (the log's gen_tokens column)
    char options[1024];    // the options that shape the run, "name=value\n" each ("": not recorded)
    char log_row[256];     // its log's last row at the save, the fields before the timings ("": unknown)
    const struct CsvLog *log;   // the run's log: a save records its last row (NULL: none)
    // State sections: a method's own state, saved after the run record so that --resume continues
    // it bit for bit (e.g. a critic and its moments, a prompt selector's posteriors). Before a save
    // a method points a section at its live data; load_checkpoint reads every section of the file
    // into memory the state owns (section_owned: ckpt_add_section frees a replaced one), and the
    // method finds its own by tag (ckpt_section).
    int num_sections;
    struct {
        char tag[8];       // CKPT_TAG_BYTES: the method's name for it, NUL-padded ("critic", ...)
        void *data;        // bytes (a save reads them; a load mallocs them)
        uint64_t bytes;
    } section[4];          // CKPT_MAX_SECTIONS
    unsigned char section_owned[4];   // 1: data was malloc'd by load_checkpoint (ckpt_add_section frees it)
} TrainState;
#define CKPT_MAX_SECTIONS 4

// The run's CSV log, its --budget and an evaluation's result: tooling types (defined after the
// banner below)
typedef struct CsvLog CsvLog;
typedef struct Budget Budget;
typedef struct {
    float accuracy;   // greedy: share of prompts whose completion the verifier accepts
    float pass_k;     // share of prompts with an accepted completion among pass_k samples
    int n;            // prompts scored
} EvalResult;

// The comparison methods' state, each defined in its own section after the training loop
typedef struct Critic Critic;                    // --objective ppo: the learned critic V
typedef struct MCPRM MCPRM;                      // --objective mc-prm: its states and continuation sampler
typedef struct PromptSelector PromptSelector;    // --prompt-select: uniform, MoPPS or DAPO dynamic

typedef struct {                 // one GRPO run, set up by cmd_train
    GPT *policy;                 // π_θ, trained
    GPT *ref;                    // π_ref (the --init model) when β != 0, else NULL
    Critic *critic;              // V, the learned critic of --objective ppo, else NULL
    KVCache *kv;                 // the sampler's cache for the N sequences of a step
    GroupBatch *batch;           // the step's P groups of k completions
    const Dataset *train, *val;  // prompts to train on, and to validate on every eval_every steps
    PromptSelector *select;      // --prompt-select mopps or dynamic; NULL: uniform (draw_prompts)
    GRPOConfig cfg;
    AdamWConfig opt;             // its schedule counts steps·μ optimizer steps
    TrainState *state;           // steps taken and the run's RNG: what a resumable checkpoint holds
    int steps;                   // the step the run ends after
    int eval_every, eval_limit, save_every;
    float format_reward;
    CsvLog *csv;                 // RUN_DIR/train.csv
    Budget *budget;              // what the run has spent; --budget ends it (./grpo compare)
    MCPRM *mc;                   // --objective mc-prm: its states and continuation sampler; else NULL
    struct Probe *probe;         // --probe-every: GRPO's and λ-GRPO's gradients compared, no effect; else NULL
    char periodic[1100];         // RUN_DIR/ckpt.bin, written every save_every steps
    char last_good[1100];        // the newest checkpoint that passed check_params ("": none yet)
} TrainRun;

// What the comparison methods report for one step (their sections fill these; log_step prints them)
typedef struct {                 // what one MC-PRM estimate spent (spend_budget, log_step)
    int states;                  // distinct states estimated
    long tokens;                 // continuation tokens drawn: the step's auxiliary generated tokens
    long positions;              // positions the sampler computed for them: each state's tokens once
                                 // (its prefill), and each continuation's tokens but the last (drawn,
                                 // never fed)
    int calls;                   // sampler calls (up to MC_MAX_ROWS continuations each)
} MCStats;

typedef struct {               // what the critic reports for one step
    double value_loss;         // iteration 0's clipped value loss (before the critic moves)
    double value_clip_frac;    // iteration 0's share of tokens on the clipped branch (0 at μ = 1)
    double explained_var;      // 1 − Var(return − V_old) / (Var(return) + 1e-5) over the step's tokens (verl)
    double mean_abs_adv;       // mean |A_t| before whitening
    double grad_norm;          // iteration 0's gradient norm (trunk and head) before clipping
    float not_finite;          // the loss or gradient norm that stopped critic_update
} CriticStats;

typedef struct {             // what prompt selection did in one step (the log's last columns)
    int logged;              // 1: the run's --prompt-select is not uniform (train.csv has these columns)
    double p_pred;           // MoPPS: the mean p̂ of the chosen prompts; −1 for uniform and dynamic
    double p_real;           // realised success: the share of the batch's completions accepted
    int groups_dropped;      // dynamic: groups sampled and not trained on (each had all-equal rewards)
    int groups_sampled;      // P + groups_dropped
    int eq_sampled;          // groups with all-equal rewards among those sampled
    int refill_rounds;       // dynamic: rounds after the first sampling
    int cap_hit;             // dynamic: the last round left groups with all-equal rewards in the batch
    long gen_aux;            // completion tokens of the dropped groups (generated, never trained)
    long aux_positions;      // their sampled positions, Σ (prompt + completion − 1), for the FLOPs
    double t_refill;         // seconds of the refill rounds (sampling and scoring)
} SelectStats;

typedef struct {                 // one step, as log_step prints it and writes its CSV row
    int step;                    // 1-based, as in the log
    double t[7];                 // wall-clock seconds: start, sampled, scored, trees built, per-token
                                 // advantages (MC-PRM's V̂, or the critic's V_old and GAE; = trees built
                                 // for GRPO and λ-GRPO), policy updated, critic updated (= policy
                                 // updated without a critic)
    TreeStats trees;
    UpdateStats update;
    long long gen_tokens;        // completion tokens sampled by the run so far (a resume goes on counting)
    float val_acc;               // validation accuracy; −1 when not validated at this step
    int last;                    // 1 at the run's last step
    // what this step spent (spend_budget): completion tokens of the trajectories and of auxiliary
    // generations, positions trained on (μ per sampled position), model FLOPs; and the run's
    // spending so far in --budget-unit
    long gen_traj, gen_aux, trained_tokens;
    double flops, budget_spent;
    int mc_prm;                  // 1: the step ran MC-PRM's phase (log_step adds its columns)
    MCStats mc;                  // what that phase spent (all 0 for the other objectives)
    int has_critic;              // 1: --objective ppo, and critic holds its report (log_step's extra columns)
    CriticStats critic;
    SelectStats select;          // what prompt selection did: predicted and realised success, refills
} StepReport;

/* stop_on_nan: a non-finite value at step `step`: stop before anything is saved, naming last_good
   (NULL: the command writes none). The critical section lets one of tree's threads print and exit. */
static void stop_on_nan(const char *what, int step, float value, const char *last_good) {
    #pragma omp critical(stop_on_nan)
    {
        fprintf(stderr, "error: step %d: %s is %g; stopping so the model is not corrupted.\n",
                step, what, value);
        if (last_good)
            fprintf(stderr, "  last good checkpoint: %s\n",
                    last_good[0] ? last_good : "none yet (this run has saved nothing)");
        fprintf(stderr, "  hint: lower --lr, lower --grad-clip, or check the data\n");
        exit(EXIT_INPUT);
    }
}

// after_step (tooling, defined after the TOOLING banner; it is not GRPO): what step r spent (--budget),
// validation every eval_every steps, the log line and CSV row, a periodic checkpoint. Returns 1 when
// the run's --budget is spent.
static int after_step(TrainRun *run, StepReport *r);
static void ckpt_add_section(TrainState *st, const char *tag, void *data, uint64_t bytes, int owned);

// The comparison methods' hooks into the step (each defined in its method's section after the loop;
// none runs for GRPO and λ-GRPO with uniform prompts).
// select_prompts: the step's prompts x into g for --prompt-select mopps or dynamic
static void select_prompts(PromptSelector *s, GroupBatch *g, const Dataset *d, Rng *run_rng, SelectStats *out);
// after scoring: DAPO's dynamic sampling refills groups whose rewards are all equal; MoPPS updates
// its posteriors; both record the step's selection statistics
static void select_after_scoring(TrainRun *run, StepReport *r);
// per-token advantages g->token_adv in place of a_i: MC-PRM's A_j (run->mc) or PPO's GAE A_t
// (run->critic); --probe-every's measurement of GRPO's and λ-GRPO's directions (it changes nothing).
static void method_token_advantages(TrainRun *run, StepReport *r);
// after the policy's update: PPO's critic takes its own μ steps. Nothing for the other methods.
static void method_after_update(TrainRun *run, StepReport *r);

// ----------------------------------------------------------------------------
// The training loop: grpo_step, the paper's algorithm in one function, and train_loop
// (cmd_train, in the tooling section, sets a run up)

/* grpo_step: one GRPO step, the paper's algorithm (DeepSeekMath's Algorithm 1 with μ updates per
   sampled batch) phase by phase: prompts → sample → score → advantages → B(G) and |λ| → update.
   r->t[0..6] time the phases. For GRPO and λ-GRPO with uniform prompts every call is in the
   reference above; the other methods and prompt selectors enter only through the hooks above. A
   non-finite loss or gradient norm stops the process at once, with nothing saved (stop_on_nan).
   Which code runs: on the CPU, by default, two speed paths stand in for two loops of the reference,
   the sampler's (--sampler shared: sample_completions_shared, the same tokens bit for bit) and the
   update's (--update-layout tree: the shared-prefix batch, the same loss and gradient up to float
   rounding). `--sampler plain --update-layout padded` runs the reference's own loops only; the test
   "reference paths" trains both ways and gets the same model up to rounding. */
static void grpo_step(TrainRun *run, StepReport *r, int *adam_t) {
    GroupBatch *g = run->batch;
    TrainState *st = run->state;
    const GRPOConfig *cfg = &run->cfg;
    r->t[0] = wall_seconds();
    // x: one prompt per group from the training set; y(i) ~ π_old(·|x), k per prompt (§2)
    if (run->select) select_prompts(run->select, g, run->train, &st->rng, &r->select);
    else draw_prompts(g, run->train, &st->rng);   // uniform, with replacement
    sample_group(run->policy, run->kv, g, cfg, st->step, NULL);
    r->t[1] = wall_seconds();
    // r_i: the verifier's outcome reward of each completion (§2)
    score_group(g, run->train, run->format_reward);
    if (run->select) select_after_scoring(run, r);
    r->t[2] = wall_seconds();
    // a_i = (r_i − mean r) / (std r + eps) within each group (eq. 2)
    compute_advantages(g->advantage, g->reward, g->num_groups, g->group_start, &cfg->obj);
    // B(G): each group's prefix tree and |λ(i,t)| of every token (§3.1)
    r->trees = build_group_trees(g);
    r->t[3] = wall_seconds();
    if (run->mc || run->critic || run->probe) method_token_advantages(run, r);   // not for (λ-)GRPO
    r->t[4] = wall_seconds();
    // μ AdamW steps on the clipped objective (eqs. 3–4), λ-GRPO dividing each token's term by
    // |λ(i,t)| (eq. 11)
    UpdateStatus status = grpo_update(run->policy, run->ref, g, cfg, &run->opt, adam_t, NULL, &r->update);
    if (status != UPDATE_DONE)
        stop_on_nan(UPDATE_STOPPED_BY[status], r->step, r->update.not_finite, run->last_good);
    r->t[5] = wall_seconds();
    if (run->critic) method_after_update(run, r);   // PPO's critic update
    r->t[6] = wall_seconds();
}

/* train_loop: GRPO steps state->step+1 .. steps (grpo_step), each followed by the tooling's
   after_step (what it spent, validation, the log line and CSV row, a periodic checkpoint). A run
   with --budget ends after the first step that spends it. */
static void train_loop(TrainRun *run) {
    TrainState *st = run->state;
    int adam_t = st->step * run->cfg.num_iterations;   // AdamW steps taken: μ per GRPO step
    int budget_done = 0;
    for (; st->step < run->steps && !budget_done; st->step++) {
        StepReport report;
        memset(&report, 0, sizeof report);
        report.step = st->step + 1;
        report.mc_prm = run->mc != NULL;
        report.has_critic = run->critic != NULL;
        grpo_step(run, &report, &adam_t);
        budget_done = after_step(run, &report);
    }
}

// ============================================================================
// OPTIONAL PARTS: skip them on a first reading. The comparison methods (MC-PRM, PPO, prompt
// selection), the speed paths (register tiles, the shared-prefix batch, packed decode) and the
// CUDA seam. The reference above reaches each through a call whose declaration says what it
// computes; each speed path stands beside the plain version it is tested against.
// ============================================================================

// ----------------------------------------------------------------------------
// Tasks: chain-sum's well-formedness check (its verifier is in the reference, "Task and verifier")

/* chain_sum_well_formed: 1 if completion[0..len) is steps `a op b=c` joined by ',' (a and c as
   chain_sum_parse_int reads them, op '+' or '-', b digits; any values), else 0. For --format-reward. */
static int chain_sum_well_formed(const char *completion, int len) {
    int pos = 0;
    long long v;
    for (;;) {
        if (!chain_sum_parse_int(completion, len, &pos, &v) || pos >= len) return 0;
        char op = completion[pos++];
        if (op != '+' && op != '-') return 0;
        if (countdown_parse_number(completion, len, &pos) < 0 || pos >= len || completion[pos++] != '=') return 0;
        if (!chain_sum_parse_int(completion, len, &pos, &v)) return 0;
        if (pos == len) return 1;
        if (completion[pos++] != ',') return 0;
    }
}

// ----------------------------------------------------------------------------
// Comparison method: MC-PRM (VinePPO, Kazemnejad et al. 2024, arXiv 2410.01679; notes/credit-assignment.md
// §3): step j's tokens train on A_j = V̂(s_{j+1}) − V̂(s_j), V̂ of state s_j (the prompt and a completion's
// first j steps) the mean reward of K continuations from π_old. Identical states are estimated once.

// A segmentation: a task's step-end character (Task.step_end), or MC_SEGMENT_TOKEN: every token a step
enum { MC_SEGMENT_COMMA = ',', MC_SEGMENT_TOKEN = 1 };
#define MC_MAX_ROWS 2048   // continuations per sampler call (at least one state's K): its KV cache's rows

// OutcomeReward: the outcome reward of completion comp[0..len) (<eos> last when it ended) of group `group`
typedef float (*OutcomeReward)(const void *task, int group, const int *comp, int len);

typedef struct {                 // a task's problems (countdown, chain-sum), as MC-PRM's verifier reads them
    const Dataset *data;         // group p's problem is data's example prompt_idx[p] (of data's task), or,
    const int *prompt_idx;       // when data is NULL, every group's problem is nums[0..num_count), target
    const int *nums;             // of task `task` (./grpo sample)
    int num_count, target;
    float format_reward;         // --format-reward, as score_group gives it to the trajectories
    const Task *task;
} TaskProblems;

// task_outcome_reward: task_reward as score_group gives it, so V̂ estimates the reward the update sees
static float task_outcome_reward(const void *task, int group, const int *comp, int len) {
    const TaskProblems *t = (const TaskProblems *)task;
    const Dataset *d = t->data;
    if (!d) return task_reward(t->task, t->nums, t->num_count, t->target, comp, len, t->format_reward);
    int q = t->prompt_idx[group];
    return task_reward(d->task, d->nums + (size_t)q * MAX_NUMS, d->num_count[q], d->target[q], comp, len,
                       t->format_reward);
}

struct MCPRM {
    int k, whiten, segment;      // K (--mc-k); 1: whiten (--mc-whiten); a task's step end or MC_SEGMENT_TOKEN
    int max_new, maxT;           // the completion budget (b tokens in: max_new − b left); seq's row length
    OutcomeReward reward;        // the task's verifier, and its problems (task)
    const void *task;
    const unsigned char *allowed;   // the sampler's token mask (the tree task's L and R); NULL: none
    // the states, (N·max_new) each: state d is state_seq[d]'s first state_len[d] tokens, the last
    // state_prefix[d] of them completion tokens, of a prompt of group state_group[d]
    int num_states;
    const int **state_seq;
    int *state_len, *state_prefix, *state_group;
    uint64_t *state_stream;      // the RNG stream of its continuation 0 (continuation c: + c; mc_stream)
    float *value;                // V̂(s_d)
    long *state_tokens;          // the tokens its K continuations drew
    // (N, max_new): step j of completion i starts at token step_start[i·max_new + j], from state state_of[..]
    int *num_steps, *step_start, *state_of;
    int *seq;                    // (N, maxT) <bos> prompt completion of each completion (states point in)
    int *cand_state;             // (N·max_new) scratch: each step's leader (shared_prompts), then its state
    // one sampler call's continuations, (rows) each; cont and cont_logp (rows, max_new)
    KVCache kv;
    int rows;
    const int **row_seq;
    int *row_len, *row_budget, *cont, *cont_len;
    float *cont_logp;
    Rng *rngs;
    int *scratch;                // (max_new) a state's completion tokens followed by a continuation
    float *adv;                  // (N, max_new) every token's A_j: what the policy trains on (token_adv)
};

/* build_mcprm: MC-PRM for steps of N completions of up to max_new tokens, model shape c, K = k continuations
   per state (sampler calls of up to max(K, MC_MAX_ROWS) rows); allowed (NULL: none) must outlive mc. */
static void build_mcprm(MCPRM *mc, const GPTConfig *c, int N, int max_new, int k, int whiten, int segment,
                        OutcomeReward reward, const void *task, const unsigned char *allowed) {
    size_t cap = (size_t)N * max_new;
    int states_per_call = MC_MAX_ROWS / k > 1 ? MC_MAX_ROWS / k : 1;
    if ((size_t)states_per_call > cap) states_per_call = (int)cap;
    *mc = (MCPRM){.k = k, .whiten = whiten, .segment = segment, .max_new = max_new, .maxT = c->max_seq_len,
                  .reward = reward, .task = task, .allowed = allowed, .rows = states_per_call * k};
    size_t R = mc->rows;
    int **ints[] = {&mc->state_len, &mc->state_prefix, &mc->state_group, &mc->step_start, &mc->state_of,
                    &mc->cand_state, &mc->row_len, &mc->row_budget, &mc->cont_len, &mc->num_steps,
                    &mc->scratch, &mc->seq, &mc->cont};
    size_t counts[] = {cap, cap, cap, cap, cap, cap, R, R, R, (size_t)N, (size_t)max_new,
                       (size_t)N * mc->maxT, R * max_new};
    for (size_t a = 0; a < sizeof counts / sizeof counts[0]; a++)
        *ints[a] = (int *)callocCheck(counts[a], sizeof(int));
    mc->state_seq = (const int **)callocCheck(cap, sizeof(int *));
    mc->row_seq = (const int **)callocCheck(R, sizeof(int *));
    mc->state_stream = (uint64_t *)callocCheck(cap, sizeof(uint64_t));
    mc->value = (float *)callocCheck(cap, sizeof(float));
    mc->adv = (float *)callocCheck(cap, sizeof(float));
    mc->state_tokens = (long *)callocCheck(cap, sizeof(long));
    mc->cont_logp = (float *)callocCheck(R * max_new, sizeof(float));
    mc->rngs = (Rng *)callocCheck(R, sizeof(Rng));
    build_kvcache(&mc->kv, c, mc->rows);
}

static void free_mcprm(MCPRM *mc) {
    void *arrays[] = {(void *)mc->state_seq, mc->state_len, mc->state_prefix, mc->state_group, mc->value,
                      mc->state_stream, mc->state_tokens, mc->num_steps, mc->step_start, mc->state_of,
                      mc->seq, mc->cand_state, (void *)mc->row_seq, mc->row_len, mc->row_budget, mc->cont,
                      mc->cont_len, mc->cont_logp, mc->rngs, mc->scratch, mc->adv};
    for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++) free(arrays[a]);
    free_kvcache(&mc->kv);
}

/* mc_stream: the RNG stream of continuation 0 (c: + c, c < 4096) from completion i's first b tokens at
   step `step`, disjoint from all others, so no V̂ depends on batching or threads. i < 4096, b < 1024. */
static uint64_t mc_stream(int step, int i, int b) {
    return (1ull << 62) + ((((uint64_t)step * 4096 + (uint64_t)i) * 1024 + (uint64_t)b) << 12);
}

/* mc_segment: each step's first token of comp[0..len) into start[0..m); returns m. A step ends after
   each step-end character (mode, e.g. ',') but the last token, or (MC_SEGMENT_TOKEN) at every token. */
static int mc_segment(const int *comp, int len, int mode, int *start) {
    int comma = mode == MC_SEGMENT_TOKEN ? -1 : char_to_token((unsigned char)mode), m = 0;
    for (int t = 0; t < len; t++)
        if (t == 0 || mode == MC_SEGMENT_TOKEN || comp[t - 1] == comma) start[m++] = t;
    return m;
}

/* mc_build_states: the distinct states (shared_prompts) of batch g's steps, <bos> prompt and the step's
   first tokens, as states 0..D−1 in order of first appearance (kept in place of the list of every step's
   state); state_of maps each step to its state. */
static int mc_build_states(MCPRM *mc, const GroupBatch *g, int step) {
    int stride = g->max_new, C = 0;
    for (int i = 0; i < g->N; i++) {
        int *seq = mc->seq + (size_t)i * mc->maxT, *start = mc->step_start + (size_t)i * stride;
        memcpy(seq, g->prompt[i], (size_t)g->plen[i] * sizeof(int));
        memcpy(seq + g->plen[i], g->comp_row[i], (size_t)g->clen[i] * sizeof(int));
        mc->num_steps[i] = mc_segment(g->comp_row[i], g->clen[i], mc->segment, start);
        for (int j = 0; j < mc->num_steps[i]; j++, C++) {
            mc->state_seq[C] = seq;
            mc->state_len[C] = g->plen[i] + start[j];
        }
    }
    if (C > 0) shared_prompts(mc->cand_state, C, mc->state_seq, mc->state_len);
    int D = 0, c = 0;
    for (int p = 0; p < g->num_groups; p++)
        for (int i = g->group_start[p]; i < g->group_start[p + 1]; i++)
            for (int j = 0; j < mc->num_steps[i]; j++, c++) {
                int b = mc->step_start[(size_t)i * stride + j];
                if (mc->cand_state[c] == c) {   // the first appearance of these tokens: a new state, D <= c
                    mc->state_seq[D] = mc->state_seq[c];
                    mc->state_len[D] = mc->state_len[c];
                    mc->state_prefix[D] = b;
                    mc->state_group[D] = p;
                    mc->state_stream[D] = mc_stream(step, i, b);
                    mc->cand_state[c] = D++;
                }
                else mc->cand_state[c] = mc->cand_state[mc->cand_state[c]];   // its leader's, c' < c
                mc->state_of[(size_t)i * stride + j] = mc->cand_state[c];
            }
    return mc->num_states = D;
}

// mc_estimate_values: each state's V̂ (value), the mean reward of K continuations from π_old; its cost
static MCStats mc_estimate_values(MCPRM *mc, GPT *policy, float temperature, uint64_t seed) {
    MCStats st = {mc->num_states, 0, 0, 0};
    int K = mc->k, per_call = mc->rows / mc->k;
    for (int first = 0; first < mc->num_states; first += per_call) {
        int n = first + per_call <= mc->num_states ? per_call : mc->num_states - first;
        for (int r = 0; r < n * K; r++) {   // row r: continuation r % K of state first + r / K
            int d = first + r / K;
            mc->row_seq[r] = mc->state_seq[d];
            mc->row_len[r] = mc->state_len[d];
            mc->row_budget[r] = mc->max_new - mc->state_prefix[d];
            rng_seed(&mc->rngs[r], seed, mc->state_stream[d] + (uint64_t)(r % K));
        }
        sample_completions_budget(policy, &mc->kv, n * K, mc->row_seq, mc->row_len, mc->row_budget,
                                  mc->max_new, temperature, 0, mc->rngs, mc->allowed, mc->cont, mc->cont_logp,
                                  mc->cont_len);
        st.calls++;
        for (int d = first; d < first + n; d++) {
            int b = mc->state_prefix[d];
            memcpy(mc->scratch, mc->state_seq[d] + mc->state_len[d] - b, (size_t)b * sizeof(int));
            double sum = 0.0;
            long tokens = 0;
            for (int r = (d - first) * K; r < (d - first + 1) * K; r++) {
                const int *cont = mc->cont + (size_t)r * mc->max_new;
                memcpy(mc->scratch + b, cont, (size_t)mc->cont_len[r] * sizeof(int));
                sum += mc->reward(mc->task, mc->state_group[d], mc->scratch, b + mc->cont_len[r]);
                tokens += mc->cont_len[r];
            }
            mc->value[d] = (float)(sum / K);
            mc->state_tokens[d] = tokens;
            st.tokens += tokens;
            st.positions += mc->state_len[d] + tokens - K;   // its prefill; each continuation but its last
        }
    }
    return st;
}

/* token_moments: the mean of x − y (y NULL: 0) over every completion token (arrays (N, stride), row i
   holding len[i] tokens) into *mean, the sum of squared deviations into *ss, in double. Returns the count. */
static long token_moments(const float *x, const float *y, const int *len, int N, int stride, double *mean,
                          double *ss) {
    double sum = 0.0;
    long n = 0;
    for (int i = 0; i < N; i++)
        for (int t = 0; t < len[i]; t++, n++) {
            size_t at = (size_t)i * stride + t;
            sum += (double)x[at] - (y ? y[at] : 0.0f);
        }
    *mean = sum / n;
    *ss = 0.0;
    for (int i = 0; i < N; i++)
        for (int t = 0; t < len[i]; t++) {
            size_t at = (size_t)i * stride + t;
            double d = (double)x[at] - (y ? y[at] : 0.0f) - *mean;
            *ss += d * d;
        }
    return n;
}

/* whiten_advantages: out (may be adv) = (A − mean) / sqrt(sample var + 1e-8) over every completion token
   (TRL's and verl's masked_whiten); equal advantages, or only one, become 0. */
static void whiten_advantages(float *out, const float *adv, const int *len, int N, int stride) {
    double mean, ss;
    long n = token_moments(adv, NULL, len, N, stride, &mean, &ss);
    double inv_std = n > 1 ? 1.0 / sqrt(ss / (n - 1) + 1e-8) : 0.0;
    for (int i = 0; i < N; i++)
        for (int t = 0; t < len[i]; t++) {
            size_t at = (size_t)i * stride + t;
            out[at] = (float)((adv[at] - mean) * inv_std);
        }
}

// mc_prm_advantages: step `step`'s A_j of batch g (scored; policy π_old) into mc->adv, g->token_adv; its cost
static MCStats mc_prm_advantages(MCPRM *mc, GPT *policy, GroupBatch *g, const GRPOConfig *cfg, int step) {
    mc_build_states(mc, g, step);
    MCStats st = mc_estimate_values(mc, policy, cfg->temperature, (uint64_t)cfg->seed);
    for (int i = 0; i < g->N; i++) {   // in double; the last of the m steps: r_i − V̂(s_{m−1})
        size_t row = (size_t)i * g->max_new;
        const int *start = mc->step_start + row, *state = mc->state_of + row;
        for (int j = 0, m = mc->num_steps[i]; j < m; j++) {
            int last = j == m - 1, end = last ? g->clen[i] : start[j + 1];
            double next = last ? g->reward[i] : mc->value[state[j + 1]];
            float A = (float)(next - mc->value[state[j]]);
            for (int t = start[j]; t < end; t++) mc->adv[row + t] = A;
        }
    }
    if (mc->whiten) whiten_advantages(mc->adv, mc->adv, g->clen, g->N, g->max_new);
    g->token_adv = mc->adv;
    return st;
}

// ----------------------------------------------------------------------------
// Comparison method: PPO (Schulman et al. 2017, arXiv 1707.06347; GAE: arXiv 1506.02438; verl's conventions;
// notes/credit-assignment.md §4): GRPO's loss with GAE's A_t from a critic V(x, y_<t), the SFT trunk with a
// scalar value head (verl's critic; VinePPO's PPO baseline), then μ AdamW steps of it.

typedef struct {
    float gamma, lam;    // GAE's discount γ and λ (--gae-gamma, --gae-lambda; verl's defaults 1)
    float clip_value;    // c of the clipped value loss: V stays within V_old ± c (verl's cliprange_value 0.5)
    AdamWConfig opt;     // the policy's AdamW settings and schedule, at --critic-lr
} CriticConfig;

struct Critic {
    CriticConfig cfg;
    GPT trunk;                 // the transformer (its LM head never runs: wte only embeds tokens)
    int C;
    float *head, *head_grad;   // (C+1) the value head w (C) then b, V = w · lnf + b; its gradient
    float *head_m, *head_v;    // (C+1) its AdamW moments
    int adam_t;                // the critic's AdamW steps taken (μ per GRPO step)
    float *pos;                // (max_batch, maxT) V at every position of the last micro-batch, then ∂loss/∂V
    // per completion token, (N, max_new), row i holding completion i's tokens as in GroupBatch
    float *value_old;          // V_old(i,t): the critic's value before generating token t, at sampling time
    float *returns, *adv_raw;  // return_t = A_t + V_old (GAE's value target); GAE's A_t
    float *adv;                // A_t whitened over the batch: what the policy trains on
    float *dvalue;             // V(i,t) in the current iteration of critic_update, then ∂(value loss)/∂V(i,t)
    unsigned char *clipped;    // 1 where the clipped branch of the value loss is taken
    void *section;             // the checkpoint's state section "critic" (critic_to_section)
    uint64_t section_bytes;
};

/* gae_advantages: GAE (eq. 16; verl's compute_gae_advantage_return) of N completions into adv and ret
   (N, stride) from value (V_old), r_i on the last token, V = 0 after it, in double (γ = λ = 1: A_t = r − V). */
static void gae_advantages(float *adv, float *ret, const float *value, const float *reward, const int *clen,
                           int N, int stride, float gamma, float lam) {
    for (int i = 0; i < N; i++) {
        const float *v = value + (size_t)i * stride;
        double next_value = 0.0, next_adv = 0.0;   // after the last token
        for (int t = clen[i] - 1; t >= 0; t--) {
            double delta = (t == clen[i] - 1 ? reward[i] : 0.0) + (double)gamma * next_value - v[t];
            double a = delta + (double)gamma * lam * next_adv;
            adv[(size_t)i * stride + t] = (float)a;
            ret[(size_t)i * stride + t] = (float)(a + v[t]);
            next_value = v[t];
            next_adv = a;
        }
    }
}

/* value_loss: Σ coef·ℓ (double) over n tokens of PPO's clipped value loss (verl's compute_value_loss),
   ℓ = ½ max((V − ret)², (clip(V, V_old − c, V_old + c) − ret)²). dvalue gets coef·(V − ret), or 0 where
   the clipped branch is strictly larger (clip() constant, as torch.clamp): clipped (NULL: none) marks. */
static double value_loss(int n, const float *value, const float *value_old, const float *ret, float coef,
                         float clip_value, float *dvalue, unsigned char *clipped) {
    double loss = 0.0;
    for (int j = 0; j < n; j++) {
        float lo = value_old[j] - clip_value, hi = value_old[j] + clip_value;
        float v_clipped = value[j] < lo ? lo : (value[j] > hi ? hi : value[j]);
        float err = value[j] - ret[j], err_clipped = v_clipped - ret[j];
        float l_unclipped = err * err, l_clipped = err_clipped * err_clipped;
        int take_clip = l_clipped > l_unclipped;
        loss += (double)coef * 0.5 * (take_clip ? l_clipped : l_unclipped);
        dvalue[j] = take_clip ? 0.0f : coef * err;
        if (clipped) clipped[j] = (unsigned char)take_clip;
    }
    return loss;
}

// value_head_forward: value (N) = lnf (N,C) · w + b with head = [w (C), b], in place of the LM head
static void value_head_forward(float *value, const float *lnf, const float *head, int N, int C) {
    #pragma omp parallel for
    for (int n = 0; n < N; n++) {
        float s = 0.0f;
        for (int i = 0; i < C; i++) s += lnf[(size_t)n * C + i] * head[i];
        value[n] = s + head[C];
    }
}

/* value_head_backward: dlnf (N,C) = dvalue·w for dvalue (N) = ∂loss/∂V; adds Σ_n dvalue_n·[lnf_n, 1] to
   dhead (C+1), in position order (any thread count, same sums). */
static void value_head_backward(float *dlnf, float *dhead, const float *dvalue, const float *lnf,
                                const float *head, int N, int C) {
    #pragma omp parallel for
    for (int n = 0; n < N; n++)
        for (int i = 0; i < C; i++) dlnf[(size_t)n * C + i] = dvalue[n] * head[i];
    #pragma omp parallel for
    for (int i = 0; i <= C; i++) {
        float s = 0.0f;
        for (int n = 0; n < N; n++) s += dvalue[n] * (i < C ? lnf[(size_t)n * C + i] : 1.0f);
        dhead[i] += s;
    }
}

// The critic's state section of a checkpoint: int64 {AdamW steps, trunk parameters P, channels C},
// then float32: the trunk's parameters, AdamW m and v (P each), the value head, its m and v (C+1 each).
#define CRITIC_TAG "critic"
static uint64_t critic_section_bytes(size_t P, int C) {
    return 3 * sizeof(int64_t) + (3 * (uint64_t)P + 3 * (uint64_t)(C + 1)) * sizeof(float);
}

// build_critic: init's trunk and verl's value head (w ~ N(0, 0.02) from seed, b = 0), N x max_new. CPU only.
static void build_critic(Critic *c, const GPT *init, int max_batch, int N, int max_new, CriticConfig cfg,
                         uint64_t seed) {
    *c = (Critic){.cfg = cfg};
    build_gpt(&c->trunk, init->config, max_batch, 0);
    memcpy(c->trunk.params_memory, init->params_memory, init->num_parameters * sizeof(float));
    c->C = init->config.channels;
    float **head[] = {&c->head, &c->head_grad, &c->head_m, &c->head_v};
    for (int a = 0; a < 4; a++) *head[a] = (float *)callocCheck(c->C + 1, sizeof(float));
    Rng rng;
    rng_seed(&rng, seed, 0xc417);
    for (int i = 0; i < c->C; i++) c->head[i] = 0.02f * rng_normal(&rng);
    size_t positions = (size_t)max_batch * init->config.max_seq_len, NT = (size_t)N * max_new;
    c->pos = (float *)callocCheck(positions, sizeof(float));
    float **per_token[] = {&c->value_old, &c->returns, &c->adv_raw, &c->adv, &c->dvalue};
    for (size_t a = 0; a < sizeof per_token / sizeof per_token[0]; a++)
        *per_token[a] = (float *)callocCheck(NT, sizeof(float));
    c->clipped = (unsigned char *)callocCheck(NT, 1);
    c->section_bytes = critic_section_bytes(c->trunk.num_parameters, c->C);
    c->section = mallocCheck(c->section_bytes);
}

static void free_critic(Critic *c) {
    free_gpt(&c->trunk);
    void *arrays[] = {c->head, c->head_grad, c->head_m, c->head_v, c->pos, c->value_old, c->returns,
                      c->adv_raw, c->adv, c->dvalue, c->clipped, c->section};
    for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++) free(arrays[a]);
}

/* critic_forward: policy_logp for the critic on completions [first, first+B) of g: out (N, max_new) gets
   V(i,t) at position plen−1+t, before token t (verl's values[:, -len-1:-1]); V in pos (B·T). Returns T. */
static int critic_forward(Critic *c, GroupBatch *g, int first, int B, float *out) {
    int T = make_batch(g->inputs, g->targets, B, g->prompt + first, g->plen + first, g->comp_row + first,
                       g->clen + first);
    gpt_forward_trunk(&c->trunk, g->inputs, B, T);
    value_head_forward(c->pos, c->trunk.acts.lnf, c->head, B * T, c->C);
    for (int b = 0, i = first; b < B; b++, i++)
        for (int t = 0; t < g->clen[i]; t++)
            out[(size_t)i * g->max_new + t] = c->pos[b * T + g->plen[i] - 1 + t];
    return T;
}

// ppo_advantages: V_old, GAE's A_t and return_t, A_t whitened into g->token_adv; explained variance, mean |A|
static void ppo_advantages(Critic *c, GroupBatch *g, const GRPOConfig *cfg, CriticStats *stats) {
    int N = g->N, stride = g->max_new, micro = cfg->micro_batch > 0 ? cfg->micro_batch : N;
    for (int first = 0; first < N; first += micro)
        critic_forward(c, g, first, first + micro <= N ? micro : N - first, c->value_old);
    gae_advantages(c->adv_raw, c->returns, c->value_old, g->reward, g->clen, N, stride, c->cfg.gamma,
                   c->cfg.lam);
    whiten_advantages(c->adv, c->adv_raw, g->clen, N, stride);
    g->token_adv = c->adv;
    double mean_r, var_r, mean_d, var_d, sum_abs = 0.0;
    long n = token_moments(c->returns, NULL, g->clen, N, stride, &mean_r, &var_r);
    token_moments(c->returns, c->value_old, g->clen, N, stride, &mean_d, &var_d);
    for (int i = 0; i < N; i++)
        for (int t = 0; t < g->clen[i]; t++) sum_abs += fabs(c->adv_raw[(size_t)i * stride + t]);
    stats->explained_var = n > 1 ? 1.0 - (var_d / (n - 1)) / (var_r / (n - 1) + 1e-5) : 0.0;
    stats->mean_abs_adv = sum_abs / n;
}

/* critic_loss_backward: the step's value loss (token-mean, verl's default; --mask-truncated's completions
   count nothing), its gradient into the critic's (zeroed here). *clip_frac: the clipped branch's share. */
static double critic_loss_backward(Critic *c, GroupBatch *g, const GRPOConfig *cfg, double *clip_frac) {
    int N = g->N, stride = g->max_new, micro = cfg->micro_batch > 0 ? cfg->micro_batch : N;
    long tokens = 0, clipped = 0;
    for (int i = 0; i < N; i++) tokens += cfg->mask_truncated && g->truncated[i] ? 0 : g->clen[i];
    float coef = tokens > 0 ? (float)(1.0 / tokens) : 0.0f;
    double loss = 0.0;
    gpt_zero_grad(&c->trunk);
    memset(c->head_grad, 0, (size_t)(c->C + 1) * sizeof(float));
    for (int first = 0; first < N; first += micro) {
        int B = first + micro <= N ? micro : N - first;
        int T = critic_forward(c, g, first, B, c->dvalue);
        for (int b = 0, i = first; b < B; b++, i++) {
            size_t row = (size_t)i * stride;
            float w = cfg->mask_truncated && g->truncated[i] ? 0.0f : coef;
            loss += value_loss(g->clen[i], c->dvalue + row, c->value_old + row, c->returns + row, w,
                               c->cfg.clip_value, c->dvalue + row, c->clipped + row);
            for (int t = 0; t < g->clen[i]; t++) clipped += c->clipped[row + t] && w > 0.0f;
            for (int t = 0; t < T; t++)   // ∂loss/∂V back to the positions it was read at; others 0
                c->pos[b * T + t] = g->targets[b * T + t] >= 0 ? c->dvalue[row + t + 1 - g->plen[i]] : 0.0f;
        }
        gpt_zero_act_grads(&c->trunk);
        value_head_backward(c->trunk.grads_acts.lnf, c->head_grad, c->pos, c->trunk.acts.lnf,
                            c->head, B * T, c->C);
        gpt_backward_trunk(&c->trunk, g->inputs);
    }
    *clip_frac = tokens ? (double)clipped / tokens : 0.0;
    return loss;
}

/* critic_update: grpo_update for the critic, its gradient norm over trunk and head: μ AdamW steps at
   --critic-lr (μ = 1: the value clip never binds), stopping at a non-finite loss or norm; stats: iter 0's. */
static UpdateStatus critic_update(Critic *c, GroupBatch *g, const GRPOConfig *cfg, CriticStats *stats) {
    const AdamWConfig *o = &c->cfg.opt;
    for (int iter = 0; iter < cfg->num_iterations; iter++) {
        double clip_frac;
        double loss = critic_loss_backward(c, g, cfg, &clip_frac);
        double ss = grad_sum_squares(c->trunk.grads_memory, c->trunk.num_parameters);
        for (int i = 0; i <= c->C; i++) ss += (double)c->head_grad[i] * c->head_grad[i];
        float norm = isfinite(loss) ? (float)sqrt(ss) : (float)loss;
        if (!isfinite(norm)) {   // the loss's, or else the gradient norm's
            stats->not_finite = norm;
            return isfinite(loss) ? UPDATE_GRAD_NORM_NOT_FINITE : UPDATE_LOSS_NOT_FINITE;
        }
        float coef = o->grad_clip > 0.0f ? o->grad_clip / (norm + 1e-6f) : 1.0f;
        if (coef < 1.0f) {
            #pragma omp parallel for
            for (size_t i = 0; i < c->trunk.num_parameters; i++) c->trunk.grads_memory[i] *= coef;
            for (int i = 0; i <= c->C; i++) c->head_grad[i] *= coef;
        }
        float lr = lr_at(o, c->adam_t);
        c->adam_t += 1;
        adamw_update(&c->trunk, o, lr, c->adam_t);
        // the head's step as adamw_update's, weight decay on w (a 1 x C weight), not on b
        float bc1 = 1.0f - powf(o->beta1, (float)c->adam_t), bc2 = 1.0f - powf(o->beta2, (float)c->adam_t);
        for (int i = 0; i <= c->C; i++) {
            float wd = i < c->C ? o->weight_decay : 0.0f, grad = c->head_grad[i];
            float mi = o->beta1 * c->head_m[i] + (1.0f - o->beta1) * grad;
            float vi = o->beta2 * c->head_v[i] + (1.0f - o->beta2) * grad * grad;
            float p = c->head[i] * (1.0f - lr * wd);
            c->head_m[i] = mi;
            c->head_v[i] = vi;
            c->head[i] = p - lr * (mi / bc1) / (sqrtf(vi / bc2) + o->eps);
        }
        if (iter == 0) {
            stats->value_loss = loss;
            stats->value_clip_frac = clip_frac;
            stats->grad_norm = norm;
        }
    }
    return UPDATE_DONE;
}

// why critic_update stopped (the names stop_on_nan prints)
static const char *CRITIC_STOPPED_BY[] = {"", "the critic's value loss", "the critic's gradient norm"};

// ----------------------------------------------------------------------------
// Probe (--probe-every N; notes/credit-assignment.md, "How far λ-GRPO's update is from GRPO's"): every N
// steps, iteration 0's gradient under GRPO and λ-GRPO by the update's own functions; it changes nothing.

enum { PROBE_ARRAYS = 10 };  // the per-token (and seq_coef) arrays of a GroupBatch the update writes
typedef struct Probe {
    int every;              // N: steps N, 2N, ... (1-based, as the log's) are probed
    int step;               // the step last probed (0: none yet)
    double cos;             // cos(g_λ, g_GRPO); NaN when either gradient is 0
    double norm_ratio;      // ‖g_λ‖ / ‖g_GRPO‖; NaN when ‖g_GRPO‖ = 0
    double share;           // tokens with |λ(i,t)| > 1 among those the loss counts (c_i != 0); NaN: none
    double seconds;         // wall-clock seconds of the probe (left out of the step's clock)
    float *grad[2];         // (num_parameters) g_GRPO and g_λ, as grads_memory lays them out
    float *tok[PROBE_ARRAYS];   // (N, max_new) each, used in place of the batch's (probe_directions)
    unsigned char *clipped;     // (N, max_new)
} Probe;

// build_probe: a probe every `every` steps (>= 1) of a model's gradients, batches of N x max_new
static void build_probe(Probe *p, size_t num_parameters, int N, int max_new, int every) {
    *p = (Probe){.every = every};
    for (int o = 0; o < 2; o++) p->grad[o] = (float *)callocCheck(num_parameters, sizeof(float));
    for (int a = 0; a < PROBE_ARRAYS; a++) p->tok[a] = (float *)callocCheck((size_t)N * max_new, sizeof(float));
    p->clipped = (unsigned char *)callocCheck((size_t)N * max_new, 1);
}

static void free_probe(Probe *p) {
    for (int o = 0; o < 2; o++) free(p->grad[o]);
    for (int a = 0; a < PROBE_ARRAYS; a++) free(p->tok[a]);
    free(p->clipped);
}

// Points m's gradient tensors at mem (num_parameters floats): backward passes accumulate there.
static void probe_point_grads(GPT *m, float *mem) {
    m->grads_memory = mem;
    point_tensors((float **)&m->grads, mem, m->param_sizes, NUM_PARAM_TENSORS);
}

/* probe_directions: g_GRPO and g_λ of batch g (after build_group_trees) into p->grad[0] and [1], and
   p->cos, norm_ratio, share; the policy and g but the forward's scratch are left as they were. */
static void probe_directions(Probe *p, GPT *policy, GPT *ref, GroupBatch *g, const GRPOConfig *cfg,
                             const unsigned char *allowed) {
    GroupBatch b = *g;
    float **arrays[PROBE_ARRAYS] = {&b.logp, &b.logp_old, &b.logp_ref, &b.adv_tok, &b.weight, &b.coef,
                                    &b.dlogp, &b.ratio, &b.kl, &b.seq_coef};
    for (int a = 0; a < PROBE_ARRAYS; a++) *arrays[a] = p->tok[a];
    b.clipped = p->clipped;
    float *own_grads = policy->grads_memory;
    for (int o = 0; o < 2; o++) {
        GRPOConfig as = *cfg;
        as.obj.objective = o == 0 ? OBJ_GRPO : OBJ_LAMBDA_GRPO;
        UpdateStats us;
        double kl_sum = 0.0;
        int clipped = 0;
        grpo_prepare_tokens(&b, &as, &us);
        probe_point_grads(policy, p->grad[o]);
        grpo_loss_backward(policy, ref, &b, &as, 0, allowed, &kl_sum, &clipped);
    }
    probe_point_grads(policy, own_grads);
    long counted = 0, shared = 0;
    for (int i = 0; i < b.N; i++)   // the tokens of the completions the loss counts
        for (int t = 0; t < b.clen[i] && b.seq_coef[i] != 0.0f; t++, counted++)
            shared += b.lambda_size[(size_t)i * b.max_new + t] > 1;
    double dot = 0.0, nn[2] = {0.0, 0.0};
    for (size_t k = 0; k < policy->num_parameters; k++) {
        double a = p->grad[0][k], c = p->grad[1][k];
        dot += a * c;
        nn[0] += a * a;
        nn[1] += c * c;
    }
    p->cos = nn[0] > 0.0 && nn[1] > 0.0 ? dot / sqrt(nn[0] * nn[1]) : NAN;
    p->norm_ratio = nn[0] > 0.0 ? sqrt(nn[1] / nn[0]) : NAN;
    p->share = counted ? (double)shared / counted : NAN;
}

#ifdef TESTING   // tests/test_grpo.c's faults, to see its "changes nothing" test fail:
static int probe_test_fault = 0;   // 1: the probe draws from the run's RNG; 2: it takes an AdamW step
#endif

// train.csv's probe columns of step `step`: its values, or empty cells when the probe did not run
#define PROBE_CSV_COLUMNS ",probe_cos,probe_norm_ratio,probe_share,probe_s"
static void probe_csv_fields(char *out, size_t cap, const Probe *p, int step) {
    if (p->step != step) snprintf(out, cap, ",,,,");
    else snprintf(out, cap, ",%.9g,%.9g,%.6f,%.4f", p->cos, p->norm_ratio, p->share, p->seconds);
}

// ---- The hooks grpo_step calls (declared before it): per-token advantages, the probe, PPO's critic update
static void method_token_advantages(TrainRun *run, StepReport *r) {
    if (run->mc) r->mc = mc_prm_advantages(run->mc, run->policy, run->batch, &run->cfg, run->state->step);
    if (run->critic) ppo_advantages(run->critic, run->batch, &run->cfg, &r->critic);
    Probe *p = run->probe;   // at steps every, 2·every, ...; r->t[0..3] move by its seconds
    if (!p || r->step % p->every != 0) return;
    double start = wall_seconds();
    probe_directions(p, run->policy, run->ref, run->batch, &run->cfg, NULL);
#ifdef TESTING
    if (probe_test_fault == 1) rng_int(&run->state->rng, 2);
    if (probe_test_fault == 2) adamw_update(run->policy, &run->opt, run->opt.lr, 1);
#endif
    p->step = r->step;
    p->seconds = wall_seconds() - start;
    for (int k = 0; k <= 3; k++) r->t[k] += p->seconds;
}

static void method_after_update(TrainRun *run, StepReport *r) {   // grpo_step calls it with a critic only
    UpdateStatus status = critic_update(run->critic, run->batch, &run->cfg, &r->critic);
    if (status != UPDATE_DONE)
        stop_on_nan(CRITIC_STOPPED_BY[status], r->step, r->critic.not_finite, run->last_good);
}

// ----------------------------------------------------------------------------
// Prompt selection (notes/credit-assignment.md §5): an all-equal group has advantages 0 and, at β = 0, no
// gradient, yet it cost k completions. mopps (Qu et al. 2025, arXiv 2507.04632): of M candidates, the P whose
// Thompson draw p̂ of success is nearest τ; dynamic (DAPO, Yu et al. 2025, arXiv 2503.14476, §3.2): all-equal
// groups replaced round by round. A success: task_reward 1 without --format-reward (MoPPS: acc >= 1).

/* rng_gamma_log: the log of a Gamma(a, 1) draw, a > 0 (Marsaglia & Tsang 2000, ACM TOMS 26(3)); for a < 1
   the paper's boost Gamma(a + 1)·U^(1/a), in logarithms (U^(1/a) underflows). */
static double rng_gamma_log(Rng *r, double a) {
    double boost = 0.0;   // log U^(1/a) for a < 1
    if (a < 1.0) {
        boost = log(rng_open01(r)) / a;
        a += 1.0;
    }
    double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = rng_normal64(r);
        double v = 1.0 + c * x;
        if (v <= 0.0) continue;
        v = v * v * v;
        double u = rng_open01(r);
        if (u < 1.0 - 0.0331 * (x * x) * (x * x) || log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
            return log(d * v) + boost;
    }
}

/* rng_beta: a Beta(a, b) draw, a, b > 0: X/(X + Y), X ~ Gamma(a, 1) drawn before Y ~ Gamma(b, 1), as
   1/(1 + exp(log Y − log X)) so that tiny X and Y do not give 0/0. */
static double rng_beta(Rng *r, double a, double b) {
    double log_x = rng_gamma_log(r, a);   // drawn first
    return 1.0 / (1.0 + exp(rng_gamma_log(r, b) - log_x));
}

enum { SELECT_UNIFORM, SELECT_MOPPS, SELECT_DYNAMIC };
static const char *PROMPT_SELECT_NAMES[] = {"uniform", "mopps", "dynamic", NULL};

#define DYNAMIC_MAX_ROUNDS 15
#define DYNAMIC_DEFAULT_ROUNDS 9   // 10 samplings a step at most: verl's DAPO recipe, max_num_gen_batches=10

struct PromptSelector {
    int method;              // SELECT_UNIFORM, SELECT_MOPPS or SELECT_DYNAMIC (--prompt-select)
    // MoPPS
    double target, decay;    // τ (--select-target); d (--select-decay; 1: no decay)
    int candidates;          // M (--select-candidates)
    int thompson;            // 1: p̂ ~ Beta(α, β); 0: p̂ = α/(α + β), the posterior mean (a test hook)
    int n;                   // training prompts
    double *state;           // the checkpoint's "mopps" section, doubles: n, h, α (n), β (n), then for
                             // each of the run's h groups so far the pair (p̂, realised success s/k)
    double *alpha, *beta, *history;   // (n), (n) and (h, 2): views into state
    long groups, capacity;   // h, and the most groups state holds now (mopps_reserve grows it)
    int *cand;               // (M) candidates (dataset indices)
    double *phat;            // (M) each candidate's p̂
    double *step_pred;       // (P) the p̂ of each group of the step
    unsigned char *taken;    // (n) scratch: 1 for a prompt already a candidate of this step
    // DAPO dynamic sampling
    int max_rounds;          // --dynamic-max-rounds: refill rounds after the step's first sampling
    GroupBatch spare;        // a refill round's groups: the first m of its P
};

// 1 when group p's rewards are all equal: its advantages are 0, it teaches nothing
static int group_rewards_equal(const GroupBatch *g, int p) {
    int first = g->group_start[p];
    for (int i = first + 1; i < g->group_start[p + 1]; i++)
        if (g->reward[i] != g->reward[first]) return 0;
    return 1;
}

// ---- MoPPS

typedef struct {   // a value and where it came from, sorted by value, then by position (stable)
    double key;
    int pos;
} KeyedIndex;

static int keyed_index_cmp(const void *a, const void *b) {
    const KeyedIndex *x = (const KeyedIndex *)a, *y = (const KeyedIndex *)b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->pos - y->pos;
}

/* mopps_select: the step's P prompts: M distinct candidates (MoPPS's shuffled loader), each one's p̂ ~
   Beta(α, β) in turn (thompson = 0: the mean), the P nearest τ, nearest first, ties in candidate order
   (MoPPS's argsort(distances)[:P], made stable); every draw from the run's RNG (resumable). */
static void mopps_select(PromptSelector *s, GroupBatch *g, const Dataset *d, Rng *run_rng) {
    int M = s->candidates, P = g->num_groups;
    for (int c = 0; c < M; c++) {
        int q = rng_int(run_rng, d->n);
        while (s->taken[q]) q = rng_int(run_rng, d->n);
        s->taken[q] = 1;
        s->cand[c] = q;
    }
    KeyedIndex *near = (KeyedIndex *)mallocCheck((size_t)M * sizeof *near);
    for (int c = 0; c < M; c++) {
        int q = s->cand[c];
        double a = s->alpha[q], b = s->beta[q];
        s->taken[q] = 0;   // all 0 again for the next step
        s->phat[c] = s->thompson ? rng_beta(run_rng, a, b) : a / (a + b);
        near[c] = (KeyedIndex){(s->phat[c] - s->target) * (s->phat[c] - s->target), c};
    }
    qsort(near, M, sizeof *near, keyed_index_cmp);
    for (int p = 0; p < P; p++) {
        s->step_pred[p] = s->phat[near[p].pos];
        g->prompt_idx[p] = s->cand[near[p].pos];
    }
    free(near);
    set_group_prompts(g, d);
}

// The bytes of the "mopps" state section now: n, h, α, β and h pairs, as doubles.
static uint64_t mopps_state_bytes(const PromptSelector *s) {
    return (uint64_t)(2 + 2 * (long)s->n + 2 * s->groups) * sizeof(double);
}

// mopps_reserve: room in s->state for `groups` groups' history, doubling; α, β and history re-pointed
static void mopps_reserve(PromptSelector *s, long groups) {
    if (groups <= s->capacity && s->state) return;
    long capacity = s->capacity > 0 ? s->capacity : 512;
    while (capacity < groups) capacity *= 2;
    size_t doubles = (size_t)(2 + 2 * (long)s->n + 2 * capacity);
    s->state = (double *)realloc(s->state, doubles * sizeof(double));
    if (!s->state) fail_at(__FILE__, __LINE__, "out of memory for the MoPPS history", oom_hint);
    s->capacity = capacity;
    s->alpha = s->state + 2;
    s->beta = s->alpha + s->n;
    s->history = s->beta + s->n;
}

// ---- DAPO dynamic sampling

// copy_group: group q of src (sampled, scored) into group p of dst (same group size and max_new)
static void copy_group(GroupBatch *dst, int p, const GroupBatch *src, int q) {
    size_t i = dst->group_start[p], s = src->group_start[q], k = src->group_start[q + 1] - s;
    size_t row = (size_t)src->max_new;
    dst->prompt_idx[p] = src->prompt_idx[q];
    memcpy(dst->prompt + i, src->prompt + s, k * sizeof *src->prompt);
    memcpy(dst->plen + i, src->plen + s, k * sizeof(int));
    memcpy(dst->clen + i, src->clen + s, k * sizeof(int));
    memcpy(dst->truncated + i, src->truncated + s, k);
    memcpy(dst->reward + i, src->reward + s, k * sizeof(float));
    memcpy(dst->comp + i * row, src->comp + s * row, k * row * sizeof(int));
    memcpy(dst->sample_logp + i * row, src->sample_logp + s * row, k * row * sizeof(float));
}

// drop_group: group p of g leaves the step: its tokens (generated, never trained) are auxiliary.
static void drop_group(const GroupBatch *g, int p, SelectStats *out) {
    for (int i = g->group_start[p]; i < g->group_start[p + 1]; i++) {
        out->gen_aux += g->clen[i];
        out->aux_positions += g->plen[i] + g->clen[i] - 1;
    }
    out->groups_dropped++;
}

/* dynamic_merge: refill round spare (scored) into batch g: each group of spare with signal replaces g's next
   all-equal group; the all-equal ones of spare and the replaced ones drop_group. Returns the replaced. */
static int dynamic_merge(GroupBatch *g, const GroupBatch *spare, SelectStats *out) {
    int p = 0, filled = 0;
    for (int q = 0; q < spare->num_groups; q++) {
        while (p < g->num_groups && !group_rewards_equal(g, p)) p++;
        if (p == g->num_groups || group_rewards_equal(spare, q)) drop_group(spare, q, out);
        else {
            drop_group(g, p, out);
            copy_group(g, p, spare, q);
            filled++;
        }
    }
    return filled;
}

// ---- the selector, as the training loop calls it

/* build_prompt_selector: the selector of P groups of k per step over n prompts, with τ, M (P <= M <= n:
   cmd_train checks), d and round cap; every MoPPS posterior the prior (1, 1) (mopps_resume loads one). */
static void build_prompt_selector(PromptSelector *s, int method, double target, int candidates, double decay,
                                  int max_rounds, int n, int P, int k, int max_new, int maxT) {
    *s = (PromptSelector){.method = method, .target = target, .decay = decay, .candidates = candidates,
                          .thompson = 1, .n = n, .max_rounds = max_rounds};
    if (method == SELECT_MOPPS) {
        mopps_reserve(s, P);
        for (int q = 0; q < n; q++) s->alpha[q] = s->beta[q] = 1.0;
        s->state[0] = n;
        s->state[1] = 0;
        s->cand = (int *)mallocCheck((size_t)candidates * sizeof(int));
        s->phat = (double *)mallocCheck((size_t)candidates * sizeof(double));
        s->step_pred = (double *)mallocCheck((size_t)P * sizeof(double));
        s->taken = (unsigned char *)callocCheck(n, 1);
    }
    if (method == SELECT_DYNAMIC) build_group_batch(&s->spare, P, k, max_new, 0, maxT);
}

static void free_prompt_selector(PromptSelector *s) {
    void *arrays[] = {s->state, s->cand, s->phat, s->step_pred, s->taken};
    for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++) free(arrays[a]);
    if (s->method == SELECT_DYNAMIC) free_group_batch(&s->spare);
}

// select_prompts: the step's prompts into g, one per group (mopps_select or draw_prompts); starts out
static void select_prompts(PromptSelector *s, GroupBatch *g, const Dataset *d, Rng *run_rng,
                           SelectStats *out) {
    *out = (SelectStats){.logged = s->method != SELECT_UNIFORM};
    if (s->method == SELECT_MOPPS) mopps_select(s, g, d, run_rng);
    else draw_prompts(g, d, run_rng);
}

/* select_observe: batch g's realised success and all-equal groups into out; for MoPPS, each group's
   successes update its prompt's posterior and (p̂, s/k) joins the history (for the end-of-run Spearman). */
static void select_observe(PromptSelector *s, const GroupBatch *g, const Dataset *d, SelectStats *out) {
    int mopps = s->method == SELECT_MOPPS, equal = 0;
    long successes = 0;
    double pred = 0.0;
    if (mopps) mopps_reserve(s, s->groups + g->num_groups);
    for (int p = 0; p < g->num_groups; p++) {
        int k = g->group_start[p + 1] - g->group_start[p], q = g->prompt_idx[p], succ = 0;
        for (int i = g->group_start[p]; i < g->group_start[p + 1]; i++)   // the verifier accepts it
            succ += task_reward(d->task, d->nums + (size_t)q * MAX_NUMS, d->num_count[q], d->target[q],
                                g->comp_row[i], g->clen[i], 0.0f) == 1.0f;
        successes += succ;
        equal += group_rewards_equal(g, p);
        if (!mopps) continue;
        // the posterior after succ successes of k (PosteriorSampler.train), decayed towards the prior (1, 1)
        s->alpha[q] = s->decay * s->alpha[q] + (1.0 - s->decay) * 1.0 + succ;
        s->beta[q] = s->decay * s->beta[q] + (1.0 - s->decay) * 1.0 + (k - succ);
        s->history[2 * s->groups] = s->step_pred[p];
        s->history[2 * s->groups + 1] = (double)succ / k;
        s->state[1] = (double)++s->groups;
        pred += s->step_pred[p];
    }
    out->p_pred = mopps ? pred / g->num_groups : -1.0;
    out->p_real = (double)successes / g->N;
    out->groups_sampled = g->num_groups + out->groups_dropped;
    out->eq_sampled = equal + out->groups_dropped;
}

/* select_after_scoring (grpo_step's hook): DAPO's refill rounds, then select_observe (and MoPPS's state
   section). A round draws a new prompt (run RNG) per all-equal group, samples, scores and dynamic_merge's
   them, up to --dynamic-max-rounds; at the cap the batch keeps the rest (advantage 0) and cap_hit is 1. */
static void select_after_scoring(TrainRun *run, StepReport *r) {
    PromptSelector *s = run->select;
    TrainState *st = run->state;
    GroupBatch *g = run->batch, *spare = &s->spare;
    SelectStats *out = &r->select;
    if (s->method == SELECT_DYNAMIC) {
        double t0 = wall_seconds();
        int nfree = 0;
        for (int p = 0; p < g->num_groups; p++) nfree += group_rewards_equal(g, p);
        for (int round = 1; round <= s->max_rounds && nfree > 0; round++) {
            spare->num_groups = nfree;   // its first nfree groups (of equal size)
            spare->N = spare->group_start[nfree];
            draw_prompts(spare, run->train, &st->rng);
            // completion i of round r (1..15) on stream (step+1)·65536 + r·4096 + i (N <= 4096)
            uint64_t first_stream = ((uint64_t)st->step + 1) * 65536 + (uint64_t)round * 4096;
            sample_group_streams(run->policy, run->kv, spare, &run->cfg, first_stream, NULL);
            score_group(spare, run->train, run->format_reward);
            nfree -= dynamic_merge(g, spare, out);
            out->refill_rounds = round;
        }
        out->cap_hit = nfree > 0;
        out->t_refill = wall_seconds() - t0;
    }
    select_observe(s, g, run->train, out);
    if (s->method == SELECT_MOPPS) ckpt_add_section(st, "mopps", s->state, mopps_state_bytes(s), 0);
}

// average_ranks: each v[i]'s rank among v (n) from 1, ties the mean of theirs (scipy's rankdata "average")
static void average_ranks(double *rank, const double *v, int n) {
    KeyedIndex *order = (KeyedIndex *)mallocCheck((size_t)n * sizeof *order);   // n >= 2 (spearman)
    for (int i = 0; i < n; i++) order[i] = (KeyedIndex){v[i], i};
    qsort(order, n, sizeof *order, keyed_index_cmp);
    for (int i = 0; i < n; ) {
        int j = i;
        while (j + 1 < n && order[j + 1].key == order[i].key) j++;
        double mean_rank = 0.5 * (i + j) + 1.0;   // ranks i+1 .. j+1
        for (int t = i; t <= j; t++) rank[order[t].pos] = mean_rank;
        i = j + 1;
    }
    free(order);
}

/* spearman: Spearman's rank correlation of the n pairs (x[i], y[i]), the Pearson correlation of their
   average ranks (scipy.stats.spearmanr); NaN when n < 2 or x or y is constant. MoPPS's p̂ vs success. */
static double spearman(const double *x, const double *y, int n) {
    if (n < 2) return NAN;
    double *rx = (double *)mallocCheck(2 * (size_t)n * sizeof(double)), *ry = rx + n;
    average_ranks(rx, x, n);
    average_ranks(ry, y, n);
    double mean = 0.5 * (n + 1);   // the mean of n ranks, ties or not
    double sxy = 0.0, sxx = 0.0, syy = 0.0;
    for (int i = 0; i < n; i++) {
        sxy += (rx[i] - mean) * (ry[i] - mean);
        sxx += (rx[i] - mean) * (rx[i] - mean);
        syy += (ry[i] - mean) * (ry[i] - mean);
    }
    free(rx);
    return sxx == 0.0 || syy == 0.0 ? NAN : sxy / sqrt(sxx * syy);
}

// ----------------------------------------------------------------------------
// Speed paths: the same sums as the plain loops of the reference, in an order that keeps the
// vector units busy (notes/cpu-fast-paths.md). Tested against the plain versions by tests/test_grpo.c.

// ---- Register tiles, packed panels and vector helpers (matmul_forward / matmul_backward)
#if defined(__AVX512F__)
#define MM_R 8      // rows per register tile
#define MM_W 32     // outputs per register tile: two AVX-512 vectors
#else
#define MM_R 6
#define MM_W 16     // two AVX vectors
#endif
#define MM_NB 128   // rows per task in out and dinp
#define MM_OB 96    // outputs per task in dweight (at most)
#define MM_IG 8     // column panels per task in dweight
#define MM_KB 256   // rows of inp per dweight panel
#define MM_KC 64    // terms per partial sum in mm_tile

// acc[r][j] = Σ_k a[r][k*ks] * panel[k][j], r < MM_R, j < MM_W (pragmas: keep the sums in
// registers). Summed in blocks of MM_KC terms: one long sequential float sum loses accuracy.
static inline void mm_tile(float acc[MM_R][MM_W], const float *const a[MM_R], size_t ks,
                           const float *panel, int K) {
    for (int r = 0; r < MM_R; r++)
        for (int j = 0; j < MM_W; j++) acc[r][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += MM_KC) {
        float part[MM_R][MM_W] = {{0}};
        int kend = imin(K, k0 + MM_KC);
        for (int k = k0; k < kend; k++) {
            const float *p = panel + (size_t)k * MM_W;
            #pragma GCC unroll 16
            for (int r = 0; r < MM_R; r++) {
                float x = a[r][(size_t)k * ks];
                #pragma omp simd
                for (int j = 0; j < MM_W; j++) part[r][j] += x * p[j];
            }
        }
        #pragma GCC unroll 16
        for (int r = 0; r < MM_R; r++)
            #pragma omp simd
            for (int j = 0; j < MM_W; j++) acc[r][j] += part[r][j];
    }
}

// panels s = 0, 1, ... (rows, MM_W), pstride floats apart: columns [MM_W·s, MM_W·(s+1)) of src
// (rows, ld) up to column w, zero beyond; read row by row, which the prefetcher streams
static void pack_panels(float *panels, size_t pstride, const float *src, size_t ld, int rows, int w) {
    for (int k = 0; k < rows; k++) {
        const float *s = src + (size_t)k * ld;
        for (int j0 = 0; j0 < w && k + 8 < rows; j0 += MM_W) __builtin_prefetch(s + 8 * ld + j0);
        for (int j0 = 0; j0 < w; j0 += MM_W) {
            float *p = panels + (size_t)(j0 / MM_W) * pstride + (size_t)k * MM_W;
            if (w - j0 >= MM_W) {
                #pragma omp simd
                for (int j = 0; j < MM_W; j++) p[j] = s[j0 + j];
            } else {
                for (int j = 0; j < MM_W; j++) p[j] = j0 + j < w ? s[j0 + j] : 0.0f;
            }
        }
    }
}

/* mm_block: rows [n0, nend) of out (ldo apart, columns [0, w)) = rows of A (row n at A + n·rs, terms ks
   apart) times panel (K, MM_W) + bias (NULL: none), or += with accumulate; MM_R rows a tile (past row N-1
   it rereads it, stores nothing). Inlined into mm_rows and mm_cols, each with its own constants. */
__attribute__((always_inline))
static inline void mm_block(float *out, size_t ldo, const float *A, size_t rs, size_t ks, int N, int n0,
                            int nend, const float *panel, int K, int w, const float *bias, int accumulate,
                            int prefetch) {
    float b[MM_W];
    for (int j = 0; j < MM_W; j++) b[j] = bias && j < w ? bias[j] : 0.0f;
    for (int n = n0; n < nend; n += MM_R) {
        const float *a[MM_R];
        for (int r = 0; r < MM_R; r++) a[r] = A + (size_t)imin(n + r, N - 1) * rs;
        // the next tile's output rows (ldo apart: not prefetched by the CPU) load while this one computes
        for (int r = MM_R; prefetch && r < 2 * MM_R && n + r < nend; r++)
            __builtin_prefetch(out + (size_t)(n + r) * ldo, 1);
        float acc[MM_R][MM_W];
        mm_tile(acc, a, ks, panel, K);
        for (int r = 0; r < MM_R && n + r < nend; r++) {
            float *o = out + (size_t)(n + r) * ldo;
            if (w == MM_W && accumulate) {
                #pragma omp simd
                for (int j = 0; j < MM_W; j++) o[j] += acc[r][j];
            } else if (w == MM_W) {
                #pragma omp simd
                for (int j = 0; j < MM_W; j++) o[j] = acc[r][j] + b[j];
            } else {
                for (int j = 0; j < w; j++) o[j] = accumulate ? o[j] + acc[r][j] : acc[r][j] + b[j];
            }
        }
    }
}

// mm_block on rows of A (N x K, lda apart). Not inlined: in the callers' parallel regions gcc spills a[].
__attribute__((noinline))
static void mm_rows(float *out, size_t ldo, const float *A, size_t lda, int N, int n0, int nend,
                    const float *panel, int K, int w, const float *bias, int accumulate) {
    mm_block(out, ldo, A, lda, 1, N, n0, nend, panel, K, w, bias, accumulate, 1);
}

// matmul_backward's dweight tiles: out[o, 0:w) += Σ_{k<K} A[k, o] panel[k, :], o in [o0, oend), A (K, lda)
__attribute__((noinline))
static void mm_cols(float *out, size_t ldo, const float *A, size_t lda, int o0, int oend,
                    const float *panel, int K, int w) {
    mm_block(out, ldo, A, 1, lda, (int)lda, o0, oend, panel, K, w, NULL, 1, 0);
}

// expf that gcc can vectorize (glibc's vector expf needs -ffast-math): Cephes polynomial,
// error ~1 ulp; x clamped to [-87, 88] with 0/1 masks (vectorizable); x = ±inf gives NaN.
static inline float exp_simd(float x) {
    float lo = x < -87.0f, hi = x > 88.0f;
    x = lo * -87.0f + hi * 88.0f + (1.0f - lo - hi) * x;
    float k = rintf(x * 1.44269504088896341f);
    float r = x - k * 0.693359375f - k * -2.12194440e-4f;   // ln2 split in two for exactness
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    float kb = k + (12582912.0f + 127.0f);     // 1.5*2^23 + 127 + k: k + 127 in the low mantissa bits
    uint32_t bits;
    memcpy(&bits, &kb, sizeof bits);
    bits <<= 23;                               // 2^k, with no float->int conversion (UB for NaN)
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

// Σ x[i] (prod 0) or Σ x[i] y[i] (prod 1, a constant where inlined) as 16 partial sums added pairwise
#define SUM_W 16
static inline float sum_w16(const float *x, const float *y, int n, int prod) {
    float acc[SUM_W] = {0};
    int nw = n / SUM_W * SUM_W;
    for (int i = 0; i < nw; i += SUM_W)
        #pragma omp simd
        for (int j = 0; j < SUM_W; j++) acc[j] += prod ? x[i + j] * y[i + j] : x[i + j];
    for (int i = nw; i < n; i++) acc[i - nw] += prod ? x[i] * y[i] : x[i];
    for (int w = SUM_W / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    return acc[0];
}

static inline float sum16(const float *x, int n) { return sum_w16(x, x, n, 0); }
static inline float dot16(const float *x, const float *y, int n) { return sum_w16(x, y, n, 1); }

#define ATTN_WIDE 32   // attention's sums: so many positions or channels at a time while they last, then 8

// The sums of attention, one block of them: for j < width (32 or 8, a constant where inlined),
// y[i0 + j] = (accumulate ? y[i0 + j] : 0) + scale · Σ_{t0 <= t < t1} w[t*ws] x[t*xs + i0 + j],
// even and odd t in two sums. attn_rows uses it with scale 1 (exact), attn_scores with 1/sqrt(hs).
static inline __attribute__((always_inline)) void attn_block(float *y, int accumulate, const float *w,
                                                             size_t ws, const float *x, size_t xs, int t0,
                                                             int t1, int i0, int width, float scale) {
    float acc[ATTN_WIDE] = {0}, acc2[ATTN_WIDE] = {0};
    int t = t0;
    for (; t + 1 < t1; t += 2) {
        float w0 = w[t * ws], w1 = w[(t + 1) * ws];
        const float *x0 = x + t * xs + i0, *x1 = x0 + xs;
        #pragma omp simd
        for (int j = 0; j < width; j++) {
            acc[j] += w0 * x0[j];
            acc2[j] += w1 * x1[j];
        }
    }
    if (t < t1)
        for (int j = 0; j < width; j++) acc[j] += w[t * ws] * x[t * xs + i0 + j];
    #pragma omp simd
    for (int j = 0; j < width; j++) y[i0 + j] = (accumulate ? y[i0 + j] : 0.0f) + (acc[j] + acc2[j]) * scale;
}

// s[t2] = scale * Σ_i q[i] kt[i*Tp + t2] for t2 < n8 (a multiple of 8; kt padded to match)
static inline void attn_scores(float *s, const float *q, const float *kt, int hs, int Tp, int n8,
                               float scale) {
    int t0 = 0;
    for (; t0 + ATTN_WIDE <= n8; t0 += ATTN_WIDE)
        attn_block(s, 0, q, 1, kt, Tp, 0, hs, t0, ATTN_WIDE, scale);
    for (; t0 < n8; t0 += 8) attn_block(s, 0, q, 1, kt, Tp, 0, hs, t0, 8, scale);
}

// y[i] = (accumulate ? y[i] : 0) + Σ_{t0 <= t < t1} w[t*ws] x[t*xs + i], for i < hs
static inline void attn_rows(float *y, int accumulate, const float *w, size_t ws,
                             const float *x, size_t xs, int t0, int t1, int hs) {
    int i0 = 0;
    for (; i0 + ATTN_WIDE <= hs; i0 += ATTN_WIDE)
        attn_block(y, accumulate, w, ws, x, xs, t0, t1, i0, ATTN_WIDE, 1.0f);
    for (; i0 + 8 <= hs; i0 += 8) attn_block(y, accumulate, w, ws, x, xs, t0, t1, i0, 8, 1.0f);
    for (int i = i0; i < hs; i++) {   // channels left over when hs is not a multiple of 8
        float acc = 0.0f;
        for (int t = t0; t < t1; t++) acc += w[t * ws] * x[t * xs + i];
        y[i] = (accumulate ? y[i] : 0.0f) + acc;
    }
}

// Reads p[0..n) once, one float per cache line, so that the prefetcher streams it in: attention's
// hs floats out of every 3C it picks up too late (backward 1.9x faster). The asm keeps the loads.
static inline void warm_cache(const float *p, size_t n) {
    float s = 0.0f;
    for (size_t i = 0; i < n; i += 16) s += p[i];
    __asm__ __volatile__("" : : "g"(s));
}

// The floats of a weight (OC,C) packed for matmul_forward: ceil(OC/MM_W) panels of (C, MM_W)
static size_t weight_panels_size(int C, int OC) {
    return (size_t)((OC + MM_W - 1) / MM_W) * C * MM_W;
}

// panels = weight (OC,C) packed: panel ob (C, MM_W) = rows ob*MM_W.. transposed, zero past row OC-1
static void pack_weight_panels(float *panels, const float *weight, int C, int OC) {
    #pragma omp parallel for
    for (int ob = 0; ob < (OC + MM_W - 1) / MM_W; ob++)
        for (int j = 0, o = ob * MM_W; j < MM_W; j++, o++)
            for (int k = 0; k < C; k++)
                panels[((size_t)ob * C + k) * MM_W + j] = o < OC ? weight[(size_t)o * C + k] : 0.0f;
}

// matmul_forward on a weight packed by pack_weight_panels: out (N,OC) = inp (N,C) @ weight^T
// + bias (OC, may be NULL); a block of MM_NB rows meets every panel in turn (the rows stay in cache)
static void matmul_forward_packed(float *out, const float *inp, const float *panels, const float *bias,
                                  int N, int C, int OC) {
    int nob = (OC + MM_W - 1) / MM_W;
    int nnb = (N + MM_NB - 1) / MM_NB;
    size_t psize = (size_t)C * MM_W;
    #pragma omp parallel for collapse(2)
    for (int nb = 0; nb < nnb; nb++)
        for (int ob = 0; ob < nob; ob++) {
            int o0 = ob * MM_W;
            int nend = imin(N, (nb + 1) * MM_NB);
            const float *b = bias ? bias + o0 : NULL;
            mm_rows(out + o0, OC, inp, C, N, nb * MM_NB, nend, panels + ob * psize, C, imin(MM_W, OC - o0), b, 0);
        }
}

// matmul: out (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC, may be NULL). Like dinp and dweight,
// on mm_tile; each output summed by one thread in one order whatever N and the thread count
// (decoding one position gives the full forward's logits bit for bit).
static void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                           int N, int C, int OC) {
    float *panels = (float *)mallocCheck(weight_panels_size(C, OC) * sizeof(float));
    pack_weight_panels(panels, weight, C, OC);
    matmul_forward_packed(out, inp, panels, bias, N, C, OC);
    free(panels);
}

// dinp (N,C) += dout (N,OC) @ weight (OC,C); dweight (OC,C) += dout^T @ inp; dbias += Σ_n dout.
// One parallel region: the three products are independent once the panels are packed.
static void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                            const float *inp, const float *weight, int N, int C, int OC) {
    int nib = (C + MM_W - 1) / MM_W;
    int nnb = (N + MM_NB - 1) / MM_NB;
    size_t psize = (size_t)OC * MM_W;
    // dweight's tasks: MM_IG column panels times osz outputs (a multiple of MM_R, <= MM_OB, >= 1 per thread)
    int ngb = (nib + MM_IG - 1) / MM_IG;
    int nob = imax((OC + MM_OB - 1) / MM_OB, num_threads());
    int osz = ((OC + nob - 1) / nob + MM_R - 1) / MM_R * MM_R;
    nob = (OC + osz - 1) / osz;
    float *panels = (float *)mallocCheck(nib * psize * sizeof(float));
    #pragma omp parallel
    {
        // panel ib: columns ib*MM_W.. of weight, (OC, MM_W)
        #pragma omp for
        for (int ib = 0; ib < nib; ib++)
            pack_panels(panels + ib * psize, psize, weight + ib * MM_W, C, OC, imin(MM_W, C - ib * MM_W));
        // dinp[n, i0:i0+MM_W] += Σ_o dout[n,o] W[o, i0:i0+MM_W]
        #pragma omp for collapse(2) nowait
        for (int nb = 0; nb < nnb; nb++)
            for (int ib = 0; ib < nib; ib++) {
                int i0 = ib * MM_W;
                int iw = imin(MM_W, C - i0);
                int nend = imin(N, (nb + 1) * MM_NB);
                mm_rows(dinp + i0, C, dout, OC, N, nb * MM_NB, nend, panels + ib * psize, OC, iw, NULL, 1);
            }
        // dW[o, i0:i0+MM_W] += Σ_n dout[n,o] inp[n, i0:i0+MM_W]: a task (a block of outputs, MM_IG column
        // panels) walks n in chunks of MM_KB rows, packing each chunk's panels of inp. dbias: the
        // first column group's tasks, row by row, while their chunk of dout is in cache.
        float *ipanels = (float *)mallocCheck((size_t)MM_IG * MM_KB * MM_W * sizeof(float));
        #pragma omp for collapse(2) schedule(dynamic) nowait
        for (int gb = 0; gb < ngb; gb++)
            for (int ob = 0; ob < nob; ob++) {
                int o0 = ob * osz;
                int oend = imin(OC, o0 + osz);
                int i0 = gb * MM_IG * MM_W;
                int gw = imin(MM_IG * MM_W, C - i0);
                float bsum[MM_OB] = {0};
                for (int n0 = 0; n0 < N; n0 += MM_KB) {
                    int kn = imin(MM_KB, N - n0);
                    const float *d = dout + (size_t)n0 * OC;
                    pack_panels(ipanels, (size_t)MM_KB * MM_W, inp + (size_t)n0 * C + i0, C, kn, gw);
                    for (int j0 = 0; j0 < gw; j0 += MM_W) {
                        const float *panel = ipanels + (size_t)(j0 / MM_W) * MM_KB * MM_W;
                        mm_cols(dweight + i0 + j0, C, d, OC, o0, oend, panel, kn, imin(MM_W, gw - j0));
                    }
                    if (dbias && gb == 0)
                        for (int n = 0; n < kn; n++)
                            #pragma omp simd
                            for (int o = o0; o < oend; o++) bsum[o - o0] += d[(size_t)n * OC + o];
                }
                if (dbias && gb == 0)
                    for (int o = o0; o < oend; o++) dbias[o] += bsum[o - o0];
            }
        free(ipanels);
    }
    free(panels);
}

// ---- The shared-prefix batch (--update-layout tree): a micro-batch packed as its prefix trie

/* SharedPrefixBatch (notes/shared-prefix-batch.md; not B(G): whole sequences, prompts included):
   row r holds token[r] at position pos[r] (its depth) under parent[r] (−1 at 0) and attends to its
   root path; rows in depth-first preorder, so r's subtree is [r, subtree_end[r]). Per head and
   layer, r's attention weights (root first) are entries att_off[r] .. att_off[r] + pos[r] of
   att_size. Row r predicts its edges' tokens edge_token[edge_start[r] .. edge_start[r+1]);
   completion token j of sequence b is edge edge_of[b·max_new + j]. */
struct SharedPrefixBatch {
    int rows, edges;              // in this batch
    int max_pos;                  // the largest pos[r]
    int *token, *pos, *parent, *subtree_end;   // (rows)
    size_t *att_off;              // (rows + 1)
    size_t att_size;              // att_off[rows]
    int *edge_start;              // (rows + 1)
    int *edge_token;              // (edges)
    float *edge_logp, *edge_dlogp;   // (edges) log π(edge_token | the row's prefix), ∂loss/∂ it
    int *edge_of;                 // (sequences, max_new)
    int max_new;                  // the row length of edge_of
    int cap_seqs, cap_rows, cap_edges;   // capacities: sequences, rows, edges
    int *scratch;                 // pack_shared_prefix_batch's trie in creation order (its own layout there)
};

// the embedding of pk's rows: out (rows, C) = wte[token[r]] + wpe[pos[r]]
static void spb_encoder_forward(float *out, const SharedPrefixBatch *pk, const float *wte, const float *wpe, int C) {
    encoder_forward_pos(out, pk->token, pk->pos, wte, wpe, pk->rows, C);
}

// its backward: dwte (V,C) += dres (rows,C) at each row's token, dwpe (maxT,C) at its position; serial
static void spb_encoder_backward(float *dwte, float *dwpe, const float *dres, const SharedPrefixBatch *pk, int C) {
    for (int r = 0; r < pk->rows; r++) {
        const float *d = dres + (size_t)r * C;
        float *dwe = dwte + (size_t)pk->token[r] * C, *dpe = dwpe + (size_t)pk->pos[r] * C;
        for (int i = 0; i < C; i++) { dwe[i] += d[i]; dpe[i] += d[i]; }
    }
}

#define TA_RB 32   // rows per task of tree attention

/* A task's copy of its root path for one head: column p of xt (hs, Tp) = x, row p of yb (Tp, hs) = y
   for the row at position p (in preorder a row's ancestors are the last rows seen at each depth). */
static inline void spb_path_put(float *xt, float *yb, const float *x, const float *y, int p, int hs,
                                 int Tp) {
    for (int i = 0; i < hs; i++) xt[(size_t)i * Tp + p] = x[i];
    memcpy(yb + (size_t)p * hs, y, (size_t)hs * sizeof(float));
}

/* spb_attention_paths: attention along each row's root path (inp (rows, 3C); w, att (NH, att_size)),
   bit for bit its position's in any sequence through it. Forward (dout NULL): w = softmax(q·k scale),
   y (rows, C) = Σ_j w_j v[path j]. Backward (dout (rows, C)): w = dS = att (da − Σ att da) scale with
   da_j = dout·v[path j], y (rows, 3C)'s dq += Σ_j dS_j k[path j]. A task (TA_RB rows, one head)
   loads the path above its first row, then walks its rows. */
static void spb_attention_paths(float *y, float *w, const float *att, const float *dout, const float *inp,
                                const SharedPrefixBatch *pk, int C, int NH) {
    int C3 = 3 * C, hs = C / NH, Tp = (pk->max_pos + 8) / 8 * 8;
    int ys = dout ? C3 : C, xo = dout ? 2 * C : C, yo = dout ? C : 2 * C;   // path: x transposed, y rows
    float scale = 1.0f / sqrtf((float)hs);
    int nblk = (pk->rows + TA_RB - 1) / TA_RB;
    #pragma omp parallel
    {
        // zeros: positions past a row's own are read (a score computed and not used), never used
        float *xt = (float *)callocCheck((2 * (size_t)hs + 1) * Tp, sizeof(float));
        float *yb = xt + (size_t)hs * Tp;
        float *s = yb + (size_t)hs * Tp;
        #pragma omp for collapse(2) schedule(dynamic)
        for (int blk = 0; blk < nblk; blk++)
            for (int h = 0; h < NH; h++) {
                int r0 = blk * TA_RB;
                int r1 = imin(pk->rows, r0 + TA_RB);
                for (int a = pk->parent[r0]; a >= 0; a = pk->parent[a]) {
                    const float *x = inp + (size_t)a * C3 + h * hs;
                    spb_path_put(xt, yb, x + xo, x + yo, pk->pos[a], hs, Tp);
                }
                for (int r = r0; r < r1; r++) {
                    int t = pk->pos[r];
                    const float *x = inp + (size_t)r * C3 + h * hs;   // q, k, v of row r at x, x + C, x + 2C
                    spb_path_put(xt, yb, x + xo, x + yo, t, hs, Tp);
                    float *wr = w + (size_t)h * pk->att_size + pk->att_off[r];
                    const float *q = dout ? dout + (size_t)r * C + h * hs : x;
                    attn_scores(s, q, xt, hs, Tp, (t + 8) / 8 * 8, dout ? 1.0f : scale);
                    if (dout) {
                        const float *a = att + (size_t)h * pk->att_size + pk->att_off[r];
                        float dot = 0.0f;
                        #pragma omp simd reduction(+:dot)
                        for (int j = 0; j <= t; j++) dot += a[j] * s[j];
                        for (int j = 0; j <= t; j++) wr[j] = a[j] * (s[j] - dot) * scale;
                    } else {
                        float maxv = -FLT_MAX, sum = 0.0f;
                        for (int j = 0; j <= t; j++) if (s[j] > maxv) maxv = s[j];
                        #pragma omp simd reduction(+:sum)
                        for (int j = 0; j <= t; j++) { s[j] = exp_simd(s[j] - maxv); sum += s[j]; }
                        float inv = 1.0f / sum;
                        for (int j = 0; j <= t; j++) wr[j] = s[j] * inv;
                    }
                    attn_rows(y + (size_t)r * ys + h * hs, dout != NULL, wr, 1, yb, hs, 0, t + 1, hs);
                }
            }
        free(xt);
    }
}

// spb_attention_forward: out (rows, C) and att (NH, att_size) of inp (rows, 3C), each row on its root path
static void spb_attention_forward(float *out, float *att, const float *inp, const SharedPrefixBatch *pk, int C,
                                   int NH) {
    spb_attention_paths(out, att, NULL, NULL, inp, pk, C, NH);
}

/* spb_attention_backward: dinp (rows, 3C) += ∂L/∂(q,k,v) given dout (rows, C); datt scratch. dS, dq
   along root paths, then dk_n = Σ dS_r[pos n] q_r and dv_n = Σ a_r[pos n] dout_r over n's subtree
   [n, subtree_end[n]) (the queries that see n): one sum per gradient row, no two tasks on one row. */
static void spb_attention_backward(float *dinp, float *datt, const float *dout, const float *inp,
                                    const float *att, const SharedPrefixBatch *pk, int C, int NH) {
    spb_attention_paths(dinp, datt, att, dout, inp, pk, C, NH);
    int C3 = 3 * C, hs = C / NH, nblk = (pk->rows + TA_RB - 1) / TA_RB;
    size_t AS = pk->att_size;
    #pragma omp parallel
    {
        float *wq = (float *)callocCheck(2 * (size_t)pk->rows, sizeof(float));   // one subtree's weights
        float *wd = wq + pk->rows;
        #pragma omp for collapse(2) schedule(dynamic)
        for (int blk = 0; blk < nblk; blk++)
            for (int h = 0; h < NH; h++)
                for (int n = blk * TA_RB; n < imin(pk->rows, (blk + 1) * TA_RB); n++) {
                    int t = pk->pos[n];
                    int end = pk->subtree_end[n];
                    for (int r = n; r < end; r++) {   // row r holds n's weight at index pos[n] = t
                        wq[r - n] = datt[(size_t)h * AS + pk->att_off[r] + t];
                        wd[r - n] = att[(size_t)h * AS + pk->att_off[r] + t];
                    }
                    // dk_n += Σ_r dS_r[t] q_r;  dv_n += Σ_r a_r[t] dout_r
                    float *dx = dinp + (size_t)n * C3 + h * hs;
                    attn_rows(dx + C, 1, wq, 1, inp + (size_t)n * C3 + h * hs, C3, 0, end - n, hs);
                    attn_rows(dx + 2 * C, 1, wd, 1, dout + (size_t)n * C + h * hs, C, 0, end - n, hs);
                }
        free(wq);
    }
}

// gpt_set_shape for a packed batch of at most max_batch sequences (then it fits); m->B = 0 marks it
static void gpt_set_rows(GPT *m, const SharedPrefixBatch *pk) {
    size_t cap = (size_t)m->max_batch * m->config.max_seq_len;
    if (pk->rows < 1 || (size_t)pk->rows > cap || pk->att_size > cap * m->config.max_seq_len)
        fail_at(__FILE__, __LINE__, "a packed batch exceeds the model's activations",
                "pack at most max_batch sequences at a time; please report this");
    size_t as[NUM_ACT_TENSORS];
    act_sizes_rows(as, &m->config, pk->rows, pk->att_size);
    point_tensors((float **)&m->acts, m->acts_memory, as, NUM_ACT_TENSORS);
    point_tensors((float **)&m->grads_acts, m->grads_acts_memory, as, NUM_ACT_TENSORS);
    m->B = 0; m->T = pk->rows;
    m->att_size = pk->att_size;
}

/* gpt_forward_spb: gpt_forward and gpt_logprob_forward on the packed batch pk's rows: each row's softmax
   once into acts.probs (a row without edges: 0), its edges' log-probs into pk->edge_logp, bit for bit a
   padded batch's. CPU only (the CUDA build refuses --update-layout tree with the options). */
static void gpt_forward_spb(GPT *m, const SharedPrefixBatch *pk, float temperature,
                            const unsigned char *allowed) {
    gpt_set_rows(m, pk);
    trunk_forward(m, pk->token, pk);
    lm_head_forward(m);
    int V = m->config.vocab_size;
    #pragma omp parallel for
    for (int r = 0; r < pk->rows; r++) {
        const float *z = m->acts.logits + (size_t)r * V;
        float *pr = m->acts.probs + (size_t)r * V;
        if (pk->edge_start[r] == pk->edge_start[r + 1]) {   // no token to score
            memset(pr, 0, V * sizeof(float));
            continue;
        }
        float maxv, logsum = softmax_temperature(pr, &maxv, z, V, temperature, allowed);
        for (int e = pk->edge_start[r]; e < pk->edge_start[r + 1]; e++)
            pk->edge_logp[e] = (z[pk->edge_token[e]] * (1.0f / temperature) - maxv) - logsum;
    }
}

/* gpt_backward_spb: gpt_logprob_backward and gpt_backward for the last gpt_forward_spb, given
   pk->edge_dlogp (each edge's sequences' ∂loss/∂logp summed): each row's dlogits = Σ_e dlogp[e] ·
   (onehot(edge_token[e]) − probs) / temperature over its edges (overwritten), then the passes back. */
static void gpt_backward_spb(GPT *m, const SharedPrefixBatch *pk, float temperature) {
    int V = m->config.vocab_size;
    float inv_t = 1.0f / temperature;
    const float *dlogp = pk->edge_dlogp;
    #pragma omp parallel for
    for (int r = 0; r < pk->rows; r++) {
        float *d = m->grads_acts.logits + (size_t)r * V;
        const float *pr = m->acts.probs + (size_t)r * V;
        float g = 0.0f;
        for (int e = pk->edge_start[r]; e < pk->edge_start[r + 1]; e++) g += dlogp[e] * inv_t;
        for (int v = 0; v < V; v++) d[v] = -g * pr[v];
        for (int e = pk->edge_start[r]; e < pk->edge_start[r + 1]; e++)
            d[pk->edge_token[e]] += dlogp[e] * inv_t;
    }
    lm_head_backward(m);
    trunk_backward(m, pk->token, pk);
}

/* new_shared_prefix_batch: one for up to B sequences of up to maxT tokens with up to max_new completion
   tokens each (B = 0: an empty one, for a batch no model is run on); delete_shared_prefix_batch frees it. */
static SharedPrefixBatch *new_shared_prefix_batch(int B, int maxT, int max_new) {
    size_t R = (size_t)B * maxT, E = (size_t)B * max_new;
    SharedPrefixBatch *pk = (SharedPrefixBatch *)mallocCheck(sizeof *pk);
    *pk = (SharedPrefixBatch){.max_new = max_new, .cap_seqs = B, .cap_rows = (int)R, .cap_edges = (int)E};
    int **ints[] = {&pk->token, &pk->pos, &pk->parent, &pk->subtree_end, &pk->edge_start, &pk->edge_token,
                    &pk->edge_of, &pk->scratch};
    size_t n[] = {R, R, R, R, R + 1, E, E, 7 * R + 3 * E};   // scratch: pack_shared_prefix_batch's layout
    for (int a = 0; a < 8; a++) *ints[a] = (int *)mallocCheck(n[a] * sizeof(int));
    pk->att_off = (size_t *)mallocCheck((R + 1) * sizeof(size_t));
    pk->edge_logp = (float *)mallocCheck(E * sizeof(float));
    pk->edge_dlogp = (float *)mallocCheck(E * sizeof(float));
    return pk;
}

static void delete_shared_prefix_batch(SharedPrefixBatch *pk) {
    if (!pk) return;
    void *arrays[] = {pk->token, pk->pos, pk->parent, pk->subtree_end, pk->att_off, pk->edge_start,
                      pk->edge_token, pk->edge_logp, pk->edge_dlogp, pk->edge_of, pk->scratch, pk};
    for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++) free(arrays[a]);
}

/* pack_shared_prefix_batch: make_batch's B <= pk->cap_seqs sequences as their prefix trie in pk:
   a row per distinct prefix of a sequence's inputs (none for a sequence without completion tokens),
   an edge per (row, next completion token); preorder, children and edges in order of first
   appearance. Returns the row count. */
static int pack_shared_prefix_batch(SharedPrefixBatch *pk, int B, const int *const *prompt, const int *plen,
                                    const int *const *comp, const int *clen) {
    if (B > pk->cap_seqs)
        fail_at(__FILE__, __LINE__, "pack_shared_prefix_batch: more sequences than the pack holds",
                "please report this");
    // the trie in creation order: node c (ctok, cpos, cpar), its child and edge lists
    int R = pk->cap_rows, E = pk->cap_edges;
    int *ctok = pk->scratch, *cpos = ctok + R, *cpar = cpos + R, *first_child = cpar + R;
    int *next_sibling = first_child + R, *first_edge = next_sibling + R, *new_row = first_edge + R;
    int *etok = new_row + R, *next_edge = etok + E, *new_edge = next_edge + E;
    int nodes = 0, edges = 0, first_root = -1;
    for (int b = 0; b < B; b++) {
        int n = plen[b] + clen[b];
        int node = -1;   // the node of the prefix so far (-1: none yet)
        for (int t = 0; clen[b] > 0 && t < n - 1; t++) {
            int tok = t < plen[b] ? prompt[b][t] : comp[b][t - plen[b]];
            int *c = node < 0 ? &first_root : &first_child[node];   // the search ends on the list's last link
            while (*c >= 0 && ctok[*c] != tok) c = &next_sibling[*c];
            if (*c < 0) {   // a new prefix: a new node, the last child of its parent
                if (nodes == R)
                    fail_at(__FILE__, __LINE__, "pack_shared_prefix_batch: too many rows", "please report this");
                ctok[nodes] = tok;
                cpos[nodes] = t;
                cpar[nodes] = node;
                first_child[nodes] = next_sibling[nodes] = first_edge[nodes] = -1;
                *c = nodes++;
            }
            node = *c;
            if (t + 1 < plen[b]) continue;
            int target = comp[b][t + 1 - plen[b]];   // completion token j = t + 1 − plen
            int *e = &first_edge[node];
            while (*e >= 0 && etok[*e] != target) e = &next_edge[*e];
            if (*e < 0) {
                if (edges == E)
                    fail_at(__FILE__, __LINE__, "pack_shared_prefix_batch: too many edges", "please report this");
                etok[edges] = target;
                next_edge[edges] = -1;
                *e = edges++;
            }
            pk->edge_of[(size_t)b * pk->max_new + t + 1 - plen[b]] = *e;
        }
    }
    // depth-first preorder: a node (its row, attention offset and edges, renumbered in row order),
    // then its children's subtrees in order
    int rows = 0, e_new = 0;
    pk->att_off[0] = 0;
    pk->edge_start[0] = 0;
    pk->max_pos = 0;
    for (int c = first_root; c >= 0;) {
        int r = new_row[c] = rows++;
        pk->token[r] = ctok[c];
        pk->pos[r] = cpos[c];
        pk->parent[r] = cpar[c] < 0 ? -1 : new_row[cpar[c]];
        pk->max_pos = imax(pk->max_pos, cpos[c]);
        pk->att_off[r + 1] = pk->att_off[r] + cpos[c] + 1;
        for (int e = first_edge[c]; e >= 0; e = next_edge[e]) {
            new_edge[e] = e_new;
            pk->edge_token[e_new++] = etok[e];
        }
        pk->edge_start[r + 1] = e_new;
        int next = first_child[c];
        for (; next < 0 && c >= 0; c = cpar[c]) {   // a leaf closes itself and each ancestor it ends
            pk->subtree_end[new_row[c]] = rows;
            next = next_sibling[c];
        }
        c = next;
    }
    pk->rows = rows;
    pk->att_size = pk->att_off[rows];
    pk->edges = edges;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < clen[b]; j++) {
            int *at = &pk->edge_of[(size_t)b * pk->max_new + j];
            *at = new_edge[*at];
        }
    return rows;
}
/* policy_logp_spb: policy_logp on the micro-batch packed in g->spb, bit for bit (each completion
   token gets its edge's log-prob); leaves m's activations for policy_backward_spb. */
static void policy_logp_spb(GPT *m, GroupBatch *g, int first, int B, float temperature,
                             const unsigned char *allowed, float *out) {
    SharedPrefixBatch *pk = g->spb;
    if (pk->rows == 0) return;   // no completion tokens in this micro-batch
    gpt_forward_spb(m, pk, temperature, allowed);
    for (int b = 0; b < B; b++)
        for (int j = 0, i = first + b; j < g->clen[i]; j++)
            out[(size_t)i * g->max_new + j] = pk->edge_logp[pk->edge_of[(size_t)b * pk->max_new + j]];
}

/* policy_backward_spb: adds ∂loss/∂θ to m->grads for the last policy_logp_spb given g->dlogp (each
   edge's the sum of its tokens', in completion order): one log-prob backward per row, one pass. */
static void policy_backward_spb(GPT *m, GroupBatch *g, int first, int B, float temperature) {
    SharedPrefixBatch *pk = g->spb;
    if (pk->rows == 0) return;
    memset(pk->edge_dlogp, 0, (size_t)pk->edges * sizeof(float));
    for (int b = 0; b < B; b++) {
        int i = first + b;
        for (int j = 0; j < g->clen[i]; j++)
            pk->edge_dlogp[pk->edge_of[(size_t)b * pk->max_new + j]] += g->dlogp[(size_t)i * g->max_new + j];
    }
    gpt_backward_spb(m, pk, temperature);
}

// ---- Packed decode: the sampler's weights packed once per sampling call

// The floats of the decode step's weights packed (per layer qkvw, attprojw, fcw, fcprojw, then wte)
static size_t decode_panels_size(const GPTConfig *c) {
    int C = c->channels;
    return (size_t)c->num_layers * (weight_panels_size(C, 3 * C) + weight_panels_size(C, C) +
                                    weight_panels_size(C, 4 * C) + weight_panels_size(4 * C, C)) +
           weight_panels_size(C, c->vocab_size);
}

// The host's decode steps on kv use m's weights as now (kv->panels) until kv->packed = 0, in the
// order gpt_decode_step's matmuls read them (decode_matmul): a change to either order must change both.
static void kv_pack_weights(KVCache *kv, const GPT *m) {
    const GPTConfig *c = &m->config;
    const ParameterTensors *p = &m->params;
    int C = c->channels;
    float *dst = kv->panels;
    for (int l = 0; l < c->num_layers; l++) {
        const float *w[4] = {p->qkvw + (size_t)l * 3 * C * C, p->attprojw + (size_t)l * C * C,
                             p->fcw + (size_t)l * 4 * C * C, p->fcprojw + (size_t)l * 4 * C * C};
        int in[4] = {C, C, C, 4 * C}, out[4] = {3 * C, C, 4 * C, C};
        for (int i = 0; i < 4; i++) {
            pack_weight_panels(dst, w[i], in[i], out[i]);
            dst += weight_panels_size(in[i], out[i]);
        }
    }
    pack_weight_panels(dst, p->wte, C, c->vocab_size);
    kv->packed = 1;
}

// One matmul of a decode step: on the packed *panels (then moved past them), else matmul_forward
static void decode_matmul(GPT *m, const float **panels, float *out, const float *inp, const float *weight,
                          const float *bias, int B, int C, int OC) {
    (void)m;   // LAYER's dispatch needs it in the CUDA build only
    if (*panels) {
        matmul_forward_packed(out, inp, *panels, bias, B, C, OC);
        *panels += weight_panels_size(C, OC);
    } else {
        LAYER(m, matmul_forward)(out, inp, weight, bias, B, C, OC);
    }
}

// ---- The shared sampler: the sampler's work on distinct prompts and unfinished rows only

/* shared_prompts: leader[b] = the first row whose prompt equals row b's (same length, same
   tokens), b itself for the first row of each distinct prompt; returns how many are distinct.
   Rows are compared by content, so callers need not say which rows form a group. */
static int shared_prompts(int *leader, int B, const int *const *prompts, const int *prompt_len) {
    int distinct = 0;
    for (int b = 0; b < B; b++) {
        int a = 0;   // b's leader is a leader: only those are compared (B·distinct comparisons)
        while (a < b && (leader[a] != a || prompt_len[a] != prompt_len[b] ||
                         memcmp(prompts[a], prompts[b], (size_t)prompt_len[b] * sizeof(int))))
            a++;
        leader[b] = a;
        distinct += a == b;
    }
    return distinct;
}

/* sample_completions_shared: sample_completions_budget's tokens and log-probs, bit for bit, with
   less work (--sampler shared; notes/cpu-fast-paths.md): a decode step computes cache slots 0..n-1
   only, so each distinct prompt is fed once (copied to its other rows' slots), the weights are
   packed once, and a finished sequence leaves the front slots. */
static void sample_completions_shared(GPT *m, KVCache *kv, int B, const int *const *prompts,
                                      const int *prompt_len, const int *budget, int stride, float temperature,
                                      int greedy, Rng *rngs, const unsigned char *allowed,
                                      int *comp, float *comp_logp, int *comp_len) {
    if (B < 1) return;
    int V = m->config.vocab_size;
    int maxT = m->config.max_seq_len;
    int *leader = (int *)mallocCheck(6 * (size_t)B * sizeof(int));
    int *row_of = leader + B, *slot_of = row_of + B;   // row_of[s]: the row in slot s
    int *tok = slot_of + B, *pos = tok + B;            // per slot: the step's token and its position
    int *done = pos + B;
    float *probs = (float *)mallocCheck((size_t)V * sizeof(float));
    int D = shared_prompts(leader, B, prompts, prompt_len);
    kv_pack_weights(kv, m);
    // slots 0..D-1: the distinct prompts, longest first, so that the prompts still being fed
    // at any position are slots 0..n-1 (a prompt's last logits stay in its slot); then the other rows
    int nslot = 0;
    for (int len = maxT; len >= 1; len--)
        for (int b = 0; b < B; b++)
            if (leader[b] == b && prompt_len[b] == len) row_of[nslot++] = b;
    for (int b = 0; b < B; b++)
        if (leader[b] != b) row_of[nslot++] = b;
    for (int s = 0; s < B; s++) slot_of[row_of[s]] = s;
    // feed the distinct prompts, one position per step
    int n = D;
    for (int t = 0; t < prompt_len[row_of[0]]; t++) {
        while (prompt_len[row_of[n - 1]] <= t) n--;
        for (int s = 0; s < n; s++) {
            tok[s] = prompts[row_of[s]][t];
            pos[s] = t;
        }
        gpt_decode_step(m, kv, tok, pos, n);
    }
    // the other rows get their prompt's cache
    for (int s = D; s < B; s++)
        kv_copy_positions(kv, &m->config, s, slot_of[leader[row_of[s]]], prompt_len[row_of[s]]);
    for (int b = 0; b < B; b++) comp_len[b] = 0;
    for (int active = B;;) {
        // each unfinished row draws a token (its first from its prompt's slot)
        for (int s = 0; s < active; s++) {
            int b = row_of[s];
            size_t j = (size_t)b * stride + comp_len[b];
            const float *z = kv->logits + (size_t)(comp_len[b] ? s : slot_of[leader[b]]) * V;
            comp[j] = draw_token(z, V, temperature, greedy, &rngs[b], allowed, probs, &comp_logp[j]);
            comp_len[b]++;
            done[b] = comp[j] == TOK_EOS || comp_len[b] == budget[b];
        }
        // a finished row's slot takes the last unfinished row (with its cache): slots
        // 0..active-1 hold the unfinished rows
        for (int s = 0; s < active; s++) {
            if (!done[row_of[s]]) continue;
            while (active - 1 > s && done[row_of[active - 1]]) active--;
            active--;
            if (active == s) break;
            int b = row_of[active];
            kv_copy_positions(kv, &m->config, s, active, prompt_len[b] + comp_len[b] - 1);
            row_of[active] = row_of[s];
            row_of[s] = b;
        }
        if (active == 0) break;
        // each row feeds its last token
        for (int s = 0; s < active; s++) {
            int b = row_of[s];
            tok[s] = comp[(size_t)b * stride + comp_len[b] - 1];
            pos[s] = prompt_len[b] + comp_len[b] - 1;
        }
        gpt_decode_step(m, kv, tok, pos, active);
    }
    kv->packed = 0;   // the weights may change now: each matmul packs its own again
    free(leader);
    free(probs);
}

// ----------------------------------------------------------------------------
// CUDA seam (notes/cuda-integration.md): grpo_kernels.cu's functions besides the layers' cuda_ twins
// (LAYER), and the CUDA build's gpu_* hooks (GPU_HOOK). There a model or KV cache built after
// cuda_startup() lives in GPU memory; the loop, sampler, verifier, trees and objectives stay on the host.

#ifdef GRPO_CUDA
#ifdef __cplusplus
extern "C" {
#endif
extern int cuda_time_sgemm;
void cuda_kernel_times_start(void);
void cuda_kernel_times_report(FILE *f, int steps);
extern double cuda_sgemm_seconds;
void cuda_init(int tf32);
int cuda_probe(const char **why);
void *cuda_malloc(size_t bytes);
void cuda_free(void *p);
void cuda_memcpy_h2d(void *dst, const void *src, size_t bytes);
void cuda_memcpy_d2h(void *dst, const void *src, size_t bytes);
void cuda_synchronize(void);
void cuda_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T, int C, int V);
void cuda_logprob_forward(float *logp, float *probs, const float *logits, const int *targets, int N, int V,
                          float temperature, const unsigned char *allowed);
void cuda_logprob_backward(float *dlogits, const float *probs, const int *targets, const float *dlogp, int N,
                           int V, float temperature);
void cuda_adamw_update(float *params, const float *grads, float *m, float *v, const size_t *sizes,
                       const int *decay, int num_tensors, float lr, float beta1, float beta2, float eps,
                       float weight_decay, int t);
float cuda_clip_grad_norm(float *grads, size_t n, float max_norm);
double cuda_time_sgemms(int N, int C, int OC, int reps);
#ifdef __cplusplus
}
#endif

static int cuda_enabled = 0;   // set by cuda_startup(): models and KV caches built from then on live on the GPU

// cuda_startup: no GPU or driver is an error naming what is missing; then cuBLAS, TF32 off or on
static void cuda_startup(int tf32) {
    const char *why = "unknown";
    if (!cuda_enabled && cuda_probe(&why) == 0) {
        fprintf(stderr, "error: this is the CUDA build (grpo_cuda), and it found no usable NVIDIA GPU: %s\n"
                        "  hint: no NVIDIA driver, or one older than this CUDA runtime, or no GPU: check with nvidia-smi,\n"
                        "  or use the CPU build (make; ./grpo)\n", why);
        exit(EXIT_INPUT);
    }
    cuda_init(tf32);
    cuda_enabled = 1;
}

// The hooks (declared in "Model"): each acts on a model or cache in GPU memory (1), else returns 0.

// Once CUDA is on, moves a model just built on the host to the GPU: parameters, gradients (zero)
// and AdamW moments copied, activations left unset (every pass writes them first).
static void gpu_adopt_model(GPT *m) {
    if (!cuda_enabled) return;
    size_t pb = m->num_parameters * sizeof(float), ab = m->acts_capacity * sizeof(float);
    size_t BT = (size_t)m->max_batch * m->config.max_seq_len;
    float **arrays[6] = {&m->params_memory, &m->grads_memory, &m->m_memory, &m->v_memory, &m->acts_memory,
                         &m->grads_acts_memory};
    for (int i = 0; i < 6; i++) {
        float *host = *arrays[i];
        *arrays[i] = (float *)cuda_malloc(i < 4 ? pb : ab);
        if (i < 4) cuda_memcpy_h2d(*arrays[i], host, pb);
        free(host);
    }
    point_tensors((float **)&m->params, m->params_memory, m->param_sizes, NUM_PARAM_TENSORS);
    point_tensors((float **)&m->grads, m->grads_memory, m->param_sizes, NUM_PARAM_TENSORS);
    m->dev_inputs = (int *)cuda_malloc(BT * sizeof(int));
    m->dev_targets = (int *)cuda_malloc(BT * sizeof(int));
    m->dev_logp = (float *)cuda_malloc(BT * sizeof(float));
    m->dev_dlogp = (float *)cuda_malloc(BT * sizeof(float));
    m->dev_allowed = (unsigned char *)cuda_malloc(m->config.vocab_size);
    m->on_device = 1;
}

static int gpu_free_model(GPT *m) {
    if (!m->on_device) return 0;
    void *arrays[] = {m->params_memory, m->grads_memory, m->m_memory, m->v_memory, m->acts_memory,
                      m->grads_acts_memory, m->dev_inputs, m->dev_targets, m->dev_logp, m->dev_dlogp,
                      m->dev_allowed};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) cuda_free(arrays[i]);
    return 1;
}

// the batch's token ids go to the GPU once per forward
static const int *gpu_inputs(GPT *m, const int *inputs, size_t n) {
    if (!m->on_device) return inputs;
    cuda_memcpy_h2d(m->dev_inputs, inputs, n * sizeof(int));
    return m->dev_inputs;
}

// the GPU needs V to give each (token, channel) of dwte one thread
static int gpu_encoder_backward(GPT *m, float *dwte, float *dwpe, const float *dres, int B, int T, int C) {
    if (!m->on_device) return 0;
    cuda_encoder_backward(dwte, dwpe, dres, m->dev_inputs, B, T, C, m->config.vocab_size);
    return 1;
}

static int gpu_build_kvcache(KVCache *kv, const GPTConfig *c, int B) {
    if (!cuda_enabled) return 0;
    size_t L = c->num_layers, C = c->channels, T = c->max_seq_len, V = c->vocab_size, Tp = (T + 7) / 8 * 8;
    // the same buffers on the GPU, plus the step's inputs and logits
    size_t sizes[11] = {L * B * C * Tp, L * B * T * C, B * C, B * C, B * 3 * C, B * C, B * C, B * 4 * C,
                        B * 4 * C, (size_t)B, (size_t)B};
    float **bufs[11] = {&kv->k, &kv->v, &kv->x, &kv->ln, &kv->qkv, &kv->atty, &kv->proj, &kv->fch,
                        &kv->fch_gelu, &kv->mean, &kv->rstd};
    for (int i = 0; i < 11; i++) {
        *bufs[i] = (float *)cuda_malloc(sizes[i] * sizeof(float));
        cuda_memset_zero(*bufs[i], sizes[i] * sizeof(float));
    }
    kv->B = B;
    kv->dev_logits = (float *)cuda_malloc((size_t)B * V * sizeof(float));
    kv->tokens = (int *)cuda_malloc((size_t)B * sizeof(int));
    kv->pos = (int *)cuda_malloc((size_t)B * sizeof(int));
    kv->logits = (float *)mallocCheck((size_t)B * V * sizeof(float));   // host: the sampler reads it
    kv->on_device = 1;
    kv->pack = 0;   // rows cost the same on the GPU: not the shared sampler (weight packing, slot copies)
    return 1;
}

static int gpu_free_kvcache(KVCache *kv) {
    if (!kv->on_device) return 0;
    void *bufs[] = {kv->k, kv->v, kv->x, kv->ln, kv->qkv, kv->atty, kv->proj, kv->fch, kv->fch_gelu,
                    kv->mean, kv->rstd, kv->dev_logits, kv->tokens, kv->pos};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cuda_free(bufs[i]);
    free(kv->logits);
    return 1;
}

// token ids and positions down (B ints each); the logits come back at the end (gpu_decode_logits)
static void gpu_decode_inputs(GPT *m, KVCache *kv, const int **tokens, const int **pos, float **logits, int B) {
    if (kv->on_device != m->on_device) fail_at(__FILE__, __LINE__, "model and KV cache on different devices", "");
    if (!m->on_device) return;
    cuda_memcpy_h2d(kv->tokens, *tokens, (size_t)B * sizeof(int));
    cuda_memcpy_h2d(kv->pos, *pos, (size_t)B * sizeof(int));
    *tokens = kv->tokens; *pos = kv->pos; *logits = kv->dev_logits;
}

static void gpu_decode_logits(GPT *m, KVCache *kv, const float *logits, int B) {
    if (m->on_device) cuda_memcpy_d2h(kv->logits, logits, (size_t)B * m->config.vocab_size * sizeof(float));
}

// targets (and the mask) go down and the N log-probs come back
static int gpu_logprob_forward(GPT *m, float *logp, const int *targets, int N, float temperature,
                               const unsigned char *allowed) {
    if (!m->on_device) return 0;
    cuda_memcpy_h2d(m->dev_targets, targets, (size_t)N * sizeof(int));
    if (allowed) cuda_memcpy_h2d(m->dev_allowed, allowed, m->config.vocab_size);
    cuda_logprob_forward(m->dev_logp, m->acts.probs, m->acts.logits, m->dev_targets, N,
                         m->config.vocab_size, temperature, allowed ? m->dev_allowed : NULL);
    cuda_memcpy_d2h(logp, m->dev_logp, (size_t)N * sizeof(float));
    return 1;
}

// the backward sends the N gradients down
static int gpu_logprob_backward(GPT *m, const int *targets, const float *dlogp, int N, float temperature) {
    if (!m->on_device) return 0;
    cuda_memcpy_h2d(m->dev_targets, targets, (size_t)N * sizeof(int));
    cuda_memcpy_h2d(m->dev_dlogp, dlogp, (size_t)N * sizeof(float));
    cuda_logprob_backward(m->grads_acts.logits, m->acts.probs, m->dev_targets, m->dev_dlogp, N,
                          m->config.vocab_size, temperature);
    return 1;
}

static int gpu_clip_grad_norm(GPT *m, float max_norm, float *norm) {
    if (!m->on_device) return 0;
    *norm = cuda_clip_grad_norm(m->grads_memory, m->num_parameters, max_norm);
    return 1;
}

static int gpu_adamw_update(GPT *m, const AdamWConfig *o, float lr, int t) {
    if (!m->on_device) return 0;
    cuda_adamw_update(m->params_memory, m->grads_memory, m->m_memory, m->v_memory, m->param_sizes,
                      PARAM_DECAY, NUM_PARAM_TENSORS, lr, o->beta1, o->beta2, o->eps, o->weight_decay, t);
    return 1;
}

static void gpu_synchronize(GPT *m) { if (m->on_device) cuda_synchronize(); }
#endif

// ============================================================================
// TOOLING: everything below serves the commands, not the algorithm. Options, checkpoints,
// run logs, SFT, the train command around train_loop, the synthetic tree task, eval,
// sample, verify, check, bench, compare (methods at a matched budget), and the command line.
// A first reading can stop here.
// ============================================================================

// ----------------------------------------------------------------------------
// Tooling utilities: standard output, inputs and outputs, usage errors, run directories and their locks

/* check_stdout: run at exit (main registers it): a write error on the buffered standard output
   (`./grpo check F > /dev/full`) may show only at this flush, and then ends the program with status 1. */
static void check_stdout(void) {
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "error: writing standard output: %s\n",
                errno ? strerror(errno) : "an earlier write failed");
        _exit(EXIT_INPUT);
    }
}

// same_input: the existing file path names is the input `in` ("-": standard input, whatever it holds)
static int same_input(const char *path, const char *in) {
    struct stat sp, si;
    int found = strcmp(in, "-") ? stat(in, &si) == 0 : fstat(0, &si) == 0;
    return found && stat(path, &sp) == 0 && sp.st_dev == si.st_dev && sp.st_ino == si.st_ino;
}

/* is_stdin: path reads standard input's stream: "-", or a path to what descriptor 0 holds when that
   is not a regular file (a pipe or a terminal can be read once; a regular file reopened starts over) */
static int is_stdin(const char *path) {
    struct stat s0;
    return !strcmp(path, "-") || (fstat(0, &s0) == 0 && !S_ISREG(s0.st_mode) && same_input(path, "-"));
}

/* shell_word: s as one word of a shell command line: itself when every byte is safe, else single-quoted
   (each ' as '\''). The result lives until the eighth call after this one. */
static const char *shell_word(const char *s) {
    static char buf[8][1200];
    static int k = 0;
    if (s[0] && !s[strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/+,:=@%")]) return s;
    char *o = buf[k = (k + 1) % 8];
    size_t n = 0;
    o[n++] = '\'';
    for (; *s && n + 6 < sizeof buf[0]; s++) {
        if (*s == '\'') { memcpy(o + n, "'\\''", 4); n += 4; }
        else o[n++] = *s;
    }
    o[n++] = '\'';
    o[n] = 0;
    return o;
}

// the program's name in usage messages
#ifdef GRPO_CUDA
#define PROG "./grpo_cuda"
#else
#define PROG "./grpo"
#endif

static const char *usage_context = NULL;   // where the options came from, when not the command line

// Usage error: names the option and what was expected, exit status 2.
static void usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "usage error: %s%s", usage_context ? usage_context : "", usage_context ? ": " : "");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n  (run '" PROG " --help' or '" PROG " <command> --help')\n");
    va_end(ap);
    exit(EXIT_USAGE);
}

typedef struct { const char *flag, *path; } NamedPath;   // an option and its file ("" or NULL: not given)
static void cmp_die(int line, const char *hint, const char *fmt, ...);   // fail_at, printf-style (compare's, below)

/* output_is_ours: 1 when output `flag` may replace the existing file path: empty, of the kind it writes
   (--html: <!DOCTYPE html>...; --completions: four TAB-separated fields ending eos|no-eos), or a run's file. */
static int output_is_ours(const char *flag, const char *path) {
    int html = !strcmp(flag, "--html");
    if (!html && strcmp(flag, "--completions")) return 1;
    char head[4096] = "";
    FILE *f = fopen(path, "rb");
    if (!f) return 1;
    size_t n = fread(head, 1, sizeof head - 1, f);   // head stays NUL-terminated
    fclose(f);
    if (n == 0) return 1;
    if (html) return !strncmp(head, "<!DOCTYPE html>", 15);
    char *nl = strchr(head, '\n');
    if (!nl) return 0;
    *nl = 0;
    int tabs = 0;
    for (char *c = head; *c; c++) tabs += *c == '\t';
    char *last = strrchr(head, '\t');
    return tabs == 3 && (!strcmp(last + 1, "eos") || !strcmp(last + 1, "no-eos"));
}

/* refuse_inputs_as_outputs: before a command reads or writes anything: each of the no outputs is a new
   name or a regular file (it is renamed over), and none of the ni inputs by any spelling or link; at
   most one input reads standard input's stream. Else a usage error naming the options. */
static void refuse_inputs_as_outputs(const NamedPath *outs, int no, const NamedPath *ins, int ni) {
    for (int i = 0; i < no; i++) {
        const char *out = outs[i].path;
        struct stat sb = {0};   // (stays 0, not a regular file, when lstat finds nothing)
        if (!out || !out[0]) continue;
        if (!strcmp(out, "-"))
            usage_error("%s -: this output is a file, not standard output; give a file name", outs[i].flag);
        if (lstat(out, &sb) == 0 && !S_ISREG(sb.st_mode))
            usage_error("%s %s: it is %s; give the name of a regular file (or a new one)", outs[i].flag, out, S_ISDIR(sb.st_mode) ? "a directory" : S_ISLNK(sb.st_mode) ?
                        "a link" : "a device, FIFO or socket");
        for (int j = 0; j < ni; j++)
            if (ins[j].path && ins[j].path[0] && same_input(out, ins[j].path))
                usage_error("%s %s: that is the %s file '%s', which this command reads and would overwrite; give "
                            "another path", outs[i].flag, out, ins[j].flag, ins[j].path);
        if (S_ISREG(sb.st_mode) && !output_is_ours(outs[i].flag, out))
            usage_error("%s %s: the file holds something other than what this option writes (%s); remove it or give another "
                        "name", outs[i].flag, out, !strcmp(outs[i].flag, "--html") ? "a page that starts <!DOCTYPE html>" :
                        "lines prompt<TAB>completion<TAB>reward<TAB>eos|no-eos");
    }
    int first = -1;
    for (int j = 0; j < ni; j++) {
        if (!ins[j].path || !ins[j].path[0] || !is_stdin(ins[j].path)) continue;
        if (first >= 0)
            usage_error("%s %s and %s %s: both are standard input, which can be read once; give one of them a file",
                        ins[first].flag, ins[first].path, ins[j].flag, ins[j].path);
        first = j;
    }
}

// make_dir: mkdir -p path (a run directory); a failure exits naming it.
static void make_dir(const char *path) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {   // each parent in turn
            *p = 0;
            mkdir(tmp, 0777);
            *p = '/';
        }
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
        cmp_die(__LINE__, "check --run-dir", "cannot create directory '%s': %s", path, strerror(errno));
}

/* lock_run_dir: an exclusive flock on RUN_DIR/.lock (holding our pid, for the message) until its returned
   descriptor is closed, so that two runs never write the same files; flag names the option in the hints. */
static int lock_run_dir(const char *run_dir, const char *flag) {
    char path[1100], hint[96];
    snprintf(path, sizeof path, "%s/.lock", run_dir);
    snprintf(hint, sizeof hint, "check that the %s directory is writable", flag);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) cmp_die(__LINE__, hint, "cannot create lock file '%s': %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno, study = !strcmp(flag, "--study");
        char owner[32] = "";
        if (pread(fd, owner, sizeof owner - 1, 0) < 0) owner[0] = 0;   // owner stays NUL-terminated
        owner[strcspn(owner, "\n")] = 0;
        snprintf(hint, sizeof hint, "wait for that run to end, or give this one another %s", flag);
        if (err != EWOULDBLOCK) cmp_die(__LINE__, hint, "cannot lock '%s': %s", path, strerror(err));
        cmp_die(__LINE__, hint, "%s '%s' is in use by another %s (pid %s)", study ? "study" : "run directory",
                run_dir, study ? "compare" : "run", owner[0] ? owner : "unknown");
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, len, 0) != len)
        cmp_die(__LINE__, "is the disk full?", "cannot write lock file '%s': %s", path, strerror(errno));
    return fd;
}

// ----------------------------------------------------------------------------
// Options: every option of every command, with its default, range and help.
// The table drives the defaults, getopt_long, --help, range checks and the start-up printout.

typedef struct {
    // run
    int seed, threads, task;   // task: an index in TASKS
    char run_dir[512], init[512], resume[512], model[512];
    // model shape (sft, bench)
    int layers, heads, channels, context;
    // data
    char train_data[512], val_data[512], test_data[512], data[512], prompt[256], completions_out[512];
    char html_out[512], token_names[512];   // sample, check: --html page of B(G), check's --token-names
    // optimisation
    int steps, batch_size, warmup, eval_every, save_every, eval_limit, schedule, test_limit;
    float lr, min_lr_frac, weight_decay, grad_clip, beta1, beta2;
    // GRPO
    int prompts_per_step, group_size, max_new_tokens, num_iterations, micro_batch, mask_truncated;
    int update_layout, sampler, pass_k, seeds;   // LAYOUT_PADDED|TREE, SAMPLER_PLAIN|SHARED
    float temperature, format_reward;
    ObjectiveConfig obj;
    // the comparison objectives: MC-PRM's, PPO's critic's, tree's extra methods
    int mc_k, mc_whiten;
    float gae_gamma, gae_lambda, critic_lr;
    char tree_objectives[256];
    // prompt selection (train; notes/credit-assignment.md §5)
    int prompt_select, select_candidates, dynamic_max_rounds;
    float select_target, select_decay;
    // budget runs (train) and studies (compare: the compute-matched protocol)
    int budget_unit, eval_points, jobs, one_batch;
    float budget, target_acc;
    char study[256], methods[256], train_args[256], sft_args[256];
    int probe_every, overwrite;
    int quick;             // compare --quick: its SFT and train settings come before --sft-args, --train-args
#ifdef GRPO_CUDA
    int tf32, kernel_times;   // CUDA build: cuBLAS on TF32 tensor cores; bench's time per kernel
#endif
} Options;

static const char *SCHEDULE_NAMES[] = {"cosine", "linear", "constant", NULL};
#define OBJECTIVE_LIST "grpo, lambda-grpo, mc-prm, ppo"   // OBJECTIVE_NAMES, as messages list them
enum { BUDGET_GEN_TOKENS, BUDGET_FLOPS, BUDGET_SECONDS, BUDGET_STEPS };
static const char *BUDGET_UNIT_NAMES[] = {"gen-tokens", "flops", "seconds", "steps", NULL};

enum { CMD_SFT = 1, CMD_TRAIN = 2, CMD_EVAL = 4, CMD_SAMPLE = 8, CMD_CHECK = 16, CMD_BENCH = 32,
       CMD_VERIFY = 64, CMD_TREE = 128, CMD_COMPARE = 256 };
typedef enum { OPT_INT, OPT_FLOAT, OPT_STR, OPT_ENUM } OptType;
typedef struct {
    const char *name;        // --name
    OptType type;
    size_t offset;           // of the value in Options
    double min, max;         // range of a number
    const char **choices;    // OPT_ENUM: the names, NULL-terminated
    unsigned cmds;           // CMD_* bits: the commands that take it
    const char *help;
    const char *dflt;        // the default as typed (NULL: 0 or ""); a command's own: sft_defaults, ...
    // the objectives (1 << OBJ_*) and prompt selectors (1 << SELECT_*) it applies to (0: all);
    // out of them: see option_in_force and check_grpo_options
    unsigned objectives, selectors;
} OptSpec;

#define OFF(field) offsetof(Options, field)
#define INT(field, min, max) OPT_INT, OFF(field), min, max, NULL   // a row's type, field and range
#define FLT(field, min, max) OPT_FLOAT, OFF(field), min, max, NULL
#define STR(field) OPT_STR, OFF(field), 0, 0, NULL
#define ENUM(field, choices) OPT_ENUM, OFF(field), 0, 0, choices
#define RUN_CMDS (CMD_SFT | CMD_TRAIN | CMD_TREE)     // the commands that train: a run directory, AdamW
#define GRPO_CMDS (CMD_TRAIN | CMD_TREE)              // the commands that take GRPO steps
#define MODEL_CMDS (CMD_SFT | CMD_BENCH | CMD_TREE)   // the commands that build a model of --layers ...
#define OBJ_CMDS (CMD_TRAIN | CMD_CHECK | CMD_TREE)
#define GEN_CMDS (CMD_TRAIN | CMD_EVAL | CMD_SAMPLE | CMD_TREE)
#define STRINGIFY(x) #x
#define DEFAULT_TEXT(x) STRINGIFY(x)   // a number's macro as the text of a default
#ifdef GRPO_CUDA
#define CUDA_CMDS (CMD_SFT | GEN_CMDS | CMD_BENCH)   // the commands that build a model: on the GPU
#define DEFAULT_LAYOUT "padded"   // the shared-prefix batch and sampler run on the CPU only
#define DEFAULT_SAMPLER "plain"
#else
#define DEFAULT_LAYOUT "tree"     // padded and tree give the same loss and gradient up to rounding
#define DEFAULT_SAMPLER "shared"  // plain and shared give the same tokens bit for bit
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"   // a row ends at its last non-zero field
static const OptSpec OPTIONS[] = {
    {"task", ENUM(task, TASK_NAMES), CMD_SFT | CMD_TRAIN | CMD_EVAL | CMD_SAMPLE | CMD_VERIFY,
     "the task: its data files' defaults, its prompt format and verifier (countdown, chain-sum)"},
    {"seed", INT(seed, 0, 2147483647), CMD_SFT | GEN_CMDS | CMD_BENCH,
     "random seed (same seed, same build: same run, bit for bit)", "1337"},
    {"threads", INT(threads, 0, 1024), 0xffff, "OpenMP threads (0: OMP_NUM_THREADS or all cores)"},
    {"run-dir", STR(run_dir), RUN_CMDS, "directory for checkpoints and CSV logs"},
    {"init", STR(init), CMD_TRAIN,
     "SFT checkpoint to start from; also the reference policy π_ref", "runs/sft/model.bin"},
    {"resume", STR(resume), CMD_SFT | CMD_TRAIN,
     "checkpoint with optimizer state to continue from (bit-identical with the same --update-layout)"},
    {"model", STR(model), CMD_EVAL | CMD_SAMPLE, "checkpoint to load", "runs/grpo/model.bin"},
    {"layers", INT(layers, 1, 64), MODEL_CMDS, "transformer blocks L", "4"},
    {"heads", INT(heads, 1, 64), MODEL_CMDS, "attention heads NH (must divide --channels)", "4"},
    {"channels", INT(channels, 8, 4096), MODEL_CMDS, "width C", "128"},
    {"context", INT(context, 8, 1024), CMD_SFT | CMD_BENCH, "context length maxT (bench: at least 9)", "64"},
    {"train-data", STR(train_data), CMD_SFT | CMD_TRAIN,
     "training prompts (prompt<TAB>demonstration per line)", "data/countdown_train.txt"},
    {"val-data", STR(val_data), CMD_SFT | CMD_TRAIN | CMD_SAMPLE,
     "validation prompts (sample without --prompt draws one)", "data/countdown_val.txt"},
    {"test-data", STR(test_data), CMD_TRAIN,
     "test prompts (reasoning-gym), scored at start and end", "data/countdown_test.txt"},
    {"data", STR(data), CMD_EVAL, "prompts to score", "data/countdown_test.txt"},
    {"prompt", STR(prompt), CMD_SAMPLE,
     "the task's prompt, e.g. '8 4 5 8>9:' (none: one of --val-data with mixed rewards)"},
    {"completions", STR(completions_out), CMD_EVAL,
     "write each greedy completion here: prompt<TAB>completion<TAB>reward<TAB>eos|no-eos"},
    {"html", STR(html_out), CMD_SAMPLE | CMD_CHECK,
     "also draw B(G) as one self-contained HTML page here (colour: net coefficient, GRPO or λ-GRPO)"},
    {"token-names", STR(token_names), CMD_CHECK,
     "--html: a file whose line n names token id n (e.g. notes/examples/letters.txt; none: the ids)"},
    {"steps", INT(steps, 0, 10000000), RUN_CMDS, "optimizer steps (GRPO: sampling steps)"},
    {"batch-size", INT(batch_size, 1, 4096), CMD_SFT | CMD_BENCH, "sequences per SFT step", "32"},
    {"lr", FLT(lr, 0, 10), RUN_CMDS, "peak learning rate (train --task chain-sum: 1e-5)"},
    {"min-lr-frac", FLT(min_lr_frac, 0, 1), RUN_CMDS, "final learning rate as a fraction of --lr", "0.1"},
    {"schedule", ENUM(schedule, SCHEDULE_NAMES), RUN_CMDS, "learning-rate decay after warm-up"},
    {"warmup", INT(warmup, 0, 1000000), RUN_CMDS, "linear warm-up steps"},
    {"weight-decay", FLT(weight_decay, 0, 10), RUN_CMDS, "AdamW decoupled weight decay (2-D weights only)"},
    {"beta1", FLT(beta1, 0, 0.999999), RUN_CMDS, "AdamW β1", "0.9"},
    {"beta2", FLT(beta2, 0, 0.999999), RUN_CMDS, "AdamW β2", "0.95"},
    {"grad-clip", FLT(grad_clip, 0, 1e9), RUN_CMDS, "max global gradient norm (0: off)", "1"},
    {"eval-every", INT(eval_every, 0, 10000000), CMD_SFT | CMD_TRAIN, "validate every N steps (0: off)"},
    {"eval-limit", INT(eval_limit, 0, 10000000), CMD_TRAIN | CMD_EVAL,
     "score at most N prompts per evaluation (0: all); for train's test file see --test-limit"},
    {"test-limit", INT(test_limit, -1, 10000000), CMD_TRAIN,
     "score the first N test prompts at the start and end (-1: all; 0: none, for short try-outs)"},
    {"overwrite", INT(overwrite, 0, 1), RUN_CMDS,
     "1: replace the finished run in --run-dir (its model.bin, tree_steps.csv, logs); 0: refuse to"},
    {"save-every", INT(save_every, 0, 10000000), CMD_SFT | CMD_TRAIN,
     "write a resumable checkpoint every N steps (0: only at the end)"},
    {"prompts-per-step", INT(prompts_per_step, 1, 4096), GRPO_CMDS, "prompts P per GRPO step", "8"},
    {"group-size", INT(group_size, 1, 4096), GRPO_CMDS | CMD_SAMPLE,
     "completions k per prompt (G in TRL/verl); training needs k >= 2", "8"},
    {"temperature", FLT(temperature, 0.01, 100), GEN_CMDS,   // (logits / T overflow below 0.01)
     "sampling temperature T; log-probs use logits/T everywhere", "1"},
    {"max-new-tokens", INT(max_new_tokens, 1, 1000000),
     CMD_TRAIN | CMD_EVAL | CMD_SAMPLE | CMD_CHECK, "completion budget (also the Dr. GRPO constant)", "26"},
    {"pass-k", INT(pass_k, 0, 4096), CMD_TRAIN | CMD_EVAL,
     "samples per prompt for pass@k at the end (0: off)", "8"},
    {"objective", ENUM(obj.objective, OBJECTIVE_NAMES), CMD_TRAIN | CMD_CHECK,
     "grpo, lambda-grpo (each token's term divided by |λ(i,t)|), mc-prm (VinePPO's step advantages; not "
     "check), or ppo (a learned critic, GAE; not check)", "lambda-grpo"},
    {"objective", STR(tree_objectives), CMD_TREE,
     "methods run beside GRPO and λ-GRPO (which always run), comma-separated: mc-prm, ppo"},
    {"mc-k", INT(mc_k, 1, 1024), GRPO_CMDS | CMD_SAMPLE,
     "MC-PRM: continuations K per state for V̂ (VinePPO 9, SPO 4); sample: V̂ of each node of B(G)",
     "4", 1u << OBJ_MC_PRM},
    {"mc-whiten", INT(mc_whiten, 0, 1), GRPO_CMDS,
     "MC-PRM: 1 whitens the step advantages over the step's tokens, as VinePPO (GRPO's scale); 0: raw",
     "1", 1u << OBJ_MC_PRM},
    {"gae-gamma", FLT(gae_gamma, 0, 1), GRPO_CMDS, "ppo: GAE's discount γ (verl: 1)", "1", 1u << OBJ_PPO},
    {"gae-lambda", FLT(gae_lambda, 0, 1), GRPO_CMDS,
     "ppo: GAE's λ (verl: 1; γ = λ = 1 gives A_t = r - V_t)", "1", 1u << OBJ_PPO},
    {"critic-lr", FLT(critic_lr, 0, 10), GRPO_CMDS,
     "ppo: the critic's peak learning rate (0: --lr); schedule and AdamW as the policy's",
     NULL, 1u << OBJ_PPO},
    {"loss-agg", ENUM(obj.loss_agg, LOSS_AGG_NAMES), OBJ_CMDS, "loss aggregation (notes/conventions.md)"},
    {"adv-std", ENUM(obj.adv_std, ADV_STD_NAMES), OBJ_CMDS,
     "std in the advantage: sample (k-1), population (k), none"},
    {"adv-std-scope", ENUM(obj.adv_std_scope, SCOPE_NAMES), OBJ_CMDS, "std over each group or the batch"},
    {"adv-eps", FLT(obj.adv_eps, 0, 1), OBJ_CMDS, "added to the std (TRL 1e-4, verl 1e-6)", "1e-4"},
    {"clip-eps-low", FLT(obj.clip_eps_low, 0, 0.999999), OBJ_CMDS,
     "ratio clipped below at 1 - eps_low, in [0, 1)", "0.2"},
    {"clip-eps-high", FLT(obj.clip_eps_high, 0, 1e6), OBJ_CMDS,
     "ratio clipped above at 1 + eps_high (DAPO: 0.28)", "0.2"},
    {"beta", FLT(obj.beta, 0, 1e6), OBJ_CMDS, "k3 KL coefficient against π_ref"},
    {"num-iterations", INT(num_iterations, 1, 64), GRPO_CMDS,
     "updates μ per sampled batch (π_old frozen at sampling)", "1"},
    {"micro-batch", INT(micro_batch, 0, 4096), GRPO_CMDS,
     "sequences per forward/backward (0: whole step); the same gradient up to float rounding"},
    {"update-layout", ENUM(update_layout, UPDATE_LAYOUT_NAMES), RUN_CMDS,
     "the training batch: tree (default on the CPU: the batch, or each micro-batch, packed as its "
     "prefix tree, shared prefixes computed once, no padding) or padded (the CUDA build's only "
     "layout); same loss and gradient up to float rounding", DEFAULT_LAYOUT},
    {"sampler", ENUM(sampler, SAMPLER_NAMES), GRPO_CMDS,
     "the sampler: shared (default on the CPU: each distinct prompt fed once, finished rows dropped, "
     "weights packed) or plain (the reference's loop; the CUDA build's only one); the same tokens "
     "bit for bit. --sampler plain --update-layout padded runs the reference's own code only",
     DEFAULT_SAMPLER},
    {"mask-truncated", INT(mask_truncated, 0, 1), CMD_TRAIN | CMD_CHECK,
     "1: completions cut at max-new-tokens without <eos> (check: truncated=1) get no loss, no normaliser"},
    {"seeds", INT(seeds, 1, 1000), CMD_TREE, "seeds per cell of the grid (paper: 5)"},
    {"format-reward", FLT(format_reward, 0, 1), CMD_TRAIN | CMD_EVAL,
     "extra reward for a well-formed but wrong completion (0: off)"},
    {"prompt-select", ENUM(prompt_select, PROMPT_SELECT_NAMES), CMD_TRAIN,
     "the step's prompts: uniform, mopps (Beta posteriors, nearest τ) or dynamic (DAPO: all-equal "
     "groups resampled)", NULL, 0, 1u << SELECT_MOPPS | 1u << SELECT_DYNAMIC},
    {"select-target", FLT(select_target, 0, 1), CMD_TRAIN,
     "mopps: keep the prompts whose sampled success p is nearest this τ", "0.5", 0, 1u << SELECT_MOPPS},
    {"select-candidates", INT(select_candidates, 0, 1000000), CMD_TRAIN,
     "mopps: M distinct candidate prompts per step (0: 8 x --prompts-per-step)", NULL, 0, 1u << SELECT_MOPPS},
    {"select-decay", FLT(select_decay, 0, 1), CMD_TRAIN,
     "mopps: posterior decay d in (0, 1] per update (1: none)", "1", 0, 1u << SELECT_MOPPS},
    {"dynamic-max-rounds", INT(dynamic_max_rounds, 1, DYNAMIC_MAX_ROUNDS), CMD_TRAIN,
     "dynamic: refill rounds per step at most; then all-equal groups stay (zero gradient)",
     DEFAULT_TEXT(DYNAMIC_DEFAULT_ROUNDS), 0, 1u << SELECT_DYNAMIC},
    {"probe-every", INT(probe_every, 0, 10000000), CMD_TRAIN,
     "every N steps, GRPO's and λ-GRPO's gradients at π_old on the step's batch (grpo, lambda-grpo only; CPU "
     "build): train.csv's probe_cos, probe_norm_ratio, probe_share, probe_s (notes/credit-assignment.md); "
     "changes nothing in the run (0: off)", NULL, 1u << OBJ_GRPO | 1u << OBJ_LAMBDA_GRPO},
    // budget runs and studies (./grpo compare); "seeds" and "init" of compare are rows
    // of their own (other help, same fields) so that tree's and train's rows stay as they are
    {"budget-unit", ENUM(budget_unit, BUDGET_UNIT_NAMES), CMD_TRAIN | CMD_COMPARE,
     "what --budget counts: generated tokens, model FLOPs (notes/compare.md), training seconds, or steps (train --steps N with a constant schedule is --budget-unit steps --budget N, step for step)"},
    {"budget", FLT(budget, 0, 1e30), CMD_TRAIN | CMD_COMPARE,
     "stop after the first step at which this much is spent (0: off; --steps then only caps the run)"},
    {"eval-points", INT(eval_points, 0, 1000), CMD_TRAIN | CMD_COMPARE,
     "K: greedy val accuracy at 0 and at 1/K..K/K of --budget, to RUN_DIR/eval.csv (0: off)"},
    {"study", STR(study), CMD_COMPARE,
     "study directory: prereg.txt, sft/, runs/METHOD/seed_N/, points.csv, curves.csv"},
    {"methods", STR(methods), CMD_COMPARE,
     "comma-separated name[:--option=value...]; name: an objective or a label"},
    {"seeds", INT(seeds, 1, 1000), CMD_COMPARE, "seeds 1..N of every method (paired across methods)"},
    {"target-acc", FLT(target_acc, -1, 1), CMD_COMPARE,
     "X in [0, 1]: also report gen tokens and seconds to first reach val accuracy X (-1: no such view)"},
    {"one-batch", INT(one_batch, 0, 100000), CMD_COMPARE,
     "P: also the one-batch view: Δ = mean verifier reward over the first P --val-data prompts x 16 samples (seed 1, the reference's --temperature, the same draws for every model) after each run's first update (STUDY/onebatch/) minus the SFT model's, beside the training gain (test and val accuracy at the end minus at 0), ranking and predicted gap gain_ref·(Δ−Δ_ref)/Δ_ref (0: off)"},
    {"jobs", INT(jobs, 0, 1024), CMD_COMPARE, "runs at once, one thread each (0: the core count)"},
    {"init", STR(init), CMD_COMPARE,
     "SFT checkpoint of every run (none: STUDY/sft/model.bin, made with --sft-args if missing)"},
    {"train-args", STR(train_args), CMD_COMPARE, "train options of every run, e.g. '--group-size 8'"},
    {"sft-args", STR(sft_args), CMD_COMPARE, "sft options of the study's own SFT run"},
#ifdef GRPO_CUDA
    {"tf32", INT(tf32, 0, 1), CUDA_CMDS,
     "1: cuBLAS matmuls on TF32 tensor cores (faster; ~1e-3 relative error); 0: full fp32"},
    {"kernel-times", INT(kernel_times, 0, 1), CMD_BENCH,
     "1: then GPU time per kernel over 3 training steps, each launch waited for"},
#endif
};
#pragma GCC diagnostic pop
#define NUM_OPTIONS ((int)(sizeof OPTIONS / sizeof OPTIONS[0]))

static const OptSpec *find_option(const char *name) {
    for (int i = 0; i < NUM_OPTIONS; i++)
        if (!strcmp(OPTIONS[i].name, name)) return &OPTIONS[i];
    return NULL;
}

/* The value of option s in o as text; exact: a float with 9 digits (the run record's form), else as
   shown to a person (a float %g, an empty path "(none)"). */
static void option_text(char *out, size_t cap, const Options *o, const OptSpec *s, int exact) {
    const char *p = (const char *)o + s->offset;
    if (s->type == OPT_FLOAT) snprintf(out, cap, exact ? "%.9g" : "%g", *(const float *)p);
    else if (s->type == OPT_INT) snprintf(out, cap, "%d", *(const int *)p);
    else if (s->type == OPT_ENUM) snprintf(out, cap, "%s", s->choices[*(const int *)p]);
    else snprintf(out, cap, "%s", exact || p[0] ? p : "(none)");
}

/* A busy machine: libgomp's waiting threads spin, and beside other jobs a 2-thread run then is several
   times slower (notes/speed.md, "On a shared machine"). libgomp reads its policy before main.
   gomp_spin_count: the spins libgomp (4.4+) waits at a barrier before sleeping: GOMP_SPINCOUNT when
   it is a count (suffixes k, M, G, T: x1e3..1e12) or infinite/infinity (1e18), else OMP_WAIT_POLICY:
   PASSIVE 0, ACTIVE 3e10, anything else 300,000. NULL: unset; case and surrounding blanks ignored. */
static double gomp_spin_count(const char *wait_policy, const char *spincount) {
    static const char suffixes[] = "kKmMgGtT";
    char w[16];
    if (spincount && sscanf(spincount, "%15s", w) == 1) {
        if (!strcasecmp(w, "infinite") || !strcasecmp(w, "infinity")) return 1e18;
        char *end;
        errno = 0;
        double v = strtod(w, &end);
        const char *s = *end ? strchr(suffixes, *end) : NULL;
        if (w[0] >= '0' && w[0] <= '9' && errno == 0 && (!*end || (s && !end[1]))) {
            for (long i = 0; s && i <= (s - suffixes) / 2; i++) v *= 1000.0;
            return v;
        }   // not a count: libgomp ignores it, and so does this
    }
    if (wait_policy && sscanf(wait_policy, "%15s", w) == 1) {
        if (!strcasecmp(w, "passive")) return 0.0;
        if (!strcasecmp(w, "active")) return 3e10;
    }
    return 300000.0;
}

/* busy_machine_warning: 1, with a one-line advice in msg[cap], when this run's threads would spin
   against other jobs, else 0 and msg = "". loadavg: /proc/loadavg's text (another text: 0). Busy:
   threads > 1, others = min(load1, runnable − 1) ≥ 1 (both the last minute and this instant show them:
   our own run that just ended does not count), others + threads > ncpu, and the spin count of
   wait_policy and spincount (NULL: unset) above 1,000 (10,000 measured still spins: notes/speed.md). */
static int busy_machine_warning(const char *loadavg, int ncpu, int threads, const char *wait_policy,
                                const char *spincount, const char *cmd, char *msg, size_t cap) {
    double load1, l5, l15;
    int running, total;
    msg[0] = 0;
    if (!loadavg || sscanf(loadavg, "%lf %lf %lf %d/%d", &load1, &l5, &l15, &running, &total) != 5 ||
        load1 < 0 || running < 0)
        return 0;
    double others = running - 1 < load1 ? running - 1 : load1;
    if (threads <= 1 || ncpu < 1 || others < 1.0 || others + threads <= ncpu) return 0;
    if (gomp_spin_count(wait_policy, spincount) <= 1000.0) return 0;
    snprintf(msg, cap, "note: other jobs hold the CPUs (load %.2f, %d runnable, %d CPUs) and OpenMP's %d waiting "
             "threads spin against them, which can make this run several times slower: type "
             "OMP_WAIT_POLICY=PASSIVE " PROG " %.*s ... (or add --threads 1); notes/speed.md", load1, running, ncpu,
             threads, (int)strcspn(cmd, " "), cmd);
    return 1;
}

/* warn_if_busy: busy_machine_warning for this process (/proc/loadavg, or GRPO_LOADAVG for the tests;
   --threads as typed) before any work. With no policy set it restarts (/proc/self/exe, argv as typed)
   under OMP_WAIT_POLICY=PASSIVE, which changes no result, saying so; a policy that was set is advised. */
static void warn_if_busy(const char *cmd, char **argv) {
#ifdef _OPENMP
    char text[256] = "", msg[512];
    const char *fake = getenv("GRPO_LOADAVG");
    FILE *f = fake ? NULL : fopen("/proc/loadavg", "r");
    if (f && !fgets(text, sizeof text, f)) text[0] = 0;
    if (f) fclose(f);
    int threads = num_threads();
    for (int i = 2; argv[i]; i++) {   // the last --threads wins, as in parse_options; 0 means the default
        const char *v = !strncmp(argv[i], "--threads=", 10) ? argv[i] + 10 : NULL;
        if (!strcmp(argv[i], "--threads") && argv[i + 1]) v = argv[++i];
        if (v && atoi(v) > 0) threads = atoi(v);
    }
    const char *policy = getenv("OMP_WAIT_POLICY"), *spins = getenv("GOMP_SPINCOUNT");
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (!busy_machine_warning(fake ? fake : text, ncpu, threads, policy, spins, cmd, msg, sizeof msg)) return;
#ifdef __linux__
    if (!policy && !spins) {   // msg's "note: other jobs hold the CPUs (load ..., N CPUs)", then the restart
        fprintf(stderr, "%.*s: restarting with OMP_WAIT_POLICY=PASSIVE, threads that sleep while they wait "
                "(spinning against other jobs can make a run several times slower; "
                "OMP_WAIT_POLICY=ACTIVE keeps it spinning); notes/speed.md\n",
                (int)strcspn(msg, ")") + 1, msg);
        setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
        execv("/proc/self/exe", argv);
        fprintf(stderr, "note: the restart failed (%s): this run spins\n", strerror(errno));
    }
#endif
    fprintf(stderr, "%s\n", msg);
#else
    (void)cmd, (void)argv;
#endif
}

/* task_defaults: the options not given (given[i]: option i was) take o's task's defaults: its data files,
   its --max-new-tokens and train's --lr where they are countdown's (TASK_TRAIN_LR: chain-sum 1e-5, chosen
   on its validation splits in notes/chain-sum.md). Countdown's are default_options'. */
static const float TASK_TRAIN_LR[] = {1e-4f, 1e-5f};   // train's --lr per task, as TASKS (countdown's first)
typedef char one_train_lr_per_task[sizeof TASK_TRAIN_LR / sizeof TASK_TRAIN_LR[0] == NUM_TASKS ? 1 : -1];  // C and C++

static void task_defaults(Options *o, const unsigned char *given) {
    const Task *t = &TASKS[o->task];
    if (o->task == TASK_COUNTDOWN) return;
    struct { const char *name; char *field; const char *value; } d[] = {
        {"train-data", o->train_data, t->train}, {"val-data", o->val_data, t->val},
        {"test-data", o->test_data, t->test}, {"data", o->data, t->test}};
    for (size_t k = 0; k < sizeof d / sizeof d[0]; k++)
        if (!given[find_option(d[k].name) - OPTIONS]) snprintf(d[k].field, 255, "%s", d[k].value);
    const OptSpec *mn = find_option("max-new-tokens");
    if (!given[mn - OPTIONS] && o->max_new_tokens == TASKS[TASK_COUNTDOWN].max_new) o->max_new_tokens = t->max_new;
    const OptSpec *lr = find_option("lr");   // train's (sft's default is another value and stays)
    if (!given[lr - OPTIONS] && o->lr == TASK_TRAIN_LR[TASK_COUNTDOWN]) o->lr = TASK_TRAIN_LR[o->task];
}

/* print_help: --help of command cmd (bit mask) and exit: the synopsis, then each option with its help,
   its default in defaults, with the defaults of `task` (its data, budget, train's lr), and its choices. */
static void print_help(const char *cmd, unsigned mask, const char *synopsis, const Options *defaults,
                       int task) {
    Options shown = *defaults;
    unsigned char none[NUM_OPTIONS] = {0};
    shown.task = task;
    task_defaults(&shown, none);
    printf("usage: " PROG " %s [--option value ...]\n\n%s\n\noptions (default in brackets):\n", cmd, synopsis);
    for (int i = 0; i < NUM_OPTIONS; i++) {
        const OptSpec *s = &OPTIONS[i];
        char v[300];
        if (!(s->cmds & mask)) continue;
        option_text(v, sizeof v, &shown, s, 0);
        printf("  --%-18s %s [%s%s", s->name, s->help, v, s->type == OPT_ENUM ? "] one of:" : "]");
        for (int c = 0; s->type == OPT_ENUM && s->choices[c]; c++) printf(" %s", s->choices[c]);
        printf("\n");
    }
    printf("  --%-18s %s\n", "help", "this help");
    exit(0);
}

// 1 for the characters isspace() takes in the C locale (strtol and strtod skip them at the start)
static int is_blank(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* set_option: option s of o from its text v (as typed, or its default); a value that is not a number,
   out of range or not a choice is a usage error naming the option. */
static void set_option(Options *o, const OptSpec *s, const char *v) {
    char *p = (char *)o + s->offset, *end = NULL;
    errno = 0;
    if (s->type == OPT_INT || s->type == OPT_FLOAT) {
        double x = s->type == OPT_INT ? (double)strtol(v, &end, 10) : strtod(v, &end);
        int out_of_range = errno == ERANGE;   // strtol/strtod saturated (or, strtod, underflowed)
        // strtol and strtod skip leading blanks, and a trailing one is left over: both are refused
        if (end == v || *end || (errno && !out_of_range) || isnan(x) || is_blank(v[0]))
            usage_error("--%s: '%s' is not a number%s", s->name, v,
                        is_blank(v[0]) || is_blank(*end) ? " (no blanks around it)" : "");
        // a float option holds a float: beyond its range, or a non-zero value that would be
        // stored as 0 (1e-50, or 1e-320 where strtod itself underflows), is refused, not rounded
        int is_float = s->type == OPT_FLOAT;
        int to_zero = is_float && (out_of_range ? fabs(x) < 1.0 : x != 0.0 && (float)x == 0.0f);
        if (is_float && (to_zero || out_of_range || isinf(x)))
            usage_error("--%s: '%s' is out of float range (%s)", s->name, v,
                        to_zero ? "not 0, but it would be stored as 0: the smallest float is about "
                                  "1.4e-45" : "|x| <= 3.4e38");
        if (out_of_range || x < s->min || x > s->max)   // an integer's bounds in digits, not 1e+07
            usage_error(is_float ? "--%s: '%s' is out of range [%g, %g]"
                                 : "--%s: '%s' is out of range [%.0f, %.0f]", s->name, v, s->min, s->max);
        if (is_float) *(float *)p = (float)x;
        else *(int *)p = (int)x;
    } else if (s->type == OPT_STR) {
        if (strlen(v) >= 255) usage_error("--%s: value too long ('%s')", s->name, v);
        strcpy(p, v);
    } else {
        int found = -1;
        for (int k = 0; s->choices[k]; k++) if (!strcmp(v, s->choices[k])) found = k;
        if (found < 0) usage_error("--%s: '%s' is not one of the choices (see --help)", s->name, v);
        *(int *)p = found;
    }
}

// The defaults of every option (--help shows them): OPTIONS' dflt, else 0 or "".
static void default_options(Options *o) {
    memset(o, 0, sizeof *o);
    for (int i = 0; i < NUM_OPTIONS; i++)
        if (OPTIONS[i].dflt) set_option(o, &OPTIONS[i], OPTIONS[i].dflt);
}

// AdamW multiplies each decayed weight by 1 − lr·wd every step: at lr·wd >= 1 that flips
// its sign and, past 2, doubles it and more, so the run explodes (a usage error naming flag).
static void check_decay(const char *flag, float lr, float wd, const char *whose) {
    if (lr * wd >= 1.0f)
        usage_error("%s %g x --weight-decay %g = %g: must be < 1 (AdamW scales %sweights by 1 - lr x "
                    "weight-decay each step)", flag, lr, wd, lr * wd, whose);
}

/* parse_options: GNU long options for one command (bit `mask`) into o; a bad option or value, or one a
   command that trains cannot run with (check_decay, the CUDA build's layout and sampler), is a usage
   error naming it, and so is a positional argument, but for cmd "verify FILE" and "check FILE" exactly
   one. Returns the index of the first positional argument in argv. */
static int parse_options(int argc, char **argv, unsigned mask, Options *o, const char *cmd,
                         const char *synopsis) {
    struct option longopts[NUM_OPTIONS + 2];
    int n = 0;
    for (int i = 0; i < NUM_OPTIONS; i++)   // getopt_long returns 1000 + the row's index
        if (OPTIONS[i].cmds & mask)
            longopts[n++] = (struct option){OPTIONS[i].name, required_argument, NULL, 1000 + i};
    longopts[n] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[n + 1] = (struct option){NULL, 0, NULL, 0};
    if (mask & (CMD_SFT | CMD_BENCH)) oom_hint = "use a smaller --batch-size or model";
    else if (mask & (CMD_TRAIN | CMD_TREE))
        oom_hint = "use a smaller --prompts-per-step or --group-size, or set --micro-batch";
    else if (mask & CMD_SAMPLE) oom_hint = "use a smaller --group-size";
    else if (mask & CMD_EVAL) oom_hint = "the model or the --data file is too large for the free memory";
    else oom_hint = "the input file is too large for this machine's free memory";
    Options defaults = *o;
    unsigned char given[NUM_OPTIONS] = {0};   // 1: on the command line
    opterr = 0;
    optind = 1;
    for (int c, li = -1; (c = getopt_long(argc, argv, ":h", longopts, &li)) != -1; li = -1) {
        if (li >= 0) {   // getopt_long takes any unique prefix (--ste for --steps): only the whole name counts
            const char *typed = optarg == argv[optind - 1] ? argv[optind - 2] : argv[optind - 1];
            size_t len = strcspn(typed + 2, "=");
            if (strncmp(typed, "--", 2) || len != strlen(longopts[li].name))
                usage_error("unknown option '%.*s' for '" PROG " %s' (did you mean --%s? options are matched "
                            "whole)", (int)(len + 2), typed, cmd, longopts[li].name);
        }
        if (c == 'h') print_help(cmd, mask, synopsis, &defaults, o->task);   // the --task given before it
        if (c == '?') {
            const char *bad = argv[optind - 1];
            if (optopt) {
                // a short option: -h is the only one, so the bad letter begins its argument; getopt
                // moves optind past it only when nothing follows the letter (-x), not for -xy
                if (optind < argc && argv[optind][0] == '-' && argv[optind][1] == optopt && argv[optind][2])
                    bad = argv[optind];
                usage_error("unknown option '%s' for '" PROG " %s' "
                            "(options start with two dashes: --name value)", bad, cmd);
            }
#ifndef GRPO_CUDA
            if (!strncmp(bad, "--tf32", 6) || !strncmp(bad, "--kernel-times", 14))
                usage_error("option '%s' is in the CUDA build only (make cuda; ./grpo_cuda %s)", bad, cmd);
#endif
            usage_error("unknown option '%s' for '" PROG " %s'", bad, cmd);
        }
        if (c == ':') usage_error("option '%s' needs a value", argv[optind - 1]);
        given[c - 1000] = 1;
        set_option(o, &OPTIONS[c - 1000], optarg);
    }
    if (o->channels % o->heads) usage_error("--heads must divide --channels");   // (the defaults divide)
    task_defaults(o, given);
    o->obj.max_new_tokens = o->max_new_tokens;   // the Dr. GRPO constant
    int files = strstr(cmd, " FILE") != NULL;
    if (files && optind != argc - 1)
        usage_error("'" PROG " %.*s' needs exactly one FILE argument ('-' for stdin)", (int)strcspn(cmd, " "),
                    cmd);
    if (!files && optind < argc) usage_error("unexpected argument '%s' for '" PROG " %s'", argv[optind], cmd);
    if (mask & RUN_CMDS) check_decay("--lr", o->lr, o->weight_decay, "");
#ifdef _OPENMP
    if (o->threads > 0) omp_set_num_threads(o->threads);
#endif
#ifdef GRPO_CUDA
    if (o->update_layout == LAYOUT_TREE)   // (the defaults: padded, plain)
        usage_error("--update-layout tree: the tree-packed update runs on the CPU only (./grpo); "
                    "the CUDA build trains with --update-layout padded");
    if (o->sampler == SAMPLER_SHARED)
        usage_error("--sampler shared runs on the CPU only (./grpo); the CUDA build samples with --sampler "
                    "plain");
    if (mask & CUDA_CMDS) cuda_startup(o->tf32);
#endif
    return optind;
}

// 1 when the comma-separated list (at most 255 bytes) names `name`.
static int list_has(const char *list, const char *name) {
    char l[260], n[64];
    snprintf(l, sizeof l, ",%s,", list);
    snprintf(n, sizeof n, ",%s,", name);
    return strstr(l, n) != NULL;
}

// objectives_run: the objectives (1 << OBJ_* bits) a run of command `mask` trains: train's and
// check's --objective; tree's GRPO, λ-GRPO and its --objective list.
static unsigned objectives_run(const Options *o, unsigned mask) {
    if (!(mask & CMD_TREE)) return 1u << o->obj.objective;
    unsigned run = 1u << OBJ_GRPO | 1u << OBJ_LAMBDA_GRPO;
    for (int k = 0; OBJECTIVE_NAMES[k]; k++)
        if (list_has(o->tree_objectives, OBJECTIVE_NAMES[k])) run |= 1u << k;
    return run;
}

/* scope_miss: 1 when a run of command `mask` trains none of the objectives option s applies to
   (s->objectives; 0: all), 2 when it uses none of its prompt selectors (s->selectors; train's
   --prompt-select, uniform for the other commands), else 0. */
static int scope_miss(const Options *o, const OptSpec *s, unsigned mask) {
    unsigned selector = mask & CMD_TRAIN ? 1u << o->prompt_select : 1u << SELECT_UNIFORM;
    if (s->objectives && !(s->objectives & objectives_run(o, mask))) return 1;
    return s->selectors && !(s->selectors & selector) ? 2 : 0;
}

/* option_in_force: 0 for an option of command `mask` that this run does not use (scope_miss; tree's
   empty --objective; --task countdown, --probe-every 0, --overwrite 0): the banner and run record
   leave it out, so they stay as before the option existed (a pre-registered study's hash). */
static int option_in_force(const Options *o, const OptSpec *s, unsigned mask) {
    if (list_has("task,probe-every,overwrite", s->name) && !*(const int *)((const char *)o + s->offset))
        return 0;   // countdown (TASK_COUNTDOWN is 0), off
    if (mask & CMD_TREE && !strcmp(s->name, "objective")) return o->tree_objectives[0] != 0;
    return !(mask & (CMD_TRAIN | CMD_TREE | CMD_CHECK)) || !scope_miss(o, s, mask);
}

// Prints every option of the command with the value in force (start-up banner).
static void print_options(FILE *f, const Options *o, unsigned mask) {
    char v[300];
    fprintf(f, "# config:");
    for (int i = 0; i < NUM_OPTIONS; i++)
        if (OPTIONS[i].cmds & mask && strcmp(OPTIONS[i].name, "threads") &&
            option_in_force(o, &OPTIONS[i], mask)) {
            option_text(v, sizeof v, o, &OPTIONS[i], 0);
            fprintf(f, " %s=%s", OPTIONS[i].name, v);
        }
    fprintf(f, " threads=%d\n", num_threads());
}

// The options of a GRPO step (train, tree).
static GRPOConfig grpo_config_from_options(const Options *o) {
    return (GRPOConfig){o->obj, o->temperature, o->num_iterations, o->micro_batch, o->mask_truncated, o->seed,
                        o->update_layout};
}

// The policy's AdamW and schedule (sft, train, tree) over total_steps.
static AdamWConfig adamw_from_options(const Options *o, int total_steps) {
    return (AdamWConfig){o->lr, o->beta1, o->beta2, 1e-8f, o->weight_decay, o->grad_clip,
                         o->warmup, total_steps, o->schedule, o->min_lr_frac};
}

// The critic of --objective ppo (train, tree): GAE's γ and λ, verl's value clip 0.5, and the
// policy's AdamW and schedule at --critic-lr (0: --lr).
static CriticConfig critic_config_from_options(const Options *o, int total_steps) {
    CriticConfig c = {o->gae_gamma, o->gae_lambda, 0.5f, adamw_from_options(o, total_steps)};
    if (o->critic_lr > 0.0f) c.opt.lr = o->critic_lr;
    return c;
}

/* The options that shape a run's samples and updates: a checkpoint's run record holds them, and a
   resume must give the same values. The optimizer's may change, with a note (lowering --lr and
   resuming rescues a diverging run); --steps, paths and reporting options are not recorded. */
static const char *TRAIN_RUN_OPTIONS[] = {
    "seed", "prompts-per-step", "group-size", "temperature", "max-new-tokens", "objective", "loss-agg",
    "adv-std", "adv-std-scope", "adv-eps", "clip-eps-low", "clip-eps-high", "beta", "num-iterations",
    "mask-truncated", "format-reward", "mc-k", "mc-whiten", "gae-gamma", "gae-lambda", "prompt-select",
    "select-target", "select-candidates", "select-decay", "dynamic-max-rounds", NULL};
static const char *SFT_RUN_OPTIONS[] = {"seed", "batch-size", NULL};
// The input files whose hash a run record holds and a resume checks: other data is another run.
static const char *const TRAIN_INPUTS[] = {"train-data", "val-data", "init", NULL};
static const char *const SFT_INPUTS[] = {"train-data", "val-data", NULL};
static const char *OPTIMIZER_OPTIONS[] = {"lr", "min-lr-frac", "schedule", "warmup", "weight-decay", "beta1",
                                          "beta2", "grad-clip", "critic-lr", NULL};

// The run record's options: "name=value\n" for each option in force of both NULL-terminated lists.
static void record_options(char *out, size_t cap, const Options *o, const char *const *fixed,
                           const char *const *optimizer) {
    size_t used = 0;
    const char *const *lists[2] = {fixed, optimizer};
    out[0] = 0;
    for (int l = 0; l < 2; l++)
        for (int i = 0; lists[l][i]; i++) {
            char value[64];
            if (!option_in_force(o, find_option(lists[l][i]), CMD_TRAIN)) continue;
            option_text(value, sizeof value, o, find_option(lists[l][i]), 1);
            if (used < cap) used += snprintf(out + used, cap - used, "%s=%s\n", lists[l][i], value);
        }
}

// record_value: key's value in a run record's "name=value\n" lines (it ends at its '\n'); NULL: no such line
static const char *record_value(const char *options, const char *key) {
    size_t n = strlen(key);
    for (const char *line = options; line && *line; ) {
        if (!strncmp(line, key, n) && line[n] == '=') return line + n + 1;
        line = strchr(line, '\n');
        if (line) line++;
    }
    return NULL;
}

#define INPUT_HASH_SUFFIX ".fnv1a64"   // a run record's key for an input file's hash: "train-data.fnv1a64"

static uint64_t fnv1a64(const void *data, size_t n);   // compare's hash, below
static void ckpt_errorf(const char *path, const char *hint, const char *fmt, ...);   // checkpoints, below

// file_fnv1a64: fnv1a64 of the file at path into *hash; returns 0, or −1 with errno when it cannot be read
static int file_fnv1a64(const char *path, uint64_t *hash) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    *hash = fnv1a64(NULL, 0);   // the offset basis, then fnv1a64's step byte by byte
    for (int c; (c = getc(f)) != EOF; ) *hash = (*hash ^ (unsigned char)c) * 1099511628211ull;
    int err = ferror(f) ? (errno ? errno : EIO) : 0;
    fclose(f);
    errno = err;
    return err ? -1 : 0;
}

// The fnv1a64 of the file that o's option `name` names, as 16 hex digits in out; exits (1) naming
// the option when the file cannot be read (hint: what to give).
static void input_file_hash(char out[17], const Options *o, const char *name, const char *hint) {
    const char *file = (const char *)o + find_option(name)->offset;
    uint64_t hash;
    if (file_fnv1a64(file, &hash) != 0)
        cmp_die(__LINE__, hint, "--%s '%s': cannot read it: %s", name, file, strerror(errno));
    snprintf(out, 17, "%016llx", (unsigned long long)hash);
}

/* record_input_hashes: appends "NAME.fnv1a64=<16 hex digits>\n" to a run record (out, cap bytes) for each
   file option of names: its file's hash, or the one `saved` (the resumed run's record, "" for a new run)
   holds, so that a resume that does not read --init (β = 0) carries the starting point's hash on. */
static void record_input_hashes(char *out, size_t cap, const Options *o, const char *const *names,
                                const char *saved) {
    for (int i = 0; names[i]; i++) {
        char key[80], value[32];
        snprintf(key, sizeof key, "%s" INPUT_HASH_SUFFIX, names[i]);
        const char *old = record_value(saved, key);
        if (old) snprintf(value, sizeof value, "%.16s", old);
        else input_file_hash(value, o, names[i], "give a readable file");
        size_t used = strlen(out);
        if (used + strlen(key) + strlen(value) + 3 > cap)
            fail_at(__FILE__, __LINE__, "internal error: the run record is full", NULL);
        snprintf(out + used, cap - used, "%s=%s\n", key, value);
    }
}

/* check_resume_inputs: the files of the options of names against the hashes in the run record of
   the checkpoint at path: another content is a usage error naming the option and both hashes. */
static void check_resume_inputs(const Options *o, const TrainState *st, const char *path,
                                const char *const *names) {
    for (int i = 0; names[i]; i++) {
        char key[80];
        snprintf(key, sizeof key, "%s" INPUT_HASH_SUFFIX, names[i]);
        const char *saved = record_value(st->options, key);
        if (!saved)
            ckpt_errorf(path, "the file was edited, or written by another build; start a new run with --init",
                        "its run record has no '%s' (the hash of its --%s), so --%s cannot be checked", key,
                        names[i], names[i]);
        const char *file = (const char *)o + find_option(names[i])->offset;
        char ours[17];
        input_file_hash(ours, o, names[i], "give the file the resumed run was started with");
        if (strncmp(saved, ours, 16) != 0 || saved[16] != '\n')
            usage_error("--%s %s: its bytes (fnv1a64 %s) are not those of the --%s that the run in '%s' was "
                        "started with (fnv1a64 %.16s), and a resumed run must go on with its own inputs: give "
                        "that file, or start a new run", names[i], file, ours, names[i], path, saved);
    }
}

/* check_resume_options: the options recorded in the checkpoint at path against o: another value of
   one in `fixed` (or one in force now that the record leaves out) is a usage error naming both values;
   of another option (the optimizer's), a note. */
static void check_resume_options(const Options *o, const TrainState *st, const char *path,
                                 const char *const *fixed) {
    for (const char *line = st->options; *line; line += strcspn(line, "\n"), line += *line == '\n') {
        char name[64] = "", saved[64] = "", ours[64];
        sscanf(line, "%63[^=\n]=%63[^\n]", name, saved);
        const OptSpec *s = find_option(name);
        size_t len = strlen(name), k = strlen(INPUT_HASH_SUFFIX);   // an input file's hash: checked by
        if (!s && len > k && !strcmp(name + len - k, INPUT_HASH_SUFFIX)) continue;   // check_resume_inputs
        if (!s)   // its CRC held, so this build wrote a key it does not read
            ckpt_errorf(path, "resume with the build that wrote it, or start a new run with --init",
                        "its run record holds '%s', which this build does not know", name);
        option_text(ours, sizeof ours, o, s, 1);
        if (!strcmp(ours, saved)) continue;
        char shown[2][64];   // theirs and ours: a float as %g, unless that shows the two values alike
        snprintf(shown[0], sizeof shown[0], "%g", (float)strtod(saved, NULL));
        option_text(shown[1], sizeof shown[1], o, s, 0);
        int exact = s->type != OPT_FLOAT || !strcmp(shown[0], shown[1]);
        const char *theirs_shown = exact ? saved : shown[0], *ours_shown = exact ? ours : shown[1];
        int is_fixed = 0;
        for (int i = 0; fixed[i]; i++) is_fixed |= !strcmp(fixed[i], name);
        if (is_fixed)
            usage_error("--%s %s: '%s' was saved by a run with --%s %s, and a resumed run must go on with "
                        "the options that shape its samples and updates: give --%s %s, or start a new run",
                        name, ours_shown, path, name, theirs_shown, name, theirs_shown);
        fprintf(stderr, "note: --%s %s: the run in '%s' had --%s %s; the resumed run goes on with %s\n", name,
                ours_shown, path, name, theirs_shown, ours_shown);
    }
    Options d;
    default_options(&d);
    for (int i = 0; fixed[i]; i++) {
        const OptSpec *s = find_option(fixed[i]);
        if (!option_in_force(o, s, CMD_TRAIN) || record_value(st->options, fixed[i])) continue;
        if (option_in_force(&d, s, CMD_TRAIN))   // every option in force is recorded: the key is missing
            ckpt_errorf(path, "the file was edited, or written by another build; start a new run with --init",
                        "its run record has no '%s', which every run records, so --%s cannot be checked",
                        fixed[i], fixed[i]);
        char ours[64], theirs[64];
        option_text(ours, sizeof ours, o, s, 0);
        option_text(theirs, sizeof theirs, &d, s, 0);
        usage_error("--%s %s: '%s' was saved by a run with --%s %s (not in force there, so its run record "
                    "leaves it out), and a resumed run must go on with the options that shape its samples "
                    "and updates: give --%s %s, or start a new run", fixed[i], ours, path, fixed[i], theirs,
                    fixed[i], theirs);
    }
}

/* A new run (no --resume) in a run directory that holds an earlier run is refused: a finished one
   unless --overwrite 1; one with a resumable checkpoint always (a later --resume would mix the two). */
static void refuse_stale_checkpoint(const Options *o, const char *periodic) {
    struct stat sb;
    char model[1100];
    snprintf(model, sizeof model, "%s/model.bin", o->run_dir);
    int finished = !o->resume[0] && stat(model, &sb) == 0, with_ckpt = stat(periodic, &sb) == 0;
    if (finished && !o->overwrite)
        usage_error("--run-dir %s holds a finished run ('%s'%s%s%s): give another --run-dir, or --overwrite 1 to "
                    "replace it", o->run_dir, model, with_ckpt ? ", and its last resumable checkpoint '" : "",
                    with_ckpt ? periodic : "", with_ckpt ? "'" : "");
    if (finished) unlink(periodic);   // --overwrite 1: the finished run's last periodic checkpoint goes with it
    if (!o->resume[0] && stat(periodic, &sb) == 0)
        usage_error("--run-dir %s holds '%s', the resumable checkpoint of an earlier run: continue that run "
                    "with --resume %s, or give another --run-dir (or remove the file)", o->run_dir, periodic,
                    shell_word(periodic));
}

// refuse_run_dir_inputs: sft's or train's (mask) files in --run-dir are none of its inputs
// (--resume may be the run's own ckpt.bin: a resume in place).
static void refuse_run_dir_inputs(const Options *o, unsigned mask) {
    static const char *names[] = {"model.bin", "ckpt.bin", "sft.csv", "train.csv", "eval.csv", "result.txt",
                                  "prompt_select.txt"};
    char path[1100];
    NamedPath out = {"--run-dir", path}, ins[5] = {{"--train-data", o->train_data}, {"--val-data", o->val_data},
        {"--resume", o->resume}, {"--test-data", mask & CMD_TRAIN ? o->test_data : ""},
        {"--init", mask & CMD_TRAIN ? o->init : ""}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", o->run_dir, names[i]);
        ins[2].path = i == 1 ? "" : o->resume;   // ckpt.bin: every input but --resume
        refuse_inputs_as_outputs(&out, 1, ins, 5);
    }
}

/* check_grpo_options: the checks of a GRPO run (train, tree: command `mask`) before anything is loaded:
   k >= 2 and P x k <= 4096; an option set away from its default in a run that runs none of its
   objectives or selectors (scope_miss) would do nothing: a usage error naming it and what it applies
   to. Then PPO's own checks when it runs, and train's --prompt-select's (M >= P, d in (0, 1]). Call it
   after tree_methods. */
static void check_grpo_options(const Options *o, unsigned mask) {
    if (o->group_size < 2)
        usage_error("--group-size %d: training needs k >= 2 (a group of one has no std and no relative "
                    "advantage)", o->group_size);
    if (o->prompts_per_step * o->group_size > 4096)
        usage_error("--prompts-per-step x --group-size must be <= 4096");
    Options d;
    default_options(&d);
    unsigned run = objectives_run(o, mask);
    for (int i = 0; i < NUM_OPTIONS; i++) {
        const OptSpec *s = &OPTIONS[i];
        char ours[64], dflt[64], names[128] = "";
        int miss = scope_miss(o, s, mask), by_objective = miss == 1;
        if (!(s->cmds & mask) || !miss) continue;
        option_text(ours, sizeof ours, o, s, 1);
        option_text(dflt, sizeof dflt, &d, s, 1);
        if (!strcmp(ours, dflt)) continue;
        const char *const *choices = by_objective ? OBJECTIVE_NAMES : PROMPT_SELECT_NAMES;
        for (int k = 0; choices[k]; k++)
            if ((by_objective ? s->objectives : s->selectors) >> k & 1u)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? "|" : "",
                         choices[k]);
        const char *kind = by_objective ? "objective" : "prompt-select";
        option_text(ours, sizeof ours, o, s, 0);   // as typed: a float as %g
        if (by_objective && mask & CMD_TREE)
            usage_error("--%s %s applies to --%s %s only, and tree runs it only with %s in its --objective list",
                        s->name, ours, kind, names, names);
        usage_error("--%s %s applies to --%s %s only, and this run has --%s %s", s->name, ours, kind, names, kind,
                    by_objective ? OBJECTIVE_NAMES[o->obj.objective] : PROMPT_SELECT_NAMES[o->prompt_select]);
    }
    if (run & 1u << OBJ_PPO)
        check_decay("--critic-lr", o->critic_lr > 0.0f ? o->critic_lr : o->lr, o->weight_decay, "the critic's ");
#ifdef GRPO_CUDA
    if (run & 1u << OBJ_PPO)
        usage_error("--objective ppo: the CUDA build does not run the critic (its value head is host code); "
                    "use the CPU build (make; ./grpo)");
#endif
    if (!(mask & CMD_TRAIN)) return;
    if (o->select_candidates != 0 && o->select_candidates < o->prompts_per_step)
        usage_error("--select-candidates %d: MoPPS keeps --prompts-per-step %d of the M candidates, so M "
                    "must be >= %d", o->select_candidates, o->prompts_per_step, o->prompts_per_step);
    if (!(o->select_decay > 0.0f))
        usage_error("--select-decay %g: the posterior decay must be in (0, 1] (1: no decay; 0 would forget "
                    "every outcome)", o->select_decay);
}

/* note_cut_demonstrations: how many of the demonstrations in d's file (one token a character, plus
   <eos>) need more than --max-new-tokens (they would be cut off and score 0); if any, a note. A file of
   prompts with more numbers than the task's default budget is for: a note too. Returns that count. */
static long note_cut_demonstrations(const Options *o, const Dataset *d) {
    FILE *f = fopen(d->path, "r");
    if (!f) return 0;
    char line[4200];
    long cut = 0, demos = 0;
    int longest = 0, longest_line = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *tab = strchr(line, '\t');
        if (!tab || line[0] == '#') continue;
        int len = (int)strcspn(tab + 1, "\r\n") + 1;   // + <eos>
        demos++;
        if (len > o->max_new_tokens) cut++;
        if (len > longest) { longest = len; longest_line = lineno; }
    }
    fclose(f);
    int most = 0;   // a file of prompts only: the budget cannot be read from it; the task knows its
    for (int i = 0; i < d->n; i++) most = d->num_count[i] > most ? d->num_count[i] : most;   // default's size
    if (demos == 0 && most > d->task->max_new_nums && o->max_new_tokens <= d->task->max_new)
        fprintf(stderr, "note: --max-new-tokens %d: %s holds prompts only, so the budget its problems need "
                "cannot be read from it; they have up to %d numbers, and %s's default budget, %d, is for up to "
                "%d: a longer solution is cut off and scores 0: eval --data on a file of demonstrations of that "
                "size says how many tokens they need; give that --max-new-tokens\n",
                o->max_new_tokens, d->path, most, d->task->name, d->task->max_new, d->task->max_new_nums);
    if (cut)
        fprintf(stderr, "note: --max-new-tokens %d: %ld of the %ld demonstrations in %s need more (the longest, "
                "line %d, %d tokens with <eos>); completions that long are cut off and score 0: give "
                "--max-new-tokens %d or more for these data\n", o->max_new_tokens, cut, demos, d->path, longest_line,
                longest, longest);
    return cut;
}

// The longest prompt of d plus --max-new-tokens must fit in the model's context; the
// error names that prompt's FILE:LINE. A budget shorter than the file's demonstrations: a note.
static void check_context(const Options *o, int maxT, const Dataset *d) {
    note_cut_demonstrations(o, d);
    int longest = 0;
    for (int i = 1; i < d->n; i++) if (d->prompt_len[i] > d->prompt_len[longest]) longest = i;
    if (d->n > 0 && d->prompt_len[longest] + o->max_new_tokens > maxT)
        usage_error("--max-new-tokens: %d prompt tokens (%s:%d, the longest prompt) + %d new tokens exceed "
                    "the model's context of %d", d->prompt_len[longest], d->path, d->line[longest],
                    o->max_new_tokens, maxT);
}

// ----------------------------------------------------------------------------
// Checkpoints (notes/reference.md): header, vocabulary, parameters, and optionally the AdamW moments,
// RNG state, run record and state sections, so that a resumed run continues bit for bit, and only as the
// run it continues. Written whole through a temporary file of its own (atomic_open).

#define CKPT_MAGIC 0x4f505247   // "GRPO" in a little-endian file
#define CKPT_VERSION 4          // the only one read (1-3: older grpo.c builds, without checksums)
#define CKPT_HEADER_INTS 32
#define CKPT_RECORD_MAX 4096    // bytes of a run record
#define CKPT_TAG_BYTES 8        // a state section's name, NUL-padded
#define CKPT_TASK_INT 15        // h[15]: the model's task (index in TASKS)

/* The checksums: CRC-32 (IEEE 802.3, zlib's and PNG's) of each section, so that a flipped bit or an
   edited byte is refused, naming the section. They sit in the header, which the last one covers:
     h[16] vocabulary, h[17] parameters, h[18] AdamW m, h[19] AdamW v, h[20] RNG state,
     h[21] run record, h[22 + i] state section i (its tag, its length and its bytes),
     h[31] the header's own ints h[0..30].
   Sections a file does not hold (no optimizer state, fewer state sections) have 0. */
#define CKPT_CRC_VOCAB 16
#define CKPT_CRC_SECTIONS 22
#define CKPT_CRC_HEADER 31
static const char *const CKPT_CRC_NAMES[6] = {"the vocabulary", "the parameters", "the AdamW first moments",
                                              "the AdamW second moments", "the RNG state", "the run record"};

/* crc32_update: CRC-32 of n more bytes of data after a CRC of crc (0 for none yet): the running
   value, so that a section written in pieces (a state section's tag, length and bytes) has one CRC. */
static uint32_t crc32_update(uint32_t crc, const void *data, size_t n) {
    static uint32_t table[256];   // built at the first save or load, before any thread runs
    if (!table[255])   // (the last entry built)
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1u ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    const unsigned char *p = (const unsigned char *)data;
    crc = ~crc;
    while (n--) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

// A state section's CRC-32: its tag (CKPT_TAG_BYTES), its length (uint64) and its bytes.
static int32_t ckpt_section_crc(const char *tag, uint64_t bytes, const void *data) {
    uint32_t c = crc32_update(0, tag, CKPT_TAG_BYTES);
    c = crc32_update(c, &bytes, sizeof bytes);
    return (int32_t)crc32_update(c, data, bytes);
}

/* fopen_nofollow: fopen(path, mode) for a mode that writes, but never through a link (a link planted as
   a run's log fails with ELOOP). NULL with errno set (fopenCheck exits then: the descriptor stays open). */
static FILE *fopen_nofollow(const char *path, const char *mode) {
    int flags = mode[0] == 'w' ? O_CREAT | O_TRUNC : mode[0] == 'a' ? O_CREAT | O_APPEND : 0;
    int fd = open(path, (strchr(mode, '+') ? O_RDWR : O_WRONLY) | flags | O_NOFOLLOW | O_CLOEXEC, 0666);
    return fd >= 0 ? fdopen(fd, mode) : NULL;
}

/* atomic_create: the one way this program writes a file whole: a new temporary file PATH.tmp.<pid>.<n>
   (named in tmp, cap bytes; NULL with errno set) that atomic_close fsyncs and renames over path, so a
   reader sees all of the new file or the old one. atomic_open and atomic_close exit naming the file. */
static FILE *atomic_create(const char *path, char *tmp, size_t cap) {
    static unsigned long counter = 0;   // files made by this process
    int fd = -1;
    for (int attempt = 0; attempt <= 1000 && fd < 0; attempt++) {
        snprintf(tmp, cap, "%s.tmp.%ld.%lu", path, (long)getpid(), counter++);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) return NULL;   // (EEXIST: a dead process's file, or a planted one)
    }
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f && fd >= 0) unlink(tmp);   // (its callers exit on NULL: the descriptor goes with the process)
    return f;
}

typedef struct { FILE *f; char tmp[1200]; const char *path; } AtomicFile;
static FILE *atomic_open(AtomicFile *a, const char *path) {
    a->path = path;
    a->f = atomic_create(path, a->tmp, sizeof a->tmp);
    if (!a->f) {
        char msg[2600];
        snprintf(msg, sizeof msg, "cannot create '%.1100s' (to write '%.1100s'): %s", a->tmp, path, strerror(errno));
        fail_at(__FILE__, __LINE__, msg, "check that the directory exists and is writable");
    }
    return a->f;
}
static void atomic_close(AtomicFile *a) {
    int ok = !ferror(a->f) && fflush(a->f) == 0 && fsync(fileno(a->f)) == 0;
    if (fclose(a->f) == 0 && ok && rename(a->tmp, a->path) == 0) return;
    int err = errno;
    unlink(a->tmp);
    char msg[2600];
    snprintf(msg, sizeof msg, "cannot write '%.1100s' (through '%.1100s'): %s", a->path, a->tmp, strerror(err));
    fail_at(__FILE__, __LINE__, msg, "is the disk full? the temporary file was removed");
}

/* A save that SIGINT, SIGTERM or SIGHUP interrupts removes its temporary file: ckpt_on_signal
   (async-signal-safe) unlinks its temporary file and raises the signal again with its default action. */
static AtomicFile ckpt_file;   // the save under way
static volatile sig_atomic_t ckpt_tmp_live = 0;   // 1: ckpt_file.tmp may exist and is ours
static const int CKPT_SIGNALS[3] = {SIGINT, SIGTERM, SIGHUP};

static void ckpt_on_signal(int sig) {
    if (ckpt_tmp_live) unlink(ckpt_file.tmp);
    raise(sig);   // SA_RESETHAND restored the default action on entry
}

// Installs ckpt_on_signal for the save (saved: the actions to restore) or, restore = 1, restores.
static void ckpt_signals(struct sigaction *saved, int restore) {
    struct sigaction sa;   // (not an initializer: glibc's sa_handler is a macro, which C++ cannot designate)
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ckpt_on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++)
        if (restore) sigaction(CKPT_SIGNALS[i], &saved[i], NULL);
        else if (sigaction(CKPT_SIGNALS[i], NULL, &saved[i]) == 0 && saved[i].sa_handler != SIG_IGN)
            sigaction(CKPT_SIGNALS[i], &sa, NULL);   // (an ignored one stays so: SIGHUP under nohup)
}

#include <dirent.h>   // (here: only remove_dead_ckpt_tmps reads a directory)

/* remove_dead_ckpt_tmps: removes from path's directory, with a note each, what saves killed by SIGKILL
   left: files NAME.tmp.<pid>.<n> of a process that is gone, empty or starting with CKPT_MAGIC. */
static void remove_dead_ckpt_tmps(const char *path) {
    char dir[1100];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + (slash == path) : 1, slash ? path : ".");
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) != NULL; ) {
        const char *name = e->d_name, *t = strstr(name, ".tmp.");
        while (t && strstr(t + 1, ".tmp.")) t = strstr(t + 1, ".tmp.");   // the last ".tmp."
        long pid = 0;
        int end = 0;   // past <pid>.<n>, both digits only
        if (!t || t == name || t[5] < '0' || t[5] > '9' || sscanf(t + 5, "%9ld.%*[0-9]%n", &pid, &end) != 1 ||
            !end || t[5 + end] || pid <= 0 || pid == (long)getpid())
            continue;   // not such a name
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;   // alive (EPERM: another user's)
        char full[1400];
        snprintf(full, sizeof full, "%s/%s", dir, name);
        struct stat sb;
        if (lstat(full, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        int32_t magic = 0;
        FILE *f = sb.st_size > 0 ? fopen(full, "rb") : NULL;
        int ours = sb.st_size == 0 || (f && fread(&magic, 4, 1, f) == 1 && magic == CKPT_MAGIC);
        if (f) fclose(f);
        if (ours && unlink(full) == 0)
            fprintf(stderr, "note: removed %s (%lld bytes): a checkpoint's temporary file left by process %ld, "
                            "which is gone\n", full, (long long)sb.st_size, pid);
    }
    closedir(d);
}

// The run's CSV log (see run logs, below), a row per step, each flushed: a killed run loses one at most.
struct CsvLog {
    FILE *f;
    char path[1100];
    int key_fields;       // a row's leading fields that the same run always writes alike (not timings)
    char last_row[256];   // those fields of the last row: a checkpoint records them, a resume checks them
    const struct Probe *probe;   // train's --probe-every: its columns end each row (NULL: none)
};

/* Largest |parameter| a checkpoint may hold. AdamW moves a weight by about lr per step, so healthy
   runs stay far below it (SFT and GRPO end below 1.6; 200 steps at --lr 10 under 600); past it logits
   are 1e8 and more and float32 overflows soon after: the run is diverging. */
#define PARAM_LIMIT 1e4f

/* check_params: a parameter p[i] of m (on the host) that is not finite or exceeds PARAM_LIMIT stops the run
   at step `step` without saving, naming last_good, the newest checkpoint that passed this check. */
static void check_params(const GPT *m, const float *p, int step, const char *last_good) {
    size_t worst = 0;
    float worst_abs = 0.0f;
    for (size_t i = 0; i < m->num_parameters && !isnan(worst_abs); i++)
        if (!(fabsf(p[i]) <= worst_abs)) {   // true for NaN too, so a NaN is always kept
            worst_abs = fabsf(p[i]);
            worst = i;
        }
    if (worst_abs <= PARAM_LIMIT) return;
    int t = 0;
    size_t off = 0;
    while (t < NUM_PARAM_TENSORS - 1 && worst >= off + m->param_sizes[t]) off += m->param_sizes[t++];
    fprintf(stderr, "error: step %d: the parameters have diverged (|%s[%zu]| = %g, limit %g); stopping "
                    "without saving them.\n", step, PARAM_NAMES[t], worst - off, worst_abs, PARAM_LIMIT);
    fprintf(stderr, "  last good checkpoint: %s\n",
            last_good[0] ? last_good : "none yet (this run has saved nothing)");
    fprintf(stderr, "  hint: lower --lr; keep lr x weight-decay well below 1\n");
    exit(EXIT_INPUT);
}

/* save_checkpoint: writes path whole as after step `step`: header, vocabulary, parameters, the AdamW moments,
   st's RNG, run record and state sections, once check_params passes; then names path in last_good (1100
   bytes). A write error exits (1), an older path intact. */
static void save_checkpoint(const char *path, const GPT *m, const TrainState *st, int step, char *last_good) {
    char vocab[512], record[CKPT_RECORD_MAX];   // the run record: options < 1024 bytes, the row < 256
    int vlen = vocab_string(vocab, sizeof vocab), nsec = st->num_sections;
    int rlen = snprintf(record, sizeof record, "%sgen_tokens=%lld\nlog_row=%s\n", st->options, st->gen_tokens,
                        st->log ? st->log->last_row : st->log_row);
    uint64_t sec_bytes = 0;   // every section's bytes, without their tags and lengths
    for (int i = 0; i < nsec; i++) sec_bytes += st->section[i].bytes;
    // h[7] 1: the optimizer state follows (files without it are still read); h[10]: which run wrote it
    // (1 sft, 2 train); h[13..14]: sec_bytes in two 31-bit halves
    int32_t h[CKPT_HEADER_INTS] = {CKPT_MAGIC, CKPT_VERSION, m->config.max_seq_len, m->config.vocab_size,
                                   m->config.num_layers, m->config.num_heads, m->config.channels, 1, step,
                                   vlen, st->kind, rlen, nsec, (int32_t)(sec_bytes & 0x7fffffff),
                                   (int32_t)(sec_bytes >> 31)};
    h[CKPT_TASK_INT] = m->task;
    // the sections of CKPT_CRC_NAMES in file order, each with its CRC-32 in the header
    size_t pb = m->num_parameters * sizeof(float), bytes[6] = {(size_t)vlen, pb, pb, pb, 4 * sizeof(uint64_t),
                                                                (size_t)rlen};
    const void *data[6] = {vocab, m->params_memory, m->m_memory, m->v_memory, st->rng.s, record};
#ifdef GRPO_CUDA
    float *host = m->on_device ? (float *)mallocCheck(3 * pb) : NULL;
    for (int i = 1; host && i <= 3; i++) {   // the parameters and moments, from the GPU
        cuda_memcpy_d2h(host + (i - 1) * m->num_parameters, data[i], pb);
        data[i] = host + (i - 1) * m->num_parameters;
    }
#endif
    check_params(m, (const float *)data[1], step, last_good);
    for (int i = 0; i < 6; i++) h[CKPT_CRC_VOCAB + i] = (int32_t)crc32_update(0, data[i], bytes[i]);
    for (int i = 0; i < nsec; i++)
        h[CKPT_CRC_SECTIONS + i] = ckpt_section_crc(st->section[i].tag, st->section[i].bytes, st->section[i].data);
    h[CKPT_CRC_HEADER] = (int32_t)crc32_update(0, h, CKPT_CRC_HEADER * sizeof *h);
    remove_dead_ckpt_tmps(path);   // what saves killed by SIGKILL left there
    struct sigaction saved[3];
    ckpt_signals(saved, 0);
    FILE *f = atomic_open(&ckpt_file, path);
    ckpt_tmp_live = 1;   // from here on a signal removes it
    fwrite(h, sizeof(int32_t), CKPT_HEADER_INTS, f);   // a failed write shows as ferror in atomic_close
    for (int i = 0; i < 6; i++) fwrite(data[i], 1, bytes[i], f);
    for (int i = 0; i < nsec; i++) {   // each: its tag, its length (uint64), its bytes
        fwrite(st->section[i].tag, 1, CKPT_TAG_BYTES, f);
        fwrite(&st->section[i].bytes, sizeof(uint64_t), 1, f);
        fwrite(st->section[i].data, 1, st->section[i].bytes, f);
    }
    atomic_close(&ckpt_file);   // on failure: exits naming path, its temporary file removed
    ckpt_tmp_live = 0;   // renamed: no temporary file left to remove
    ckpt_signals(saved, 1);
    snprintf(last_good, 1100, "%s", path);
#ifdef GRPO_CUDA
    free(host);
#endif
}

// ckpt_errorf: stops on a checkpoint that cannot be used (exit 1): "checkpoint 'PATH': WHAT" (printf's
// format and arguments), and the hint (NULL: none). ckpt_error: WHAT as it is.
__attribute__((format(printf, 3, 4)))
static void ckpt_errorf(const char *path, const char *hint, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "error: checkpoint '%s': ", path);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, hint ? "\n  hint: %s\n" : "\n", hint);
    exit(EXIT_INPUT);
}
#define ckpt_error(path, what, hint) ckpt_errorf(path, hint, "%s", what)

// refuse_other_task: stops (exit 1) when the model m read from path is of another task than --task `task`.
static void refuse_other_task(const char *path, const GPT *m, int task) {
    if (m->task == task) return;
    char hint[256];
    snprintf(hint, sizeof hint, "give --task %s (with that task's data), or a model trained with --task %s",
             TASKS[m->task].name, TASKS[task].name);
    ckpt_errorf(path, hint, "is a model of task %s, and this command's data are of task %s (--task %s)",
                TASKS[m->task].name, TASKS[task].name, TASKS[task].name);
}

#define CKPT_CORRUPT_HINT "the file is corrupt; use an intact copy or an earlier checkpoint"

/* ckpt_read: n bytes of a checkpoint, `what`, into ptr (a short read: the file is truncated); with crc,
   checked against that CRC-32. A failure stops the load (exit 1), naming the file and what. */
static void ckpt_read(void *ptr, size_t n, FILE *f, const char *path, const char *what, const int32_t *crc) {
    errno = 0;
    if (fread(ptr, 1, n, f) != n) {
        if (ferror(f))   // not the end of the file: the disk or the file system failed
            ckpt_errorf(path, NULL, "read error in %s: %s", what, errno ? strerror(errno) : "unknown");
        ckpt_errorf(path, "the file is incomplete (interrupted copy?); use an intact checkpoint",
                    "truncated: the file ends inside %s", what);
    }
    if (crc && (int32_t)crc32_update(0, ptr, n) != *crc)
        ckpt_errorf(path, CKPT_CORRUPT_HINT, "checksum mismatch in %s (a flipped bit, or an edited file)",
                    what);
}

// A printable copy of name[0..len) into out (cap bytes, at least 64): bytes outside printable ASCII
// as \xHH (a BOM, \r, NUL, ...), cut after 40 with "...".
static void printable_name(char *out, size_t cap, const char *name, long len) {
    size_t k = 0;
    long i = 0;
    for (; i < len && i < 40 && k + 8 < cap; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (ch >= 0x20 && ch < 0x7f) out[k++] = (char)ch;
        else k += (size_t)snprintf(out + k, cap - k, "\\x%02x", ch);
    }
    if (i == 40 && len > 40 && k + 8 < cap) k += (size_t)snprintf(out + k, cap - k, "...");
    out[k] = 0;
}

/* name_diff: where two lists of names part (s = 0: a, na bytes; 1: b, nb bytes; names separated by
   sep): the 0-based index of the first name that differs or that one list lacks (more[s] 0), with
   the names there in printable_name's form (name[s], 200 bytes); −1 when the lists agree. */
static int name_diff(const char *a, long na, const char *b, long nb, char sep, char name[2][200], int more[2]) {
    const char *v[2] = {a, b};
    long n[2] = {na, nb}, at[2] = {0, 0};
    for (int k = 0;; k++) {
        long end[2];
        for (int s = 0; s < 2; s++) {
            more[s] = at[s] <= n[s];   // (past the last separator: one more name, maybe empty)
            for (end[s] = at[s]; more[s] && end[s] < n[s] && v[s][end[s]] != sep; end[s]++) {}
            name[s][0] = 0;
            if (more[s]) printable_name(name[s], 200, v[s] + at[s], end[s] - at[s]);
        }
        if (!more[0] && !more[1]) return -1;
        long len = end[0] - at[0];
        if (!more[0] || !more[1] || len != end[1] - at[1] || memcmp(a + at[0], b + at[1], (size_t)len)) return k;
        at[0] = end[0] + 1;
        at[1] = end[1] + 1;
    }
}

// check_vocab: refuses the checkpoint at path unless its vocabulary (file_v, file_n bytes, each name
// followed by '\n'; file_size tokens in the header) is this build's, naming the first token that differs.
static void check_vocab(const char *path, const char *file_v, int file_n, int file_size) {
    char ours[512], name[2][200], where[480] = "";
    int more[2], ours_n = vocab_string(ours, sizeof ours);
    if (file_size == VOCAB_SIZE && file_n == ours_n && !memcmp(file_v, ours, (size_t)ours_n)) return;
    int tok = name_diff(file_v, file_n - (file_n > 0 && file_v[file_n - 1] == '\n'), ours, ours_n - 1, '\n',
                        name, more);
    if (tok >= 0)
        snprintf(where, sizeof where, ": token %d is '%s' in the file, '%s' here", tok,
                 more[0] ? name[0] : "(none)", more[1] ? name[1] : "(none)");
    ckpt_errorf(path, "a model can only be used with the tokenizer it was trained with", "vocabulary differs "
                "from this build's%s (%d tokens in file, %d here)", where, file_size, VOCAB_SIZE);
}

/* ckpt_refuse_not_finite: the first NaN or Inf of a checkpoint's a[0..n) stops the load, naming the file,
   `what` and the index; with m (a laid out like m's parameters) the tensor and the index in it. */
static void ckpt_refuse_not_finite(const char *path, const GPT *m, const float *a, size_t n,
                                   const char *what) {
    size_t i = 0, off = 0;
    while (i < n && isfinite(a[i])) i++;
    if (i == n) return;
    int t = 0;
    while (m && t < NUM_PARAM_TENSORS - 1 && i >= off + m->param_sizes[t]) off += m->param_sizes[t++];
    const char *hint = "the run that wrote it diverged, or the file is corrupt; use an earlier checkpoint";
    if (m)
        ckpt_errorf(path, hint, "%s tensor %s holds a%s at index %zu", what, PARAM_NAMES[t],
                    isnan(a[i]) ? " NaN" : (a[i] > 0 ? "n Inf" : " -Inf"), i - off);
    ckpt_errorf(path, hint, "%s holds a non-finite value at index %zu", what, i);
}

/* ckpt_parse_record: a run record ("key=value\n" lines, len bytes) into st: gen_tokens, log_row
   (both required) and every other line into st->options. */
static void ckpt_parse_record(const char *path, const char *record, int len, TrainState *st) {
    st->options[0] = 0;   // (gen_tokens and log_row: both required, below)
    size_t used = 0;
    int have_tokens = 0, have_row = 0;
    for (const char *line = record, *nl; line < record + len; line = nl + 1) {
        nl = (const char *)memchr(line, '\n', record + len - line);
        const char *eq = nl ? (const char *)memchr(line, '=', nl - line) : NULL;
        if (!eq || memchr(line, 0, nl - line))
            ckpt_error(path, "the run record (after the RNG state) is malformed (corrupt file?)", NULL);
        int n = (int)(nl - line) + 1;
        if (!strncmp(line, "gen_tokens=", 11)) {
            char *end;
            st->gen_tokens = strtoll(eq + 1, &end, 10);
            have_tokens = end > eq + 1 && end == nl && st->gen_tokens >= 0;
        }
        else if (!strncmp(line, "log_row=", 8)) {
            snprintf(st->log_row, sizeof st->log_row, "%.*s", (int)(nl - eq - 1), eq + 1);
            have_row = 1;
        }
        else if (used + n < sizeof st->options)
            used += (size_t)snprintf(st->options + used, sizeof st->options - used, "%.*s", n, line);
        else ckpt_error(path, "the run record's options are too long (corrupt file?)", NULL);
    }
    if (!have_tokens || !have_row)
        ckpt_error(path, !have_tokens ? "its run record has no count 'gen_tokens=N'"
                                      : "its run record has no 'log_row=' (the log's last row)",
                   "the file was edited, or written by another build; start a new run with --init");
}

/* ckpt_read_sections: the nsec state sections of a checkpoint (left bytes in all, as header h says),
   each checked against its CRC-32: into st (malloc'd), or (st NULL, --init) read, checked and freed. */
static void ckpt_read_sections(FILE *f, const char *path, const int32_t *h, int nsec, long long left,
                               TrainState *st) {
    for (int i = 0; i < nsec; i++) {
        char tag[CKPT_TAG_BYTES], name[64];
        uint64_t bytes;
        ckpt_read(tag, CKPT_TAG_BYTES, f, path, "a state section's tag", NULL);
        ckpt_read(&bytes, sizeof bytes, f, path, "a state section's length", NULL);
        if ((long long)bytes > left || tag[CKPT_TAG_BYTES - 1] != 0)
            ckpt_errorf(path, NULL, "a state section disagrees with the header (state section %d: its tag or "
                        "length; corrupt file?)", i + 1);
        left -= (long long)bytes;
        void *data = mallocCheck(bytes ? bytes : 1);
        ckpt_read(data, bytes, f, path, "a state section", NULL);
        if (ckpt_section_crc(tag, bytes, data) != h[CKPT_CRC_SECTIONS + i]) {
            printable_name(name, sizeof name, tag, (long)strnlen(tag, CKPT_TAG_BYTES));
            ckpt_errorf(path, CKPT_CORRUPT_HINT, "checksum mismatch in state section %d ('%s') (a flipped "
                        "bit, or an edited file)", i + 1, name);
        }
        if (st) ckpt_add_section(st, tag, data, bytes, 1);
        else free(data);
    }
}

/* load_checkpoint: builds *m (batches of up to max_batch) from the file; with st also the optimizer state,
   step, RNG, run record and state sections. Refuses, naming the file, anything but a whole, intact,
   finite file of this format and vocabulary. Returns 1 if the file holds optimizer state. */
static int load_checkpoint(const char *path, GPT *m, int max_batch, TrainState *st) {
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT)   // the usual case: no SFT run yet
        ckpt_error(path, "no such file",
                   "./grpo sft writes runs/sft/model.bin and ./grpo train runs/grpo/model.bin "
                   "(make run does both); or name another file (--init, --model, --resume)");
    FILE *f = fopenCheck(path, "rb");
    int32_t h[CKPT_HEADER_INTS];
    if (fread(h, sizeof(int32_t), CKPT_HEADER_INTS, f) != CKPT_HEADER_INTS)
        ckpt_error(path, ferror(f) ? "read error in the header"
                                   : "file too short for a header (truncated, or not a checkpoint)", NULL);
    if (h[0] != CKPT_MAGIC)
        ckpt_error(path, "bad magic number: not a grpo.c checkpoint",
                   "pass a model.bin written by ./grpo sft or ./grpo train");
    if (h[1] != CKPT_VERSION)   // formats 1-3 (no checksums; older run records): an older grpo.c's
        ckpt_errorf(path, h[1] < CKPT_VERSION ? "re-create it by re-running the command that wrote it with "
                    "this build, or use it with the older grpo.c build that wrote it" : "use it with the "
                    "newer grpo.c build that wrote it, or re-create it with this build",
                    "format version %d, this build reads version %d only%s", h[1], CKPT_VERSION,
                    h[1] >= 1 && h[1] < CKPT_VERSION ? " (an older grpo.c wrote it)" : "");
    // the header's own CRC first, before any of its values is trusted
    if (h[CKPT_CRC_HEADER] != (int32_t)crc32_update(0, h, CKPT_CRC_HEADER * sizeof *h))
        ckpt_error(path, "checksum mismatch in the header (a flipped bit, or an edited file)",
                   CKPT_CORRUPT_HINT);
    int opt = h[7], record_len = opt ? h[11] : 0, nsec = opt ? h[12] : 0;
    long long sec_bytes = nsec ? (long long)h[13] + ((long long)h[14] << 31) : 0;
    GPTConfig c = {h[2], h[3], h[4], h[5], h[6]};
    // the ranges of --context, --layers, --heads, --channels: every file ./grpo can write
    if (c.max_seq_len < 1 || c.max_seq_len > 1024 || c.num_layers < 1 || c.num_layers > 64 ||
        c.num_heads < 1 || c.num_heads > 64 || c.channels < 1 || c.channels > 4096 ||
        c.channels % c.num_heads || opt < 0 || opt > 1 || h[8] < 0 || h[9] < 0 || h[9] > 4096 ||
        record_len < 0 || record_len >= CKPT_RECORD_MAX || nsec < 0 || nsec > CKPT_MAX_SECTIONS ||
        (nsec && (h[13] < 0 || h[14] < 0 || h[14] > (1 << 20))))
        ckpt_error(path, "header holds an impossible model configuration (corrupt file?)", NULL);
    // the file must be exactly as long as its header says, checked BEFORE allocating the model
    size_t sz[NUM_PARAM_TENSORS], np = 0;
    param_sizes(sz, &c);
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) np += sz[i];
    long long want = (long long)sizeof h + h[9] + (long long)np * (long long)sizeof(float) * (opt ? 3 : 1) +
                     (opt ? 4 * (long long)sizeof(uint64_t) : 0) + record_len +
                     nsec * (long long)(CKPT_TAG_BYTES + sizeof(uint64_t)) + sec_bytes;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && (long long)sb.st_size != want)
        ckpt_errorf(path, "the file is incomplete or corrupt; re-create it",
                    "%s: the file is %lld bytes, its header describes %lld", sb.st_size < want ?
                    "file truncated" : "trailing bytes after the last tensor", (long long)sb.st_size, want);
    char vocab[4096];
    const int32_t *crc = h + CKPT_CRC_VOCAB;   // the CRC-32 of each section of CKPT_CRC_NAMES
    ckpt_read(vocab, h[9], f, path, CKPT_CRC_NAMES[0], &crc[0]);
    check_vocab(path, vocab, h[9], c.vocab_size);
    if (st && !opt)
        ckpt_error(path, "holds no optimizer state, so a run cannot resume from it",
                   "use --init to start a new run from it");
    if (h[CKPT_TASK_INT] < 0 || h[CKPT_TASK_INT] >= NUM_TASKS)
        ckpt_errorf(path, "a newer build wrote it, or the file is corrupt",
                    "records task %d, this build knows tasks 0 to %d", h[CKPT_TASK_INT], NUM_TASKS - 1);
    build_gpt(m, c, max_batch, 0);
    m->task = h[CKPT_TASK_INT];
    size_t pb = m->num_parameters * sizeof(float);
    float *params = m->params_memory, *mom1 = m->m_memory, *mom2 = m->v_memory;   // read into these
#ifdef GRPO_CUDA
    if (m->on_device) {   // through a host staging buffer (moments 0 unless read), copied to the GPU below
        params = (float *)callocCheck(3 * m->num_parameters, sizeof(float));
        mom1 = params + m->num_parameters;
        mom2 = mom1 + m->num_parameters;
    }
#endif
    ckpt_read(params, pb, f, path, CKPT_CRC_NAMES[1], &crc[1]);
    ckpt_refuse_not_finite(path, m, params, m->num_parameters, "parameter");
    if (opt) {
        ckpt_read(mom1, pb, f, path, CKPT_CRC_NAMES[2], &crc[2]);
        ckpt_read(mom2, pb, f, path, CKPT_CRC_NAMES[3], &crc[3]);
        if (st) {   // a resume steps with them (--init discards them)
            ckpt_refuse_not_finite(path, m, mom1, m->num_parameters, "AdamW first moment of");
            ckpt_refuse_not_finite(path, m, mom2, m->num_parameters, "AdamW second moment of");
        }
        Rng r;
        char record[CKPT_RECORD_MAX];
        ckpt_read(r.s, sizeof r.s, f, path, CKPT_CRC_NAMES[4], &crc[4]);
        ckpt_read(record, record_len, f, path, CKPT_CRC_NAMES[5], &crc[5]);
        record[record_len] = 0;   // (strtoll may read on past a line end)
        if (st && st->kind && h[10] != st->kind) {   // (st->kind 0: a test's state, any kind resumes)
            const char *const kinds[3] = {"?", "sft", "train"}, *resumer = kinds[st->kind];
            if (h[10] == 1 || h[10] == 2)
                ckpt_errorf(path, st->kind == 2 ? "use --init to start a GRPO run from an SFT checkpoint"
                                                : "resume from a checkpoint that ./grpo sft wrote",
                            "was written by ./grpo %s, so './grpo %s --resume' cannot continue it",
                            kinds[h[10]], resumer);
            ckpt_errorf(path, "re-create it with this build, or start a new run from it with --init",
                        "unknown checkpoint kind %d (this build knows sft=1, train=2), so './grpo %s "
                        "--resume' cannot continue it", h[10], resumer);
        }
        if (st) {
            st->rng = r;
            st->step = h[8];
            ckpt_parse_record(path, record, record_len, st);
            st->num_sections = 0;
        } else {   // --init: the weights only, the moments start at zero, state sections dropped
            memset(mom1, 0, pb);
            memset(mom2, 0, pb);
        }
        ckpt_read_sections(f, path, h, nsec, sec_bytes, st);
    }
    if (fgetc(f) != EOF) ckpt_error(path, "trailing bytes after the last tensor (corrupt file?)", NULL);
    if (ferror(f)) ckpt_error(path, "read error after the last tensor", NULL);
    fclose(f);
#ifdef GRPO_CUDA
    if (m->on_device) {
        float *dev[3] = {m->params_memory, m->m_memory, m->v_memory};
        for (int i = 0; i < 3; i++) cuda_memcpy_h2d(dev[i], params + i * m->num_parameters, pb);
        free(params);
    }
#endif
    return opt;
}

// ckpt_section: st's state section named tag (read or set for a save), its length in *bytes; NULL: none.
static void *ckpt_section(const TrainState *st, const char *tag, uint64_t *bytes) {
    for (int i = 0; i < st->num_sections; i++)
        if (!strncmp(st->section[i].tag, tag, CKPT_TAG_BYTES)) {
            *bytes = st->section[i].bytes;
            return st->section[i].data;
        }
    return NULL;
}

/* ckpt_add_section: names data (bytes, not copied: it must live until the save) st's state section tag
   (< CKPT_TAG_BYTES characters); replaces a section of that name (freed when owned). */
static void ckpt_add_section(TrainState *st, const char *tag, void *data, uint64_t bytes, int owned) {
    int i = 0;
    while (i < st->num_sections && strncmp(st->section[i].tag, tag, CKPT_TAG_BYTES)) i++;
    if (i == CKPT_MAX_SECTIONS || strlen(tag) >= CKPT_TAG_BYTES)
        fail_at(__FILE__, __LINE__, "internal error: too many state sections, or too long a tag", tag);
    if (i < st->num_sections && st->section_owned[i]) free(st->section[i].data);
    strncpy(st->section[i].tag, tag, CKPT_TAG_BYTES);   // (NUL-padded)
    st->section[i].data = data;
    st->section[i].bytes = bytes;
    st->section_owned[i] = owned;
    if (i == st->num_sections) st->num_sections++;
}

// ---- the critic's state (--objective ppo): one state section, "critic"

/* critic_section_arrays: the critic's arrays to p, the state section's bytes after its int64 header
   (see critic_section_bytes), or (path given) from p, each refused when not finite, naming path. */
static void critic_section_arrays(Critic *c, const char *path, char *p) {
    float *arrays[6] = {c->trunk.params_memory, c->trunk.m_memory, c->trunk.v_memory, c->head, c->head_m,
                        c->head_v};
    static const char *what[6] = {"critic parameter", "critic AdamW first moment of",
                                  "critic AdamW second moment of", "critic value head",
                                  "critic value head's AdamW m", "critic value head's AdamW v"};
    for (int a = 0; a < 6; a++) {
        size_t n = a < 3 ? c->trunk.num_parameters : (size_t)c->C + 1;
        memcpy(path ? (char *)arrays[a] : p, path ? p : (char *)arrays[a], n * sizeof(float));
        p += n * sizeof(float);
        if (path) ckpt_refuse_not_finite(path, a < 3 ? &c->trunk : NULL, arrays[a], n, what[a]);
    }
}

// critic_to_section: packs the critic's state into its buffer, st's state section "critic" for the next save.
static void critic_to_section(Critic *c, TrainState *st) {
    int64_t head[3] = {c->adam_t, (int64_t)c->trunk.num_parameters, c->C};
    memcpy(c->section, head, sizeof head);
    critic_section_arrays(c, NULL, (char *)c->section + sizeof head);
    ckpt_add_section(st, CRITIC_TAG, c->section, c->section_bytes, 0);
}

/* critic_from_section: a resumed --objective ppo run's critic from st's section "critic" (read from path).
   Refuses, naming the file: no such section, another size or model, a NaN or Inf. */
static void critic_from_section(Critic *c, const TrainState *st, const char *path) {
    uint64_t bytes = 0;
    char *p = (char *)ckpt_section(st, CRITIC_TAG, &bytes);
    if (!p)
        ckpt_error(path, "holds no critic (no state section \"critic\"), so an --objective ppo run "
                         "cannot resume from it", "resume a checkpoint that an --objective ppo run saved, or "
                         "start a new run with --init");
    int64_t head[3];
    if (bytes >= sizeof head) memcpy(head, p, sizeof head);
    int fits = bytes == c->section_bytes && head[1] == (int64_t)c->trunk.num_parameters && head[2] == c->C;
    if (!fits || head[0] < 0 || head[0] > INT32_MAX)
        ckpt_error(path, "its critic (state section \"critic\") does not fit the model (corrupt file?)",
                   NULL);
    c->adam_t = (int)head[0];
    critic_section_arrays(c, path, p + sizeof head);
}

// ----------------------------------------------------------------------------
// Run logs: the CSV log of a run and its per-step log line

// The first `fields` fields of a row (n bytes) into key (at most 255 bytes).
static void csv_row_key(char *key, const char *row, long n, int fields) {
    long end = 0;
    for (int commas = 0; end < n && end < 255 && row[end] != '\n'; end++)
        if (row[end] == ',' && ++commas == fields) break;
    memcpy(key, row, (size_t)end);
    key[end] = 0;
}

static void csv_failed(const CsvLog *c) {
    char msg[1300];
    snprintf(msg, sizeof msg, "cannot write the log '%s': %s", c->path, strerror(errno));
    fail_at(__FILE__, __LINE__, msg, "is the disk full?");
}

// Ends a row: the row reaches the file now, or the run stops naming the file.
static void csv_row_done(CsvLog *c) {
    if (ferror(c->f) || fflush(c->f) != 0) csv_failed(c);
}

// Writes one row (printf format, with its newline) and ends it; remembers its key fields.
static void csv_row(CsvLog *c, const char *fmt, ...) {
    char row[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(row, sizeof row, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof row) fail_at(__FILE__, __LINE__, "CSV row longer than 1023 bytes", NULL);
    fputs(row, c->f);
    csv_row_key(c->last_row, row, n, c->key_fields);
    csv_row_done(c);
}

static void close_csv(CsvLog *c) {
    if (ferror(c->f) || fclose(c->f) != 0) csv_failed(c);
}

// Appends rows a..b (a <= b) to the rows a resumed log lacks: n of them, in list (256 bytes) as ranges
// "3, 7-9" (cut with ", ..." when long).
static void csv_note_missing(int *n, char *list, int a, int b) {
    size_t used = strlen(list), cap = 256 - used;
    char *end = list + used;
    *n += b - a + 1;
    if (used >= 256 - 40) {
        if (!strstr(list, "...")) snprintf(end, cap, ", ...");
    } else if (a == b) snprintf(end, cap, "%s%d", used ? ", " : "", a);
    else snprintf(end, cap, "%s%d-%d", used ? ", " : "", a, b);
}

// csv_header_diff: where the first line of text (n bytes) parts from header, into out (cap bytes).
static void csv_header_diff(char *out, size_t cap, const char *text, long n, const char *header) {
    long end = 0;
    while (end < n && text[end] != '\n') end++;
    char name[2][200];
    int more[2], col = name_diff(text, end, header, (long)strlen(header), ',', name, more) + 1;
    if (end == 0 || (end == 1 && text[0] == '\r'))
        snprintf(out, cap, "its first line is empty");
    else if (col == 0)
        snprintf(out, cap, end == n ? "the names agree, but the header line has no line end" : "the names agree");
    else if (!more[0])
        snprintf(out, cap, "the file has no column %d '%s' (it ends after column %d)", col, name[1], col - 1);
    else if (!more[1])
        snprintf(out, cap, "the file has a column %d '%s' that this run does not write", col, name[0]);
    else
        snprintf(out, cap, "column %d is '%s' in the file, '%s' in this run", col, name[0], name[1]);
}

/* csv_keep: moves to the front of text (n bytes: c's log) what a run resuming after row `step` keeps: the
   header, then each complete, well-formed row numbered above the last kept (from first), up to `step`,
   with c->last_row the last kept row's key; a note per kind of line dropped. Returns their length. Stops
   the run when the header is not this run's, or when row `step` is not log_row (see open_csv). */
static long csv_keep(CsvLog *c, char *text, long n, const char *header, int first, int step,
                     const char *log_row) {
    long hlen = (long)strlen(header);
    int fields = 1, wl = (int)strcspn(header, ",");   // wl: what the rows' numbers count (step, point)
    for (const char *p = header; *p; p++) fields += *p == ',';
    if (n < hlen + 1 || memcmp(text, header, hlen) != 0 || text[hlen] != '\n') {
        char msg[1800], diff[600];
        csv_header_diff(diff, sizeof diff, text, n, header);
        snprintf(msg, sizeof msg, "'%s' does not start with the header this run writes: %s", c->path, diff);
        fail_at(__FILE__, __LINE__, msg, "a log from another build or other options: move the file away, or "
                "resume into another --run-dir");
    }
    int last = first - 1;   // the number of the last row kept
    int past = 0, past_from = 0, past_to = 0, past_line = 0;   // complete rows numbered after step: dropped
    int bad = 0, bad_line = 0, cut_line = 0;   // other lines dropped (malformed, out of order); the first
    char bad_why[128];   // what was wrong with that first one
    long cut_bytes = 0, keep = hlen + 1, at = hlen + 1;   // cut_bytes: a last line cut off mid-way, dropped
    int missing = 0;   // rows first..step not kept: csv_note_missing's
    char missing_list[256] = "";
    for (int lineno = 2; at < n; lineno++) {
        char *line = text + at, *nl = (char *)memchr(line, '\n', n - at);
        if (!nl) {   // the last line, without its '\n': cut off when the run stopped
            cut_bytes = n - at;
            cut_line = lineno;
            break;
        }
        long len = (long)(nl - line) + 1;
        at += len;
        int f = 1;
        for (const char *p = line; p < nl; p++) f += *p == ',';
        char *end, spare[128], *why = bad ? spare : bad_why;   // the first bad line's reason is kept
        why[0] = 0;
        errno = 0;
        long num = line[0] >= '0' && line[0] <= '9' ? strtol(line, &end, 10) : -1;
        if (num < 0 || errno || *end != ',')
            snprintf(why, sizeof spare, "it does not start with a %.*s number", wl, header);
        else if (f != fields) snprintf(why, sizeof spare, "%d fields, the header has %d", f, fields);
        else if (num <= last)
            snprintf(why, sizeof spare, "%.*s %ld after %.*s %d: out of order", wl, header, num, wl, header, last);
        if (why[0]) {
            if (!bad++) bad_line = lineno;
            continue;
        }
        if (num > step) {   // well-formed, after the checkpoint's step
            if (!past++) {
                past_from = (int)num;
                past_line = lineno;
            }
            past_to = (int)num;
            continue;
        }
        if (num > last + 1) csv_note_missing(&missing, missing_list, last + 1, (int)num - 1);
        memmove(text + keep, line, (size_t)len);
        csv_row_key(c->last_row, text + keep, len, c->key_fields);
        keep += len;
        last = (int)num;
    }
    if (last < step) csv_note_missing(&missing, missing_list, last + 1, step);
    if (log_row && log_row[0] && last == step && strcmp(c->last_row, log_row) != 0) {
        char msg[1800];
        snprintf(msg, sizeof msg, "'%s' is another run's log: its row %d starts '%s', the checkpoint was "
                 "saved after the row '%s'", c->path, step, c->last_row, log_row);
        fail_at(__FILE__, __LINE__, msg, "move the log away, or resume into another --run-dir");
    }
    if (past == 1)
        fprintf(stderr, "note: %s: dropped the row of %.*s %d (line %d), written after the checkpoint of %.*s %d\n",
                c->path, wl, header, past_from, past_line, wl, header, step);
    else if (past > 1)
        fprintf(stderr, "note: %s: dropped %d rows of %.*ss %d-%d (line %d on), written after the checkpoint of "
                        "%.*s %d\n", c->path, past, wl, header, past_from, past_to, past_line, wl, header, step);
    if (bad)
        fprintf(stderr, "note: %s: dropped %d line%s that %s not a row of this log, the first line %d (%s)\n",
                c->path, bad, bad > 1 ? "s" : "", bad > 1 ? "are" : "is", bad_line, bad_why);
    if (cut_bytes)
        fprintf(stderr, "note: %s: dropped line %d, a row cut off mid-way (%ld bytes without a line end) when "
                        "the run stopped\n", c->path, cut_line, cut_bytes);
    if (missing)
        fprintf(stderr, "note: %s has no row for %.*s%s %s (the checkpoint was saved after %.*s %d): %s not "
                        "logged\n", c->path, wl, header, missing > 1 ? "s" : "", missing_list, wl, header, step,
                missing > 1 ? "they were" : "it was");
    return keep;
}

/* open_csv: the run's log RUN_DIR/NAME, rows numbered (first field) from first: new with its header when
   step < first (or missing or empty: a note); a run resuming after row `step` keeps what csv_keep keeps.
   log_row ("" or NULL: unknown): the key_fields first fields of the row the checkpoint was saved after;
   another row `step` is another run's log, and the run stops. */
static CsvLog open_csv(const char *run_dir, const char *name, const char *header, int first, int step,
                       int key_fields, const char *log_row) {
    CsvLog c = {.key_fields = key_fields};
    snprintf(c.path, sizeof c.path, "%s/%s", run_dir, name);
    struct stat sb;
    if (step < first || stat(c.path, &sb) != 0 || sb.st_size == 0) {
        int missing = 0;
        char list[256] = "";
        if (step >= first) csv_note_missing(&missing, list, first, step);
        if (missing)
            fprintf(stderr, "note: %s is new (it was missing or empty): %.*s%s %s, before the checkpoint, %s not "
                            "in it\n", c.path, (int)strcspn(header, ","), header, missing > 1 ? "s" : "", list,
                    missing > 1 ? "are" : "is");
        c.f = fopenCheck(c.path, "w");
        fprintf(c.f, "%s\n", header);
        csv_row_done(&c);
        return c;
    }
    c.f = fopenCheck(c.path, "r+");   // (r+: as every log, never through a link)
    long n = (long)sb.st_size;
    char *text = (char *)mallocCheck((size_t)n);
    if (fread(text, 1, (size_t)n, c.f) != (size_t)n) csv_failed(&c);
    long keep = csv_keep(&c, text, n, header, first, step, log_row);
    fclose(c.f);
    if (keep < n) {   // lines dropped: the kept rows to a temporary file, renamed over the log
        AtomicFile a;
        fwrite(text, 1, (size_t)keep, atomic_open(&a, c.path));   // a failed write: atomic_close exits
        atomic_close(&a);
    }
    free(text);
    c.f = fopenCheck(c.path, "a");   // the rows that follow
    return c;
}

/* BatchStats: what log_step reports of a batch: means over its completions; the share of groups whose
   rewards are all equal (advantage 0: they teach nothing); over its completion tokens, the mean of
   −log π_old(y_t | x, y_<t) in nats (train.csv's entropy: the policy's per-token entropy along its own
   samples); over the tokens of the other (mixed) groups, the mean |λ(i,t)| and Σ|a_i|(1 − 1/|λ(i,t)|) /
   Σ|a_i|, the share of the advantage weight that λ-GRPO's 1/|λ| takes away (NAN: no group is mixed). */
typedef struct {
    double mean_reward, mean_len, all_equal, entropy, mean_lambda_mixed, lambda_share;
} BatchStats;

static BatchStats batch_stats(const GroupBatch *g) {
    double reward = 0.0, len = 0.0, nll = 0.0, lam = 0.0, abs_a = 0.0, taken = 0.0;
    long tokens = 0, mixed = 0;
    int equal_groups = 0;
    for (int p = 0; p < g->num_groups; p++) {
        int equal = group_rewards_equal(g, p);
        equal_groups += equal;
        for (int i = g->group_start[p]; i < g->group_start[p + 1]; i++) {
            reward += g->reward[i];
            len += g->clen[i];
            for (int t = 0; t < g->clen[i]; t++, tokens++) {
                size_t at = (size_t)i * g->max_new + t;
                nll -= g->sample_logp[at];
                if (equal) continue;
                double a = fabs(g->advantage[i]);
                lam += g->lambda_size[at];
                abs_a += a;
                taken += a * (1.0 - 1.0 / g->lambda_size[at]);
                mixed++;
            }
        }
    }
    BatchStats b = {reward / g->N, len / g->N, (double)equal_groups / g->num_groups,
                    tokens > 0 ? nll / tokens : 0.0, mixed > 0 ? lam / mixed : NAN,
                    abs_a > 0 ? taken / abs_a : NAN};
    return b;
}

// train.csv's columns of MC-PRM, PPO's critic, then prompt selection (not uniform), after the others
#define MC_CSV_COLUMNS ",mc_states,aux_share,t_mc"
#define CRITIC_CSV_COLUMNS ",value_loss,value_clip_frac,explained_var,mean_abs_adv,critic_grad_norm,t_critic"
#define SELECT_CSV_COLUMNS ",p_pred,p_real,groups_sampled,frac_all_equal_sampled,dynamic_cap_hit"

/* log_step: one GRPO step on stdout (every 10th, the last and every validated one) and as a row of
   train.csv (train_csv_header); a note when dynamic sampling's round cap first leaves all-equal groups. */
static void log_step(const GroupBatch *g, const StepReport *r, CsvLog *csv) {
    int N = g->N, P = g->num_groups;
    BatchStats b = batch_stats(g);
    double nontrivial = (double)r->trees.nontrivial / P;
    const SelectStats *sel = &r->select;
    double t_sample = r->t[1] - r->t[0] + sel->t_refill, t_score = r->t[2] - r->t[1] - sel->t_refill;
    double t_tree = r->t[3] - r->t[2], t_adv = r->t[4] - r->t[3], t_update = r->t[5] - r->t[4];
    double t_critic = t_adv + (r->t[6] - r->t[5]);   // PPO: V_old and GAE, then the critic's update
    double tok_s = (b.mean_len * N) / (r->t[6] - r->t[0]);
    double aux_share = (double)r->gen_aux / (r->gen_traj + r->gen_aux > 0 ? r->gen_traj + r->gen_aux : 1);
    const UpdateStats *u = &r->update;
    const CriticStats *c = &r->critic;
    static int cap_noted = 0;   // the note once per process; the CSV marks every step
    if (sel->cap_hit && !cap_noted++)
        fprintf(stderr, "note: step %d: dynamic sampling left %d of %d groups with all-equal rewards after "
                        "%d refill rounds (--dynamic-max-rounds); they stay in the batch with advantage 0 "
                        "(no gradient); train.csv's dynamic_cap_hit marks each step where this happens\n",
                r->step, (int)lround(b.all_equal * P), P, sel->refill_rounds);
    if ((r->step - 1) % 10 == 0 || r->last || r->val_acc >= 0) {
        printf("step %4d | reward %.3f | eq %.2f | len %.1f | |λ| %.2f | tree %.2f d%.2f i%.2f | loss %+.5f"
               " | kl %.4f | clip %.3f | gen %lld | t %.2f/%.3f/%.4f/%.2f s | %.0f tok/s",
               r->step, b.mean_reward, b.all_equal, b.mean_len, u->mean_lambda, nontrivial,
               r->trees.mean_depth, r->trees.intermediate, u->loss, u->kl, u->clip_frac, r->gen_tokens,
               t_sample, t_score, t_tree, t_update, tok_s);
        if (r->mc_prm) printf(" | mc %d states, aux %.2f, %.2f s", r->mc.states, aux_share, t_adv);
        if (r->has_critic)
            printf(" | critic vloss %.5f ev %+.3f |A| %.4f %.2f s", c->value_loss, c->explained_var,
                   c->mean_abs_adv, t_critic);
        if (sel->logged && sel->p_pred >= 0) printf(" | p̂ %.2f real %.2f", sel->p_pred, sel->p_real);
        if (sel->refill_rounds > 0)
            printf(" | refill %d groups, %d rounds%s", sel->groups_dropped, sel->refill_rounds,
                   sel->cap_hit ? ", cap" : "");
        if (r->val_acc >= 0) printf(" | val acc %.3f", r->val_acc);
        if (csv->probe && csv->probe->step == r->step)
            printf(" | probe cos %.4f ratio %.4f share %.3f %.2f s", csv->probe->cos, csv->probe->norm_ratio,
                   csv->probe->share, csv->probe->seconds);
        printf("\n");
        fflush(stdout);
    }
    char extra[192] = "";   // the columns of MC_CSV_COLUMNS or CRITIC_CSV_COLUMNS, at the end of the row
    if (r->mc_prm) snprintf(extra, sizeof extra, ",%d,%.6f,%.4f", r->mc.states, aux_share, t_adv);
    if (r->has_critic)
        snprintf(extra, sizeof extra, ",%.8g,%.5f,%.6f,%.6f,%.6g,%.4f", c->value_loss, c->value_clip_frac,
                 c->explained_var, c->mean_abs_adv, c->grad_norm, t_critic);
    char select_fields[96] = "";   // SELECT_CSV_COLUMNS, after those (not for uniform)
    if (sel->logged)
        snprintf(select_fields, sizeof select_fields, ",%.4f,%.4f,%d,%.4f,%d", sel->p_pred, sel->p_real,
                 sel->groups_sampled, (double)sel->eq_sampled / sel->groups_sampled, sel->cap_hit);
    char probe_fields[96] = "";   // PROBE_CSV_COLUMNS (with --probe-every only), before entropy
    if (csv->probe) probe_csv_fields(probe_fields, sizeof probe_fields, csv->probe, r->step);
    csv_row(csv, "%d,%.6f,%.4f,%.3f,%.4f,%.4f,%.4f,%.4f,%.8g,%.6g,%.5f,%.5f,%lld,"
                 "%.4f,%.5f,%.6f,%.4f,%.1f,%.4f,%ld,%ld,%ld,%.0f,%.17g%s%s%s,%.6f,%.4f,%.6f\n",
            r->step, b.mean_reward, b.all_equal, b.mean_len, u->mean_lambda, nontrivial, r->trees.mean_depth,
            r->trees.intermediate, u->loss, u->kl, u->clip_frac, u->grad_norm, r->gen_tokens, t_sample,
            t_score, t_tree, t_update, tok_s, r->val_acc, r->gen_traj, r->gen_aux, r->trained_tokens,
            r->flops, r->budget_spent, extra, select_fields, probe_fields, b.entropy, b.mean_lambda_mixed,
            b.lambda_share);
}

// What after_step calls, defined below: validation, the --budget's counts and its evaluation points.
static EvalResult evaluate(GPT *m, KVCache *kv, const Dataset *d, int limit, int max_new,
                           float temperature, int pass_k, uint64_t seed, float format_reward, FILE *dump);
static int spend_budget(TrainRun *run, StepReport *r);
static void eval_budget_points(TrainRun *run, const StepReport *r);

static int after_step(TrainRun *run, StepReport *r) {
    GroupBatch *g = run->batch;
    TrainState *st = run->state;
    int budget_done = spend_budget(run, r);   // tokens, FLOPs, seconds; 1 once --budget is spent
    st->gen_tokens += r->gen_traj;
    r->gen_tokens = st->gen_tokens;
    r->last = r->step == run->steps || budget_done;
    r->val_acc = -1.0f;   // validation every eval_every steps and at the end
    if (run->eval_every && (r->step % run->eval_every == 0 || r->last))
        r->val_acc = evaluate(run->policy, run->kv, run->val, run->eval_limit, g->max_new, run->cfg.temperature,
                              0, run->cfg.seed, 0.0f, NULL).accuracy;
    log_step(g, r, run->csv);
    eval_budget_points(run, r);   // --eval-points: val accuracy at j/K of the budget
    if (run->save_every && r->step % run->save_every == 0 && !r->last) {   // PPO: its critic as a section
        if (run->critic) critic_to_section(run->critic, st);
        save_checkpoint(run->periodic, run->policy, st, st->step + 1, run->last_good);
    }
    return budget_done;
}

// ----------------------------------------------------------------------------
// SFT: supervised training on task demonstrations (loss on completion tokens only)

// load_task_model: the checkpoint at path into m (B rows; st: its state, or NULL), of --task only.
static void load_task_model(const Options *o, const char *path, GPT *m, int B, TrainState *st) {
    load_checkpoint(path, m, B, st);
    refuse_other_task(path, m, o->task);
}

/* resume_run: --resume's checkpoint into m (B rows) and st; refused when it has taken --steps
   already, or ran with other run_options or inputs (check_resume_options, check_resume_inputs). */
static void resume_run(const Options *o, GPT *m, int B, TrainState *st, const char *const *run_options,
                       const char *const *inputs) {
    load_task_model(o, o->resume, m, B, st);
    if (st->step >= o->steps)
        usage_error("--steps %d: '%s' has already taken %d steps", o->steps, o->resume, st->step);
    check_resume_options(o, st, o->resume, run_options);
    check_resume_inputs(o, st, o->resume, inputs);
}

/* open_run_dir: makes and locks --run-dir (returns the lock); into ckpt, periodic and last_good (1100 bytes
   each) its model.bin, its ckpt.bin and --resume; refuses a stale ckpt.bin (refuse_stale_checkpoint). */
static int open_run_dir(const Options *o, char *ckpt, char *periodic, char *last_good) {
    make_dir(o->run_dir);
    int lock = lock_run_dir(o->run_dir, "--run-dir");
    snprintf(ckpt, 1100, "%s/model.bin", o->run_dir);
    snprintf(periodic, 1100, "%s/ckpt.bin", o->run_dir);
    snprintf(last_good, 1100, "%s", o->resume);
    refuse_stale_checkpoint(o, periodic);
    return lock;
}

/* masked_nll: m's forward on a padded batch (make_batch's inputs, targets (B, T)), log-probs into logp;
   Σ −logp[i] over the positions with targets[i] >= 0, their number into *count. */
static double masked_nll(GPT *m, const int *inputs, const int *targets, float *logp, int B, int T,
                         long *count) {
    gpt_forward(m, inputs, B, T);
    gpt_logprob_forward(m, logp, targets, B * T, 1.0f, NULL);
    double sum = 0.0;
    for (int i = 0; i < B * T; i++)
        if (targets[i] >= 0) {
            sum -= logp[i];
            ++*count;
        }
    return sum;
}

// Mean completion log-loss (nats/token) of a dataset's demonstrations, forward only.
static float dataset_loss(GPT *m, const Dataset *d, int batch, int *inputs, int *targets, float *logp) {
    double sum = 0.0;
    long count = 0;
    const int *pp[4096], *cp[4096];
    for (int s = 0; s < d->n; s += batch) {
        int B = s + batch <= d->n ? batch : d->n - s;
        for (int b = 0; b < B; b++) {
            pp[b] = d->prompt + (size_t)(s + b) * d->maxT;
            cp[b] = d->completion + (size_t)(s + b) * d->maxT;
        }
        int T = make_batch(inputs, targets, B, pp, d->prompt_len + s, cp, d->completion_len + s);
        sum += masked_nll(m, inputs, targets, logp, B, T, &count);
    }
    return count ? (float)(sum / count) : 0.0f;
}

/* sft_loss_padded: the mean −log p of a padded batch's completion tokens and <eos> (make_batch's inputs,
   targets (B, T), prompts masked as −1); its gradient into m's grads. logp, dlogp: (B·T) scratch. */
static double sft_loss_padded(GPT *m, const int *inputs, const int *targets, float *logp, float *dlogp, int B,
                              int T) {
    long count = 0;
    double loss = masked_nll(m, inputs, targets, logp, B, T, &count) / count;
    for (int i = 0; i < B * T; i++) dlogp[i] = targets[i] >= 0 ? -1.0f / count : 0.0f;
    gpt_zero_grad(m);
    gpt_logprob_backward(m, targets, dlogp, B * T, 1.0f);
    gpt_backward(m, inputs);
    return loss;
}

/* sft_loss_spb: sft_loss_padded on the batch packed as its prefix trie (pk; --update-layout tree): the
   same log-probs summed in the same order, so the same loss; pk->edge_dlogp: Σ of −1/count over the
   completion tokens that are the edge. */
static double sft_loss_spb(GPT *m, SharedPrefixBatch *pk, int B, const int *const *prompt, const int *plen,
                            const int *const *comp, const int *clen) {
    pack_shared_prefix_batch(pk, B, prompt, plen, comp, clen);
    gpt_forward_spb(m, pk, 1.0f, NULL);
    int count = 0;
    for (int b = 0; b < B; b++) count += clen[b];
    double loss = 0.0;
    memset(pk->edge_dlogp, 0, (size_t)pk->edges * sizeof(float));
    for (int b = 0; b < B; b++)
        for (int j = 0; j < clen[b]; j++) {
            int e = pk->edge_of[(size_t)b * pk->max_new + j];
            loss -= pk->edge_logp[e];
            pk->edge_dlogp[e] += -1.0f / count;
        }
    gpt_zero_grad(m);
    gpt_backward_spb(m, pk, 1.0f);
    return loss / count;
}

// set_defaults: a command's own defaults into o from "name value ..." (each value read as if typed).
static void set_defaults(Options *o, const char *pairs) {
    char name[64], value[256];
    for (int used = 0; sscanf(pairs, "%63s %255s%n", name, value, &used) == 2; pairs += used) {
        const OptSpec *s = find_option(name);
        if (!s) fail_at(__FILE__, __LINE__, "set_defaults: a default names no option", name);
        set_option(o, s, value);
    }
}

// sft's defaults where they differ from default_options (compare reads them for its prereg)
static void sft_defaults(Options *o) {
    set_defaults(o, "steps 3000 lr 2e-3 warmup 50 weight-decay 0.1 eval-every 500 run-dir runs/sft");
}

static int cmd_sft(int argc, char **argv, Options *o) {
    sft_defaults(o);
    const char *syn = "Supervised fine-tuning on demonstrations (prompt<TAB>completion lines).\n"
                      "Loss: mean −log p of completion tokens and <eos>; prompt tokens are masked.\n"
                      "Writes RUN_DIR/model.bin (with optimizer state), RUN_DIR/sft.csv, and with\n"
                      "--save-every a resumable RUN_DIR/ckpt.bin.";
    parse_options(argc, argv, CMD_SFT, o, "sft", syn);
    refuse_run_dir_inputs(o, CMD_SFT);
    print_options(stdout, o, CMD_SFT);
    GPT model;
    TrainState st = {.kind = 1};
    rng_seed(&st.rng, o->seed, 1);
    GPTConfig shape = {o->context, VOCAB_SIZE, o->layers, o->heads, o->channels};
    if (o->resume[0]) {
        resume_run(o, &model, o->batch_size, &st, SFT_RUN_OPTIONS, SFT_INPUTS);
        GPTConfig c = model.config;   // a checkpoint's vocabulary is always ours (load_checkpoint)
        if (memcmp(&c, &shape, sizeof c) != 0)
            fprintf(stderr, "note: --resume continues the checkpoint's model (L=%d NH=%d C=%d maxT=%d); "
                            "--layers/--heads/--channels/--context are ignored\n",
                    c.num_layers, c.num_heads, c.channels, c.max_seq_len);
    }
    else build_gpt(&model, shape, o->batch_size, o->seed);
    model.task = o->task;
    int maxT = model.config.max_seq_len;
    Dataset train, val;
    load_dataset(&train, o->train_data, maxT, 1, &TASKS[o->task]);
    load_dataset(&val, o->val_data, maxT, 1, &TASKS[o->task]);
    printf("# model: %zu parameters (L=%d NH=%d C=%d maxT=%d V=%d); %d train, %d val examples\n",
           model.num_parameters, model.config.num_layers, model.config.num_heads, model.config.channels,
           maxT, VOCAB_SIZE, train.n, val.n);
    char ckpt[1100], periodic[1100], last_good[1100];   // model.bin, ckpt.bin, the newest good one
    int lock = open_run_dir(o, ckpt, periodic, last_good);
    CsvLog csv = open_csv(o->run_dir, "sft.csv", "step,loss,val_loss,lr,grad_norm,tokens_per_s,elapsed_s", 1,
                          st.step, 5, st.log_row);   // 5: step,loss,val_loss,lr,grad_norm
    record_options(st.options, sizeof st.options, o, SFT_RUN_OPTIONS, OPTIMIZER_OPTIONS);
    record_input_hashes(st.options, sizeof st.options, o, SFT_INPUTS, "");
    st.log = &csv;
    AdamWConfig opt = adamw_from_options(o, o->steps);
    int B = o->batch_size;
    size_t BT = (size_t)B * maxT;   // inputs and targets, logp and dlogp: one block each
    int *inputs = (int *)mallocCheck(2 * BT * sizeof(int)), *targets = inputs + BT;
    float *logp = (float *)mallocCheck(2 * BT * sizeof(float)), *dlogp = logp + BT;
    const int *pp[4096], *cp[4096];
    int plen[4096], clen[4096];
    // --update-layout tree: the batch as its prefix trie
    SharedPrefixBatch *pack = new_shared_prefix_batch(o->update_layout == LAYOUT_TREE ? B : 0, maxT, maxT);
    double t_start = wall_seconds();
    for (; st.step < o->steps; st.step++) {
        double t0 = wall_seconds();
        for (int b = 0; b < B; b++) {   // examples drawn with replacement from the run's RNG
            int i = rng_int(&st.rng, train.n);
            pp[b] = train.prompt + (size_t)i * maxT;
            cp[b] = train.completion + (size_t)i * maxT;
            plen[b] = train.prompt_len[i];
            clen[b] = train.completion_len[i];
        }
        int T = make_batch(inputs, targets, B, pp, plen, cp, clen);   // T: the padded length, for tok/s
        double loss = o->update_layout == LAYOUT_TREE
                          ? sft_loss_spb(&model, pack, B, pp, plen, cp, clen)
                          : sft_loss_padded(&model, inputs, targets, logp, dlogp, B, T);
        if (!isfinite(loss)) stop_on_nan("the loss", st.step + 1, (float)loss, last_good);
        float norm = clip_grad_norm(&model, opt.grad_clip);
        if (!isfinite(norm)) stop_on_nan("the gradient norm", st.step + 1, norm, last_good);
        float lr = lr_at(&opt, st.step);
        adamw_update(&model, &opt, lr, st.step + 1);
        double dt = wall_seconds() - t0;
        int last = st.step + 1 == o->steps;
        float vloss = -1.0f;
        if ((o->eval_every && (st.step + 1) % o->eval_every == 0) || last)
            vloss = dataset_loss(&model, &val, B, inputs, targets, logp);
        if (st.step % 50 == 0 || vloss >= 0) {
            printf("step %5d | loss %.4f | lr %.2e | norm %.3f | %.0f tok/s | %.1f s", st.step + 1, loss, lr,
                   norm, B * T / dt, wall_seconds() - t_start);
            printf(vloss >= 0 ? " | val loss %.4f\n" : "\n", vloss);
            fflush(stdout);
        }
        csv_row(&csv, "%d,%.6f,%.6f,%.6g,%.6f,%.1f,%.3f\n", st.step + 1, loss, vloss, lr, norm, B * T / dt,
                wall_seconds() - t_start);
        if (o->save_every && (st.step + 1) % o->save_every == 0 && !last)
            save_checkpoint(periodic, &model, &st, st.step + 1, last_good);
    }
    save_checkpoint(ckpt, &model, &st, st.step, last_good);
    close_csv(&csv);
    close(lock);
    printf("# saved %s (%d steps, %.1f s)\n", ckpt, st.step, wall_seconds() - t_start);
    free(inputs);
    free(logp);
    delete_shared_prefix_batch(pack);
    free_dataset(&train);
    free_dataset(&val);
    free_gpt(&model);
    return 0;
}

// ----------------------------------------------------------------------------
// train: the GRPO command around train_loop: options, models, data, the --budget, test scores, the result

/* ---- budget accounting (the compute-matched protocol; ./grpo compare relies on it) ----
   Model FLOPs as Kaplan et al. 2020 (§2.1) count them, per token F = 2·N + 2·C·V + 2·L·maxT·C
   (N: the non-embedding parameters; the tied LM head; attention), a backward 2·F; what a step
   costs (sampling, update, π_ref, MC-PRM's continuations, dropped groups, PPO's critic) is
   derived in notes/compare.md. The count is deterministic and machine-independent. */
static double model_flops_per_token(const GPTConfig *c) {
    size_t sizes[NUM_PARAM_TENSORS], n = 0;
    param_sizes(sizes, c);
    for (int t = 2; t < NUM_PARAM_TENSORS; t++) n += sizes[t];   // skips wte (0) and wpe (1)
    return 2.0 * n + 2.0 * c->channels * c->vocab_size + 2.0 * c->num_layers * c->max_seq_len * c->channels;
}

// F_critic: model_flops_per_token with the value head's 2·C in place of the LM head's 2·C·V.
static double critic_flops_per_token(const GPTConfig *c) {
    return model_flops_per_token(c) - 2.0 * c->channels * c->vocab_size + 2.0 * c->channels;
}

#define BUDGET_SECTION_N 9   // doubles in a train checkpoint's state section "budget" (budget_to_section)

struct Budget {                  // a run's --budget and what it has spent so far (cumulative)
    int unit;                    // --budget-unit: BUDGET_GEN_TOKENS, BUDGET_FLOPS, BUDGET_SECONDS or BUDGET_STEPS
    double amount;               // --budget (0: off; the counts are still kept and logged)
    long gen_traj, gen_aux;      // completion tokens sampled: trajectories, auxiliary generations
    long trained;                // positions the updates scored (μ per sampled position)
    double flops, seconds;       // model FLOPs; wall seconds of the steps (evaluations excluded)
    long steps;                  // steps taken (the checkpoint's step count on a resume)
    int done;                    // 1 once the run has spent amount
    int points, next_point;      // --eval-points K, and the next point j (1..K) to evaluate at
    CsvLog eval_csv;             // RUN_DIR/eval.csv (f is NULL without --eval-points)
    double section[BUDGET_SECTION_N];   // the counters as the checkpoint's state section "budget" holds them
};

// What the run has spent so far, in its --budget-unit.
static double budget_spent(const Budget *b) {
    const double spent[] = {(double)(b->gen_traj + b->gen_aux), b->flops, b->seconds, (double)b->steps};
    return spent[b->unit];   // in BUDGET_UNIT_NAMES order
}

/* budget_to_section: b's counters into st's state section "budget" for the next save, so that a resume goes
   on counting. Seconds NaN unless --budget-unit seconds: wall time would make the file differ run to run. */
static void budget_to_section(Budget *b, TrainState *st) {
    double v[BUDGET_SECTION_N] = {(double)b->unit, b->amount, (double)b->points, (double)b->next_point,
                                  (double)b->gen_traj, (double)b->gen_aux, (double)b->trained, b->flops,
                                  b->unit == BUDGET_SECONDS ? b->seconds : NAN};
    memcpy(b->section, v, sizeof v);
    ckpt_add_section(st, "budget", b->section, sizeof b->section, 0);
}

/* budget_resume: a resumed run (o->resume, its state st) goes on counting from its "budget" section (every
   train checkpoint of format 4 has one). Refuses another --budget, --budget-unit or --eval-points than the
   run's, and a section missing or with impossible counts. */
static void budget_resume(Budget *b, const Options *o, const TrainState *st) {
    uint64_t bytes = 0;
    const double *v = (const double *)ckpt_section(st, "budget", &bytes);
    int ok = v && bytes == BUDGET_SECTION_N * sizeof(double);
    for (int i = 0; ok && i < BUDGET_SECTION_N - 1; i++)   // counts; amount (1) and flops (7) may be fractional
        ok = isfinite(v[i]) && v[i] >= 0 && (i == 1 || i == 7 || v[i] == floor(v[i]));
    if (!ok || v[0] > BUDGET_STEPS || v[3] < 1 || v[3] > v[2] + 1 || v[4] > 9e15 || v[5] > 9e15 || v[6] > 9e15)
        ckpt_error(o->resume, "its budget counters (state section 'budget') are missing or impossible "
                   "(corrupt file?)", NULL);
    if ((int)v[0] != o->budget_unit)
        usage_error("--budget-unit %s: the run in '%s' counted its budget in %s; give --budget-unit %s",
                    BUDGET_UNIT_NAMES[o->budget_unit], o->resume, BUDGET_UNIT_NAMES[(int)v[0]],
                    BUDGET_UNIT_NAMES[(int)v[0]]);
    if ((float)v[1] != o->budget)
        usage_error("--budget %.9g: the run in '%s' had --budget %.9g, and a resumed run must go on with its "
                    "own budget (its end and its --eval-points depend on it): give --budget %.9g",
                    o->budget, o->resume, v[1], v[1]);
    if ((int)v[2] != o->eval_points)
        usage_error("--eval-points %d: the run in '%s' had --eval-points %d; give --eval-points %d",
                    o->eval_points, o->resume, (int)v[2], (int)v[2]);
    b->next_point = (int)v[3];
    b->gen_traj = (long)v[4];
    b->gen_aux = (long)v[5];
    b->trained = (long)v[6];
    b->flops = v[7];
    b->steps = st->step;
    if (isfinite(v[8]) && v[8] >= 0) b->seconds = v[8];
    else if (o->budget_unit != BUDGET_SECONDS)
        fprintf(stderr, "note: the checkpoint holds the wall seconds spent only with --budget-unit seconds: the "
                        "seconds counter (eval.csv, result.txt) counts from the resume\n");
    else ckpt_error(o->resume, "its budget counters hold no seconds, and its --budget-unit is seconds "
                               "(corrupt file?)", NULL);
    if (b->amount > 0 && budget_spent(b) >= b->amount)
        usage_error("--budget %.9g: the run in '%s' has spent it already (%.9g %s): nothing is left to run",
                    o->budget, o->resume, budget_spent(b), BUDGET_UNIT_NAMES[b->unit]);
}

/* start_budget: the run's budget, its counters at 0 or from the resumed checkpoint (budget_resume); with
   --eval-points RUN_DIR/eval.csv and its point 0 (the --init model's greedy val accuracy). */
static void start_budget(Budget *b, const Options *o, TrainRun *run) {
    *b = (Budget){.unit = o->budget_unit, .amount = o->budget, .points = o->eval_points, .next_point = 1};
    if (o->resume[0]) budget_resume(b, o, run->state);
    budget_to_section(b, run->state);
    if (b->points == 0) return;
    const char *header = "point,budget_spent,step,gen_tokens,flops,seconds,val_acc";
    // points from 0; a resumed run keeps those the checkpoint's steps wrote
    b->eval_csv = open_csv(o->run_dir, "eval.csv", header, 0, o->resume[0] ? b->next_point - 1 : -1, 0, NULL);
    if (o->resume[0]) return;
    float acc0 = evaluate(run->policy, run->kv, run->val, run->eval_limit, o->max_new_tokens, o->temperature,
                          0, o->seed, 0.0f, NULL).accuracy;
    fprintf(b->eval_csv.f, "0,0,0,0,0,0,%.6f\n", acc0);
    csv_row_done(&b->eval_csv);
}

/* spend_budget: adds what step r spent (the formula above model_flops_per_token) to the run's budget and
   r's CSV columns. Returns 1 once the --budget is spent: the run ends after this step, which counts. */
static int spend_budget(TrainRun *run, StepReport *r) {
    Budget *b = run->budget;
    const GroupBatch *g = run->batch;
    long positions = 0;
    r->gen_traj = 0;
    for (int i = 0; i < g->N; i++) {
        r->gen_traj += g->clen[i];
        positions += g->plen[i] + g->clen[i] - 1;
    }
    // auxiliary generations: MC-PRM's continuations, DAPO's dropped groups (sampled, never trained)
    r->gen_aux = r->mc.tokens + r->select.gen_aux;
    r->trained_tokens = (long)run->cfg.num_iterations * positions;
    // π_ref's forward when β != 0; R_drop last: 0 for the other selectors, so their sums are as before
    r->flops = model_flops_per_token(&run->policy->config) * (positions + 3.0 * r->trained_tokens +
               (run->ref ? positions : 0) + r->mc.positions + r->select.aux_positions);
    if (run->critic) {   // ppo: the critic's forward for V_old, then μ forwards and backwards (as π_θ's)
        r->flops += critic_flops_per_token(&run->critic->trunk.config) *
                    (positions + 3.0 * r->trained_tokens);
        r->trained_tokens *= 2;
    }
    b->gen_traj += r->gen_traj;
    b->gen_aux += r->gen_aux;
    b->trained += r->trained_tokens;
    b->flops += r->flops;
    b->seconds += r->t[6] - r->t[0];
    b->steps = r->step;
    r->budget_spent = budget_spent(b);
    b->done = b->amount > 0 && r->budget_spent >= b->amount;
    budget_to_section(b, run->state);   // the counters go into the step's checkpoint
    return b->done;
}

/* eval_budget_points: with --eval-points K, eval.csv's point j (1..K) is the greedy val accuracy after the
   first step whose spending reaches j/K of --budget (the points one step reaches: one evaluation). */
static void eval_budget_points(TrainRun *run, const StepReport *r) {
    Budget *b = run->budget;
    int K = b->points;
    if (!b->eval_csv.f || b->next_point > K || r->budget_spent < b->amount * b->next_point / K) return;
    float acc = r->val_acc;   // validated at this step already (--eval-every): the same evaluation
    if (acc < 0)
        acc = evaluate(run->policy, run->kv, run->val, run->eval_limit, run->batch->max_new,
                       run->cfg.temperature, 0, run->cfg.seed, 0.0f, NULL).accuracy;
    for (; b->next_point <= K && r->budget_spent >= b->amount * b->next_point / K; b->next_point++)
        fprintf(b->eval_csv.f, "%d,%.17g,%d,%ld,%.0f,%.6f,%.6f\n", b->next_point, r->budget_spent, r->step,
                b->gen_traj + b->gen_aux, b->flops, b->seconds, acc);
    csv_row_done(&b->eval_csv);
    budget_to_section(b, run->state);   // next_point moved
}

/* train's defaults where they differ from default_options (compare reads them for its prereg); 800 steps:
   make run's RL steps (notes/results.md gives what they gain). */
static void train_defaults(Options *o) {
    set_defaults(o, "steps 800 warmup 10 schedule constant eval-every 100 group-size 16 test-limit -1 "
                    "run-dir runs/grpo");
    o->lr = TASK_TRAIN_LR[TASK_COUNTDOWN];
}

/* mopps_candidate_count: M of a MoPPS run: --select-candidates, or 8·P when it is 0 (notes/credit-
   assignment.md §5), at most the n training prompts (distinct candidates: a larger M is a usage error). */
static int mopps_candidate_count(const Options *o, const Dataset *train) {
    int M = o->select_candidates;
    if (M > train->n)
        usage_error("--select-candidates %d: --train-data %s holds %d prompts, and MoPPS's candidates are "
                    "distinct prompts", M, train->path, train->n);
    if (M == 0) M = 8 * o->prompts_per_step < train->n ? 8 * o->prompts_per_step : train->n;
    if (M < o->prompts_per_step)
        usage_error("--prompt-select mopps: --train-data %s holds %d prompts, fewer than --prompts-per-step "
                    "%d", train->path, train->n, o->prompts_per_step);
    return M;
}

/* mopps_resume: a MoPPS run resumed from path goes on with st's "mopps" section (n, h, α (n), β (n),
   h pairs, doubles) into s. Every format-4 MoPPS checkpoint has one, of --train-data's n prompts (its hash
   was checked) and P entries a step: a section missing or otherwise is refused, naming the file. */
static void mopps_resume(PromptSelector *s, const TrainState *st, const char *path, int P) {
    uint64_t bytes = 0;
    const double *sec = (const double *)ckpt_section(st, "mopps", &bytes);
    int ok = sec && bytes >= 2 * sizeof(double);
    long n = ok ? (long)sec[0] : -1, h = ok ? (long)sec[1] : -1;
    ok = n == s->n && h == (long)st->step * P && sec[0] == (double)n && sec[1] == (double)h &&
         bytes == (uint64_t)(2 + 2 * n + 2 * h) * sizeof(double);
    for (long i = 0; ok && i < 2 * n; i++)   // a Beta needs α, β > 0 (they stay >= about 1)
        ok = sec[2 + i] > 0.0 && isfinite(sec[2 + i]);
    if (!ok)
        ckpt_error(path, "its MoPPS state section is missing, or is not one of its run's posteriors and "
                         "history (corrupt file?)", NULL);
    mopps_reserve(s, h + P);
    memcpy(s->state, sec, bytes);
    s->groups = h;
}

static void write_file_atomic(const char *path, const char *text);   // below (compare)

/* report_prompt_selection: at the end of a MoPPS run, how well p̂ ranked the realised success over its groups
   (Spearman, nan when a side is constant), printed and as key value lines in RUN_DIR/prompt_select.txt. */
static void report_prompt_selection(const PromptSelector *s, const char *run_dir) {
    long h = s->groups;
    double *pred = (double *)mallocCheck((size_t)(2 * h + 1) * sizeof(double)), *real = pred + h;
    double mean_pred = 0.0, mean_real = 0.0;
    for (long i = 0; i < h; i++) {
        pred[i] = s->history[2 * i];
        real[i] = s->history[2 * i + 1];
        mean_pred += pred[i] / h;
        mean_real += real[i] / h;
    }
    double rho = spearman(pred, real, (int)h);
    printf("# mopps: predicted p vs realised success over the run's %ld groups: Spearman %.4f (mean "
           "predicted %.4f, realised %.4f)%s\n", h, rho, mean_pred, mean_real,
           isnan(rho) ? "; undefined: one side is constant" : "");
    char path[1100], text[400];
    snprintf(path, sizeof path, "%s/prompt_select.txt", run_dir);
    snprintf(text, sizeof text, "prompt_select mopps\ngroups %ld\nspearman %.6f\nmean_pred %.6f\n"
             "mean_real %.6f\n", h, rho, mean_pred, mean_real);
    write_file_atomic(path, text);
    free(pred);
}

/* train_csv_header: train.csv's header for options o: every run's columns, then MC-PRM's or the
   critic's, prompt selection's and the probe's, so that the other columns keep their places; last,
   entropy (a log without it has another header: a resume into it is refused, naming the file). */
static void train_csv_header(char *out, size_t cap, const Options *o) {
    int objective = o->obj.objective;
    snprintf(out, cap, "%s%s%s%s,entropy,mean_lambda_mixed,lambda_share",
             "step,mean_reward,frac_all_equal,mean_len,mean_lambda,nontrivial,path_depth,intermediate,"
             "loss,kl,clip_frac,grad_norm,gen_tokens,t_sample,t_score,t_tree,t_update,tok_per_s,val_acc,"
             "gen_tokens_traj,gen_tokens_aux,trained_tokens,flops,budget_spent",
             objective == OBJ_MC_PRM ? MC_CSV_COLUMNS : objective == OBJ_PPO ? CRITIC_CSV_COLUMNS : "",
             o->prompt_select != SELECT_UNIFORM ? SELECT_CSV_COLUMNS : "", o->probe_every ? PROBE_CSV_COLUMNS : "");
}

/* print_objective: train's header lines on the objective (its advantage, loss, clip, β, μ), the
   critic (ppo: built from --init or as the checkpoint holds it) and the prompt selection. */
static void print_objective(const Options *o, const Critic *critic, int train_n, int candidates) {
    char advantage[256];   // what each token's advantage is
    snprintf(advantage, sizeof advantage, "advantage (r - mean)/(%s std + %g)", ADV_STD_NAMES[o->obj.adv_std],
             o->obj.adv_eps);
    if (o->obj.objective == OBJ_MC_PRM)
        snprintf(advantage, sizeof advantage, "step advantage A_j = V̂(s_j+1) - V̂(s_j) (last step: r - V̂), "
                 "steps end after each ',', V̂ from K=%d continuations per state%s", o->mc_k,
                 o->mc_whiten ? ", whitened over the step's tokens" : "");
    if (critic) snprintf(advantage, sizeof advantage, "advantage A_t from the critic (GAE)");
    printf("# objective %s: %s, loss %s, clip [%g, %g], beta %g, mu %d\n", OBJECTIVE_NAMES[o->obj.objective],
           advantage, LOSS_AGG_NAMES[o->obj.loss_agg], 1.0f - o->obj.clip_eps_low,
           1.0f + o->obj.clip_eps_high, o->obj.beta, o->num_iterations);
    if (critic)
        printf("# ppo: critic %s (value head w ~ N(0, 0.02), b = 0), GAE gamma %g lambda %g, advantages "
               "whitened over the batch, value loss token-mean clipped at V_old +- %g, critic lr %g\n",
               o->resume[0] ? "as the checkpoint holds it" : "from the --init trunk", critic->cfg.gamma,
               critic->cfg.lam, critic->cfg.clip_value, critic->cfg.opt.lr);
    if (o->prompt_select == SELECT_MOPPS)
        printf("# prompt selection mopps: a Beta(1, 1) prior per training prompt (%d); each step M = %d "
               "candidates, the %d whose p ~ Beta(a, b) is nearest %g; decay %g; success = the verifier "
               "accepts\n", train_n, candidates, o->prompts_per_step, o->select_target, o->select_decay);
    if (o->prompt_select == SELECT_DYNAMIC)
        printf("# prompt selection dynamic: groups whose rewards are all equal are replaced by new ones, at "
               "most %d refill rounds per step; their tokens count as auxiliary generated tokens\n",
               o->dynamic_max_rounds);
}

/* print_result: train's last lines: the saved model (and test pass@k), the result line (test accuracy
   before -> after), and with --budget RUN_DIR/result.txt (what the run spent and scored, for compare). */
static void print_result(const Options *o, const char *ckpt, EvalResult before, EvalResult after, int steps,
                         const Budget *b, double minutes) {
    printf(o->pass_k > 0 && o->test_limit != 0 ? "# saved %s; test pass@%d %.4f\n" : "# saved %s\n", ckpt,
           o->pass_k, after.pass_k);
    if (o->test_limit != 0)
        printf("result: test accuracy %.4f -> %.4f (%d problems, %s, %.1f min)\n", before.accuracy,
               after.accuracy, after.n, OBJECTIVE_NAMES[o->obj.objective], minutes);
    else
        printf("result: no test evaluation (--test-limit 0; %s, %.1f min)\n",
               OBJECTIVE_NAMES[o->obj.objective], minutes);
    if (b->amount <= 0) return;
    char path[1100], text[800];
    snprintf(path, sizeof path, "%s/result.txt", o->run_dir);
    snprintf(text, sizeof text, "test_acc %.6f\ntest_n %d\nsft_test_acc %.6f\nsteps %d\nbudget_done %d\n"
             "gen_tokens_traj %ld\ngen_tokens_aux %ld\ntrained_tokens %ld\nflops %.0f\nseconds %.6f\n",
             after.accuracy, after.n, before.accuracy, steps, b->done, b->gen_traj, b->gen_aux, b->trained,
             b->flops, b->seconds);
    write_file_atomic(path, text);
}

/* load_train_models: run's models, micro rows each: π_θ (and the critic, ppo) from --init or from
   --resume's checkpoint (state run->state); π_ref (when run->ref) from --init. Returns the model the test
   score before training is of: --init's (a resumed run without π_ref loads it into init_model). */
static GPT *load_train_models(const Options *o, TrainRun *run, GPT *init_model, int micro) {
    GPT *policy = run->policy, *ref = run->ref;
    TrainState *st = run->state;
    st->kind = 2;
    rng_seed(&st->rng, o->seed, 2);
    // a resumed run goes on with its inputs: its data, and the --init it loads below (π_ref, test scores)
    const char *inputs[] = {"train-data", "val-data", o->obj.beta != 0.0f || o->test_limit != 0 ? "init" : NULL,
                            NULL};
    if (o->resume[0]) resume_run(o, policy, micro, st, TRAIN_RUN_OPTIONS, inputs);
    else load_task_model(o, o->init, policy, micro, NULL);
    if (run->critic) {   // ppo: from the --init trunk (the policy's start), or as the checkpoint holds it
        build_critic(run->critic, policy, micro, o->prompts_per_step * o->group_size, o->max_new_tokens,
                     critic_config_from_options(o, o->steps * o->num_iterations), (uint64_t)o->seed);
        if (o->resume[0]) critic_from_section(run->critic, st, o->resume);
    }
    if (ref) load_task_model(o, o->init, ref, micro, NULL);
    // a resumed run scores --init (its hash checked above), not the checkpoint it continues
    if (!o->resume[0] || o->test_limit == 0) return policy;
    if (ref) return ref;
    load_task_model(o, o->init, init_model, micro, NULL);
    return init_model;
}

// cmd_train: ./grpo train: test scores before and after train_loop, RUN_DIR/model.bin, the result line.
static int cmd_train(int argc, char **argv, Options *o) {
    train_defaults(o);
    const char *syn = "GRPO / λ-GRPO on the --task, starting from an SFT checkpoint (--init, also π_ref).\n"
                      "Each step: sample P prompts x k completions, score them, build each group's\n"
                      "prefix tree B(G), compute the objective, update. Logs RUN_DIR/train.csv;\n"
                      "writes RUN_DIR/model.bin. Ends with 'result: test accuracy A -> B (...)'.";
    parse_options(argc, argv, CMD_TRAIN, o, "train", syn);
    check_grpo_options(o, CMD_TRAIN);
#ifdef GRPO_CUDA
    if (o->probe_every)
        usage_error("--probe-every: the CUDA build keeps its gradients on the GPU and the probe reads them on "
                    "the host; use the CPU build (make; ./grpo)");
#endif
    if (o->eval_points > 0 && o->budget <= 0)
        usage_error("--eval-points %d needs --budget (the points are fractions of it)", o->eval_points);
    if (o->budget_unit == BUDGET_STEPS && o->budget != floorf(o->budget))
        usage_error("--budget %.9g: --budget-unit steps counts whole steps; give an integer", o->budget);
    refuse_run_dir_inputs(o, CMD_TRAIN);
    int N = o->prompts_per_step * o->group_size;
    int micro = o->micro_batch > 0 && o->micro_batch < N ? o->micro_batch : N;
    GPT policy, ref, init_model;   // π_θ; π_ref (β != 0); --init for a resumed run's test comparison
    TrainState st = {0};
    Critic critic;
    KVCache kv;
    GroupBatch g;
    Dataset train, val, test = {0};   // --test-limit 0: no test evaluation, the file is not read
    PromptSelector select;
    CsvLog csv;
    Budget budget;
    MCPRM mc;   // MC-PRM: its verifier reads the step's prompts from g (mc_task)
    Probe probe;   // --probe-every: its values go to train.csv (before entropy)
    TrainRun run = {.policy = &policy, .ref = o->obj.beta != 0.0f ? &ref : NULL,
                    .critic = o->obj.objective == OBJ_PPO ? &critic : NULL, .kv = &kv, .batch = &g,
                    .train = &train, .val = &val,
                    .select = o->prompt_select == SELECT_UNIFORM ? NULL : &select,
                    .cfg = grpo_config_from_options(o),
                    .opt = adamw_from_options(o, o->steps * o->num_iterations), .state = &st,
                    .steps = o->steps, .eval_every = o->eval_every, .eval_limit = o->eval_limit,
                    .save_every = o->save_every, .format_reward = o->format_reward, .csv = &csv,
                    .budget = &budget, .mc = o->obj.objective == OBJ_MC_PRM ? &mc : NULL,
                    .probe = o->probe_every ? &probe : NULL};
    GPT *sft_model = load_train_models(o, &run, &init_model, micro);
    int maxT = policy.config.max_seq_len;
    load_dataset(&train, o->train_data, maxT, 0, &TASKS[o->task]);
    load_dataset(&val, o->val_data, maxT, 0, &TASKS[o->task]);
    if (o->test_limit != 0) load_dataset(&test, o->test_data, maxT, 0, &TASKS[o->task]);
    const Dataset *sets[3] = {&train, &val, &test};
    for (int s = 0; s < 2 + (o->test_limit != 0); s++) check_context(o, maxT, sets[s]);
    int candidates = o->prompt_select == SELECT_MOPPS ? mopps_candidate_count(o, &train) : 0;
    print_options(stdout, o, CMD_TRAIN);
    print_objective(o, run.critic, train.n, candidates);
    char ckpt[1100];   // the final model; run.periodic: the periodic resumable checkpoint
    int lock = open_run_dir(o, ckpt, run.periodic, run.last_good);
    build_kvcache(&kv, &policy.config, N);
    kv.pack = o->sampler;
    build_group_batch(&g, o->prompts_per_step, o->group_size, o->max_new_tokens, micro, maxT);
    TaskProblems mc_task = {&train, g.prompt_idx, NULL, 0, 0, o->format_reward, &TASKS[o->task]};
    if (run.mc)
        build_mcprm(&mc, &policy.config, N, o->max_new_tokens, o->mc_k, o->mc_whiten, TASKS[o->task].step_end,
                    task_outcome_reward, &mc_task, NULL);
    build_prompt_selector(&select, o->prompt_select, o->select_target, candidates, o->select_decay,
                          o->dynamic_max_rounds, train.n, o->prompts_per_step, o->group_size,
                          o->max_new_tokens, maxT);
    if (o->prompt_select == SELECT_MOPPS) {   // the posteriors: a state section of every checkpoint
        if (o->resume[0]) mopps_resume(&select, &st, o->resume, o->prompts_per_step);
        ckpt_add_section(&st, "mopps", select.state, mopps_state_bytes(&select), 0);
    }
    double t_start = wall_seconds();
    EvalResult before = {0.0f, 0.0f, 0}, after = before;
    if (o->test_limit != 0) {
        before = evaluate(sft_model, &kv, &test, o->test_limit, o->max_new_tokens, o->temperature, 0, o->seed,
                          0.0f, NULL);
        printf("# start: test greedy accuracy of %s %.4f (%d problems)\n",
               o->resume[0] ? o->init : "the model", before.accuracy, before.n);
    }
    if (sft_model == &init_model) free_gpt(&init_model);
    char header[1024];
    train_csv_header(header, sizeof header, o);
    csv = open_csv(o->run_dir, "train.csv", header, 1, st.step, 13, st.log_row);   // 13: to gen_tokens
    char saved_record[sizeof st.options];   // the resumed run's record: the hash of its --init
    memcpy(saved_record, st.options, sizeof saved_record);
    record_options(st.options, sizeof st.options, o, TRAIN_RUN_OPTIONS, OPTIMIZER_OPTIONS);
    record_input_hashes(st.options, sizeof st.options, o, TRAIN_INPUTS, saved_record);
    st.log = &csv;
    if (run.probe) {
        build_probe(&probe, policy.num_parameters, N, o->max_new_tokens, o->probe_every);
        csv.probe = &probe;
    }
    start_budget(&budget, o, &run);
    train_loop(&run);
    if (budget.amount > 0 && !budget.done)
        fprintf(stderr, "note: --steps %d reached with %g of the --budget %g %s spent\n", o->steps,
                budget_spent(&budget), budget.amount, BUDGET_UNIT_NAMES[budget.unit]);
    if (run.critic) critic_to_section(&critic, &st);   // model.bin holds the critic too (a resume needs it)
    save_checkpoint(ckpt, &policy, &st, st.step, run.last_good);
    close_csv(&csv);
    if (o->prompt_select == SELECT_MOPPS) report_prompt_selection(&select, o->run_dir);
    if (budget.eval_csv.f) close_csv(&budget.eval_csv);
    close(lock);
    if (o->test_limit != 0)
        after = evaluate(&policy, &kv, &test, o->test_limit, o->max_new_tokens, o->temperature, o->pass_k,
                         o->seed, 0.0f, NULL);
    print_result(o, ckpt, before, after, st.step, &budget, (wall_seconds() - t_start) / 60.0);
    if (run.mc) free_mcprm(&mc);
    free_group_batch(&g);
    free_prompt_selector(&select);
    free_kvcache(&kv);
    free_dataset(&train);
    free_dataset(&val);
    free_dataset(&test);
    free_gpt(&policy);
    if (run.ref) free_gpt(&ref);
    if (run.critic) free_critic(&critic);
    if (run.probe) free_probe(&probe);
    return 0;
}

// ----------------------------------------------------------------------------
// The paper's synthetic experiment (§4.3, Table 1): a depth-4 binary tree
//
// The prompt is <bos>; a completion is exactly 4 tokens, each L or R (every other token is
// masked out of the softmax, in the sampler and in the log-probs), so there are 16 leaves.
// One leaf is the target T (reward +1.0); every other leaf that shares T's first n tokens
// gets r_neg < 0; all remaining leaves get +0.7. GRPO over-weights the shared prefix of T
// and its bad siblings (|λ| times); λ-GRPO counts it once.

#define TREE_DEPTH 4
#define TREE_LEAVES 16

// Leaf index of a completion: bit d (from the top) is 1 for R. Returns −1 if not L/R x4.
static int tree_leaf(const int *comp, int len) {
    if (len != TREE_DEPTH) return -1;
    int leaf = 0, L = char_to_token('L'), R = char_to_token('R');
    for (int d = 0; d < TREE_DEPTH; d++) {
        if (comp[d] != L && comp[d] != R) return -1;
        leaf = leaf * 2 + (comp[d] == R);
    }
    return leaf;
}

/* tree_reward: the reward of leaf `leaf` (0..15) for target leaf `target`, as above (paper §4.3); 0 for a
   completion that is not a leaf (impossible under the mask). */
static float tree_reward(int leaf, int target, int n, float r_neg) {
    if (leaf < 0) return 0.0f;
    if (leaf == target) return 1.0f;
    int shift = TREE_DEPTH - n;
    return (leaf >> shift) == (target >> shift) ? r_neg : 0.7f;
}

typedef struct {             // one tree run's reward table, as MC-PRM's verifier reads it
    int target, n;
    float r_neg;
} TreeTask;

// tree_outcome_reward: the OutcomeReward of the tree task: tree_reward of the completion's leaf.
static float tree_outcome_reward(const void *task, int group, const int *comp, int len) {
    const TreeTask *t = (const TreeTask *)task;
    (void)group;   // every group of a run has the same prompt and target
    return tree_reward(tree_leaf(comp, len), t->target, t->n, t->r_neg);
}

// The token mask of the tree task: only L and R can be sampled or scored.
static void tree_allowed(unsigned char *allowed) {
    for (int v = 0; v < VOCAB_SIZE; v++) allowed[v] = v == char_to_token('L') || v == char_to_token('R');
}

/* tree_step_config: the GRPO step and the optimizer of one tree run. Every completion has TREE_DEPTH
   tokens: the Dr. GRPO constant; the schedule counts steps·μ AdamW steps, as train's does. */
static void tree_step_config(const Options *o, int objective, int seed, GRPOConfig *cfg, AdamWConfig *opt) {
    *cfg = grpo_config_from_options(o);
    cfg->obj.objective = objective;
    cfg->obj.max_new_tokens = TREE_DEPTH;
    cfg->seed = seed;
    *opt = adamw_from_options(o, o->steps * o->num_iterations);
}

/* tree_run: one run of the synthetic experiment (one objective, one cell, one seed) from a random
   initialisation, through the GRPO step's functions; freq (steps): per step, the share of the k samples
   that hit the target. Returns the paper's metric: T's frequency over the last min(50, steps) steps. The
   target is drawn from the seed alone (both objectives face the same one and the same streams). π_ref
   (β != 0) and PPO's critic start from the run's initial policy; MC-PRM's steps are the tokens. */
static float tree_run(const Options *o, int objective, int n, float r_neg, int seed, float *freq,
                      float *reward, int *target_out) {
    GRPOConfig cfg;
    AdamWConfig opt;
    tree_step_config(o, objective, seed, &cfg, &opt);
    int k = o->group_size, P = o->prompts_per_step, N = P * k;
    GPT model, ref;
    GPTConfig shape = {8, VOCAB_SIZE, o->layers, o->heads, o->channels};
    uint64_t init_seed = (uint64_t)seed * 7919 + 1;
    build_gpt(&model, shape, N, init_seed);
    int use_ref = cfg.obj.beta != 0.0f;
    if (use_ref) build_gpt(&ref, shape, N, init_seed);
    Critic critic;
    int use_critic = objective == OBJ_PPO;
    if (use_critic)
        build_critic(&critic, &model, N, N, TREE_DEPTH, critic_config_from_options(o, opt.total_steps),
                     init_seed);
    Rng target_rng;
    rng_seed(&target_rng, seed, 0x7ee);
    int target = *target_out = rng_int(&target_rng, TREE_LEAVES);
    unsigned char allowed[VOCAB_SIZE];
    tree_allowed(allowed);
    KVCache kv;
    build_kvcache(&kv, &model.config, N);
    kv.pack = o->sampler;
    GroupBatch g;
    build_group_batch(&g, P, k, TREE_DEPTH, N, model.config.max_seq_len);
    MCPRM mc;
    TreeTask task = {target, n, r_neg};
    if (objective == OBJ_MC_PRM)
        build_mcprm(&mc, &model.config, N, TREE_DEPTH, o->mc_k, o->mc_whiten, MC_SEGMENT_TOKEN,
                    tree_outcome_reward, &task, allowed);
    static const int bos[1] = {TOK_BOS};
    for (int i = 0; i < N; i++) {   // the prompt is <bos> alone
        g.prompt[i] = bos;
        g.plen[i] = 1;
    }
    int adam_t = 0;
    double tail = 0.0;
    int tail_steps = o->steps < 50 ? o->steps : 50;
    for (int step = 0; step < o->steps; step++) {
        sample_group(&model, &kv, &g, &cfg, step, allowed);
        int hits = 0;
        double mean_reward = 0.0;
        for (int i = 0; i < N; i++) {
            g.reward[i] = tree_outcome_reward(&task, 0, g.comp_row[i], g.clen[i]);
            hits += g.reward[i] == 1.0f;   // the target's reward, no other leaf's
            mean_reward += g.reward[i];
        }
        compute_advantages(g.advantage, g.reward, g.num_groups, g.group_start, &cfg.obj);
        build_group_trees(&g);
        if (objective == OBJ_MC_PRM) mc_prm_advantages(&mc, &model, &g, &cfg, step);
        CriticStats critic_stats = {0};
        if (use_critic) ppo_advantages(&critic, &g, &cfg, &critic_stats);   // V_old, GAE, whitening
        UpdateStats update;
        UpdateStatus status = grpo_update(&model, use_ref ? &ref : NULL, &g, &cfg, &opt, &adam_t, allowed,
                                          &update);
        if (status != UPDATE_DONE)   // no checkpoints: no last good one to name
            stop_on_nan(UPDATE_STOPPED_BY[status], step + 1, update.not_finite, NULL);
        if (use_critic && (status = critic_update(&critic, &g, &cfg, &critic_stats)) != UPDATE_DONE)
            stop_on_nan(CRITIC_STOPPED_BY[status], step + 1, critic_stats.not_finite, NULL);
        freq[step] = (float)hits / N;
        reward[step] = (float)(mean_reward / N);
        if (step >= o->steps - tail_steps) tail += freq[step];
    }
    if (objective == OBJ_MC_PRM) free_mcprm(&mc);
    free_group_batch(&g);
    free_kvcache(&kv);
    free_gpt(&model);
    if (use_ref) free_gpt(&ref);
    if (use_critic) free_critic(&critic);
    return (float)(tail / tail_steps);
}

/* tree_methods: tree's objectives (returns their number): GRPO, λ-GRPO, then those --objective names, in
   OBJECTIVE_NAMES order. A name that is no objective, an empty one, or one named twice: a usage error. */
static int tree_methods(const Options *o, int *methods) {
    const char *list = o->tree_objectives, *end = list + strlen(list);
    unsigned seen = 0;
    for (const char *name = list; *list && name <= end; name += strcspn(name, ",") + 1) {   // up to a comma
        size_t len = strcspn(name, ",");
        int known = -1;
        for (int k = 0; OBJECTIVE_NAMES[k]; k++)
            if (strlen(OBJECTIVE_NAMES[k]) == len && !strncmp(name, OBJECTIVE_NAMES[k], len)) known = k;
        if (len == 0) usage_error("--objective '%s': an empty name (two commas, or one at an end)", list);
        if (known < 0)
            usage_error("--objective '%s': '%.*s' is not an objective (" OBJECTIVE_LIST "; "
                        "comma-separated)", list, (int)len, name);
        if (seen & 1u << known)
            usage_error("--objective '%s': '%.*s' is named twice (each objective runs once)", list, (int)len,
                        name);
        seen |= 1u << known;
    }
    int M = 0;
    for (int k = 0; OBJECTIVE_NAMES[k]; k++)
        if (k == OBJ_GRPO || k == OBJ_LAMBDA_GRPO || seen & 1u << k) methods[M++] = k;
    return M;
}

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
/* web_tree_run: the web page's view of a tree run as it ends (notes/web, make web: its Web Worker
   draws the curve while the other runs go on): objective, n, r_neg and seed as in tree_steps.csv,
   which stays the record, and freq (steps), the run's per-step target frequency. Elsewhere nothing. */
static void web_tree_run(int objective, int n, float r_neg, int seed, const float *freq, int steps) {
    EM_ASM({ if (Module.onTreeRun)
                 Module.onTreeRun(UTF8ToString($0), $1, $2, $3, HEAPF32.slice($4 >> 2, ($4 >> 2) + $5)); },
           OBJECTIVE_NAMES[objective], n, r_neg, seed, freq, steps);
}
#else
#define web_tree_run(objective, n, r_neg, seed, freq, steps) ((void)0)
#endif

static int cmd_tree(int argc, char **argv, Options *o) {
    // tree's defaults. --lr: GRPO's best rate at 250 steps, k = 16, by a rule fixed before λ-GRPO's runs
    // were read (notes/studies/tree_sweep.prereg.txt; the map of both: notes/results.md); no warmup,
    // weight decay 0 and temperature 1, as every command's default
    set_defaults(o, "steps 250 group-size 16 prompts-per-step 1 seeds 5 lr 5e-4 schedule constant layers 2 "
                    "heads 2 channels 32 run-dir runs/tree");
    const char *syn = "The paper's synthetic experiment (§4.3, Table 1): a depth-4 binary tree of L/R\n"
                      "tokens, target leaf +1.0, its n-prefix siblings r_neg, other leaves +0.7. Runs the\n"
                      "grid n in {1,2} x r_neg in {-0.5,-1,-1.5} x seeds x {GRPO, λ-GRPO} from random\n"
                      "initialisation (--objective mc-prm,ppo adds MC-PRM and PPO with a learned critic),\n"
                      "prints the table beside the paper's, writes RUN_DIR/tree_steps.csv.";
    parse_options(argc, argv, CMD_TREE, o, "tree", syn);
    int methods[8], M = tree_methods(o, methods);
    check_grpo_options(o, CMD_TREE);
    if (o->steps < 1)
        usage_error("--steps %d: tree needs at least 1 step (its metric is a mean over the last steps)",
                    o->steps);
    print_options(stdout, o, CMD_TREE);
    if (o->obj.loss_agg == AGG_SEQ_MEAN_TOKEN_SUM_NORM)
        printf("# loss %s: Dr. GRPO constant %d (every completion has %d tokens)\n",
               LOSS_AGG_NAMES[o->obj.loss_agg], TREE_DEPTH, TREE_DEPTH);
    if (o->obj.beta != 0.0f) printf("# beta %g: π_ref is each run's initial (random) policy\n", o->obj.beta);
    if (list_has(o->tree_objectives, "mc-prm"))
        printf("# mc-prm: every token is a step; V̂ of each prefix from K=%d continuations%s\n", o->mc_k,
               o->mc_whiten ? ", step advantages whitened over the step's tokens" : "");
    char steps_csv[1100];
    snprintf(steps_csv, sizeof steps_csv, "%s/tree_steps.csv", o->run_dir);
    NamedPath out = {"--run-dir", steps_csv};
    refuse_inputs_as_outputs(&out, 1, NULL, 0);
    if (!o->overwrite && access(steps_csv, F_OK) == 0)
        usage_error("--run-dir %s holds an earlier run ('%s'): give another --run-dir, or --overwrite 1 to replace "
                    "it", o->run_dir, steps_csv);
    make_dir(o->run_dir);
    int lock = lock_run_dir(o->run_dir, "--run-dir");
    const char *header = "objective,n,r_neg,seed,target,step,target_freq,mean_reward";
    CsvLog csv = open_csv(o->run_dir, "tree_steps.csv", header, 1, 0, 0, NULL);
    static const int NS[2] = {1, 2};
    static const float RNEG[3] = {-0.5f, -1.0f, -1.5f};
    static const float PAPER[2][3][2] = {{{0.3995f, 0.5663f}, {0.0000f, 0.7535f}, {0.2000f, 0.4463f}},
                                         {{0.1980f, 0.4292f}, {0.0488f, 0.3612f}, {0.0000f, 0.3820f}}};
    int S = o->seeds, runs = 2 * 3 * M * S;
    float *metric = (float *)mallocCheck((size_t)runs * (1 + 2 * o->steps) * sizeof(float));
    float *curve = metric + runs, *rcurve = curve + (size_t)runs * o->steps;   // per run and step
    int *targets = (int *)mallocCheck((size_t)runs * sizeof(int));
    double t0 = wall_seconds();
    // one thread per run (inner loops serial): the runs are tiny, splitting their matmuls is slower;
    // the CUDA build (always on the GPU here) runs one at a time (one cuBLAS handle, shared scratch)
#ifndef GRPO_CUDA
    #pragma omp parallel for schedule(dynamic)
#endif
    for (int idx = 0; idx < runs; idx++) {   // run idx: ((n·3 + r_neg)·M + method)·S + seed
        int s = idx % S, m = (idx / S) % M, b = (idx / (M * S)) % 3, a = idx / (3 * M * S);
        metric[idx] = tree_run(o, methods[m], NS[a], RNEG[b], s + 1, curve + (size_t)idx * o->steps,
                               rcurve + (size_t)idx * o->steps, &targets[idx]);
        web_tree_run(methods[m], NS[a], RNEG[b], s + 1, curve + (size_t)idx * o->steps, o->steps);
    }
    for (int idx = 0; idx < runs; idx++) {
        int s = idx % S, m = (idx / S) % M, b = (idx / (M * S)) % 3, a = idx / (3 * M * S);
        for (int t = 0; t < o->steps; t++)
            fprintf(csv.f, "%s,%d,%g,%d,%d,%d,%.6f,%.6f\n", OBJECTIVE_NAMES[methods[m]], NS[a], RNEG[b],
                    s + 1, targets[idx], t + 1, curve[(size_t)idx * o->steps + t],
                    rcurve[(size_t)idx * o->steps + t]);
        csv_row_done(&csv);   // a run's rows reach the file, or a write error stops here naming it
    }
    close_csv(&csv);
    int window = o->steps < 50 ? o->steps : 50;   // tree_run's metric: the last min(50, steps) steps
    printf("\nTable 1: frequency of the target leaf over the last %d steps (mean ± std over %d seed%s)\n",
           window, S, S > 1 ? "s" : "");
    printf("  n  r_neg |   GRPO (ours)     λ-GRPO (ours)");
    static const char *LABELS[] = {"GRPO", "λ-GRPO", "MC-PRM", "PPO"};   // the objectives' names in the table
    for (int m = 2; m < M; m++)
        printf("%*s%s (ours)", 11 - (int)strlen(LABELS[methods[m]]), "", LABELS[methods[m]]);
    printf("  |  GRPO (paper)  λ-GRPO (paper)\n");
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++) {
            printf("  %d  %5.1f |", NS[a], RNEG[b]);
            for (int m = 0; m < M; m++) {
                const float *v = metric + ((size_t)(a * 3 + b) * M + m) * S;
                double mean = 0.0;
                for (int s = 0; s < S; s++) mean += v[s];
                mean /= S;
                printf("%s%.4f ± %.4f", m ? "   " : "  ", mean, std_of(v, S, STD_SAMPLE, mean));
            }
            printf(" |  %.4f        %.4f\n", PAPER[a][b][0], PAPER[a][b][1]);
        }
    // the paper's per-seed picture for n = 1, r_neg = −1.0: found early, then abandoned?
    int early = o->steps < 10 ? o->steps : 10;
    printf("\nn = 1, r_neg = -1.0, per seed: target frequency in the first %d steps (max of any step) "
           "and the last %d\n", early, window);
    for (int i = M * S; i < 2 * M * S; i++) {   // cell 1's runs: method m, seed s at M·S + m·S + s
        const float *c = curve + (size_t)i * o->steps;
        double first = 0, peak = 0;
        for (int t = 0; t < early; t++) {
            first += c[t];
            if (c[t] > peak) peak = c[t];
        }
        printf("  %-11s seed %d: first %2d steps %.3f (max %.3f), last %d steps %.3f\n",
               OBJECTIVE_NAMES[methods[i / S - M]], i % S + 1, early, first / early, peak, window, metric[i]);
    }
    printf("\n# %d runs x %d steps in %.1f s; per-step target frequency in %s\n", runs, o->steps,
           wall_seconds() - t0, csv.path);
    free(metric);
    free(targets);
    close(lock);
    return 0;
}

// ----------------------------------------------------------------------------
// HTML page of B(G): a group's tree as a picture, GRPO's and λ-GRPO's credit side by side
//
// ./grpo sample --html FILE and ./grpo check FILE --html OUT write one self-contained page: every
// node's numbers as one JSON block (id bg-data), an empty <svg>, and a short plain script that lays
// the tree out and colours it (no network, no library). node_numbers computes what sample's text
// tree prints and what the JSON holds, so the two cannot disagree; the script only draws them.

// NodeNumbers: one node λ's numbers beside its ProcessNode's |λ|, R̂ and A_λ (sample's text, the JSON).
typedef struct {
    double net[2];      // each step token's Σ_{i∈λ} lambda_weight·a_i before c_i (notes/worked-example.md):
                        // [0] GRPO (= |λ|·A_λ), [1] λ-GRPO (= A_λ); positive: the objective raises the tokens
    float value;        // V̂ of the node's prefix (sample, from --mc-k continuations); NAN: none (check)
    long cost;          // sampled tokens V̂ cost; −1 at a leaf (V̂ is the reward); −2: no V̂
} NodeNumbers;

/* PageGroup: one group as sample's text and the page draw it. The tree and its per-token arrays
   are build_prefix_tree's for this group (node_of, lambda_size: k rows, stride apart). */
typedef struct {
    long group;                   // its id (check: group=; sample: 0)
    const char *label;            // its heading (sample: the prompt)
    int k;
    const int *const *tokens;     // (k) completion i's token ids
    const int *len;               // (k)
    const float *reward, *advantage;   // (k) r_i and a_i; the page names completion i y(i+1), as the paper
    int verifier;                 // 1: the verifier accepted completion i when r_i = 1 (sample); 0: no verdicts
    const PrefixTree *tree;
    const int *node_of, *lambda_size;
    int stride;
    NodeNumbers *nums;            // (tree->num_nodes) node_numbers
} PageGroup;

// is_member: 1 when completion i is a member of node n (the node owns its token at the node's start).
static int is_member(const PageGroup *pg, int n, int i) {
    int start = pg->tree->nodes[n].start;
    return pg->len[i] > start && pg->node_of[(size_t)i * pg->stride + start] == n;
}

/* node_numbers: pg->nums for every node of its tree, with the objective's own lambda_weight;
   value NAN and cost −2 (none: check; sample's node_values fills them in). */
static void node_numbers(const PageGroup *pg) {
    ObjectiveConfig obj[2] = {{.objective = OBJ_GRPO}, {.objective = OBJ_LAMBDA_GRPO}};
    for (int n = 0; n < pg->tree->num_nodes; n++) {
        NodeNumbers *o = &pg->nums[n];
        int start = pg->tree->nodes[n].start;
        o->net[0] = o->net[1] = 0.0;
        for (int i = 0; i < pg->k; i++) {
            if (!is_member(pg, n, i)) continue;
            int size = pg->lambda_size[(size_t)i * pg->stride + start];
            for (int b = 0; b < 2; b++) o->net[b] += (double)lambda_weight(&obj[b], size) * pg->advantage[i];
        }
        o->value = NAN;
        o->cost = -2;
    }
}

/* TokenNames: how check's page writes a step's tokens: name[t] of --token-names for id t < n, run
   together, other ids in decimal; no names (NULL): ids, space-separated. (sample's: decode().) */
typedef struct {
    char **name;        // (n) NUL-terminated names, or NULL
    int n;
} TokenNames;

/* load_token_names: the names of check --token-names FILE: line n (from 0) names token id n,
   without its line ending (LF or CRLF); an empty line names the empty string. Exits naming
   the option and the file when it cannot be read, or a line holds a NUL byte. */
static void load_token_names(TokenNames *tn, const char *path) {
    char where[1100], *line = NULL;   // where: the file as messages name it
    snprintf(where, sizeof where, "error: --token-names %s", path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open: %s\n", where, strerror(errno));
        exit(EXIT_INPUT);
    }
    size_t cap = 0;
    long len;
    tn->name = (char **)mallocCheck(sizeof(char *));   // an empty file: names, none of them
    while ((len = read_line(f, &line, &cap, 1L << 20, where, tn->n + 1)) != -1) {
        if ((size_t)len != strlen(line)) data_error(where, tn->n + 1, "a NUL byte; a name is one line of text");
        if (line[len - 1] == '\n') line[--len] = 0;
        if (len > 0 && line[len - 1] == '\r') line[--len] = 0;
        tn->name = (char **)realloc(tn->name, (size_t)(tn->n + 1) * sizeof(char *));
        if (!tn->name) data_error(where, tn->n + 1, "out of memory");
        tn->name[tn->n] = (char *)mallocCheck((size_t)len + 1);
        memcpy(tn->name[tn->n++], line, (size_t)len + 1);
    }
    free(line);
    fclose(f);
}

// Writes s as the inside of a JSON string. <, > and & are escaped too: the JSON sits in an HTML
// <script> element, which a literal "</script>" in a token's name would end.
static void json_chars(FILE *f, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
}

// Writes s as HTML text (&, <, > and " as entities).
static void html_chars(FILE *f, const char *s) {
    const char *special = "&<>\"", *entity[] = {"&amp;", "&lt;", "&gt;", "&quot;"};
    for (; *s; s++) {
        const char *c = strchr(special, *s);
        if (c) fputs(entity[c - special], f);
        else fputc(*s, f);
    }
}

// before (a key), then v as JSON: 9 significant digits (the float exactly, as check prints it); NAN: null.
static void json_num(FILE *f, const char *before, double v) {
    fputs(before, f);
    if (isfinite(v)) fprintf(f, "%.9g", v);
    else fputs("null", f);
}

// A step of over HTML_STEP_TOKENS tokens is written as its first HTML_HEAD_TOKENS and last HTML_TAIL_TOKENS
// (the box shows 24 characters, the hover panel all): long completions stay well under 1 MB.
#define HTML_STEP_TOKENS 160
#define HTML_HEAD_TOKENS 120
#define HTML_TAIL_TOKENS 24

// The JSON string of tokens[0..n) as tn names them (NULL: decode()), elided past HTML_STEP_TOKENS.
static void json_tokens(FILE *f, const TokenNames *tn, const int *tokens, int n) {
    int cut = n > HTML_STEP_TOKENS;
    fputc('"', f);
    for (int part = 0; part <= cut; part++) {   // part 1: the tail after the elision
        const int *run = part ? tokens + n - HTML_TAIL_TOKENS : tokens;
        int m = !cut ? n : part ? HTML_TAIL_TOKENS : HTML_HEAD_TOKENS;
        if (part) fprintf(f, " \u2026 (%d tokens) \u2026 ", n - HTML_HEAD_TOKENS - HTML_TAIL_TOKENS);
        if (!tn) {
            char *text = (char *)mallocCheck((size_t)m * 6 + 1);   // a token decodes to at most 5 characters
            decode(run, m, text, m * 6 + 1);
            json_chars(f, text);
            free(text);
        }
        for (int t = 0; t < m && tn; t++) {
            if (tn->name && run[t] >= 0 && run[t] < tn->n) json_chars(f, tn->name[run[t]]);
            else fprintf(f, "%s%d", t > 0 && !tn->name ? " " : "", run[t]);
        }
    }
    fputc('"', f);
}

/* The page's script: lays each group's tree out left to right (a column per depth, a row per leaf,
   a chain of single-child nodes as one run), colours each node by its net coefficient under the
   objective of the switch or the URL's #grpo / #lambda-grpo, and shows a hovered node's numbers.
   On <body> it writes data-status ("ok" or "error"), data-draw-ms, data-done-ms and data-objective,
   which tests/browser_check.sh reads. */
static const char HTML_SCRIPT[] =
    "(function () {\n"
    "'use strict';\n"
    "var t0 = performance.now(), body = document.body, NS = 'http://www.w3.org/2000/svg';\n"
    "var status = document.getElementById('bg-status');\n"
    "try {\n"
    "var D = JSON.parse(document.getElementById('bg-data').textContent);\n"
    "var OBJ = ['grpo', 'lambda-grpo'], NAME = ['GRPO', '\\u03bb-GRPO'], MAXC = 24, CW = 7.2, LH = 13;\n"
    "function el(tag, attrs, parent, text) {\n"
    "  var e = document.createElementNS(NS, tag);\n"
    "  for (var a in attrs) e.setAttribute(a, attrs[a]);\n"
    "  if (text !== undefined) e.textContent = text;\n"
    "  return parent.appendChild(e);\n"
    "}\n"
    "function sg(x, d) { return x === null ? 'n/a' : (x < 0 ? '\\u2212' : '+') + Math.abs(x).toFixed(d); }\n"
    "function num(x, d) { return x === null ? 'n/a' : x.toFixed(d); }\n"
    "function cut(s) { return s.length > MAXC ? s.slice(0, MAXC - 1) + '\\u2026' : s; }\n"
    "var LO = [247, 247, 247], UP = [33, 102, 172], DOWN = [178, 24, 43];\n"
    "function colour(v) {\n"
    "  var t = Math.max(-1, Math.min(1, v / M)), hi = t >= 0 ? UP : DOWN, a = Math.abs(t);\n"
    "  return 'rgb(' + LO.map(function (c, i) { return Math.round(c + (hi[i] - c) * a); }).join(',') + ')';\n"
    "}\n"
    "var painted = [], netText = [], M = 0;\n"   // a box's [rect, node] and [net line, node, its text before the number]: redone by the switch
    "function yr(c, yes, no) { return 'y' + c.id + ' r=' + num(c.reward, 3) + (c.accepted === null ? '' : c.accepted ? yes : no); }\n"
    "function endText(cs) {\n"
    "  if (cs.length <= 3) return cs.map(function (c) { return yr(c, ' \\u2713', ' \\u2717'); });\n"
    "  var ok = cs.filter(function (c) { return c.accepted; }).length, mean = 0;\n"
    "  cs.forEach(function (c) { mean += c.reward / cs.length; });\n"
    "  return [cs.length + ' end here, mean r=' + num(mean, 3) + (D.verifier ? ', ' + ok + ' \\u2713' : '')];\n"
    "}\n"
    "function detail(g, item) {\n"   // the hover panel's text: every step of the run, its members and nets
    "  var lines = [];\n"
    "  item.nodes.forEach(function (n) {\n"
    "    var ms = n.members.map(function (c) { return g.completions[c - 1]; });\n"
    "    lines.push('step \"' + n.text + '\" (tokens ' + n.start + '..' + (n.end - 1) + ')');\n"
    "    lines.push('  |\\u03bb|=' + n.size + '  R\\u0302=' + num(n.R, 4) + '  A_\\u03bb=' + sg(n.A, 4) +\n"
    "               (n.V === null ? '' : '  V\\u0302=' + num(n.V, 3) + (n.cost < 0 ? ' (leaf)' : ' (' + n.cost + ' tok)')));\n"
    "    lines.push('  members: ' + ms.map(function (c) { return 'y' + c.id + ' (a=' + sg(c.advantage, 4) + ')'; }).join(', '));\n"
    "    lines.push('  GRPO:   \\u03a3 1\\u00b7a_i = ' + sg(n.net[0], 4));\n"
    "    lines.push('  \\u03bb-GRPO: \\u03a3 a_i/' + n.size + ' = ' + sg(n.net[1], 4));\n"
    "  });\n"
    "  if (item.ends.length) lines.push('ends here: ' + item.ends.map(function (c) { return yr(c, ' accepted', ' rejected'); }).join(', '));\n"
    "  return lines.join('\\n');\n"
    "}\n"
    "var info = document.getElementById('bg-info'), root = document.getElementById('bg-svg'), Y = 0, W = 0;\n"
    "D.groups.forEach(function (g) {\n"
    "  var roots = [];\n"
    "  g.nodes.forEach(function (n) { n.kids = []; n.ends = []; });\n"
    "  g.nodes.forEach(function (n) { M = Math.max(M, Math.abs(n.net[0]), Math.abs(n.net[1])); });\n"   // the scale
    "  g.nodes.forEach(function (n, i) { (n.parent >= 0 ? g.nodes[n.parent].kids : roots).push(i); });\n"
    "  g.completions.forEach(function (c) { if (c.leaf >= 0) g.nodes[c.leaf].ends.push(c); });\n"
    // many leaves: two lines a box (R̂ and V̂ in the hover panel)
    "  var compact = g.nodes.filter(function (n) { return !n.kids.length; }).length > 24;\n"
    // items: a node, or a run (a chain of nodes of one child each, drawn as one box in segments)
    "  function item(i) {\n"
    "    var n = g.nodes[i], it = {nodes: [n], pre: ''};\n"
    "    while (n.kids.length === 1) { n = g.nodes[n.kids[0]]; it.nodes.push(n); }\n"
    "    it.kids = n.kids.map(item);\n"
    "    it.text = it.nodes.map(function (m) { return m.text; }).join('');\n"
    "    var a = it.nodes[0], z = it.nodes[it.nodes.length - 1];\n"
    "    it.lines = [cut(it.text), it.nodes.length > 1 ? 'run of ' + it.nodes.length + ' steps, |\\u03bb| ' + a.size + '\\u2192' + z.size :\n"
    "                '|\\u03bb|=' + a.size + (compact ? '' : ' R\\u0302=' + num(a.R, 3)) + ' A=' + sg(a.A, 3)];\n"
    "    if (it.nodes.length === 1) it.lines.push('net \\u03bb-GRPO ' + sg(a.net[0], 4));\n"   // the widest; paint() writes it
    "    if (it.nodes.length === 1 && a.V !== null && !compact) it.lines[1] += ' V\\u0302=' + num(a.V, 3) + (a.cost < 0 ? '' : ' (' + a.cost + ' tok)');\n"
    "    if (compact && it.nodes.length === 1) { it.pre = it.lines[1] + ' '; it.lines = [it.lines[0], it.pre + it.lines[2]]; }\n"   // pre: the net line's text before the number
    "    it.w = 10 + CW * Math.max.apply(null, it.lines.map(function (s) { return s.length; }));\n"
    "    it.h = 6 + LH * it.lines.length;\n"
    "    it.ends = [].concat.apply([], it.nodes.map(function (m) { return m.ends; }));\n"
    "    return it;\n"
    "  }\n"
    "  var top = {nodes: [], kids: roots.map(item), lines: [cut(g.label)], w: 10 + CW * Math.min(MAXC, g.label.length), h: 20, ends: []};\n"
    "  var colW = [], rows = 0, GAP = 6;\n"
    "  el('text', {x: 4, y: Y + 16, 'class': 'bg-head'}, root, g.heading);\n"
    "  Y += 28;\n"
    "  (function place(it, d) {\n"   // columns by depth, rows by leaf (depth-first order)
    "    colW[d] = Math.max(colW[d] || 0, it.w);\n"
    "    it.d = d;\n"
    "    var kids = it.all = !it.kids.length || !it.ends.length ? it.kids :\n"   // an inner run's ends: an end item after its kids
    "      it.kids.concat([{nodes: [], kids: [], end: true, lines: endText(it.ends), w: 0, h: 0, ends: it.ends}]);\n"
    "    if (!kids.length) {\n"
    "      var h = Math.max(it.h, LH * (it.end ? it.lines.length : endText(it.ends).length)) + GAP;\n"
    "      it.y = Y + rows + h / 2; rows += h; return;\n"
    "    }\n"
    "    kids.forEach(function (c) { place(c, d + 1); });\n"
    "    it.y = (kids[0].y + kids[kids.length - 1].y) / 2;\n"
    "  })(top, 0);\n"
    "  var X = [8];\n"
    "  for (var d = 1; d <= colW.length; d++) X[d] = X[d - 1] + colW[d - 1] + 44;\n"
    "  var gEdges = el('g', {}, root), gNodes = el('g', {}, root);\n"
    "  function endLines(lines, x, y) {\n"   // completions' end text from x, centred on y; returns x + its width
    "    lines.forEach(function (s, j) { el('text', {x: x, y: y + 4 + LH * (j - (lines.length - 1) / 2), 'class': 'bg-endtext'}, gNodes, s); });\n"
    "    return x + CW * Math.max.apply(null, lines.concat(['']).map(function (s) { return s.length; }));\n"
    "  }\n"
    "  (function draw(it) {\n"
    "    var x = X[it.d];\n"
    "    it.all.forEach(function (c) {\n"
    "      var x0 = x + it.w, x1 = X[c.d], sz = c.end ? 1 : c.nodes[0].size;\n"
    "      el('path', {d: 'M' + x0 + ',' + it.y + ' C' + (x0 + 22) + ',' + it.y + ' ' + (x1 - 22) + ',' + c.y + ' ' + x1 + ',' + c.y,\n"
    "                  'stroke-width': (c.end ? 1 : 1 + 9 * sz / g.k).toFixed(2), 'class': c.end ? 'bg-edge bg-end' : 'bg-edge'}, gEdges);\n"
    "      draw(c);\n"
    "    });\n"
    "    if (it.end) { W = Math.max(W, endLines(it.lines, x + 4, it.y) + 8); return; }\n"
    "    var box = el('g', {'class': it.nodes.length ? 'bg-node' : 'bg-prompt'}, gNodes), y0 = it.y - it.h / 2;\n"
    "    if (!it.nodes.length) el('rect', {x: x, y: y0, width: it.w, height: it.h, rx: 3, 'class': 'bg-promptbox'}, box);\n"
    "    var sw = it.w / Math.max(1, it.nodes.length);\n"
    "    it.nodes.forEach(function (n, j) {\n"
    "      painted.push([el('rect', {x: x + j * sw, y: y0, width: sw, height: it.h, rx: it.nodes.length > 1 ? 0 : 3, 'class': 'bg-box'}, box), n]);\n"
    "    });\n"
    "    it.lines.forEach(function (s, j) {\n"
    "      var t = el('text', {x: x + 5, y: y0 + 3 + LH * (j + 0.8), 'class': j ? 'bg-num' : 'bg-tok'}, box, s);\n"
    "      if (it.nodes.length === 1 && j === it.lines.length - 1) netText.push([t, it.nodes[0], it.pre]);\n"
    "    });\n"
    "    if (it.nodes.length) {\n"
    "      var tip = el('title', {}, box, detail(g, it)).textContent;\n"
    "      box.addEventListener('mouseenter', function () { info.textContent = tip; info.style.display = 'block'; });\n"
    "      box.addEventListener('mouseleave', function () { info.style.display = 'none'; });\n"
    "    }\n"
    "    W = Math.max(W, it.all.length ? x + it.w + 8 : endLines(endText(it.ends), x + it.w + 6, it.y) + 10);\n"
    "  })(top);\n"
    "  Y += rows + 16;\n"
    "});\n"
    "root.setAttribute('width', Math.ceil(W));\n"
    "root.setAttribute('height', Math.ceil(Y));\n"
    "if (!(M > 0)) M = 1;\n"
    "document.getElementById('bg-legend-lo').textContent = sg(-M, 4);\n"
    "document.getElementById('bg-legend-hi').textContent = sg(M, 4);\n"
    "function paint(o) {\n"
    "  painted.forEach(function (p) { p[0].setAttribute('fill', colour(p[1].net[o])); });\n"
    "  netText.forEach(function (p) { p[0].textContent = p[2] + 'net ' + NAME[o] + ' ' + sg(p[1].net[o], 4); });\n"
    "  [0, 1].forEach(function (b) { document.getElementById('bg-' + OBJ[b]).className = b === o ? 'on' : ''; });\n"
    "  document.getElementById('bg-objname').textContent = NAME[o];\n"
    "  body.setAttribute('data-objective', OBJ[o]);\n"
    "}\n"
    "function fromHash() { var h = location.hash.slice(1); return h === 'grpo' ? 0 : h === 'lambda-grpo' ? 1 : OBJ.indexOf(D.objective) < 0 ? 0 : OBJ.indexOf(D.objective); }\n"
    "[0, 1].forEach(function (b) { document.getElementById('bg-' + OBJ[b]).addEventListener('click', function () { location.hash = OBJ[b]; }); });\n"
    "window.addEventListener('hashchange', function () { paint(fromHash()); });\n"
    "paint(fromHash());\n"
    "var ms = performance.now() - t0;\n"
    "body.setAttribute('data-draw-ms', ms.toFixed(1));\n"
    "body.setAttribute('data-done-ms', performance.now().toFixed(1));\n"   // since the page began loading
    "body.setAttribute('data-status', 'ok');\n"
    "status.textContent = painted.length + ' nodes drawn';\n"   // the time only in data-draw-ms: screenshots stay comparable
    "status.title = 'drawn in ' + ms.toFixed(1) + ' ms';\n"
    "} catch (e) {\n"
    "  body.setAttribute('data-status', 'error');\n"
    "  status.textContent = 'error: ' + e;\n"
    "  console.error('bg: ' + e + (e.stack ? '\\n' + e.stack : ''));\n"
    "}\n"
    "})();\n";

static const char HTML_STYLE[] =
    "body{font-family:sans-serif;margin:12px;color:#222;background:#fff}\n"
    "h1{font-size:17px;margin:0 0 4px}\n"
    "p.bg-note{font-size:12px;margin:2px 0;max-width:70em}\n"
    "#bg-bar{display:flex;align-items:center;gap:14px;margin:8px 0;font-size:13px}\n"
    "#bg-bar button{font-size:13px;padding:3px 10px;border:1px solid #888;background:#eee;cursor:pointer}\n"
    "#bg-bar button.on{background:#333;color:#fff}\n"
    "#bg-scale{display:inline-block;width:180px;height:12px;vertical-align:middle;border:1px solid #999;"
    "background:linear-gradient(to right,rgb(178,24,43),rgb(247,247,247),rgb(33,102,172))}\n"
    "#bg-info{display:none;position:fixed;right:10px;top:10px;max-width:44em;white-space:pre-wrap;font:12px monospace;"
    "background:#fffff0;border:1px solid #888;padding:6px;z-index:2}\n"
    "#bg-status{font-size:11px;color:#666}\n"
    ".bg-edge{fill:none;stroke:#8a8a8a}\n.bg-end{stroke-dasharray:3 3}\n"
    ".bg-box{stroke:#444;stroke-width:0.8}\n.bg-promptbox{fill:#e8e8e8;stroke:#444}\n"
    ".bg-tok{font:12px monospace}\n.bg-num{font:11px monospace;fill:#222}\n"
    ".bg-endtext{font:11px monospace;fill:#333}\n.bg-head{font:bold 13px sans-serif}\n"
    ".bg-node:hover .bg-box{stroke:#000;stroke-width:2}\n";

/* html_check_path: refuses --html PATH before any work when its temporary file cannot be made
   (no such directory, or not writable). (Directories, inputs: refuse_inputs_as_outputs, first.) */
static void html_check_path(const char *path) {
    char tmp[1100];
    FILE *f = atomic_create(path, tmp, sizeof tmp);
    if (!f) {
        fprintf(stderr, "error: --html %s: cannot write there (%s: %s); check that the directory exists and is "
                        "writable\n", path, tmp, strerror(errno));
        exit(EXIT_INPUT);
    }
    fclose(f);
    unlink(tmp);
}

/* html_begin: opens the page at path through a (atomic_open; html_end renames it) and writes all before
   the groups: title, notes, switch, legend, the JSON's header fields. value_note: why there is no V̂
   (NULL: sample has it); verifier: 1 when every completion has a verdict. */
static FILE *html_begin(AtomicFile *a, const char *path, const char *command, const char *source,
                        int objective, const char *settings, const char *value_note, int verifier) {
    FILE *f = atomic_open(a, path);
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>B(G): ./grpo %s ",
            command);
    html_chars(f, source);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", HTML_STYLE);
    fprintf(f, "<h1>B(G), the prefix tree of a group: <code>./grpo %s</code> ", command);
    html_chars(f, source);
    fprintf(f, "</h1>\n"
               "<p class=\"bg-note\">Each box is a process step &lambda; (the tokens its member completions share and its "
               "parent does not), with |&lambda;|, the step reward R&#770;(&lambda;) (mean reward of the members) and the "
               "step advantage A<sub>&lambda;</sub>%s. Edge thickness is |&lambda;|. Each leaf shows its completion's "
               "reward%s. Colour: the net coefficient &Sigma;<sub>i&isin;&lambda;</sub> w&middot;a<sub>i</sub> that the "
               "objective gives each of the step's tokens (w = 1 for GRPO, 1/|&lambda;| for &lambda;-GRPO; before the "
               "loss's 1/&Sigma;len factor): blue raises the tokens' probability, red lowers it. Hover a box for its "
               "members and numbers.%s%s</p>\n",
            value_note ? "" : ", and V&#770; of its prefix from fresh continuations (and the tokens they cost)",
            verifier ? " and whether the verifier accepted it (&#10003; / &#10007;)" : "",
            value_note ? " " : "", value_note ? value_note : "");
    fprintf(f, "<p class=\"bg-note\">Settings: ");
    html_chars(f, settings);
    fprintf(f, "</p>\n<div id=\"bg-bar\">objective: <button id=\"bg-grpo\">GRPO</button>"
               "<button id=\"bg-lambda-grpo\">&lambda;-GRPO</button>"
               "<span>net coefficient under <b id=\"bg-objname\"></b>: <span id=\"bg-legend-lo\"></span> "
               "<span id=\"bg-scale\"></span> <span id=\"bg-legend-hi\"></span> (one scale for both)</span>"
               "<span id=\"bg-status\">not drawn: the page needs JavaScript</span></div>\n"
               "<div id=\"bg-info\"></div>\n<svg id=\"bg-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" "
               "height=\"10\"></svg>\n<script type=\"application/json\" id=\"bg-data\">\n");
    fprintf(f, "{\"format\":\"grpo.c B(G) page 1\",\"command\":\"%s\",\"source\":\"", command);
    json_chars(f, source);
    fprintf(f, "\",\"objective\":\"%s\",\"settings\":\"", OBJECTIVE_NAMES[objective]);
    json_chars(f, settings);
    fprintf(f, "\",\"verifier\":%s,\"groups\":[\n", verifier ? "true" : "false");
    return f;
}

/* html_group: one group's entry of the JSON's "groups" (first: 1 for the first group): its completions
   (id i+1, reward, advantage, length, verdict, leaf) and its nodes in build_prefix_tree's order (parent,
   the step [start, end) and its text as tn names it (NULL: decode()), the numbers, members). */
static void html_group(FILE *f, const PageGroup *pg, const TokenNames *tn, int first) {
    const PrefixTree *tree = pg->tree;
    fprintf(f, "%s{\"group\":%ld,\"label\":\"", first ? "" : ",\n", pg->group);
    json_chars(f, pg->label);
    fprintf(f, "\",\"heading\":\"group %ld: %d completions, %d process steps\",\"k\":%d,\n\"completions\":[",
            pg->group, pg->k, tree->num_nodes, pg->k);
    for (int i = 0; i < pg->k; i++) {
        int leaf = pg->len[i] > 0 ? pg->node_of[(size_t)i * pg->stride + pg->len[i] - 1] : -1;
        fprintf(f, "%s\n{\"id\":%d", i ? "," : "", i + 1);
        json_num(f, ",\"reward\":", pg->reward[i]);
        json_num(f, ",\"advantage\":", pg->advantage[i]);
        fprintf(f, ",\"len\":%d,\"accepted\":%s,\"leaf\":%d}", pg->len[i],
                pg->verifier ? (pg->reward[i] == 1.0f ? "true" : "false") : "null", leaf);
    }
    fprintf(f, "],\n\"nodes\":[");
    static const char *key[6] = {",\"R\":", ",\"A\":", ",\"net\":[", ",", "],\"V\":", ",\"cost\":"};
    for (int n = 0; n < tree->num_nodes; n++) {
        const ProcessNode *nd = &tree->nodes[n];
        const NodeNumbers *nn = &pg->nums[n];
        fprintf(f, "%s\n{\"parent\":%d,\"start\":%d,\"end\":%d,\"text\":", n ? "," : "", nd->parent, nd->start,
                nd->end);
        json_tokens(f, tn, pg->tokens[nd->member] + nd->start, nd->end - nd->start);
        fprintf(f, ",\"size\":%d", nd->size);
        double v[6] = {nd->step_reward, nd->step_advantage, nn->net[0], nn->net[1], nn->value,
                       nn->cost == -2 ? NAN : (double)nn->cost};
        for (int j = 0; j < 6; j++) json_num(f, key[j], v[j]);
        fprintf(f, ",\"members\":[");
        for (int i = 0, m = 0; i < pg->k; i++)
            if (is_member(pg, n, i)) fprintf(f, "%s%d", m++ ? "," : "", i + 1);
        fprintf(f, "]}");
    }
    fprintf(f, "]}");
}

// html_end: closes the JSON and the page and renames it over its path (atomic_close), saying so on stderr.
static void html_end(AtomicFile *a) {
    fprintf(a->f, "\n]}\n</script>\n<script>\n%s</script>\n</body>\n</html>\n", HTML_SCRIPT);
    atomic_close(a);
    fflush(stdout);   // the note after the text it follows, on a terminal
    fprintf(stderr, "html: wrote %s\n", a->path);
}

// ----------------------------------------------------------------------------
// eval, sample, verify: scoring checkpoints and looking at groups

/* evaluate: greedy accuracy on (the first `limit` of) d's prompts, and pass@k (k = pass_k; 0: off) at
   the temperature, both by the verifier; streams from seed and the prompt index (no batch dependence).
   dump (or NULL): each greedy completion as `prompt<TAB>completion<TAB>reward<TAB>eos|no-eos` (the
   reward with format_reward; no-eos: it ran out of tokens). */
static EvalResult evaluate(GPT *m, KVCache *kv, const Dataset *d, int limit, int max_new,
                           float temperature, int pass_k, uint64_t seed, float format_reward, FILE *dump) {
    EvalResult r = {0.0f, 0.0f, limit > 0 && limit < d->n ? limit : d->n};
    int Bmax = kv->B;
    const int *pp[4096];   // (kv->B <= 4096 rows)
    int plen[4096], clen[4096];
    Rng rngs[4096];
    int *comp = (int *)mallocCheck((size_t)Bmax * max_new * sizeof(int));
    float *lp = (float *)mallocCheck((size_t)Bmax * max_new * sizeof(float));
    int *solved = (int *)mallocCheck(r.n * sizeof(int));   // by this pass's samples
    for (int pass = 0; pass < (pass_k ? 2 : 1); pass++) {
        int per = pass == 0 ? 1 : pass_k, num_solved = 0;   // per: sequences per prompt
        memset(solved, 0, r.n * sizeof(int));
        long total = (long)r.n * per;
        for (long s = 0; s < total; s += Bmax) {
            int B = (int)(s + Bmax <= total ? Bmax : total - s);
            for (int b = 0; b < B; b++) {
                long q = s + b;
                int i = (int)(q / per);
                pp[b] = d->prompt + (size_t)i * d->maxT;
                plen[b] = d->prompt_len[i];
                rng_seed(&rngs[b], seed, (1ull << 40) + (uint64_t)q);
            }
            sample_completions(m, kv, B, pp, plen, max_new, temperature, pass == 0, rngs, NULL, comp, lp,
                               clen);
            for (int b = 0; b < B; b++) {
                int i = (int)((s + b) / per);
                const int *cb = comp + (size_t)b * max_new;
                const int *nums = d->nums + (size_t)i * MAX_NUMS;
                // accuracy and pass@k count verified answers only: a format reward of 1 would
                // otherwise count every well-formed wrong answer as solved
                solved[i] |= task_reward(d->task, nums, d->num_count[i], d->target[i], cb, clen[b], 0.0f) == 1;
                if (pass == 0 && dump) {
                    float rw = task_reward(d->task, nums, d->num_count[i], d->target[i], cb, clen[b],
                                           format_reward);
                    char ptext[4096], ctext[8 * 1024 + 16];   // a token decodes to at most 5 characters
                    int ended = clen[b] > 0 && cb[clen[b] - 1] == TOK_EOS;
                    decode(pp[b] + 1, plen[b] - 1, ptext, sizeof ptext);   // without <bos>
                    decode(cb, clen[b] - ended, ctext, sizeof ctext);
                    // the completion column is exactly the text the verifier scored, so
                    // `cut -f1,2 FILE | ./grpo verify -` gives the reward column back
                    fprintf(dump, "%s\t%s\t%g\t%s\n", ptext, ctext, rw, ended ? "eos" : "no-eos");
                }
            }
        }
        for (int i = 0; i < r.n; i++) num_solved += solved[i];
        if (pass == 0) r.accuracy = (float)num_solved / r.n;
        else r.pass_k = (float)num_solved / r.n;
    }
    free(comp);
    free(lp);
    free(solved);
    return r;
}

static int cmd_eval(int argc, char **argv, Options *o) {
    const char *syn = "Scores a checkpoint on a task file: greedy accuracy and pass@k from k samples, both\n"
                      "counting verified answers (--format-reward changes only --completions' reward column).";
    parse_options(argc, argv, CMD_EVAL, o, "eval", syn);
    NamedPath outs[1] = {{"--completions", o->completions_out}}, ins[2] = {{"--model", o->model}, {"--data", o->data}};
    refuse_inputs_as_outputs(outs, 1, ins, 2);
    print_options(stdout, o, CMD_EVAL);
    GPT m;
    load_task_model(o, o->model, &m, 1, NULL);
    Dataset d;
    load_dataset(&d, o->data, m.config.max_seq_len, 0, &TASKS[o->task]);
    check_context(o, m.config.max_seq_len, &d);
    KVCache kv;
    build_kvcache(&kv, &m.config, 64);
    AtomicFile af;
    FILE *dump = o->completions_out[0] ? atomic_open(&af, o->completions_out) : NULL;
    EvalResult r = evaluate(&m, &kv, &d, o->eval_limit, o->max_new_tokens, o->temperature, o->pass_k, o->seed,
                            o->format_reward, dump);
    if (dump) atomic_close(&af);
    printf("eval: %s on %s: greedy accuracy %.4f", o->model, o->data, r.accuracy);
    if (o->pass_k) printf(", pass@%d %.4f (T=%g)", o->pass_k, r.pass_k, o->temperature);
    printf(" (%d problems)\n", r.n);
    free_kvcache(&kv);
    free_dataset(&d);
    free_gpt(&m);
    return 0;
}

/* node_values: for each node of g's tree B(G) (one group), V̂ of its prefix from K fresh continuations
   (mc_estimate_values, one sampler call for every inner node; stream mc_stream(0, member, end)), into
   nums[n].value, the tokens they drew into nums[n].cost (a leaf: its reward, cost −1). Returns what
   they spent. mc must hold a sequence per inner node (notes/credit-assignment.md §3). */
static MCStats node_values(MCPRM *mc, GPT *m, const GroupBatch *g, const GRPOConfig *cfg, NodeNumbers *nums) {
    const PrefixTree *tree = &g->tree;
    int D = 0;
    for (int n = 0; n < tree->num_nodes; n++) {
        const ProcessNode *nd = &tree->nodes[n];
        int i = nd->member;
        nums[n].value = g->reward[i];
        nums[n].cost = -1;
        if (nd->end == g->clen[i]) continue;   // a leaf: the whole completion
        nums[n].cost = D;                      // until mc has estimated it: its row of mc
        int *seq = mc->seq + (size_t)D * mc->maxT;   // mc holds a row per inner node
        memcpy(seq, g->prompt[i], (size_t)g->plen[i] * sizeof(int));
        memcpy(seq + g->plen[i], g->comp_row[i], (size_t)g->clen[i] * sizeof(int));
        mc->state_seq[D] = seq;
        mc->state_len[D] = g->plen[i] + nd->end;
        mc->state_prefix[D] = nd->end;
        mc->state_group[D] = 0;
        mc->state_stream[D] = mc_stream(0, i, nd->end);
        D++;
    }
    mc->num_states = D;
    MCStats st = mc_estimate_values(mc, m, cfg->temperature, (uint64_t)cfg->seed);
    for (int n = 0; n < tree->num_nodes; n++)
        if (nums[n].cost >= 0) {
            nums[n].value = mc->value[nums[n].cost];
            nums[n].cost = mc->state_tokens[nums[n].cost];
        }
    return st;
}

// print_tree: pg's B(G) as text into f, a line per node under its parent: |λ|, R̂, V̂ and its cost
// ("(leaf)" at a leaf), A_λ, the net coefficients under GRPO and λ-GRPO, and the members y(i).
static void print_tree(FILE *f, const PageGroup *pg) {
    const PrefixTree *tree = pg->tree;
    int n_nodes = tree->num_nodes;
    unsigned char *is_last = (unsigned char *)callocCheck(2 * n_nodes + 1, 1), *seen = is_last + n_nodes;
    for (int n = n_nodes - 1; n >= 0; n--) {   // last child: no later node has its parent (seen[p + 1])
        is_last[n] = !seen[tree->nodes[n].parent + 1];
        seen[tree->nodes[n].parent + 1] = 1;
    }
    for (int n = 0; n < n_nodes; n++) {
        const ProcessNode *nd = &tree->nodes[n];
        const NodeNumbers *nn = &pg->nums[n];
        int chain[256], depth = 0;
        for (int a = nd->parent; a >= 0 && depth < 256; a = tree->nodes[a].parent) chain[depth++] = a;
        for (int d = depth - 1; d >= 0; d--) fprintf(f, "%s", is_last[chain[d]] ? "    " : "│   ");
        char text[4096];
        decode(pg->tokens[nd->member] + nd->start, nd->end - nd->start, text, sizeof text);
        int width = 32 - 4 * depth;   // keeps the numbers in one column
        char spent[32] = "(leaf)";
        if (nn->cost >= 0) snprintf(spent, sizeof spent, "(%ld tok)", nn->cost);
        fprintf(f, "%s%-*s |λ|=%-2d R̂=%.3f  V̂=%.3f %-10s A_λ=%+.4f  net %+.4f %+.4f  y(",
                is_last[n] ? "└── " : "├── ", width > 1 ? width : 1, text, nd->size, nd->step_reward, nn->value,
                spent, nd->step_advantage, nn->net[0], nn->net[1]);
        for (int i = 0, m = 0; i < pg->k; i++)
            if (is_member(pg, n, i)) fprintf(f, m++ ? ",%d" : "%d", i + 1);
        fprintf(f, ")\n");
    }
    free(is_last);
}

#define SAMPLE_TRIES 16   // sample without --prompt: validation prompts tried for a mixed group

/* sample_scored_group: g's one group of k completions of prompt (plen tokens, <bos> first) as a training
   step's first step draws it (sample_group), rewarded by task t for the problem nums (n), target. */
static void sample_scored_group(GPT *m, KVCache *kv, GroupBatch *g, const GRPOConfig *cfg, const int *prompt,
                                int plen, const Task *t, const int *nums, int n, int target) {
    for (int i = 0; i < g->N; i++) {
        g->prompt[i] = prompt;
        g->plen[i] = plen;
    }
    sample_group(m, kv, g, cfg, 0, NULL);
    for (int i = 0; i < g->N; i++)
        g->reward[i] = task_reward(t, nums, n, target, g->comp_row[i], g->clen[i], 0.0f);
}

/* choose_sample_prompt: loads --model, then (no --prompt) tries up to SAMPLE_TRIES prompts of o->val_data
   from stream 0x5a3e of --seed, each one's group sampled as cmd_sample does (the same streams): the
   first with mixed rewards, else the last, into o->prompt, said on stdout. */
static void choose_sample_prompt(Options *o, const Task *t, GPT *model) {
    load_task_model(o, o->model, model, 1, NULL);
    Dataset val;
    load_dataset(&val, o->val_data, model->config.max_seq_len, 0, t);
    int k = o->group_size, maxT = model->config.max_seq_len, tries = 0, mixed = 0, line = 0;
    GroupBatch g;
    build_group_batch(&g, 1, k, o->max_new_tokens, 0, 0);
    KVCache kv;
    build_kvcache(&kv, &model->config, k);
    GRPOConfig cfg = grpo_config_from_options(o);
    Rng pick;
    rng_seed(&pick, (uint64_t)o->seed, 0x5a3e);
    while (tries < SAMPLE_TRIES && !mixed) {
        int q = rng_int(&pick, val.n), plen = val.prompt_len[q];
        const int *prompt = val.prompt + (size_t)q * val.maxT;
        decode(prompt + 1, plen - 1, o->prompt, 255);
        line = val.line[q];
        tries++;
        if (plen + o->max_new_tokens > maxT) break;   // cmd_sample names the limit
        sample_scored_group(model, &kv, &g, &cfg, prompt, plen, t, val.nums + (size_t)q * MAX_NUMS,
                            val.num_count[q], val.target[q]);
        mixed = !group_rewards_equal(&g, 0);
    }
    printf("prompt drawn from %s (line %d): ", o->val_data, line);
    if (mixed) printf("the first of %d tried whose group has mixed rewards\n", tries);
    else printf("none of the %d tried had a group with mixed rewards (the model solves all or none of each); "
                "the last one tried\n", tries);
    free_group_batch(&g);
    free_kvcache(&kv);
    free_dataset(&val);
}

static int cmd_sample(int argc, char **argv, Options *o) {
    strcpy(o->model, "runs/sft/model.bin");
    const char *syn = "Samples a group of k completions for one prompt, scores them, and draws the\n"
                      "group's prefix tree B(G) with |λ|, step rewards R̂ (λ-GRPO's implicit value of\n"
                      "each node's prefix), beside V̂ of the same prefix from --mc-k fresh continuations\n"
                      "(MC-PRM's explicit estimate, and the tokens it costs), step advantages A_λ and the\n"
                      "net coefficients GRPO and λ-GRPO give each step's tokens. --html FILE also draws it\n"
                      "as one self-contained page (FILE#grpo, FILE#lambda-grpo choose the colouring).\n"
                      "Without --prompt: a prompt of --val-data whose group has mixed rewards (up to 16 tried).";
    parse_options(argc, argv, CMD_SAMPLE, o, "sample", syn);
    NamedPath outs[1] = {{"--html", o->html_out}}, ins[2] = {{"--model", o->model}, {"--val-data", o->val_data}};
    refuse_inputs_as_outputs(outs, 1, ins, 2);
    if (o->html_out[0]) html_check_path(o->html_out);   // refused now, not after the sampling
    if (o->group_size < 2)   // a_i compares each reward with the group's mean and std
        usage_error("--group-size %d: a group needs at least 2 completions (one has a_i = 0 and B(G) one path)",
                    o->group_size);
    const Task *t = &TASKS[o->task];
    GPT model;
    int chosen = !o->prompt[0];   // the model loads first then, else after the --prompt is read
    if (chosen) choose_sample_prompt(o, t, &model);
    int k = o->group_size, plen = (int)strlen(o->prompt), bad = 0, group_tokens = 0;
    int nums[MAX_NUMS], n, target, prompt[sizeof o->prompt + 1];   // prompt: <bos>, then its tokens
    prompt[0] = TOK_BOS;
    if (encode(o->prompt, plen, prompt + 1, &bad) < 0)
        usage_error("--prompt: character '%c' at position %d is not in the vocabulary \"%s\"", o->prompt[bad],
                    bad + 1, VOCAB_CHARS);
    if (t->parse_prompt(o->prompt, plen, nums, MAX_NUMS, &n, &target) != 0)
        usage_error("--prompt: '%s' is not %s", o->prompt, t->prompt_format);
    if (!chosen) load_task_model(o, o->model, &model, 1, NULL);
    int maxT = model.config.max_seq_len;
    if (1 + plen + o->max_new_tokens > maxT)
        usage_error("--max-new-tokens: %d prompt tokens + %d new tokens exceed the model's context of %d",
                    1 + plen, o->max_new_tokens, maxT);
    // one group of k, through the functions of a training step (its first step's streams)
    GroupBatch g;
    build_group_batch(&g, 1, k, o->max_new_tokens, 0, 0);
    KVCache kv;
    build_kvcache(&kv, &model.config, k);
    GRPOConfig cfg = grpo_config_from_options(o);
    sample_scored_group(&model, &kv, &g, &cfg, prompt, plen + 1, t, nums, n, target);
    compute_advantages(g.advantage, g.reward, 1, g.group_start, &cfg.obj);   // k = 1: a = 0
    TreeStats ts = build_group_trees(&g);
    printf("prompt %s  (k=%d, T=%g, model %s)\n\n", o->prompt, k, o->temperature, o->model);
    for (int i = 0; i < k; i++) {
        char text[4096];
        decode(g.comp_row[i], g.clen[i], text, sizeof text);
        printf("  y(%d)  r=%.0f  a=%+.4f  %s\n", i + 1, g.reward[i], g.advantage[i], text);
        group_tokens += g.clen[i];
    }
    if (group_rewards_equal(&g, 0))
        printf("\nall %d rewards are %g: this group gives no gradient. Every advantage a_i = (r_i - mean)/(std + eps)\n"
               "is 0, so every token's term (a_i times its ratio) is 0 under GRPO and under λ-GRPO alike.\n"
               "For a group with mixed rewards try another --seed or --prompt (without --prompt, sample\n"
               "tries up to %d validation prompts for one).\n", k, g.reward[0], SAMPLE_TRIES);
    // V̂ of each node's prefix from --mc-k fresh continuations (MC-PRM's estimate), beside R̂
    TaskProblems task = {NULL, NULL, nums, n, target, 0.0f, t};
    MCPRM mc;   // a state per node at most (each completion has a token, so the tree has a node)
    build_mcprm(&mc, &model.config, g.tree.num_nodes, o->max_new_tokens, o->mc_k, 0, t->step_end,
                task_outcome_reward, &task, NULL);
    NodeNumbers *node_nums = (NodeNumbers *)mallocCheck((size_t)(g.tree.num_nodes + 1) * sizeof(NodeNumbers));
    PageGroup pg = {0, o->prompt, k, g.comp_row, g.clen, g.reward, g.advantage, 1, &g.tree, g.node_of,
                    g.lambda_size, g.max_new, node_nums};
    node_numbers(&pg);
    MCStats spent = node_values(&mc, &model, &g, &cfg, node_nums);
    printf("\nB(G): %d process steps, mean path depth %.2f, intermediate proportion %.2f\n",
           g.tree.num_nodes, ts.mean_depth, ts.intermediate);
    printf("GRPO pushes each step's tokens |λ| times with A_λ; λ-GRPO once: \"net\" is the coefficient\n"
           "Σ_{i∈λ} w·a_i each objective gives the step's tokens, GRPO's (w = 1) then λ-GRPO's (w = 1/|λ|).\n");
    printf("R̂ and V̂ estimate the same value, the expected reward after the node's prefix: R̂ from the |λ|\n"
           "members that share it (no extra tokens), V̂ from %d fresh continuations (at a leaf, its\n"
           "reward). V̂ of the %d inner nodes cost %ld sampled tokens, %.1fx the group's %d.\n\n<prompt>\n",
           o->mc_k, spent.states, spent.tokens, (double)spent.tokens / (group_tokens > 0 ? group_tokens : 1),
           group_tokens);
    print_tree(stdout, &pg);
    if (o->html_out[0]) {
        char settings[1400];
        snprintf(settings, sizeof settings, "k=%d, T=%g, --max-new-tokens %d, --mc-k %d, --seed %d, model %s; "
                 "advantages: --adv-std %s, --adv-eps %g (the training defaults)", k, o->temperature,
                 o->max_new_tokens, o->mc_k, o->seed, o->model, ADV_STD_NAMES[cfg.obj.adv_std], cfg.obj.adv_eps);
        AtomicFile af;
        FILE *page = html_begin(&af, o->html_out, "sample", o->prompt, o->obj.objective, settings, NULL, 1);
        html_group(page, &pg, NULL, 1);
        html_end(&af);
    }
    free(node_nums);
    free_mcprm(&mc);
    free_group_batch(&g);
    free_kvcache(&kv);
    free_gpt(&model);
    return 0;
}

static int cmd_verify(int argc, char **argv, Options *o) {
    const char *syn = "verify FILE: scores `prompt<TAB>completion` lines with the task's verifier (--task),\n"
                      "printing one reward per line (the format of tests/crosscheck_reasoning_gym.py and\n"
                      "tests/crosscheck_chain_sum.py).";
    int first = parse_options(argc, argv, CMD_VERIFY, o, "verify FILE", syn);
    FILE *f = strcmp(argv[first], "-") ? fopenCheck(argv[first], "r") : stdin;
    char *line = NULL;
    size_t cap = 0;
    long got;
    int lineno = 0;
    // exact length: NUL bytes stay in the text
    while ((got = read_line(f, &line, &cap, 1 << 20, argv[first], lineno + 1)) != -1) {
        lineno++;
        refuse_bom(line, got, argv[first], lineno);
        int len = (int)got;
        if (len > 0 && line[len - 1] == '\n') len--;   // only the line ending is stripped (LF or CRLF)
        if (len > 0 && line[len - 1] == '\r') len--;
        if (len == 0 || line[0] == '#') continue;
        char *tab = (char *)memchr(line, '\t', len);
        int plen = tab ? (int)(tab - line) : len, nums[MAX_NUMS], n, target;
        if (tab && memchr(tab + 1, '\t', len - plen - 1))
            data_error(argv[first], lineno, "more than one TAB: expected `prompt<TAB>completion` (for a file "
                       "from eval --completions: cut -f1,2 FILE)");
        const Task *t = &TASKS[o->task];
        if (t->parse_prompt(line, plen, nums, MAX_NUMS, &n, &target) != 0)
            data_error(argv[first], lineno, "prompt is not %s", t->prompt_format);
        printf("%g\n", t->verify(nums, n, target, tab ? tab + 1 : "", tab ? len - plen - 1 : 0));
    }
    free(line);
    if (f != stdin) fclose(f);
    return 0;
}

// ----------------------------------------------------------------------------
// check: advantages, |λ|, weights, loss and ∂loss/∂logp for a batch dumped from another
// trainer (TRL, verl, the authors' code). The file format is a public interface: see
// README.md "Checking another trainer". It reuses the tree and objective code above.

typedef struct {
    int line;                   // line number in the file
    long group;
    float reward;
    int n;                      // tokens
    int *tokens;
    float *logp, *logp_old, *logp_ref;   // (n) each; NULL when absent
    int truncated;              // truncated=: 1 cut at the trainer's budget without EOS, 0 not, -1 absent
    int pos;                    // its index in cmd_check's order (by group, then line)
} CheckRecord;

// by group id, then file order (a's and b's records: CheckRecord pointers)
static int check_record_cmp(const void *a, const void *b) {
    const CheckRecord *x = *(CheckRecord *const *)a, *y = *(CheckRecord *const *)b;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    return x->line - y->line;
}

// parse_list: a comma-separated list of numbers (ints if is_int) into *out; returns the count (key: its name).
static int parse_list(const char *s, int is_int, void **out, const char *path, int line, const char *key) {
    int n = 0, cap = 1;
    for (const char *c = s; *c; c++) cap += *c == ',';
    *out = mallocCheck((size_t)cap * 4);
    for (; *s; s++) {
        char *end;
        errno = 0;
        if (is_int) {
            long v = strtol(s, &end, 10);
            if (end == s || (*end && *end != ',') || errno)
                data_error(path, line, "token id is not an integer (item %d of %s)", n + 1, key);
            if (v < 0 || v > 2147483647L)
                data_error(path, line, "token id must be a non-negative 32-bit integer (item %d of %s: %ld)",
                           n + 1, key, v);
            ((int *)*out)[n++] = (int)v;
        } else {
            double v = strtod(s, &end);
            if (end == s || (*end && *end != ','))
                data_error(path, line, "number does not parse (item %d of %s)", n + 1, key);
            if (!isfinite(v) || fabs(v) > FLT_MAX)
                data_error(path, line, "number is not finite or outside the float range (|x| <= 3.4e38) (item %d "
                           "of %s)", n + 1, key);
            ((float *)*out)[n++] = (float)v;
        }
        s = end;
        if (*s == 0) break;
        if (s[1] == 0) data_error(path, line, "list ends with ',' in %s", key);
    }
    return n;
}

// read_check_file: every line of a check file (FILE, "-": stdin) as records; errors exit naming FILE:LINE.
static int read_check_file(const char *path, CheckRecord **out) {
    FILE *f = strcmp(path, "-") ? fopenCheck(path, "r") : stdin;
    int cap = 64, n = 0, lineno = 0;
    CheckRecord *recs = (CheckRecord *)mallocCheck(cap * sizeof(CheckRecord));
    char *line = NULL;
    size_t lcap = 0;
    long len;
    while ((len = read_line(f, &line, &lcap, 1L << 24, path, lineno + 1)) != -1) {   // ~a million numbers
        lineno++;
        refuse_bom(line, len, path, lineno);
        if ((size_t)len != strlen(line)) data_error(path, lineno, "NUL byte in line");
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        CheckRecord r = {lineno, 0, 0.0f, -1, NULL, NULL, NULL, NULL, -1, 0};
        static const char *keys[7] = {"group", "reward", "tokens", "logp", "logp_old", "logp_ref", "truncated"};
        float **lists[3] = {&r.logp, &r.logp_old, &r.logp_ref};   // keys[3..5]
        int seen = 0, counts[3];   // seen: bit c for keys[c]
        char *save = NULL;
        for (char *tok = strtok_r(line, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
            char *eq = strchr(tok, '=');
            if (!eq) data_error(path, lineno, "expected key=value, got: %s", tok);
            *eq = 0;
            char *val = eq + 1, *end;
            int c = 0;
            while (c < 7 && strcmp(tok, keys[c])) c++;
            if (c == 7)
                data_error(path, lineno, "unknown key (expected group, reward, tokens, logp, logp_old, logp_ref, "
                           "truncated): %s", tok);
            if (c == 0) {
                errno = 0;
                r.group = strtol(val, &end, 10);
                if (end == val || *end || errno) data_error(path, lineno, "group is not an integer: %s", val);
            } else if (c == 1) {
                double v = strtod(val, &end);
                if (end == val || *end) data_error(path, lineno, "reward does not parse: %s", val);
                if (!isfinite(v) || fabs(v) > FLT_MAX)
                    data_error(path, lineno, "reward is not finite or outside the float range "
                               "(|x| <= 3.4e38): %s", val);
                r.reward = (float)v;
            } else if (c == 2) {
                r.n = parse_list(val, 1, (void **)&r.tokens, path, lineno, "tokens");
            } else if (c < 6) {
                counts[c - 3] = parse_list(val, 0, (void **)lists[c - 3], path, lineno, keys[c]);
            } else {
                if (strcmp(val, "0") && strcmp(val, "1"))
                    data_error(path, lineno, "truncated must be 0 or 1, got: %s", val);
                r.truncated = val[0] == '1';
            }
            if (seen >> c & 1) data_error(path, lineno, "key given twice: %s", tok);
            seen |= 1 << c;
        }
        if (!seen) continue;   // blank or comment-only line
        for (int c = 0; c < 3; c++)
            if (!(seen >> c & 1))
                data_error(path, lineno, "missing required key: %s", c < 2 ? keys[c] :
                           "tokens (use `tokens=` for an empty completion)");
        for (int c = 0; c < 3; c++)
            if (seen >> (c + 3) & 1 && counts[c] != r.n)
                data_error(path, lineno, "%s has %d numbers, tokens has %d", keys[c + 3], counts[c], r.n);
        for (int c = 0; c < 3; c++)   // a log-probability is at most 0 (up to a trainer's float rounding)
            for (int t = 0; seen >> (c + 3) & 1 && t < r.n; t++)
                if ((*lists[c])[t] > 1e-6f)
                    data_error(path, lineno, "%s's number %d is %g: a log-probability is <= 0", keys[c + 3],
                               t + 1, (*lists[c])[t]);
        if (n == cap) {
            cap *= 2;
            recs = (CheckRecord *)realloc(recs, cap * sizeof(CheckRecord));
            if (!recs) data_error(path, lineno, "out of memory");
        }
        recs[n++] = r;
    }
    free(line);
    if (f != stdin) fclose(f);
    if (n == 0)   // an empty file has no line 0: its line 1 is named
        data_error(path, lineno > 0 ? lineno : 1, "no completions in file%s", lineno > 0 ? "" : " (it is empty)");
    *out = recs;
    return n;
}

/* check_write_html: the --html page of check's batch (advantages done): each group's tree in group-id order,
   built again (the batch keeps only the last), completions y1..yk in file order (sorted[a] is a), no V̂. */
static void check_write_html(const Options *o, const char *path, GroupBatch *batch, CheckRecord *const *sorted,
                             const GRPOConfig *cfg) {
    TokenNames tn = {NULL, 0};
    if (o->token_names[0]) load_token_names(&tn, o->token_names);
    char settings[1400];
    snprintf(settings, sizeof settings, "--objective %s (the page opens with it), --adv-std %s, --adv-std-scope %s, "
             "--adv-eps %g%s%s", OBJECTIVE_NAMES[cfg->obj.objective], ADV_STD_NAMES[cfg->obj.adv_std],
             SCOPE_NAMES[cfg->obj.adv_std_scope], cfg->obj.adv_eps, o->token_names[0] ? ", --token-names " : "",
             o->token_names);
    AtomicFile af;
    FILE *page = html_begin(&af, o->html_out, "check", path, cfg->obj.objective, settings,
                            "V&#770; is not drawn: check reads a dumped batch and has no model to sample "
                            "continuations from (<code>./grpo sample --mc-k K --html</code> draws it); nor a "
                            "verifier's verdict: the rewards are the file's.", 0);
    int stride = batch->max_new;   // a group of k has at most 2k - 1 nodes
    NodeNumbers *nums = (NodeNumbers *)mallocCheck((size_t)2 * (batch->N + 1) * sizeof(NodeNumbers));
    for (int p = 0; p < batch->num_groups; p++) {
        int first = batch->group_start[p], k = batch->group_start[p + 1] - first;
        size_t row = (size_t)first * stride;
        build_prefix_tree(&batch->tree, batch->comp_row + first, batch->clen + first, k, batch->reward + first,
                          batch->advantage + first, batch->lambda_size + row, batch->node_of + row, stride);
        char label[64];
        snprintf(label, sizeof label, "group %ld", sorted[first]->group);
        PageGroup pg = {sorted[first]->group, label, k, batch->comp_row + first, batch->clen + first,
                        batch->reward + first, batch->advantage + first, 0, &batch->tree,
                        batch->node_of + row, batch->lambda_size + row, stride, nums};
        node_numbers(&pg);
        html_group(page, &pg, &tn, p == 0);
    }
    html_end(&af);
    free(nums);
    for (int i = 0; i < tn.n; i++) free(tn.name[i]);
    free(tn.name);
}

/* refuse_check_records: exits naming the first line (data_error) of what check cannot run on: a group of
   one under a group std, and each rule below. rec: file order; sorted, starts: cmd_check's G groups. */
static void refuse_check_records(const char *path, const CheckRecord *rec, int N, CheckRecord *const *sorted,
                                 const int *starts, int G, const ObjectiveConfig *obj, int mask_truncated) {
    for (int g = 0; g < G; g++)
        if (starts[g + 1] - starts[g] < 2 && obj->adv_std != STD_NONE && obj->adv_std_scope == SCOPE_GROUP)
            data_error(path, sorted[starts[g]]->line, "group of size 1 (group %ld has one completion; --adv-std "
                       "%s needs k >= 2, or use --adv-std none)", sorted[starts[g]]->group,
                       ADV_STD_NAMES[obj->adv_std]);
    // a missing logp is taken as 0 below: the kl column (and with β != 0 the loss), or with logp_old
    // a ratio, from an invented logp. Masking needs the trainer's own verdict: only it knows its EOS
    // ids and its budget. Each rule in turn, named by the first line that breaks it.
    static const char *rule[4] = {
        "logp_ref is required when --beta is not 0",
        "logp_ref given without logp: the KL (the kl column, and the loss when --beta is not 0) needs the policy's "
        "log-probs (logp=...)",
        "logp_old given without logp: the ratio exp(logp - logp_old) needs the policy's log-probs (logp=...)",
        "truncated=0|1 is required when --mask-truncated is 1"};
    for (int c = 0; c < 4; c++)
        for (const CheckRecord *r = rec; r < rec + N; r++)
            if (c == 0 ? obj->beta != 0.0f && !r->logp_ref : c == 1 ? r->logp_ref && !r->logp :
                c == 2 ? r->logp_old && !r->logp : mask_truncated && r->truncated < 0)
                data_error(path, r->line, "%s", rule[c]);
}

static int cmd_check(int argc, char **argv, Options *o) {
    o->max_new_tokens = 1024;
    const char *syn = "check FILE: runs one batch dumped from another trainer through grpo.c's tree and\n"
                      "objective code. FILE ('-' for stdin) has one completion per line of key=value\n"
                      "fields: group=<int> reward=<num> tokens=<id,...> [logp=...] [logp_old=...]\n"
                      "[logp_ref=...] [truncated=0|1]. Prints one tab-separated row per token and\n"
                      "'loss <value>'. --mask-truncated 1 gives the lines with truncated=1 no loss.\n"
                      "--html OUT also draws each group's tree B(G) as one self-contained page (names\n"
                      "from --token-names; the paper's example: notes/examples/letters.txt).";
    int first = parse_options(argc, argv, CMD_CHECK, o, "check FILE", syn);
    if (o->token_names[0] && !o->html_out[0])
        usage_error("--token-names %s names tokens on the --html page only; add --html OUT", o->token_names);
    NamedPath outs[1] = {{"--html", o->html_out}}, ins[2] = {{"FILE", argv[first]}, {"--token-names", o->token_names}};
    refuse_inputs_as_outputs(outs, 1, ins, 2);
    if (o->html_out[0]) html_check_path(o->html_out);   // refused before the file is read
    if (o->obj.objective == OBJ_MC_PRM || o->obj.objective == OBJ_PPO)
        usage_error("--objective %s: check runs the GRPO objectives on a dumped batch, with no model to sample "
                    "V̂ from nor critic values (use grpo or lambda-grpo; ./grpo sample prints V̂ beside R̂)",
                    OBJECTIVE_NAMES[o->obj.objective]);
    GRPOConfig cfg = grpo_config_from_options(o);
    const char *path = argv[first];
    CheckRecord *rec;
    int N = read_check_file(path, &rec);
    CheckRecord **sorted = (CheckRecord **)mallocCheck(N * sizeof(CheckRecord *));
    for (int i = 0; i < N; i++) sorted[i] = &rec[i];
    qsort(sorted, N, sizeof(CheckRecord *), check_record_cmp);
    for (int a = 0; a < N; a++) sorted[a]->pos = a;
    int *starts = (int *)mallocCheck((N + 1) * sizeof(int)), G = 0;
    for (int a = 0; a < N; a++) if (a == 0 || sorted[a]->group != sorted[a - 1]->group) starts[G++] = a;
    starts[G] = N;
    refuse_check_records(path, rec, N, sorted, starts, G, &cfg.obj, o->mask_truncated);
    // the batch as a training step holds it: completion a is sorted[a], rows as long as the longest
    int maxlen = 1;
    for (int i = 0; i < N; i++) if (rec[i].n > maxlen) maxlen = rec[i].n;
    GroupBatch batch;
    build_group_batch_starts(&batch, G, starts, maxlen, 0, 0);
    batch.step_adv = (float *)callocCheck((size_t)N * maxlen, sizeof(float));
    for (int a = 0; a < N; a++) {
        const CheckRecord *r = sorted[a];
        memcpy(batch.comp + (size_t)a * maxlen, r->tokens, (size_t)r->n * sizeof(int));
        batch.clen[a] = r->n;
        batch.reward[a] = r->reward;
        batch.truncated[a] = (unsigned char)(r->truncated == 1);
    }
    // then the phases of a training step: advantages, trees, per-token preparation, the loss
    compute_advantages(batch.advantage, batch.reward, G, batch.group_start, &cfg.obj);
    build_group_trees(&batch);
    UpdateStats stats;
    grpo_prepare_tokens(&batch, &cfg, &stats);
    if (cfg.obj.loss_agg == AGG_SEQ_MEAN_TOKEN_SUM_NORM && maxlen > cfg.obj.max_new_tokens)
        fprintf(stderr, "warning: %s: a completion has %d tokens, more than --max-new-tokens %d (the Dr. "
                        "GRPO constant); pass your trainer's budget\n", path, maxlen, cfg.obj.max_new_tokens);
    double *line_loss = (double *)mallocCheck(N * sizeof(double));   // each completion's term of the loss
    double loss = 0.0;
    for (int a = 0; a < N; a++) {
        const CheckRecord *r = sorted[a];
        size_t row = (size_t)a * maxlen;
        const float *logp = r->logp ? r->logp : batch.logp + row;   // missing logp: 0 (calloc'd, unused)
        const float *logp_old = r->logp_old ? r->logp_old : logp;   // missing logp_old: ratio 1
        TokenLossOut out = {batch.dlogp + row, batch.ratio + row, batch.kl + row, NULL};
        line_loss[a] = grpo_token_loss(&cfg.obj, batch.clen[a], logp, logp_old, r->logp_ref,
                                       batch.adv_tok + row, batch.weight + row, batch.coef + row, &out);
        loss += line_loss[a];
    }
    // in file order: finite inputs can still overflow float32 (rewards far apart, logp far from
    // logp_old or logp_ref): an inf or NaN in the output is the first offending line's error
    for (int i = 0; i < N; i++) {
        int a = rec[i].pos;
        size_t row = (size_t)a * maxlen;
        const char *none = "(outputs must be finite; nothing was printed)";
        if (!isfinite(batch.advantage[a]))
            data_error(path, rec[i].line, "advantage is %g: the group's rewards are too far apart for float32 %s",
                       batch.advantage[a], none);
        const float *column[3] = {batch.ratio, batch.kl, batch.dlogp};
        static const char *column_name[3] = {"ratio", "kl", "dloss_dlogp"};
        for (int t = 0; t < batch.clen[a]; t++)
            for (int c = 0; c < 3; c++)
                if (!isfinite(column[c][row + t]))
                    data_error(path, rec[i].line, "%s at t=%d is %g: float32 overflows (logp far from logp_old "
                               "or logp_ref, or rewards far apart) %s", column_name[c], t, column[c][row + t], none);
        if (!isfinite(line_loss[a]))
            data_error(path, rec[i].line, "its term of the loss is %g %s", line_loss[a], none);
    }
    printf("line\tgroup\tt\ttoken\tlambda_size\tweight\tadvantage\tstep_advantage\tratio\tkl\tdloss_dlogp\n");
    for (int i = 0; i < N; i++) {
        int a = rec[i].pos;
        size_t row = (size_t)a * maxlen;
        for (int t = 0; t < batch.clen[a]; t++) {
            size_t at = row + t;
            printf("%d\t%ld\t%d\t%d\t%d\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\n", rec[i].line, rec[i].group, t,
                   rec[i].tokens[t], batch.lambda_size[at], batch.weight[at], batch.advantage[a],
                   batch.step_adv[at], batch.ratio[at], batch.kl[at], batch.dlogp[at]);
        }
    }
    printf("loss\t%.9g\n", loss);
    if (o->html_out[0]) check_write_html(o, path, &batch, sorted, &cfg);
    for (int i = 0; i < N; i++) {
        free(rec[i].tokens);
        free(rec[i].logp);
        free(rec[i].logp_old);
        free(rec[i].logp_ref);
    }
    free(rec);
    free(sorted);
    free(starts);
    free_group_batch(&batch);
    free(line_loss);
    return 0;
}

// ----------------------------------------------------------------------------
// bench: training and sampling throughput of the model (make bench compares with PyTorch)

// BenchBatch: bench's fixed training batch, B x T random tokens and targets; dlogp: mean log-loss's gradient
typedef struct {
    int B, T;
    int *inputs, *targets;   // (B·T); inputs starts the batch's one allocation: free(inputs) frees it
    float *logp, *dlogp;     // (B·T)
} BenchBatch;

static void build_bench_batch(BenchBatch *b, int B, int T, Rng *rng) {
    size_t n = (size_t)B * T;
    int *mem = (int *)mallocCheck(4 * n * sizeof(int));   // one allocation: 2 int, 2 float arrays
    *b = (BenchBatch){B, T, mem, mem + n, (float *)(mem + 2 * n), (float *)(mem + 3 * n)};
    for (size_t i = 0; i < n; i++) {
        b->inputs[i] = rng_int(rng, VOCAB_SIZE);
        b->targets[i] = rng_int(rng, VOCAB_SIZE);
        b->dlogp[i] = -1.0f / (B * T);
    }
}

/* time_train_steps: the tokens/s of `steps` training steps of m on b (forward, log-probs, backward,
   clipping, AdamW steps t, t + 1, ...) after `warm` untimed ones. */
static double time_train_steps(GPT *m, const BenchBatch *b, const AdamWConfig *opt, int t, int warm,
                               int steps) {
    int BT = b->B * b->T;
    double t0 = 0;
    for (int it = 0; it < warm + steps; it++) {
        if (it == warm) t0 = wall_seconds();
        gpt_forward(m, b->inputs, b->B, b->T);
        gpt_logprob_forward(m, b->logp, b->targets, BT, 1.0f, NULL);
        gpt_zero_grad(m);
        gpt_logprob_backward(m, b->targets, b->dlogp, BT, 1.0f);
        gpt_backward(m, b->inputs);
        clip_grad_norm(m, 1.0f);
        adamw_update(m, opt, 1e-4f, t + it);
    }
    gpu_synchronize(m);   // the GPU runs behind the host: wait for the last step
    return (double)BT * steps / (wall_seconds() - t0);
}

/* read_bench_groups: the groups of path (eval --completions' format; '#' lines are comments; lines with
   one prompt in a row form a group) into g (<= max_seqs completions of max_new tokens), the prompts' tokens
   into prompts (max_seqs, maxT). Returns the completions; 0 (g not built): no such file, or no fit. */
static int read_bench_groups(const char *path, GroupBatch *g, int *prompts, int max_seqs, int max_new,
                             int maxT) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0, groups = 0, fits = 1, cbuf[512];
    int *starts = (int *)mallocCheck(((size_t)max_seqs + 1) * sizeof(int));
    // pass 0 checks every line and finds the groups (then g is built), pass 1 fills g
    for (int pass = 0; pass < 2 && fits && (pass == 0 || n > 0); pass++) {
        char line[512], last_prompt[512] = "";
        rewind(f);
        for (n = 0; fgets(line, sizeof line, f);) {
            if (line[0] == '#' || line[0] == '\n') continue;
            char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
            char *t3 = t2 ? strchr(t2 + 1, '\t') : NULL;
            if (!t3 || n == max_seqs) { fits = 0; break; }
            *t1 = *t2 = *t3 = 0;
            int pl = (int)strlen(line), cl = (int)(t2 - t1 - 1), eos = !strncmp(t3 + 1, "eos", 3), bad;
            if (1 + pl + cl + eos > maxT || cl + eos > max_new || cl + eos == 0) { fits = 0; break; }
            int *pr = prompts + (size_t)n * maxT, *c = pass ? g->comp + (size_t)n * max_new : cbuf;
            pr[0] = TOK_BOS;
            if (encode(line, pl, pr + 1, &bad) < 0 || encode(t1 + 1, cl, c, &bad) < 0) { fits = 0; break; }
            if (eos) c[cl] = TOK_EOS;
            if (pass == 0 && strcmp(line, last_prompt)) starts[groups++] = n;
            snprintf(last_prompt, sizeof last_prompt, "%s", line);
            if (pass == 1) {
                g->prompt[n] = pr;
                g->plen[n] = 1 + pl;
                g->clen[n] = cl + eos;
                g->reward[n] = (float)atof(t2 + 1);
            }
            n++;
        }
        if (pass == 0 && fits && n > 0) {
            starts[groups] = n;
            build_group_batch_starts(g, groups, starts, max_new, n, maxT);
        }
    }
    fclose(f);
    free(starts);
    return fits ? n : 0;
}

/* fma_peak_gflops: one core's fp32 FMA throughput as this build compiles it, GFLOP/s: x = x·a + b in
   12 independent chains of 16 floats, the best of 9 timings of ~15 ms (~0.15 s in all). */
static double fma_peak_gflops(void) {
    enum { CHAINS = 12, LANES = 16 };
    float x[CHAINS][LANES];
    for (int c = 0; c < CHAINS; c++)
        for (int j = 0; j < LANES; j++) x[c][j] = 0.001f * (c * LANES + j);
    volatile float va = 0.999999f, vb = 1e-7f;   // volatile: not folded at compile time
    float a = va, b = vb;
    long iters = 8000000;
    double dt = 1e30;
    for (int rep = 0; rep < 9; rep++) {
        double t0 = wall_seconds();
        for (long n = 0; n < iters; n++)
            #pragma GCC unroll 12
            for (int c = 0; c < CHAINS; c++)
                #pragma omp simd
                for (int j = 0; j < LANES; j++) x[c][j] = x[c][j] * a + b;
        double t = wall_seconds() - t0;
        if (t < dt) dt = t;
    }
    float sum = 0.0f;
    for (int c = 0; c < CHAINS; c++)
        for (int j = 0; j < LANES; j++) sum += x[c][j];
    __asm__ __volatile__("" : : "g"(sum));
    return 2.0 * CHAINS * LANES * (double)iters / dt / 1e9;
}

// qsort's comparison of two doubles, ascending (bench's timings)
static int double_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* time_sampling: new tokens/s of sample_completions (T = 1), the median of 5 calls after a warm-up, on
   np prompts of len random tokens (bos: the first is <bos>) drawn from rng, copies rows each (np·copies
   <= 128 rows, each drawing the same completion every call: stream (seed, stream0 + b)), max_new new
   tokens; allowed: the sampler's mask (NULL: all). */
static double time_sampling(GPT *m, Rng *rng, int np, int copies, int len, int bos, int max_new,
                            uint64_t seed, int stream0, const unsigned char *allowed) {
    int B = np * copies, plen[128], clen[128];
    int *prompts = (int *)mallocCheck((size_t)np * len * sizeof(int));
    int *comp = (int *)mallocCheck((size_t)B * max_new * sizeof(int));
    float *lp = (float *)mallocCheck((size_t)B * max_new * sizeof(float));
    const int *pp[128];
    for (int i = 0; i < np * len; i++) prompts[i] = bos && i % len == 0 ? TOK_BOS : rng_int(rng, VOCAB_SIZE);
    for (int b = 0; b < B; b++) {
        pp[b] = prompts + (size_t)(b / copies) * len;
        plen[b] = len;
    }
    KVCache kv;
    build_kvcache(&kv, &m->config, B);
    Rng rngs[128];
    double s[5];
    for (int it = 0; it <= 5; it++) {
        for (int b = 0; b < B; b++) rng_seed(&rngs[b], seed, stream0 + b);
        double t0 = wall_seconds();
        sample_completions(m, &kv, B, pp, plen, max_new, 1.0f, 0, rngs, allowed, comp, lp, clen);
        if (it > 0) s[it - 1] = wall_seconds() - t0;
    }
    long tokens = 0;
    for (int b = 0; b < B; b++) tokens += clen[b];
    free_kvcache(&kv);
    free(prompts);
    free(comp);
    free(lp);
    qsort(s, 5, sizeof *s, double_cmp);
    return tokens / s[2];
}

/* time_grpo_updates: grpo_update of m on tests/fixtures/bench_groups.txt's groups, a warm-up then 5 of
   each layout (padded, then tree-packed when layouts is 2), alternating, into ms[layout] (sorted); the
   padded length and the packed rows into *T and *rows. Returns the completions, 0 when none fit. */
static int time_grpo_updates(GPT *m, const AdamWConfig *opt, int layouts, double ms[2][5], int *T,
                             int *rows) {
    GroupBatch g;
    int maxT = m->config.max_seq_len;
    int *prompts = (int *)mallocCheck((size_t)128 * maxT * sizeof(int));
    int n = read_bench_groups("tests/fixtures/bench_groups.txt", &g, prompts, 128, 26, maxT);
    if (n > 0) {
        *T = make_batch(g.inputs, g.targets, n, g.prompt, g.plen, g.comp_row, g.clen);
        *rows = pack_shared_prefix_batch(g.spb, n, g.prompt, g.plen, g.comp_row, g.clen);
        Options def;   // a step's advantages and update with the defaults
        default_options(&def);
        GRPOConfig cfg = grpo_config_from_options(&def);
        cfg.obj.max_new_tokens = 26;
        compute_advantages(g.advantage, g.reward, g.num_groups, g.group_start, &cfg.obj);
        build_group_trees(&g);
        int adam = 0;
        UpdateStats us;
        for (int it = 0; it < 6; it++)
            for (int lay = 0; lay < layouts; lay++) {
                cfg.update_layout = lay;
                double t1 = wall_seconds();
                grpo_update(m, NULL, &g, &cfg, opt, &adam, NULL, &us);
                gpu_synchronize(m);
                if (it > 0) ms[lay][it - 1] = 1e3 * (wall_seconds() - t1);
            }
        for (int lay = 0; lay < layouts; lay++) qsort(ms[lay], 5, sizeof(double), double_cmp);
        free_group_batch(&g);
    }
    free(prompts);
    return n;
}

#ifdef GRPO_CUDA
/* bench_cuda_products: the cuBLAS products of one training step of m on b (AdamW steps from
   o->steps + 4 on) timed inside the step, then alone, printed beside the step's time (from
   train_tok_s); with --kernel-times the kernels of 3 more steps. */
static void bench_cuda_products(GPT *m, const BenchBatch *b, const AdamWConfig *opt, const Options *o,
                                double train_tok_s) {
    cuda_time_sgemm = 1;
    cuda_sgemm_seconds = 0.0;
    time_train_steps(m, b, opt, 4 + o->steps, 0, 1);
    cuda_synchronize();
    cuda_time_sgemm = 0;
    int BT = b->B * b->T, Ci = o->channels, Li = o->layers, reps = 20;
    double per_layer = cuda_time_sgemms(BT, Ci, 3 * Ci, reps) + cuda_time_sgemms(BT, Ci, Ci, reps) +
                       cuda_time_sgemms(BT, Ci, 4 * Ci, reps) + cuda_time_sgemms(BT, 4 * Ci, Ci, reps);
    double alone = Li * per_layer + cuda_time_sgemms(BT, Ci, VOCAB_SIZE, reps);
    // 3 products of 2·N·C·OC per matmul
    double mm_flops = 6.0 * BT * ((double)Li * 12 * Ci * Ci + (double)Ci * VOCAB_SIZE);
    printf("sgemm  %.3f ms of matmul products (cuBLAS) per training step (%.0f GFLOP/s); the same "
           "products alone: %.3f ms (%.0f GFLOP/s): %.0f%% of isolated cuBLAS; the step takes %.3f ms\n",
           cuda_sgemm_seconds * 1e3, mm_flops / cuda_sgemm_seconds / 1e9, alone * 1e3,
           mm_flops / alone / 1e9, 100.0 * alone / cuda_sgemm_seconds, 1e3 * BT / train_tok_s);
    if (o->kernel_times) {
        cuda_kernel_times_start();
        time_train_steps(m, b, opt, 5 + o->steps, 0, 3);
        cuda_kernel_times_report(stdout, 3);
    }
}
#endif

static int cmd_bench(int argc, char **argv, Options *o) {
    set_defaults(o, "batch-size 16 steps 10");   // bench's own
    const char *syn = "Training throughput (forward + backward + AdamW on a fixed B x maxT batch), with its\n"
                      "GFLOP/s against the fp32 FMA peak measured here, and sampling throughput (64\n"
                      "sequences, 8-token prompt, KV cache, to maxT; the median of 5 calls).\n"
                      "Then the training step at the GRPO update's shape (128 x 37), and the GRPO update\n"
                      "(grpo_update) on 8 x 16 sampled completions (tests/fixtures/bench_groups.txt),\n"
                      "padded and tree-packed (--update-layout), 5 times each, alternating.\n"
                      "Last line: 'bench train_tok_s=... sample_tok_s=... gflops=... update_tok_s=...\n"
                      "update_gflops=... [peak_gflops=...] [update_padded_ms=... update_tree_ms=...\n"
                      "update_seqs=... update_T=... update_rows=...] threads=...'.";
    parse_options(argc, argv, CMD_BENCH, o, "bench", syn);
    int B = o->batch_size, T = o->context, S = 64, P = 8;
    if (T < P + 1)
        usage_error("--context %d: bench samples after an %d-token prompt, so it needs at least %d",
                    T, P, P + 1);
    GPT m;
    build_gpt(&m, (GPTConfig){T, VOCAB_SIZE, o->layers, o->heads, o->channels}, B, o->seed);
    Rng rng;
    rng_seed(&rng, o->seed, 3);
    BenchBatch bb, ub;
    build_bench_batch(&bb, B, T, &rng);
    AdamWConfig opt = {1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0, 1000, 2, 1.0f};
    double train_tok_s = time_train_steps(&m, &bb, &opt, 1, 3, o->steps);
    double gflops = train_tok_s * 3.0 * model_flops_per_token(&m.config) / 1e9;
    double peak = m.on_device ? 0.0 : fma_peak_gflops();   // one core's; the step runs on num_threads() of them
    // the same step at the shape of the main job's GRPO update: 8 prompts x 16 completions,
    // sequences of up to 37 tokens (11-token prompt, 26 new), on a model of the same size
    int UB = 128, UT = imin(37, T);
    GPT mu;
    build_gpt(&mu, m.config, UB, o->seed);
    build_bench_batch(&ub, UB, UT, &rng);
    double update_tok_s = time_train_steps(&mu, &ub, &opt, 1, 1, imax(3, o->steps / 2));
    GPTConfig ucfg = m.config;   // FLOPs per token at the update's length (attention's 2·L·UT·C)
    ucfg.max_seq_len = UT;
    double update_gflops = update_tok_s * 3.0 * model_flops_per_token(&ucfg) / 1e9;
    int layouts = mu.on_device ? 1 : 2;   // padded, then the shared-prefix batch (tree): the CPU's only
    double rg_ms[2][5];   // sorted: [0] the fastest, [2] the median, [4] the slowest
    int rg_T = 0, rg_rows = 0, rg_n = time_grpo_updates(&mu, &opt, layouts, rg_ms, &rg_T, &rg_rows);
    free(ub.inputs);
    free_gpt(&mu);
    // sampling: eos masked so every sequence runs to the end of the context
    unsigned char allowed[VOCAB_SIZE];
    for (int v = 0; v < VOCAB_SIZE; v++) allowed[v] = v != TOK_EOS;
    double sample_tok_s = time_sampling(&m, &rng, S, 1, P, 0, T - P, o->seed, 100, allowed);
    // sampling the way a GRPO step does: 8 prompts x 16 completions that stop at <eos> (the
    // sampler feeds each prompt once and drops finished sequences from the decode step)
    int gnew = imin(26, T - 12);
    double grpo_tok_s = gnew >= 1 ? time_sampling(&m, &rng, 8, 16, 12, 1, gnew, o->seed, 200, NULL) : 0.0;
    printf("# model: %zu parameters (L=%d NH=%d C=%d maxT=%d), train batch %dx%d, sample batch %d\n",
           m.num_parameters, o->layers, o->heads, o->channels, T, B, T, S);
#ifdef GRPO_CUDA
    printf("train  %10.0f tokens/s  (%.2f GFLOP/s on the GPU, TF32 %s)\n", train_tok_s, gflops,
           o->tf32 ? "on" : "off");
    printf("update %10.0f tokens/s  (%.2f GFLOP/s): the same step at the GRPO update's shape, %d x %d\n",
           update_tok_s, update_gflops, UB, UT);
#else
    printf("train  %10.0f tokens/s  (%.2f GFLOP/s: %.0f%% of the fp32 peak measured, %d x %.1f GFLOP/s "
           "of FMAs per core)\n", train_tok_s, gflops, 100.0 * gflops / (num_threads() * peak), num_threads(),
           peak);
    printf("update %10.0f tokens/s  (%.2f GFLOP/s, %.0f%% of peak): the same step at the GRPO update's "
           "shape, %d x %d\n", update_tok_s, update_gflops, 100.0 * update_gflops / (num_threads() * peak), UB,
           UT);
#endif
    if (rg_n > 0) {
        printf("update %10.1f ms per GRPO update [%.1f-%.1f], padded: %d sampled completions "
               "(tests/fixtures/bench_groups.txt), %d x %d = %d positions\n",
               rg_ms[0][2], rg_ms[0][0], rg_ms[0][4], rg_n, rg_n, rg_T, rg_n * rg_T);
        if (layouts == 2)
            printf("update %10.1f ms per GRPO update [%.1f-%.1f], tree-packed: %d rows (%.2f of padded): "
                   "%.2fx the padded\n", rg_ms[1][2], rg_ms[1][0], rg_ms[1][4], rg_rows,
                   (double)rg_rows / (rg_n * rg_T), rg_ms[0][2] / rg_ms[1][2]);
    } else {
        printf("update: tests/fixtures/bench_groups.txt not found or does not fit this model: "
               "no GRPO update lines (run from the repository root)\n");
    }
    printf("sample %10.0f new tokens/s\n", sample_tok_s);
    if (gnew >= 1)
        printf("sample %10.0f new tokens/s as in a GRPO step (8 prompts x 16, <= %d new tokens, to <eos>)\n",
               grpo_tok_s, gnew);
#ifdef GRPO_CUDA
    if (m.on_device) bench_cuda_products(&m, &bb, &opt, o, train_tok_s);
#endif
    printf("bench train_tok_s=%.1f sample_tok_s=%.1f gflops=%.2f update_tok_s=%.1f update_gflops=%.2f ",
           train_tok_s, sample_tok_s, gflops, update_tok_s, update_gflops);
    if (!m.on_device) printf("peak_gflops=%.1f ", peak);
    if (rg_n > 0 && layouts == 2)
        printf("update_padded_ms=%.2f update_tree_ms=%.2f update_seqs=%d update_T=%d update_rows=%d ",
               rg_ms[0][2], rg_ms[1][2], rg_n, rg_T, rg_rows);
    printf("threads=%d\n", num_threads());
    free(bb.inputs);
    free_gpt(&m);
    return 0;
}

// ----------------------------------------------------------------------------
// compare: methods x seeds at one budget, from one SFT checkpoint (the compute-matched protocol). The
// study's directory and what compare needs from train: notes/compare.md. Runs are child processes of
// this binary (/proc/self/exe train ... --threads 1), up to --jobs at once; a run with `done` (written
// last, once its files check out) is never redone, one without it is rerun from scratch.

#define CMP_MAX_METHODS 16
#define CMP_MAX_OPTS 16
#define CMP_MAX_POINTS 64
// the most steps a compare run may take: the top of train's --steps range (OPTIONS); a run whose
// budget is not in steps gets it as --steps, a cap its budget stops it long before
static int cmp_steps_cap(void) { return (int)find_option("steps")->max; }
#define CMP_MAX_ARGS 161   // a run's argv: the program's name and at most 160 words after it

// ---- statistics

// lentz_guard: v kept away from 0 (the modified Lentz method's guard against a zero denominator)
static double lentz_guard(double v) { return fabs(v) < 1e-300 ? 1e-300 : v; }

// beta_fraction: the continued fraction of I_x(a, b) (modified Lentz; Numerical Recipes §6.4)
static double beta_fraction(double a, double b, double x) {
    double c = 1.0, d = 1.0 / lentz_guard(1.0 - (a + b) * x / (a + 1.0)), h = d;
    for (int j = 2; j <= 200001; j++) {   // the terms of m = j / 2: its even one, then its odd one
        int m = j / 2;
        double aa = j % 2 ? -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))
                          : m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / lentz_guard(1.0 + aa * d);
        c = lentz_guard(1.0 + aa / c);
        h *= d * c;
        if (j % 2 && fabs(d * c - 1.0) < 1e-15) break;
    }
    return h;
}

// incomplete_beta: the regularized I_x(a, b), by beta_fraction on the side of x where it converges fast
static double incomplete_beta(double a, double b, double x) {
    if (x <= 0.0) return 0.0;
    if (x >= 1.0) return 1.0;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_fraction(a, b, x) / a;
    return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
}

// t_tail2: P(|T| > t) for Student's t with df degrees of freedom: a t statistic's two-sided p
static double t_tail2(double t, double df) { return incomplete_beta(df / 2.0, 0.5, df / (df + t * t)); }

// t_quantile: the t > 0 with P(|T| > t) = p2, df >= 1 (NaN below), by bisection on t_tail2 to 1e-12
static double t_quantile(double p2, double df) {
    if (!(df >= 1.0)) return NAN;
    double lo = 0.0, hi = 1e4;   // P(|T| > 1e4) < 1e-4 for every df >= 1
    while (hi - lo > 1e-12) {
        double t = 0.5 * (lo + hi);
        if (t_tail2(t, df) > p2) lo = t;
        else hi = t;
    }
    return 0.5 * (lo + hi);
}

typedef struct {
    int n;
    double mean, sd;    // sd: sample standard deviation (n − 1); NaN for n < 2
    double half;        // half-width of the 95% interval mean ± t(0.975, n−1)·sd/√n; NaN for n < 2
} MeanCI;

// mean_ci: mean, sample sd and the 95% Student-t half-width of x (n values, e.g. one per seed)
static MeanCI mean_ci(const double *x, int n) {
    MeanCI r = {n, NAN, NAN, NAN};
    if (n < 1) return r;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += x[i];
    r.mean = sum / n;
    if (n < 2) return r;
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (x[i] - r.mean) * (x[i] - r.mean);
    r.sd = sqrt(ss / (n - 1));
    r.half = t_quantile(0.05, n - 1) * r.sd / sqrt((double)n);
    return r;
}

typedef struct {
    MeanCI d;           // of the differences a_i − b_i
    int favour_a, favour_b, ties;
    double p;           // the paired t test's two-sided p (NaN for n < 2)
    double mde;         // the minimum detectable difference at 80% power, two-sided α = 0.05, from
                        // the observed sd: (t_{0.975} + t_{0.8}) · sd / √n at n − 1 df (NaN for n < 2)
} PairedDiff;

// paired_diff: a (a method) against b (the reference) on the same seeds, i < n (n <= 1024: --seeds' range)
static PairedDiff paired_diff(const double *a, const double *b, int n) {
    double d[1024];
    PairedDiff p = {{0, NAN, NAN, NAN}, 0, 0, 0, NAN, NAN};
    for (int i = 0; i < n; i++) {
        d[i] = a[i] - b[i];
        p.favour_a += d[i] > 0;
        p.favour_b += d[i] < 0;
        p.ties += d[i] == 0;
    }
    p.d = mean_ci(d, n);
    if (n >= 2) {
        double se = p.d.sd / sqrt((double)n);
        p.p = se > 0 ? t_tail2(fabs(p.d.mean) / se, n - 1) : (p.d.mean == 0 ? 1.0 : 0.0);
        p.mde = (t_quantile(0.05, n - 1) + t_quantile(0.4, n - 1)) * se;
    }
    return p;
}

// holm: Holm's (1979) step-down adjusted p-values of m p-values (NaN: untested, out of the family)
static void holm(const double *p, double *adj, int m) {
    int order[64], mt = 0;
    for (int i = 0; i < m && i < 64; i++) {
        adj[i] = NAN;
        if (isnan(p[i])) continue;
        int j = mt++;
        while (j > 0 && p[order[j - 1]] > p[i]) { order[j] = order[j - 1]; j--; }
        order[j] = i;
    }
    double run = 0.0;
    for (int j = 0; j < mt; j++) {
        run = fmax(run, fmin(1.0, (mt - j) * p[order[j]]));
        adj[order[j]] = run;
    }
}

/* interp_at: the curve (xs[i], ys[i]), i < n, xs non-decreasing, linearly interpolated at x; NaN
   outside [xs[0], xs[n−1]]; where points share an x, the first segment that reaches x decides. */
static double interp_at(const double *xs, const double *ys, int n, double x) {
    if (n < 1 || !(x >= xs[0]) || !(x <= xs[n - 1])) return NAN;
    for (int i = 0; i + 1 < n; i++)
        if (x <= xs[i + 1]) {
            if (xs[i + 1] == xs[i]) return ys[i + 1];
            return ys[i] + (ys[i + 1] - ys[i]) * (x - xs[i]) / (xs[i + 1] - xs[i]);
        }
    return ys[n - 1];
}

// FNV-1a, 64 bits (offset basis 14695981039346656037, prime 1099511628211): the prereg's hash
static uint64_t fnv1a64(const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

// ---- methods and pass-through options

typedef struct {
    char label[256];        // as given: name[:--option=value...]
    char dir[256];          // its directory name: the label with each ":--" written "+"
    int objective;          // index into OBJECTIVE_NAMES, or −1: a label (its options say what it runs)
    int nopts;
    char args[256];         // its options, " --option=value" each (no longer than the label)
} Method;

// options that compare sets for every run itself; no method or --train-args may give them
static const char *CMP_RESERVED_TRAIN[] = {"threads", "seed", "run-dir", "init", "resume", "steps",
                                           "budget-unit", "budget", "eval-points", NULL};
static const char *CMP_RESERVED_SFT[] = {"threads", "run-dir", "resume", NULL};

// CMP_FAIL: the message into err (errn bytes), then −1 from the function (the parsers of this section)
#define CMP_FAIL(...) do { snprintf(err, errn, __VA_ARGS__); return -1; } while (0)

// 0 when --name is an option of the command `mask` that compare passes on; else −1, a message in err
static int check_pass_option(const char *name, unsigned mask, const char **reserved, char *err, size_t errn) {
    if (!strcmp(name, "save-every"))
        CMP_FAIL("--save-every: compare reruns an interrupted run from its start, which its checkpoint would "
                 "refuse (train asks for --resume); leave it out");
    for (int r = 0; reserved[r]; r++)
        if (!strcmp(name, reserved[r])) CMP_FAIL("--%s is set by compare for every run", name);
    const OptSpec *s = find_option(name);
    if (s && (s->cmds & mask)) return 0;
    CMP_FAIL("--%s is not an option of '" PROG " %s'", name, mask == CMD_SFT ? "sft" : "train");
}
#define CMP_DIE(hint, ...) cmp_die(__LINE__, hint, __VA_ARGS__)

// cmp_die: fail_at (exit 1) at the caller's line with a printf-style message
static void cmp_die(int line, const char *hint, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fail_at(__FILE__, line, msg, hint);
}

/* parse_methods: "name[:--opt=value...],..." into m (at most max): an objective's name runs with
   --objective name, any other is a label that must give options. Returns the count, or −1 with a
   message in err (option values are checked when compare resolves each method). */
static int parse_methods(const char *spec, Method *m, int max, char *err, size_t errn) {
    int count = 0;
    if (!*spec) CMP_FAIL("no method given");
    for (const char *p = spec;; p++) {
        size_t len = strcspn(p, ",");
        if (len == 0) CMP_FAIL("an empty method (two commas, or a comma at an end)");
        if (count == max) CMP_FAIL("more than %d methods", max);
        Method *x = &m[count];
        memset(x, 0, sizeof *x);
        if (len >= sizeof x->label)
            CMP_FAIL("method '%.40s...' is longer than %zu characters", p, sizeof x->label - 1);
        memcpy(x->label, p, len);
        size_t ok = strspn(x->label, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.:=+");
        if (ok < len) CMP_FAIL("method '%.200s': character '%c' (use letters, digits and - _ . : = +)",
                               x->label, p[ok]);
        char copy[256];   // the name, then each ":--opt=value"
        memcpy(copy, x->label, sizeof copy);
        char *colon = strchr(copy, ':');
        if (colon) *colon = 0;
        if (!copy[0]) CMP_FAIL("method '%.200s' has no name before ':'", x->label);
        if (!strcmp(copy, ".") || !strcmp(copy, ".."))   // its runs' directory would be runs/ or the study
            CMP_FAIL("method '%.200s': '%.2s' cannot name a method (its runs would land outside runs/)",
                     x->label, copy);
        x->objective = -1;
        for (int k = 0; OBJECTIVE_NAMES[k]; k++)
            if (!strcmp(copy, OBJECTIVE_NAMES[k])) x->objective = k;
        if (x->objective < 0 && !colon)   // a bare name: a misspelt objective would run the default under it
            CMP_FAIL("method '%.100s' is not an objective (" OBJECTIVE_LIST "); a label runs "
                     "with the options it is given: %.100s:--objective=NAME[:--option=value...]", x->label,
                     x->label);
        strcpy(x->dir, copy);   // the directory: each ":--" written "+" (lambda-grpo+temperature=0.7)
        for (char *left = colon ? colon + 1 : NULL, *rest; (rest = strsep(&left, ":")) != NULL;) {
            char *eq = strchr(rest, '='), why[160];
            if (strncmp(rest, "--", 2) != 0 || !eq || eq == rest + 2 || !eq[1])
                CMP_FAIL("method '%.200s': '%s' is not --option=value", x->label, rest);
            if (x->nopts == CMP_MAX_OPTS) CMP_FAIL("method '%.200s': more than %d options", x->label, CMP_MAX_OPTS);
            *eq = 0;
            if (strlen(rest + 2) >= 128 || strlen(eq + 1) >= 128)
                CMP_FAIL("method '%.200s': an option or value longer than 127 characters", x->label);
            if (check_pass_option(rest + 2, CMD_TRAIN, CMP_RESERVED_TRAIN, why, sizeof why) != 0)
                CMP_FAIL("method '%.200s': %s", x->label, why);
            if (x->objective >= 0 && !strcmp(rest + 2, "objective"))
                CMP_FAIL("method '%.200s': its name is an objective already; give "
                         "--objective to a label (e.g. mine:--objective=grpo)", x->label);
            snprintf(x->args + strlen(x->args), sizeof x->args - strlen(x->args), " --%s=%s", rest + 2, eq + 1);
            x->nopts++;
            snprintf(x->dir + strlen(x->dir), sizeof x->dir - strlen(x->dir), "+%s=%s", rest + 2, eq + 1);
        }
        for (int j = 0; j < count; j++)
            if (!strcmp(m[j].label, x->label) || !strcmp(m[j].dir, x->dir))
                CMP_FAIL("method '%.200s' is given twice", x->label);
        count++;
        p += len;
        if (!*p) return count;
    }
}

typedef struct {
    int argc;
    char *argv[CMP_MAX_ARGS + 1];   // PROG, "train" or "sft", options; NULL-terminated for execv
    char store[8192];
    size_t used;
} ArgList;

// args_add: the words up to a NULL appended to a (a usage error when a run's line would outgrow it)
static void args_add(ArgList *a, ...) {
    va_list ap;
    va_start(ap, a);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;) {
        size_t n = strlen(s) + 1;
        if (a->argc == CMP_MAX_ARGS || a->used + n > sizeof a->store)
            usage_error("compare: too many options for one run (at most %d words)", CMP_MAX_ARGS - 1);
        memcpy(a->store + a->used, s, n);
        a->argv[a->argc++] = a->store + a->used;
        a->argv[a->argc] = NULL;
        a->used += n;
    }
    va_end(ap);
}

// split_options: `text`'s "--name value" or "--name=value" appended to a, checked (`flag` in messages)
static void split_options(ArgList *a, const char *text, unsigned mask, const char **reserved,
                          const char *flag) {
    char copy[256], why[160];
    snprintf(copy, sizeof copy, "%s", text);
    char *save = NULL;
    for (char *w = strtok_r(copy, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
        if (strncmp(w, "--", 2) != 0 || !w[2])
            usage_error("%s: '%s' is not an option (--name value)", flag, w);
        char *eq = strchr(w, '=');
        if (eq) *eq = 0;
        char *value = eq ? eq + 1 : strtok_r(NULL, " \t\n", &save);
        if (check_pass_option(w + 2, mask, reserved, why, sizeof why) != 0) usage_error("%s: %s", flag, why);
        if (!value || !*value) usage_error("%s: --%s needs a value", flag, w + 2);
        args_add(a, w, value, NULL);
    }
}

// ---- the study's runs

typedef struct {
    int method, seed;
    char dir[600];
    int state;                          // CMP_PENDING, CMP_RUNNING, CMP_DONE, CMP_FAILED
    pid_t pid;
    double t_start, wall;               // wall seconds of the process (for the time left)
    double x[4][CMP_MAX_POINTS + 1];    // at each evaluation point: step, gen tokens, FLOPs, seconds
    double val[CMP_MAX_POINTS + 1];     // greedy validation accuracy
    double test_acc;                    // at the end; −1 without a test evaluation
    double sft_test_acc;                // the --init model's, before the first step; −1: none
    int test_n;
} CmpRun;
enum { CMP_PENDING, CMP_RUNNING, CMP_DONE, CMP_FAILED };
enum { AX_STEP, AX_TOKENS, AX_FLOPS, AX_SECONDS };
static const char *AXIS_VIEW[] = {"per-step view", "matched generated tokens", "matched FLOPs",
                                  "matched time"};
static const char *AXIS_COLUMN[] = {"step", "gen_tokens", "flops", "seconds"};

static const int UNIT_AXIS[] = {AX_TOKENS, AX_FLOPS, AX_SECONDS, AX_STEP};   // the axis of each BUDGET_*

// A study being run: its options, methods, paths and runs (one compare per process), and its report's
typedef struct {
    const Options *o;
    Method m[CMP_MAX_METHODS];
    int nm, ref, S, K, nruns, jobs;   // ref: the reference of the paired differences
    char exe[1024], study[256], sft_dir[300], sft[600], runs_dir[300], prereg[300];
    uint64_t sft_hash;                // of the starting checkpoint: every run is checked to start from it
    CmpRun *runs;                     // seed-major: every method's seed 1, then seed 2, ...
    int budget_axis;                  // UNIT_AXIS of the budget's unit
    FILE *out;                        // the report (stdout and summary.txt get the same text)
    const struct OneBatch *ob;        // --one-batch: the one-batch counts (NULL: no such view)
    int wl;                           // the width of the tables' first column (the labels)
} Study;

// run_path: the path of the file `name` in run r's directory, into buf
static char *run_path(const CmpRun *r, const char *name, char *buf, size_t n) {
    snprintf(buf, n, "%s/%s", r->dir, name);
    return buf;
}

// slurp: a whole small file as a string (up to a NUL byte, if it holds one); NULL when it cannot be opened
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0;
    if (getdelim(&buf, &cap, '\0', f) < 0) {   // nothing read (an empty file, a directory): ""
        free(buf);
        buf = (char *)callocCheck(1, 1);
    }
    fclose(f);
    return buf;
}

// Writes text to path through a temporary file and a rename: a reader sees all of it or none.
static void write_file_atomic(const char *path, const char *text) {
    AtomicFile a;
    fputs(text, atomic_open(&a, path));
    atomic_close(&a);   // (a failed fputs shows as ferror there)
}

/* load_run: a finished run's eval.csv (points 0..K) and result.txt into r, every value checked (a
   finite number in its range; counters whole where counted, never decreasing, 0 at point 0, the last
   point's those of result.txt). Returns 0, or −1 with the file, line and what is wrong in err. */
#define WHY(...) snprintf(why, sizeof why, __VA_ARGS__)   // what is wrong, for CMP_FAIL
static int load_run(CmpRun *r, int K, char *err, size_t errn) {
    static const char *col[7] = {"point", "budget_spent", "step", "gen_tokens", "flops", "seconds", "val_acc"};
    const char *header = "point,budget_spent,step,gen_tokens,flops,seconds,val_acc\n";
    char path[700], why[200] = "";
    char *text = slurp(run_path(r, "eval.csv", path, sizeof path));
    if (!text) CMP_FAIL("cannot read %.400s: %s", path, strerror(errno));
    int rows = 0;
    if (strncmp(text, header, strlen(header)) != 0)
        WHY("line 1: not the header '%.*s'", (int)strlen(header) - 1, header);
    double prev[7] = {0}, v[7];   // prev: the row before (after the loop: the last point, K)
    for (char *line = text + strlen(header), *nl; !why[0] && *line; rows++, line = nl + 1) {
        char *p = line, *end;
        int ln = rows + 2;
        if (!(nl = strchr(line, '\n'))) { WHY("line %d: cut off (no line end)", ln); break; }
        for (int f = 0; f < 7 && !why[0]; f++, p = end + 1) {
            v[f] = strtod(p, &end);
            if (is_blank(*p) || end == p || *end != (f < 6 ? ',' : '\n') || !isfinite(v[f]))
                WHY("line %d: %s is not a number%s", ln, col[f], f < 6 ? " followed by ','" : " ending the line");
        }
        if (why[0]) break;
        if (rows > K) WHY("line %d: more than %d points", ln, K + 1);
        else if (v[0] != rows) WHY("line %d: point %g, expected %d", ln, v[0], rows);
        else if (!(v[6] >= 0.0 && v[6] <= 1.0)) WHY("line %d: val_acc %g is not in [0, 1]", ln, v[6]);
        for (int f = 1; f < 6 && !why[0]; f++) {
            if (v[f] < 0.0) WHY("line %d: %s %g is negative", ln, col[f], v[f]);
            else if ((f == 2 || f == 3) && v[f] != floor(v[f]))
                WHY("line %d: %s %g is not a whole number", ln, col[f], v[f]);
            else if (rows == 0 && v[f] != 0.0)
                WHY("line %d: point 0 (the start) has %s %g, not 0", ln, col[f], v[f]);
            else if (v[f] < prev[f])
                WHY("line %d: %s %g is below the point before's %g", ln, col[f], v[f], prev[f]);
        }
        if (why[0]) break;
        memcpy(prev, v, sizeof prev);
        for (int a = 0; a < 4; a++) r->x[a][rows] = v[2 + a];   // step, gen tokens, FLOPs, seconds
        r->val[rows] = v[6];
    }
    free(text);
    if (!why[0] && rows != K + 1) WHY("the run ended before it spent its budget (--steps too low?)");
    if (why[0]) CMP_FAIL("%.400s: %s (%d evaluation points of %d)", path, why, rows, K + 1);
    if (!(text = slurp(run_path(r, "result.txt", path, sizeof path))))
        CMP_FAIL("cannot read %.400s: %s", path, strerror(errno));
    // `key value` lines: the keys compare reads, and those it checks against eval.csv's last point
    static const char *keys[9] = {"test_acc", "test_n", "budget_done", "steps", "gen_tokens_traj",
                                  "gen_tokens_aux", "flops", "sft_test_acc", "seconds"};
    double val[9];
    int have[9] = {0}, ln = 1;
    for (char *line = text, *nl; *line && !why[0]; line = nl + 1, ln++) {
        char *sp = strchr(line, ' '), *end;
        if (!(nl = strchr(line, '\n'))) { WHY("line %d: cut off (no line end)", ln); break; }
        int k = -1;
        for (int i = 0; i < 9; i++)
            if (sp && sp < nl && (size_t)(sp - line) == strlen(keys[i]) && !strncmp(line, keys[i], sp - line)) k = i;
        if (k < 0) continue;
        val[k] = strtod(sp + 1, &end);
        if (is_blank(sp[1]) || end == sp + 1 || end != nl || !isfinite(val[k]))
            WHY("line %d: the value of %s is not a number", ln, keys[k]);
        else if (have[k]) WHY("line %d: %s given twice", ln, keys[k]);
        have[k] = 1;
    }
    free(text);
    if (why[0]) CMP_FAIL("%.400s: %s", path, why);
    if (!have[0] || !have[1] || !have[2]) WHY("no test_acc, test_n or budget_done line");
    else if (val[2] != 1.0) WHY("budget_done %g: the run did not spend its budget", val[2]);
    else if (!(val[1] >= 0 && val[1] == floor(val[1]) && val[1] < 2147483647.0))
        WHY("test_n %g is not a whole number >= 0", val[1]);
    else if (!(val[0] >= 0.0 && val[0] <= 1.0)) WHY("test_acc %g is not in [0, 1]", val[0]);
    else if (val[1] > 0 && fabs(val[0] * val[1] - round(val[0] * val[1])) > 5.1e-7 * val[1] + 1e-9)
        WHY("test_acc %g is not a count of test_n %g problems (correct / test_n)", val[0], val[1]);
    else if (have[3] && val[3] != prev[2])
        WHY("steps %g, but eval.csv's last point is at step %g", val[3], prev[2]);
    else if (have[4] && have[5] && val[4] + val[5] != prev[3])
        WHY("gen_tokens_traj + gen_tokens_aux %g, but eval.csv's last point has gen_tokens %g",
            val[4] + val[5], prev[3]);
    else if (have[6] && val[6] != prev[4])
        WHY("flops %.0f, but eval.csv's last point has %.0f", val[6], prev[4]);
    else if (have[8] && fabs(val[8] - prev[5]) > 1e-6 * fmax(1.0, prev[5]))
        WHY("seconds %g, but eval.csv's last point has %g", val[8], prev[5]);
    if (why[0]) CMP_FAIL("%.400s: %s", path, why);
    r->test_n = (int)val[1];
    r->test_acc = r->test_n > 0 ? val[0] : -1.0;
    r->sft_test_acc = have[7] && r->test_n > 0 ? val[7] : -1.0;
    return 0;
}
#undef WHY

/* spawn: this program (/proc/self/exe) started with argv (its argv[0] st->exe), writing to dir/run.log (dir
   made first). On Linux the child ends (SIGTERM) if compare dies first: an interrupted study leaves no run
   holding its dir. */
static pid_t spawn(const Study *st, char **argv, const char *dir) {
    char log_path[1400];
    make_dir(dir);
    snprintf(log_path, sizeof log_path, "%s/run.log", dir);
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        CMP_DIE("too many processes? lower --jobs", "cannot start a run: fork failed: %s", strerror(errno));
    if (pid > 0) return pid;
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
#else
    (void)parent;
#endif
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0666);
    if (fd < 0) {
        fprintf(stderr, "error: cannot create '%s': %s\n", log_path, strerror(errno));
        _exit(127);
    }
    int null_in = open("/dev/null", O_RDONLY);
    if (null_in >= 0) dup2(null_in, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    argv[0] = (char *)st->exe;   // (the child's copy)
    execv("/proc/self/exe", argv);   // this very binary, even if the file was rebuilt since
    fprintf(stderr, "error: cannot run '/proc/self/exe' (%s): %s\n", st->exe, strerror(errno));
    _exit(127);
}

// exit_text: a wait status as "exit status N", or as "SIG N" (SIG: how a signal is named) into buf
static const char *exit_text(int status, const char *sig, char *buf, size_t n) {
    if (WIFEXITED(status)) snprintf(buf, n, "exit status %d", WEXITSTATUS(status));
    else snprintf(buf, n, "%s %d", sig, WTERMSIG(status));
    return buf;
}

// run_failed: "error: WHAT failed (WHY); its log: LOG", then the log's first line with "error: ", indented
static void run_failed(const char *what, const char *why, const char *log) {
    fprintf(stderr, "error: %s failed (%s); its log: %s\n", what, why, log);
    char *text = slurp(log);
    if (!text) return;
    char *at = strstr(text, "error: ");
    if (at) {
        while (at > text && at[-1] != '\n') at--;
        at[strcspn(at, "\n")] = 0;
        fprintf(stderr, "  %s\n", at);
    }
    free(text);
}

// spawn_wait: spawn and wait; a child that does not exit 0 (or leaves no file `made`) stops compare (exit 1)
static void spawn_wait(const Study *st, char **argv, const char *dir, const char *what, const char *made) {
    pid_t pid = spawn(st, argv, dir);
    int status = 0;
    char why[64], log[1400];
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && (!made || access(made, F_OK) == 0)) return;
    snprintf(log, sizeof log, "%s/run.log", dir);
    run_failed(what, exit_text(status, "signal", why, sizeof why), log);
    exit(EXIT_INPUT);
}

// run_spent: the budget a running run has spent: the budget_spent column of its train.csv's last row
static double run_spent(const CmpRun *r) {
    char path[1200], *text = slurp(run_path(r, "train.csv", path, sizeof path));
    if (!text) return 0.0;
    double spent = 0.0;
    char *head = text + strcspn(text, "\n"), *col = strstr(text, ",budget_spent,");   // never first nor last
    char *end = strrchr(text, '\n');   // the last complete row ends there
    if (col && col < head && end > head) {
        *end = 0;
        char *row = strrchr(text, '\n') + 1;
        for (char *c = text; row && c <= col; c = strchr(c, ',') + 1)   // as many commas as before col's
            if ((row = strchr(row, ',')) != NULL) row++;
        if (row) spent = atof(row);
    }
    free(text);
    return spent;
}

// A run's name in messages: METHOD/seed_N.
static const char *run_name(const CmpRun *r, const Method *m, char *buf, size_t n) {
    snprintf(buf, n, "%s/seed_%d", m[r->method].dir, r->seed);
    return buf;
}

// print_progress: runs done, those running with their share of the budget, and an estimate of the time left
static void print_progress(const Study *st, double t0) {
    int n = st->nruns, count[4] = {0}, dur_n = 0, pace_n = 0;   // count: runs in each state (CMP_PENDING ...)
    double left = 0.0, dur_sum = 0.0, pace_sum = 0.0;
    char line[1024] = "", name[300], eta[64], fails[32] = "";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        const CmpRun *r = &st->runs[i];
        count[r->state]++;
        left += r->state == CMP_PENDING;
        if (r->state == CMP_DONE && r->wall > 0) {
            dur_sum += r->wall;
            dur_n++;
        }
        if (r->state != CMP_RUNNING) continue;
        double frac = fmin(1.0, run_spent(r) / st->o->budget);
        left += 1.0 - frac;
        if (frac > 0.02) {
            pace_sum += (wall_seconds() - r->t_start) / frac;
            pace_n++;
        }
        if (used < sizeof line - 100)
            used += (size_t)snprintf(line + used, sizeof line - used, "%s%s %.0f%%",
                                     used ? ", " : " (", run_name(r, st->m, name, sizeof name),
                                     100.0 * frac);
    }
    double per_run = dur_n ? dur_sum / dur_n : (pace_n ? pace_sum / pace_n : -1.0);
    if (per_run > 0) snprintf(eta, sizeof eta, "about %.1f min left", left * per_run / st->jobs / 60.0);
    else snprintf(eta, sizeof eta, "time left: known after the first steps");
    if (count[CMP_FAILED]) snprintf(fails, sizeof fails, ", %d failed", count[CMP_FAILED]);
    printf("progress: %d/%d runs done, %d running%s%s, %d waiting%s; %.1f min so far, %s\n", count[CMP_DONE],
           n, count[CMP_RUNNING], line, count[CMP_RUNNING] ? ")" : "", count[CMP_PENDING], fails,
           (wall_seconds() - t0) / 60.0, eta);
    fflush(stdout);
}

// ---- the views and the tables

/* col_at: where run i's value in column c stands in print_table's v (by column, then method, then seed);
   with i = mi < nm, where method mi's S seeds begin */
static size_t col_at(const Study *R, int c, int i) {
    return ((size_t)c * R->nm + i % R->nm) * R->S + i / R->nm;
}

/* view_values: every run's validation accuracy at the view's points 0..K (x in xs) as print_table's columns
   (malloc'd): the budget's own unit reads the evaluations; any other view interpolates at K even steps up
   to the smallest final x, so that every run covers them. */
static double *view_values(const Study *R, int axis, double *xs) {
    int n = R->nruns, K = R->K, own = axis == R->budget_axis;   // own: the budget's unit
    double end = own ? R->o->budget : INFINITY, *v = (double *)mallocCheck(sizeof(double) * n * (K + 1));
    for (int i = 0; i < n && !own; i++) end = fmin(end, R->runs[i].x[axis][K]);
    for (int j = 0; j <= K; j++) {
        xs[j] = j == K ? end : end * j / K;
        for (int i = 0; i < n; i++) {
            const CmpRun *r = &R->runs[i];
            v[col_at(R, j, i)] = own ? r->val[j] : interp_at(r->x[axis], r->val, K + 1, xs[j]);
        }
    }
    return v;
}

// s padded with blanks to `width` columns (UTF-8: ± and Δ take one column, two bytes)
static void print_padded(FILE *f, const char *s, int width, int right) {
    int cols = 0;
    for (const char *p = s; *p; p++) cols += ((unsigned char)*p & 0xC0) != 0x80;
    if (right) fprintf(f, "%*s%s", width > cols ? width - cols : 0, "", s);
    else fprintf(f, "%s%*s", s, width > cols ? width - cols : 0, "");
}

// "mean±half" with `digits` decimals (a sign with sign != 0); "mean" alone when half is NaN (n < 2)
static void format_ci(const MeanCI *c, int sign, int digits, char *buf, size_t n) {
    if (isnan(c->half)) snprintf(buf, n, sign ? "%+.*f" : "%.*f", digits, c->mean);
    else snprintf(buf, n, sign ? "%+.*f±%.*f" : "%.*f±%.*f", digits, c->mean, digits, c->half);
}

// a paired difference's cell: "+mean±half a/b" (b: the seeds favouring the reference)
static void format_diff(const PairedDiff *p, int digits, char *buf, size_t n) {
    format_ci(&p->d, 1, digits, buf, n);
    snprintf(buf + strlen(buf), n - strlen(buf), " %d/%d", p->favour_a, p->favour_b);
}

typedef struct {
    char head[300];
    int width, digits;  // of the column; of its values' decimals
} TableCol;

// amount_col: a view's column at an amount x of the axis (20 wide, 3 decimals): "step 12", "1.5 s", ...
static TableCol amount_col(int axis, double x) {
    TableCol c = {"", 20, 3};
    if (axis == AX_STEP) snprintf(c.head, sizeof c.head, "step %.4g", x);
    else if (axis == AX_SECONDS) snprintf(c.head, sizeof c.head, "%.*f s", x < 100 ? 1 : 0, x);
    else if (axis == AX_FLOPS) snprintf(c.head, sizeof c.head, "%.3g FLOP", x);
    else if (x >= 1e6) snprintf(c.head, sizeof c.head, "%.3gM tok", x / 1e6);
    else if (x >= 1e4) snprintf(c.head, sizeof c.head, "%.0fk tok", x / 1e3);
    else snprintf(c.head, sizeof c.head, "%.0f tok", x);
    return c;
}

// method mi's test accuracy on each seed
static void test_column(const Study *R, int mi, double *out) {
    for (int s = 0; s < R->S; s++) out[s] = R->runs[s * R->nm + mi].test_acc;
}

// a table's first cell, s padded to the labels' width; delta_label: the 'Δ vs REF' row's (REF cut at `cut`)
static void row_label(const Study *R, const char *s) { print_padded(R->out, s, R->wl, 0); }
static void delta_label(const Study *R, int cut) {
    char s[300];
    snprintf(s, sizeof s, "  Δ vs %.*s", cut, R->m[R->ref].label);
    row_label(R, s);
}

// a table's head line: n column heads, right-aligned in their widths
static void print_heads(const Study *R, int n, const TableCol *col) {
    row_label(R, "");
    for (int c = 0; c < n; c++) print_padded(R->out, col[c].head, col[c].width, 1);
    fprintf(R->out, "\n");
}

/* print_table: the heads, then a row per method: column c's mean ± 95% CI over the seeds of
   v[(c·nm + mi)·S + s] (signed when sign; "(not evaluated)" where NaN); with deltas, under each
   other method its paired differences against the reference ("-" where not evaluated). */
static void print_table(const Study *R, int nc, const TableCol *col, int sign, const double *v, int deltas) {
    int nm = R->nm, S = R->S;
    char cell[96];
    print_heads(R, nc, col);
    for (int mi = 0; mi < nm; mi++)
        for (int d = 0; d <= (deltas && mi != R->ref); d++) {
            if (d) delta_label(R, 80);
            else row_label(R, R->m[mi].label);
            for (int c = 0; c < nc; c++) {
                const double *a = v + col_at(R, c, mi), *b = v + col_at(R, c, R->ref);   // their seeds
                MeanCI ci = mean_ci(a, S);
                PairedDiff p = paired_diff(a, b, S);
                if (d) format_diff(&p, col[c].digits, cell, sizeof cell);
                else format_ci(&ci, sign, col[c].digits, cell, sizeof cell);
                print_padded(R->out, !isnan(ci.mean) ? cell : d ? "-" : "(not evaluated)", col[c].width, 1);
            }
            fprintf(R->out, "\n");
        }
}

// print_view: one view's table (print_table, with the differences); its rows appended to curves.csv
static void print_view(const Study *R, int axis, FILE *curves) {
    int K = R->K, S = R->S;
    double xs[CMP_MAX_POINTS + 1], *v = view_values(R, axis, xs);
    TableCol col[CMP_MAX_POINTS];
    for (int j = 1; j <= K; j++) col[j - 1] = amount_col(axis, xs[j]);
    fprintf(R->out, "\n%s: greedy validation accuracy, mean ± 95%% CI over %d seeds,\n", AXIS_VIEW[axis], S);
    if (axis == R->budget_axis) fprintf(R->out, "  at the evaluation points (fractions of the budget)\n");
    else fprintf(R->out, "  interpolated between evaluations, up to %s (the shortest run's end)\n",
                 col[K - 1].head);
    print_table(R, K, col, 0, v + (size_t)R->nm * S, 1);
    for (int mi = 0; mi < R->nm; mi++)
        for (int j = 0; j <= K; j++) {
            MeanCI c = mean_ci(v + col_at(R, j, mi), S);
            double half = isnan(c.half) ? 0.0 : c.half;   // one seed: no interval, the band is the mean
            fprintf(curves, "%s,%s,%d,%.10g,%d,%.6f,%.6f,%.6f\n", AXIS_COLUMN[axis], R->m[mi].label, j, xs[j],
                    c.n, c.mean, c.mean - half, c.mean + half);
        }
    free(v);
}

// print_per_seed: every run's val accuracy at points 0..K and test accuracy: each interval can be recomputed
static void print_per_seed(const Study *R) {
    fprintf(R->out, "\nper-seed values: validation accuracy at points 0..%d, then test accuracy at the end (and the\n"
                    "  starting model's)\n", R->K);
    for (int mi = 0; mi < R->nm; mi++)
        for (int s = 0; s < R->S; s++) {
            const CmpRun *r = &R->runs[s * R->nm + mi];
            fprintf(R->out, "  %s seed_%d:", R->m[mi].label, r->seed);
            for (int j = 0; j <= R->K; j++) fprintf(R->out, " %.6g", r->val[j]);
            fprintf(R->out, " | test %.6g (SFT %.6g)\n", r->test_acc, r->sft_test_acc);
        }
}

/* cost_to_reach: the x at which a run's evaluations (xs[j], val[j]), j < n, first reach target,
   linearly interpolated (xs[0] when the start does); NAN when none does (censored at the budget). */
static double cost_to_reach(const double *xs, const double *val, int n, double target) {
    for (int j = 0; j < n; j++) {
        if (!(val[j] >= target)) continue;
        if (j == 0) return xs[0];
        double f = (target - val[j - 1]) / (val[j] - val[j - 1]);   // val[j−1] < target <= val[j]
        return xs[j - 1] + f * (xs[j] - xs[j - 1]);
    }
    return NAN;
}

// print_cost_view: per method the gen tokens and seconds to reach --target-acc, and the paired Δ in tokens
static void print_cost_view(const Study *R) {
    FILE *f = R->out;
    int K = R->K, S = R->S;
    char cell[96];
    fprintf(f, "\ncost at equal accuracy: generated tokens and seconds to first reach validation accuracy %.3f\n"
               "  (pre-registered --target-acc; linearly interpolated between evaluations; mean ± 95%% CI over\n"
               "  the seeds that reached it; a seed that did not is counted, not dropped, and is in no mean)\n",
            R->o->target_acc);
    static const TableCol heads[] = {{"gen tokens to X", 20, 0}, {"seconds to X", 16, 1},
                                     {"did not reach X", 20, 0}};
    print_heads(R, 3, heads);
    for (int mi = 0; mi < R->nm; mi++) {
        int reached = 0, pairs = 0;
        double tok[1024], sec[1024], a[1024], b[1024];
        for (int s = 0; s < S; s++) {
            const CmpRun *r = &R->runs[s * R->nm + mi], *rr = &R->runs[s * R->nm + R->ref];
            double t = cost_to_reach(r->x[AX_TOKENS], r->val, K + 1, R->o->target_acc);
            double t_ref = cost_to_reach(rr->x[AX_TOKENS], rr->val, K + 1, R->o->target_acc);
            if (isnan(t)) continue;
            if (!isnan(t_ref)) {
                a[pairs] = t;
                b[pairs++] = t_ref;
            }
            tok[reached] = t;
            sec[reached++] = cost_to_reach(r->x[AX_SECONDS], r->val, K + 1, R->o->target_acc);
        }
        MeanCI ct = mean_ci(tok, reached), cs = mean_ci(sec, reached);
        row_label(R, R->m[mi].label);
        format_ci(&ct, 0, 0, cell, sizeof cell);
        print_padded(f, reached ? cell : "-", 20, 1);
        format_ci(&cs, 0, 1, cell, sizeof cell);
        print_padded(f, reached ? cell : "-", 16, 1);
        snprintf(cell, sizeof cell, "%d of %d", S - reached, S);
        print_padded(f, cell, 20, 1);
        fprintf(f, "\n");
        if (mi == R->ref) continue;
        delta_label(R, 255);
        PairedDiff p = paired_diff(a, b, pairs);
        format_ci(&p.d, 1, 0, cell, sizeof cell);
        if (pairs == 0) fprintf(f, "(no seed where both reached it)\n");
        else fprintf(f, "%s tokens (%d seed%s where both reached it)\n", cell, pairs, pairs > 1 ? "s" : "");
    }
}

// print_end_table: test accuracy at the end of the budget (and its Δ), and what each method spent
static void print_end_table(const Study *R, int has_test) {
    static const char *fmt[4] = {"%.0f", "%.0f", "%.3g", "%.1f"};   // step, gen tokens, FLOPs, seconds
    char cell[96];
    double a[1024], b[1024];
    fprintf(R->out, "\nat the end of the budget (mean over seeds):\n");
    TableCol heads[] = {{"test accuracy", 20, 3}, {"", 20, 3}, {"steps", 12, 0}, {"gen tokens", 12, 0},
                        {"FLOPs", 12, 0}, {"seconds", 12, 0}};
    snprintf(heads[1].head, sizeof heads[1].head, "Δ vs %s", R->m[R->ref].label);
    print_heads(R, 6, heads);
    for (int mi = 0; mi < R->nm; mi++) {
        row_label(R, R->m[mi].label);
        test_column(R, mi, a);
        test_column(R, R->ref, b);
        MeanCI c = mean_ci(a, R->S);
        format_ci(&c, 0, 3, cell, sizeof cell);
        print_padded(R->out, has_test ? cell : "(not evaluated)", 20, 1);
        PairedDiff p = paired_diff(a, b, R->S);
        format_diff(&p, 3, cell, sizeof cell);
        print_padded(R->out, mi != R->ref && has_test ? cell : "-", 20, 1);
        for (int ax = 0; ax < 4; ax++) {
            double sum = 0.0;
            for (int s = 0; s < R->S; s++) sum += R->runs[s * R->nm + mi].x[ax][R->K];
            snprintf(cell, sizeof cell, fmt[ax], sum / R->S);
            print_padded(R->out, cell, 12, 1);
        }
        fprintf(R->out, "\n");
    }
}

// print_peak_table: the peak validation accuracy over points 0..K, and the steps and tokens to it
static void print_peak_table(const Study *R) {
    int nm = R->nm, S = R->S;
    double *v = (double *)mallocCheck((size_t)3 * nm * S * sizeof(double));   // peak, its step, its tokens
    fprintf(R->out, "\npeak validation accuracy over the %d evaluation points (and the SFT model), "
                    "mean ± 95%% CI:\n", R->K);
    for (int i = 0; i < nm * S; i++) {
        const CmpRun *r = &R->runs[i];
        int best = 0;
        for (int j = 1; j <= R->K; j++)
            if (r->val[j] > r->val[best]) best = j;
        v[col_at(R, 0, i)] = r->val[best];
        v[col_at(R, 1, i)] = r->x[AX_STEP][best];
        v[col_at(R, 2, i)] = r->x[AX_TOKENS][best];
    }
    static const TableCol col[] = {{"peak val accuracy", 20, 3}, {"steps to peak", 20, 0},
                                   {"gen tokens to peak", 24, 0}};
    print_table(R, 3, col, 0, v, 0);
    free(v);
}

// print_hypotheses: the pre-registered hypotheses, three per method, each's verdict after Holm's correction
static void print_hypotheses(const Study *R, int has_test) {
    int nh = 0, hm[64];
    PairedDiff hp[64];
    double pv[64] = {0}, adj[64], a[1024], b[1024], xs[CMP_MAX_POINTS + 1];
    double *v[3] = {NULL, view_values(R, AX_TOKENS, xs), view_values(R, AX_SECONDS, xs)};   // H2's, H3's
    for (int mi = 0; mi < R->nm; mi++) {   // (at most 3·(CMP_MAX_METHODS − 1) hypotheses)
        if (mi == R->ref) continue;
        test_column(R, mi, a);
        test_column(R, R->ref, b);
        hp[nh] = paired_diff(a, b, has_test ? R->S : 0);   // no test set: no seeds, no test
        for (int k = 1; k < 3; k++)
            hp[nh + k] = paired_diff(v[k] + col_at(R, R->K, mi), v[k] + col_at(R, R->K, R->ref), R->S);
        for (int k = 0; k < 3; k++, nh++) hm[nh] = mi, pv[nh] = hp[nh].p;
    }
    free(v[1]);
    free(v[2]);
    holm(pv, adj, nh);
    fprintf(R->out, "\nhypotheses (as pre-registered; two-sided paired t tests, p; Holm: the p adjusted over the %d\n"
                    "hypotheses, supported when below 0.05; detectable: the difference this study finds with 80%%\n"
                    "power at that sd):\n", nh);
    static const char *what[3] = {"test accuracy at the end", "val accuracy at matched generated tokens (last point)",
                                  "val accuracy at matched time (last point)"};
    for (int k = 0; k < nh; k++) {
        const PairedDiff *p = &hp[k];
        const char *label = R->m[hm[k]].label, *ref = R->m[R->ref].label;
        char diff[64], ties[32] = "";   // ties: seeds with the same value under both (neither favoured)
        fprintf(R->out, "  H%d %s vs %s, %s: ", k + 1, label, ref, what[k % 3]);
        if (k % 3 == 0 && !has_test) {
            fprintf(R->out, "not testable (the runs had no test set)\n");
            continue;
        }
        format_ci(&p->d, 1, 3, diff, sizeof diff);
        if (p->ties) snprintf(ties, sizeof ties, ", %d tied", p->ties);
        fprintf(R->out, "%s (%d/%d seeds%s): ", diff, p->favour_a, p->favour_b, ties);
        if (isnan(p->d.half)) fprintf(R->out, "not testable (fewer than 2 seeds)\n");
        else if (adj[k] < 0.05)
            fprintf(R->out, "p %.3g, Holm %.3g, detectable %.3f: supported, favouring %s\n", p->p, adj[k],
                    p->mde, p->d.mean > 0 ? label : ref);
        else fprintf(R->out, "p %.3g, Holm %.3g, detectable %.3f: not supported\n", p->p, adj[k], p->mde);
    }
}

static void print_onebatch_view(const Study *R);   // --one-batch's view (its section, below)

// print_report: the tables of a finished study, into R->out; the views' rows into curves
static void print_report(const Study *R, FILE *curves) {
    int has_test = R->runs[0].test_acc >= 0;   // as every run's (one test set for all: compare checks test_n)
    fprintf(R->out, "\n== results: %d methods x %d seeds; the ± are half-widths of 95%% t intervals over seeds;\n"
                    "   'Δ vs %s' is the paired difference on the same seeds, then the seeds favouring each\n"
                    "   (the method / %s; a tied seed favours neither)\n", R->nm, R->S, R->m[R->ref].label,
            R->m[R->ref].label);
    for (int axis = AX_STEP; axis <= AX_SECONDS; axis++)   // FLOPs only when the budget counts them
        if (axis != AX_FLOPS || R->budget_axis == AX_FLOPS) print_view(R, axis, curves);
    print_end_table(R, has_test);
    print_peak_table(R);
    if (R->o->target_acc >= 0) print_cost_view(R);
    if (R->ob) print_onebatch_view(R);
    print_per_seed(R);
    print_hypotheses(R, has_test);
}

// ---- the command

// The settings of ./grpo compare --quick: a tiny model (2 layers, width 32) and budget; --sft-args and
// --train-args after them (a later value of an option wins), so that they add to them.
#define CMP_QUICK_SFT \
    "--layers 2 --heads 2 --channels 32 --batch-size 16 --lr 3e-3 --steps 300 --eval-every 0"
#define CMP_QUICK_TRAIN "--prompts-per-step 4 --group-size 4 --lr 1e-3 --eval-limit 40 --test-limit 40"

// method_args: method m's train line: fixed options, --quick's, --train-args, its own, then compare's
static void method_args(ArgList *a, const Options *o, const Method *m, int seed, const char *dir,
                        const char *sft) {
    char steps[32], budget[32], points[32], seed_s[32];
    memset(a, 0, sizeof *a);
    args_add(a, PROG, "train", "--threads", "1", "--eval-every", "0", "--pass-k", "0", NULL);
    if (o->quick) split_options(a, CMP_QUICK_TRAIN, CMD_TRAIN, CMP_RESERVED_TRAIN, "--quick");
    split_options(a, o->train_args, CMD_TRAIN, CMP_RESERVED_TRAIN, "--train-args");
    if (m->objective >= 0) args_add(a, "--objective", OBJECTIVE_NAMES[m->objective], NULL);
    split_options(a, m->args, CMD_TRAIN, CMP_RESERVED_TRAIN, "--methods");   // (checked by parse_methods)
    // --steps: the budget itself when it counts steps (so that a decaying --schedule ends at the
    // budget's end), else a cap the budget stops the run long before
    snprintf(steps, sizeof steps, "%d", o->budget_unit == BUDGET_STEPS ? (int)o->budget : cmp_steps_cap());
    snprintf(budget, sizeof budget, "%.9g", o->budget);
    snprintf(points, sizeof points, "%d", o->eval_points);
    snprintf(seed_s, sizeof seed_s, "%d", seed);
    args_add(a, "--steps", steps, "--budget-unit", BUDGET_UNIT_NAMES[o->budget_unit], "--budget", budget,
             "--eval-points", points, "--init", sft, "--seed", seed_s, "--run-dir", dir, NULL);
}

// sft_args: the study's SFT line (--quick's, then --sft-args) into dir, at `threads` threads (< 0: unset)
static void sft_args(ArgList *a, const Options *o, const char *dir, int threads) {
    char num[32];
    memset(a, 0, sizeof *a);
    args_add(a, PROG, "sft", NULL);
    if (o->quick) split_options(a, CMP_QUICK_SFT, CMD_SFT, CMP_RESERVED_SFT, "--quick");
    split_options(a, o->sft_args, CMD_SFT, CMP_RESERVED_SFT, "--sft-args");
    snprintf(num, sizeof num, "%d", threads);
    args_add(a, "--run-dir", dir, threads >= 0 ? "--threads" : NULL, num, NULL);
}

/* resolved_config: a train (is_train) or sft command line a into f, then the Options t it resolves to
   (as the run prints them), checked: a bad one stops compare before anything runs (after `context`). */
static void resolved_config(FILE *f, const ArgList *a, int is_train, const char *context, Options *t) {
    fprintf(f, "   ");   // argv[0] is PROG, not this machine's path: the hash stays the same
    for (int i = 0; i < a->argc; i++) fprintf(f, " %s", shell_word(a->argv[i]));
    fprintf(f, "\n  ");
    unsigned cmd = is_train ? CMD_TRAIN : CMD_SFT;
    usage_context = context;
    default_options(t);
    (is_train ? train_defaults : sft_defaults)(t);
    ArgList copy = *a;   // getopt_long may reorder the words
    for (int i = 0; i < copy.argc; i++) copy.argv[i] = copy.store + (a->argv[i] - a->store);
    parse_options(copy.argc - 1, copy.argv + 1, cmd, t, is_train ? "train" : "sft", "");
    if (is_train) {
        check_grpo_options(t, CMD_TRAIN);
        if (t->schedule != 2 && t->budget_unit != BUDGET_STEPS)   // 2: constant (SCHEDULE_NAMES)
            usage_error("--schedule %s decays the learning rate over --steps, which compare sets to a cap "
                        "of %d steps unless the budget counts steps: use --budget-unit steps --budget N "
                        "(N steps per run), or the constant schedule", SCHEDULE_NAMES[t->schedule], cmp_steps_cap());
    }
    usage_context = NULL;
    // without the trailing threads=N: this machine's core count is no part of the configuration
    char *line = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&line, &n);
    if (!mem) fail_at(__FILE__, __LINE__, "compare: open_memstream failed", oom_hint);
    print_options(mem, t, cmd);
    fclose(mem);
    char *threads = strstr(line, " threads=");
    if (threads) strcpy(threads, "\n");
    fputs(line, f);
    free(line);
}

#define PREREG_SFT_LINE "sft-checkpoint: fnv1a64 "   // prereg.txt's line after the hash: the made SFT's hash
#define PREREG_HASH "\nhash: fnv1a64 "

/* write_prereg: text and its hash into STUDY/prereg.txt. An existing one must hash to its hash line above
   it, hold only the made SFT's line (PREREG_SFT_LINE) below it and carry this text's hash, else compare
   stops (exit 1; with another hash, this text in prereg.rejected.txt). Returns the hash. */
static uint64_t write_prereg(const Study *st, const char *text) {
    uint64_t hash = fnv1a64(text, strlen(text));
    const char *path = st->prereg, *study = st->study;
    const char *restore = "restore the file as compare wrote it, or give another --study";
    char rejected[1100], hint[2400], want[128] = "", *stop = NULL;
    size_t n = strlen(text) + 64;
    char *full = (char *)mallocCheck(n), *old = slurp(path);
    snprintf(full, n, "%shash: fnv1a64 %016llx\n", text, (unsigned long long)hash);
    if (!old) {
        if (access(st->runs_dir, F_OK) == 0)
            CMP_DIE("give another --study, or remove its runs/ directory", "'%s' holds runs but no "
                    "prereg.txt (which is written before the first run)", study);
        write_file_atomic(path, full);
        free(full);
        return hash;
    }
    const char *at = strstr(old, PREREG_HASH);
    if (!at)
        CMP_DIE("restore the file, or give another --study", "'%s' has no line 'hash: fnv1a64 ...' (a "
                "pre-registration ends with the hash of its text)", path);
    const char *hex = at + strlen(PREREG_HASH), *end = strchr(hex, '\n');
    unsigned long long stated = strtoull(hex, &stop, 16), h = 0;
    uint64_t actual = fnv1a64(old, (size_t)(at + 1 - old));
    if (!end || stop != end || end - hex != 16 || stated != actual)
        CMP_DIE(restore, "'%s' does not match its own hash: the text above its hash line hashes to fnv1a64 "
                "%016llx, the line says %.*s (the file was edited after the study was pre-registered)", path,
                (unsigned long long)actual, end ? (int)(end - hex) : 16, hex);
    const char *rest = end + 1;   // nothing, or exactly the line compare writes and nothing after it
    long long bytes = -1;
    if (sscanf(rest, PREREG_SFT_LINE "%16llx (%lld bytes)", &h, &bytes) == 2 && bytes >= 0)
        snprintf(want, sizeof want, PREREG_SFT_LINE "%016llx (%lld bytes)\n", h, bytes);
    if (*rest && strcmp(rest, want) != 0)
        CMP_DIE(restore, "'%s': below its hash line stands '%.80s', and only the line '" PREREG_SFT_LINE
                "<16 hex digits> (<n> bytes)' that compare writes may stand there", path, rest);
    if (strncmp(at + 1, full + strlen(text), (size_t)(rest - at - 1)) != 0) {   // not this text's hash line
        snprintf(rejected, sizeof rejected, "%s/prereg.rejected.txt", study);
        write_file_atomic(rejected, full);
        snprintf(hint, sizeof hint, "`diff %s %s` shows what differs; rerun with the options prereg.txt "
                 "lists, or give another --study", shell_word(path), shell_word(rejected));
        CMP_DIE(hint, "study '%s' was pre-registered with another configuration (its prereg.txt; this "
                "command's is in %s)", study, rejected);
    }
    free(old);
    free(full);
    return hash;
}

// sft_hash: a checkpoint's FNV-1a and size; unreadable: exit 1 with msg (a format of its path, then why) and hint
static uint64_t sft_hash(const char *sft, long long *bytes, const char *msg, const char *hint) {
    uint64_t h = 0;
    struct stat sb;
    if (file_fnv1a64(sft, &h) != 0 || stat(sft, &sb) != 0) CMP_DIE(hint, msg, sft, strerror(errno));
    if (bytes) *bytes = (long long)sb.st_size;
    return h;
}

// check_study_sft: the SFT checkpoint is still the one prereg.txt records (else exit 1: runs from two models)
static void check_study_sft(const Study *st) {
    uint64_t have = sft_hash(st->sft, NULL, "the study's SFT checkpoint '%s' cannot be read: %s",
                             "restore it: every run of the study starts from it");
    if (have != st->sft_hash)
        CMP_DIE("restore that file, or give another --study (the runs done started from the recorded one)",
                "the study's SFT checkpoint '%s' is not the one %s records: fnv1a64 %016llx, recorded "
                "%016llx (it was replaced or rewritten after the study began)", st->sft, st->prereg,
                (unsigned long long)have, (unsigned long long)st->sft_hash);
}

/* make_sft: the study's shared SFT checkpoint, made once (a failed SFT run stops compare, exit 1). Returns
   its hash from prereg.txt's line for it; without one, hashed now and the line written, unless runs have
   started (from which model cannot be told: exit 1). */
static uint64_t make_sft(const Study *st, double t0) {
    const char *path = st->prereg, *sft = st->sft;
    if (access(sft, F_OK) != 0) {
        ArgList args;
        sft_args(&args, st->o, st->sft_dir, st->o->threads);
        printf("sft: making %s (log %s/run.log)\n", sft, st->sft_dir);
        spawn_wait(st, args.argv, st->sft_dir, "the study's SFT run", sft);
        printf("sft: done in %.1f min\n", (wall_seconds() - t0) / 60.0);
    }
    char *pre = slurp(path);
    if (!pre) fail_at(__FILE__, __LINE__, "compare: cannot read back the study's prereg.txt", "");
    const char *at = strstr(pre, PREREG_HASH), *line = at ? strchr(at + 1, '\n') : NULL;
    uint64_t h = 0;
    long long bytes = 0;
    if (line && !strncmp(line + 1, PREREG_SFT_LINE, strlen(PREREG_SFT_LINE))) {
        h = strtoull(line + 1 + strlen(PREREG_SFT_LINE), NULL, 16);   // checked by write_prereg
    } else if (access(st->runs_dir, F_OK) == 0) {
        CMP_DIE("give another --study", "'%s' records no hash of the SFT checkpoint '%s' (its line '"
                PREREG_SFT_LINE "...'), and runs have started (%s): which model they started from cannot be told",
                path, sft, st->runs_dir);
    } else {
        h = sft_hash(sft, &bytes, "cannot read the study's SFT checkpoint '%s': %s", "");
        size_t n = strlen(pre) + 128;
        char *full = (char *)mallocCheck(n);
        snprintf(full, n, "%s" PREREG_SFT_LINE "%016llx (%lld bytes)\n", pre, (unsigned long long)h, bytes);
        write_file_atomic(path, full);
        printf("sft: its hash, fnv1a64 %016llx, recorded in %s\n", (unsigned long long)h, path);
        free(full);
    }
    free(pre);
    return h;
}

// ---- the one-batch prediction view: compare --one-batch P (its definitions and cache: notes/compare.md)
#define OB_SAMPLES 16
#define OB_SEED 1
#define OB_STREAM (1ull << 41)

/* onebatch_score: how many of M samples for each of the first P prompts of d (P <= d->n) the verifier
   accepts (reward 1 at format reward 0); sample s of prompt i at `temperature`, up to max_new tokens,
   on stream (seed, OB_STREAM + i·M + s), B a sampler call (the draws do not depend on B). */
static long onebatch_score(GPT *m, const Dataset *d, int P, int M, int max_new, float temperature,
                           uint64_t seed, int B) {
    KVCache kv;
    build_kvcache(&kv, &m->config, B);
    const int **pp = (const int **)mallocCheck((size_t)B * sizeof(int *));
    int *plen = (int *)mallocCheck((size_t)B * sizeof(int));
    int *comp = (int *)mallocCheck((size_t)B * max_new * sizeof(int)), *clen = (int *)mallocCheck(B * sizeof(int));
    float *lp = (float *)mallocCheck((size_t)B * max_new * sizeof(float));
    Rng *rngs = (Rng *)mallocCheck((size_t)B * sizeof(Rng));
    long total = (long)P * M, correct = 0;
    for (long s = 0; s < total; s += B) {
        int n = (int)(s + B <= total ? B : total - s);
        for (int b = 0; b < n; b++) {
            int i = (int)((s + b) / M);
            pp[b] = d->prompt + (size_t)i * d->maxT;
            plen[b] = d->prompt_len[i];
            rng_seed(&rngs[b], seed, OB_STREAM + (uint64_t)(s + b));
        }
        sample_completions(m, &kv, n, pp, plen, max_new, temperature, 0, rngs, NULL, comp, lp, clen);
        for (int b = 0; b < n; b++) {
            int i = (int)((s + b) / M);
            correct += task_reward(d->task, d->nums + (size_t)i * MAX_NUMS, d->num_count[i], d->target[i],
                                   comp + (size_t)b * max_new, clen[b], 0.0f) == 1.0f;
        }
    }
    free(pp); free(plen); free(comp); free(clen); free(lp); free(rngs);
    free_kvcache(&kv);
    return correct;
}

typedef struct OneBatch {
    int P, M;               // probe prompts (--one-batch), samples per prompt (OB_SAMPLES)
    int task, max_new;      // the reference method's --task and --max-new-tokens
    float temperature;      // its --temperature
    char val_data[512];     // its --val-data
    long sft;               // the SFT model's accepted samples among P·M (−1: not measured)
    long *after;            // per run, in the runs' order: after its first update
} OneBatch;

/* onebatch_settings: the probe's settings from the reference's resolved train line t[ref]; every method
   must share its --task, --val-data and --max-new-tokens (one probe set), else a usage error. */
static void onebatch_settings(const Study *st, const Options *t, OneBatch *ob) {
    const Options *ref = &t[st->ref];
    *ob = (OneBatch){.P = st->o->one_batch, .M = OB_SAMPLES, .task = ref->task,
                     .max_new = ref->max_new_tokens, .temperature = ref->temperature};
    snprintf(ob->val_data, sizeof ob->val_data, "%s", ref->val_data);
    for (int mi = 0; mi < st->nm; mi++)
        if (t[mi].task != ob->task || t[mi].max_new_tokens != ob->max_new || strcmp(t[mi].val_data, ob->val_data))
            usage_error("--one-batch: method '%s' runs another --task, --val-data or --max-new-tokens than "
                        "%s; the one-batch view scores every model on one probe set (leave --one-batch "
                        "out, or give every method the same)", st->m[mi].label, st->m[st->ref].label);
}

// onebatch_prompts: the probe set d (--val-data at sft's context, NULL: 1024); a usage error below P prompts
static void onebatch_prompts(const OneBatch *ob, const char *sft, Dataset *d) {
    GPT model;
    if (sft) load_checkpoint(sft, &model, 1, NULL);
    load_dataset(d, ob->val_data, sft ? model.config.max_seq_len : 1024, 0, &TASKS[ob->task]);
    if (sft) free_gpt(&model);
    if (d->n < ob->P)
        usage_error("--one-batch %d: the probe set, --val-data %s, has %d prompts", ob->P, ob->val_data, d->n);
}

/* onebatch_collect: the counts on the probe set d (freed here) of the SFT model and of every run after its
   first update (notes/compare.md), into ob: each read back from its file ("correct C\nsamples N\n"; one
   that does not hold, or for another P·M, stops compare: exit 1), else measured (onebatch_score) and
   written there; a failing run: exit 1. */
static void onebatch_collect(const Study *st, OneBatch *ob, Dataset *d) {
    char dir[1200], path[1400], model_path[1400], name[300], what[400], text[128];
    long samples = (long)ob->P * ob->M;
    ob->after = (long *)callocCheck((size_t)st->nruns, sizeof(long));
    for (int i = -1; i < st->nruns; i++) {   // -1: the SFT model
        const CmpRun *r = &st->runs[i < 0 ? 0 : i];
        long *correct = i < 0 ? &ob->sft : &ob->after[i], c = -1, n = -1;
        if (i < 0) snprintf(dir, sizeof dir, "%s/onebatch", st->study);
        else snprintf(dir, sizeof dir, "%s/onebatch/%s/seed_%d", st->study, st->m[r->method].dir, r->seed);
        make_dir(dir);
        snprintf(path, sizeof path, i < 0 ? "%s/sft.txt" : "%s/probe.txt", dir);
        char *cached = slurp(path);
        if (cached) {
            int used = 0;
            int ok = sscanf(cached, "correct %ld\nsamples %ld\n%n", &c, &n, &used) == 2 && used > 0 &&
                     !cached[used] && n == samples && c >= 0 && c <= n;
            free(cached);
            if (!ok)
                CMP_DIE("delete the file to measure it again", "%s: not 'correct C' and 'samples %ld' lines "
                        "with 0 <= C <= %ld", path, samples, samples);
            *correct = c;
            continue;
        }
        if (i >= 0) {
            check_study_sft(st);   // the first update starts from the recorded checkpoint
            ArgList a;
            method_args(&a, st->o, &st->m[r->method], r->seed, dir, st->sft);
            // later values win: the first step, nothing scored, at the run's peak --lr (--warmup 0: the
            // run's own step 1 is at lr/warmup, a warm-up artefact, not its training rate)
            // --overwrite 1: a model.bin here without its probe.txt is a try that stopped before writing it
            args_add(&a, "--budget-unit", "gen-tokens", "--budget", "1", "--eval-points", "0", "--test-limit",
                     "0", "--warmup", "0", "--overwrite", "1", NULL);
            snprintf(what, sizeof what, "the one-batch run of %s", run_name(r, st->m, name, sizeof name));
            printf("one-batch: %s's first update (log %s/run.log)\n", name, dir);
            spawn_wait(st, a.argv, dir, what, NULL);
        }
        GPT model;
        snprintf(model_path, sizeof model_path, "%s/model.bin", dir);
        load_checkpoint(i < 0 ? st->sft : model_path, &model, 1, NULL);
        *correct = onebatch_score(&model, d, ob->P, ob->M, ob->max_new, ob->temperature, OB_SEED, 64);
        free_gpt(&model);
        snprintf(text, sizeof text, "correct %ld\nsamples %ld\n", *correct, samples);
        write_file_atomic(path, text);
    }
    free_dataset(d);
}

// OneBatchVerdict: does the one-batch Δ rank the methods as training's gain does, and the gaps
typedef struct {
    int same;                            // 1: the orderings of the means agree (ties included)
    int determined;                      // 1: the reference's Δ interval excludes 0 (the scale is set)
    double predicted[CMP_MAX_METHODS];   // gain_ref · (Δ_m − Δ_ref) / Δ_ref (accuracy, NaN if !determined)
} OneBatchVerdict;

// onebatch_ordering: the labels by mean, highest first ("a > b = c"; a stable sort, equal means "=")
static void onebatch_ordering(const double *mean, int nm, const char *const *labels, char *out, size_t cap) {
    int order[CMP_MAX_METHODS];
    for (int i = 0; i < nm; i++) {   // insertion after every higher or equal mean
        int j = i;
        for (; j > 0 && mean[order[j - 1]] < mean[i]; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    size_t n = 0;
    out[0] = 0;
    for (int i = 0; i < nm && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i == 0 ? "" : mean[order[i]] == mean[order[i - 1]] ? " = " : " > ",
                              labels[order[i]]);
}

/* onebatch_verdict: from the one-batch Δ, the training gain (named gain_name) and its paired difference
   against the reference (actual), into f: the rankings of the means and the gaps (notes/compare.md). */
static OneBatchVerdict onebatch_verdict(FILE *f, int nm, int ref, const char *const *labels, const MeanCI *delta,
                                        const double *gain, const double *actual, const char *gain_name) {
    OneBatchVerdict v = {.same = 1};
    double dm[CMP_MAX_METHODS] = {0}, gm[CMP_MAX_METHODS] = {0};
    for (int i = 0; i < nm; i++) {   // means within 1e-9 are equal (the same counts summed in another order)
        dm[i] = round(delta[i].mean * 1e9) / 1e9;
        gm[i] = round(gain[i] * 1e9) / 1e9;
    }
    for (int i = 0; i < nm; i++)   // every pair ordered alike (ties included)
        for (int j = 0; j < nm; j++)
            v.same &= (dm[i] > dm[j]) - (dm[i] < dm[j]) == (gm[i] > gm[j]) - (gm[i] < gm[j]);
    char o1[1200], o2[1200];
    onebatch_ordering(dm, nm, labels, o1, sizeof o1);
    onebatch_ordering(gm, nm, labels, o2, sizeof o2);
    fprintf(f, "verdict: %s ranking: one-batch Δ %s; training (%s) %s\n", v.same ? "same" : "different", o1,
            gain_name, o2);
    const MeanCI *r = &delta[ref];
    v.determined = !isnan(r->half) && (r->mean - r->half > 0 || r->mean + r->half < 0);
    for (int i = 0; i < nm; i++) v.predicted[i] = NAN;
    if (!v.determined) {
        char cell[96];
        format_ci(r, 1, 4, cell, sizeof cell);
        fprintf(f, "  gaps: the scale is not determined: %s's one-batch Δ is %s, %s, so (Δ_m − Δ_%s)/Δ_%s "
                   "is no measure\n", labels[ref], cell, isnan(r->half) ? "with no interval (one seed)"
                   : "its 95% interval includes 0", labels[ref], labels[ref]);
        return v;
    }
    fprintf(f, "  gaps against %s in points of %s, predicted = gain_%s x (Δ_m − Δ_%s)/Δ_%s:\n", labels[ref],
            gain_name, labels[ref], labels[ref], labels[ref]);
    for (int i = 0; i < nm; i++) {
        if (i == ref) continue;
        v.predicted[i] = gain[ref] * (dm[i] - dm[ref]) / dm[ref];
        // in points, to the 2 decimals printed (+ 0.0: no "-0.00")
        double p = round(10000.0 * v.predicted[i]) / 100.0 + 0.0, a = round(10000.0 * actual[i]) / 100.0 + 0.0;
        double d = fabs(p) - fabs(a);
        fprintf(f, "    %s: predicted %+.2f, actual %+.2f: ", labels[i], p, a);
        if (d == 0 && (p > 0) == (a > 0)) fprintf(f, "the one-batch test matches it\n");
        else fprintf(f, "the one-batch test %s the gap by %.2f points%s\n", d > 0 ? "overstates" : "understates",
                     fabs(p - a), (p > 0 && a < 0) || (p < 0 && a > 0) ? " (and gets its sign wrong)" : "");
    }
    return v;
}

// print_onebatch_view: the one-batch table (Δ, test gain, val gain), then the verdict (onebatch_verdict)
static void print_onebatch_view(const Study *R) {
    FILE *f = R->out;
    const OneBatch *ob = R->ob;
    double sft_test = R->runs[0].sft_test_acc;   // the SFT model's test accuracy (−1: none), in every run
    int S = R->S, nm = R->nm, has_test = sft_test >= 0;
    double n = (double)ob->P * ob->M, *v = (double *)mallocCheck((size_t)3 * nm * S * sizeof(double));
    for (int i = 0; i < nm * S; i++) {   // the columns: one-batch Δ, test gain, val gain
        const CmpRun *r = &R->runs[i];
        v[col_at(R, 0, i)] = (double)(ob->after[i] - ob->sft) / n;
        v[col_at(R, 1, i)] = has_test ? r->test_acc - sft_test : NAN;
        v[col_at(R, 2, i)] = r->val[R->K] - r->val[0];
    }
    fprintf(f, "\none-batch prediction (pre-registered --one-batch %d): Δ = expected verifier reward after each\n"
               "  run's first update minus the SFT model's (%.4f), over the first %d validation prompts x %d\n"
               "  samples at T=%g (seed %d, the same draws for every model); gain = greedy accuracy at the end\n"
               "  minus the SFT model's (test; val: the last point minus point 0); mean ± 95%% CI over %d seeds\n",
            ob->P, (double)ob->sft / n, ob->P, ob->M, ob->temperature, OB_SEED, S);
    static const TableCol col[] = {{"one-batch Δ", 22, 4}, {"test gain", 20, 3}, {"val gain", 20, 3}};
    print_table(R, 3, col, 1, v, 1);
    MeanCI delta[CMP_MAX_METHODS];
    double gain[CMP_MAX_METHODS], actual[CMP_MAX_METHODS];
    const char *labels[CMP_MAX_METHODS] = {0};
    int g = has_test ? 1 : 2;   // the column of the gain that ranks the methods: test, else val
    for (int mi = 0; mi < nm; mi++) {
        delta[mi] = mean_ci(v + col_at(R, 0, mi), S);
        gain[mi] = mean_ci(v + col_at(R, g, mi), S).mean;
        actual[mi] = paired_diff(v + col_at(R, g, mi), v + col_at(R, g, R->ref), S).d.mean;   // (0 for ref)
        labels[mi] = R->m[mi].label;
    }
    onebatch_verdict(f, nm, R->ref, labels, delta, gain, actual, has_test ? "test gain" : "val gain");
    free(v);
}

// ---- studies that outgrow one machine: compare --plan and compare --only RUN (notes/compare.md)
typedef struct {
    int plan;             // 1: --plan
    const char *only;     // --only RUN (METHOD-DIR/seed_N), or NULL
    int nargs;            // compare's own options as given, but --plan (what the plan's lines repeat)
    char **args;
    int out;              // --plan: the real standard output (standard output is then standard error)
    int budget_given;     // --budget given (the default budget counts generated tokens)
} CmpPlan;

/* cmp_plan_args: the flags --plan, --quick (o->quick: the option table holds options with a value) and
   --only RUN / --only=RUN taken out of argv (argv[0]: "compare") into p, the options as given but --plan
   kept in p->args. Returns the new argc. */
static int cmp_plan_args(int argc, char **argv, CmpPlan *p, Options *o) {
    memset(p, 0, sizeof *p);
    p->out = -1;
    p->args = (char **)callocCheck((size_t)argc + 1, sizeof(char *));
    int n = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plan")) {
            p->plan = 1;
        } else if (!strcmp(argv[i], "--only") || !strncmp(argv[i], "--only=", 7)) {
            if (p->only) usage_error("--only given twice ('%s', then '%s'): one run a line", p->only, argv[i]);
            if (argv[i][6] == '=') p->only = argv[i] + 7;
            else if (i + 1 >= argc) usage_error("--only needs a run, METHOD/seed_N (as --plan prints it)");
            else p->only = argv[++i];
        } else {
            p->args[p->nargs++] = argv[i];
            p->budget_given |= !strcmp(argv[i], "--budget") || !strncmp(argv[i], "--budget=", 9);
            if (!strcmp(argv[i], "--quick")) o->quick = 1;
            else argv[n++] = argv[i];
        }
    }
    argv[n] = NULL;
    if (p->plan && p->only) usage_error("--plan and --only: give one (--plan prints the --only lines)");
    for (int i = 0; p->plan && i < p->nargs; i++)   // a line a run: a line end inside one would split it
        if (strpbrk(p->args[i], "\n\r"))
            usage_error("--plan: the argument '%s' holds a line end, and the plan prints one line a run", p->args[i]);
    if (p->plan) {   // only the plan's lines on standard output, so that it can be piped to a scheduler
        fflush(stdout);
        p->out = dup(STDOUT_FILENO);
        if (p->out < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
            fail_at(__FILE__, __LINE__, "compare --plan: cannot redirect standard output", strerror(errno));
    }
    return n;
}

// shell_quote: `before`, then s single-quoted for a POSIX shell (each ' written '\'')
static void shell_quote(FILE *f, const char *before, const char *s) {
    fputs(before, f);
    fputc('\'', f);
    for (; *s; s++)
        if (*s == '\'') fputs("'\\''", f);
        else fputc(*s, f);
    fputc('\'', f);
}

// cmp_print_plan: to p->out, per run not done (`lines`): cd CWD && EXE compare OPTIONS-AS-GIVEN --only RUN
static void cmp_print_plan(const CmpPlan *p, const Study *st, int lines) {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) fail_at(__FILE__, __LINE__, "compare --plan: getcwd failed", strerror(errno));
    if (strpbrk(cwd, "\n\r") || strpbrk(st->exe, "\n\r"))
        fail_at(__FILE__, __LINE__, "compare --plan: the working directory or the program's path holds a line end",
                "the plan prints one line a run: run it from a path without one");
    FILE *f = fdopen(p->out, "w");
    if (!f) fail_at(__FILE__, __LINE__, "compare --plan: fdopen failed", strerror(errno));
    for (int i = 0; i < st->nruns; i++) {
        if (st->runs[i].state == CMP_DONE) continue;
        char name[300];
        shell_quote(f, "cd ", cwd);
        shell_quote(f, " && ", st->exe);
        fputs(" compare", f);
        for (int k = 0; k < p->nargs; k++) shell_quote(f, " ", p->args[k]);
        shell_quote(f, " --only ", run_name(&st->runs[i], st->m, name, sizeof name));
        fputc('\n', f);
    }
    if (fclose(f) != 0) fail_at(__FILE__, __LINE__, "compare --plan: writing the plan failed", strerror(errno));
    fprintf(stderr, "plan: %d run%s to do of %d, one line each on standard output; then rerun this command "
                    "without --plan to collect. Each line trains with one thread (train --threads 1; its\n"
                    "  compare process waits without OpenMP threads): OMP_WAIT_POLICY changes nothing, and a busy\n"
                    "  machine slows a line only by the CPU it shares\n", lines, lines == 1 ? "" : "s", st->nruns);
}

// cmp_only_ready: --plan's prereg.txt and SFT checkpoint (and hash line, unless --init): else exit 1
static void cmp_only_ready(const Study *st, int given_init) {
    char *pre = slurp(st->prereg);
    const char *missing = !pre ? st->prereg : access(st->sft, F_OK) != 0 ? st->sft : NULL;
    if (!missing && !given_init && !strstr(pre, "\n" PREREG_SFT_LINE)) missing = "prereg.txt's SFT hash line";
    if (missing)
        CMP_DIE("run the same compare command with --plan first (it writes the pre-registration and makes the SFT "
                "checkpoint)", "compare --only: study '%s' has no %s", st->study, missing);
    free(pre);
}

/* cmp_only_select: the run --only names (as --plan prints it; else a usage error), every other run marked
   done so that compare's loop runs this one alone. Returns 1 when it is done already, else 0. */
static int cmp_only_select(const CmpPlan *p, Study *st) {
    CmpRun *r = NULL;
    char name[300], path[1200];
    for (int i = 0; i < st->nruns; i++)
        if (!strcmp(run_name(&st->runs[i], st->m, name, sizeof name), p->only)) r = &st->runs[i];
        else st->runs[i].state = CMP_DONE;
    if (!r) usage_error("--only '%s': the study has no such run (METHOD/seed_N, as --plan prints it)", p->only);
    // one --only per run at a time: a lock of the compare process's own (train's .lock is taken only
    // once its run starts, after compare has opened the run's log), then the done marker again
    make_dir(r->dir);
    run_path(r, ".only-lock", path, sizeof path);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);   // held until the process ends
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr, "error: --only '%s': %s\n  hint: another compare --only runs it now (the same plan line "
                "started twice?); wait for it, its run.log is in %s\n", p->only,
                fd < 0 ? strerror(errno) : "that run is in use", r->dir);
        exit(1);
    }
    // done before, or finished while this one waited
    if (r->state == CMP_DONE || access(run_path(r, "done", path, sizeof path), F_OK) == 0) {
        printf("done already: %s\n", p->only);
        return 1;
    }
    return 0;
}

// cmp_options: compare's defaults, then --quick's, then the options (overriding them), checked
static void cmp_options(int argc, char **argv, Options *o, CmpPlan *plan) {
    o->seeds = 5;
    o->budget_unit = BUDGET_GEN_TOKENS;
    o->budget = 1e6f;
    o->eval_points = 4;
    o->target_acc = -1.0f;
    o->init[0] = 0;
    strcpy(o->study, "runs/compare");
    strcpy(o->methods, "grpo,lambda-grpo");
    argc = cmp_plan_args(argc, argv, plan, o);
    if (o->quick) {   // CMP_QUICK_SFT and CMP_QUICK_TRAIN come first in the SFT and train lines
        o->seeds = 2;
        o->budget = 8000.0f;
        o->eval_points = 2;
        strcpy(o->study, "runs/compare-quick");
        o->threads = 1;   // the tiny SFT run: more threads cost more in start-up than they save
    }
    const char *syn = "Runs every method with every seed from one SFT checkpoint at the same budget, in\n"
                      "parallel (one thread per run), evaluates them at fixed fractions of the budget and\n"
                      "prints per-step, matched-token and matched-time views with 95% intervals and paired\n"
                      "differences against grpo. Resumable: rerun the same command to continue.\n"
                      "--threads: the study's SFT run (every compare run has one thread).\n"
                      "--quick (no value): 2 seeds, a tiny model (2 layers, width 32, 300 SFT steps) and\n"
                      "budget (8000 gen-tokens, 2 points) in runs/compare-quick; later options override it\n"
                      "(--sft-args and --train-args add to its SFT and train settings).\n"
                      "--plan (no value): write the prereg, make the SFT checkpoint, then print one shell line\n"
                      "per run not done (for a scheduler: xargs -P, GNU parallel, a Slurm array) and run\n"
                      "nothing; rerun without --plan to collect. --only METHOD/seed_N: that run alone.";
    parse_options(argc, argv, CMD_COMPARE, o, "compare", syn);
#ifdef GRPO_CUDA
    usage_error("compare runs one CPU process per core: use the CPU build (" PROG " is the CUDA build)");
#endif
    // one spelling of the study's path (prereg.txt records it): no "./" before, no "/" after, no "//"
    for (char *d; (d = strstr(o->study, "//")) != NULL;) memmove(d, d + 1, strlen(d));
    while (!strncmp(o->study, "./", 2) && o->study[2]) memmove(o->study, o->study + 2, strlen(o->study) - 1);
    for (size_t k = strlen(o->study); k > 1 && o->study[k - 1] == '/'; k--) o->study[k - 1] = 0;
    if (!(o->budget > 0)) usage_error("--budget %g: compare needs a budget > 0", o->budget);
    if (o->target_acc < 0 && o->target_acc != -1.0f)
        usage_error("--target-acc %g: give an accuracy in [0, 1], or -1 for no such view", o->target_acc);
    if (o->budget_unit != BUDGET_GEN_TOKENS && !plan->budget_given)
        usage_error("--budget-unit %s: give --budget N in %s too (the default, %.9g, counts generated tokens)",
                    BUDGET_UNIT_NAMES[o->budget_unit], BUDGET_UNIT_NAMES[o->budget_unit], o->budget);
    if (o->budget_unit == BUDGET_STEPS && o->budget != floorf(o->budget))
        usage_error("--budget %.9g: --budget-unit steps counts whole steps; give an integer", o->budget);
    if (o->budget_unit == BUDGET_STEPS && o->budget > cmp_steps_cap())
        usage_error("--budget %.9g: with --budget-unit steps at most %d (train's --steps)", o->budget, cmp_steps_cap());
    if (o->eval_points < 1 || o->eval_points > CMP_MAX_POINTS)
        usage_error("--eval-points %d: compare needs 1 to %d points", o->eval_points, CMP_MAX_POINTS);
}

// study_setup: the methods (the reference: grpo, else the first), this program's path and the paths
static void study_setup(Study *st, const Options *o) {
    char err[512];
    st->o = o;
    st->nm = parse_methods(o->methods, st->m, CMP_MAX_METHODS, err, sizeof err);
    if (st->nm < 0) usage_error("--methods '%s': %s", o->methods, err);
    for (int i = st->nm - 1; i >= 0; i--)
        if (!strcmp(st->m[i].label, "grpo")) st->ref = i;
    ssize_t len = readlink("/proc/self/exe", st->exe, sizeof st->exe - 1);
    if (len <= 0) fail_at(__FILE__, __LINE__, "compare: cannot read /proc/self/exe (the program's own path)",
                          "compare starts its runs through /proc/self/exe (Linux)");
    st->exe[len] = 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    st->jobs = o->jobs > 0 ? o->jobs : (cores > 0 ? (int)cores : 1);
    st->S = o->seeds;
    st->K = o->eval_points;
    st->nruns = st->nm * st->S;
    st->budget_axis = UNIT_AXIS[o->budget_unit];
    snprintf(st->study, sizeof st->study, "%s", o->study);
    snprintf(st->sft_dir, sizeof st->sft_dir, "%s/sft", st->study);
    snprintf(st->runs_dir, sizeof st->runs_dir, "%s/runs", st->study);
    snprintf(st->prereg, sizeof st->prereg, "%s/prereg.txt", st->study);
    if (o->init[0]) snprintf(st->sft, sizeof st->sft, "%s", o->init);
    else snprintf(st->sft, sizeof st->sft, "%s/model.bin", st->sft_dir);
}

/* prereg_text: the pre-registration's text (malloc'd): the configuration (the budget, the statistics, the
   SFT checkpoint (given: its hash into st->sft_hash) or its command line, each method's), the hypotheses. */
static char *prereg_text(Study *st, OneBatch *ob) {
    const Options *o = st->o;
    const char *ref = st->m[st->ref].label;
    ArgList args;
    Options *t = (Options *)callocCheck(CMP_MAX_METHODS, sizeof(Options));   // each method's resolved line
    char *text = NULL;
    size_t text_n = 0;
    FILE *pr = open_memstream(&text, &text_n);
    if (!pr) fail_at(__FILE__, __LINE__, "compare: open_memstream failed", oom_hint);
    fprintf(pr, "# grpo.c compare: pre-registration of the study '%s'\n", st->study);
    fprintf(pr, "# written before its first run; the hash line covers every byte above it (FNV-1a, 64 bits)\n\n");
    fprintf(pr, "configuration\n");
    fprintf(pr, "  methods: %s (paired differences against %s, on the same seeds)\n", o->methods, ref);
    fprintf(pr, "  seeds: 1..%d for every method; every run starts from the same SFT checkpoint\n", st->S);
    fprintf(pr, "  budget: %.9g %s per run; greedy validation accuracy at 0 and at %d points (1/%d..%d/%d of\n"
                "    the budget); greedy test accuracy at the end; one thread per run\n",
            o->budget, BUDGET_UNIT_NAMES[o->budget_unit], st->K, st->K, st->K, st->K);
    fprintf(pr, "  statistics: mean and 95%% interval over seeds (Student t, n-1 df); paired differences\n"
                "    against %s (mean, 95%% interval, seeds favouring each, paired t test's p, minimum\n"
                "    detectable difference at 80%% power from the paired sd); each run's values in summary.txt\n",
            ref);
    if (o->target_acc >= 0)   // only when given: the prereg (and hash) of a study without it is unchanged
        fprintf(pr, "  target: validation accuracy %.9g; generated tokens and seconds to first reach it\n"
                    "    (interpolated between evaluations; a run that does not reach it is counted as such)\n",
                o->target_acc);
    if (o->init[0]) {
        long long bytes = 0;
        st->sft_hash = sft_hash(st->sft, &bytes, "--init '%s': cannot read it: %s",
                                "give an SFT checkpoint written by ./grpo sft");
        fprintf(pr, "  sft: %s (given; %lld bytes, fnv1a64 %016llx)\n", st->sft, bytes,
                (unsigned long long)st->sft_hash);
    } else {
        sft_args(&args, o, st->sft_dir, -1);   // the thread count is not part of the configuration (same result)
        fprintf(pr, "  sft: %s, made if missing by\n", st->sft);
        resolved_config(pr, &args, 0, "the study's SFT run (--sft-args)", t);
    }
    for (int mi = 0; mi < st->nm; mi++) {
        char dir[600], context[300];
        snprintf(dir, sizeof dir, "%s/%s/seed_1", st->runs_dir, st->m[mi].dir);
        method_args(&args, o, &st->m[mi], 1, dir, st->sft);
        fprintf(pr, "  method %s (seed 1; the other seeds differ in --seed and --run-dir only):\n", st->m[mi].label);
        snprintf(context, sizeof context, "--methods: method '%.200s' (--train-args, then its own options)",
                 st->m[mi].label);
        resolved_config(pr, &args, 1, context, &t[mi]);
    }
    if (o->one_batch > 0) {   // only when given, so the prereg (and hash) of a study without it is unchanged
        onebatch_settings(st, t, ob);
        Dataset all;   // before the prereg is written: a P the file cannot hold is not registered
        onebatch_prompts(ob, NULL, &all);   // (the cut at the SFT model's context comes later)
        free_dataset(&all);
        fprintf(pr, "  one-batch: the first %d prompts of %s x %d samples at temperature %.9g, max-new-tokens %d\n"
                    "    (%s's), sampling seed %d, the same draws for every model (common random numbers); each run's\n"
                    "    first update (its command line at --warmup 0, stopped after step 1) in %s/onebatch/; reported, not tested:\n"
                    "    delta = verifier-accepted share after it minus the SFT model's, beside the training gain (test\n"
                    "    accuracy at the end minus the SFT model's; val: last point minus point 0), the rankings of\n"
                    "    the means, and predicted gap = gain_%s x (delta_m - delta_%s) / delta_%s\n",
                ob->P, ob->val_data, ob->M, ob->temperature, ob->max_new, ref, OB_SEED, st->study, ref, ref, ref);
    }
    free(t);
    fprintf(pr, "\nhypotheses (two-sided paired t tests over the seeds; Holm's correction over the study's %d\n"
                "hypotheses: each is supported when its Holm-adjusted p is below 0.05)\n", 3 * (st->nm - 1));
    static const char *what[3] = {"greedy test accuracy at the end of the budget",
                                  "validation accuracy at matched generated tokens (last point)",
                                  "validation accuracy at matched time (last point)"};
    for (int mi = 0, h = 1; mi < st->nm; mi++)
        for (int k = 0; k < 3 && mi != st->ref; k++)
            fprintf(pr, "  H%d %s vs %s: %s differs\n", h++, st->m[mi].label, ref, what[k]);
    fprintf(pr, "exploratory (reported, not tested): the per-step view; steps and tokens to peak validation\n"
                "accuracy\n");
    if (fclose(pr) != 0) fail_at(__FILE__, __LINE__, "compare: writing the pre-registration failed", oom_hint);
    return text;
}

// load_done_runs: st->runs, each run marked done read back (load_run; a bad one stops compare). Returns their count.
static int load_done_runs(Study *st) {
    char err[512], done[1200];
    int skipped = 0;
    st->runs = (CmpRun *)callocCheck((size_t)st->nruns, sizeof(CmpRun));
    for (int i = 0; i < st->nruns; i++) {
        CmpRun *r = &st->runs[i];
        r->method = i % st->nm;
        r->seed = i / st->nm + 1;
        snprintf(r->dir, sizeof r->dir, "%s/%s/seed_%d", st->runs_dir, st->m[r->method].dir, r->seed);
        if (access(run_path(r, "done", done, sizeof done), F_OK) != 0) continue;
        if (load_run(r, st->K, err, sizeof err) != 0) {
            fprintf(stderr, "error: run %s is marked done but %s\n  hint: delete %s to redo the run\n", r->dir, err,
                    done);
            exit(EXIT_INPUT);
        }
        r->state = CMP_DONE;
        skipped++;
    }
    return skipped;
}

// start_run: run r started as a child process (its leftovers from a try before `done` removed first)
static void start_run(Study *st, CmpRun *r, double t0) {
    char path[1200], name[300];
    ArgList args;
    check_study_sft(st);   // each run starts from the recorded checkpoint
    static const char *stale[] = {"model.bin", "ckpt.bin", "result.txt"};   // a try before `done`
    for (int k = 0; k < 3; k++) unlink(run_path(r, stale[k], path, sizeof path));   // (train refuses those)
    method_args(&args, st->o, &st->m[r->method], r->seed, r->dir, st->sft);
    r->pid = spawn(st, args.argv, r->dir);
    r->state = CMP_RUNNING;
    r->t_start = wall_seconds();
    printf("start: %s (log %s/run.log)\n", run_name(r, st->m, name, sizeof name), r->dir);
    print_progress(st, t0);
}

// finish_run: run r has ended with wait status `status`: checked (load_run) and marked done, or failed
static int finish_run(Study *st, CmpRun *r, int status) {
    char name[300], path[1200], err[512];
    r->wall = wall_seconds() - r->t_start;
    run_name(r, st->m, name, sizeof name);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        exit_text(status, "killed by signal", err, sizeof err);
    } else if (load_run(r, st->K, err, sizeof err) == 0) {
        write_file_atomic(run_path(r, "done", path, sizeof path), "done\n");   // last: its files are checked
        r->state = CMP_DONE;
        printf("done: %s in %.1f min\n", name, r->wall / 60.0);
        return 0;
    }
    r->state = CMP_FAILED;
    char what[320];
    snprintf(what, sizeof what, "run %s", name);
    run_failed(what, err, run_path(r, "run.log", path, sizeof path));
    return 1;
}

/* run_all: the runs not done, up to st->jobs at once, in order (seed-major: complete pairs come
   first); none is started after the first failure. Returns how many failed. */
static int run_all(Study *st, double t0) {
    int running = 0, failed = 0, next = 0;
    double last_print = wall_seconds();
    for (;;) {
        while (!failed && running < st->jobs && next < st->nruns) {
            CmpRun *r = &st->runs[next++];
            if (r->state == CMP_DONE) continue;
            start_run(st, r, t0);
            running++;
            last_print = wall_seconds();
        }
        if (running == 0) return failed;
        int status = 0;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid == 0) {
            struct timespec pause = {0, 200000000};
            nanosleep(&pause, NULL);
            if (wall_seconds() - last_print < 30.0) continue;
        } else if (pid < 0) {
            if (errno == EINTR) continue;
            fail_at(__FILE__, __LINE__, "compare: waitpid failed", "");
        } else {
            CmpRun *r = NULL;
            for (int i = 0; i < st->nruns; i++)
                if (st->runs[i].state == CMP_RUNNING && st->runs[i].pid == pid) r = &st->runs[i];
            if (!r) continue;
            running--;
            failed += finish_run(st, r, status);
        }
        print_progress(st, t0);
        last_print = wall_seconds();
    }
}

// write_results: points.csv (every point of every run), the report (stdout and summary.txt) and curves.csv
static void write_results(Study *st, const OneBatch *ob) {
    char path[1200];
    AtomicFile apts, acurves;
    snprintf(path, sizeof path, "%s/points.csv", st->study);
    FILE *pts = atomic_open(&apts, path);
    fprintf(pts, "method,seed,point,budget_spent,step,gen_tokens,flops,seconds,val_acc,test_acc\n");
    for (int i = 0; i < st->nruns; i++) {
        const CmpRun *r = &st->runs[i];
        for (int j = 0; j <= st->K; j++)
            fprintf(pts, "%s,%d,%d,%.10g,%.0f,%.0f,%.0f,%.6f,%.6f,%.6f\n", st->m[r->method].label, r->seed,
                    j, r->x[st->budget_axis][j], r->x[AX_STEP][j], r->x[AX_TOKENS][j],
                    r->x[AX_FLOPS][j], r->x[AX_SECONDS][j], r->val[j], r->test_acc);
    }
    atomic_close(&apts);
    snprintf(path, sizeof path, "%s/curves.csv", st->study);
    FILE *curves = atomic_open(&acurves, path);
    fprintf(curves, "view,method,point,x,n,mean,ci_lo,ci_hi\n");
    char *report = NULL;
    size_t report_n = 0;
    st->out = open_memstream(&report, &report_n);
    if (!st->out) fail_at(__FILE__, __LINE__, "compare: open_memstream failed", oom_hint);
    st->ob = st->o->one_batch > 0 ? ob : NULL;
    st->wl = 14;
    for (int i = 0; i < st->nm; i++) st->wl = (int)fmax(st->wl, strlen(st->m[i].label) + 2);
    print_report(st, curves);
    atomic_close(&acurves);
    if (fclose(st->out) != 0) fail_at(__FILE__, __LINE__, "compare: writing the report failed", oom_hint);
    fputs(report, stdout);
    snprintf(path, sizeof path, "%s/summary.txt", st->study);
    write_file_atomic(path, report);
    free(report);
    printf("\nwrote %s/points.csv, %s/curves.csv, %s/summary.txt;\n"
           "figure: python3 notes/plot.py --compare %s\n", st->study, st->study, st->study, st->study);
}

static int cmd_compare(int argc, char **argv, Options *o) {
    static CmpPlan plan;   // static: its args stay reachable (one compare per process)
    static Study st;
    OneBatch ob = {0};
    Dataset probe = {0};   // --one-batch's probe set
    cmp_options(argc, argv, o, &plan);
    study_setup(&st, o);
    char *text = prereg_text(&st, &ob);
    if (plan.only) cmp_only_ready(&st, o->init[0] != 0);
    make_dir(st.study);
    // one compare per study at a time; an --only run does not take it (its train run locks its own directory)
    int lock = plan.only ? -1 : lock_run_dir(st.study, "--study");
    uint64_t hash = write_prereg(&st, text);
    if (!plan.only) printf("%shash: fnv1a64 %016llx (in %s)\n\n", text, (unsigned long long)hash, st.prereg);
    free(text);
    double t0 = wall_seconds();
    if (!o->init[0]) st.sft_hash = make_sft(&st, t0);
    check_study_sft(&st);
    if (o->one_batch > 0 && !plan.only)   // the probe set holds P prompts: refused before any run
        onebatch_prompts(&ob, st.sft, &probe);
    int skipped = load_done_runs(&st);
    if (plan.plan) {   // the runs not done, one command a line, to the real standard output; nothing runs
        cmp_print_plan(&plan, &st, st.nruns - skipped);
        close(lock);
        return 0;
    }
    if (plan.only && cmp_only_select(&plan, &st)) return 0;
    printf("runs: %d (%d methods x %d seeds), %d done already, %d to run, %d at once (one thread each)\n",
           st.nruns, st.nm, st.S, skipped, st.nruns - skipped, st.jobs);
    int failed = run_all(&st, t0);
    if (plan.only && !failed) return 0;   // its run is done (the marker written): no report
    if (failed) {
        fprintf(stderr, "error: %d run%s failed (logs named above); no new run was started after the first "
                        "failure. Finished runs are kept: rerun the same command to run the rest.\n",
                failed, failed > 1 ? "s" : "");
        exit(EXIT_INPUT);
    }
    // every run scored the same test set (one --test-limit for all): a result.txt of another size
    // would enter the test table beside the others, or blank it as "not evaluated"
    for (int i = 1; i < st.nruns; i++)
        if (st.runs[i].test_n != st.runs[0].test_n) {
            fprintf(stderr, "error: %s/result.txt: test_n %d, but %s/result.txt has %d: the runs of one study "
                    "score one test set\n  hint: delete that run's done marker to redo it\n", st.runs[i].dir,
                    st.runs[i].test_n, st.runs[0].dir, st.runs[0].test_n);
            exit(EXIT_INPUT);
        }
    if (o->one_batch > 0) onebatch_collect(&st, &ob, &probe);
    write_results(&st, &ob);
    free(st.runs);
    free(ob.after);
    close(lock);
    return 0;
}

// ----------------------------------------------------------------------------
// Command line

static void print_usage(void) {
    printf("grpo.c: GRPO and λ-GRPO (Sullivan & Koller, arXiv 2509.21154) in one C file\n\n"
           "usage: " PROG " <command> [--option value ...]    (" PROG " <command> --help for options)\n\n"
           "commands:\n"
           "  sft      supervised fine-tuning on demonstrations (countdown's, or --task chain-sum's)\n"
           "  train    GRPO / λ-GRPO / MC-PRM / PPO on a task (--task) from an SFT checkpoint\n"
           "  eval     score a checkpoint: greedy accuracy and pass@k\n"
           "  sample   sample a group for one prompt and draw its prefix tree B(G), R̂ beside V̂\n"
           "  tree     the paper's synthetic experiment (Table 1): GRPO vs λ-GRPO (+ MC-PRM, PPO) on a tree\n"
           "  check    advantages, |λ|, weights, loss and gradients for a batch from another trainer\n"
           "  verify   score prompt<TAB>completion lines with the task's verifier (--task)\n"
           "  bench    training and sampling throughput\n"
           "  compare  methods x seeds at one budget from one SFT checkpoint, with confidence intervals\n");
}

/* Standard error through one escaper: every message that quotes input (a line of a data or check
   file, a name, a path) shows the bytes that could steer a terminal (the C0 controls but newline
   and tab, DEL) as \xHH, so that a file can clear no screen and set no window title. UTF-8
   passes unchanged. main installs it (glibc's fopencookie; elsewhere standard error is as it is). */
#ifdef __GLIBC__
static ssize_t stderr_escaped_write(void *cookie, const char *buf, size_t n) {
    (void)cookie;
    char out[1024];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *u = (const unsigned char *)buf + i;
        unsigned char ch = u[0];
        // a UTF-8 sequence's length; 0: invalid, or U+0080..U+009F (C1 controls: ESC's 8-bit forms)
        size_t len = ch < 0x80 ? 1 : ch < 0xc2 ? 0 : ch < 0xe0 ? 2 : ch < 0xf0 ? 3 : ch < 0xf5 ? 4 : 0;
        for (size_t j = 1; j < len; j++)
            if (i + j >= n || (u[j] & 0xc0) != 0x80) len = 0;
        if (len == 2 && ch == 0xc2 && u[1] < 0xa0) len = 0;
        if ((len == 1 && ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f || len == 0)
            k += (size_t)snprintf(out + k, 5, "\\x%02x", ch);
        else {
            memcpy(out + k, u, len);
            k += len;
            i += len - 1;
        }
        if (k + 8 >= sizeof out || i + 1 == n) {
            for (size_t w = 0; w < k;) {
                ssize_t r = write(STDERR_FILENO, out + w, k - w);
                if (r < 0 && errno == EINTR) continue;
                if (r <= 0) return -1;
                w += (size_t)r;
            }
            k = 0;
        }
    }
    return (ssize_t)n;
}
static void escape_stderr(void) {
    FILE *e = fopencookie(NULL, "w", (cookie_io_functions_t){NULL, stderr_escaped_write, NULL, NULL});
    if (e && setvbuf(e, NULL, _IONBF, 0) == 0) stderr = e;
}
#else
static void escape_stderr(void) {}
#endif

#ifndef TESTING
int main(int argc, char **argv) {
    escape_stderr();
    atexit(check_stdout);   // also covers the exit(0) paths, such as --help
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        print_usage();
        return argc < 2 ? EXIT_USAGE : 0;
    }
    Options o;
    default_options(&o);
    const char *cmd = argv[1];
    static const struct { const char *name; int (*run)(int, char **, Options *); int advises; } CMDS[] = {
        {"sft", cmd_sft, 1},   {"train", cmd_train, 1},     {"eval", cmd_eval, 1},   {"sample", cmd_sample, 1},
        {"check", cmd_check, 0}, {"verify", cmd_verify, 0}, {"bench", cmd_bench, 1}, {"tree", cmd_tree, 1},
        {"compare", cmd_compare, 1}};
    for (size_t i = 0; i < sizeof CMDS / sizeof CMDS[0]; i++) {
        if (strcmp(cmd, CMDS[i].name)) continue;
        // before the command reads or writes anything, with argv as typed (check and verify take
        // milliseconds: no advice about a wait policy for them)
        if (CMDS[i].advises) warn_if_busy(cmd, argv);
        return CMDS[i].run(argc - 1, argv + 1, &o);   // the command's options follow its name
    }
    fprintf(stderr, "usage error: unknown command '%s'\n  (run '" PROG " --help')\n", cmd);
    return EXIT_USAGE;
}
#endif
