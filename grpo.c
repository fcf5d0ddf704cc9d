/*
grpo.c: a minimal, readable, single-file reference implementation of GRPO and λ-GRPO.

What this file is
  A tiny GPT-2-style transformer (character-level tokenizer, forward and backward passes
  written out by hand, AdamW), a checkable task (countdown) with its verifier, a group
  sampler with a KV cache, the prefix tree B(G) of a group (the "process sets"), and the
  two objectives:
    GRPO     Shao et al. 2024 (DeepSeekMath), with the conventions of TRL and verl.
    λ-GRPO   Sullivan & Koller, "GRPO is Secretly a Process Reward Model",
             arXiv 2509.21154 (ICML 2026); authors' code github.com/coli-saar/grpo-prm
             (lambda_grpo/utils.py builds the tree, lambda_grpo/trainer.py the loss).
  It runs on the CPU with OpenMP. `make cuda` builds the CUDA variant (-DGRPO_CUDA, with
  grpo_kernels.cu): models, optimizer state, activations and the KV cache in GPU memory,
  every layer routed to its cuda_ twin through LAYER(), the loop, sampler control, verifier,
  tree and objectives still here on the host (tested against this file, kernel by kernel
  and step by step, by tests/test_cuda.cu on an H200: notes/cuda-integration.md).
  Everything here is checked by tests/test_grpo.c against independent references
  (PyTorch autograd, brute-force counts, closed-form vectors, finite differences).

What it deliberately does not do
  No BPE tokenizer, no mixed precision, no distributed training, no top-k/top-p sampling
  (truncation biases the importance ratio), no value network. Where GRPO implementations
  disagree (std, epsilon, loss aggregation, KL, EOS), the choice is an option; the defaults
  are listed in README.md ("Conventions and options") and printed at start-up.

Reading order follows one GRPO step: utilities → tokenizer → model layers → model →
KV-cache decoding → log-probs → optimizer → checkpoints → task and verifier → task data →
sampler → prefix tree → objectives → training loops (SFT, GRPO, the synthetic tree task) →
eval/sample/verify → check → bench → command line.
*/
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

static void *malloc_check(size_t size, const char *file, int line) {
    void *p = malloc(size ? size : 1);
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

static FILE *fopen_check(const char *path, const char *mode, const char *file, int line) {
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        char msg[1200];
        snprintf(msg, sizeof msg, "'%s' is a directory, expected a file", path);
        fail_at(file, line, msg, "check the path");
    }
    FILE *f = fopen(path, mode);
    if (!f) {
        char msg[1200];
        snprintf(msg, sizeof msg, "cannot open '%s' (mode %s): %s", path, mode, strerror(errno));
        fail_at(file, line, msg, mode[0] == 'r' ? "check the path; run from the repository root"
                                                : "check that the directory exists and is writable");
    }
    return f;
}
#define fopenCheck(path, mode) fopen_check(path, mode, __FILE__, __LINE__)

// fread that treats a short read as a truncated file.
static void fread_check(void *ptr, size_t size, size_t n, FILE *f, const char *what,
                        const char *file, int line) {
    size_t got = fread(ptr, size, n, f);
    if (got != n) {
        char msg[512];
        snprintf(msg, sizeof msg, "file truncated or unreadable while reading %s (%zu of %zu items)",
                 what, got, n);
        fail_at(file, line, msg, "the file is incomplete or of another format; re-create it");
    }
}
#define freadCheck(ptr, size, n, f, what) fread_check(ptr, size, n, f, what, __FILE__, __LINE__)

static void fwrite_check(const void *ptr, size_t size, size_t n, FILE *f, const char *file, int line) {
    if (fwrite(ptr, size, n, f) != n) {
        char msg[256];
        snprintf(msg, sizeof msg, "write failed: %s", strerror(errno));
        fail_at(file, line, msg, "is the disk full?");
    }
}
#define fwriteCheck(ptr, size, n, f) fwrite_check(ptr, size, n, f, __FILE__, __LINE__)

// fclose that also reports an earlier failed write: fprintf into a full disk fails when the
// buffer is written out, which may be long before fclose (whose own flush then succeeds).
static void fclose_check(FILE *f, const char *file, int line) {
    int failed_before = ferror(f);
    errno = 0;
    if (fclose(f) != 0 || failed_before) {
        char msg[256];
        snprintf(msg, sizeof msg, "write failed: %s",
                 errno ? strerror(errno) : "an earlier write to the file failed");
        fail_at(file, line, msg, "is the disk full?");
    }
}
#define fcloseCheck(f) fclose_check(f, __FILE__, __LINE__)

/* check_stdout: run at exit (main registers it). Standard output is buffered, so a write
   error (`./grpo check F > /dev/full`, a full disk) may only show when it is flushed at
   exit, after the command returned 0; the error then ends the program with status 1. */
static void check_stdout(void) {
    errno = 0;
    int failed = fflush(stdout) != 0;
    int err = errno;
    if (failed || ferror(stdout)) {
        fprintf(stderr, "error: writing standard output: %s\n",
                err ? strerror(err) : "an earlier write failed");
        _exit(EXIT_INPUT);
    }
}

// 1 when paths a and b name the same existing file (same device and inode), else 0
static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// the program's name in usage messages
#ifdef GRPO_CUDA
#define PROG "./grpo_cuda"
#else
#define PROG "./grpo"
#endif

// Usage error: names the option and what was expected, exit status 2.
static void usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "usage error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n  (run '" PROG " --help' or '" PROG " <command> --help')\n");
    va_end(ap);
    exit(EXIT_USAGE);
}

// mkdir -p for one level of run directory (parents must exist, or are made too).
static void make_dir(const char *path) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') { *p = 0; mkdir(tmp, 0777); *p = '/'; }
    }
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST) {
        char msg[1200];
        snprintf(msg, sizeof msg, "cannot create directory '%s': %s", path, strerror(errno));
        fail_at(__FILE__, __LINE__, msg, "check --run-dir");
    }
}

/* lock_run_dir: an exclusive lock on RUN_DIR/.lock for the rest of the run, so that two
   runs never write the same checkpoints and logs (their files would interleave, and the
   run that printed '# saved' could own the other's model). The kernel drops the lock when
   the process ends, however it ends, so a .lock file left behind is harmless. The file
   holds the owner's pid for the message. Returns the descriptor for unlock_run_dir. */
static int lock_run_dir(const char *run_dir) {
    char path[1100], msg[1400];
    snprintf(path, sizeof path, "%s/.lock", run_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        snprintf(msg, sizeof msg, "cannot create lock file '%s': %s", path, strerror(errno));
        fail_at(__FILE__, __LINE__, msg, "check that --run-dir is writable");
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        char owner[32] = "";
        ssize_t n = pread(fd, owner, sizeof owner - 1, 0);
        owner[n > 0 ? n : 0] = 0;
        owner[strcspn(owner, "\n")] = 0;
        if (err == EWOULDBLOCK)
            snprintf(msg, sizeof msg, "run directory '%s' is in use by another run (pid %s)", run_dir,
                     owner[0] ? owner : "unknown");
        else
            snprintf(msg, sizeof msg, "cannot lock '%s': %s", path, strerror(err));
        fail_at(__FILE__, __LINE__, msg, "wait for that run to end, or give this one another --run-dir");
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, len, 0) != len) {
        snprintf(msg, sizeof msg, "cannot write lock file '%s': %s", path, strerror(errno));
        fail_at(__FILE__, __LINE__, msg, "is the disk full?");
    }
    return fd;
}

// Ends the run's hold on its directory (the lock goes with the descriptor).
static void unlock_run_dir(int fd) { close(fd); }

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
// sampled completion can own one (completion c of step s uses stream id s*65536 + c).
typedef struct { uint64_t s[4]; } Rng;

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
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl64(s[3], 45);
    return result;
}

