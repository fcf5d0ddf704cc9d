/*
grpo_kernels.cu: the CUDA backend of grpo.c's hot tensor operations.

One program, one algorithm: the training loop, the sampler's control, the verifier, the
prefix tree and the advantages stay in grpo.c on the host; only the tensor operations below
change backend. Each function cuda_<name> does what the CPU function <name> in grpo.c does,
takes the same arguments in the same order, with DEVICE pointers (cudaMalloc'd memory, never
managed memory), and keeps the same semantics: backward functions accumulate (+=) into
gradients, att keeps zeros above the diagonal, a negative target is not scored. Where a GPU
version needs a size the CPU loop does not (the vocabulary of encoder_backward) or cannot
take grpo.c's structs (AdamW, clipping, the token loss), the extra or flattened arguments are
listed at the function.

Conventions
  - Matrix products go through cuBLAS sgemm (and the matmul's bias gradient through one
    sgemv with a vector of ones). TF32 is off unless cuda_init(1) turns it on, so results
    stay comparable with the CPU path (tests/test_cuda.cu states the tolerances). cuBLAS
    gives the same bits on every run with the same cuBLAS version, GPU architecture and SM
    count, on one stream, with its atomics mode off (the default, which we keep).
  - Our own kernels for the rest, one thread (or one warp) per output element or row. No
    atomics: every output is summed by one thread in a fixed order, or by a fixed-shape tree,
    so the same inputs with the same block size give the same bits on every run.
  - Other sums over many rows (LayerNorm's parameter gradients and dwte) use two
    fixed-order stages: each thread sums CHUNK_ROWS rows of one column into a partial, then
    column_reduce_kernel adds the partials in chunk order. The loss and the gradient norm
    are summed in double the same way.
  - Every CUDA and cuBLAS call is checked (CUDA_CHECK, CUBLAS_CHECK report file and line),
    and cudaGetLastError() after every launch (LAUNCH_CHECK). With cuda_sync_launches = 1 (or
    GRPO_CUDA_SYNC=1 at cuda_init) each launch is also synchronised, so a fault inside a
    kernel is reported at the launch that caused it.
  - cuda_block_size (default 256) is the threads per block of every launch; warp-per-row
    kernels round it down to whole warps. Any size 1..1024 works; sizes need not divide the
    problem (each kernel guards its index).
  - Everything runs on the default stream, asynchronously; only the functions that return a
    number to the host (the token loss, the gradient norm) wait for the GPU.
*/
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
int cuda_block_size = 256;    // threads per block of every launch (tests try several)
int cuda_sync_launches = 0;   // 1: synchronise after each launch (debugging; tests set it)
int cuda_time_sgemm = 0;      // 1: time every sgemm of the matmuls with CUDA events (./grpo bench)
double cuda_sgemm_seconds = 0.0;   // their GPU time, summed while cuda_time_sgemm is 1
int cuda_kernel_times = 0;    // 1: charge GPU time to each kernel by name (./grpo_cuda bench --kernel-times)
}

// ----------------------------------------------------------------------------
// Checked calls: report the failing call, its file and line, then exit like grpo.c's
// fail_at (exit status 1, a failed run)

static void cuda_check(cudaError_t e, const char *call, const char *file, int line) {
    if (e == cudaSuccess) return;
    fprintf(stderr, "error: CUDA %s: %s\n  in %s\n  at %s:%d\n", cudaGetErrorName(e),
            cudaGetErrorString(e), call, file, line);
    exit(1);
}

static void cublas_check(cublasStatus_t s, const char *call, const char *file, int line) {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    fprintf(stderr, "error: cuBLAS %s\n  in %s\n  at %s:%d\n", cublasGetStatusString(s), call, file, line);
    exit(1);
}

static void time_mark(const char *name);

static void launch_check(const char *kernel, const char *file, int line) {
    cuda_check(cudaGetLastError(), kernel, file, line);                    // bad launch shape
    if (cuda_sync_launches) cuda_check(cudaDeviceSynchronize(), kernel, file, line);  // fault inside
    time_mark(kernel);
}

#define CUDA_CHECK(call) cuda_check((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) cublas_check((call), #call, __FILE__, __LINE__)
#define LAUNCH_CHECK(kernel) launch_check(#kernel, __FILE__, __LINE__)

/* Kernel times (./grpo_cuda bench --kernel-times). While cuda_kernel_times is 1, every launch
   check, cuBLAS call and copy records a CUDA event and waits for it, and the GPU time since
   the previous mark is charged to that name. The interval includes the launch gap after the
   previous mark (a few microseconds), so the total runs above an unprofiled step: the table
   is for seeing where a step's time goes, not for throughput. */
#define MAX_TIMED 64
static struct { const char *name; double ms; long calls; } g_timed[MAX_TIMED];
static int g_num_timed = 0;
static cudaEvent_t g_marks[2];
static double g_empty_mark_ms = 0.0;   // the time charged by a mark with nothing launched before it

/* cuda_kernel_times_start: empties the table and sets the first mark (turns timing on). First
   times 20 empty marks: what each row's calls carry of waiting, reported with the table. */
extern "C" void cuda_kernel_times_start(void) {
    if (!g_marks[0]) { CUDA_CHECK(cudaEventCreate(&g_marks[0])); CUDA_CHECK(cudaEventCreate(&g_marks[1])); }
    cuda_kernel_times = 1;
    CUDA_CHECK(cudaEventRecord(g_marks[0], 0));
    CUDA_CHECK(cudaEventSynchronize(g_marks[0]));
    g_num_timed = 0;
    for (int i = 0; i < 20; i++) time_mark("(empty mark)");
    g_empty_mark_ms = g_timed[0].ms / 20;
    g_num_timed = 0;
}

static void time_mark(const char *name) {
    if (!cuda_kernel_times) return;
    float ms = 0.0f;
    CUDA_CHECK(cudaEventRecord(g_marks[1], 0));
    cuda_check(cudaEventSynchronize(g_marks[1]), name, __FILE__, __LINE__);   // a fault names the kernel
    CUDA_CHECK(cudaEventElapsedTime(&ms, g_marks[0], g_marks[1]));
    cudaEvent_t e = g_marks[0]; g_marks[0] = g_marks[1]; g_marks[1] = e;
    int i = 0;
    while (i < g_num_timed && strcmp(g_timed[i].name, name)) i++;
    if (i == MAX_TIMED) i = MAX_TIMED - 1;   // (more names than rows: the last row takes the rest)
    if (i == g_num_timed) { g_timed[i].name = name; g_timed[i].ms = 0; g_timed[i].calls = 0; g_num_timed++; }
    g_timed[i].ms += ms; g_timed[i].calls++;
}

/* cuda_kernel_times_report: turns timing off and prints the table, longest first, per step
   (steps: how many steps ran since cuda_kernel_times_start). */
extern "C" void cuda_kernel_times_report(FILE *f, int steps) {
    cuda_kernel_times = 0;
    double total = 0;
    for (int i = 0; i < g_num_timed; i++) total += g_timed[i].ms;
    for (int i = 0; i < g_num_timed; i++)   // selection sort: a few dozen rows
        for (int j = i + 1; j < g_num_timed; j++)
            if (g_timed[j].ms > g_timed[i].ms) { auto t = g_timed[i]; g_timed[i] = g_timed[j]; g_timed[j] = t; }
    fprintf(f, "kernel times per training step (%d steps, each launch waited for; an empty mark takes %.1f us,\n"
               "which every call below carries):\n", steps, 1e3 * g_empty_mark_ms);
    fprintf(f, "  %-42s %8s %10s %6s\n", "kernel", "calls", "ms", "share");
    for (int i = 0; i < g_num_timed; i++)
        fprintf(f, "  %-42s %8.1f %10.3f %5.1f%%\n", g_timed[i].name, (double)g_timed[i].calls / steps,
                g_timed[i].ms / steps, 100.0 * g_timed[i].ms / (total > 0 ? total : 1));
    fprintf(f, "  %-42s %8s %10.3f\n", "total", "", total / steps);
}

