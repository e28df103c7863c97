// Five kernels, each built so that its warps spend most of their time in one warp state, to
// check `warpscope stalls` against Nsight Compute (tests/gpu/gpu_stalls.sh). Each runs a fixed
// amount of work (26-35 ms on an H200: 132 SMs, 4 schedulers and 64 warps per SM), so a
// profiler that replays the kernel measures the same work as one that samples it. The one line
// each kernel is built to stall on ends in `// ws-stall-line: <name>`; a stall is charged to
// the instruction that waits, and on each such line both the cause and the waiting
// instruction stand.
//
//   long_scoreboard  every thread follows its own chain of dependent global loads through
//                    256 MiB (more than 4x the 60 MB L2): the next load's address is the
//                    last load's result, so each warp waits for DRAM on every load. 8 warps
//                    per SM keep the memory system below its bandwidth, so the wait is latency.
//   barrier          in each round one warp of a 1024-thread block runs a dependent FMA chain
//                    while the other 31 wait at __syncthreads; 64 warps per SM.
//   wait             one warp per scheduler (128-thread blocks, one per SM) runs a single
//                    dependent FMA chain: each FMA waits the fixed latency of the one before
//                    it, and no other warp is there to issue in between.
//   bank_conflict    every lane of a warp reads a different word of the same shared-memory bank
//                    (a stride of 32 words: a 32-way conflict, 32 passes per load), and each
//                    load's address comes from the last load's value; 32 warps per SM queue on
//                    the one shared-memory unit (short_scoreboard or mio_throttle).
//   fma_saturated    64 warps per SM, each with 8 independent FMA chains: far more ready FMAs
//                    than the scheduler (one instruction per cycle) and the FMA pipes take
//                    (not_selected, math_pipe_throttle); 16 waves of blocks keep the SM full.
//
//   ws_stall_kernels [NAME|all] [LAUNCHES]
//     NAME: long_scoreboard, barrier, wait, bank_conflict or fma_saturated (default: all);
//     LAUNCHES: launches of each kernel (default 1). Prints each launch's time (CUDA events).
//
// Built with -lineinfo (tests/gpu/gpu_stalls.sh: nvcc -O3 -arch=sm_90 -lineinfo). Exit status 0,
// 2 when CUDA fails, 1 on a bad argument.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "ws_stall_kernels: %s: %s\n", #x, cudaGetErrorString(e)); \
      std::exit(2);                                                                   \
    }                                                                                 \
  } while (0)

namespace {

constexpr unsigned kChainLog2 = 26;  // 2^26 words: 256 MiB to chase through
constexpr unsigned kChainMask = (1u << kChainLog2) - 1;
constexpr int kSms = 132;  // H200; other GPUs get the same grids, only the timing changes
constexpr unsigned kOutWords = kSms * 2048;  // one word per thread of a full GPU

// Work per launch: 26-35 ms each on an H200 at 1.98 GHz.
constexpr int kChaseSteps = 40000;        // ~0.8 us of DRAM latency each
constexpr int kBarrierRounds = 80000;     // ~860 cycles each
constexpr int kBarrierWork = 128;         // dependent FMAs of the working warp per round
constexpr int kWaitSteps = 15000000;      // one FMA every ~4.6 cycles
constexpr int kBankSteps = 50000;         // 32 conflicted passes each, 32 warps per SM
constexpr int kFmaSteps = 25000;          // 8 FMAs each, 64 warps per SM, in kFmaWaves waves
// fma_saturated runs 16 short waves of blocks rather than one long one. Its warps do not
// progress evenly (the scheduler keeps issuing from the oldest ready warp), so in a single wave
// the SM empties gradually as warps finish, and the PC sampler and Nsight Compute's counters
// weigh that uneven occupancy differently: on the H200 one wave gave not_selected 74.7% against
// 80.4% and 6.9 against 10.1 warp cycles per issue, 4 waves 82.3 / 84.5%, 16 waves 84.5 /
// 85.1% and 15.0 / 16.3. Blocks replaced as they finish keep the SM full.
constexpr int kFmaWaves = 16;
constexpr int kFmaChains = 8;

}  // namespace

// next[i] = (a * i + c) mod 2^26 with a = 1 (mod 4) and c odd: a full-period LCG, so every
// chain walks all 2^26 words before it repeats and no chain falls into a short, cached loop.
__global__ void ws_fill_chain(unsigned* next) {
  const unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
  if (i <= kChainMask) next[i] = static_cast<unsigned>((i * 2654435761ull + 12345ull) & kChainMask);
}