// uniform in [0, 1) with 24 random bits (exactly representable as float)
static float rng_uniform(Rng *r) { return (rng_u64(r) >> 40) * (1.0f / 16777216.0f); }
// uniform integer in [0, n)
static int rng_int(Rng *r, int n) { return (int)((rng_u64(r) >> 33) % (uint64_t)n); }
// standard normal (Box-Muller, one value per call; for initialisation only)
static float rng_normal(Rng *r) {
    double u1 = ((rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

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
        if (t < 0) { if (bad_pos) *bad_pos = i; return -1; }
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
            int m = (int)strlen(name);
            if (k + m >= cap) break;
            memcpy(out + k, name, m); k += m;
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
// Read from "---- layers" below: the fast-path helpers come first only because C wants
// them declared before the layers call them.

// ---- fast paths: skip on first reading (register tiles, panel packing, vector exp; notes/cpu-fast-paths.md)
// Each helper computes the plain formula stated above it, in an order that keeps the vector
// units busy; the long why is in the notes file.

// matmul's register tile: MM_R rows x MM_W outputs, 12 of the 16 AVX registers (6 of AVX-512's 32)
#define MM_R 6      // rows per register tile
#define MM_W 16     // outputs per register tile: two AVX vectors, one AVX-512 vector
#define MM_NB 128   // rows per task in out and dinp
#define MM_OB 96    // outputs per task in dweight (at most)
#define MM_IG 8     // column panels per task in dweight
#define MM_KB 256   // rows of inp per dweight panel
#define MM_KC 64    // terms per partial sum in mm_tile

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }

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

// panel (rows, MM_W) = columns [0, w) of src (rows, ld), zero beyond w. The full-width case
// is a fixed-size copy that gcc does in two vector moves (it would call memcpy per row).
static void pack_panel(float *panel, const float *src, size_t ld, int rows, int w) {
    for (int k = 0; k < rows; k++) {
        float *p = panel + (size_t)k * MM_W;
        const float *s = src + (size_t)k * ld;
        if (w == MM_W) {
            #pragma omp simd
            for (int j = 0; j < MM_W; j++) p[j] = s[j];
        } else {
            for (int j = 0; j < MM_W; j++) p[j] = j < w ? s[j] : 0.0f;
        }
    }
}

// panel (K, MM_W) = rows [0, w) of src (w, K) transposed, zero beyond w
static void pack_panel_t(float *panel, const float *src, int K, int w) {
    for (int j = 0; j < MM_W; j++)
        for (int k = 0; k < K; k++)
            panel[(size_t)k * MM_W + j] = j < w ? src[(size_t)j * K + k] : 0.0f;
}

// panels s = 0, 1, ... (rows, MM_W), pstride floats apart: columns [16s, 16s + 16) of src
// (rows, ld) up to column w, zero beyond. Reads src row by row (one contiguous stretch per
// row), which the hardware prefetcher streams, unlike one panel's 16 columns of every row.
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

/* mm_rows: rows [n0, nend) of out (rows ldo apart, columns [0, w)) from rows of A (N rows of
   K floats, lda apart) times panel (K, MM_W), MM_R rows at a time (past row N-1 the tile
   reads row N-1 again and stores nothing): out = acc + bias[j] (bias may be NULL), or
   out += acc with accumulate. The row loop of matmul_forward and of matmul_backward's dinp.
   Not inlined: inside the callers' parallel regions gcc spills the tile's row pointers. */
__attribute__((noinline))
static void mm_rows(float *out, size_t ldo, const float *A, size_t lda, int N, int n0, int nend,
                    const float *panel, int K, int w, const float *bias, int accumulate) {
    float b[MM_W];
    for (int j = 0; j < MM_W; j++) b[j] = bias && j < w ? bias[j] : 0.0f;
    for (int n = n0; n < nend; n += MM_R) {
        const float *a[MM_R];
        for (int r = 0; r < MM_R; r++) a[r] = A + (size_t)imin(n + r, N - 1) * lda;
        // the next tile's output rows (ldo floats apart, so not prefetched by the CPU) load
        // while this tile computes
        for (int r = MM_R; r < 2 * MM_R && n + r < nend; r++)
            __builtin_prefetch(out + (size_t)(n + r) * ldo, 1);
        float acc[MM_R][MM_W];
        mm_tile(acc, a, 1, panel, K);
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

/* mm_cols: outputs [o0, oend) of a dweight-like product, out[o, 0:w) += Σ_k A[k, o] panel[k, :]
   for k < K (A: K rows of lda floats, panel (K, MM_W)), MM_R outputs at a time (past output
   lda-1 the tile reads it again and stores nothing). The tile loop of matmul_backward's dweight. */
__attribute__((noinline))
static void mm_cols(float *out, size_t ldo, const float *A, size_t lda, int o0, int oend,
                    const float *panel, int K, int w) {
    for (int o = o0; o < oend; o += MM_R) {
        const float *a[MM_R];
        for (int r = 0; r < MM_R; r++) a[r] = A + imin(o + r, (int)lda - 1);
        float acc[MM_R][MM_W];
        mm_tile(acc, a, lda, panel, K);
        for (int r = 0; r < MM_R && o + r < oend; r++) {
            float *d = out + (size_t)(o + r) * ldo;
            if (w == MM_W) {
                #pragma omp simd
                for (int j = 0; j < MM_W; j++) d[j] += acc[r][j];
            } else {
                for (int j = 0; j < w; j++) d[j] += acc[r][j];
            }
        }
    }
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

// Row sums, 16 partial sums wide: a float sum written as one chain runs one term at a time
// (gcc may not reorder it). The 16 partial sums are added pairwise at the end, so the order is
// the same on every instruction set and thread count.
#define SUM_W 16

// Σ_i x[i], i < n
static inline float sum16(const float *x, int n) {
    float acc[SUM_W] = {0};
    int nw = n / SUM_W * SUM_W;
    for (int i = 0; i < nw; i += SUM_W)
        #pragma omp simd
        for (int j = 0; j < SUM_W; j++) acc[j] += x[i + j];
    for (int i = nw; i < n; i++) acc[i - nw] += x[i];
    for (int w = SUM_W / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    return acc[0];
}

// Σ_i x[i] y[i], i < n
static inline float dot16(const float *x, const float *y, int n) {
    float acc[SUM_W] = {0};
    int nw = n / SUM_W * SUM_W;
    for (int i = 0; i < nw; i += SUM_W)
        #pragma omp simd
        for (int j = 0; j < SUM_W; j++) acc[j] += x[i + j] * y[i + j];
    for (int i = nw; i < n; i++) acc[i - nw] += x[i] * y[i];
    for (int w = SUM_W / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    return acc[0];
}

// Attention's sums: vector loops across 8 positions or 8 channels, never along a dot product.

// s[t2] = scale * Σ_i q[i] kt[i*Tp + t2] for t2 < n8 (a multiple of 8; kt padded to match).
// Even and odd i go to two sums. The positions go 32 at a time while they can (8 sums in
// flight, not 2: a head's sums are too short to hide the FMA latency otherwise), then 8 at a
// time; each sum is the same either way.
static inline void attn_scores(float *s, const float *q, const float *kt, int hs, int Tp, int n8, float scale) {
    int t0 = 0;
    for (; t0 + 32 <= n8; t0 += 32) {
        float x[32] = {0}, y[32] = {0};
        int i = 0;
        for (; i + 1 < hs; i += 2) {
            float q0 = q[i], q1 = q[i + 1];
            const float *k0 = kt + i * Tp + t0, *k1 = k0 + Tp;
            #pragma omp simd
            for (int j = 0; j < 32; j++) {
                x[j] += q0 * k0[j];
                y[j] += q1 * k1[j];
            }
        }
        if (i < hs)
            for (int j = 0; j < 32; j++) x[j] += q[i] * kt[i * Tp + t0 + j];
        #pragma omp simd
        for (int j = 0; j < 32; j++) s[t0 + j] = (x[j] + y[j]) * scale;
    }
    for (; t0 < n8; t0 += 8) {
        float x[8] = {0}, y[8] = {0};
        int i = 0;
        for (; i + 1 < hs; i += 2) {
            float q0 = q[i], q1 = q[i + 1];
            #pragma omp simd
            for (int j = 0; j < 8; j++) {
                x[j] += q0 * kt[i * Tp + t0 + j];
                y[j] += q1 * kt[(i + 1) * Tp + t0 + j];
            }
        }
        if (i < hs)
            for (int j = 0; j < 8; j++) x[j] += q[i] * kt[i * Tp + t0 + j];
        for (int j = 0; j < 8; j++) s[t0 + j] = (x[j] + y[j]) * scale;
    }
}

// y[i] = (accumulate ? y[i] : 0) + Σ_{t0 <= t < t1} w[t*ws] x[t*xs + i], for i < hs.
// Even and odd t go to two sums; the channels go 32 at a time while they can (8 sums in
// flight), then 8 at a time, then one by one; each sum is the same either way.
static inline void attn_rows(float *y, int accumulate, const float *w, size_t ws,
                             const float *x, size_t xs, int t0, int t1, int hs) {
    int i0 = 0;
    for (; i0 + 32 <= hs; i0 += 32) {
        float acc[32] = {0}, acc2[32] = {0};
        int t = t0;
        for (; t + 1 < t1; t += 2) {
            float w0 = w[t * ws], w1 = w[(t + 1) * ws];
            const float *x0 = x + t * xs + i0, *x1 = x0 + xs;
            #pragma omp simd
            for (int j = 0; j < 32; j++) {
                acc[j] += w0 * x0[j];
                acc2[j] += w1 * x1[j];
            }
        }
        if (t < t1)
            for (int j = 0; j < 32; j++) acc[j] += w[t * ws] * x[t * xs + i0 + j];
        #pragma omp simd
        for (int j = 0; j < 32; j++) y[i0 + j] = (accumulate ? y[i0 + j] : 0.0f) + (acc[j] + acc2[j]);
    }
    for (; i0 + 8 <= hs; i0 += 8) {
        float acc[8] = {0}, acc2[8] = {0};
        int t = t0;
        for (; t + 1 < t1; t += 2) {
            float w0 = w[t * ws], w1 = w[(t + 1) * ws];
            const float *x0 = x + t * xs + i0, *x1 = x0 + xs;
            #pragma omp simd
            for (int j = 0; j < 8; j++) {
                acc[j] += w0 * x0[j];
                acc2[j] += w1 * x1[j];
            }
        }
        if (t < t1)
            for (int j = 0; j < 8; j++) acc[j] += w[t * ws] * x[t * xs + i0 + j];
        for (int j = 0; j < 8; j++) y[i0 + j] = (accumulate ? y[i0 + j] : 0.0f) + (acc[j] + acc2[j]);
    }
    for (int i = i0; i < hs; i++) {   // channels left over when hs is not a multiple of 8
        float acc = 0.0f;
        for (int t = t0; t < t1; t++) acc += w[t * ws] * x[t * xs + i];
        y[i] = (accumulate ? y[i] : 0.0f) + acc;
    }
}

// Reads p[0..n) once, front to back, one float per cache line, so that the hardware
// prefetcher streams it into the cache: attention then reads a sequence's rows head by head,
// hs floats out of every 3C, a pattern it picks up too late (measured: the backward pass 1.9x
// faster on cold data). The empty asm keeps the otherwise unused loads.
static inline void warm_cache(const float *p, size_t n) {
    float s = 0.0f;
    for (size_t i = 0; i < n; i += 16) s += p[i];
    __asm__ __volatile__("" : : "g"(s));
}

// ---- layers: the first reading starts here

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

// matmul: out (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC) (bias may be NULL).
// All three products (out, dinp, dweight) run on mm_tile against a "panel": the other
// operand's block copied into a zero-padded (K, MM_W) array. Each output is summed over C
// by one thread in the same order whatever N is (decoding one position gives the logits of
// the full forward, bit for bit) and whatever the number of threads. The weight's panels
// are packed once per call, into one buffer of ~OC*C floats, before the row loop.
static void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                           int N, int C, int OC) {
    int nob = (OC + MM_W - 1) / MM_W;
    int nnb = (N + MM_NB - 1) / MM_NB;
    size_t psize = (size_t)C * MM_W;
    if (nnb == 1) {   // one block of rows (a decode step): each panel is used once, packed by its task
        #pragma omp parallel for
        for (int ob = 0; ob < nob; ob++) {
            int o0 = ob * MM_W;
            int ow = imin(MM_W, OC - o0);
            float panel[psize];
            pack_panel_t(panel, weight + (size_t)o0 * C, C, ow);
            mm_rows(out + o0, OC, inp, C, N, 0, N, panel, C, ow, bias ? bias + o0 : NULL, 0);
        }
        return;
    }
    float *panels = (float *)mallocCheck(nob * psize * sizeof(float));
    #pragma omp parallel
    {
        // panel ob: weight rows ob*16.. transposed, (C, 16)
        #pragma omp for
        for (int ob = 0; ob < nob; ob++)
            pack_panel_t(panels + ob * psize, weight + (size_t)ob * MM_W * C, C, imin(MM_W, OC - ob * MM_W));
        // a block of rows against every panel in turn: the rows stay in cache
        #pragma omp for collapse(2)
        for (int nb = 0; nb < nnb; nb++)
            for (int ob = 0; ob < nob; ob++) {
                int o0 = ob * MM_W;
                int ow = imin(MM_W, OC - o0);
                int nend = imin(N, (nb + 1) * MM_NB);
                const float *b = bias ? bias + o0 : NULL;
                mm_rows(out + o0, OC, inp, C, N, nb * MM_NB, nend, panels + ob * psize, C, ow, b, 0);
            }
    }
    free(panels);
}

// dinp (N,C) += dout (N,OC) @ weight (OC,C); dweight (OC,C) += dout^T @ inp; dbias += Σ_n dout.
// One parallel region: the three products are independent once the panels are packed.
static void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                            const float *inp, const float *weight, int N, int C, int OC) {
    int nib = (C + MM_W - 1) / MM_W;
    int nnb = (N + MM_NB - 1) / MM_NB;
    size_t psize = (size_t)OC * MM_W;
    // dweight's tasks: groups of MM_IG column panels times blocks of osz outputs, osz a
    // multiple of MM_R of at most MM_OB, with at least one block per thread (no effect on sums)
    int ngb = (nib + MM_IG - 1) / MM_IG;
    int nob = imax((OC + MM_OB - 1) / MM_OB, num_threads());
    int osz = ((OC + nob - 1) / nob + MM_R - 1) / MM_R * MM_R;
    nob = (OC + osz - 1) / osz;
    float *panels = (float *)mallocCheck(nib * psize * sizeof(float));
    #pragma omp parallel
    {
        // panel ib: columns ib*16.. of weight, (OC, 16)
        #pragma omp for
        for (int ib = 0; ib < nib; ib++)
            pack_panel(panels + ib * psize, weight + ib * MM_W, C, OC, imin(MM_W, C - ib * MM_W));
        // dinp[n, i0:i0+16] = Σ_o dout[n,o] W[o, i0:i0+16]
        #pragma omp for collapse(2) nowait
        for (int nb = 0; nb < nnb; nb++)
            for (int ib = 0; ib < nib; ib++) {
                int i0 = ib * MM_W;
                int iw = imin(MM_W, C - i0);
                int nend = imin(N, (nb + 1) * MM_NB);
                mm_rows(dinp + i0, C, dout, OC, N, nb * MM_NB, nend, panels + ib * psize, OC, iw, NULL, 1);
            }
        // dW[o, i0:i0+16] = Σ_n dout[n,o] inp[n, i0:i0+16]. A task is a block of outputs times
        // MM_IG column panels: it walks n in chunks of MM_KB rows, packs the chunk's panels of
        // inp and adds each panel's sums (every output sums chunk by chunk, in the same order).
        // dbias[o] = Σ_n dout[n,o], summed row by row by the tasks of the first column group,
        // while their chunk of dout is in cache.
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
    #pragma omp parallel for
    for (int b = 0; b < B; b++) {
        warm_cache(inp + (size_t)b * T * C3, (size_t)T * C3);
        for (int h = 0; h < NH; h++) {
            const float *qkv = inp + (size_t)b * T * C3 + h * hs;  // q of position t at qkv + t*C3
            float kt[hs * Tp], s[Tp];
            for (int t2 = 0; t2 < Tp; t2++)
                for (int i = 0; i < hs; i++) kt[i * Tp + t2] = t2 < T ? qkv[(size_t)t2 * C3 + C + i] : 0.0f;
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
    #pragma omp parallel for
    for (int b = 0; b < B; b++) {
        warm_cache(inp + (size_t)b * T * C3, (size_t)T * C3);
        warm_cache(dinp + (size_t)b * T * C3, (size_t)T * C3);
        warm_cache(dout + (size_t)b * T * C, (size_t)T * C);
        for (int h = 0; h < NH; h++) {
            const float *qkv = inp + (size_t)b * T * C3 + h * hs, *d = dout + (size_t)b * T * C + h * hs;
            float *dqkv = dinp + (size_t)b * T * C3 + h * hs;
            const float *A = att + ((size_t)b * NH + h) * T * T;
            float *dS = datt + ((size_t)b * NH + h) * T * T;
            float vt[hs * Tp], da[Tp];
            for (int t2 = 0; t2 < Tp; t2++)
                for (int i = 0; i < hs; i++) vt[i * Tp + t2] = t2 < T ? qkv[(size_t)t2 * C3 + 2 * C + i] : 0.0f;
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

// the memset of a model's buffers, as a layer so that LAYER() can route it to the GPU
static void memset_zero(void *p, size_t bytes) { memset(p, 0, bytes); }

// ----------------------------------------------------------------------------
// CUDA seam: the CPU/GPU boundary, every function of grpo_kernels.cu that grpo.c calls.
// gpt_* call each layer through LAYER(), which picks cuda_<name> for a model built once
// cuda_enabled is set; functions only the tests call are declared in tests/test_cuda.cu.
// More in notes/cuda-integration.md.

#ifdef GRPO_CUDA
/* The CUDA build (make cuda, -DGRPO_CUDA): grpo_kernels.cu implements every layer above as
   cuda_<name>, same arguments, DEVICE pointers (see that file's header). A model or KV cache
   built after cuda_startup() lives in GPU memory (on_device = 1) and LAYER(m, f) calls
   cuda_f for it, f otherwise, so gpt_forward, gpt_backward and gpt_decode_step are one
   algorithm for both. The loop, the sampler's softmax and RNG, the verifier, the prefix
   tree and the objectives stay on the host; per sampled token the last logits (B·V floats)
   come back, per micro-batch the log-probs come back and their gradients go down. */
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
void cuda_memset_zero(void *p, size_t bytes);
void cuda_synchronize(void);
void cuda_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C);
void cuda_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T, int C, int V);
void cuda_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                            const float *bias, int N, int C);
void cuda_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                             const float *weight, const float *mean, const float *rstd, int N, int C);
void cuda_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC);
void cuda_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                          const float *weight, int N, int C, int OC);
void cuda_attention_forward(float *out, float *att, const float *inp, int B, int T, int C, int NH);
void cuda_attention_backward(float *dinp, float *datt, const float *dout, const float *inp, const float *att,
                             int B, int T, int C, int NH);
void cuda_gelu_forward(float *out, const float *inp, size_t N);
void cuda_gelu_backward(float *dinp, const float *inp, const float *dout, size_t N);
void cuda_residual_forward(float *out, const float *a, const float *b, size_t N);
void cuda_residual_backward(float *da, float *db, const float *dout, size_t N);
void cuda_encoder_forward_pos(float *out, const int *tokens, const int *pos, const float *wte, const float *wpe,
                              int B, int C);
void cuda_kv_append(float *kt, float *v, const float *qkv, const int *pos, int B, int C, int maxT);
void cuda_attention_decode(float *atty, const float *kt, const float *v, const float *qkv, const int *pos,
                           int B, int C, int NH, int maxT);
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

/* cuda_startup: the CUDA build's check at start-up (every command that builds a model):
   no GPU or no driver is an error naming what is missing; then cuBLAS with TF32 off or on. */
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

// the layer f for model (or KV cache) m: cuda_f when m lives on the GPU
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
    for (int i = 0; i < n; i++) { ptrs[i] = memory; memory += sizes[i]; }
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

static void act_sizes(size_t *s, const GPTConfig *c, int B, int T) {
    size_t L = c->num_layers, C = c->channels, NH = c->num_heads, V = c->vocab_size, BT = (size_t)B * T;
    size_t v[NUM_ACT_TENSORS] = {BT * C, L * BT * C, L * BT, L * BT, L * BT * 3 * C, L * BT * C,
                                 L * B * NH * T * T, L * BT * C, L * BT * C, L * BT * C, L * BT, L * BT,
                                 L * BT * 4 * C, L * BT * 4 * C, L * BT * C, L * BT * C, BT * C, BT, BT,
                                 BT * V, BT * V};
    memcpy(s, v, sizeof v);
}

// Key/value cache for incremental decoding: keys k (L, B, C, Tp) stored transposed (for each
// channel, its keys over positions; Tp = maxT rounded up to a multiple of 8) so that a decode
// step computes attention scores exactly as attention_forward does; values v (L, B, maxT, C);
// plus scratch for one position of each of the B sequences.
typedef struct {
    int B;
    float *k, *v;
    float *x, *ln, *qkv, *atty, *proj, *fch, *fch_gelu, *logits;
    float *mean, *rstd;       // (B) LayerNorm statistics of the step (not kept)
#ifdef GRPO_CUDA
    int on_device;            // 1: all of the above but logits (the sampler's copy) on the GPU
    float *dev_logits;        // (B, V) the logits on the GPU
    int *tokens, *pos;        // (B) the step's token ids and positions on the GPU
#endif
} KVCache;

typedef struct {
    GPTConfig config;
    ParameterTensors params;  size_t param_sizes[NUM_PARAM_TENSORS];
    float *params_memory;     size_t num_parameters;
    ParameterTensors grads;   float *grads_memory;
    float *m_memory, *v_memory;         // AdamW first and second moments
    int max_batch;                      // activations are allocated for (max_batch, maxT)
    ActivationTensors acts;   float *acts_memory;  size_t acts_capacity;
    ActivationTensors grads_acts; float *grads_acts_memory;
    int B, T;                           // shape of the last forward pass
#ifdef GRPO_CUDA
    int on_device;                      // 1: every array above lives in GPU memory
    int *dev_inputs, *dev_targets;      // (max_batch, maxT) the batch's token ids and targets
    float *dev_logp, *dev_dlogp;        // (max_batch, maxT) log-probs and their gradients
    unsigned char *dev_allowed;         // (V) the token mask of the log-probs
#endif
} GPT;

#ifdef GRPO_CUDA
// Moves a model built on the host to the GPU: parameters and AdamW moments are copied,
// gradients start at zero, activations are left unset (every pass writes them first).
static void gpt_to_device(GPT *m) {
    size_t pb = m->num_parameters * sizeof(float), ab = m->acts_capacity * sizeof(float);
    size_t BT = (size_t)m->max_batch * m->config.max_seq_len;
    float *host[4] = {m->params_memory, m->grads_memory, m->m_memory, m->v_memory};
    float **dev[4] = {&m->params_memory, &m->grads_memory, &m->m_memory, &m->v_memory};
    for (int i = 0; i < 4; i++) {
        *dev[i] = (float *)cuda_malloc(pb);
        cuda_memcpy_h2d(*dev[i], host[i], pb);
        free(host[i]);
    }
    free(m->acts_memory); free(m->grads_acts_memory);
    m->acts_memory = (float *)cuda_malloc(ab);
    m->grads_acts_memory = (float *)cuda_malloc(ab);
    point_tensors((float **)&m->params, m->params_memory, m->param_sizes, NUM_PARAM_TENSORS);
    point_tensors((float **)&m->grads, m->grads_memory, m->param_sizes, NUM_PARAM_TENSORS);
    m->dev_inputs = (int *)cuda_malloc(BT * sizeof(int));
    m->dev_targets = (int *)cuda_malloc(BT * sizeof(int));
    m->dev_logp = (float *)cuda_malloc(BT * sizeof(float));
    m->dev_dlogp = (float *)cuda_malloc(BT * sizeof(float));
    m->dev_allowed = (unsigned char *)cuda_malloc(m->config.vocab_size);
    m->on_device = 1;
}

static void free_gpt_device(GPT *m) {
    cuda_free(m->params_memory); cuda_free(m->grads_memory); cuda_free(m->m_memory); cuda_free(m->v_memory);
    cuda_free(m->acts_memory); cuda_free(m->grads_acts_memory);
    cuda_free(m->dev_inputs); cuda_free(m->dev_targets); cuda_free(m->dev_logp); cuda_free(m->dev_dlogp);
    cuda_free(m->dev_allowed);
}
#endif

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
#ifdef GRPO_CUDA
    if (cuda_enabled) gpt_to_device(m);   // initialised here, then moved
#endif
}

static void free_gpt(GPT *m) {
#ifdef GRPO_CUDA
    if (m->on_device) { free_gpt_device(m); return; }
#endif
    free(m->params_memory); free(m->grads_memory); free(m->m_memory); free(m->v_memory);
    free(m->acts_memory); free(m->grads_acts_memory);
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
}

/* gpt_forward: inputs (B,T) token ids → acts.logits (B,T,V), logits at position t predict
   token t+1. Sequences shorter than T are padded at the end; causal attention means the
   padding never changes the logits of earlier positions. */
static void gpt_forward(GPT *m, const int *inputs, int B, int T) {
    gpt_set_shape(m, B, T);
    GPTConfig c = m->config;
    int L = c.num_layers, C = c.channels, NH = c.num_heads, V = c.vocab_size;
    size_t BT = (size_t)B * T;
    ParameterTensors p = m->params;
    ActivationTensors a = m->acts;
#ifdef GRPO_CUDA
    if (m->on_device) {   // the batch's token ids go to the GPU once per forward
        cuda_memcpy_h2d(m->dev_inputs, inputs, BT * sizeof(int));
        inputs = m->dev_inputs;
    }
#endif
    LAYER(m, encoder_forward)(a.encoded, inputs, p.wte, p.wpe, B, T, C);
    for (int l = 0; l < L; l++) {
        float *residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * BT * C;
        float *ln1 = a.ln1 + l * BT * C, *qkv = a.qkv + l * BT * 3 * C, *atty = a.atty + l * BT * C;
        float *att = a.att + (size_t)l * B * NH * T * T, *attproj = a.attproj + l * BT * C;
        float *res2 = a.residual2 + l * BT * C, *ln2 = a.ln2 + l * BT * C;
        float *fch = a.fch + l * BT * 4 * C, *fchg = a.fch_gelu + l * BT * 4 * C;
        float *fcproj = a.fcproj + l * BT * C, *res3 = a.residual3 + l * BT * C;
        LAYER(m, layernorm_forward)(ln1, a.ln1_mean + l * BT, a.ln1_rstd + l * BT, residual,
                                    p.ln1w + l * C, p.ln1b + l * C, BT, C);
        LAYER(m, matmul_forward)(qkv, ln1, p.qkvw + (size_t)l * 3 * C * C, p.qkvb + l * 3 * C, BT, C, 3 * C);
        LAYER(m, attention_forward)(atty, att, qkv, B, T, C, NH);
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
    LAYER(m, matmul_forward)(a.logits, a.lnf, p.wte, NULL, BT, C, V);
}

static void gpt_zero_grad(GPT *m) {
    LAYER(m, memset_zero)(m->grads_memory, m->num_parameters * sizeof(float));
}

/* gpt_backward: given grads_acts.logits (B,T,V) = ∂loss/∂logits for the last forward pass,
   accumulates ∂loss/∂θ into m->grads (call gpt_zero_grad first for a fresh step).
   The residual stream's gradient lives in one buffer, dres, from the final LayerNorm down to
   the embeddings: a residual connection passes its gradient on unchanged to both branches, so
   each block reads dres as the gradient of its two projections and its LayerNorms add into
   it. (This replaces residual_backward's copies; the values and their order of addition are
   the same.) */
static void gpt_backward(GPT *m, const int *inputs) {
    GPTConfig c = m->config;
    int B = m->B;
    int T = m->T;
    int L = c.num_layers;
    int C = c.channels;
    int NH = c.num_heads;
    int V = c.vocab_size;
    size_t BT = (size_t)B * T;
    ParameterTensors p = m->params;
    ParameterTensors g = m->grads;
    ActivationTensors a = m->acts;
    ActivationTensors d = m->grads_acts;
    // every activation gradient except dlogits starts at zero
    size_t skip = (size_t)(d.logits - m->grads_acts_memory);
    LAYER(m, memset_zero)(m->grads_acts_memory, skip * sizeof(float));
    float *dres = d.residual3 + (L - 1) * BT * C;
    LAYER(m, matmul_backward)(d.lnf, g.wte, NULL, d.logits, a.lnf, p.wte, BT, C, V);
    LAYER(m, layernorm_backward)(dres, g.lnfw, g.lnfb, d.lnf, a.residual3 + (L - 1) * BT * C, p.lnfw,
                                 a.lnf_mean, a.lnf_rstd, BT, C);
    for (int l = L - 1; l >= 0; l--) {
        float *residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * BT * C;
        size_t o1 = l * BT * C;
        size_t o3 = l * BT * 3 * C;
        size_t o4 = l * BT * 4 * C;
        size_t oa = (size_t)l * B * NH * T * T;
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
        LAYER(m, attention_backward)(d.qkv + o3, d.att + oa, d.atty + o1, a.qkv + o3, a.att + oa, B, T, C, NH);
        LAYER(m, matmul_backward)(d.ln1 + o1, g.qkvw + 3 * w1, g.qkvb + l * 3 * C, d.qkv + o3, a.ln1 + o1,
                                  p.qkvw + 3 * w1, BT, C, 3 * C);
        LAYER(m, layernorm_backward)(dres, g.ln1w + l * C, g.ln1b + l * C, d.ln1 + o1, residual,
                                     p.ln1w + l * C, a.ln1_mean + l * BT, a.ln1_rstd + l * BT, BT, C);
    }
#ifdef GRPO_CUDA
    if (m->on_device) {   // the GPU needs V to give each (token, channel) of dwte one thread
        cuda_encoder_backward(g.wte, g.wpe, dres, m->dev_inputs, B, T, C, V);
        return;
    }
#endif
    encoder_backward(g.wte, g.wpe, dres, inputs, B, T, C);
}

// ----------------------------------------------------------------------------
// Incremental decoding with a key/value cache: one new token per sequence per call

static void build_kvcache(KVCache *kv, const GPTConfig *c, int B) {
    size_t L = c->num_layers, C = c->channels, T = c->max_seq_len, V = c->vocab_size, Tp = (T + 7) / 8 * 8;
#ifdef GRPO_CUDA
    memset(kv, 0, sizeof *kv);
    if (cuda_enabled) {   // the same buffers on the GPU, plus the step's inputs and logits
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
        return;
    }
#endif
    kv->B = B;
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
}

static void free_kvcache(KVCache *kv) {
#ifdef GRPO_CUDA
    if (kv->on_device) {
        float *bufs[12] = {kv->k, kv->v, kv->x, kv->ln, kv->qkv, kv->atty, kv->proj, kv->fch, kv->fch_gelu,
                           kv->mean, kv->rstd, kv->dev_logits};
        for (int i = 0; i < 12; i++) cuda_free(bufs[i]);
        cuda_free(kv->tokens); cuda_free(kv->pos); free(kv->logits);
        return;
    }
#endif
    free(kv->k); free(kv->v); free(kv->x); free(kv->ln); free(kv->qkv); free(kv->atty);
    free(kv->proj); free(kv->fch); free(kv->fch_gelu); free(kv->logits); free(kv->mean); free(kv->rstd);
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
#ifdef GRPO_CUDA
    if (kv->on_device != m->on_device) fail_at(__FILE__, __LINE__, "model and KV cache on different devices", "");
    if (m->on_device) {   // token ids and positions down (B ints each); the logits come back at the end
        cuda_memcpy_h2d(kv->tokens, tokens, (size_t)B * sizeof(int));
        cuda_memcpy_h2d(kv->pos, pos, (size_t)B * sizeof(int));
        tokens = kv->tokens; pos = kv->pos; logits = kv->dev_logits;
    }
#endif
    LAYER(m, encoder_forward_pos)(kv->x, tokens, pos, p.wte, p.wpe, B, C);
    for (int l = 0; l < L; l++) {
        float *kt = kv->k + (size_t)l * kv->B * C * Tp, *v = kv->v + (size_t)l * kv->B * maxT * C;
        LAYER(m, layernorm_forward)(kv->ln, kv->mean, kv->rstd, kv->x, p.ln1w + l * C, p.ln1b + l * C, B, C);
        LAYER(m, matmul_forward)(kv->qkv, kv->ln, p.qkvw + (size_t)l * 3 * C * C, p.qkvb + l * 3 * C, B, C, 3 * C);
        LAYER(m, kv_append)(kt, v, kv->qkv, pos, B, C, maxT);
        LAYER(m, attention_decode)(kv->atty, kt, v, kv->qkv, pos, B, C, NH, maxT);
        LAYER(m, matmul_forward)(kv->proj, kv->atty, p.attprojw + (size_t)l * C * C, p.attprojb + l * C, B, C, C);
        LAYER(m, residual_forward)(kv->x, kv->x, kv->proj, (size_t)B * C);
        LAYER(m, layernorm_forward)(kv->ln, kv->mean, kv->rstd, kv->x, p.ln2w + l * C, p.ln2b + l * C, B, C);
        LAYER(m, matmul_forward)(kv->fch, kv->ln, p.fcw + (size_t)l * 4 * C * C, p.fcb + l * 4 * C, B, C, 4 * C);
        LAYER(m, gelu_forward)(kv->fch_gelu, kv->fch, (size_t)B * 4 * C);
        LAYER(m, matmul_forward)(kv->proj, kv->fch_gelu, p.fcprojw + (size_t)l * 4 * C * C, p.fcprojb + l * C,
                                 B, 4 * C, C);
        LAYER(m, residual_forward)(kv->x, kv->x, kv->proj, (size_t)B * C);
    }
    LAYER(m, layernorm_forward)(kv->ln, kv->mean, kv->rstd, kv->x, p.lnfw, p.lnfb, B, C);
    LAYER(m, matmul_forward)(logits, kv->ln, p.wte, NULL, B, C, V);
#ifdef GRPO_CUDA
    if (m->on_device) cuda_memcpy_d2h(kv->logits, logits, (size_t)B * V * sizeof(float));
#endif
}

// ----------------------------------------------------------------------------
// Log-probabilities with temperature: logp = log_softmax(logits / temperature)[token]

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
        if (targets[n] < 0) { logp[n] = 0.0f; memset(pr, 0, V * sizeof(float)); continue; }
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
        if (targets[n] < 0) { memset(d, 0, V * sizeof(float)); continue; }
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
#ifdef GRPO_CUDA
    if (m->on_device) {
        cuda_memcpy_h2d(m->dev_targets, targets, (size_t)N * sizeof(int));
        if (allowed) cuda_memcpy_h2d(m->dev_allowed, allowed, m->config.vocab_size);
        cuda_logprob_forward(m->dev_logp, m->acts.probs, m->acts.logits, m->dev_targets, N, m->config.vocab_size,
                             temperature, allowed ? m->dev_allowed : NULL);
        cuda_memcpy_d2h(logp, m->dev_logp, (size_t)N * sizeof(float));
        return;
    }
#endif
    logprob_forward(logp, m->acts.probs, m->acts.logits, targets, N, m->config.vocab_size, temperature, allowed);
}

static void gpt_logprob_backward(GPT *m, const int *targets, const float *dlogp, int N, float temperature) {
#ifdef GRPO_CUDA
    if (m->on_device) {
        cuda_memcpy_h2d(m->dev_targets, targets, (size_t)N * sizeof(int));
        cuda_memcpy_h2d(m->dev_dlogp, dlogp, (size_t)N * sizeof(float));
        cuda_logprob_backward(m->grads_acts.logits, m->acts.probs, m->dev_targets, m->dev_dlogp, N,
                              m->config.vocab_size, temperature);
        return;
    }
#endif
    logprob_backward(m->grads_acts.logits, m->acts.probs, targets, dlogp, N, m->config.vocab_size, temperature);
}

// ----------------------------------------------------------------------------
// Optimizer: AdamW (Loshchilov & Hutter 2019; torch.optim.AdamW), global norm clipping

typedef struct {
    float lr;            // peak learning rate
    float beta1, beta2, eps;
    float weight_decay;  // decoupled, on 2-D weights only (PARAM_DECAY)
    float grad_clip;     // max global L2 norm of the gradient; 0 disables clipping
    int warmup_steps;    // linear warm-up from 0 to lr
    int total_steps;     // schedule length
    int schedule;        // 0 cosine to lr*min_lr_frac, 1 linear to lr*min_lr_frac, 2 constant
    float min_lr_frac;
} AdamWConfig;

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

/* clip_grad_norm: global L2 norm over all gradients, summed in double: each block of
   CLIP_BLOCK gradients in 8 interleaved sums (vectorized), the blocks' sums then added in
   order, so the result does not depend on the thread count; scales gradients by
   max_norm / (norm + 1e-6) when that is < 1 (as torch.nn.utils.clip_grad_norm_).
   Returns the norm before clipping (NaN/Inf if any gradient is not finite). */
#define CLIP_BLOCK 16384
static float clip_grad_norm(GPT *m, float max_norm) {
#ifdef GRPO_CUDA
    if (m->on_device) return cuda_clip_grad_norm(m->grads_memory, m->num_parameters, max_norm);
#endif
    float *grads = m->grads_memory;
    size_t n = m->num_parameters;
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
    float norm = (float)sqrt(ss);
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
#ifdef GRPO_CUDA
    if (m->on_device) {
        cuda_adamw_update(m->params_memory, m->grads_memory, m->m_memory, m->v_memory, m->param_sizes, PARAM_DECAY,
                          NUM_PARAM_TENSORS, lr, o->beta1, o->beta2, o->eps, o->weight_decay, t);
        return;
    }
#endif
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
// Checkpoints: header (magic, version, config, vocabulary), parameters, and optionally
// the AdamW state, the step counter and the RNG state so a resumed run continues bit
// for bit. Written to a temporary file of its own (PATH.tmp.<pid>.<n>), flushed, synced and
// renamed, so a crash never leaves a half-written checkpoint under the real name, and two
// processes saving to one path never write into the same file.

#define CKPT_MAGIC 0x4f505247   // "GRPO" in a little-endian file
#define CKPT_VERSION 1
#define CKPT_HEADER_INTS 32

typedef struct {
    int step;       // optimizer steps taken
    Rng rng;        // the run's data/sampling RNG after `step` steps
    int kind;       // 1: written by ./grpo sft, 2: by ./grpo train (a run resumes only its own kind)
} TrainState;

/* open_ckpt_tmp: creates a new temporary file next to path, PATH.tmp.<pid>.<n> (O_EXCL:
   never one that exists, so two processes or two saves never share one), and names it in
   tmp. The directory is the same as path's, so the final rename cannot cross file systems. */
static FILE *open_ckpt_tmp(const char *path, char *tmp, size_t cap) {
    static unsigned long counter = 0;   // saves by this process
    for (int attempt = 0; ; attempt++) {
        snprintf(tmp, cap, "%s.tmp.%ld.%lu", path, (long)getpid(), counter++);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            FILE *f = fdopen(fd, "wb");
            if (f) return f;
            close(fd);
            unlink(tmp);
        }
        if (fd >= 0 || errno != EEXIST || attempt == 1000) {
            char msg[1300];
            snprintf(msg, sizeof msg, "cannot create '%s': %s", tmp, strerror(errno));
            fail_at(__FILE__, __LINE__, msg, "check that the directory exists and is writable");
        }
    }
}

/* ckpt_write_failed: a checkpoint could not be written (disk full, file size limit, I/O
   error) at stage `what`: closes f (when still open), removes the temporary file so that
   nothing half-written stays behind, and stops the run naming the checkpoint. Whatever was
   under path before is untouched. */
static void ckpt_write_failed(FILE *f, const char *tmp, const char *path, const char *what) {
    int err = errno;
    if (f) fclose(f);
    unlink(tmp);
    char msg[1400];
    snprintf(msg, sizeof msg, "cannot save checkpoint '%s': %s failed: %s", path, what, strerror(err));
    fail_at(__FILE__, __LINE__, msg, "is the disk full? the temporary file was removed; an older file "
                                     "under that name, if any, is intact");
}

static void save_checkpoint(const char *path, const GPT *m, int with_optimizer, const TrainState *st) {
#ifdef GRPO_CUDA
    if (m->on_device) {   // a host copy of what the file holds, written by the code below
        GPT h = *m;
        size_t nb = m->num_parameters * sizeof(float);
        h.on_device = 0;
        h.params_memory = (float *)mallocCheck(nb);
        cuda_memcpy_d2h(h.params_memory, m->params_memory, nb);
        h.m_memory = h.v_memory = NULL;
        if (with_optimizer) {
            h.m_memory = (float *)mallocCheck(nb); h.v_memory = (float *)mallocCheck(nb);
            cuda_memcpy_d2h(h.m_memory, m->m_memory, nb); cuda_memcpy_d2h(h.v_memory, m->v_memory, nb);
        }
        save_checkpoint(path, &h, with_optimizer, st);
        free(h.params_memory); free(h.m_memory); free(h.v_memory);
        return;
    }
#endif
    char tmp[1100];
    FILE *f = open_ckpt_tmp(path, tmp, sizeof tmp);
    char vocab[512];
    int vlen = vocab_string(vocab, sizeof vocab);
    int32_t h[CKPT_HEADER_INTS] = {0};
    h[0] = CKPT_MAGIC; h[1] = CKPT_VERSION;
    h[2] = m->config.max_seq_len; h[3] = m->config.vocab_size; h[4] = m->config.num_layers;
    h[5] = m->config.num_heads; h[6] = m->config.channels;
    h[7] = with_optimizer; h[8] = st ? st->step : 0; h[9] = vlen;
    h[10] = st ? st->kind : 0;   // which run wrote the optimizer state: 1 sft, 2 train
    size_t np = m->num_parameters;
    int ok = fwrite(h, sizeof(int32_t), CKPT_HEADER_INTS, f) == CKPT_HEADER_INTS;
    ok = ok && fwrite(vocab, 1, vlen, f) == (size_t)vlen;
    ok = ok && fwrite(m->params_memory, sizeof(float), np, f) == np;
    if (with_optimizer) {
        ok = ok && fwrite(m->m_memory, sizeof(float), np, f) == np;
        ok = ok && fwrite(m->v_memory, sizeof(float), np, f) == np;
        ok = ok && fwrite(st->rng.s, sizeof(uint64_t), 4, f) == 4;
    }
    if (!ok) ckpt_write_failed(f, tmp, path, "write");
    if (fflush(f) != 0) ckpt_write_failed(f, tmp, path, "flush");
    if (fsync(fileno(f)) != 0) ckpt_write_failed(f, tmp, path, "fsync");
    if (fclose(f) != 0) ckpt_write_failed(NULL, tmp, path, "close");
    if (rename(tmp, path) != 0) ckpt_write_failed(NULL, tmp, path, "rename");
}

static void ckpt_error(const char *path, const char *what, const char *hint) {
    fprintf(stderr, "error: checkpoint '%s': %s\n", path, what);
    if (hint) fprintf(stderr, "  hint: %s\n", hint);
    exit(EXIT_INPUT);
}

// Reads n items of a checkpoint; a short read means the file is truncated.
static void ckpt_read(void *ptr, size_t size, size_t n, FILE *f, const char *path, const char *what) {
    errno = 0;
    if (fread(ptr, size, n, f) != n) {
        char msg[256];
        if (ferror(f)) {   // not the end of the file: the disk or the file system failed
            snprintf(msg, sizeof msg, "read error in %s: %s", what, errno ? strerror(errno) : "unknown");
            ckpt_error(path, msg, NULL);
        }
        snprintf(msg, sizeof msg, "truncated: the file ends inside %s", what);
        ckpt_error(path, msg, "the file is incomplete (interrupted copy?); use an intact checkpoint");
    }
}

// The next name of a vocabulary string (each name followed by '\n', n bytes) from *pos:
// its start and length; *pos moves past it. Returns 0 when no name is left.
static int vocab_next(const char *v, int n, int *pos, int *start, int *len) {
    if (*pos >= n) return 0;
    *start = *pos;
    while (*pos < n && v[*pos] != '\n') (*pos)++;
    *len = *pos - *start;
    (*pos)++;
    return 1;
}

// A printable copy of name[0..len) (at most 24 characters; other bytes as '?').
static void printable_name(char *out, const char *name, int len) {
    int j = 0;
    for (; j < len && j < 24; j++) out[j] = name[j] >= 32 && name[j] < 127 ? name[j] : '?';
    out[j] = 0;
}

// Says how a checkpoint's vocabulary (file_v, file_n bytes; file_size tokens in the header)
// differs from this build's: the first token whose name differs, or else the counts.
static void vocab_mismatch(char *msg, size_t cap, const char *file_v, int file_n, int file_size) {
    char ours[512], theirs_name[32] = "(none)", ours_name[32] = "(none)";
    int ours_n = vocab_string(ours, sizeof ours);
    int pa = 0, pb = 0, tok = 0;
    for (;;) {
        int sa = 0, la = 0, sb = 0, lb = 0;
        int more_a = vocab_next(file_v, file_n, &pa, &sa, &la);
        int more_b = vocab_next(ours, ours_n, &pb, &sb, &lb);
        if (!more_a && !more_b) break;   // the names agree: only the header's count differs
        if (!more_a || !more_b || la != lb || memcmp(file_v + sa, ours + sb, la)) {
            if (more_a) printable_name(theirs_name, file_v + sa, la);
            if (more_b) printable_name(ours_name, ours + sb, lb);
            snprintf(msg, cap, "vocabulary differs from this build's: token %d is '%s' in the file, "
                     "'%s' here (%d tokens in file, %d here)", tok, theirs_name, ours_name, file_size,
                     VOCAB_SIZE);
            return;
        }
        tok++;
    }
    snprintf(msg, cap, "vocabulary differs from this build's (%d tokens in file, %d here)",
             file_size, VOCAB_SIZE);
}

/* load_checkpoint: builds *m from the file (for batches of up to max_batch sequences).
   If st is not NULL the file must hold optimizer state, which is restored with the step
   and RNG. Refuses, with a message naming the file: another format (magic), another
   version, an impossible config, a vocabulary different from this build's, a truncated
   file, and trailing bytes. Returns 1 if the file holds optimizer state. */
static int load_checkpoint(const char *path, GPT *m, int max_batch, TrainState *st) {
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT)   // the usual case: no SFT run yet
        ckpt_error(path, "no such file",
                   "./grpo sft writes runs/sft/model.bin and ./grpo train runs/grpo/model.bin "
                   "(make run does both); or name another file (--init, --model, --resume)");
    FILE *f = fopenCheck(path, "rb");
    int32_t h[CKPT_HEADER_INTS];
    char msg[1024];
    if (fread(h, sizeof(int32_t), CKPT_HEADER_INTS, f) != CKPT_HEADER_INTS)
        ckpt_error(path, ferror(f) ? "read error in the header"
                                   : "file too short for a header (truncated, or not a checkpoint)", NULL);
    if (h[0] != CKPT_MAGIC)
        ckpt_error(path, "bad magic number: not a grpo.c checkpoint", "pass a model.bin written by ./grpo sft or ./grpo train");
    if (h[1] != CKPT_VERSION) {
        snprintf(msg, sizeof msg, "format version %d, this build reads version %d", h[1], CKPT_VERSION);
        ckpt_error(path, msg, "re-create the checkpoint with this build");
    }
    GPTConfig c = {h[2], h[3], h[4], h[5], h[6]};
    // the ranges of --context, --layers, --heads, --channels: every file ./grpo can write
    if (c.max_seq_len < 1 || c.max_seq_len > 1024 || c.num_layers < 1 || c.num_layers > 64 ||
        c.num_heads < 1 || c.num_heads > 64 || c.channels < 1 || c.channels > 4096 || c.channels % c.num_heads ||
        h[7] < 0 || h[7] > 1 || h[8] < 0 || h[9] < 0 || h[9] > 4096)
        ckpt_error(path, "header holds an impossible model configuration (corrupt file?)", NULL);
    {   // the file must be exactly as long as its header says, checked BEFORE allocating the model
        size_t sz[NUM_PARAM_TENSORS], np = 0;
        param_sizes(sz, &c);
        for (int i = 0; i < NUM_PARAM_TENSORS; i++) np += sz[i];
        long long want = (long long)sizeof h + h[9] + (long long)np * (long long)sizeof(float) * (h[7] ? 3 : 1) +
                         (h[7] ? 4 * (long long)sizeof(uint64_t) : 0);
        struct stat sb;
        if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && (long long)sb.st_size != want) {
            snprintf(msg, sizeof msg, "%s: the file is %lld bytes, its header describes %lld",
                     sb.st_size < want ? "file truncated" : "trailing bytes after the last tensor",
                     (long long)sb.st_size, want);
            ckpt_error(path, msg, "the file is incomplete or corrupt; re-create it");
        }
    }
    char vocab[4097], ours[512];
    ckpt_read(vocab, 1, h[9], f, path, "the vocabulary");
    vocab[h[9]] = 0;
    int vlen = vocab_string(ours, sizeof ours);
    if (c.vocab_size != VOCAB_SIZE || h[9] != vlen || memcmp(vocab, ours, vlen) != 0) {
        vocab_mismatch(msg, sizeof msg, vocab, h[9], c.vocab_size);
        ckpt_error(path, msg, "a model can only be used with the tokenizer it was trained with");
    }
    if (st && !h[7])
        ckpt_error(path, "holds no optimizer state, so a run cannot resume from it", "use --init to start a new run from it");
    build_gpt(m, c, max_batch, 0);
    float *params = m->params_memory, *mom1 = m->m_memory, *mom2 = m->v_memory;   // read into these
#ifdef GRPO_CUDA
    if (m->on_device) {   // through a host staging buffer, copied to the GPU below
        params = (float *)mallocCheck(3 * m->num_parameters * sizeof(float));
        mom1 = params + m->num_parameters; mom2 = mom1 + m->num_parameters;
    }
#endif
    ckpt_read(params, sizeof(float), m->num_parameters, f, path, "the parameters");
    if (h[7]) {
        ckpt_read(mom1, sizeof(float), m->num_parameters, f, path, "the AdamW first moments");
        ckpt_read(mom2, sizeof(float), m->num_parameters, f, path, "the AdamW second moments");
        Rng r;
        ckpt_read(r.s, sizeof(uint64_t), 4, f, path, "the RNG state");
        if (st) {
            const char *resumer = st->kind == 1 ? "sft" : "train";
            if (st->kind && h[10] != st->kind && (h[10] == 1 || h[10] == 2)) {
                snprintf(msg, sizeof msg, "was written by ./grpo %s, so './grpo %s --resume' cannot continue it",
                         h[10] == 1 ? "sft" : "train", resumer);
                ckpt_error(path, msg, st->kind == 2 ? "use --init to start a GRPO run from an SFT checkpoint"
                                                    : "resume from a checkpoint that ./grpo sft wrote");
            }
            if (st->kind && h[10] != st->kind) {   // 0: written before the kind was recorded
                snprintf(msg, sizeof msg, "unknown checkpoint kind %d (this build knows sft=1, train=2), "
                         "so './grpo %s --resume' cannot continue it", h[10], resumer);
                ckpt_error(path, msg, "re-create it with this build, or start a new run from it with --init");
            }
            st->rng = r; st->step = h[8];
        }
        else { memset(mom1, 0, m->num_parameters * sizeof(float));
               memset(mom2, 0, m->num_parameters * sizeof(float)); }
    }
    if (fgetc(f) != EOF) ckpt_error(path, "trailing bytes after the last tensor (corrupt file?)", NULL);
    if (ferror(f)) ckpt_error(path, "read error after the last tensor", NULL);
    fclose(f);
#ifdef GRPO_CUDA
    if (m->on_device) {   // without optimizer state in the file the moments stay at build_gpt's zeros
        size_t nb = m->num_parameters * sizeof(float);
        cuda_memcpy_h2d(m->params_memory, params, nb);
        if (h[7]) { cuda_memcpy_h2d(m->m_memory, mom1, nb); cuda_memcpy_h2d(m->v_memory, mom2, nb); }
        free(params);
    }
#endif
    return h[7];
}

// ----------------------------------------------------------------------------
// Task and verifier: countdown (the completion must reach the target with + − × ÷)
/* ---------------------------------------------------------------------------
 * Countdown verifier (C99, no globals, no heap allocation).
 *
 * Prompt:      "n1 n2 ... nk>target:"   e.g. "7 3 5>26:"
 * Completion:  steps "a op b=c" joined by ',', op in + - * /, no spaces,
 *              e.g. "7*3=21,21+5=26" (the <eos> token is not part of the text).
 *
 * Rules (a completion earns 1.0 only if all hold, else 0.0):
 *  - Numbers are decimal digits only: no sign, no leading zeros ("0" alone is
 *    a number but can never be in the pool legitimately), at most 6 digits.
 *  - The pool starts as the multiset of given numbers. In a step "a op b=c",
 *    a and b must both be in the pool (a == b needs two copies); the step
 *    removes a and b and adds c. So every given number and every intermediate
 *    result is used at most once.
 *  - c must equal a op b exactly, and must be a positive integer:
 *    a-b needs a > b; a/b needs b != 0 and a % b == 0.
 *  - Steps are separated by exactly one ','; nothing may precede the first
 *    step or follow the last one (no trailing comma, spaces, junk or NUL).
 *  - At least one step. After the last step the pool must contain exactly one
 *    number (so every given number was used) and it must equal the target.
 * ------------------------------------------------------------------------- */

#define COUNTDOWN_MAX_DIGITS 6  /* numbers have at most 6 digits */
#define COUNTDOWN_MAX_POOL 16   /* countdown_verify rejects problems with more numbers */

/* Parse a number at s[*pos..len): 1..COUNTDOWN_MAX_DIGITS decimal digits, no
   leading zero unless the number is exactly "0". On success advances *pos past
   it and returns the value; returns -1 (and leaves *pos) otherwise. */
static long long countdown_parse_number(const char *s, int len, int *pos)
{
    int start = *pos, i = *pos;
    long long v = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        if (i - start == COUNTDOWN_MAX_DIGITS) return -1; /* a 7th digit */
        v = v * 10 + (s[i] - '0');
        i++;
    }
    if (i == start) return -1;                         /* no digits */
    if (s[start] == '0' && i - start > 1) return -1;   /* leading zero */
    *pos = i;
    return v;
}

/* Remove one copy of v from pool[0..*size); returns 1 if found, else 0. */
static int countdown_pool_take(long long *pool, int *size, long long v)
{
    for (int i = 0; i < *size; i++) {
        if (pool[i] == v) {
            pool[i] = pool[*size - 1];
            (*size)--;
            return 1;
        }
    }
    return 0;
}

/* Parse "n1 n2 ... nk>target:" (exactly the prompt text, len chars, not NUL-terminated).
   Returns 0 and fills nums[0..*n), *target on success; -1 if malformed or more than max_nums numbers. */
static int countdown_parse_prompt(const char *prompt, int len, int *nums, int max_nums, int *n, int *target)
{
    int pos = 0, k = 0;
    long long v;
    if (!prompt || !nums || !n || !target || len <= 0) return -1;
    for (;;) {                                   /* numbers separated by single spaces */
        v = countdown_parse_number(prompt, len, &pos);
        if (v < 0 || k >= max_nums) return -1;
        nums[k++] = (int)v;
        if (pos >= len) return -1;
        if (prompt[pos] == '>') { pos++; break; }
        if (prompt[pos] != ' ') return -1;
        pos++;
    }
    v = countdown_parse_number(prompt, len, &pos); /* target, then ':' ends the prompt */
    if (v < 0 || pos != len - 1 || prompt[pos] != ':') return -1;
    *n = k;
    *target = (int)v;
    return 0;
}

/* Score a completion (text without <eos>, exactly len chars, may be len 0, may contain any bytes):
   1.0f if it solves the problem by the rules above, else 0.0f. Never reads outside completion[0..len). */
static float countdown_verify(const int *nums, int n, int target, const char *completion, int len)
{
    long long pool[COUNTDOWN_MAX_POOL];
    int size = n, pos = 0;
    if (!nums || n < 1 || n > COUNTDOWN_MAX_POOL || !completion || len <= 0) return 0.0f;
    for (int i = 0; i < n; i++) pool[i] = nums[i];

    for (;;) {
        long long a, b, c, r;
        char op;
        /* syntax: a op b = c */
        if ((a = countdown_parse_number(completion, len, &pos)) < 0) return 0.0f;
        if (pos >= len) return 0.0f;
        op = completion[pos++];
        if (op != '+' && op != '-' && op != '*' && op != '/') return 0.0f;
        if ((b = countdown_parse_number(completion, len, &pos)) < 0) return 0.0f;
        if (pos >= len || completion[pos] != '=') return 0.0f;
        pos++;
        if ((c = countdown_parse_number(completion, len, &pos)) < 0) return 0.0f;
        /* a and b must be available; they are consumed */
        if (!countdown_pool_take(pool, &size, a)) return 0.0f;
        if (!countdown_pool_take(pool, &size, b)) return 0.0f;
        /* exact positive-integer arithmetic (operands <= 999999: no overflow) */
        switch (op) {
        case '+': r = a + b; break;
        case '-': r = a - b; break;
        case '*': r = a * b; break;
        default:
            if (b == 0 || a % b != 0) return 0.0f;
            r = a / b;
            break;
        }
        if (r <= 0 || r != c) return 0.0f;
        pool[size++] = c;                        /* size < n here: no overflow */
        /* then either the end, or ',' and another step */
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
        if (countdown_parse_number(completion, len, &pos) < 0 || pos >= len || completion[pos++] != '=') return 0;
        if (countdown_parse_number(completion, len, &pos) < 0) return 0;
        if (pos == len) return 1;
        if (completion[pos++] != ',') return 0;
    }
}

/* countdown_reward: outcome reward r of a completion (token ids comp[0..len), <eos> last if
   it finished) for a problem (nums[0..n), target): 1 if correct, else format_reward if it
   is well formed and ended with <eos>, else 0. Special tokens inside the text make it
   wrong. */
static float countdown_reward(const int *nums, int n, int target, const int *comp, int len,
                              float format_reward) {
    char text[4096] = {0};
    int m = 0, ended = len > 0 && comp[len - 1] == TOK_EOS;
    for (int j = 0; j < len - ended && m < (int)sizeof text; j++) {
        int t = comp[j];
        text[m++] = (t >= NUM_SPECIAL && t < VOCAB_SIZE) ? VOCAB_CHARS[t - NUM_SPECIAL] : '\x01';
    }
    float r = countdown_verify(nums, n, target, text, m);
    if (r == 0.0f && format_reward > 0.0f && ended && countdown_well_formed(text, m)) r = format_reward;
    return r;
}

// ----------------------------------------------------------------------------
// Task data: countdown prompts and demonstrations from data/*.txt
// One example per line: `prompt<TAB>completion` (completion optional: the test split has
// prompts only); `#` starts a comment line; blank lines are ignored.
// Prompt text: the numbers, `>`, the target, `:` (`7 3 5>26:`). Completion: steps `a op b=c`
// joined by `,` (`7*3=21,21+5=26`); the model ends it with <eos>.

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
} Dataset;