// ----------------------------------------------------------------------------
// Set-up, memory, launch shapes

static cublasHandle_t g_cublas = NULL;

/* cuda_init: creates the cuBLAS handle (once) and sets its math mode: tf32 = 0 keeps full
   fp32 products (CUBLAS_DEFAULT_MATH), tf32 = 1 allows TF32 tensor cores (about 10 mantissa
   bits per input: faster, results differ from the CPU path at the 1e-3 level). May be called
   again to switch mode. GRPO_CUDA_SYNC=1 in the environment sets cuda_sync_launches. */
extern "C" void cuda_init(int tf32) {
    if (!g_cublas) CUBLAS_CHECK(cublasCreate(&g_cublas));
    CUBLAS_CHECK(cublasSetMathMode(g_cublas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    const char *sync = getenv("GRPO_CUDA_SYNC");
    if (sync && sync[0] == '1') cuda_sync_launches = 1;
}

static cublasHandle_t cublas(void) {
    if (!g_cublas) {
        fprintf(stderr, "error: cuBLAS used before cuda_init()\n  at %s:%d\n", __FILE__, __LINE__);
        exit(1);
    }
    return g_cublas;
}

// Number of CUDA devices; 0 when there is no GPU or no driver (never an error).
extern "C" int cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) { cudaGetLastError(); return 0; }
    return n;
}
extern "C" int grpo_cuda_device_count(void) { return cuda_device_count(); }  // older name

// As cuda_device_count, and when it is 0, *why says what is missing (no driver, no device, ...).
extern "C" int cuda_probe(const char **why) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) { *why = cudaGetErrorString(e); cudaGetLastError(); return 0; }
    if (n == 0) *why = "the CUDA runtime reports 0 devices";
    return n;
}

extern "C" void *cuda_malloc(size_t bytes) {
    void *p = NULL;
    if (bytes) CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
}
extern "C" void cuda_free(void *p) { if (p) CUDA_CHECK(cudaFree(p)); }
extern "C" void cuda_memcpy_h2d(void *dst, const void *src, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    time_mark("cudaMemcpy host to device");
}
extern "C" void cuda_memcpy_d2h(void *dst, const void *src, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    time_mark("cudaMemcpy device to host");
}
extern "C" void cuda_memcpy_d2d(void *dst, const void *src, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
    time_mark("cudaMemcpy device to device");
}
extern "C" void cuda_memset_zero(void *p, size_t bytes) {   // gpt_zero_grad's memset
    if (bytes) CUDA_CHECK(cudaMemset(p, 0, bytes));
    time_mark("cudaMemset");
}
extern "C" void cuda_synchronize(void) { CUDA_CHECK(cudaDeviceSynchronize()); }

/* Scratch: a few device buffers reused across calls (partial sums, per-token losses, decode
   scores, attention's pointer arrays, a vector of ones), grown on demand. cudaFree waits for
   the GPU, so growing never frees memory a kernel still uses. */
enum { SCRATCH_PARTIAL = 0, SCRATCH_TOKENS, SCRATCH_REDUCE, SCRATCH_ATT, SCRATCH_HEADS, SCRATCH_ONES, NUM_SCRATCH };
static void *g_scratch[NUM_SCRATCH];
static size_t g_scratch_bytes[NUM_SCRATCH];
static size_t g_ones_filled = 0;   // how many of SCRATCH_ONES' floats hold 1 (device_ones)

static void *scratch(int slot, size_t bytes) {
    if (bytes > g_scratch_bytes[slot]) {
        cuda_free(g_scratch[slot]);
        g_scratch[slot] = cuda_malloc(bytes);
        g_scratch_bytes[slot] = bytes;
    }
    return g_scratch[slot];
}

static cudaEvent_t g_sgemm_events[2];   // start and stop of a timed sgemm (cuda_time_sgemm)

// Frees the scratch buffers, the timing events and the cuBLAS handle (end of the program).
extern "C" void cuda_shutdown(void) {
    for (int i = 0; i < NUM_SCRATCH; i++) { cuda_free(g_scratch[i]); g_scratch[i] = NULL; g_scratch_bytes[i] = 0; }
    g_ones_filled = 0;
    for (int i = 0; i < 2; i++) if (g_sgemm_events[i]) { CUDA_CHECK(cudaEventDestroy(g_sgemm_events[i])); g_sgemm_events[i] = NULL; }
    for (int i = 0; i < 2; i++) if (g_marks[i]) { CUDA_CHECK(cudaEventDestroy(g_marks[i])); g_marks[i] = NULL; }
    if (g_cublas) CUBLAS_CHECK(cublasDestroy(g_cublas));
    g_cublas = NULL;
}

static int threads_per_block(void) {
    if (cuda_block_size < 1 || cuda_block_size > 1024) {
        fprintf(stderr, "error: cuda_block_size %d is outside 1..1024\n  at %s:%d\n", cuda_block_size, __FILE__, __LINE__);
        exit(1);
    }
    return cuda_block_size;
}
// warp-per-row kernels: the block size rounded down to whole warps (at least one)
static int warps_per_block(void) { int w = threads_per_block() / 32; return w > 0 ? w : 1; }
static unsigned blocks_for(size_t n, size_t per_block) { return (unsigned)((n + per_block - 1) / per_block); }

// int_count: n as an int for the kernels that index in 32 bits (64-bit division is slow on
// the GPU and would make these memory-bound passes compute-bound). More than INT_MAX − 1024
// (room for the last block of a grid) is an error.
static int int_count(size_t n, const char *what) {
    if (n > (size_t)INT_MAX - 1024) {   // a grid of n threads rounded up to a block must stay positive
        fprintf(stderr, "error: %s has %zu elements; the CUDA kernels index at most %d\n  at %s:%d\n", what, n,
                INT_MAX - 1024, __FILE__, __LINE__);
        exit(1);
    }
    return (int)n;
}

#define CHUNK_ROWS 32   // rows summed by one thread in the first stage of a column sum

// ----------------------------------------------------------------------------
// Warp and block reductions. The xor butterfly adds the same two operands on every lane,
// so all 32 lanes end with the same bits.

__device__ __forceinline__ float warp_sum(float x) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}
__device__ __forceinline__ float warp_max(float x) {
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

/* column_reduce_kernel: second stage of every column sum. acc (ncols) += Σ_k partial[k][col]
   over the nchunks partial rows, in chunk order.
   Launch: 1-D, one thread per column. Replaces the inner row loops of layernorm_backward
   and encoder_backward (dwte). */
__global__ void column_reduce_kernel(float *acc, const float *partial, int nchunks, int ncols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= ncols) return;
    float s = 0.0f;
    for (int k = 0; k < nchunks; k++) s += partial[(size_t)k * ncols + col];
    acc[col] += s;
}

static void column_reduce(float *acc, const float *partial, int nchunks, int ncols) {
    int bs = threads_per_block();
    column_reduce_kernel<<<blocks_for(ncols, bs), bs>>>(acc, partial, nchunks, ncols);
    LAUNCH_CHECK(column_reduce_kernel);
}

