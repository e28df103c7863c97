// Kernels of known length for the PC sampling checks (tests/gpu/gpu_pc.sh): five kernels of
// 2-40 ms that stall in different ways (memory, math, barrier, atomics), launched in the
// capture window a mode asks for.
//
//   ws_pc_kernels MODE [REPEAT]
//     plain     launch all kernels at once (no capture window: warpscope's is the whole run)
//     idle      sleep 1 s after CUDA is set up, then launch
//     profiler  cudaProfilerStart; kernels; cudaProfilerStop (for -c cudaProfilerApi)
//     nvtx      kernels inside the NVTX range "pc_window" (for -p pc_window)
//     late      a first round outside any window, 1.5 s idle, a second round (for --delay 1)
//
// Built with -lineinfo so the cubins map PCs to source lines. Exit 0 unless CUDA fails.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(x)                                                                   \
  do {                                                                             \
    cudaError_t e = (x);                                                           \
    if (e != cudaSuccess) {                                                        \
      std::fprintf(stderr, "ws_pc_kernels: %s: %s\n", #x, cudaGetErrorString(e)); \
      std::exit(2);                                                                \
    }                                                                              \
  } while (0)

__device__ unsigned long long GlobalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Pointer chasing through a large buffer: long_scoreboard stalls.
__global__ void ws_pc_memory(const unsigned* next, unsigned* out, unsigned long long ns) {
  const unsigned long long end = GlobalNs() + ns;
  unsigned i = (blockIdx.x * blockDim.x + threadIdx.x) * 97u;
  unsigned acc = 0;
  while (GlobalNs() < end) {
    for (int k = 0; k < 64; ++k) {
      i = next[i & ((1u << 24) - 1)];
      acc += i;
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Dependent floating-point chains: math pipe and wait stalls.
__global__ void ws_pc_math(float* out, unsigned long long ns) {
  const unsigned long long end = GlobalNs() + ns;
  float a = threadIdx.x * 0.001f, b = 1.0001f;
  while (GlobalNs() < end) {
    for (int k = 0; k < 256; ++k) a = __fmaf_rn(a, b, 0.5f);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

// __syncthreads in a loop with uneven work: barrier stalls.
__global__ void ws_pc_barrier(float* out, unsigned long long ns) {
  __shared__ float s[1024];
  const unsigned long long end = GlobalNs() + ns;
  float a = threadIdx.x;
  bool done = false;
  while (!done) {
    for (int k = 0; k < (threadIdx.x % 32) * 8; ++k) a = a * 1.0001f + 1.0f;
    s[threadIdx.x] = a;
    __syncthreads();
    a += s[(threadIdx.x + 1) % blockDim.x];
    if (threadIdx.x == 0) s[0] = GlobalNs() >= end ? 1.0f : 0.0f;
    __syncthreads();
    done = s[0] != 0.0f;
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

// Contended global atomics: lg_throttle / membar-like stalls.
__global__ void ws_pc_atomics(unsigned* counters, unsigned long long ns) {
  const unsigned long long end = GlobalNs() + ns;
  while (GlobalNs() < end) {
    for (int k = 0; k < 16; ++k) atomicAdd(&counters[(threadIdx.x + k) % 64], 1u);
  }
}

// Short and plain: a kernel of about 2 ms.
__global__ void ws_pc_short(float* out, unsigned long long ns) {
  const unsigned long long end = GlobalNs() + ns;
  float a = 1.0f;
  while (GlobalNs() < end) a = sqrtf(a + 1.0f);
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

struct Buffers {
  unsigned* next = nullptr;
  unsigned* uout = nullptr;
  float* fout = nullptr;
  unsigned* counters = nullptr;
};

void Round(const Buffers& b) {
  const int blocks = 264, threads = 256;  // two blocks per SM on a 132-SM H200
  const unsigned long long ms = 1000000ull;
  ws_pc_memory<<<blocks, threads>>>(b.next, b.uout, 40 * ms);
  ws_pc_math<<<blocks, threads>>>(b.fout, 30 * ms);
  ws_pc_barrier<<<blocks, threads>>>(b.fout, 20 * ms);
  ws_pc_atomics<<<blocks, threads>>>(b.counters, 10 * ms);
  ws_pc_short<<<blocks, threads>>>(b.fout, 2 * ms);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "plain";
  const int repeat = argc > 2 ? std::atoi(argv[2]) : 1;
  Buffers b;
  const size_t n = 1u << 24;
  CHECK(cudaMalloc(&b.next, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&b.uout, 264 * 256 * sizeof(unsigned)));
  CHECK(cudaMalloc(&b.fout, 264 * 256 * sizeof(float)));
  CHECK(cudaMalloc(&b.counters, 64 * sizeof(unsigned)));
  unsigned* host = static_cast<unsigned*>(std::malloc(n * sizeof(unsigned)));
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned>((i * 2654435761u + 12345u) % n);
  CHECK(cudaMemcpy(b.next, host, n * sizeof(unsigned), cudaMemcpyHostToDevice));
  std::free(host);
  CHECK(cudaDeviceSynchronize());

  if (!std::strcmp(mode, "idle")) sleep(1);
  if (!std::strcmp(mode, "late")) {
    Round(b);
    usleep(1500000);
  }
  if (!std::strcmp(mode, "profiler")) CHECK(cudaProfilerStart());
  if (!std::strcmp(mode, "nvtx")) nvtxRangePushA("pc_window");
  for (int r = 0; r < repeat; ++r) Round(b);
  if (!std::strcmp(mode, "nvtx")) nvtxRangePop();
  if (!std::strcmp(mode, "profiler")) CHECK(cudaProfilerStop());
  std::printf("ws_pc_kernels %s: %d rounds done\n", mode, repeat);
  return 0;
}
