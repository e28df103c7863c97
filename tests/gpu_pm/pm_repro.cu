// GPU repro kernels with a designed occupancy and active-warp profile, for checking
// warpscope's occupancy and tail analyses against CUDA's occupancy API and Nsight Compute.
//
//   ws_pm_repro MODE [--launches N] [--ms T] [--iters I] [--warmup-ms W] [--json FILE]
//
// --warmup-ms (default 1500): the program idles this long after creating its context, like
// a job that has been running a while, because PM sampling starts about 0.5 s after the
// context is created (docs/pm_sampling.md).
//   MODE: balanced | imbalanced | reglimited | smemlimited
//
// Each mode launches its kernel N times (default 3) and writes what the CUDA occupancy API
// says about it (cudaOccupancyMaxActiveBlocksPerMultiprocessor, cudaFuncGetAttributes) and
// the designed tail to FILE (JSON, default MODE.json). Without --iters the work per launch
// is first calibrated to about T ms (default 20); with it (Nsight Compute runs) the given
// iteration count is launched N times with no calibration launches.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../gpu/gpu_timer.cuh"

#define CHECK_CUDA(call)                                                                     \
  do {                                                                                       \
    cudaError_t err_ = (call);                                                               \
    if (err_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "ws_pm_repro: %s failed: %s\n", #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

// Every block stays resident for `spin_ns` of GPU time (globaltimer); with heavy_stride > 0,
// the first block to start on every SM whose id is a multiple of heavy_stride stays
// `heavy_factor` times longer. Choosing the long blocks by SM (not by block index, which the
// block scheduler places differently from run to run and under Nsight Compute's replay)
// puts the tail on the same SMs in every run, so warpscope's and Nsight Compute's runs
// measure the same occupancy. Waiting on the clock instead of doing N steps of work keeps
// block durations exact whatever the SM's load: FMA-bound warps run ~4x faster once they
// are alone on an SM, which would shrink a designed tail.
constexpr int kMaxSmIds = 1024;

__global__ void __launch_bounds__(256) ws_pm_spin(float* out, unsigned* blocks_started_on_sm,
                                                  long long spin_ns, int heavy_stride,
                                                  int heavy_factor) {
  // Thread 0 reads the start time; every thread then spins on the same deadline.
  __shared__ unsigned long long deadline;
  if (threadIdx.x == 0) {
    long long n = spin_ns;
    const unsigned sm = SmId() % kMaxSmIds;
    if (heavy_stride > 0 && sm % heavy_stride == 0 &&
        atomicAdd(&blocks_started_on_sm[sm], 1u) == 0) {
      n *= heavy_factor;
    }
    deadline = GlobalTimerNs() + static_cast<unsigned long long>(n);
  }
  __syncthreads();
  float a = threadIdx.x * 1e-3f;
  while (GlobalTimerNs() < deadline) a = fmaf(a, 1.0001f, 1e-7f);
  if (a == 12345.678f) out[blockIdx.x] = a;  // keeps the loop alive
}

// Many live accumulators so that ptxas needs >= 128 registers per thread (__launch_bounds__
// with one block per SM lets it use up to 255).
__global__ void __launch_bounds__(256, 1) ws_pm_regs(float* out, long long iters) {
  constexpr int kLive = 120;
  float acc[kLive];
#pragma unroll
  for (int k = 0; k < kLive; ++k) acc[k] = threadIdx.x * 1e-3f + k;
  for (long long i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < kLive; ++k) acc[k] = fmaf(acc[k], 1.0001f, acc[(k + 7) % kLive] * 1e-7f);
  }
  float s = 0;
#pragma unroll
  for (int k = 0; k < kLive; ++k) s += acc[k];
  if (s == 12345.678f) out[blockIdx.x] = s;
}

// 100 KiB of dynamic shared memory per 128-thread block: 2 blocks per SM on sm_90.
__global__ void ws_pm_smem(float* out, long long iters) {
  extern __shared__ float tile[];
  const int n = 100 * 1024 / sizeof(float);
  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = i * 1e-3f;
  __syncthreads();
  float a = tile[threadIdx.x];
  for (long long i = 0; i < iters; ++i) a = fmaf(a, 1.0001f, tile[(threadIdx.x + i) % n] * 1e-7f);
  if (a == 12345.678f) out[blockIdx.x] = a;
}

namespace {

struct Plan {
  const void* func = nullptr;
  const char* kernel = "";
  int block = 256;
  size_t smem = 0;
  int grid = 0;
  int heavy_stride = 0;
  int heavy_factor = 1;
  double designed_tail = 0;  // fraction of the runtime after the normal blocks finish
};

// Times one launch of `plan` with `iters` to calibrate the iteration count to `ms`.
float TimeLaunch(const Plan& p, float* out, unsigned* sm_counts, long long iters) {
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  CHECK_CUDA(cudaMemset(sm_counts, 0, sizeof(unsigned) * kMaxSmIds));
  CHECK_CUDA(cudaEventRecord(a));
  if (p.func == reinterpret_cast<const void*>(&ws_pm_spin)) {
    ws_pm_spin<<<p.grid, p.block, p.smem>>>(out, sm_counts, iters, p.heavy_stride,
                                            p.heavy_factor);
  } else if (p.func == reinterpret_cast<const void*>(&ws_pm_regs)) {
    ws_pm_regs<<<p.grid, p.block, p.smem>>>(out, iters);
  } else {
    ws_pm_smem<<<p.grid, p.block, p.smem>>>(out, iters);
  }
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventRecord(b));
  CHECK_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));
  return ms;
}