static void data_error(const char *path, int line, const char *what) {
    fprintf(stderr, "%s:%d: %s\n", path, line, what);
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
    char msg[128];
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
        if (n > max_len) {
            snprintf(msg, sizeof msg, "line too long (over %ld characters)", max_len);
            data_error(path, lineno, msg);
        }
    }
    if (c == EOF && ferror(f)) {
        snprintf(msg, sizeof msg, "read error: %s", errno ? strerror(errno) : "unknown");
        data_error(path, lineno, msg);
    }
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

/* load_dataset: reads a task file. need_completion = 1 (SFT data): every line must carry a
   demonstration and <bos> prompt completion <eos> must fit in maxT tokens. need_completion
   = 0 (prompts for train, eval): a demonstration is allowed but ignored, and <bos> prompt
   must fit (the caller checks prompt + --max-new-tokens). Errors name FILE:LINE and what
   was expected. An SFT demonstration must score 1 with the verifier: the model would
   learn whatever it is shown. */
static void load_dataset(Dataset *d, const char *path, int maxT, int need_completion) {
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
    char *line = NULL, msg[256];
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
        if (tab && strchr(tab + 1, '\t')) data_error(path, lineno, "more than one TAB: expected `prompt<TAB>completion`");
        if (need_completion && clen == 0) data_error(path, lineno, "no demonstration: expected `prompt<TAB>completion`");
        if (!need_completion) clen = 0;    // prompts only: the demonstration is not used
        if (1 + plen + clen + 1 > maxT) {
            snprintf(msg, sizeof msg, "example needs %d tokens, the model's context is %d", plen + clen + 2, maxT);
            data_error(path, lineno, msg);
        }
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
            snprintf(msg, sizeof msg, "character '%c' (byte %d) at column %d is not in the vocabulary \"%s\"",
                     c >= 32 && c < 127 ? c : '?', c, col, VOCAB_CHARS);
            data_error(path, lineno, msg);
        }
        d->prompt_len[i] = plen + 1;
        d->completion_len[i] = clen ? clen + 1 : 0;
        if (clen) ct[clen] = TOK_EOS;
        if (countdown_parse_prompt(line, plen, d->nums + (size_t)i * MAX_NUMS, MAX_NUMS,
                                   &d->num_count[i], &d->target[i]) != 0) {
            snprintf(msg, sizeof msg, "prompt is not `n1 n2 ... nk>target:` with 1 to %d numbers of at most 6 digits", MAX_NUMS);
            data_error(path, lineno, msg);
        }
        const int *nums = d->nums + (size_t)i * MAX_NUMS;
        if (clen && countdown_verify(nums, d->num_count[i], d->target[i], tab + 1, clen) != 1.0f) {
            const char *why = "steps `a op b=c` joined by `,` must use each number once and end at the "
                              "target";
            if (memchr(tab + 1, ' ', clen)) why = "it contains a space, which the verifier does not allow";
            snprintf(msg, sizeof msg, "demonstration does not solve the prompt "
                                      "(the verifier scores it 0): %s", why);
            data_error(path, lineno, msg);
        }
        d->line[i] = lineno;
        d->n++;
    }
    free(line);
    fclose(f);
    if (d->n == 0) data_error(path, lineno, "no examples in file");
}