/* sum_kernel: partial[block] = Σ x[i] (or Σ x[i]² with SQUARE) in double, over a grid-stride
   slice of x. Each thread sums its slice in order, then the block adds the threads' sums by a
   tree of fixed shape in shared memory (any block size: the tree is that of the next power of
   two, missing leaves skipped).
   Launch: a grid fixed by n and the block size alone (never by the device), blockDim doubles
   of shared memory. Run again with one block over the partials for the total: two passes,
   same order every run. Replaces the serial double sums of clip_grad_norm and grpo_token_loss. */
template <bool SQUARE, typename T>
__global__ void sum_kernel(double *partial, const T *x, size_t n) {
    extern __shared__ double buf[];
    double s = 0.0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double xi = (double)x[i];
        s += SQUARE ? xi * xi : xi;
    }
    buf[threadIdx.x] = s;
    __syncthreads();
    unsigned p2 = 1;
    while (p2 < blockDim.x) p2 <<= 1;
    for (unsigned stride = p2 / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride && threadIdx.x + stride < blockDim.x) buf[threadIdx.x] += buf[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = buf[0];
}

#define MAX_SUM_BLOCKS 1024

// Σ x (double) or Σ x² (float) over n device elements; deterministic two-pass sum, returned to the host.
template <bool SQUARE, typename T>
static double device_sum(const T *x, size_t n) {
    if (n == 0) return 0.0;
    int bs = threads_per_block();
    unsigned blocks = blocks_for(n, bs);
    if (blocks > MAX_SUM_BLOCKS) blocks = MAX_SUM_BLOCKS;
    double *partial = (double *)scratch(SCRATCH_REDUCE, (blocks + 1) * sizeof(double));
    sum_kernel<SQUARE, T><<<blocks, bs, bs * sizeof(double)>>>(partial, x, n);
    LAUNCH_CHECK(sum_kernel);
    sum_kernel<false, double><<<1, bs, bs * sizeof(double)>>>(partial + blocks, partial, blocks);
    LAUNCH_CHECK(sum_kernel);
    double total;
    cuda_memcpy_d2h(&total, partial + blocks, sizeof(double));
    return total;
}

// Σ x² in double over n floats (device); the gradient norm's sum, exposed for tests.
extern "C" double cuda_sum_squares(const float *x, size_t n) { return device_sum<true, float>(x, n); }

// ----------------------------------------------------------------------------
// Encoder

/* encoder_forward_kernel: out (B,T,C) = wte[inp[b,t]] + wpe[t]. Replaces encoder_forward.
   Launch: 1-D, one thread per output element (B·T·C); consecutive threads read consecutive
   channels of one row, so loads and stores are coalesced. */
__global__ void encoder_forward_kernel(float *out, const int *inp, const float *wte, const float *wpe,
                                       int B, int T, int C) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)B * T * C) return;
    size_t bt = idx / C;
    int c = (int)(idx % C), t = (int)(bt % T);
    out[idx] = wte[(size_t)inp[bt] * C + c] + wpe[(size_t)t * C + c];
}

extern "C" void cuda_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe,
                                     int B, int T, int C) {
    size_t n = (size_t)B * T * C;
    if (n == 0) return;
    int bs = threads_per_block();
    encoder_forward_kernel<<<blocks_for(n, bs), bs>>>(out, inp, wte, wpe, B, T, C);
    LAUNCH_CHECK(encoder_forward_kernel);
}

/* encoder_backward_wpe_kernel: dwpe[t,c] += Σ_b dout[b,t,c], b in order (as the CPU loop).
   Launch: 1-D, one thread per (t,c), T·C threads. One owner per output: no race, no atomics. */
__global__ void encoder_backward_wpe_kernel(float *dwpe, const float *dout, int B, int T, int C) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;   // = t*C + c
    if (idx >= (size_t)T * C) return;
    float acc = dwpe[idx];
    for (int b = 0; b < B; b++) acc += dout[(size_t)b * T * C + idx];
    dwpe[idx] = acc;
}

/* encoder_backward_wte_partial_kernel: first stage of dwte[v,c] += Σ_{bt: inp[bt]=v} dout[bt,c].
   Thread (chunk, v, c) sums the positions of its chunk of CHUNK_ROWS positions that hold
   token v. The CPU loop is serial because positions sharing a token would race on a row of
   dwte; here each (chunk, v, c) has one owner and column_reduce adds the chunks in order.
   Launch: 1-D, nchunks·V·C threads. Suits a small vocabulary (V ≪ B·T, as here); a large one
   would want a sort by token first. */
__global__ void encoder_backward_wte_partial_kernel(float *partial, const float *dout, const int *inp,
                                                    int BT, int C, int V) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;   // = (chunk*V + v)*C + c
    size_t VC = (size_t)V * C;
    int nchunks = (BT + CHUNK_ROWS - 1) / CHUNK_ROWS;
    if (idx >= (size_t)nchunks * VC) return;
    int chunk = (int)(idx / VC), v = (int)(idx % VC / C), c = (int)(idx % C);
    int end = min(BT, (chunk + 1) * CHUNK_ROWS);
    float s = 0.0f;
    for (int bt = chunk * CHUNK_ROWS; bt < end; bt++)
        if (inp[bt] == v) s += dout[(size_t)bt * C + c];
    partial[idx] = s;
}

/* cuda_encoder_backward: as encoder_backward, plus V (rows of dwte), which the GPU needs to
   give every (token, channel) of dwte its own thread. */
extern "C" void cuda_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp,
                                      int B, int T, int C, int V) {
    int BT = B * T, bs = threads_per_block();
    if (BT == 0 || C == 0) return;
    encoder_backward_wpe_kernel<<<blocks_for((size_t)T * C, bs), bs>>>(dwpe, dout, B, T, C);
    LAUNCH_CHECK(encoder_backward_wpe_kernel);
    int nchunks = (BT + CHUNK_ROWS - 1) / CHUNK_ROWS;
    size_t n = (size_t)nchunks * V * C;
    float *partial = (float *)scratch(SCRATCH_PARTIAL, n * sizeof(float));
    encoder_backward_wte_partial_kernel<<<blocks_for(n, bs), bs>>>(partial, dout, inp, BT, C, V);
    LAUNCH_CHECK(encoder_backward_wte_partial_kernel);
    column_reduce(dwte, partial, nchunks, V * C);
}

// ----------------------------------------------------------------------------
// LayerNorm

/* layernorm_forward_kernel: one row of layernorm_forward (eps 1e-5, biased variance, mean
   and rstd saved). Two passes over the row like the CPU (mean, then Σ (x−mean)²), each
   reduced across the warp.
   Launch: one warp per row: blocks of warps_per_block() warps, ceil(N / warps) blocks.
   Lane i handles channels i, i+32, …: coalesced, any C. */
__global__ void layernorm_forward_kernel(float *out, float *mean, float *rstd, const float *inp,
                                         const float *weight, const float *bias, int N, int C) {
    int lane = threadIdx.x % 32, row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= N) return;                      // whole warp leaves together
    const float *x = inp + (size_t)row * C;
    float m = 0.0f, v = 0.0f;
    for (int i = lane; i < C; i += 32) m += x[i];
    m = warp_sum(m) / C;
    for (int i = lane; i < C; i += 32) { float d = x[i] - m; v += d * d; }
    v = warp_sum(v) / C;
    float s = 1.0f / sqrtf(v + 1e-5f);
    float *o = out + (size_t)row * C;
    for (int i = lane; i < C; i += 32) o[i] = (x[i] - m) * s * weight[i] + bias[i];
    if (lane == 0) { mean[row] = m; rstd[row] = s; }
}

extern "C" void cuda_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                                       const float *weight, const float *bias, int N, int C) {
    if (N == 0) return;
    int w = warps_per_block();
    layernorm_forward_kernel<<<blocks_for(N, w), w * 32>>>(out, mean, rstd, inp, weight, bias, N, C);
    LAUNCH_CHECK(layernorm_forward_kernel);
}

