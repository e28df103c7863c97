// ws_sol_kernels: held-out kernels for `warpscope sol` against Nsight Compute's SpeedOfLight
// (tests/gpu/sol/gpu_sol.sh). Each is bound by one thing by construction:
//   ws_sol_copy   DRAM streaming: float4 copy of 1 GiB, 3 passes a launch (memory-bound, DRAM)
//   ws_sol_fma    independent FFMA chains in registers (compute-bound, FMA pipe)
//   ws_sol_mma    WMMA 16x16x16 FP16 in registers, no memory traffic (compute-bound, tensor)
//   ws_sol_chase  one dependent pointer chase per warp through 1 GiB (latency-bound)
//   ws_sol_short  a 64-block scale of 64 Ki floats, about 5 us, launched many times back to back
//
//   ws_sol_kernels [--only NAME|all] [--launches N] [--short-launches M] [--warmup-ms W]
//
// Every long kernel runs at least 1 ms (iteration counts fixed for an H200; the program prints
// each kernel's mean duration from CUDA events as one JSON line). Phases are 3 ms apart so that
// no PM sample of the default 200 us spans two of them. --warmup-ms (default 500) idles after
// the context is created.
#include <mma.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define CHECK_CUDA(call)                                                              \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

__global__ void ws_sol_copy(const float4* __restrict__ in, float4* __restrict__ out, size_t n,
                            int passes) {
  for (int p = 0; p < passes; ++p) {
    for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
         i += size_t{gridDim.x} * blockDim.x) {
      out[i] = in[i];
    }
  }
}

__global__ void ws_sol_fma(float* out, int iterations) {
  float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5,
        a6 = a0 + 6, a7 = a0 + 7;
  const float b = 0.999f, c = 0.001f;
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      a0 = fmaf(a0, b, c); a1 = fmaf(a1, b, c); a2 = fmaf(a2, b, c); a3 = fmaf(a3, b, c);
      a4 = fmaf(a4, b, c); a5 = fmaf(a5, b, c); a6 = fmaf(a6, b, c); a7 = fmaf(a7, b, c);
    }
  }
  const float sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  if (sum == 12345.0f) out[0] = sum;  // keeps the chains alive
}

__global__ void ws_sol_mma(float* out, int iterations) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c0, c1, c2, c3;
  wmma::fill_fragment(a, __float2half(0.001f));
  wmma::fill_fragment(b, __float2half(0.001f));
  wmma::fill_fragment(c0, 0.0f);
  wmma::fill_fragment(c1, 0.0f);
  wmma::fill_fragment(c2, 0.0f);
  wmma::fill_fragment(c3, 0.0f);
  for (int i = 0; i < iterations; ++i) {
    wmma::mma_sync(c0, a, b, c0);
    wmma::mma_sync(c1, a, b, c1);
    wmma::mma_sync(c2, a, b, c2);
    wmma::mma_sync(c3, a, b, c3);
  }
  if (c0.x[0] + c1.x[0] + c2.x[0] + c3.x[0] == 12345.0f) out[0] = c0.x[0];
}

__global__ void ws_sol_chase(const unsigned* __restrict__ next, unsigned* out, int steps) {
  if (threadIdx.x != 0) return;  // one chain per block: nothing to overlap the latency
  unsigned p = (blockIdx.x * 7919u) % (1u << 28);
  for (int i = 0; i < steps; ++i) p = next[p];
  out[blockIdx.x] = p;
}

__global__ void ws_sol_short(float* data, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    data[i] = data[i] * 1.0001f + 1.0f;
  }
}

namespace {

struct Options {
  std::string only = "all";
  int launches = 10;
  int short_launches = 2000;
  int warmup_ms = 500;
};

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--only") o.only = argv[i + 1];
    else if (flag == "--launches") o.launches = std::atoi(argv[i + 1]);
    else if (flag == "--short-launches") o.short_launches = std::atoi(argv[i + 1]);
    else if (flag == "--warmup-ms") o.warmup_ms = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      std::exit(2);
    }
  }
  return o;
}

// Runs `launch` n times between two events; the mean duration in ms.
template <typename F>
float Timed(int n, F launch) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start));
  for (int i = 0; i < n; ++i) launch();
  CHECK_CUDA(cudaEventRecord(stop));
  CHECK_CUDA(cudaEventSynchronize(stop));
  CHECK_CUDA(cudaGetLastError());
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  return ms / n;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  auto want = [&](const char* name) { return o.only == "all" || o.only == name; };
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK_CUDA(cudaFree(nullptr));
  std::this_thread::sleep_for(std::chrono::milliseconds(o.warmup_ms));
  const size_t n4 = (size_t{1} << 30) / sizeof(float4);  // 1 GiB
  float4 *in = nullptr, *out = nullptr;
  unsigned *next = nullptr, *sink = nullptr;
  float* small = nullptr;
  CHECK_CUDA(cudaMalloc(&in, n4 * sizeof(float4)));
  CHECK_CUDA(cudaMalloc(&out, n4 * sizeof(float4)));
  CHECK_CUDA(cudaMalloc(&sink, 1 << 20));
  CHECK_CUDA(cudaMalloc(&small, 65536 * sizeof(float)));
  CHECK_CUDA(cudaMemset(in, 0, n4 * sizeof(float4)));
  CHECK_CUDA(cudaMemset(small, 0, 65536 * sizeof(float)));
  // The chase's table: next[i] = (i * a + c) mod 2^28, a full-period walk over 1 GiB.
  next = reinterpret_cast<unsigned*>(in);
  std::printf("{\"sms\": %d", sms);
  if (want("copy")) {
    const float ms = Timed(o.launches, [&] { ws_sol_copy<<<sms * 8, 512>>>(in, out, n4, 3); });
    std::printf(", \"ws_sol_copy_ms\": %.4f", ms);
  }
  if (want("fma")) {
    const float ms = Timed(o.launches, [&] { ws_sol_fma<<<sms * 8, 256>>>(reinterpret_cast<float*>(sink), 4000); });
    std::printf(", \"ws_sol_fma_ms\": %.4f", ms);
  }
  if (want("mma")) {
    const float ms = Timed(o.launches, [&] { ws_sol_mma<<<sms * 8, 256>>>(reinterpret_cast<float*>(sink), 10000); });
    std::printf(", \"ws_sol_mma_ms\": %.4f", ms);
  }
  if (want("chase")) {
    std::vector<unsigned> table(size_t{1} << 28);
    for (size_t i = 0; i < table.size(); ++i) {
      table[i] = static_cast<unsigned>((i * 1664525u + 1013904223u) & ((1u << 28) - 1));
    }
    CHECK_CUDA(cudaMemcpy(next, table.data(), table.size() * sizeof(unsigned),
                          cudaMemcpyHostToDevice));
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    const float ms = Timed(o.launches, [&] { ws_sol_chase<<<sms * 2, 32>>>(next, sink, 2000); });
    std::printf(", \"ws_sol_chase_ms\": %.4f", ms);
  }
  if (want("short")) {
    const float ms = Timed(o.short_launches, [&] { ws_sol_short<<<64, 256>>>(small, 65536); });
    std::printf(", \"ws_sol_short_ms\": %.4f", ms);
  }
  std::printf("}\n");
  return 0;
}
