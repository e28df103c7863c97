// warpscope_bench_trace: writes a large synthetic trace for bench/python/reader_bench.py with
// the fixture builder the analyzer tests use (tests/fixtures/synthetic_trace.h):
//   warpscope_bench_trace OUT.wst ROWS
// Each step is an NVTX range around 48 kernel launches of 500 names, a pinned HtoD copy, a
// memset and a stream synchronize; PM sampling is off. About ROWS events (DataFrame rows).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "tests/fixtures/synthetic_trace.h"

int main(int argc, char** argv) {
  using namespace warpscope::fixtures;
  if (argc != 3) {
    std::fprintf(stderr, "usage: warpscope_bench_trace OUT.wst ROWS\n");
    return 2;
  }
  const long rows = std::atol(argv[2]);
  SyntheticTraceOptions options;
  options.pm_interval_ns = 0;
  options.force_overwrite = true;
  std::string error;
  std::unique_ptr<SyntheticTraceBuilder> trace =
      SyntheticTraceBuilder::Create(argv[1], options, &error);
  if (trace == nullptr) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  constexpr int kKernelsPerStep = 48;
  constexpr int kNames = 500;
  // Rows per step: 2 per launch (API call, kernel), 2 per copy and memset, 2 for the sync
  // (API call, SyncEvent) and the NVTX range.
  constexpr long kRowsPerStep = 2 * kKernelsPerStep + 2 + 2 + 2 + 1;
  KernelSpec spec;
  for (long step = 0, launched = 0; step * kRowsPerStep < rows; ++step) {
    trace->PushRange("train_step");
    for (int k = 0; k < kKernelsPerStep; ++k, ++launched) {
      spec.name = "void at::native::elementwise_kernel<128, 4, " +
                  std::to_string(launched % kNames) + ">(int, float*)";
      spec.mangled_name.clear();
      spec.duration_ns = 5'000 + (launched * 7919) % 40'000;
      trace->LaunchKernel(spec);
    }
    trace->Memcpy(warpscope::CopyKind::kHtoD, 1 << 20, kCopyStream, true);
    trace->Memset(1 << 16, kAuxStream);
    trace->StreamSynchronize(kComputeStream);
    trace->PopRange();
  }
  return trace->Finish() ? 0 : 1;
}
