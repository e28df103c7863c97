// ws_occupancy_long_tail: a long-tail kernel between two full neighbours, for checking
// `warpscope occupancy` against Nsight Compute's sm__warps_active.avg.pct_of_peak_sustained_active
// and ..._elapsed (tests/gpu/occupancy/check_occupancy.sh).
//
//   ws_occupancy_long_tail [--launches N] [--base-us T] [--neighbour-us U] [--warmup-ms W]
//                          [--json FILE]
//
// Each step launches, on one stream and back to back: ws_occ_neighbour (every SM full for U
// us, default 100), ws_occ_long_tail, ws_occ_neighbour again. The neighbours put the long-tail
// kernel's full start and its sparse end into PM samples it shares with them, so the bounds of
// its achieved occupancy must say what those unseen parts can hold.
//
// ws_occ_long_tail: one wave of 8 blocks of 256 threads on every SM (64 warps, 100%
// theoretical). Every block stays T us (default 1000) except the first block to start on each
// SM, which stays T times kFactors[sm % 6] = 1, 1, 1, 1.5, 2 or 3: a staircase tail in which
// half of the SMs drain to one block, then a third, then a sixth. Choosing the long block by SM
// id (not by block index, which the scheduler places differently from run to run and under
// Nsight Compute's replay) gives both tools the same tail. Blocks spin on the global timer, so
// their length is set, not measured. Designed per SM: warps 8 (7 T + f T), active cycles f T,
// elapsed cycles 3 T; over the GPU (mean f = 1.583 with 132 SMs) 67.8% per active cycle and
// 35.8% per elapsed cycle (the JSON gives the figures for the GPU it ran on).
//
// --warmup-ms (default 1500): idle after creating the context, because PM sampling starts
// about 0.5 s after it (docs/pm_sampling.md). FILE (default long_tail.json): the design and
// what the kernel saw (blocks per SM), one JSON object.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "../gpu_timer.cuh"