// The kernel and launch shape of `mode`; false for an unknown mode.
bool ChoosePlan(const std::string& mode, Plan* plan) {
  Plan& p = *plan;
  if (mode == "balanced" || mode == "imbalanced") {
    p.func = reinterpret_cast<const void*>(&ws_pm_spin);
    p.kernel = "ws_pm_spin";
    p.block = 256;
    if (mode == "imbalanced") {
      // One block on every 8th SM (17 of the H200's 132) stays 10x longer. All blocks are
      // resident at once (one wave), so the normal ones finish at T and the heavy ones at
      // 10 T: the last 90% of the runtime runs one block on each of those SMs. Designed tail
      // fraction: 1 - 1/10 = 0.9.
      p.heavy_stride = 8;
      p.heavy_factor = 10;
      p.designed_tail = 0.9;
    }
  } else if (mode == "reglimited") {
    p.func = reinterpret_cast<const void*>(&ws_pm_regs);
    p.kernel = "ws_pm_regs";
    p.block = 256;
  } else if (mode == "smemlimited") {
    p.func = reinterpret_cast<const void*>(&ws_pm_smem);
    p.kernel = "ws_pm_smem";
    p.block = 128;
    p.smem = 100 * 1024;
    CHECK_CUDA(cudaFuncSetAttribute(ws_pm_smem, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(p.smem)));
  } else {
    return false;
  }
  return true;
}

