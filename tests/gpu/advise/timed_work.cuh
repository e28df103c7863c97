// Work of a set length for the advise programs (advise_problems.cu, heldout.cu): a kernel body
// that spins on the GPU's global timer and a host loop that spins on the steady clock, so a
// program's timing is designed, not measured. The including file defines WS_PROGRAM (its name,
// for CHECK's message) first.
#ifndef WARPSCOPE_TESTS_GPU_ADVISE_TIMED_WORK_CUH_
#define WARPSCOPE_TESTS_GPU_ADVISE_TIMED_WORK_CUH_

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

// Exits with status 3 and one line naming the call when a CUDA call fails.
#define CHECK(x)                                                                       \
  do {                                                                                 \
    cudaError_t e = (x);                                                               \
    if (e != cudaSuccess) {                                                            \
      std::fprintf(stderr, WS_PROGRAM ": %s failed: %s\n", #x, cudaGetErrorString(e)); \
      std::exit(3);                                                                    \
    }                                                                                  \
  } while (0)

constexpr unsigned long long kUs = 1000ull;

// Spins the calling thread for `ns` of the GPU's global timer.
__device__ inline void Spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

// Keeps the host busy (no sleep) for `ns`.
inline void HostWork(unsigned long long ns) {
  const auto start = std::chrono::steady_clock::now();
  while (static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now() - start)
                                             .count()) < ns) {
  }
}

#endif  // WARPSCOPE_TESTS_GPU_ADVISE_TIMED_WORK_CUH_