#define CHECK_CUDA(call)                                                     \
  do {                                                                       \
    cudaError_t err_ = (call);                                               \
    if (err_ != cudaSuccess) {                                               \
      std::fprintf(stderr, "ws_occupancy_long_tail: %s failed: %s\n", #call, \
                   cudaGetErrorString(err_));                                \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

namespace {

constexpr int kMaxSmIds = 1024;
constexpr int kBlock = 256;
constexpr int kBlocksPerSm = 8;
constexpr int kSteps = 6;
__constant__ float kFactorsDevice[kSteps] = {1, 1, 1, 1.5f, 2, 3};
const float kFactors[kSteps] = {1, 1, 1, 1.5f, 2, 3};

__device__ __forceinline__ void SpinUntil(unsigned long long deadline, float* out) {
  float a = threadIdx.x * 1e-3f;
  while (GlobalTimerNs() < deadline) a = fmaf(a, 1.0001f, 1e-7f);
  if (a == 12345.678f) out[blockIdx.x] = a;  // keeps the loop alive
}

}  // namespace

// blocks_on_sm counts the blocks each SM ran (the first one to count is the long one).
__global__ void __launch_bounds__(kBlock, kBlocksPerSm)
    ws_occ_long_tail(float* out, unsigned* blocks_on_sm, long long base_ns) {
  __shared__ unsigned long long deadline;
  if (threadIdx.x == 0) {
    const unsigned sm = SmId() % kMaxSmIds;
    double n = static_cast<double>(base_ns);
    if (atomicAdd(&blocks_on_sm[sm], 1u) == 0) n *= kFactorsDevice[sm % kSteps];
    deadline = GlobalTimerNs() + static_cast<unsigned long long>(n);
  }
  __syncthreads();
  SpinUntil(deadline, out);
}

__global__ void __launch_bounds__(kBlock, kBlocksPerSm) ws_occ_neighbour(float* out, long long ns) {
  __shared__ unsigned long long deadline;
  if (threadIdx.x == 0) deadline = GlobalTimerNs() + static_cast<unsigned long long>(ns);
  __syncthreads();
  SpinUntil(deadline, out);
}

int main(int argc, char** argv) {
  int launches = 20;
  double base_us = 1000, neighbour_us = 100, warmup_ms = 1500;
  std::string json = "long_tail.json";
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "ws_occupancy_long_tail: %s needs a value\n", argv[i]);
      return 2;
    }
    if (!std::strcmp(argv[i], "--launches")) {
      launches = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--base-us")) {
      base_us = std::atof(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--neighbour-us")) {
      neighbour_us = std::atof(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--warmup-ms")) {
      warmup_ms = std::atof(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--json")) {
      json = argv[i + 1];
    } else {
      std::fprintf(stderr,
                   "usage: ws_occupancy_long_tail [--launches N] [--base-us T] "
                   "[--neighbour-us U] [--warmup-ms W] [--json FILE]\n");
      return 2;
    }
  }
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaFree(nullptr));  // creates the context
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(warmup_ms));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  int fits = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, ws_occ_long_tail, kBlock, 0));
  if (fits < kBlocksPerSm) {
    std::fprintf(stderr, "ws_occupancy_long_tail: only %d blocks per SM fit, need %d\n", fits,
                 kBlocksPerSm);
    return 1;
  }
  const int sms = prop.multiProcessorCount;
  const int grid = sms * kBlocksPerSm;
  float* out = nullptr;
  unsigned* blocks_on_sm = nullptr;
  CHECK_CUDA(cudaMalloc(&out, sizeof(float) * grid));
  CHECK_CUDA(cudaMalloc(&blocks_on_sm, sizeof(unsigned) * kMaxSmIds));
  const long long base_ns = static_cast<long long>(base_us * 1000);
  const long long neighbour_ns = static_cast<long long>(neighbour_us * 1000);
  std::vector<unsigned> counts(kMaxSmIds);
  unsigned min_blocks = ~0u, max_blocks = 0, sms_seen = 0;
  // Design from the SM ids the kernel ran on: per SM warps 8 (7 + f) T, active f T.
  double warp_time = 0, active_time = 0, longest = 0;
  for (int i = 0; i < launches; ++i) {
    CHECK_CUDA(cudaMemset(blocks_on_sm, 0, sizeof(unsigned) * kMaxSmIds));
    ws_occ_neighbour<<<grid, kBlock>>>(out, neighbour_ns);
    ws_occ_long_tail<<<grid, kBlock>>>(out, blocks_on_sm, base_ns);
    ws_occ_neighbour<<<grid, kBlock>>>(out, neighbour_ns);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    if (i > 0) continue;
    CHECK_CUDA(cudaMemcpy(counts.data(), blocks_on_sm, sizeof(unsigned) * kMaxSmIds,
                          cudaMemcpyDeviceToHost));
    for (int sm = 0; sm < kMaxSmIds; ++sm) {
      if (counts[sm] == 0) continue;
      ++sms_seen;
      min_blocks = counts[sm] < min_blocks ? counts[sm] : min_blocks;
      max_blocks = counts[sm] > max_blocks ? counts[sm] : max_blocks;
      const double f = kFactors[sm % kSteps];
      warp_time += (kBlock / 32) * ((counts[sm] - 1) + f);
      active_time += f;
      longest = f > longest ? f : longest;
    }
  }
  CHECK_CUDA(cudaFree(out));
  CHECK_CUDA(cudaFree(blocks_on_sm));
  const int max_warps = prop.maxThreadsPerMultiProcessor / prop.warpSize;
  const double designed_active = active_time > 0 ? 100 * warp_time / (active_time * max_warps) : 0;
  const double designed_elapsed =
      sms_seen > 0 ? 100 * warp_time / (sms_seen * longest * max_warps) : 0;
  FILE* f = std::fopen(json.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "ws_occupancy_long_tail: cannot write %s\n", json.c_str());
    return 1;
  }
  std::fprintf(f,
               "{\"kernel\": \"ws_occ_long_tail\", \"neighbour\": \"ws_occ_neighbour\", "
               "\"device\": \"%s\", \"sm_count\": %d, \"grid\": %d, \"block\": %d, "
               "\"launches\": %d, \"base_us\": %.1f, \"neighbour_us\": %.1f, "
               "\"sms_seen\": %u, \"blocks_on_sm_min\": %u, \"blocks_on_sm_max\": %u, "
               "\"designed_active_pct\": %.2f, \"designed_elapsed_pct\": %.2f}\n",
               prop.name, sms, grid, kBlock, launches, base_us, neighbour_us, sms_seen,
               sms_seen ? min_blocks : 0, max_blocks, designed_active, designed_elapsed);
  std::fclose(f);
  std::printf(
      "ws_occupancy_long_tail: %d launches, grid %d x %d on %u SMs (%u-%u blocks each); "
      "designed %.2f%% per active cycle, %.2f%% per elapsed cycle\n",
      launches, grid, kBlock, sms_seen, sms_seen ? min_blocks : 0, max_blocks, designed_active,
      designed_elapsed);
  return 0;
}