/* layernorm_backward_dinp_kernel: dinp row += (dnorm − mean(dnorm) − norm·mean(dnorm·norm))·rstd,
   dnorm = weight·dout: the first loop of layernorm_backward.
   Launch: one warp per row, as layernorm_forward_kernel. */
__global__ void layernorm_backward_dinp_kernel(float *dinp, const float *dout, const float *inp,
                                               const float *weight, const float *mean, const float *rstd,
                                               int N, int C) {
    int lane = threadIdx.x % 32, row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= N) return;
    const float *d = dout + (size_t)row * C, *x = inp + (size_t)row * C;
    float m = mean[row], s = rstd[row], dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
    for (int i = lane; i < C; i += 32) {
        float norm = (x[i] - m) * s, dnorm = weight[i] * d[i];
        dnorm_mean += dnorm; dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean = warp_sum(dnorm_mean) / C;
    dnorm_norm_mean = warp_sum(dnorm_norm_mean) / C;
    float *di = dinp + (size_t)row * C;
    for (int i = lane; i < C; i += 32) {
        float norm = (x[i] - m) * s, dnorm = weight[i] * d[i];
        di[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
}

/* layernorm_backward_params_kernel: first stage of dweight[c] += Σ_n norm[n,c]·dout[n,c] and
   dbias[c] += Σ_n dout[n,c] (the second loop of layernorm_backward): thread (chunk, c) sums
   the CHUNK_ROWS rows of its chunk; column_reduce adds the chunks in order.
   Launch: 1-D, nchunks·C threads; consecutive threads take consecutive channels (coalesced).
   partial holds the dweight partials (nchunks, C), then the dbias partials (nchunks, C). */
__global__ void layernorm_backward_params_kernel(float *partial, const float *dout, const float *inp,
                                                 const float *mean, const float *rstd, int N, int C) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;   // = chunk*C + c
    int nchunks = (N + CHUNK_ROWS - 1) / CHUNK_ROWS;
    if (idx >= (size_t)nchunks * C) return;
    int chunk = (int)(idx / C), c = (int)(idx % C), end = min(N, (chunk + 1) * CHUNK_ROWS);
    float dw = 0.0f, db = 0.0f;
    for (int n = chunk * CHUNK_ROWS; n < end; n++) {
        float dd = dout[(size_t)n * C + c];
        dw += (inp[(size_t)n * C + c] - mean[n]) * rstd[n] * dd;
        db += dd;
    }
    partial[idx] = dw;
    partial[(size_t)nchunks * C + idx] = db;
}

extern "C" void cuda_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                                        const float *inp, const float *weight, const float *mean,
                                        const float *rstd, int N, int C) {
    if (N == 0 || C == 0) return;
    int w = warps_per_block(), bs = threads_per_block();
    layernorm_backward_dinp_kernel<<<blocks_for(N, w), w * 32>>>(dinp, dout, inp, weight, mean, rstd, N, C);
    LAUNCH_CHECK(layernorm_backward_dinp_kernel);
    int nchunks = (N + CHUNK_ROWS - 1) / CHUNK_ROWS;
    size_t n = (size_t)nchunks * C;
    float *partial = (float *)scratch(SCRATCH_PARTIAL, 2 * n * sizeof(float));
    layernorm_backward_params_kernel<<<blocks_for(n, bs), bs>>>(partial, dout, inp, mean, rstd, N, C);
    LAUNCH_CHECK(layernorm_backward_params_kernel);
    column_reduce(dweight, partial, nchunks, C);
    column_reduce(dbias, partial + n, nchunks, C);
}

// ----------------------------------------------------------------------------
// Matmul (cuBLAS). grpo.c's arrays are row-major; cuBLAS is column-major, and a row-major
// (R,K) array is the column-major (K,R) array of its transpose. So each product below is
// written for the transposes: out^T = W · inp^T, and so on.

/* sgemm: one cublasSgemm (column-major, alpha 1) on the default stream. With cuda_time_sgemm
   set, CUDA events around it add its GPU time to cuda_sgemm_seconds (and wait for it). */
static void sgemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc) {
    const float one = 1.0f;
    cudaEvent_t &start = g_sgemm_events[0], &stop = g_sgemm_events[1];
    if (cuda_time_sgemm) {
        if (!start) { CUDA_CHECK(cudaEventCreate(&start)); CUDA_CHECK(cudaEventCreate(&stop)); }
        CUDA_CHECK(cudaEventRecord(start, 0));
    }
    CUBLAS_CHECK(cublasSgemm(cublas(), ta, tb, m, n, k, &one, A, lda, B, ldb, &beta, C, ldc));
    time_mark("cublasSgemm (matmul)");
    if (cuda_time_sgemm) {
        float ms = 0.0f;
        CUDA_CHECK(cudaEventRecord(stop, 0));
        CUDA_CHECK(cudaEventSynchronize(stop));
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        cuda_sgemm_seconds += ms * 1e-3;
    }
}

/* add_bias_kernel: out (N,OC) += bias (OC) broadcast over rows: the "+ bias" of matmul_forward.
   Launch: 1-D, one thread per element of out. */
__global__ void add_bias_kernel(float *out, const float *bias, int N, int OC) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;   // 32-bit: N·OC < 2^31 (int_count)
    if (idx >= N * OC) return;
    out[idx] += bias[idx % OC];
}

/* cuda_matmul_forward: out (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC) (bias may be
   NULL), weight in PyTorch's (out, in) layout. Replaces matmul_forward. */
extern "C" void cuda_matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                                    int N, int C, int OC) {
    if (N == 0 || OC == 0) return;
    // column-major: out^T (OC,N) = op_T(weight as (C,OC)) · inp^T (C,N)
    sgemm(CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, weight, C, inp, C, 0.0f, out, OC);
    if (bias) {
        int bs = threads_per_block();
        add_bias_kernel<<<blocks_for(int_count((size_t)N * OC, "matmul_forward's output"), bs), bs>>>(out, bias, N, OC);
        LAUNCH_CHECK(add_bias_kernel);
    }
}

/* fill_kernel: x[i] = value for i < n. Launch: 1-D, one thread per element. */
__global__ void fill_kernel(float *x, float value, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = value;
}

/* device_ones: a device vector of at least n ones (scratch, filled when it grows): the x of
   the gemv that sums dout's rows into dbias. */
static const float *device_ones(size_t n) {
    float *x = (float *)scratch(SCRATCH_ONES, n * sizeof(float));
    if (n > g_ones_filled) {
        int bs = threads_per_block();
        fill_kernel<<<blocks_for(n, bs), bs>>>(x, 1.0f, n);
        LAUNCH_CHECK(fill_kernel);
        g_ones_filled = n;
    }
    return x;
}

/* cuda_matmul_backward: dinp (N,C) += dout (N,OC) @ weight (OC,C); dweight (OC,C) += dout^T @ inp;
   dbias (OC) += Σ_n dout (dinp and dbias may be NULL). Both products accumulate (beta = 1),
   as the CPU's +=. Replaces matmul_backward. */
extern "C" void cuda_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                                     const float *inp, const float *weight, int N, int C, int OC) {
    if (N == 0 || OC == 0 || C == 0) return;
    // column-major: dinp^T (C,N) += weight as (C,OC) · dout^T (OC,N)
    if (dinp) sgemm(CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, weight, C, dout, OC, 1.0f, dinp, C);
    // column-major: dweight^T (C,OC) += inp^T (C,N) · op_T(dout^T (OC,N))
    sgemm(CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, inp, C, dout, OC, 1.0f, dweight, C);
    if (dbias) {   // dbias (OC) += dout^T (OC,N column-major) · ones (N): one cuBLAS gemv
        const float one = 1.0f;
        CUBLAS_CHECK(cublasSgemv(cublas(), CUBLAS_OP_N, OC, N, &one, dout, OC, device_ones(N), 1, &one, dbias, 1));
        time_mark("cublasSgemv (matmul dbias)");
    }
}