static void free_dataset(Dataset *d) {
    free(d->prompt); free(d->prompt_len); free(d->completion); free(d->completion_len);
    free(d->nums); free(d->num_count); free(d->target); free(d->line);
}

// ----------------------------------------------------------------------------
// Group sampler: k completions per prompt with the KV cache, one RNG stream each

/* sample_completions: B sequences; sequence b starts from prompts[b] (prompt_len[b] tokens,
   <bos> included) and draws up to max_new tokens from softmax(logits / temperature) over the
   allowed tokens (NULL: all), or the argmax when greedy, using its own stream rngs[b].
   A sequence stops after <eos> (which is kept as its last token) or at max_new tokens.
   Writes comp (B, max_new) token ids, comp_logp (B, max_new) their log-probs under the
   sampling distribution (nats, temperature applied), comp_len (B).
   Requires max_new >= 1, prompt_len[b] + max_new <= maxT and B <= kv->B: the commands refuse
   options that break them with a usage error; the budget is checked here again because a
   caller that gets it wrong would otherwise write past comp (max_new = 0 stores one token). */
static void sample_completions(GPT *m, KVCache *kv, int B, const int *const *prompts,
                               const int *prompt_len, int max_new, float temperature, int greedy,
                               Rng *rngs, const unsigned char *allowed,
                               int *comp, float *comp_logp, int *comp_len) {
    const char *hint = "a command did not check its token budget; please report this";
    if (max_new < 1)
        fail_at(__FILE__, __LINE__, "sample_completions: max_new < 1 leaves no room for a new token", hint);
    for (int b = 0; b < B; b++)
        if (prompt_len[b] < 1 || prompt_len[b] + max_new > m->config.max_seq_len)
            fail_at(__FILE__, __LINE__, "sample_completions: prompt + max_new exceed the context", hint);
    int V = m->config.vocab_size;
    int *tok = (int *)mallocCheck(B * sizeof(int)), *pos = (int *)mallocCheck(B * sizeof(int));
    int *done = (int *)callocCheck(B, sizeof(int));
    float *probs = (float *)mallocCheck((size_t)V * sizeof(float));
    for (int b = 0; b < B; b++) { tok[b] = prompts[b][0]; pos[b] = 0; comp_len[b] = 0; }
    int remaining = B;
    while (remaining > 0) {
        // finished sequences are fed again at their last position: harmless and keeps B fixed
        gpt_decode_step(m, kv, tok, pos, B);
        for (int b = 0; b < B; b++) {
            if (done[b]) continue;
            if (pos[b] + 1 < prompt_len[b]) { tok[b] = prompts[b][++pos[b]]; continue; }
            const float *z = kv->logits + (size_t)b * V;
            float maxv, logsum = softmax_temperature(probs, &maxv, z, V, temperature, allowed);
            int next = 0;
            if (greedy) {
                for (int v = 1; v < V; v++) if (probs[v] > probs[next]) next = v;
            } else {
                float u = rng_uniform(&rngs[b]), cdf = 0.0f;
                next = -1;
                for (int v = 0; v < V; v++) {
                    if (probs[v] <= 0.0f) continue;
                    next = v;                 // falls back to the last allowed token on rounding
                    cdf += probs[v];
                    if (u < cdf) break;
                }
            }
            int j = comp_len[b]++;
            comp[(size_t)b * max_new + j] = next;
            comp_logp[(size_t)b * max_new + j] = (z[next] * (1.0f / temperature) - maxv) - logsum;
            if (next == TOK_EOS || comp_len[b] == max_new) { done[b] = 1; remaining--; }
            else { tok[b] = next; pos[b]++; }
        }
    }
    free(tok); free(pos); free(done); free(probs);
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
    float step_advantage;  // A_λ = (R̂(λ) − mean r) / (std r + eps) = mean of the members' a_j
} ProcessNode;

typedef struct {
    int num_nodes;
    ProcessNode *nodes;    // capacity 2k (a trie over k leaves has fewer than 2k nodes)
    int *members;          // scratch (k)
    int *scratch;          // scratch (k)
    int capacity_k;
} PrefixTree;

static void build_prefix_tree_buffers(PrefixTree *tree, int k) {
    tree->capacity_k = k;
    tree->nodes = (ProcessNode *)mallocCheck((size_t)2 * (k + 1) * sizeof(ProcessNode));
    tree->members = (int *)mallocCheck((size_t)(k + 1) * sizeof(int));
    tree->scratch = (int *)mallocCheck((size_t)(k + 1) * sizeof(int));
    tree->num_nodes = 0;
}

static void free_prefix_tree(PrefixTree *tree) { free(tree->nodes); free(tree->members); free(tree->scratch); }