__global__ void __launch_bounds__(256) ws_stall_long_scoreboard(const unsigned* __restrict__ next,
                                                                unsigned* out, int steps) {
  unsigned i = ((blockIdx.x * blockDim.x + threadIdx.x) * 40503u) & kChainMask;
#pragma unroll 8
  for (int k = 0; k < steps; ++k) {
    i = next[i];  // ws-stall-line: long_scoreboard
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = i;
}

// Warp 0's chain lives in its own function so that its FMAs map to their own line; the loop
// and the barrier share one line, so whichever instruction around the barrier the waiting
// warps are sampled on, it is this line.
__device__ __forceinline__ float BarrierWork(float a, int work) {
  for (int k = 0; k < work; ++k) a = __fmaf_rn(a, 0.9999f, 0.5f);
  return a;
}

__global__ void __launch_bounds__(1024, 2) ws_stall_barrier(float* out, int rounds, int work) {
  float a = threadIdx.x * 1e-3f;
  const bool worker = threadIdx.x < 32;
  for (int r = 0; r < rounds; ++r) { if (worker) a = BarrierWork(a, work); __syncthreads(); }  // ws-stall-line: barrier
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

__global__ void __launch_bounds__(128) ws_stall_wait(float* out, int steps) {
  float a = threadIdx.x * 1e-3f;
  const float b = 0.9999f, c = 0.5f;
#pragma unroll 16
  for (int k = 0; k < steps; ++k) {
    a = __fmaf_rn(a, b, c);  // ws-stall-line: wait
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

__global__ void __launch_bounds__(512, 2) ws_stall_bank_conflict(unsigned* out, int steps) {
  __shared__ unsigned words[32 * 32];
  // words[j] depends on j mod 32 only, so all lanes read the same value and stay in one bank.
  for (unsigned j = threadIdx.x; j < 32 * 32; j += blockDim.x) words[j] = (j * 7u + 3u) & 31u;
  __syncthreads();
  const unsigned row = (threadIdx.x & 31u) * 32u;  // lane L reads row L: bank = v for all lanes
  unsigned v = 0;
#pragma unroll 8
  for (int k = 0; k < steps; ++k) {
    v = words[row + v];  // ws-stall-line: bank_conflict
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

__global__ void __launch_bounds__(256, 8) ws_stall_fma_saturated(float* out, int steps) {
  float acc[kFmaChains];
  for (int j = 0; j < kFmaChains; ++j) acc[j] = threadIdx.x * 1e-3f + j;
  const float m = 0.9999f, c = 0.5f;
  // One line for the loop and the FMAs: warps waiting to be picked sit at the loop's top, and
  // the loop's own instructions are interleaved there with the first FMAs.
#pragma unroll 4
  for (int k = 0; k < steps; ++k) for (int j = 0; j < kFmaChains; ++j) acc[j] = __fmaf_rn(acc[j], m, c);  // ws-stall-line: fma_saturated
  float sum = 0.0f;
  for (int j = 0; j < kFmaChains; ++j) sum += acc[j];
  out[(blockIdx.x * blockDim.x + threadIdx.x) % kOutWords] = sum;
}

namespace {

struct Buffers {
  unsigned* next = nullptr;
  unsigned* uout = nullptr;
  float* fout = nullptr;
};

const char* const kNames[] = {"long_scoreboard", "barrier", "wait", "bank_conflict",
                              "fma_saturated"};

void Launch(int which, const Buffers& b) {
  switch (which) {
    case 0: ws_stall_long_scoreboard<<<kSms, 256>>>(b.next, b.uout, kChaseSteps); break;
    case 1: ws_stall_barrier<<<2 * kSms, 1024>>>(b.fout, kBarrierRounds, kBarrierWork); break;
    case 2: ws_stall_wait<<<kSms, 128>>>(b.fout, kWaitSteps); break;
    case 3: ws_stall_bank_conflict<<<2 * kSms, 512>>>(b.uout, kBankSteps); break;
    case 4: ws_stall_fma_saturated<<<kFmaWaves * 8 * kSms, 256>>>(b.fout, kFmaSteps); break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* name = argc > 1 ? argv[1] : "all";
  const int launches = argc > 2 ? std::atoi(argv[2]) : 1;
  int only = -1;
  for (int i = 0; i < 5; ++i) {
    if (!std::strcmp(name, kNames[i])) only = i;
  }
  if ((only < 0 && std::strcmp(name, "all")) || launches < 1) {
    std::fprintf(stderr,
                 "usage: ws_stall_kernels [long_scoreboard|barrier|wait|bank_conflict|"
                 "fma_saturated|all] [LAUNCHES]\n");
    return 1;
  }
  Buffers b;
  CHECK(cudaMalloc(&b.uout, kOutWords * sizeof(unsigned)));
  CHECK(cudaMalloc(&b.fout, kOutWords * sizeof(float)));
  if (only <= 0) {
    CHECK(cudaMalloc(&b.next, (kChainMask + 1ull) * sizeof(unsigned)));
    ws_fill_chain<<<(kChainMask + 1u) / 256u, 256>>>(b.next);
  }
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int which = 0; which < 5; ++which) {
    if (only >= 0 && which != only) continue;
    for (int l = 0; l < launches; ++l) {
      CHECK(cudaEventRecord(start));
      Launch(which, b);
      CHECK(cudaEventRecord(stop));
      CHECK(cudaGetLastError());
      CHECK(cudaEventSynchronize(stop));
      float ms = 0.0f;
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      std::printf("ws_stall_%s launch %d: %.2f ms\n", kNames[which], l, ms);
    }
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