/* cuda_time_sgemms: GPU seconds per set of the three sgemms of one matmul_forward +
   matmul_backward at shape (N, C, OC) (no bias), run back to back reps times after one
   warm-up set, timed with CUDA events: what cuBLAS alone does on a model's shapes
   (./grpo bench compares it with the same products inside a training step). */
extern "C" double cuda_time_sgemms(int N, int C, int OC, int reps) {
    if (reps < 1 || N < 1 || C < 1 || OC < 1) return 0.0;
    size_t NC = (size_t)N * C, NO = (size_t)N * OC, OCC = (size_t)OC * C;
    float *buf = (float *)cuda_malloc((2 * NC + 2 * NO + 2 * OCC) * sizeof(float));
    cuda_memset_zero(buf, (2 * NC + 2 * NO + 2 * OCC) * sizeof(float));
    float *inp = buf, *dinp = inp + NC, *out = dinp + NC, *dout = out + NO, *w = dout + NO, *dw = w + OCC;
    int timing = cuda_time_sgemm;
    cuda_time_sgemm = 0;
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start)); CUDA_CHECK(cudaEventCreate(&stop));
    for (int r = -1; r < reps; r++) {
        if (r == 0) CUDA_CHECK(cudaEventRecord(start, 0));
        cuda_matmul_forward(out, inp, w, NULL, N, C, OC);
        cuda_matmul_backward(dinp, dw, NULL, dout, inp, w, N, C, OC);
    }
    float ms = 0.0f;
    CUDA_CHECK(cudaEventRecord(stop, 0));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    CUDA_CHECK(cudaEventDestroy(start)); CUDA_CHECK(cudaEventDestroy(stop));
    cuda_free(buf);
    cuda_time_sgemm = timing;
    return ms * 1e-3 / reps;
}

// ----------------------------------------------------------------------------
// Causal multi-head self-attention. inp (B,T,3C) holds q,k,v; head h uses channels
// h·hs … h·hs+hs−1 of each, hs = C/NH; scores scaled by 1/sqrt(hs).

/* warp_softmax_causal: the softmax of one query row, by one warp. On entry a[0..t] holds the
   row's scaled scores, lane L having written t2 = L, L+32, …, and maxv is that lane's
   maximum of them; on exit a[0..t] holds the probabilities, each written by the lane that
   read it. Used by causal_softmax_kernel and attention_decode_kernel; a caller whose lanes
   then read each other's entries __syncwarp()s first. */
__device__ __forceinline__ void warp_softmax_causal(float *a, int t, float maxv, int lane) {
    maxv = warp_max(maxv);
    float sum = 0.0f;
    for (int t2 = lane; t2 <= t; t2 += 32) { float e = expf(a[t2] - maxv); a[t2] = e; sum += e; }
    float inv = 1.0f / warp_sum(sum);
    for (int t2 = lane; t2 <= t; t2 += 32) a[t2] *= inv;
}

// Attention's six products go through cuBLAS: one batched sgemm over the B·NH heads does a
// product for all of them. A head's q, k, v are read where they lie in inp (B,T,3C) (rows 3C
// floats apart) and its output is written into out (B,T,C) (rows C apart), so no copies
// change the layout: cublasSgemmBatched takes one pointer per head and matrix, which
// head_pointers_kernel computes on the GPU. The full T×T score matrices are multiplied (att
// is zero above the diagonal, so the sums are the CPU's, in cuBLAS's order); our kernels do
// the masked softmax and its backward. Two earlier versions measured slower than their
// successors: a warp-per-row attention that summed like the CPU loops, then strided-batched
// products on copies of q, k, v split into heads (measurements: notes/cuda-integration.md).

/* HeadMatrices: up to 9 matrices with one block per head (b,h): matrix j of head (b,h)
   starts at base[j] + b·stride_b[j] + h·stride_h[j] floats. */
#define MAX_HEAD_MATRICES 9
struct HeadMatrices {
    const float *base[MAX_HEAD_MATRICES];
    long long stride_b[MAX_HEAD_MATRICES], stride_h[MAX_HEAD_MATRICES];
    int count;
};

/* head_pointers_kernel: ptr[j·BH + b·NH + h] = start of matrix j of head (b,h), for the
   pointer arrays of cublasSgemmBatched. Launch: 1-D, one thread per pointer (count·BH). */
__global__ void head_pointers_kernel(const float **ptr, HeadMatrices m, int BH, int NH) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;   // = j*BH + b*NH + h
    if (idx >= m.count * BH) return;
    int j = idx / BH, bh = idx % BH, b = bh / NH, h = bh % NH;
    ptr[idx] = m.base[j] + b * m.stride_b[j] + h * m.stride_h[j];
}

/* head_pointers: fills the device array of m.count·BH pointers (scratch) and returns it;
   matrix j's pointers start at index j·BH. */
static const float **head_pointers(const HeadMatrices &m, int B, int NH) {
    int BH = B * NH, bs = threads_per_block();
    const float **ptr = (const float **)scratch(SCRATCH_HEADS, (size_t)m.count * BH * sizeof(float *));
    head_pointers_kernel<<<blocks_for((size_t)m.count * BH, bs), bs>>>(ptr, m, BH, NH);
    LAUNCH_CHECK(head_pointers_kernel);
    return ptr;
}

/* causal_softmax_kernel: in place on att (B·NH rows of T×T): row t, which holds the scaled
   scores of every key, becomes the softmax over keys t2 ≤ t, zeros above the diagonal.
   Launch: one warp per row (b,h,t): blocks of warps_per_block() warps. */
__global__ void causal_softmax_kernel(float *att, size_t rows, int T) {
    int lane = threadIdx.x % 32;
    size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows) return;
    int t = (int)(row % T);
    float *a = att + row * T, maxv = -FLT_MAX;
    for (int t2 = lane; t2 <= t; t2 += 32) maxv = fmaxf(maxv, a[t2]);
    warp_softmax_causal(a, t, maxv, lane);
    for (int t2 = t + 1 + lane; t2 < T; t2 += 32) a[t2] = 0.0f;
}

/* causal_softmax_backward_kernel: in place on datt, which holds da = ∂L/∂att for every key:
   ds[t2] = a[t2]·(da[t2] − Σ a·da)·scale for t2 ≤ t, zeros above the diagonal: the softmax
   backward of attention_backward. Launch: one warp per row (b,h,t). */
__global__ void causal_softmax_backward_kernel(float *datt, const float *att, size_t rows, int T, float scale) {
    int lane = threadIdx.x % 32;
    size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows) return;
    int t = (int)(row % T);
    const float *a = att + row * T;
    float *da = datt + row * T, dot = 0.0f;
    for (int t2 = lane; t2 <= t; t2 += 32) dot += a[t2] * da[t2];
    dot = warp_sum(dot);
    for (int t2 = lane; t2 < T; t2 += 32) da[t2] = t2 <= t ? a[t2] * (da[t2] - dot) * scale : 0.0f;
}

/* sgemm_heads: C_h = alpha·op(A_h)·op(B_h) + beta·C_h for each of the batch heads h
   (column-major), A_h = A[h] and so on: one cublasSgemmBatched over device pointer arrays. */
