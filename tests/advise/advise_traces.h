// Synthetic traces with one performance problem each (and the same program without it), for
// the `warpscope advise` tests. They are written with the fixture builder
// (tests/fixtures/synthetic_trace.h), whose timing model makes each problem's cost known in
// advance: DesignedCost gives it, from the builder's documented API costs and latencies.
#ifndef WARPSCOPE_TESTS_ADVISE_ADVISE_TRACES_H_
#define WARPSCOPE_TESTS_ADVISE_ADVISE_TRACES_H_

#include <cstdint>
#include <string>

namespace warpscope::advise_testing {

enum class Problem {
  kBlockingRead,  // 20 steps: 1 ms of kernels, a blocking 4-byte DtoH read, 150 us host work
  kSync,          // the same with cudaStreamSynchronize instead of the read
  kPageable,      // 20 steps: a 64 MiB pageable HtoD cudaMemcpy, a 500 us kernel
  kHostRange,     // 20 steps: 1.5 ms in NVTX "data_loader" without GPU work, 1 ms of kernels
  kLaunchBound,   // NVTX "tiny_loop": 400 kernels of 5 us, 40 us of host work between
  kSerialCopy,    // 30 steps: 32 MiB pinned HtoD copy then a 400 us kernel, one stream
  kNone,          // 30 steps of 1 ms of kernels queued ahead, one sync at the end
};

// Writes the trace of `problem` to `path` (`fixed`: the program without the problem, the
// rest the same). Returns "" or what went wrong.
std::string WriteProblemTrace(Problem problem, bool fixed, const std::string& path);

// The time the problem costs by design: the GPU idle time it causes or the copy time above
// pinned bandwidth (0 for kNone and kSerialCopy, whose cost is the kernel time the copies
// could hide under: measure it on the trace).
uint64_t DesignedCost(Problem problem);

}  // namespace warpscope::advise_testing

#endif  // WARPSCOPE_TESTS_ADVISE_ADVISE_TRACES_H_