// The JSON that ws_gpu_pm_check compares the trace with: the occupancy API's answer and the
// launches made. False when the file cannot be written.
bool WriteJson(const std::string& json, const std::string& mode, const Plan& p,
               const cudaDeviceProp& prop, const cudaFuncAttributes& attr, int blocks_per_sm,
               int launches, long long iters, float total) {
  const int warps_per_block = (p.block + prop.warpSize - 1) / prop.warpSize;
  const int max_warps = prop.maxThreadsPerMultiProcessor / prop.warpSize;
  FILE* f = std::fopen(json.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "ws_pm_repro: cannot write %s\n", json.c_str());
    return false;
  }
  std::fprintf(f,
               "{\"mode\": \"%s\", \"kernel\": \"%s\", \"device\": \"%s\", \"sm_count\": %d, "
               "\"grid\": %d, \"block\": %d, \"dynamic_smem\": %zu, \"static_smem\": %zu, "
               "\"num_regs\": %d, \"api_blocks_per_sm\": %d, \"api_occupancy_pct\": %.4f, "
               "\"launches\": %d, \"iters\": %lld, \"mean_ms\": %.4f, "
               "\"designed_tail_fraction\": %.4f, \"heavy_stride\": %d, \"heavy_factor\": %d}\n",
               mode.c_str(), p.kernel, prop.name, prop.multiProcessorCount, p.grid, p.block, p.smem,
               attr.sharedSizeBytes, attr.numRegs, blocks_per_sm,
               100.0 * blocks_per_sm * warps_per_block / max_warps, launches, iters,
               launches > 0 ? total / launches : 0.0, p.designed_tail, p.heavy_stride,
               p.heavy_factor);
  std::fclose(f);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: ws_pm_repro balanced|imbalanced|reglimited|smemlimited "
                 "[--launches N] [--ms T] [--iters I] [--warmup-ms W] [--json FILE]\n");
    return 2;
  }
  const std::string mode = argv[1];
  int launches = 3;
  double target_ms = 20;
  std::string json = mode + ".json";
  long long fixed_iters = 0;
  double warmup_ms = 1500;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--launches"))
      launches = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--ms"))
      target_ms = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--json"))
      json = argv[i + 1];
    else if (!std::strcmp(argv[i], "--iters"))
      fixed_iters = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--warmup-ms"))
      warmup_ms = std::atof(argv[i + 1]);
  }
  int device = 0;
  CHECK_CUDA(cudaSetDevice(device));
  CHECK_CUDA(cudaFree(nullptr));  // creates the context
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(warmup_ms));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));

  Plan p;
  if (!ChoosePlan(mode, &p)) {
    std::fprintf(stderr, "ws_pm_repro: unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  int blocks_per_sm = 0;
  CHECK_CUDA(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, p.func, p.block, p.smem));
  cudaFuncAttributes attr;
  CHECK_CUDA(cudaFuncGetAttributes(&attr, p.func));
  // One full wave for the spin kernels (so the designed tail is exact); four waves otherwise.
  const int wave = blocks_per_sm * prop.multiProcessorCount;
  p.grid = (mode == "balanced" || mode == "imbalanced") ? wave : 4 * wave;

  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, sizeof(float) * p.grid));
  unsigned* sm_counts = nullptr;
  CHECK_CUDA(cudaMalloc(&sm_counts, sizeof(unsigned) * kMaxSmIds));
  // Calibrate: the (normal) work per launch takes about target_ms.
  // For ws_pm_spin, "iters" is the normal blocks' residency in ns: no calibration needed.
  const bool timed = p.func == reinterpret_cast<const void*>(&ws_pm_spin);
  long long iters = fixed_iters > 0 ? fixed_iters
                    : timed         ? static_cast<long long>(target_ms * 1e6 / p.heavy_factor)
                                    : 1000;
  // Warm-up (skipped with --iters, so that Nsight Compute's first matching launch is a real one).
  float ms = fixed_iters > 0 ? 0.0f : TimeLaunch(p, out, sm_counts, timed ? 1000 : iters);
  for (int k = 0; k < 8 && !timed && fixed_iters == 0 && ms < 0.5 * target_ms; ++k) {
    const double scale = ms > 0.01 ? target_ms / ms : 100.0;
    iters = static_cast<long long>(iters * (scale > 1000 ? 1000 : scale));
    ms = TimeLaunch(p, out, sm_counts, iters);
  }
  float total = 0;
  for (int i = 0; i < launches; ++i) total += TimeLaunch(p, out, sm_counts, iters);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaFree(out));
  CHECK_CUDA(cudaFree(sm_counts));

  if (!WriteJson(json, mode, p, prop, attr, blocks_per_sm, launches, iters, total)) return 1;
  std::printf("ws_pm_repro %s: %s grid %d x %d, %d regs, %d blocks/SM (API), %.2f ms/launch\n",
              mode.c_str(), p.kernel, p.grid, p.block, attr.numRegs, blocks_per_sm,
              launches > 0 ? total / launches : 0.0);
  return 0;
}