static void sgemm_heads(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                        const float *const *A, int lda, const float *const *B, int ldb, float beta,
                        const float *const *C, int ldc, int batch) {
    CUBLAS_CHECK(cublasSgemmBatched(cublas(), ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta,
                                    (float *const *)C, ldc, batch));
    time_mark("cublasSgemmBatched (attention)");
}

/* cuda_attention_forward: out (B,T,C), att (B,NH,T,T) with zeros above the diagonal, from
   inp (B,T,3C). Replaces attention_forward. A head's row-major (T,hs) q, k, v (rows 3C apart)
   are column-major (hs,T) matrices with ld 3C, and att (T,T) row-major = (k^T·q) column-major;
   y = v·att lands in out's channels h·hs… (ld C). Scratch: 5·B·NH pointers. */
extern "C" void cuda_attention_forward(float *out, float *att, const float *inp, int B, int T, int C, int NH) {
    if ((size_t)B * T * C == 0) return;
    int hs = C / NH, BH = B * NH;
    long long T3C = (long long)T * 3 * C, TT = (long long)T * T, TC = (long long)T * C;
    HeadMatrices m = {{inp, inp + C, inp + 2 * C, att, out},   // q, k, v, att, y
                      {T3C, T3C, T3C, NH * TT, TC}, {hs, hs, hs, TT, hs}, 5};
    const float **p = head_pointers(m, B, NH), **q = p, **k = p + BH, **v = p + 2 * BH, **a = p + 3 * BH,
                **y = p + 4 * BH;
    // att[t][t2] = scale · q[t]·k[t2], every (t, t2)
    sgemm_heads(CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, 1.0f / sqrtf((float)hs), k, 3 * C, q, 3 * C, 0.0f, a, T, BH);
    int w = warps_per_block();
    causal_softmax_kernel<<<blocks_for((size_t)BH * T, w), w * 32>>>(att, (size_t)BH * T, T);
    LAUNCH_CHECK(causal_softmax_kernel);
    // y[t] = Σ_t2 att[t][t2] v[t2]
    sgemm_heads(CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, 1.0f, v, 3 * C, a, T, 0.0f, y, C, BH);
}

/* cuda_attention_backward: dinp (B,T,3C) += ∂L/∂(q,k,v) given dout (B,T,C). Replaces
   attention_backward. datt (B,NH,T,T) is scratch as on the CPU, and ends holding the score
   gradients ds, as there. The products of dq, dk, dv add into dinp (beta 1), read and
   written in place as in the forward. Scratch: 9·B·NH pointers. */
extern "C" void cuda_attention_backward(float *dinp, float *datt, const float *dout, const float *inp,
                                        const float *att, int B, int T, int C, int NH) {
    if ((size_t)B * T * C == 0) return;
    int hs = C / NH, BH = B * NH;
    long long T3C = (long long)T * 3 * C, TT = (long long)T * T, TC = (long long)T * C;
    HeadMatrices m = {{inp, inp + C, inp + 2 * C, dout, att, datt, dinp, dinp + C, dinp + 2 * C},
                      {T3C, T3C, T3C, TC, NH * TT, NH * TT, T3C, T3C, T3C},
                      {hs, hs, hs, hs, TT, TT, hs, hs, hs}, 9};
    const float **p = head_pointers(m, B, NH), **q = p, **k = p + BH, **v = p + 2 * BH, **dy = p + 3 * BH,
                **a = p + 4 * BH, **da = p + 5 * BH, **dq = p + 6 * BH, **dk = p + 7 * BH, **dv = p + 8 * BH;
    // da[t][t2] = dy[t]·v[t2];  dv[t2] += Σ_t att[t][t2] dy[t]
    sgemm_heads(CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, 1.0f, v, 3 * C, dy, C, 0.0f, da, T, BH);
    sgemm_heads(CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, 1.0f, dy, C, a, T, 1.0f, dv, 3 * C, BH);
    int w = warps_per_block();
    causal_softmax_backward_kernel<<<blocks_for((size_t)BH * T, w), w * 32>>>(datt, att, (size_t)BH * T, T,
                                                                              1.0f / sqrtf((float)hs));
    LAUNCH_CHECK(causal_softmax_backward_kernel);
    // dq[t] += Σ_t2 ds[t][t2] k[t2];  dk[t2] += Σ_t ds[t][t2] q[t]
    sgemm_heads(CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, 1.0f, k, 3 * C, da, T, 1.0f, dq, 3 * C, BH);
    sgemm_heads(CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, 1.0f, q, 3 * C, da, T, 1.0f, dk, 3 * C, BH);
}

// ----------------------------------------------------------------------------
// Incremental decoding (gpt_decode_step): one new token per sequence, sequence b at its own
// position pos[b]. The cache of one layer has grpo.c's layout: keys kt (kvB, C, Tp)
// transposed, Tp = maxT rounded up to a multiple of 8; values v (kvB, maxT, C). B <= kvB.

/* encoder_forward_pos_kernel: out (B,C) = wte[tokens[b]] + wpe[pos[b]]. Replaces
   encoder_forward_pos. Launch: 1-D, one thread per output element (B·C). */
__global__ void encoder_forward_pos_kernel(float *out, const int *tokens, const int *pos, const float *wte,
                                           const float *wpe, int B, int C) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;   // = b*C + c
    if (idx >= (size_t)B * C) return;
    int b = (int)(idx / C), c = (int)(idx % C);
    out[idx] = wte[(size_t)tokens[b] * C + c] + wpe[(size_t)pos[b] * C + c];
}

extern "C" void cuda_encoder_forward_pos(float *out, const int *tokens, const int *pos, const float *wte,
                                         const float *wpe, int B, int C) {
    size_t n = (size_t)B * C;
    if (n == 0) return;
    int bs = threads_per_block();
    encoder_forward_pos_kernel<<<blocks_for(n, bs), bs>>>(out, tokens, pos, wte, wpe, B, C);
    LAUNCH_CHECK(encoder_forward_pos_kernel);
}

/* kv_append_kernel: channel c of sequence b's new key and value, from qkv (B,3C), into the
   cache at position pos[b]: kt[b][c][pos[b]] = k, v[b][pos[b]][c] = v. Replaces kv_append.
   Launch: 1-D, one thread per (b,c), B·C threads (the key writes are strided by Tp: a few
   KB per token, not worth a transpose). */
__global__ void kv_append_kernel(float *kt, float *v, const float *qkv, const int *pos, int B, int C, int maxT) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;   // = b*C + c
    if (idx >= (size_t)B * C) return;
    int b = (int)(idx / C), c = (int)(idx % C), Tp = (maxT + 7) / 8 * 8, t = pos[b];
    const float *x = qkv + (size_t)b * 3 * C;
    kt[((size_t)b * C + c) * Tp + t] = x[C + c];
    v[((size_t)b * maxT + t) * C + c] = x[2 * C + c];
}

extern "C" void cuda_kv_append(float *kt, float *v, const float *qkv, const int *pos, int B, int C, int maxT) {
    size_t n = (size_t)B * C;
    if (n == 0) return;
    int bs = threads_per_block();
    kv_append_kernel<<<blocks_for(n, bs), bs>>>(kt, v, qkv, pos, B, C, maxT);
    LAUNCH_CHECK(kv_append_kernel);
}

/* attention_decode_kernel: head h of sequence b: the new query (in qkv (B,3C)) against the
   cached keys 0..t = pos[b], softmax, out (B,C) = Σ a·v. Replaces attention_decode; same
   steps as attention_forward (CPU) for one query row. att (B·NH, Tp) is scratch for the
   probabilities. Launch: one warp per (b,h): blocks of warps_per_block() warps,
   ceil(B·NH / warps) blocks; lanes split the keys (t2 = lane, lane+32, …; loads of kt are
   coalesced across lanes) for the scores and the channels for the output. */
