// grpo_kernels.cu: CUDA versions of grpo.c's hot kernels (matmul, attention, loss).
// Placeholder until the CUDA backend lands (issue: "The CUDA backend"); it compiles and
// links so that `make test` catches a broken CUDA toolchain setup.
#include <cuda_runtime.h>
extern "C" int grpo_cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
    return n;
}