typedef struct {           // the group being built (read-only inputs and outputs)
    const int *const *tokens; const int *len;
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
            members[b + 1] = members[b]; b--;
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
    node->parent = parent; node->start = s; node->size = n; node->depth = depth;
    node->num_children = 0; node->member = members[0];
    double rsum = 0.0, asum = 0.0;
    for (int a = 0; a < n; a++) { rsum += in->reward[members[a]]; asum += in->advantage[members[a]]; }
    node->step_reward = (float)(rsum / n);
    node->step_advantage = (float)(asum / n);
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
    int m = 0, next = t + 1;
    for (int a = 0; a < n; a++) if (in->len[members[a]] > next) members[m++] = members[a];
    sort_by_token(members, m, next, in);
    for (int a = 0; a < m;) {
        int b = a + 1;
        while (b < m && in->tokens[members[b]][next] == in->tokens[members[a]][next]) b++;
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
    int m = 0;
    for (int i = 0; i < k; i++) if (len[i] > 0) tree->members[m++] = i;
    sort_by_token(tree->members, m, 0, &in);
    for (int a = 0; a < m;) {
        int b = a + 1;
        while (b < m && tokens[tree->members[b]][0] == tokens[tree->members[a]][0]) b++;
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
typedef struct { int nontrivial; double mean_depth, intermediate; int counted; } TreeStats;

static TreeStats prefix_tree_stats(const PrefixTree *tree, const int *len, int k,
                                   const int *node_of, int stride) {
    TreeStats st = {0, 0.0, 0.0, 0};
    for (int n = 0; n < tree->num_nodes; n++) if (tree->nodes[n].size > 1) st.nontrivial = 1;
    for (int i = 0; i < k; i++) {
        if (len[i] == 0) continue;
        const ProcessNode *leaf = &tree->nodes[node_of[(size_t)i * stride + len[i] - 1]];
        int inter = 0;
        for (int t = 0; t < len[i]; t++) inter += tree->nodes[node_of[(size_t)i * stride + t]].num_children > 0;
        st.mean_depth += leaf->depth;
        st.intermediate += (double)inter / len[i];
        st.counted++;
    }
    if (st.counted) { st.mean_depth /= st.counted; st.intermediate /= st.counted; }
    return st;
}

// ----------------------------------------------------------------------------
// Objectives: GRPO and λ-GRPO (conventions in notes/conventions.md)

enum { OBJ_GRPO = 0, OBJ_LAMBDA_GRPO = 1 };
enum { AGG_TOKEN_MEAN = 0, AGG_SEQ_MEAN_TOKEN_MEAN, AGG_SEQ_MEAN_TOKEN_SUM, AGG_SEQ_MEAN_TOKEN_SUM_NORM };
enum { STD_SAMPLE = 0, STD_POPULATION, STD_NONE };
enum { SCOPE_GROUP = 0, SCOPE_BATCH };
static const char *OBJECTIVE_NAMES[] = {"grpo", "lambda-grpo", NULL};
static const char *LOSS_AGG_NAMES[] = {"token-mean", "seq-mean-token-mean", "seq-mean-token-sum",
                                       "seq-mean-token-sum-norm", NULL};
static const char *ADV_STD_NAMES[] = {"sample", "population", "none", NULL};
static const char *SCOPE_NAMES[] = {"group", "batch", NULL};

typedef struct {
    int objective;        // OBJ_GRPO or OBJ_LAMBDA_GRPO
    int loss_agg;         // AGG_*
    int adv_std;          // STD_*: std in the advantage's denominator
    int adv_std_scope;    // SCOPE_*: std over each group, or over the whole batch
    float adv_eps;        // added to the std (TRL 1e-4, verl 1e-6)
    float clip_eps_low;   // ratio clipped to [1 − clip_eps_low, 1 + clip_eps_high]
    float clip_eps_high;
    float beta;           // k3 KL coefficient
    int max_new_tokens;   // the Dr. GRPO constant for seq-mean-token-sum-norm
} ObjectiveConfig;

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
   code and TRL: sample std, eps 1e-4). A sample std needs k >= 2: callers reject k = 1. */
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
        for (int i = 0; i < k; i++) { mean += r[i]; all_equal &= r[i] == r[0]; }
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
            case AGG_TOKEN_MEAN: c = total > 0 ? 1.0 / total : 0.0; break;
            case AGG_SEQ_MEAN_TOKEN_MEAN: c = len[i] > 0 ? 1.0 / ((double)N * len[i]) : 0.0; break;
            case AGG_SEQ_MEAN_TOKEN_SUM: c = 1.0 / N; break;
            default: c = 1.0 / ((double)N * cfg->max_new_tokens); break;
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

/* lambda_weight: the factor the objective applies to token (i,t): 1 for GRPO,
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
   Returns the loss Σ coef·weight·ℓ (double) and fills out. When the clipped branch is
   strictly smaller, the policy term has no gradient (as torch.max in TRL/verl). */
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
// Configuration: every option of every command, with its default, range and help.
// The table drives getopt_long, --help, range checks and the start-up printout.

typedef struct {
    // run
    int seed, threads;
    char run_dir[512], init[512], resume[512], model[512];
    // model shape (sft, bench)
    int layers, heads, channels, context;
    // data
    char train_data[512], val_data[512], test_data[512], data[512], prompt[256], completions_out[512];
    // optimisation
    int steps, batch_size, warmup, eval_every, save_every, eval_limit, schedule;
    int test_limit;        // train: test prompts scored at the start and end (-1: all, 0: none)
    float lr, min_lr_frac, weight_decay, grad_clip, beta1, beta2;
    // GRPO
    int prompts_per_step, group_size, max_new_tokens, num_iterations, micro_batch, mask_truncated;
    int pass_k, seeds;
    float temperature;
    ObjectiveConfig obj;
    float format_reward;
#ifdef GRPO_CUDA
    int tf32;              // 1: cuBLAS may use TF32 tensor cores
    int kernel_times;      // bench: 1 prints the GPU time of each kernel (CUDA build)
#endif
} Options;

static const char *SCHEDULE_NAMES[] = {"cosine", "linear", "constant", NULL};

enum { CMD_SFT = 1, CMD_TRAIN = 2, CMD_EVAL = 4, CMD_SAMPLE = 8, CMD_CHECK = 16, CMD_BENCH = 32,
       CMD_VERIFY = 64, CMD_TREE = 128 };
typedef enum { OPT_INT, OPT_FLOAT, OPT_STR, OPT_ENUM } OptType;
typedef struct {
    const char *name; OptType type; size_t offset; double min, max;
    const char **choices; unsigned cmds; const char *help;
} OptSpec;

#define OFF(field) offsetof(Options, field)
#define OBJ_CMDS (CMD_TRAIN | CMD_CHECK | CMD_TREE)
#define GEN_CMDS (CMD_TRAIN | CMD_EVAL | CMD_SAMPLE | CMD_TREE)
#ifdef GRPO_CUDA
#define CUDA_CMDS (CMD_SFT | GEN_CMDS | CMD_BENCH)   // the commands that build a model: on the GPU
#endif
static const OptSpec OPTIONS[] = {
    {"seed", OPT_INT, OFF(seed), 0, 2147483647, NULL, CMD_SFT | GEN_CMDS | CMD_BENCH, "random seed (same seed, same build: same run, bit for bit)"},
    {"threads", OPT_INT, OFF(threads), 0, 1024, NULL, 0xffff, "OpenMP threads (0: OMP_NUM_THREADS or all cores)"},
    {"run-dir", OPT_STR, OFF(run_dir), 0, 0, NULL, CMD_SFT | CMD_TRAIN | CMD_TREE, "directory for checkpoints and CSV logs"},
    {"init", OPT_STR, OFF(init), 0, 0, NULL, CMD_TRAIN, "SFT checkpoint to start from; also the reference policy π_ref"},
    {"resume", OPT_STR, OFF(resume), 0, 0, NULL, CMD_SFT | CMD_TRAIN, "checkpoint with optimizer state to continue from (bit-identical)"},
    {"model", OPT_STR, OFF(model), 0, 0, NULL, CMD_EVAL | CMD_SAMPLE, "checkpoint to load"},
    {"layers", OPT_INT, OFF(layers), 1, 64, NULL, CMD_SFT | CMD_BENCH | CMD_TREE, "transformer blocks L"},
    {"heads", OPT_INT, OFF(heads), 1, 64, NULL, CMD_SFT | CMD_BENCH | CMD_TREE, "attention heads NH (must divide --channels)"},
    {"channels", OPT_INT, OFF(channels), 8, 4096, NULL, CMD_SFT | CMD_BENCH | CMD_TREE, "width C"},
    {"context", OPT_INT, OFF(context), 8, 1024, NULL, CMD_SFT | CMD_BENCH,
     "context length maxT in tokens (bench: at least 9)"},
    {"train-data", OPT_STR, OFF(train_data), 0, 0, NULL, CMD_SFT | CMD_TRAIN, "training prompts (prompt<TAB>demonstration per line)"},
    {"val-data", OPT_STR, OFF(val_data), 0, 0, NULL, CMD_SFT | CMD_TRAIN, "validation prompts"},
    {"test-data", OPT_STR, OFF(test_data), 0, 0, NULL, CMD_TRAIN, "test prompts (reasoning-gym), scored at start and end"},
    {"data", OPT_STR, OFF(data), 0, 0, NULL, CMD_EVAL, "prompts to score"},
    {"prompt", OPT_STR, OFF(prompt), 0, 0, NULL, CMD_SAMPLE, "countdown prompt, e.g. '8 4 5 8>9:'"},
    {"completions", OPT_STR, OFF(completions_out), 0, 0, NULL, CMD_EVAL, "write each greedy completion here: prompt<TAB>completion<TAB>reward"},
    {"steps", OPT_INT, OFF(steps), 0, 10000000, NULL, CMD_SFT | CMD_TRAIN | CMD_TREE, "optimizer steps (GRPO: sampling steps)"},
    {"batch-size", OPT_INT, OFF(batch_size), 1, 4096, NULL, CMD_SFT | CMD_BENCH, "sequences per SFT step"},
    {"lr", OPT_FLOAT, OFF(lr), 0, 10, NULL, CMD_SFT | CMD_TRAIN | CMD_TREE, "peak learning rate"},
    {"min-lr-frac", OPT_FLOAT, OFF(min_lr_frac), 0, 1, NULL, CMD_SFT | CMD_TRAIN | CMD_TREE, "final learning rate as a fraction of --lr"},
    {"schedule", OPT_ENUM, OFF(schedule), 0, 0, SCHEDULE_NAMES, CMD_SFT | CMD_TRAIN | CMD_TREE, "learning-rate decay after warm-up"},
    {"warmup", OPT_INT, OFF(warmup), 0, 1000000, NULL, CMD_SFT | CMD_TRAIN | CMD_TREE, "linear warm-up steps"},
    {"weight-decay", OPT_FLOAT, OFF(weight_decay), 0, 10, NULL, CMD_SFT | CMD_TRAIN | CMD_TREE, "AdamW decoupled weight decay (2-D weights only)"},
    {"beta1", OPT_FLOAT, OFF(beta1), 0, 0.999999, NULL, CMD_SFT | CMD_TRAIN | CMD_TREE, "AdamW β1"},
    {"beta2", OPT_FLOAT, OFF(beta2), 0, 0.999999, NULL, CMD_SFT | CMD_TRAIN | CMD_TREE, "AdamW β2"},
    {"grad-clip", OPT_FLOAT, OFF(grad_clip), 0, 1e9, NULL, CMD_SFT | CMD_TRAIN | CMD_TREE, "max global gradient norm (0: off)"},
    {"eval-every", OPT_INT, OFF(eval_every), 0, 10000000, NULL, CMD_SFT | CMD_TRAIN, "validate every N steps (0: off)"},
    {"eval-limit", OPT_INT, OFF(eval_limit), 0, 10000000, NULL, CMD_TRAIN | CMD_EVAL, "score at most N prompts per evaluation (0: all); for train's test file see --test-limit"},
    {"test-limit", OPT_INT, OFF(test_limit), -1, 10000000, NULL, CMD_TRAIN, "score the first N test prompts at the start and end (-1: all; 0: none, for short try-outs)"},
    {"save-every", OPT_INT, OFF(save_every), 0, 10000000, NULL, CMD_SFT | CMD_TRAIN, "write a resumable checkpoint every N steps (0: only at the end)"},
    {"prompts-per-step", OPT_INT, OFF(prompts_per_step), 1, 4096, NULL, CMD_TRAIN | CMD_TREE, "prompts P per GRPO step"},
    {"group-size", OPT_INT, OFF(group_size), 1, 4096, NULL, CMD_TRAIN | CMD_SAMPLE | CMD_TREE, "completions k per prompt (G in TRL/verl); training needs k >= 2"},
    {"temperature", OPT_FLOAT, OFF(temperature), 0, 100, NULL, GEN_CMDS, "sampling temperature T; log-probs use logits/T everywhere"},
    {"max-new-tokens", OPT_INT, OFF(max_new_tokens), 1, 1000000, NULL, CMD_TRAIN | CMD_EVAL | CMD_SAMPLE | CMD_CHECK, "completion budget (also the Dr. GRPO constant)"},
    {"pass-k", OPT_INT, OFF(pass_k), 0, 4096, NULL, CMD_TRAIN | CMD_EVAL, "samples per prompt for pass@k at the end (0: off)"},
    {"objective", OPT_ENUM, OFF(obj.objective), 0, 0, OBJECTIVE_NAMES, CMD_TRAIN | CMD_CHECK, "grpo, or lambda-grpo (each token's term divided by |λ(i,t)|)"},
    {"loss-agg", OPT_ENUM, OFF(obj.loss_agg), 0, 0, LOSS_AGG_NAMES, OBJ_CMDS, "loss aggregation (notes/conventions.md)"},
    {"adv-std", OPT_ENUM, OFF(obj.adv_std), 0, 0, ADV_STD_NAMES, OBJ_CMDS, "std in the advantage: sample (k-1), population (k), none"},
    {"adv-std-scope", OPT_ENUM, OFF(obj.adv_std_scope), 0, 0, SCOPE_NAMES, OBJ_CMDS, "std over each group or over the batch"},
    {"adv-eps", OPT_FLOAT, OFF(obj.adv_eps), 0, 1, NULL, OBJ_CMDS, "added to the std (TRL 1e-4, verl 1e-6)"},
    {"clip-eps-low", OPT_FLOAT, OFF(obj.clip_eps_low), 0, 0.999999, NULL, OBJ_CMDS, "ratio clipped below at 1 - eps_low, in [0, 1)"},
    {"clip-eps-high", OPT_FLOAT, OFF(obj.clip_eps_high), 0, 1e6, NULL, OBJ_CMDS, "ratio clipped above at 1 + eps_high (DAPO: 0.28)"},
    {"beta", OPT_FLOAT, OFF(obj.beta), 0, 1e6, NULL, OBJ_CMDS, "k3 KL coefficient against π_ref"},
    {"num-iterations", OPT_INT, OFF(num_iterations), 1, 64, NULL, CMD_TRAIN | CMD_TREE, "updates μ per sampled batch (π_old frozen at sampling)"},
    {"micro-batch", OPT_INT, OFF(micro_batch), 0, 4096, NULL, CMD_TRAIN | CMD_TREE, "sequences per forward/backward (0: whole step); changes no gradient"},
    {"mask-truncated", OPT_INT, OFF(mask_truncated), 0, 1, NULL, CMD_TRAIN | CMD_CHECK,
     "1: completions cut at max-new-tokens without <eos> (check: truncated=1) get no loss, no normaliser"},
    {"seeds", OPT_INT, OFF(seeds), 1, 1000, NULL, CMD_TREE, "seeds per cell of the grid (paper: 5)"},
    {"format-reward", OPT_FLOAT, OFF(format_reward), 0, 1, NULL, CMD_TRAIN | CMD_EVAL, "extra reward for a well-formed but wrong completion (0: off)"},
#ifdef GRPO_CUDA
    {"tf32", OPT_INT, OFF(tf32), 0, 1, NULL, CUDA_CMDS, "1: cuBLAS matmuls on TF32 tensor cores (faster; ~1e-3 relative error); 0: full fp32"},
    {"kernel-times", OPT_INT, OFF(kernel_times), 0, 1, NULL, CMD_BENCH, "1: then GPU time per kernel over 3 training steps, each launch waited for"},
#endif
};
#define NUM_OPTIONS ((int)(sizeof OPTIONS / sizeof OPTIONS[0]))

static void default_options(Options *o) {
    memset(o, 0, sizeof *o);
    o->seed = 1337; o->threads = 0;
    strcpy(o->run_dir, ""); strcpy(o->init, "runs/sft/model.bin"); strcpy(o->model, "runs/grpo/model.bin");
    o->layers = 4; o->heads = 4; o->channels = 128; o->context = 64;
    strcpy(o->train_data, "data/countdown_train.txt"); strcpy(o->val_data, "data/countdown_val.txt");
    strcpy(o->test_data, "data/countdown_test.txt"); strcpy(o->data, "data/countdown_test.txt");
    strcpy(o->prompt, "8 4 5 8>9:");
    o->steps = 0; o->batch_size = 32; o->warmup = 0; o->eval_every = 0; o->save_every = 0; o->eval_limit = 0;
    o->lr = 0; o->min_lr_frac = 0.1f; o->weight_decay = 0.0f; o->grad_clip = 1.0f; o->beta1 = 0.9f; o->beta2 = 0.95f;
    o->schedule = 0;
    o->prompts_per_step = 8; o->group_size = 8; o->max_new_tokens = 26; o->num_iterations = 1; o->micro_batch = 0;
    o->mask_truncated = 0; o->pass_k = 8; o->temperature = 1.0f; o->format_reward = 0.0f;
    o->obj = (ObjectiveConfig){OBJ_LAMBDA_GRPO, AGG_TOKEN_MEAN, STD_SAMPLE, SCOPE_GROUP, 1e-4f, 0.2f, 0.2f, 0.0f, 40};
}

static void print_option_value(FILE *f, const Options *o, const OptSpec *s) {
    const char *p = (const char *)o + s->offset;
    switch (s->type) {
        case OPT_INT: fprintf(f, "%d", *(const int *)p); break;
        case OPT_FLOAT: fprintf(f, "%g", *(const float *)p); break;
        case OPT_STR: fprintf(f, "%s", p[0] ? p : "(none)"); break;
        case OPT_ENUM: fprintf(f, "%s", s->choices[*(const int *)p]); break;
    }
}

static void print_help(const char *cmd, unsigned mask, const char *synopsis, const Options *defaults) {
    printf("usage: " PROG " %s%s\n\n%s\n\noptions (default in brackets):\n", cmd, mask ? " [--option value ...]" : "", synopsis);
    for (int i = 0; i < NUM_OPTIONS; i++) {
        const OptSpec *s = &OPTIONS[i];
        if (!(s->cmds & mask)) continue;
        printf("  --%-18s %s [", s->name, s->help);
        print_option_value(stdout, defaults, s);
        printf("]");
        if (s->type == OPT_ENUM) {
            printf(" one of:");
            for (int c = 0; s->choices[c]; c++) printf(" %s", s->choices[c]);
        }
        printf("\n");
    }
    printf("  --%-18s %s\n", "help", "this help");
}

/* parse_options: GNU long options for one command (bit `mask`); sets fields of o.
   Unknown option, missing value, unparsable or out-of-range value: usage error naming the
   option, exit 2. Returns the index of the first positional argument in argv. */
static int parse_options(int argc, char **argv, unsigned mask, Options *o, const char *cmd,
                         const char *synopsis) {
    struct option longopts[NUM_OPTIONS + 2];
    int map[NUM_OPTIONS + 2], n = 0;
    for (int i = 0; i < NUM_OPTIONS; i++)
        if (OPTIONS[i].cmds & mask) {
            longopts[n] = (struct option){OPTIONS[i].name, required_argument, NULL, 1000 + n};
            map[n++] = i;
        }
    longopts[n] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[n + 1] = (struct option){NULL, 0, NULL, 0};
    if (mask & (CMD_SFT | CMD_BENCH)) oom_hint = "use a smaller --batch-size or model";
    else if (mask & (CMD_TRAIN | CMD_TREE))
        oom_hint = "use a smaller --prompts-per-step or --group-size, or set --micro-batch";
    else if (mask & CMD_SAMPLE) oom_hint = "use a smaller --group-size";
    else if (mask & CMD_EVAL) oom_hint = "the model or the --data file is too large for the free memory";
    else oom_hint = "the input file is too large for this machine's free memory";
    Options defaults = *o;
    opterr = 0; optind = 1;
    for (;;) {
        int c = getopt_long(argc, argv, ":h", longopts, NULL);
        if (c == -1) break;
        if (c == 'h') { print_help(cmd, mask, synopsis, &defaults); exit(0); }
        if (c == '?') {
            const char *bad = argv[optind - 1];
            if (optopt) {
                // a short option (-x): -h is the only one, so the bad letter is the first of its
                // argument; getopt moves optind past that argument only when nothing follows the
                // letter (-x), and leaves it on the argument otherwise (-xy)
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
        const OptSpec *s = &OPTIONS[map[c - 1000]];
        char *p = (char *)o + s->offset, *end = NULL, name[64];
        snprintf(name, sizeof name, "--%s", s->name);
        errno = 0;
        if (s->type == OPT_INT || s->type == OPT_FLOAT) {
            double v = s->type == OPT_INT ? (double)strtol(optarg, &end, 10) : strtod(optarg, &end);
            if (end == optarg || *end || errno || !isfinite(v))
                usage_error("%s: '%s' is not a number", name, optarg);
            if (v < s->min || v > s->max) {
                char range[96];
                snprintf(range, sizeof range, "'%s' is out of range [%g, %g]", optarg, s->min, s->max);
                usage_error("%s: %s", name, range);
            }
            if (s->type == OPT_INT) *(int *)p = (int)v; else *(float *)p = (float)v;
        } else if (s->type == OPT_STR) {
            if (strlen(optarg) >= 255) usage_error("%s: value too long ('%s')", name, optarg);
            strcpy(p, optarg);
        } else {
            int found = -1;
            for (int k = 0; s->choices[k]; k++) if (!strcmp(optarg, s->choices[k])) found = k;
            if (found < 0) usage_error("%s: '%s' is not one of the choices (see --help)", name, optarg);
            *(int *)p = found;
        }
    }
#ifdef _OPENMP
    if (o->threads > 0) omp_set_num_threads(o->threads);
#endif
#ifdef GRPO_CUDA
    if (mask & CUDA_CMDS) cuda_startup(o->tf32);
#endif
    return optind;
}

// Prints every option of the command with the value in force (start-up banner).
static void print_options(FILE *f, const Options *o, unsigned mask) {
    fprintf(f, "# config:");
    for (int i = 0; i < NUM_OPTIONS; i++)
        if (OPTIONS[i].cmds & mask && strcmp(OPTIONS[i].name, "threads")) {
            fprintf(f, " %s=", OPTIONS[i].name);
            print_option_value(f, o, &OPTIONS[i]);
        }
    fprintf(f, " threads=%d\n", num_threads());
}

// ----------------------------------------------------------------------------
// Training loops: shared pieces

static AdamWConfig adamw_from_options(const Options *o, int total_steps) {
    AdamWConfig a = {o->lr, o->beta1, o->beta2, 1e-8f, o->weight_decay, o->grad_clip,
                     o->warmup, total_steps, o->schedule, o->min_lr_frac};
    return a;
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

// Mean completion log-loss (nats/token) of a dataset's demonstrations, forward only.
static float dataset_loss(GPT *m, const Dataset *d, int batch, int limit, int *inputs, int *targets,
                          float *logp) {
    int n = limit > 0 && limit < d->n ? limit : d->n;
    double sum = 0.0; long count = 0;
    const int *pp[4096], *cp[4096];
    for (int s = 0; s < n; s += batch) {
        int B = s + batch <= n ? batch : n - s;
        for (int b = 0; b < B; b++) {
            pp[b] = d->prompt + (size_t)(s + b) * d->maxT; cp[b] = d->completion + (size_t)(s + b) * d->maxT;
        }
        int T = make_batch(inputs, targets, B, pp, d->prompt_len + s, cp, d->completion_len + s);
        gpt_forward(m, inputs, B, T);
        gpt_logprob_forward(m, logp, targets, B * T, 1.0f, NULL);
        for (int i = 0; i < B * T; i++) if (targets[i] >= 0) { sum -= logp[i]; count++; }
    }
    return count ? (float)(sum / count) : 0.0f;
}

/* The run's CSV log, one row per step, flushed row by row: a run that is killed loses at
   most the row being written, and a write error (disk full) stops the run at once. */
typedef struct {
    FILE *f;
    char path[1100];
} CsvLog;

static void csv_failed(const CsvLog *c) {
    char msg[1300];
    snprintf(msg, sizeof msg, "cannot write the log '%s': %s", c->path, strerror(errno));
    fail_at(__FILE__, __LINE__, msg, "is the disk full?");
}

// Ends a row: the row reaches the file now, or the run stops naming the file.
static void csv_row_done(CsvLog *c) {
    if (ferror(c->f) || fflush(c->f) != 0) csv_failed(c);
}

static void close_csv(CsvLog *c) {
    if (ferror(c->f) || fclose(c->f) != 0) csv_failed(c);
}

/* csv_keep: the length of the part of text (n bytes) that a run resuming after step `step`
   keeps: the header line, then complete rows numbered 1, 2, ... up to `step`, each with the
   header's number of fields. It stops at the first row that is past the checkpoint (the
   killed run went on after its last save), out of sequence, or malformed (a half-written
   last row, or one fused with the next). *rows gets the number of rows kept; returns −1
   when the file does not start with this header. */
static long csv_keep(const char *text, long n, const char *header, int step, int *rows) {
    long hlen = (long)strlen(header);
    int fields = 1;
    for (const char *p = header; *p; p++) fields += *p == ',';
    *rows = 0;
    if (n < hlen + 1 || memcmp(text, header, hlen) != 0 || text[hlen] != '\n') return -1;
    long keep = hlen + 1;
    while (keep < n && *rows < step) {
        const char *line = text + keep, *nl = (const char *)memchr(line, '\n', n - keep);
        if (!nl) break;                                  // half-written last row
        char *end;
        long num = strtol(line, &end, 10);
        int f = 1;
        for (const char *p = line; p < nl; p++) f += *p == ',';
        if (end == line || *end != ',' || num != *rows + 1 || f != fields) break;
        keep = (long)(nl - text) + 1;
        (*rows)++;
    }
    return keep;
}

/* open_csv: the run's log RUN_DIR/NAME. A new run (step 0) creates it with the header. A
   run resuming after `step` steps keeps what csv_keep keeps and cuts the rest off, so the
   file again holds one row per step taken; a missing or empty file (resuming into a new
   run directory) gets the header. */
static CsvLog open_csv(const char *run_dir, const char *name, const char *header, int step) {
    CsvLog c;
    snprintf(c.path, sizeof c.path, "%s/%s", run_dir, name);
    struct stat sb;
    if (step == 0 || stat(c.path, &sb) != 0 || sb.st_size == 0) {
        c.f = fopenCheck(c.path, "w");
        fprintf(c.f, "%s\n", header);
        csv_row_done(&c);
        return c;
    }
    c.f = fopenCheck(c.path, "r+");
    long n = (long)sb.st_size;
    char *text = (char *)mallocCheck((size_t)n);
    if (fread(text, 1, (size_t)n, c.f) != (size_t)n) csv_failed(&c);
    int rows;
    long keep = csv_keep(text, n, header, step, &rows);
    free(text);
    if (keep < 0) {
        char msg[1300];
        snprintf(msg, sizeof msg, "'%s' does not start with the header this run writes", c.path);
        fail_at(__FILE__, __LINE__, msg, "move the file away, or resume into another --run-dir");
    }
    if (keep < n)
        fprintf(stderr, "note: %s: dropped %ld bytes after step %d (written after the checkpoint, or cut "
                        "off when the run stopped)\n", c.path, n - keep, rows);
    if (rows < step)
        fprintf(stderr, "note: %s holds rows for steps 1-%d only; steps %d-%d were not logged\n",
                c.path, rows, rows + 1, step);
    if (fflush(c.f) != 0 || ftruncate(fileno(c.f), (off_t)keep) != 0 || fseek(c.f, 0, SEEK_END) != 0)
        csv_failed(&c);
    return c;
}

/* stop_on_nan: the run has met a non-finite value at step `step` (numbered as in the log
   and the CSV): stop before anything is saved. last_good names the newest checkpoint that
   passed check_params (NULL: the command writes none). Threads of ./grpo tree may get here
   at once: the critical section lets one print and end the process. */
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

/* Largest |parameter| a checkpoint may hold. Weights start at N(0, 0.02²) (LayerNorm gains
   at 1), and AdamW moves each by at most about lr per step (|m̂|/sqrt(v̂) is about 1 when
   β1² < β2), so healthy runs stay far below it: SFT runs of 600–2,000 steps and GRPO after
   them end below 1.6, and even 200 steps at --lr 10 stay under 600. Past it, attention and
   output logits (products of two such weights summed over the channels) are 1e8 and more,
   where the softmax is one-hot and float32 overflows soon after: the run is diverging (a
   run with lr × weight_decay = 3 reached 3e9 within 70 steps, then NaN). */
#define PARAM_LIMIT 1e4f

/* check_params: called before every save. If a parameter is not finite or exceeds
   PARAM_LIMIT, stops the run at step `step` (as numbered in the log) without saving, and
   names last_good, the newest checkpoint that passed this check. So a "last good"
   checkpoint always holds parameters a run can resume from. */
static void check_params(const GPT *m, int step, const char *last_good) {
    const float *p = m->params_memory;
#ifdef GRPO_CUDA
    float *host = NULL;
    if (m->on_device) {   // once per save: the copy costs what writing the file costs
        host = (float *)mallocCheck(m->num_parameters * sizeof(float));
        cuda_memcpy_d2h(host, m->params_memory, m->num_parameters * sizeof(float));
        p = host;
    }
#endif
    size_t worst = 0;
    float worst_abs = 0.0f;
    for (size_t i = 0; i < m->num_parameters; i++) {
        float a = fabsf(p[i]);
        if (!(a <= worst_abs)) {   // true for NaN too, so a NaN is always kept
            worst_abs = a;
            worst = i;
        }
        if (isnan(a)) break;
    }
#ifdef GRPO_CUDA
    free(host);
#endif
    if (worst_abs <= PARAM_LIMIT) return;
    int t = 0;
    size_t off = 0;
    while (t < NUM_PARAM_TENSORS - 1 && worst >= off + m->param_sizes[t]) off += m->param_sizes[t++];
    #pragma omp critical(stop_on_nan)
    {
        fprintf(stderr, "error: step %d: the parameters have diverged (|%s[%zu]| = %g, limit %g); stopping "
                        "without saving them.\n", step, PARAM_NAMES[t], worst - off, worst_abs, PARAM_LIMIT);
        fprintf(stderr, "  last good checkpoint: %s\n",
                last_good[0] ? last_good : "none yet (this run has saved nothing)");
        fprintf(stderr, "  hint: lower --lr; keep lr x weight-decay well below 1\n");
        exit(EXIT_INPUT);
    }
}

// AdamW multiplies each decayed weight by 1 − lr·wd every step: at lr·wd >= 1 that flips
// its sign and, past 2, doubles it and more, so the run explodes (a usage error).
static void check_weight_decay(const Options *o) {
    if (o->lr * o->weight_decay >= 1.0f)
        usage_error("--lr %g x --weight-decay %g = %g: must be < 1 "
                    "(AdamW scales weights by 1 - lr x weight-decay each step)",
                    o->lr, o->weight_decay, o->lr * o->weight_decay);
}

// ----------------------------------------------------------------------------
// SFT: supervised training on task demonstrations (loss on completion tokens only)

static int cmd_sft(int argc, char **argv, Options *o) {
    o->steps = 3000; o->lr = 2e-3f; o->warmup = 50; o->weight_decay = 0.1f; o->eval_every = 500;
    strcpy(o->run_dir, "runs/sft");
    const char *syn = "Supervised fine-tuning on demonstrations (prompt<TAB>completion lines).\n"
                      "Loss: mean −log p of completion tokens and <eos>; prompt tokens are masked.\n"
                      "Writes RUN_DIR/model.bin (with optimizer state), RUN_DIR/sft.csv, and with\n"
                      "--save-every a resumable RUN_DIR/ckpt.bin.";
    int first = parse_options(argc, argv, CMD_SFT, o, "sft", syn);
    if (first < argc) usage_error("unexpected argument '%s' for '" PROG " sft'", argv[first]);
    if (o->channels % o->heads) usage_error("--heads must divide --channels");
    check_weight_decay(o);
    print_options(stdout, o, CMD_SFT);
    GPT model;
    TrainState st = {0};
    st.kind = 1;
    rng_seed(&st.rng, o->seed, 1);
    if (o->resume[0]) {
        load_checkpoint(o->resume, &model, o->batch_size, &st);
        if (st.step >= o->steps) usage_error("--steps %d: '%s' has already taken %d steps", o->steps, o->resume, st.step);
        GPTConfig c = model.config;
        if (c.num_layers != o->layers || c.num_heads != o->heads || c.channels != o->channels || c.max_seq_len != o->context)
            fprintf(stderr, "note: --resume continues the checkpoint's model (L=%d NH=%d C=%d maxT=%d); "
                            "--layers/--heads/--channels/--context are ignored\n",
                    c.num_layers, c.num_heads, c.channels, c.max_seq_len);
    }
    else build_gpt(&model, (GPTConfig){o->context, VOCAB_SIZE, o->layers, o->heads, o->channels},
                   o->batch_size, o->seed);
    int maxT = model.config.max_seq_len;
    Dataset train, val;
    load_dataset(&train, o->train_data, maxT, 1);
    load_dataset(&val, o->val_data, maxT, 1);
    printf("# model: %zu parameters (L=%d NH=%d C=%d maxT=%d V=%d); %d train, %d val examples\n",
           model.num_parameters, model.config.num_layers, model.config.num_heads, model.config.channels,
           maxT, VOCAB_SIZE, train.n, val.n);
    make_dir(o->run_dir);
    int lock = lock_run_dir(o->run_dir);
    char ckpt[1100], periodic[1100];   // final model; periodic resumable checkpoint
    snprintf(ckpt, sizeof ckpt, "%s/model.bin", o->run_dir);
    snprintf(periodic, sizeof periodic, "%s/ckpt.bin", o->run_dir);
    CsvLog csv = open_csv(o->run_dir, "sft.csv", "step,loss,val_loss,lr,grad_norm,tokens_per_s,elapsed_s",
                          st.step);
    AdamWConfig opt = adamw_from_options(o, o->steps);
    int B = o->batch_size;
    int *inputs = (int *)mallocCheck((size_t)B * maxT * sizeof(int));
    int *targets = (int *)mallocCheck((size_t)B * maxT * sizeof(int));
    float *logp = (float *)mallocCheck((size_t)B * maxT * sizeof(float));
    float *dlogp = (float *)mallocCheck((size_t)B * maxT * sizeof(float));
    const int *pp[4096], *cp[4096];
    int plen[4096], clen[4096];
    double t_start = wall_seconds();
    char last_good[1100] = "";
    if (o->resume[0]) snprintf(last_good, sizeof last_good, "%s", o->resume);
    for (; st.step < o->steps; st.step++) {
        double t0 = wall_seconds();
        for (int b = 0; b < B; b++) {   // examples drawn with replacement from the run's RNG
            int i = rng_int(&st.rng, train.n);
            pp[b] = train.prompt + (size_t)i * maxT; cp[b] = train.completion + (size_t)i * maxT;
            plen[b] = train.prompt_len[i]; clen[b] = train.completion_len[i];
        }
        int T = make_batch(inputs, targets, B, pp, plen, cp, clen);
        gpt_forward(&model, inputs, B, T);
        gpt_logprob_forward(&model, logp, targets, B * T, 1.0f, NULL);
        int count = 0; double loss = 0.0;
        for (int i = 0; i < B * T; i++) if (targets[i] >= 0) { count++; loss -= logp[i]; }
        loss /= count;
        for (int i = 0; i < B * T; i++) dlogp[i] = targets[i] >= 0 ? -1.0f / count : 0.0f;
        if (!isfinite(loss)) stop_on_nan("the loss", st.step + 1, (float)loss, last_good);
        gpt_zero_grad(&model);
        gpt_logprob_backward(&model, targets, dlogp, B * T, 1.0f);
        gpt_backward(&model, inputs);
        float norm = clip_grad_norm(&model, opt.grad_clip);
        if (!isfinite(norm)) stop_on_nan("the gradient norm", st.step + 1, norm, last_good);
        float lr = lr_at(&opt, st.step);
        adamw_update(&model, &opt, lr, st.step + 1);
        double dt = wall_seconds() - t0;
        int last = st.step + 1 == o->steps;
        float vloss = -1.0f;
        if ((o->eval_every && (st.step + 1) % o->eval_every == 0) || last)
            vloss = dataset_loss(&model, &val, B, 0, inputs, targets, logp);
        if (st.step % 50 == 0 || vloss >= 0 || last) {
            printf("step %5d | loss %.4f | lr %.2e | norm %.3f | %.0f tok/s | %.1f s", st.step + 1, loss, lr,
                   norm, B * T / dt, wall_seconds() - t_start);
            if (vloss >= 0) printf(" | val loss %.4f", vloss);
            printf("\n");
            fflush(stdout);
        }
        fprintf(csv.f, "%d,%.6f,%.6f,%.6g,%.6f,%.1f,%.3f\n", st.step + 1, loss, vloss, lr, norm, B * T / dt,
                wall_seconds() - t_start);
        csv_row_done(&csv);
        if (o->save_every && (st.step + 1) % o->save_every == 0 && !last) {
            TrainState next = st; next.step = st.step + 1;
            check_params(&model, st.step + 1, last_good);
            save_checkpoint(periodic, &model, 1, &next);
            snprintf(last_good, sizeof last_good, "%s", periodic);
        }
    }
    check_params(&model, st.step, last_good);
    save_checkpoint(ckpt, &model, 1, &st);
    close_csv(&csv);
    unlock_run_dir(lock);
    printf("# saved %s (%d steps, %.1f s)\n", ckpt, st.step, wall_seconds() - t_start);
    free(inputs); free(targets); free(logp); free(dlogp);
    free_dataset(&train); free_dataset(&val); free_gpt(&model);
    return 0;
}

// ----------------------------------------------------------------------------
// GRPO / λ-GRPO training: sample → score → tree → objective → update

typedef struct {           // one GRPO step: P prompts × k completions, N = P·k
    int P, k, N, max_new;
    int *prompt_idx;       // (P) dataset index of each prompt
    const int **prompt;    // (N) <bos>+prompt tokens of completion i's prompt
    int *plen;             // (N)
    int *comp;             // (N, max_new) completion token ids
    float *sample_logp;    // (N, max_new) the sampler's log-probs
    int *clen;             // (N) completion length (with <eos> when it finished)
    float *reward, *advantage;   // (N)
    int *lambda_size, *node_of;  // (N, max_new) |λ(i,t)| and the owning node
    // per completion token, (N, max_new)
    float *logp, *logp_old, *logp_ref, *adv_tok, *weight, *coef, *dlogp, *ratio, *kl;
    unsigned char *clipped;
    float *seq_coef;       // (N)
    Rng *rngs;             // (N) one stream per completion
    PrefixTree tree;
    // per-position scratch for one micro-batch, (micro, maxT)
    int *inputs, *targets;
    float *logp_pos, *dlogp_pos;
} GroupBatch;

static void build_group_batch(GroupBatch *g, int P, int k, int max_new, int micro, int maxT) {
    memset(g, 0, sizeof *g);
    g->P = P; g->k = k; g->N = P * k; g->max_new = max_new;
    size_t N = g->N, NT = N * max_new, MT = (size_t)micro * maxT;
    g->prompt_idx = (int *)callocCheck(P, sizeof(int));
    g->prompt = (const int **)callocCheck(N, sizeof(int *));
    g->plen = (int *)callocCheck(N, sizeof(int));
    g->comp = (int *)callocCheck(NT, sizeof(int));
    g->sample_logp = (float *)callocCheck(NT, sizeof(float));
    g->clen = (int *)callocCheck(N, sizeof(int));
    g->reward = (float *)callocCheck(N, sizeof(float));
    g->advantage = (float *)callocCheck(N, sizeof(float));
    g->lambda_size = (int *)callocCheck(NT, sizeof(int));
    g->node_of = (int *)callocCheck(NT, sizeof(int));
    float **fs[] = {&g->logp, &g->logp_old, &g->logp_ref, &g->adv_tok, &g->weight, &g->coef,
                    &g->dlogp, &g->ratio, &g->kl};
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) *fs[i] = (float *)callocCheck(NT, sizeof(float));
    g->clipped = (unsigned char *)callocCheck(NT, 1);
    g->seq_coef = (float *)callocCheck(N, sizeof(float));
    g->rngs = (Rng *)callocCheck(N, sizeof(Rng));
    build_prefix_tree_buffers(&g->tree, k);
    g->inputs = (int *)callocCheck(MT, sizeof(int));
    g->targets = (int *)callocCheck(MT, sizeof(int));
    g->logp_pos = (float *)callocCheck(MT, sizeof(float));
    g->dlogp_pos = (float *)callocCheck(MT, sizeof(float));
}

static void free_group_batch(GroupBatch *g) {
    free(g->prompt_idx); free(g->prompt); free(g->plen); free(g->comp); free(g->sample_logp);
    free(g->clen); free(g->reward); free(g->advantage); free(g->lambda_size); free(g->node_of);
    free(g->logp); free(g->logp_old); free(g->logp_ref); free(g->adv_tok); free(g->weight);
    free(g->coef); free(g->dlogp); free(g->ratio); free(g->kl); free(g->clipped); free(g->seq_coef);
    free(g->rngs); free_prefix_tree(&g->tree); free(g->inputs); free(g->targets);
    free(g->logp_pos); free(g->dlogp_pos);
}

/* policy_logp: teacher-forced forward of completions [s, s+B) of the batch through model m;
   writes out (N, max_new) rows s..s+B−1 with log π(y_t | x, y_<t) at the temperature.
   Leaves m's activations in place for a backward pass. Returns T of the batch. */
static int policy_logp(GPT *m, GroupBatch *g, int s, int B, float temperature,
                       const unsigned char *allowed, float *out) {
    const int *cp[4096];
    for (int b = 0; b < B; b++) cp[b] = g->comp + (size_t)(s + b) * g->max_new;
    int T = make_batch(g->inputs, g->targets, B, g->prompt + s, g->plen + s, cp, g->clen + s);
    gpt_forward(m, g->inputs, B, T);
    gpt_logprob_forward(m, g->logp_pos, g->targets, B * T, temperature, allowed);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < g->clen[s + b]; j++)   // completion token j is predicted at plen−1+j
            out[(size_t)(s + b) * g->max_new + j] = g->logp_pos[b * T + g->plen[s + b] - 1 + j];
    return T;
}

typedef struct {
    double loss, kl, clip_frac, mean_lambda, grad_norm;
    int tokens;
} UpdateStats;

/* grpo_prepare_tokens: per completion token, the advantage a_i, the objective's weight
   (1 or 1/|λ(i,t)|) and the aggregation factor. The normaliser is computed here, once over
   the whole step, before any backward pass, so micro-batching changes no gradient. With
   --mask-truncated 1, a completion cut at max_new tokens without <eos> gets factor 0 and
   leaves every normaliser (loss_agg_coef_masked). */
static void grpo_prepare_tokens(GroupBatch *g, const Options *o, UpdateStats *us) {
    int N = g->N, MN = g->max_new;
    unsigned char masked[4096] = {0};
    for (int i = 0; i < N; i++) {   // truncated: cut at max_new tokens without <eos> (TRL's test)
        int truncated = g->clen[i] == MN && g->comp[(size_t)i * MN + MN - 1] != TOK_EOS;
        masked[i] = (unsigned char)(o->mask_truncated && truncated);
    }
    loss_agg_coef_masked(g->seq_coef, g->clen, masked, N, &o->obj);
    us->mean_lambda = 0; us->tokens = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < g->clen[i]; j++) {
            size_t at = (size_t)i * MN + j;
            g->adv_tok[at] = g->advantage[i];
            g->weight[at] = lambda_weight(&o->obj, g->lambda_size[at]);
            g->coef[at] = g->seq_coef[i];
            us->mean_lambda += g->lambda_size[at];
            us->tokens++;
        }
    if (us->tokens) us->mean_lambda /= us->tokens;
}

/* grpo_loss_backward: the loss of the step (Σ coef·weight·ℓ over every completion token)
   and its gradient, accumulated into policy->grads (zeroed here), in micro-batches of
   o->micro_batch sequences. Iteration 0 records π_old = detached π_θ (so the ratio is
   exactly 1 at μ = 1) and, when β > 0, π_ref from `ref`. Returns the loss; adds the
   summed k3 and the count of clipped tokens to *kl_sum and *clipped. */
static double grpo_loss_backward(GPT *policy, GPT *ref, GroupBatch *g, const Options *o, int iter,
                                 const unsigned char *allowed, double *kl_sum, int *clipped) {
    const ObjectiveConfig *cfg = &o->obj;
    int N = g->N, MN = g->max_new, micro = o->micro_batch > 0 ? o->micro_batch : N;
    double loss = 0.0;
    gpt_zero_grad(policy);
    for (int s = 0; s < N; s += micro) {
        int B = s + micro <= N ? micro : N - s;
        if (iter == 0 && ref && cfg->beta != 0.0f) policy_logp(ref, g, s, B, o->temperature, allowed, g->logp_ref);
        int T = policy_logp(policy, g, s, B, o->temperature, allowed, g->logp);
        for (int b = s; b < s + B; b++) {
            size_t row = (size_t)b * MN;
            if (iter == 0) memcpy(g->logp_old + row, g->logp + row, g->clen[b] * sizeof(float));
            TokenLossOut out = {g->dlogp + row, g->ratio + row, g->kl + row, g->clipped + row};
            loss += grpo_token_loss(cfg, g->clen[b], g->logp + row, g->logp_old + row,
                                    cfg->beta != 0.0f ? g->logp_ref + row : NULL, g->adv_tok + row,
                                    g->weight + row, g->coef + row, &out);
            for (int j = 0; j < g->clen[b]; j++) { *kl_sum += g->kl[row + j]; *clipped += g->clipped[row + j]; }
        }
        for (int b = 0; b < B; b++)         // scatter ∂loss/∂logp back to sequence positions
            for (int t = 0; t < T; t++) {
                int j = t + 1 - g->plen[s + b];
                g->dlogp_pos[b * T + t] = g->targets[b * T + t] >= 0 ? g->dlogp[(size_t)(s + b) * MN + j] : 0.0f;
            }
        gpt_logprob_backward(policy, g->targets, g->dlogp_pos, B * T, o->temperature);
        gpt_backward(policy, g->inputs);
    }
    return loss;
}

/* grpo_update: μ = o->num_iterations optimizer steps on the sampled batch g (advantages
   and |λ| already set). A non-finite loss or gradient norm stops the run (the last good
   checkpoint is left as it is). */
static UpdateStats grpo_update(GPT *policy, GPT *ref, GroupBatch *g, const Options *o,
                               const AdamWConfig *opt, int *adam_t, const unsigned char *allowed,
                               int step, const char *last_good) {
    UpdateStats us = {0};
    grpo_prepare_tokens(g, o, &us);
    for (int iter = 0; iter < o->num_iterations; iter++) {
        double kl = 0.0; int clipped = 0;
        double loss = grpo_loss_backward(policy, ref, g, o, iter, allowed, &kl, &clipped);
        if (!isfinite(loss)) stop_on_nan("the loss", step, (float)loss, last_good);
        float norm = clip_grad_norm(policy, opt->grad_clip);
        if (!isfinite(norm)) stop_on_nan("the gradient norm", step, norm, last_good);
        float lr = lr_at(opt, *adam_t);
        adamw_update(policy, opt, lr, ++*adam_t);
        if (iter == 0) {
            us.loss = loss; us.grad_norm = norm;
            us.kl = us.tokens ? kl / us.tokens : 0.0;
            us.clip_frac = us.tokens ? (double)clipped / us.tokens : 0.0;
        }
    }
    return us;
}

typedef struct { float accuracy, pass_k; int n; } EvalResult;

/* evaluate: greedy accuracy on (the first `limit` of) d's prompts, and pass@k from k
   samples at the temperature (k = pass_k; 0 skips it); both count answers the verifier
   accepts, whatever format_reward is. Sampling streams derive from seed and the prompt
   index, so the result does not depend on the batch size. When dump is not NULL, each
   greedy completion goes there as `prompt<TAB>completion<TAB>reward` (the reward with
   format_reward; the completion without <eos>; `<eos>` missing means it ran out of tokens). */
static EvalResult evaluate(GPT *m, KVCache *kv, const Dataset *d, int limit, int max_new,
                           float temperature, int pass_k, uint64_t seed, float format_reward, FILE *dump) {
    EvalResult r = {0.0f, 0.0f, limit > 0 && limit < d->n ? limit : d->n};
    int Bmax = kv->B;
    const int *pp[4096]; int plen[4096], idx[4096];
    int *comp = (int *)mallocCheck((size_t)Bmax * max_new * sizeof(int));
    float *lp = (float *)mallocCheck((size_t)Bmax * max_new * sizeof(float));
    int *clen = (int *)mallocCheck(Bmax * sizeof(int));
    Rng *rngs = (Rng *)mallocCheck(Bmax * sizeof(Rng));
    int samples = pass_k > 0 ? pass_k : 0;
    int *solved = (int *)callocCheck(r.n, sizeof(int));
    int correct = 0;
    for (int pass = 0; pass < (samples ? 2 : 1); pass++) {
        int per = pass == 0 ? 1 : samples;   // sequences per prompt
        long total = (long)r.n * per;
        for (long s = 0; s < total; s += Bmax) {
            int B = (int)(s + Bmax <= total ? Bmax : total - s);
            for (int b = 0; b < B; b++) {
                long q = s + b;
                int i = (int)(q / per);
                idx[b] = i; pp[b] = d->prompt + (size_t)i * d->maxT; plen[b] = d->prompt_len[i];
                rng_seed(&rngs[b], seed, (1ull << 40) + (uint64_t)q);
            }
            sample_completions(m, kv, B, pp, plen, max_new, temperature, pass == 0, rngs, NULL, comp, lp, clen);
            for (int b = 0; b < B; b++) {
                int i = idx[b];
                const int *cb = comp + (size_t)b * max_new;
                const int *nums = d->nums + (size_t)i * MAX_NUMS;
                // accuracy and pass@k count verified answers only: a format reward of 1 would
                // otherwise count every well-formed wrong answer as solved
                int verified = countdown_reward(nums, d->num_count[i], d->target[i], cb, clen[b], 0.0f) == 1;
                if (pass == 0) correct += verified;
                else solved[i] |= verified;
                if (pass == 0 && dump) {
                    // the dump shows the reward training would give (with --format-reward)
                    float rw = countdown_reward(nums, d->num_count[i], d->target[i], cb, clen[b],
                                                format_reward);
                    char ptext[4096], ctext[8 * 1024 + 16];   // a token decodes to at most 5 characters
                    int ended = clen[b] > 0 && cb[clen[b] - 1] == TOK_EOS;
                    decode(pp[b] + 1, plen[b] - 1, ptext, sizeof ptext);   // without <bos>
                    decode(cb, clen[b] - ended, ctext, sizeof ctext);
                    fprintf(dump, "%s\t%s%s\t%g\n", ptext, ctext, ended ? "" : " [no <eos>]", rw);
                }
            }
        }
    }
    r.accuracy = (float)correct / r.n;
    if (samples) { int c = 0; for (int i = 0; i < r.n; i++) c += solved[i]; r.pass_k = (float)c / r.n; }
    free(comp); free(lp); free(clen); free(rngs); free(solved);
    return r;
}

// Checks shared by train and tree, made before anything is loaded: options that would
// make a GRPO run meaningless.
static void check_grpo_options(const Options *o) {
    if (o->group_size < 2)
        usage_error("--group-size %d: training needs k >= 2 (a group of one has no std and no relative advantage)", o->group_size);
    if (o->temperature < 0.01f) usage_error("--temperature must be >= 0.01 for training (logits / T overflow below)");
    if (o->obj.clip_eps_low < 0.0f || o->obj.clip_eps_low >= 1.0f) usage_error("--clip-eps-low must be in [0, 1)");
    if (o->prompts_per_step * o->group_size > 4096) usage_error("--prompts-per-step x --group-size must be <= 4096");
}

// The longest prompt of d plus --max-new-tokens must fit in the model's context; the
// error names that prompt's FILE:LINE.
static void check_context(const Options *o, int maxT, const Dataset *d) {
    int longest = 0;
    for (int i = 1; i < d->n; i++) if (d->prompt_len[i] > d->prompt_len[longest]) longest = i;
    if (d->n > 0 && d->prompt_len[longest] + o->max_new_tokens > maxT)
        usage_error("--max-new-tokens: %d prompt tokens (%s:%d, the longest prompt) + %d new tokens exceed "
                    "the model's context of %d", d->prompt_len[longest], d->path, d->line[longest],
                    o->max_new_tokens, maxT);
}

/* sample_and_score: draws the step's prompts and k completions each, and their rewards. */
static void sample_and_score(GPT *policy, KVCache *kv, GroupBatch *g, const Dataset *d, Rng *run_rng,
                             const Options *o, int step) {
    for (int p = 0; p < g->P; p++) g->prompt_idx[p] = rng_int(run_rng, d->n);
    for (int i = 0; i < g->N; i++) {
        int q = g->prompt_idx[i / g->k];
        g->prompt[i] = d->prompt + (size_t)q * d->maxT;
        g->plen[i] = d->prompt_len[q];
        rng_seed(&g->rngs[i], o->seed, ((uint64_t)step + 1) * 65536 + i);  // one stream per completion
    }
    sample_completions(policy, kv, g->N, g->prompt, g->plen, g->max_new, o->temperature, 0, g->rngs, NULL,
                       g->comp, g->sample_logp, g->clen);
}

/* build_group_trees: advantages, then per group the tree B(G), |λ(i,t)| and its statistics. */
static TreeStats build_group_trees(GroupBatch *g, const ObjectiveConfig *cfg, int *all_equal_groups) {
    int starts[4097];
    equal_groups(starts, g->P, g->k);
    compute_advantages(g->advantage, g->reward, g->P, starts, cfg);
    TreeStats total = {0, 0.0, 0.0, 0};
    *all_equal_groups = 0;
    for (int p = 0; p < g->P; p++) {
        int o = p * g->k, eq = 1;
        const int *toks[4096];
        for (int i = 0; i < g->k; i++) { toks[i] = g->comp + (size_t)(o + i) * g->max_new; eq &= g->reward[o + i] == g->reward[o]; }
        *all_equal_groups += eq;
        build_prefix_tree(&g->tree, toks, g->clen + o, g->k, g->reward + o, g->advantage + o,
                          g->lambda_size + (size_t)o * g->max_new, g->node_of + (size_t)o * g->max_new, g->max_new);
        TreeStats s = prefix_tree_stats(&g->tree, g->clen + o, g->k, g->node_of + (size_t)o * g->max_new, g->max_new);
        total.nontrivial += s.nontrivial; total.mean_depth += s.mean_depth; total.intermediate += s.intermediate;
        total.counted++;
    }
    total.mean_depth /= g->P; total.intermediate /= g->P;
    return total;
}

static int cmd_train(int argc, char **argv, Options *o) {
    o->steps = 400; o->lr = 1e-4f; o->warmup = 10; o->schedule = 2; o->eval_every = 100; o->eval_limit = 0;
    o->group_size = 16; o->test_limit = -1;
    strcpy(o->run_dir, "runs/grpo");
    const char *syn = "GRPO / λ-GRPO on countdown, starting from an SFT checkpoint (--init, also π_ref).\n"
                      "Each step: sample P prompts x k completions, score them, build each group's\n"
                      "prefix tree B(G), compute the objective, update. Logs RUN_DIR/train.csv;\n"
                      "writes RUN_DIR/model.bin. Ends with 'result: test accuracy A -> B (...)'.";
    int first = parse_options(argc, argv, CMD_TRAIN, o, "train", syn);
    if (first < argc) usage_error("unexpected argument '%s' for '" PROG " train'", argv[first]);
    o->obj.max_new_tokens = o->max_new_tokens;
    check_grpo_options(o);
    check_weight_decay(o);
    char ckpt[1100], periodic[1100], last_good[1100] = "";   // final model; periodic resumable checkpoint
    snprintf(ckpt, sizeof ckpt, "%s/model.bin", o->run_dir);
    snprintf(periodic, sizeof periodic, "%s/ckpt.bin", o->run_dir);
    // the run overwrites these two files: never the SFT checkpoint it starts from, also π_ref
    if (same_file(ckpt, o->init) || same_file(periodic, o->init))
        usage_error("--run-dir %s: it holds the --init checkpoint '%s' (the SFT model, also π_ref), "
                    "which this run would overwrite; give another --run-dir", o->run_dir, o->init);
    int N = o->prompts_per_step * o->group_size, micro = o->micro_batch > 0 && o->micro_batch < N ? o->micro_batch : N;
    GPT policy, ref, init_model;
    TrainState st = {0};
    st.kind = 2;
    rng_seed(&st.rng, o->seed, 2);
    if (o->resume[0]) {
        load_checkpoint(o->resume, &policy, micro, &st);
        if (st.step >= o->steps) usage_error("--steps %d: '%s' has already taken %d steps", o->steps, o->resume, st.step);
    }
    else load_checkpoint(o->init, &policy, micro, NULL);
    int use_ref = o->obj.beta != 0.0f;
    if (use_ref) load_checkpoint(o->init, &ref, micro, NULL);
    // The result line compares the SFT model (--init) with the trained one, so a resumed run
    // scores --init at its start as well, not the checkpoint it continues.
    int load_init = o->resume[0] && !use_ref && o->test_limit != 0;
    if (load_init) load_checkpoint(o->init, &init_model, micro, NULL);
    GPT *sft_model = !o->resume[0] ? &policy : (use_ref ? &ref : &init_model);
    if ((use_ref || load_init) && memcmp(&sft_model->config, &policy.config, sizeof(GPTConfig)) != 0) {
        char msg[1400];
        snprintf(msg, sizeof msg, "--init '%s' is not the model that '%s' continues (another configuration)",
                 o->init, o->resume);
        fail_at(__FILE__, __LINE__, msg, "give the --init the resumed run started from");
    }
    int maxT = policy.config.max_seq_len;
    Dataset train, val, test;
    load_dataset(&train, o->train_data, maxT, 0);
    load_dataset(&val, o->val_data, maxT, 0);
    load_dataset(&test, o->test_data, maxT, 0);
    const Dataset *sets[3] = {&train, &val, &test};
    for (int s = 0; s < 3; s++) check_context(o, maxT, sets[s]);
    print_options(stdout, o, CMD_TRAIN);
    printf("# objective %s: advantage (r - mean)/(%s std + %g), loss %s, clip [%g, %g], beta %g, mu %d\n",
           OBJECTIVE_NAMES[o->obj.objective], ADV_STD_NAMES[o->obj.adv_std], o->obj.adv_eps,
           LOSS_AGG_NAMES[o->obj.loss_agg], 1.0f - o->obj.clip_eps_low, 1.0f + o->obj.clip_eps_high,
           o->obj.beta, o->num_iterations);
    make_dir(o->run_dir);
    int lock = lock_run_dir(o->run_dir);
    if (o->resume[0]) snprintf(last_good, sizeof last_good, "%s", o->resume);
    KVCache kv;
    build_kvcache(&kv, &policy.config, N);
    GroupBatch g;
    build_group_batch(&g, o->prompts_per_step, o->group_size, o->max_new_tokens, micro, maxT);
    AdamWConfig opt = adamw_from_options(o, o->steps * o->num_iterations);
    double t_start = wall_seconds();
    EvalResult before = {0.0f, 0.0f, 0};
    if (o->test_limit != 0) {
        before = evaluate(sft_model, &kv, &test, o->test_limit, o->max_new_tokens, o->temperature, 0, o->seed,
                          0.0f, NULL);
        printf("# start: test greedy accuracy of %s %.4f (%d problems)\n",
               o->resume[0] ? o->init : "the model", before.accuracy, before.n);
    }
    if (load_init) free_gpt(&init_model);
    CsvLog csv = open_csv(o->run_dir, "train.csv",
        "step,mean_reward,frac_all_equal,mean_len,mean_lambda,nontrivial,path_depth,intermediate,loss,kl,"
        "clip_frac,grad_norm,gen_tokens,t_sample,t_score,t_tree,t_update,tok_per_s,val_acc", st.step);
    long gen_tokens = 0;
    int adam_t = st.step * o->num_iterations;
    for (; st.step < o->steps; st.step++) {
        double t0 = wall_seconds();
        sample_and_score(&policy, &kv, &g, &train, &st.rng, o, st.step);
        double t1 = wall_seconds();
        double mean_r = 0.0, mean_len = 0.0;
        for (int i = 0; i < N; i++) {
            int q = g.prompt_idx[i / g.k];
            g.reward[i] = countdown_reward(train.nums + (size_t)q * MAX_NUMS, train.num_count[q], train.target[q],
                                           g.comp + (size_t)i * g.max_new, g.clen[i], o->format_reward);
            mean_r += g.reward[i]; mean_len += g.clen[i]; gen_tokens += g.clen[i];
        }
        mean_r /= N; mean_len /= N;
        double t2 = wall_seconds();
        int all_eq;
        TreeStats ts = build_group_trees(&g, &o->obj, &all_eq);
        double t3 = wall_seconds();
        UpdateStats us = grpo_update(&policy, use_ref ? &ref : NULL, &g, o, &opt, &adam_t, NULL, st.step + 1,
                                     last_good);
        double t4 = wall_seconds();
        int last = st.step + 1 == o->steps;
        float val_acc = -1.0f;
        if (o->eval_every && ((st.step + 1) % o->eval_every == 0 || last))
            val_acc = evaluate(&policy, &kv, &val, o->eval_limit, o->max_new_tokens, o->temperature, 0, o->seed, 0.0f, NULL).accuracy;
        double tok_s = (mean_len * N) / (t4 - t0);
        if (st.step % 10 == 0 || last || val_acc >= 0) {
            printf("step %4d | reward %.3f | eq %.2f | len %.1f | |λ| %.2f | tree %.2f d%.2f i%.2f | loss %+.5f | kl %.4f"
                   " | clip %.3f | gen %ld | t %.2f/%.3f/%.4f/%.2f s | %.0f tok/s",
                   st.step + 1, mean_r, (double)all_eq / g.P, mean_len, us.mean_lambda, (double)ts.nontrivial / g.P,
                   ts.mean_depth, ts.intermediate, us.loss, us.kl, us.clip_frac, gen_tokens, t1 - t0, t2 - t1, t3 - t2,
                   t4 - t3, tok_s);
            if (val_acc >= 0) printf(" | val acc %.3f", val_acc);
            printf("\n");
            fflush(stdout);
        }
        fprintf(csv.f, "%d,%.6f,%.4f,%.3f,%.4f,%.4f,%.4f,%.4f,%.8g,%.6g,%.5f,%.5f,%ld,%.4f,%.5f,%.6f,%.4f,%.1f,%.4f\n",
                st.step + 1, mean_r, (double)all_eq / g.P, mean_len, us.mean_lambda, (double)ts.nontrivial / g.P,
                ts.mean_depth, ts.intermediate, us.loss, us.kl, us.clip_frac, us.grad_norm, gen_tokens, t1 - t0,
                t2 - t1, t3 - t2, t4 - t3, tok_s, val_acc);
        csv_row_done(&csv);
        if (o->save_every && (st.step + 1) % o->save_every == 0 && !last) {
            TrainState next = st; next.step = st.step + 1;
            check_params(&policy, st.step + 1, last_good);
            save_checkpoint(periodic, &policy, 1, &next);
            snprintf(last_good, sizeof last_good, "%s", periodic);
        }
    }
    check_params(&policy, st.step, last_good);
    save_checkpoint(ckpt, &policy, 1, &st);
    close_csv(&csv);
    unlock_run_dir(lock);
    EvalResult after = {0.0f, 0.0f, 0};
    if (o->test_limit != 0)
        after = evaluate(&policy, &kv, &test, o->test_limit, o->max_new_tokens, o->temperature, o->pass_k,
                         o->seed, 0.0f, NULL);
    double minutes = (wall_seconds() - t_start) / 60.0;
    printf("# saved %s", ckpt);
    if (o->pass_k > 0 && o->test_limit != 0) printf("; test pass@%d %.4f", o->pass_k, after.pass_k);
    printf("\n");
    if (o->test_limit != 0)
        printf("result: test accuracy %.4f -> %.4f (%d problems, %s, %.1f min)\n", before.accuracy,
               after.accuracy, after.n, OBJECTIVE_NAMES[o->obj.objective], minutes);
    else
        printf("result: no test evaluation (--test-limit 0; %s, %.1f min)\n",
               OBJECTIVE_NAMES[o->obj.objective], minutes);
    free_group_batch(&g); free_kvcache(&kv);
    free_dataset(&train); free_dataset(&val); free_dataset(&test);
    free_gpt(&policy); if (use_ref) free_gpt(&ref);
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

/* tree_reward: reward of leaf `leaf` for target leaf `target` (0..15): 1.0 for the target;
   r_neg for another leaf whose first n tokens equal the target's; 0.7 otherwise (paper
   §4.3). A completion that is not a leaf (impossible under the mask) gets 0. */
static float tree_reward(int leaf, int target, int n, float r_neg) {
    if (leaf < 0) return 0.0f;
    if (leaf == target) return 1.0f;
    int shift = TREE_DEPTH - n;
    return (leaf >> shift) == (target >> shift) ? r_neg : 0.7f;
}

// The token mask of the tree task: only L and R can be sampled or scored.
static void tree_allowed(unsigned char *allowed) {
    for (int v = 0; v < VOCAB_SIZE; v++) allowed[v] = v == char_to_token('L') || v == char_to_token('R');
}

/* tree_run: one run of the synthetic experiment (one objective, one cell, one seed) from a
   random initialisation. freq (steps) receives, per step, the share of the k sampled
   completions that hit the target. Returns the metric of the paper: the frequency of T
   over the last min(50, steps) steps. The target leaf is drawn from the seed alone, so both
   objectives face the same target and the same sampling streams. */
static float tree_run(const Options *o, int objective, int n, float r_neg, int seed, float *freq, float *reward,
                      int *target_out) {
    Options ro = *o;
    ro.obj.objective = objective;
    ro.seed = seed;
    int k = o->group_size, P = o->prompts_per_step, N = P * k;
    GPT m;
    build_gpt(&m, (GPTConfig){8, VOCAB_SIZE, o->layers, o->heads, o->channels}, N, (uint64_t)seed * 7919 + 1);
    Rng target_rng;
    rng_seed(&target_rng, seed, 0x7ee);
    int target = rng_int(&target_rng, TREE_LEAVES);
    *target_out = target;
    unsigned char allowed[VOCAB_SIZE];
    tree_allowed(allowed);
    KVCache kv;
    build_kvcache(&kv, &m.config, N);
    GroupBatch g;
    build_group_batch(&g, P, k, TREE_DEPTH, N, m.config.max_seq_len);
    static const int bos[1] = {TOK_BOS};
    AdamWConfig opt = adamw_from_options(o, o->steps);
    int adam_t = 0;
    double tail = 0.0;
    int tail_steps = o->steps < 50 ? o->steps : 50;
    for (int step = 0; step < o->steps; step++) {
        for (int i = 0; i < N; i++) {
            g.prompt[i] = bos; g.plen[i] = 1;
            rng_seed(&g.rngs[i], seed, ((uint64_t)step + 1) * 65536 + i);
        }
        sample_completions(&m, &kv, N, g.prompt, g.plen, TREE_DEPTH, o->temperature, 0, g.rngs, allowed,
                           g.comp, g.sample_logp, g.clen);
        int hits = 0;
        double mean_r = 0.0;
        for (int i = 0; i < N; i++) {
            int leaf = tree_leaf(g.comp + (size_t)i * TREE_DEPTH, g.clen[i]);
            g.reward[i] = tree_reward(leaf, target, n, r_neg);
            hits += leaf == target;
            mean_r += g.reward[i];
        }
        int eq;
        build_group_trees(&g, &ro.obj, &eq);
        grpo_update(&m, NULL, &g, &ro, &opt, &adam_t, allowed, step + 1, NULL);   // no checkpoints
        freq[step] = (float)hits / N;
        reward[step] = (float)(mean_r / N);
        if (step >= o->steps - tail_steps) tail += freq[step];
    }
    free_group_batch(&g); free_kvcache(&kv); free_gpt(&m);
    return (float)(tail / tail_steps);
}

static int cmd_tree(int argc, char **argv, Options *o) {
    o->steps = 250; o->group_size = 16; o->prompts_per_step = 1; o->seeds = 5;
    o->lr = 1e-3f; o->warmup = 0; o->schedule = 2; o->weight_decay = 0.0f; o->temperature = 1.0f;
    o->layers = 2; o->heads = 2; o->channels = 32;
    strcpy(o->run_dir, "runs/tree");
    const char *syn = "The paper's synthetic experiment (§4.3, Table 1): a depth-4 binary tree of L/R\n"
                      "tokens, target leaf +1.0, its n-prefix siblings r_neg, other leaves +0.7. Runs the\n"
                      "grid n in {1,2} x r_neg in {-0.5,-1,-1.5} x seeds x {GRPO, λ-GRPO} from random\n"
                      "initialisation, prints the table beside the paper's, writes RUN_DIR/tree_steps.csv.";
    int first = parse_options(argc, argv, CMD_TREE, o, "tree", syn);
    if (first < argc) usage_error("unexpected argument '%s' for '" PROG " tree'", argv[first]);
    check_grpo_options(o);
    if (o->channels % o->heads) usage_error("--heads must divide --channels");
    if (o->steps < 1)
        usage_error("--steps %d: tree needs at least 1 step (its metric is a mean over the last steps)",
                    o->steps);
    check_weight_decay(o);
    print_options(stdout, o, CMD_TREE);
    make_dir(o->run_dir);
    int lock = lock_run_dir(o->run_dir);
    char path[1100];
    snprintf(path, sizeof path, "%s/tree_steps.csv", o->run_dir);
    FILE *csv = fopenCheck(path, "w");
    fprintf(csv, "objective,n,r_neg,seed,target,step,target_freq,mean_reward\n");
    static const int NS[2] = {1, 2};
    static const float RNEG[3] = {-0.5f, -1.0f, -1.5f};
    static const float PAPER[2][3][2] = {{{0.3995f, 0.5663f}, {0.0000f, 0.7535f}, {0.2000f, 0.4463f}},
                                         {{0.1980f, 0.4292f}, {0.0488f, 0.3612f}, {0.0000f, 0.3820f}}};
    int S = o->seeds, runs = 2 * 3 * 2 * S;
    float *metric = (float *)mallocCheck((size_t)runs * sizeof(float));
    float *curve = (float *)mallocCheck((size_t)runs * o->steps * sizeof(float));
    float *rcurve = (float *)mallocCheck((size_t)runs * o->steps * sizeof(float));
    int *targets = (int *)mallocCheck((size_t)runs * sizeof(int));
    double t0 = wall_seconds();
    // The runs are independent and tiny: one thread per run (inner loops run serially
    // inside the parallel region) beats splitting each small matmul across threads.
#ifdef GRPO_CUDA
    #pragma omp parallel for schedule(dynamic) if (!cuda_enabled)   // on the GPU: one run at a time (one cuBLAS handle, shared scratch)
#else
    #pragma omp parallel for schedule(dynamic)
#endif
    for (int idx = 0; idx < runs; idx++) {
        int s = idx % S, obj = (idx / S) % 2, b = (idx / (2 * S)) % 3, a = idx / (6 * S);
        metric[idx] = tree_run(o, obj, NS[a], RNEG[b], s + 1, curve + (size_t)idx * o->steps,
                               rcurve + (size_t)idx * o->steps, &targets[idx]);
    }
    for (int idx = 0; idx < runs; idx++) {
        int s = idx % S, obj = (idx / S) % 2, b = (idx / (2 * S)) % 3, a = idx / (6 * S);
        for (int t = 0; t < o->steps; t++)
            fprintf(csv, "%s,%d,%g,%d,%d,%d,%.6f,%.6f\n", OBJECTIVE_NAMES[obj], NS[a], RNEG[b], s + 1, targets[idx], t + 1,
                    curve[(size_t)idx * o->steps + t], rcurve[(size_t)idx * o->steps + t]);
    }
    fclose(csv);
    printf("\nTable 1: frequency of the target leaf over the last %d steps (mean ± std over %d seed%s)\n",
           o->steps < 50 ? o->steps : 50, S, S > 1 ? "s" : "");
    printf("  n  r_neg |   GRPO (ours)     λ-GRPO (ours)  |  GRPO (paper)  λ-GRPO (paper)\n");
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++) {
            double mean[2], sd[2];
            for (int obj = 0; obj < 2; obj++) {
                const float *v = metric + ((size_t)(a * 3 + b) * 2 + obj) * S;
                double m = 0, ss = 0;
                for (int s = 0; s < S; s++) m += v[s];
                m /= S;
                for (int s = 0; s < S; s++) ss += (v[s] - m) * (v[s] - m);
                mean[obj] = m; sd[obj] = S > 1 ? sqrt(ss / (S - 1)) : 0.0;
            }
            printf("  %d  %5.1f |  %.4f ± %.4f   %.4f ± %.4f |  %.4f        %.4f\n", NS[a], RNEG[b], mean[0], sd[0],
                   mean[1], sd[1], PAPER[a][b][0], PAPER[a][b][1]);
        }
    // the paper's per-seed picture for n = 1, r_neg = −1.0: found early, then abandoned?
    int early = o->steps < 10 ? o->steps : 10;
    printf("\nn = 1, r_neg = -1.0, per seed: target frequency in the first %d steps (max of any step) and the last 50\n", early);
    for (int obj = 0; obj < 2; obj++)
        for (int s = 0; s < S; s++) {
            size_t idx = ((size_t)(0 * 3 + 1) * 2 + obj) * S + s;
            const float *c = curve + idx * o->steps;
            double first = 0, peak = 0;
            for (int t = 0; t < early; t++) { first += c[t]; if (c[t] > peak) peak = c[t]; }
            printf("  %-11s seed %d: first %2d steps %.3f (max %.3f), last 50 steps %.3f\n", OBJECTIVE_NAMES[obj], s + 1,
                   early, first / early, peak, metric[idx]);
        }
    printf("\n# %d runs x %d steps in %.1f s; per-step target frequency in %s\n", 2 * 3 * 2 * S, o->steps,
           wall_seconds() - t0, path);
    free(metric); free(curve); free(rcurve); free(targets);
    unlock_run_dir(lock);
    return 0;
}

// ----------------------------------------------------------------------------
// eval, sample, verify: scoring checkpoints and looking at groups

static int cmd_eval(int argc, char **argv, Options *o) {
    const char *syn = "Scores a checkpoint on a task file: greedy accuracy, and pass@k from k samples.\n"
                      "Both count verified answers; --format-reward changes only the reward column of\n"
                      "--completions.";
    int first = parse_options(argc, argv, CMD_EVAL, o, "eval", syn);
    if (first < argc) usage_error("unexpected argument '%s' for '" PROG " eval'", argv[first]);
    if (o->temperature < 0.01f) usage_error("--temperature must be >= 0.01 (logits / T overflow below; greedy decoding does not use it)");
    if (o->completions_out[0] && (same_file(o->completions_out, o->model) || same_file(o->completions_out, o->data)))
        usage_error("--completions %s: that is the --model or --data file; give another path", o->completions_out);
    print_options(stdout, o, CMD_EVAL);
    GPT m;
    load_checkpoint(o->model, &m, 1, NULL);
    Dataset d;
    load_dataset(&d, o->data, m.config.max_seq_len, 0);
    check_context(o, m.config.max_seq_len, &d);
    KVCache kv;
    build_kvcache(&kv, &m.config, 64);
    FILE *dump = o->completions_out[0] ? fopenCheck(o->completions_out, "w") : NULL;
    EvalResult r = evaluate(&m, &kv, &d, o->eval_limit, o->max_new_tokens, o->temperature, o->pass_k, o->seed,
                            o->format_reward, dump);
    if (dump) fcloseCheck(dump);
    printf("eval: %s on %s: greedy accuracy %.4f", o->model, o->data, r.accuracy);
    if (o->pass_k) printf(", pass@%d %.4f (T=%g)", o->pass_k, r.pass_k, o->temperature);
    printf(" (%d problems)\n", r.n);
    free_kvcache(&kv); free_dataset(&d); free_gpt(&m);
    return 0;
}

// Draws the tree B(G) as text: one line per process step (node), children under their
// parent, with |λ|, R̂, A_λ and the member completions y(i).
static void print_tree(const PrefixTree *tree, const int *const *tokens, const int *len, int k,
                       const int *node_of, int stride) {
    int n_nodes = tree->num_nodes;
    unsigned char *is_last = (unsigned char *)callocCheck(n_nodes + 1, 1);
    for (int n = 0; n < n_nodes; n++) {       // last child: no later node has the same parent
        is_last[n] = 1;
        for (int m = n + 1; m < n_nodes; m++) if (tree->nodes[m].parent == tree->nodes[n].parent) { is_last[n] = 0; break; }
    }
    for (int n = 0; n < n_nodes; n++) {
        const ProcessNode *nd = &tree->nodes[n];
        int chain[256], depth = 0;
        for (int a = nd->parent; a >= 0 && depth < 256; a = tree->nodes[a].parent) chain[depth++] = a;
        for (int d = depth - 1; d >= 0; d--) printf("%s", is_last[chain[d]] ? "    " : "│   ");
        char text[4096];
        decode(tokens[nd->member] + nd->start, nd->end - nd->start, text, sizeof text);
        int width = 32 - 4 * depth;   // keeps the numbers in one column
        printf("%s%-*s |λ|=%-2d R̂=%.3f  A_λ=%+.4f  y(", is_last[n] ? "└── " : "├── ", width > 1 ? width : 1, text,
               nd->size, nd->step_reward, nd->step_advantage);
        int first = 1;
        for (int i = 0; i < k; i++)
            if (len[i] > nd->start && node_of[(size_t)i * stride + nd->start] == n) { printf(first ? "%d" : ",%d", i + 1); first = 0; }
        printf(")\n");
    }
    free(is_last);
}

static int cmd_sample(int argc, char **argv, Options *o) {
    strcpy(o->model, "runs/sft/model.bin");
    const char *syn = "Samples a group of k completions for one prompt, scores them, and draws the\n"
                      "group's prefix tree B(G) with |λ|, step rewards R̂ and step advantages A_λ.";
    int first = parse_options(argc, argv, CMD_SAMPLE, o, "sample", syn);
    if (first < argc) usage_error("unexpected argument '%s' for '" PROG " sample'", argv[first]);
    if (o->temperature < 0.01f) usage_error("--temperature must be >= 0.01 (logits / T overflow below)");
    if (o->group_size > 4096) usage_error("--group-size must be <= 4096");
    int k = o->group_size, plen = (int)strlen(o->prompt), bad = 0;
    int nums[MAX_NUMS], n, target;
    int *prompt = (int *)mallocCheck((size_t)(plen + 1) * sizeof(int));
    prompt[0] = TOK_BOS;
    if (encode(o->prompt, plen, prompt + 1, &bad) < 0)
        usage_error("--prompt: character '%c' at position %d is not in the vocabulary \"%s\"", o->prompt[bad], bad + 1, VOCAB_CHARS);
    if (countdown_parse_prompt(o->prompt, plen, nums, MAX_NUMS, &n, &target) != 0)
        usage_error("--prompt: '%s' is not `n1 n2 ... nk>target:` with 1 to %d numbers of at most 6 digits", o->prompt, MAX_NUMS);
    GPT m;
    load_checkpoint(o->model, &m, 1, NULL);
    int maxT = m.config.max_seq_len;
    if (1 + plen + o->max_new_tokens > maxT)
        usage_error("--max-new-tokens: %d prompt tokens + %d new tokens exceed the model's context of %d",
                    1 + plen, o->max_new_tokens, maxT);
    const int **pp = (const int **)mallocCheck(k * sizeof(int *));
    int *pl = (int *)mallocCheck(k * sizeof(int)), *clen = (int *)mallocCheck(k * sizeof(int));
    int *comp = (int *)mallocCheck((size_t)k * o->max_new_tokens * sizeof(int));
    float *lp = (float *)mallocCheck((size_t)k * o->max_new_tokens * sizeof(float));
    float *r = (float *)mallocCheck(k * sizeof(float)), *a = (float *)mallocCheck(k * sizeof(float));
    int *lam = (int *)mallocCheck((size_t)k * o->max_new_tokens * sizeof(int));
    int *node = (int *)mallocCheck((size_t)k * o->max_new_tokens * sizeof(int));
    Rng *rngs = (Rng *)mallocCheck(k * sizeof(Rng));
    for (int i = 0; i < k; i++) { pp[i] = prompt; pl[i] = plen + 1; rng_seed(&rngs[i], o->seed, 65536 + i); }
    KVCache kv;
    build_kvcache(&kv, &m.config, k);
    sample_completions(&m, &kv, k, pp, pl, o->max_new_tokens, o->temperature, 0, rngs, NULL, comp, lp, clen);
    ObjectiveConfig cfg = o->obj;
    for (int i = 0; i < k; i++) r[i] = countdown_reward(nums, n, target, comp + (size_t)i * o->max_new_tokens, clen[i], 0.0f);
    int starts[2] = {0, k};
    if (k >= 2) compute_advantages(a, r, 1, starts, &cfg); else a[0] = 0.0f;
    printf("prompt %s  (k=%d, T=%g, model %s)\n\n", o->prompt, k, o->temperature, o->model);
    const int *toks[4096];
    for (int i = 0; i < k; i++) {
        char text[4096];
        toks[i] = comp + (size_t)i * o->max_new_tokens;
        decode(toks[i], clen[i], text, sizeof text);
        printf("  y(%d)  r=%.0f  a=%+.4f  %s\n", i + 1, r[i], a[i], text);
    }
    PrefixTree tree;
    build_prefix_tree_buffers(&tree, k);
    build_prefix_tree(&tree, toks, clen, k, r, a, lam, node, o->max_new_tokens);
    TreeStats ts = prefix_tree_stats(&tree, clen, k, node, o->max_new_tokens);
    printf("\nB(G): %d process steps, mean path depth %.2f, intermediate proportion %.2f\n",
           tree.num_nodes, ts.mean_depth, ts.intermediate);
    printf("GRPO pushes each step's tokens |λ| times with A_λ; λ-GRPO once.\n\n<prompt>\n");
    print_tree(&tree, toks, clen, k, node, o->max_new_tokens);
    free_prefix_tree(&tree); free_kvcache(&kv); free_gpt(&m);
    free(prompt); free(pp); free(pl); free(clen); free(comp); free(lp); free(r); free(a); free(lam); free(node); free(rngs);
    return 0;
}

static int cmd_verify(int argc, char **argv, Options *o) {
    const char *syn = "verify FILE: scores `prompt<TAB>completion` lines with the countdown verifier,\n"
                      "printing one reward per line (the format of tests/crosscheck_reasoning_gym.py).";
    int first = parse_options(argc, argv, CMD_VERIFY, o, "verify FILE", syn);
    if (first != argc - 1) usage_error("'" PROG " verify' needs exactly one FILE argument");
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
        if (tab && memchr(tab + 1, '\t', len - plen - 1)) {
            fprintf(stderr, "%s:%d: more than one TAB: expected `prompt<TAB>completion` "
                            "(for a file from eval --completions: cut -f1,2 FILE)\n", argv[first], lineno);
            exit(EXIT_INPUT);
        }
        if (countdown_parse_prompt(line, plen, nums, MAX_NUMS, &n, &target) != 0) {
            fprintf(stderr, "%s:%d: prompt is not `n1 n2 ... nk>target:` with 1 to %d numbers of at most 6 digits\n",
                    argv[first], lineno, MAX_NUMS);
            exit(EXIT_INPUT);
        }
        printf("%g\n", countdown_verify(nums, n, target, tab ? tab + 1 : "", tab ? len - plen - 1 : 0));
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
} CheckRecord;

typedef struct { long group; int index; } GroupKey;
static int group_key_cmp(const void *a, const void *b) {   // by group id, then file order
    const GroupKey *x = (const GroupKey *)a, *y = (const GroupKey *)b;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    return x->index - y->index;
}

static void check_error(const char *path, int line, const char *what, const char *detail) {
    fprintf(stderr, "%s:%d: %s%s\n", path, line, what, detail ? detail : "");
    exit(EXIT_INPUT);
}

// Parses a comma-separated list of n_max numbers (ints if is_int); returns the count.
static int parse_list(const char *s, int is_int, void **out, const char *path, int line, const char *key) {
    int cap = 16, n = 0;
    char detail[160];
    void *buf = mallocCheck((size_t)cap * 4);
    if (*s == 0) { *out = buf; return 0; }
    for (;;) {
        char *end;
        errno = 0;
        if (n == cap) { cap *= 2; buf = realloc(buf, (size_t)cap * 4); if (!buf) check_error(path, line, "out of memory", NULL); }
        if (is_int) {
            long v = strtol(s, &end, 10);
            if (end == s || (*end && *end != ',') || errno) {
                snprintf(detail, sizeof detail, " (item %d of %s)", n + 1, key);
                check_error(path, line, "token id is not an integer", detail);
            }
            if (v < 0 || v > 2147483647L) {
                snprintf(detail, sizeof detail, " (item %d of %s: %ld)", n + 1, key, v);
                check_error(path, line, "token id must be a non-negative 32-bit integer", detail);
            }
            ((int *)buf)[n++] = (int)v;
        } else {
            double v = strtod(s, &end);
            if (end == s || (*end && *end != ',')) {
                snprintf(detail, sizeof detail, " (item %d of %s)", n + 1, key);
                check_error(path, line, "number does not parse", detail);
            }
            if (!isfinite(v) || fabs(v) > FLT_MAX) {
                snprintf(detail, sizeof detail, " (item %d of %s)", n + 1, key);
                check_error(path, line, "number is not finite or outside the float range (|x| <= 3.4e38)", detail);
            }
            ((float *)buf)[n++] = (float)v;
        }
        if (*end == 0) break;
        s = end + 1;
        if (*s == 0) check_error(path, line, "list ends with ',' in ", key);
    }
    *out = buf;
    return n;
}

#define CHECK_MAX_LINE (1L << 24)   // bytes in one line of a check file: about a million numbers

/* read_check_file: parses every line of a check file (FILE or "-" for stdin) into
   records, or exits with FILE:LINE: what is wrong. Nothing is printed to stdout. */
static int read_check_file(const char *path, CheckRecord **out) {
    FILE *f = strcmp(path, "-") ? fopenCheck(path, "r") : stdin;
    int cap = 64, n = 0, lineno = 0;
    CheckRecord *recs = (CheckRecord *)mallocCheck(cap * sizeof(CheckRecord));
    char *line = NULL;
    size_t lcap = 0;
    long len;
    while ((len = read_line(f, &line, &lcap, CHECK_MAX_LINE, path, lineno + 1)) != -1) {
        lineno++;
        refuse_bom(line, len, path, lineno);
        if ((size_t)len != strlen(line)) check_error(path, lineno, "NUL byte in line", NULL);
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        CheckRecord r = {lineno, 0, 0.0f, -1, NULL, NULL, NULL, NULL, -1};
        int have_group = 0, have_reward = 0, nlogp = -1, nold = -1, nref = -1, fields = 0;
        char *save = NULL;
        for (char *tok = strtok_r(line, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
            fields++;
            char *eq = strchr(tok, '=');
            if (!eq) check_error(path, lineno, "expected key=value, got: ", tok);
            *eq = 0;
            char *key = tok, *val = eq + 1, *end;
            int dup = 0;
            if (!strcmp(key, "group")) {
                dup = have_group++;
                errno = 0;
                r.group = strtol(val, &end, 10);
                if (end == val || *end || errno) check_error(path, lineno, "group is not an integer: ", val);
            } else if (!strcmp(key, "reward")) {
                dup = have_reward++;
                double v = strtod(val, &end);
                if (end == val || *end) check_error(path, lineno, "reward does not parse: ", val);
                if (!isfinite(v) || fabs(v) > FLT_MAX) check_error(path, lineno, "reward is not finite or outside the float range (|x| <= 3.4e38): ", val);
                r.reward = (float)v;
            } else if (!strcmp(key, "tokens")) {
                dup = r.n >= 0;
                r.n = parse_list(val, 1, (void **)&r.tokens, path, lineno, "tokens");
            } else if (!strcmp(key, "logp")) {
                dup = nlogp >= 0;
                nlogp = parse_list(val, 0, (void **)&r.logp, path, lineno, "logp");
            } else if (!strcmp(key, "logp_old")) {
                dup = nold >= 0;
                nold = parse_list(val, 0, (void **)&r.logp_old, path, lineno, "logp_old");
            } else if (!strcmp(key, "logp_ref")) {
                dup = nref >= 0;
                nref = parse_list(val, 0, (void **)&r.logp_ref, path, lineno, "logp_ref");
            } else if (!strcmp(key, "truncated")) {
                dup = r.truncated >= 0;
                if (strcmp(val, "0") && strcmp(val, "1"))
                    check_error(path, lineno, "truncated must be 0 or 1, got: ", val);
                r.truncated = val[0] == '1';
            } else {
                check_error(path, lineno, "unknown key (expected group, reward, tokens, logp, logp_old, "
                                          "logp_ref, truncated): ", key);
            }
            if (dup) check_error(path, lineno, "key given twice: ", key);
        }
        if (fields == 0) continue;   // blank or comment-only line
        if (!have_group) check_error(path, lineno, "missing required key: group", NULL);
        if (!have_reward) check_error(path, lineno, "missing required key: reward", NULL);
        if (r.n < 0) check_error(path, lineno, "missing required key: tokens (use `tokens=` for an empty completion)", NULL);
        char detail[96];
        int counts[3] = {nlogp, nold, nref};
        const char *names[3] = {"logp", "logp_old", "logp_ref"};
        for (int c = 0; c < 3; c++)
            if (counts[c] >= 0 && counts[c] != r.n) {
                snprintf(detail, sizeof detail, "%s has %d numbers, tokens has %d", names[c], counts[c], r.n);
                check_error(path, lineno, detail, NULL);
            }
        if (n == cap) { cap *= 2; recs = (CheckRecord *)realloc(recs, cap * sizeof(CheckRecord)); if (!recs) check_error(path, lineno, "out of memory", NULL); }
        recs[n++] = r;
    }
    free(line);
    if (f != stdin) fclose(f);
    if (n == 0) check_error(path, lineno, "no completions in file", NULL);
    *out = recs;
    return n;
}

static int cmd_check(int argc, char **argv, Options *o) {
    o->max_new_tokens = 1024;
    const char *syn = "check FILE: runs one batch dumped from another trainer through grpo.c's tree and\n"
                      "objective code. FILE ('-' for stdin) has one completion per line of key=value\n"
                      "fields: group=<int> reward=<num> tokens=<id,...> [logp=...] [logp_old=...]\n"
                      "[logp_ref=...] [truncated=0|1]. Prints one tab-separated row per token and\n"
                      "'loss <value>'. --mask-truncated 1 gives the lines with truncated=1 no loss.";
    int first = parse_options(argc, argv, CMD_CHECK, o, "check FILE", syn);
    if (first != argc - 1) usage_error("'" PROG " check' needs exactly one FILE argument ('-' for stdin)");
    ObjectiveConfig cfg = o->obj;
    cfg.max_new_tokens = o->max_new_tokens;
    const char *path = argv[first];
    CheckRecord *rec;
    int N = read_check_file(path, &rec);
    // order completions by group id (stable), so each group is contiguous
    GroupKey *keys = (GroupKey *)mallocCheck(N * sizeof(GroupKey));
    for (int i = 0; i < N; i++) keys[i] = (GroupKey){rec[i].group, i};
    qsort(keys, N, sizeof(GroupKey), group_key_cmp);
    int *order = (int *)mallocCheck(N * sizeof(int));
    for (int i = 0; i < N; i++) order[i] = keys[i].index;
    free(keys);
    int *starts = (int *)mallocCheck((N + 1) * sizeof(int)), G = 0;
    for (int a = 0; a < N; a++) if (a == 0 || rec[order[a]].group != rec[order[a - 1]].group) starts[G++] = a;
    starts[G] = N;
    for (int g = 0; g < G; g++)
        if (starts[g + 1] - starts[g] < 2 && cfg.adv_std != STD_NONE && cfg.adv_std_scope == SCOPE_GROUP) {
            char detail[128];
            snprintf(detail, sizeof detail, " (group %ld has one completion; --adv-std %s needs k >= 2, or use --adv-std none)",
                     rec[order[starts[g]]].group, ADV_STD_NAMES[cfg.adv_std]);
            check_error(path, rec[order[starts[g]]].line, "group of size 1", detail);
        }
    if (cfg.beta != 0.0f)
        for (int i = 0; i < N; i++)
            if (!rec[i].logp_ref) check_error(path, rec[i].line, "logp_ref is required when --beta is not 0", NULL);
    if (cfg.beta != 0.0f)   // a missing logp is taken as 0 below: with a KL term, a wrong KL, silently
        for (int i = 0; i < N; i++)
            if (!rec[i].logp)
                check_error(path, rec[i].line, "logp_ref given without logp: the KL term needs the "
                            "policy's log-probs (logp=...) when --beta is not 0", NULL);
    // masking needs the trainer's own verdict: only it knows its EOS ids and its budget
    if (o->mask_truncated)
        for (int i = 0; i < N; i++)
            if (rec[i].truncated < 0)
                check_error(path, rec[i].line, "truncated=0|1 is required when --mask-truncated is 1", NULL);
    float *reward = (float *)mallocCheck(N * sizeof(float)), *adv = (float *)mallocCheck(N * sizeof(float));
    int *len = (int *)mallocCheck(N * sizeof(int)), maxlen = 1;
    const int **toks = (const int **)mallocCheck(N * sizeof(int *));
    for (int a = 0; a < N; a++) {
        CheckRecord *r = &rec[order[a]];
        reward[a] = r->reward; len[a] = r->n; toks[a] = r->tokens;
        if (r->n > maxlen) maxlen = r->n;
    }
    compute_advantages(adv, reward, G, starts, &cfg);
    int *lam = (int *)callocCheck((size_t)N * maxlen, sizeof(int));
    int *node = (int *)callocCheck((size_t)N * maxlen, sizeof(int));
    float *step_adv = (float *)callocCheck((size_t)N * maxlen, sizeof(float));
    PrefixTree tree;
    int kmax = 1;
    for (int g = 0; g < G; g++) if (starts[g + 1] - starts[g] > kmax) kmax = starts[g + 1] - starts[g];
    build_prefix_tree_buffers(&tree, kmax);
    for (int g = 0; g < G; g++) {
        int s = starts[g], k = starts[g + 1] - s;
        build_prefix_tree(&tree, toks + s, len + s, k, reward + s, adv + s,
                          lam + (size_t)s * maxlen, node + (size_t)s * maxlen, maxlen);
        for (int i = s; i < s + k; i++)
            for (int t = 0; t < len[i]; t++)
                step_adv[(size_t)i * maxlen + t] = tree.nodes[node[(size_t)i * maxlen + t]].step_advantage;
    }
    float *coef = (float *)mallocCheck(N * sizeof(float));
    unsigned char *masked = (unsigned char *)callocCheck(N, 1);
    for (int a = 0; a < N; a++)
        masked[a] = (unsigned char)(o->mask_truncated && rec[order[a]].truncated == 1);
    loss_agg_coef_masked(coef, len, masked, N, &cfg);
    if (cfg.loss_agg == AGG_SEQ_MEAN_TOKEN_SUM_NORM && maxlen > cfg.max_new_tokens)
        fprintf(stderr, "warning: %s: a completion has %d tokens, more than --max-new-tokens %d (the Dr. GRPO "
                        "constant); pass your trainer's budget\n", path, maxlen, cfg.max_new_tokens);
    size_t NT = (size_t)N * maxlen;
    float *zeros = (float *)callocCheck(NT, sizeof(float));
    float *w = (float *)mallocCheck(NT * sizeof(float)), *at = (float *)mallocCheck(NT * sizeof(float));
    float *ct = (float *)mallocCheck(NT * sizeof(float)), *dl = (float *)mallocCheck(NT * sizeof(float));
    float *ratio = (float *)mallocCheck(NT * sizeof(float)), *kl = (float *)mallocCheck(NT * sizeof(float));
    double loss = 0.0;
    for (int a = 0; a < N; a++) {
        CheckRecord *r = &rec[order[a]];
        size_t row = (size_t)a * maxlen;
        for (int t = 0; t < len[a]; t++) {
            w[row + t] = lambda_weight(&cfg, lam[row + t]);
            at[row + t] = adv[a]; ct[row + t] = coef[a];
        }
        const float *lp = r->logp ? r->logp : zeros;            // missing logp: 0 for every token
        const float *lo = r->logp_old ? r->logp_old : lp;        // missing logp_old: ratio 1
        TokenLossOut out = {dl + row, ratio + row, kl + row, NULL};
        loss += grpo_token_loss(&cfg, len[a], lp, lo, r->logp_ref, at + row, w + row, ct + row, &out);
    }
    // print in file order
    int *pos_of = (int *)mallocCheck(N * sizeof(int));
    for (int a = 0; a < N; a++) pos_of[order[a]] = a;
    printf("line\tgroup\tt\ttoken\tlambda_size\tweight\tadvantage\tstep_advantage\tratio\tkl\tdloss_dlogp\n");
    for (int i = 0; i < N; i++) {
        int a = pos_of[i];
        size_t row = (size_t)a * maxlen;
        for (int t = 0; t < len[a]; t++)
            printf("%d\t%ld\t%d\t%d\t%d\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g\n", rec[i].line, rec[i].group, t,
                   rec[i].tokens[t], lam[row + t], w[row + t], adv[a], step_adv[row + t], ratio[row + t],
                   kl[row + t], dl[row + t]);
    }
    printf("loss\t%.9g\n", loss);
    for (int i = 0; i < N; i++) { free(rec[i].tokens); free(rec[i].logp); free(rec[i].logp_old); free(rec[i].logp_ref); }
    free(rec); free(order); free(starts); free(reward); free(adv); free(len); free(toks); free(lam); free(node);
    free(step_adv); free_prefix_tree(&tree); free(coef); free(zeros); free(w); free(at); free(ct); free(dl);
    free(ratio); free(kl); free(pos_of);
    free(masked);
    return 0;
}

// ----------------------------------------------------------------------------
// bench: training and sampling throughput of the model (make bench compares with PyTorch)

// one timed training step of bench: forward, log-probs, backward, clipping, AdamW step t
static void bench_train_step(GPT *m, const int *inputs, const int *targets, float *logp, const float *dlogp,
                             int B, int T, const AdamWConfig *opt, int t) {
    gpt_forward(m, inputs, B, T);
    gpt_logprob_forward(m, logp, targets, B * T, 1.0f, NULL);
    gpt_zero_grad(m);
    gpt_logprob_backward(m, targets, dlogp, B * T, 1.0f);
    gpt_backward(m, inputs);
    clip_grad_norm(m, 1.0f);
    adamw_update(m, opt, 1e-4f, t);
}

static int cmd_bench(int argc, char **argv, Options *o) {
    o->batch_size = 16; o->steps = 10;
    const char *syn = "Training throughput (forward + backward + AdamW on a fixed B x maxT batch) and\n"
                      "sampling throughput (64 sequences, 8-token prompt, KV cache, to maxT).\n"
                      "Then the training step at the GRPO update's shape (128 x 37).\n"
                      "Last line: 'bench train_tok_s=... sample_tok_s=... gflops=... update_tok_s=...\n"
                      "update_gflops=... threads=...'.";
    int first = parse_options(argc, argv, CMD_BENCH | CMD_SFT * 0, o, "bench", syn);
    if (first < argc) usage_error("unexpected argument '%s' for '" PROG " bench'", argv[first]);
    if (o->channels % o->heads) usage_error("--heads must divide --channels");
    int B = o->batch_size, T = o->context, S = 64, P = 8;
    // the sampling benchmark continues an 8-token prompt to the end of the context
    if (T < P + 1)
        usage_error("--context %d: bench samples after an %d-token prompt, so it needs at least %d",
                    T, P, P + 1);
    GPT m;
    build_gpt(&m, (GPTConfig){T, VOCAB_SIZE, o->layers, o->heads, o->channels}, B, o->seed);
    Rng rng;
    rng_seed(&rng, o->seed, 3);
    int *inputs = (int *)mallocCheck((size_t)B * T * sizeof(int)), *targets = (int *)mallocCheck((size_t)B * T * sizeof(int));
    float *logp = (float *)mallocCheck((size_t)B * T * sizeof(float)), *dlogp = (float *)mallocCheck((size_t)B * T * sizeof(float));
    for (int i = 0; i < B * T; i++) { inputs[i] = rng_int(&rng, VOCAB_SIZE); targets[i] = rng_int(&rng, VOCAB_SIZE); dlogp[i] = -1.0f / (B * T); }
    AdamWConfig opt = {1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 0, 1000, 2, 1.0f};
    double t0 = 0;
    for (int it = 0; it < 3 + o->steps; it++) {
        if (it == 3) t0 = wall_seconds();
        bench_train_step(&m, inputs, targets, logp, dlogp, B, T, &opt, it + 1);
    }
#ifdef GRPO_CUDA
    if (m.on_device) cuda_synchronize();   // the GPU runs behind the host: wait for the last step
#endif
    double train_tok_s = (double)B * T * o->steps / (wall_seconds() - t0);
    size_t C = o->channels, L = o->layers, V = VOCAB_SIZE;
    size_t n_nonemb = m.num_parameters - m.param_sizes[0] - m.param_sizes[1];
    double fwd_flops = 2.0 * n_nonemb + 2.0 * L * T * C + 2.0 * C * V;
    double gflops = train_tok_s * 3.0 * fwd_flops / 1e9;
    // the same step at the shape of the main job's GRPO update: 8 prompts x 16 completions,
    // sequences of up to 37 tokens (11-token prompt, 26 new), on a model of the same size
    int UB = 128;
    int UT = imin(37, T);
    GPT mu;
    build_gpt(&mu, (GPTConfig){T, VOCAB_SIZE, o->layers, o->heads, o->channels}, UB, o->seed);
    int *uin = (int *)mallocCheck((size_t)UB * UT * sizeof(int));
    int *utg = (int *)mallocCheck((size_t)UB * UT * sizeof(int));
    float *ulp = (float *)mallocCheck((size_t)UB * UT * sizeof(float));
    float *udlp = (float *)mallocCheck((size_t)UB * UT * sizeof(float));
    for (int i = 0; i < UB * UT; i++) {
        uin[i] = rng_int(&rng, VOCAB_SIZE);
        utg[i] = rng_int(&rng, VOCAB_SIZE);
        udlp[i] = -1.0f / (UB * UT);
    }
    int usteps = imax(3, o->steps / 2);
    for (int it = 0; it < 1 + usteps; it++) {
        if (it == 1) t0 = wall_seconds();
        bench_train_step(&mu, uin, utg, ulp, udlp, UB, UT, &opt, it + 1);
    }
#ifdef GRPO_CUDA
    if (mu.on_device) cuda_synchronize();
#endif
    double update_tok_s = (double)UB * UT * usteps / (wall_seconds() - t0);
    double update_gflops = update_tok_s * 3.0 * (2.0 * n_nonemb + 2.0 * L * UT * C + 2.0 * C * V) / 1e9;
    free(uin);
    free(utg);
    free(ulp);
    free(udlp);
    free_gpt(&mu);
    // sampling: eos masked so every sequence runs to the end of the context
    KVCache kv;
    build_kvcache(&kv, &m.config, S);
    unsigned char allowed[VOCAB_SIZE];
    for (int v = 0; v < VOCAB_SIZE; v++) allowed[v] = v != TOK_EOS;
    int *prompts = (int *)mallocCheck((size_t)S * P * sizeof(int)), plen[64];
    const int *pp[64];
    Rng rngs[64];
    for (int b = 0; b < S; b++) {
        for (int t = 0; t < P; t++) prompts[b * P + t] = rng_int(&rng, VOCAB_SIZE);
        pp[b] = prompts + b * P; plen[b] = P; rng_seed(&rngs[b], o->seed, 100 + b);
    }
    int max_new = T - P;
    int *comp = (int *)mallocCheck((size_t)S * max_new * sizeof(int)), clen[64];
    float *clp = (float *)mallocCheck((size_t)S * max_new * sizeof(float));
    sample_completions(&m, &kv, S, pp, plen, max_new, 1.0f, 0, rngs, allowed, comp, clp, clen);  // warm-up
    t0 = wall_seconds();
    sample_completions(&m, &kv, S, pp, plen, max_new, 1.0f, 0, rngs, allowed, comp, clp, clen);
    double sample_tok_s = (double)S * max_new / (wall_seconds() - t0);
    printf("# model: %zu parameters (L=%d NH=%d C=%d maxT=%d), train batch %dx%d, sample batch %d\n",
           m.num_parameters, o->layers, o->heads, o->channels, T, B, T, S);
#ifdef GRPO_CUDA
    printf("train  %10.0f tokens/s  (%.2f GFLOP/s on the GPU, TF32 %s)\n", train_tok_s, gflops, o->tf32 ? "on" : "off");
#else
    printf("train  %10.0f tokens/s  (%.2f GFLOP/s; fp32 peak: 32 FLOP/cycle per core, ~116 GFLOP/s "
           "at 3.6 GHz)\n", train_tok_s, gflops);
#endif
    printf("update %10.0f tokens/s  (%.2f GFLOP/s): the same step at the GRPO update's shape, %d x %d\n",
           update_tok_s, update_gflops, UB, UT);
    printf("sample %10.0f new tokens/s\n", sample_tok_s);
#ifdef GRPO_CUDA
    if (m.on_device) {   // the step's cuBLAS products timed inside one training step, then alone
        cuda_time_sgemm = 1; cuda_sgemm_seconds = 0.0;
        bench_train_step(&m, inputs, targets, logp, dlogp, B, T, &opt, 4 + o->steps);
        cuda_synchronize();
        cuda_time_sgemm = 0;
        int BT = B * T, Ci = o->channels, Li = o->layers, reps = 20;
        double alone = Li * (cuda_time_sgemms(BT, Ci, 3 * Ci, reps) + cuda_time_sgemms(BT, Ci, Ci, reps) +
                             cuda_time_sgemms(BT, Ci, 4 * Ci, reps) + cuda_time_sgemms(BT, 4 * Ci, Ci, reps)) +
                       cuda_time_sgemms(BT, Ci, VOCAB_SIZE, reps);
        double mm_flops = 6.0 * BT * ((double)Li * 12 * Ci * Ci + (double)Ci * VOCAB_SIZE);   // 3 products of 2·N·C·OC
        printf("sgemm  %.3f ms of matmul products (cuBLAS) per training step (%.0f GFLOP/s); the same products alone: %.3f ms "
               "(%.0f GFLOP/s): %.0f%% of isolated cuBLAS; the step takes %.3f ms\n",
               cuda_sgemm_seconds * 1e3, mm_flops / cuda_sgemm_seconds / 1e9, alone * 1e3, mm_flops / alone / 1e9,
               100.0 * alone / cuda_sgemm_seconds, 1e3 * B * T / train_tok_s);
        if (o->kernel_times) {
            cuda_kernel_times_start();
            for (int it = 0; it < 3; it++)
                bench_train_step(&m, inputs, targets, logp, dlogp, B, T, &opt, 5 + o->steps + it);
            cuda_kernel_times_report(stdout, 3);
        }
    }
#endif
    printf("bench train_tok_s=%.1f sample_tok_s=%.1f gflops=%.2f update_tok_s=%.1f update_gflops=%.2f "
           "threads=%d\n", train_tok_s, sample_tok_s, gflops, update_tok_s, update_gflops, num_threads());
    free(inputs); free(targets); free(logp); free(dlogp); free(prompts); free(comp); free(clp);
    free_kvcache(&kv); free_gpt(&m);
    return 0;
}

// ----------------------------------------------------------------------------
// Command line

static void print_usage(void) {
    printf("grpo.c: GRPO and λ-GRPO (Sullivan & Koller, arXiv 2509.21154) in one C file\n\n"
           "usage: " PROG " <command> [--option value ...]    (" PROG " <command> --help for options)\n\n"
           "commands:\n"
           "  sft      supervised fine-tuning on demonstrations (data/countdown_train.txt)\n"
           "  train    GRPO / λ-GRPO on countdown from an SFT checkpoint\n"
           "  eval     score a checkpoint: greedy accuracy and pass@k\n"
           "  sample   sample a group for one prompt and draw its prefix tree B(G)\n"
           "  tree     the paper's synthetic experiment (Table 1): GRPO vs λ-GRPO on a binary tree\n"
           "  check    advantages, |λ|, weights, loss and gradients for a batch from another trainer\n"
           "  verify   score prompt<TAB>completion lines with the countdown verifier\n"
           "  bench    training and sampling throughput\n");
}

#ifndef TESTING
int main(int argc, char **argv) {
    atexit(check_stdout);   // also covers the exit(0) paths, such as --help
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        print_usage();
        return argc < 2 ? EXIT_USAGE : 0;
    }
    Options o;
    default_options(&o);
    const char *cmd = argv[1];
    argc--; argv++;
    if (!strcmp(cmd, "sft")) return cmd_sft(argc, argv, &o);
    if (!strcmp(cmd, "train")) return cmd_train(argc, argv, &o);
    if (!strcmp(cmd, "eval")) return cmd_eval(argc, argv, &o);
    if (!strcmp(cmd, "sample")) return cmd_sample(argc, argv, &o);
    if (!strcmp(cmd, "check")) return cmd_check(argc, argv, &o);
    if (!strcmp(cmd, "verify")) return cmd_verify(argc, argv, &o);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc, argv, &o);
    if (!strcmp(cmd, "tree")) return cmd_tree(argc, argv, &o);
    fprintf(stderr, "usage error: unknown command '%s'\n  (run '" PROG " --help')\n", cmd);
    return EXIT_USAGE;
}
#endif