__global__ void attention_decode_kernel(float *out, float *att, const float *kt, const float *v,
                                        const float *qkv, const int *pos, int B, int C, int NH, int maxT) {
    int lane = threadIdx.x % 32;
    size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;   // = b*NH + h
    if (row >= (size_t)B * NH) return;                                         // whole warp leaves together
    int b = (int)(row / NH), h = (int)(row % NH), hs = C / NH, Tp = (maxT + 7) / 8 * 8, t = pos[b];
    float scale = 1.0f / sqrtf((float)hs);
    const float *q = qkv + (size_t)b * 3 * C + h * hs;
    const float *k = kt + ((size_t)b * C + h * hs) * Tp;       // k[i*Tp + t2]: channel i of key t2
    const float *vb = v + (size_t)b * maxT * C + h * hs;       // vb[t2*C + i]: channel i of value t2
    float *a = att + row * Tp;
    float maxv = -FLT_MAX;
    for (int t2 = lane; t2 <= t; t2 += 32) {
        float s = 0.0f;
        for (int i = 0; i < hs; i++) s += q[i] * k[(size_t)i * Tp + t2];
        s *= scale;
        a[t2] = s;
        maxv = fmaxf(maxv, s);
    }
    warp_softmax_causal(a, t, maxv, lane);
    __syncwarp();    // every lane's probabilities are now visible to the whole warp
    float *o = out + (size_t)b * C + h * hs;
    for (int i = lane; i < hs; i += 32) {
        float acc = 0.0f;
        for (int t2 = 0; t2 <= t; t2++) acc += a[t2] * vb[(size_t)t2 * C + i];
        o[i] = acc;
    }
}

extern "C" void cuda_attention_decode(float *atty, const float *kt, const float *v, const float *qkv, const int *pos,
                                      int B, int C, int NH, int maxT) {
    size_t rows = (size_t)B * NH;
    if (rows == 0) return;
    int w = warps_per_block(), Tp = (maxT + 7) / 8 * 8;
    float *att = (float *)scratch(SCRATCH_ATT, rows * Tp * sizeof(float));
    attention_decode_kernel<<<blocks_for(rows, w), w * 32>>>(atty, att, kt, v, qkv, pos, B, C, NH, maxT);
    LAUNCH_CHECK(attention_decode_kernel);
}

// ----------------------------------------------------------------------------
// GELU (tanh approximation, precise tanhf: no fast-math) and residual. Element-wise.

#define GELU_SCALE 0.7978845608028654f   // sqrt(2/pi)

/* gelu_forward_kernel: out = 0.5 x (1 + tanh(sqrt(2/π)(x + 0.044715 x³))). Replaces gelu_forward.
   Launch: 1-D, one thread per element. */
__global__ void gelu_forward_kernel(float *out, const float *inp, size_t N) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    float x = inp[i], cube = 0.044715f * x * x * x;
    out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALE * (x + cube)));
}

/* gelu_backward_kernel: dinp += gelu'(inp) · dout. Replaces gelu_backward.
   Launch: 1-D, one thread per element. */
__global__ void gelu_backward_kernel(float *dinp, const float *inp, const float *dout, size_t N) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    float x = inp[i], cube = 0.044715f * x * x * x;
    float th = tanhf(GELU_SCALE * (x + cube)), sech2 = 1.0f - th * th;
    float g = 0.5f * (1.0f + th) + x * 0.5f * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += g * dout[i];
}

/* residual_forward_kernel: out = a + b. Replaces residual_forward (out may alias a).
   Launch: 1-D, one thread per element. */
__global__ void residual_forward_kernel(float *out, const float *a, const float *b, size_t N) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = a[i] + b[i];
}

/* residual_backward_kernel: da += dout; db += dout. Replaces residual_backward.
   Launch: 1-D, one thread per element. */
__global__ void residual_backward_kernel(float *da, float *db, const float *dout, size_t N) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) { da[i] += dout[i]; db[i] += dout[i]; }
}

extern "C" void cuda_gelu_forward(float *out, const float *inp, size_t N) {
    if (N == 0) return;
    int bs = threads_per_block();
    gelu_forward_kernel<<<blocks_for(N, bs), bs>>>(out, inp, N);
    LAUNCH_CHECK(gelu_forward_kernel);
}
extern "C" void cuda_gelu_backward(float *dinp, const float *inp, const float *dout, size_t N) {
    if (N == 0) return;
    int bs = threads_per_block();
    gelu_backward_kernel<<<blocks_for(N, bs), bs>>>(dinp, inp, dout, N);
    LAUNCH_CHECK(gelu_backward_kernel);
}
extern "C" void cuda_residual_forward(float *out, const float *a, const float *b, size_t N) {
    if (N == 0) return;
    int bs = threads_per_block();
    residual_forward_kernel<<<blocks_for(N, bs), bs>>>(out, a, b, N);
    LAUNCH_CHECK(residual_forward_kernel);
}
extern "C" void cuda_residual_backward(float *da, float *db, const float *dout, size_t N) {
    if (N == 0) return;
    int bs = threads_per_block();
    residual_backward_kernel<<<blocks_for(N, bs), bs>>>(da, db, dout, N);
    LAUNCH_CHECK(residual_backward_kernel);
}

// ----------------------------------------------------------------------------
// Log-probabilities with temperature

/* logprob_forward_kernel: one row n of logprob_forward: probs = softmax(z/T) over the
   allowed tokens (a masked token gets 0), logp = (z[target]/T − max) − log Σ exp(z/T − max);
   a negative target gives logp 0 and a zero probs row. Same steps as softmax_temperature.
   Launch: one warp per row: blocks of warps_per_block() warps, ceil(N / warps) blocks; lanes
   split the vocabulary (v = lane, lane+32, …), any V. allowed is a device array or NULL. */
__global__ void logprob_forward_kernel(float *logp, float *probs, const float *logits, const int *targets,
                                       int N, int V, float temperature, const unsigned char *allowed) {
    int lane = threadIdx.x % 32, n = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (n >= N) return;
    const float *z = logits + (size_t)n * V;
    float *pr = probs + (size_t)n * V;
    int target = targets[n];
    if (target < 0) {
        for (int v = lane; v < V; v += 32) pr[v] = 0.0f;
        if (lane == 0) logp[n] = 0.0f;
        return;
    }
    float inv_t = 1.0f / temperature, mx = -FLT_MAX, sum = 0.0f;
    for (int v = lane; v < V; v += 32) if ((!allowed || allowed[v]) && z[v] * inv_t > mx) mx = z[v] * inv_t;
    mx = warp_max(mx);
    for (int v = lane; v < V; v += 32) {
        pr[v] = (!allowed || allowed[v]) ? expf(z[v] * inv_t - mx) : 0.0f;
        sum += pr[v];
    }
    sum = warp_sum(sum);
    float inv = 1.0f / sum;
    for (int v = lane; v < V; v += 32) pr[v] *= inv;    // each lane rescales its own entries
    if (lane == 0) logp[n] = (z[target] * inv_t - mx) - logf(sum);
}

extern "C" void cuda_logprob_forward(float *logp, float *probs, const float *logits, const int *targets,
                                     int N, int V, float temperature, const unsigned char *allowed) {
    if (N == 0) return;
    int w = warps_per_block();
    logprob_forward_kernel<<<blocks_for(N, w), w * 32>>>(logp, probs, logits, targets, N, V, temperature, allowed);
    LAUNCH_CHECK(logprob_forward_kernel);
}

