// The GPU's global timer and the SM a block runs on, for repro kernels whose block lengths are
// set on the clock and whose long blocks are chosen by SM (tests/gpu_pm/pm_repro.cu,
// tests/gpu/occupancy/long_tail.cu).
#ifndef WARPSCOPE_TESTS_GPU_GPU_TIMER_CUH_
#define WARPSCOPE_TESTS_GPU_GPU_TIMER_CUH_

__device__ __forceinline__ unsigned long long GlobalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned SmId() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

#endif  // WARPSCOPE_TESTS_GPU_GPU_TIMER_CUH_
