// Work of a set length for the advise programs (advise_problems.cu, heldout.cu): a kernel body
// that spins on the GPU's global timer and a host loop that spins on the steady clock, so a
// program's timing is designed, not measured. The including file defines WS_PROGRAM (its name,
// for CHECK's message) first.
#ifndef WARPSCOPE_TESTS_GPU_ADVISE_TIMED_WORK_CUH_
#define WARPSCOPE_TESTS_GPU_ADVISE_TIMED_WORK_CUH_

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

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

// A program's command line: --problem NAME [--fixed] [--steps N] [--warmup W].
struct StepOptions {
  std::string problem;
  bool fixed = false;
  int steps = 0;
  int warmup = 3;
};

// Parses the command line; on an unknown argument, a missing value or a count out of range,
// prints `usage` and exits with status 2.
inline StepOptions ParseStepOptions(int argc, char** argv, int default_steps, const char* usage) {
  StepOptions o;
  o.steps = default_steps;
  auto refuse = [usage]() {
    std::fprintf(stderr, "usage: %s\n", usage);
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fixed") {
      o.fixed = true;
    } else if (i + 1 >= argc) {
      refuse();
    } else if (a == "--problem") {
      o.problem = argv[++i];
    } else if (a == "--steps") {
      o.steps = std::atoi(argv[++i]);
    } else if (a == "--warmup") {
      o.warmup = std::atoi(argv[++i]);
    } else {
      refuse();
    }
  }
  if (o.steps < 1 || o.warmup < 0) refuse();
  return o;
}

// Runs `warmup` untimed steps, then `steps` timed ones between two device synchronizations,
// then the program's Finish, and prints the one JSON line the drivers read:
//   {"problem": "item", "fixed": false, "steps": 53, "timed_steps": 50, "loop_ns": 61234567}
template <typename Program>
void RunTimedSteps(Program& program, const std::string& problem, bool fixed, int warmup,
                   int steps) {
  for (int i = 0; i < warmup; ++i) program.Step(i);
  CHECK(cudaDeviceSynchronize());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) program.Step(warmup + i);
  CHECK(cudaDeviceSynchronize());
  const auto loop_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  program.Finish();
  CHECK(cudaDeviceSynchronize());
  std::printf(
      "{\"problem\": \"%s\", \"fixed\": %s, \"steps\": %d, \"timed_steps\": %d, "
      "\"loop_ns\": %lld}\n",
      problem.c_str(), fixed ? "true" : "false", warmup + steps, steps,
      static_cast<long long>(loop_ns));
}

#endif  // WARPSCOPE_TESTS_GPU_ADVISE_TIMED_WORK_CUH_