/* logprob_backward_kernel: dlogits[n,v] = dlogp[n]·(onehot(target) − probs[n,v]) / T, 0 for
   rows with a negative target; overwrites dlogits. Replaces logprob_backward.
   Launch: 1-D, one thread per element of dlogits (N·V). */
__global__ void logprob_backward_kernel(float *dlogits, const float *probs, const int *targets,
                                        const float *dlogp, int N, int V, float temperature) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)N * V) return;
    int n = (int)(idx / V), v = (int)(idx % V), target = targets[n];
    if (target < 0) { dlogits[idx] = 0.0f; return; }
    float g = dlogp[n] * (1.0f / temperature), d = -g * probs[idx];
    if (v == target) d += g;
    dlogits[idx] = d;
}

extern "C" void cuda_logprob_backward(float *dlogits, const float *probs, const int *targets,
                                      const float *dlogp, int N, int V, float temperature) {
    size_t n = (size_t)N * V;
    if (n == 0) return;
    int bs = threads_per_block();
    logprob_backward_kernel<<<blocks_for(n, bs), bs>>>(dlogits, probs, targets, dlogp, N, V, temperature);
    LAUNCH_CHECK(logprob_backward_kernel);
}

// ----------------------------------------------------------------------------
// GRPO / λ-GRPO per-token loss

/* grpo_token_loss_kernel: token j of grpo_token_loss: ℓ = −min(ρA, clip(ρ)A) + β k3 with
   ρ = exp(logp − logp_old), k3 = exp(ref − logp) − (ref − logp) − 1 in double (it cancels
   badly in float), loss term coef·weight·ℓ (double, to token_loss for the deterministic sum)
   and dlogp = coef·weight·∂ℓ/∂logp; no policy gradient where the clipped branch is taken.
   ratio, kl, clipped may be NULL; logp_ref NULL means no reference (kl 0).
   Launch: 1-D, one thread per token. */
__global__ void grpo_token_loss_kernel(double *token_loss, float *dlogp, float *ratio_out, float *kl_out,
                                       unsigned char *clipped_out, int n, float clip_eps_low, float clip_eps_high,
                                       float beta, const float *logp, const float *logp_old, const float *logp_ref,
                                       const float *advantage, const float *weight, const float *coef) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float ratio = expf(logp[j] - logp_old[j]), A = advantage[j];
    float lo = 1.0f - clip_eps_low, hi = 1.0f + clip_eps_high;
    float clipped_ratio = ratio < lo ? lo : (ratio > hi ? hi : ratio);
    float unclipped_loss = -ratio * A, clipped_loss = -clipped_ratio * A;
    int take_clip = clipped_loss > unclipped_loss;
    float pg = take_clip ? clipped_loss : unclipped_loss;
    float dpg = take_clip ? 0.0f : -ratio * A;
    float kl = 0.0f, dkl = 0.0f;
    if (logp_ref) {
        double diff = (double)logp_ref[j] - logp[j], e = exp(diff);
        kl = (float)(e - diff - 1.0);
        dkl = (float)(1.0 - e);
    }
    float w = coef[j] * weight[j];
    token_loss[j] = (double)w * (pg + beta * kl);
    dlogp[j] = w * (dpg + beta * dkl);
    if (ratio_out) ratio_out[j] = ratio;
    if (kl_out) kl_out[j] = kl;
    if (clipped_out) clipped_out[j] = (unsigned char)take_clip;
}

/* cuda_grpo_token_loss: grpo_token_loss with the three ObjectiveConfig fields it reads
   (clip_eps_low, clip_eps_high, beta) and TokenLossOut's four arrays passed flat; all arrays
   on the device. Returns Σ coef·weight·ℓ, summed in double in a fixed order (deterministic). */
extern "C" double cuda_grpo_token_loss(float clip_eps_low, float clip_eps_high, float beta, int n,
                                       const float *logp, const float *logp_old, const float *logp_ref,
                                       const float *advantage, const float *weight, const float *coef,
                                       float *dlogp, float *ratio, float *kl, unsigned char *clipped) {
    if (n <= 0) return 0.0;
    int bs = threads_per_block();
    double *token_loss = (double *)scratch(SCRATCH_TOKENS, (size_t)n * sizeof(double));
    grpo_token_loss_kernel<<<blocks_for(n, bs), bs>>>(token_loss, dlogp, ratio, kl, clipped, n, clip_eps_low,
                                                      clip_eps_high, beta, logp, logp_old, logp_ref,
                                                      advantage, weight, coef);
    LAUNCH_CHECK(grpo_token_loss_kernel);
    return device_sum<false, double>(token_loss, n);
}

// ----------------------------------------------------------------------------
// Optimizer: AdamW and global gradient-norm clipping

/* adamw_kernel: one AdamW step on n parameters of one tensor, the loop body of adamw_update:
   m = β1 m + (1−β1) g; v = β2 v + (1−β2) g²; θ = θ(1 − lr·wd) − lr (m/bc1) / (sqrt(v/bc2) + eps).
   Launch: 1-D, one thread per parameter, one launch per tensor (its decay flag sets wd). */
__global__ void adamw_kernel(float *params, const float *grads, float *m, float *v, size_t n, float lr,
                             float beta1, float beta2, float eps, float wd, float bc1, float bc2) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = grads[i];
    float mi = beta1 * m[i] + (1.0f - beta1) * g;
    float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi; v[i] = vi;
    float p = params[i] * (1.0f - lr * wd);
    params[i] = p - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
}

/* cuda_adamw_update: adamw_update(GPT *m, AdamWConfig *o, lr, t) with the model's flat device
   arrays (params, grads, m, v of num_parameters floats) and, on the host, the tensor sizes
   (num_tensors) and per-tensor decay flags (PARAM_DECAY): tensor k gets weight decay
   weight_decay when decay[k], else none. t is the 1-based step for bias correction. */
extern "C" void cuda_adamw_update(float *params, const float *grads, float *m, float *v, const size_t *sizes,
                                  const int *decay, int num_tensors, float lr, float beta1, float beta2,
                                  float eps, float weight_decay, int t) {
    float bc1 = 1.0f - powf(beta1, (float)t), bc2 = 1.0f - powf(beta2, (float)t);
    int bs = threads_per_block();
    size_t off = 0;
    for (int k = 0; k < num_tensors; k++) {
        size_t n = sizes[k];
        float wd = decay[k] ? weight_decay : 0.0f;
        if (n) {
            adamw_kernel<<<blocks_for(n, bs), bs>>>(params + off, grads + off, m + off, v + off, n, lr,
                                                    beta1, beta2, eps, wd, bc1, bc2);
            LAUNCH_CHECK(adamw_kernel);
        }
        off += n;
    }
}

/* scale_kernel: x *= s, the clipping step of clip_grad_norm. Launch: 1-D, one thread per element. */
__global__ void scale_kernel(float *x, size_t n, float s) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

/* cuda_clip_grad_norm: clip_grad_norm over the n gradients at grads (device): the global L2
   norm, with Σ g² in double by the deterministic two-pass sum (same inputs and block size:
   same bits), then grads *= max_norm / (norm + 1e-6) when that is < 1. Returns the norm
   before clipping (NaN/Inf if a gradient is not finite). */
extern "C" float cuda_clip_grad_norm(float *grads, size_t n, float max_norm) {
    float norm = (float)sqrt(device_sum<true, float>(grads, n));
    if (max_norm > 0.0f && isfinite(norm)) {
        float coef = max_norm / (norm + 1e-6f);
        if (coef < 1.0f) {
            int bs = threads_per_block();
            scale_kernel<<<blocks_for(n, bs), bs>>>(grads, n, coef);
            LAUNCH_CHECK(scale_kernel);
        }
    }
    return norm;
}
