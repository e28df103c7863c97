// The problem programs of advise_traces.h, written with SyntheticTraceBuilder. The designed
// costs below follow the builder's model: a launch costs the host 3 us and starts 2 us after
// it returns, NVTX push and pop 0.2 us each, a copy has 1 us of setup, a synchronous copy
// returns 1 us after its data arrived, a synchronize call 2 us after the GPU is done; pinned
// copies run at 50 GB/s, pageable at 20 GB/s; kernels vary by up to 3% around their length.
#include "tests/advise/advise_traces.h"

#include <memory>

#include "tests/fixtures/synthetic_trace.h"

namespace warpscope::advise_testing {
namespace {

using fixtures::kComputeStream;
using fixtures::kCopyStream;
using fixtures::KernelSpec;
using fixtures::SyntheticTraceBuilder;

constexpr uint64_t kUs = 1000;
constexpr uint64_t kPageableBytes = 64ull << 20;
constexpr uint64_t kSerialBytes = 32ull << 20;

KernelSpec Kernel(const char* name, uint64_t ns, uint32_t stream = kComputeStream) {
  KernelSpec spec;
  spec.name = name;
  spec.duration_ns = ns;
  spec.stream = stream;
  return spec;
}

void Compute(SyntheticTraceBuilder& b) {
  for (int k = 0; k < 4; ++k) b.LaunchKernel(Kernel("compute(float const*)", 250 * kUs));
}

void Write(Problem problem, bool fixed, SyntheticTraceBuilder& b) {
  switch (problem) {
    case Problem::kBlockingRead:
    case Problem::kSync:
      for (int s = 0; s < 20; ++s) {
        b.PushRange("step");
        Compute(b);
        if (!fixed && problem == Problem::kBlockingRead) {
          b.Memcpy(CopyKind::kDtoH, 4, kComputeStream, false, MemoryKind::kPageable);
        }
        if (!fixed && problem == Problem::kSync) b.StreamSynchronize(kComputeStream);
        b.PopRange();
        b.HostIdle(150 * kUs);
      }
      break;
    case Problem::kPageable:
      for (int i = 0; i < 2; ++i) {
        b.Memcpy(CopyKind::kHtoD, kPageableBytes, kComputeStream, false, MemoryKind::kPinned);
      }
      for (int s = 0; s < 20; ++s) {
        b.PushRange("step");
        b.Memcpy(CopyKind::kHtoD, kPageableBytes, kComputeStream, false,
                 fixed ? MemoryKind::kPinned : MemoryKind::kPageable);
        b.LaunchKernel(Kernel("compute(float const*)", 500 * kUs));
        b.PopRange();
      }
      break;
    case Problem::kHostRange:
      for (int s = 0; s < 20; ++s) {
        if (!fixed) {
          b.PushRange("data_loader");
          b.HostIdle(1500 * kUs);
          b.PopRange();
        }
        b.PushRange("step");
        Compute(b);
        b.PopRange();
      }
      break;
    case Problem::kLaunchBound:
      b.PushRange("tiny_loop");
      if (fixed) {
        b.LaunchKernel(Kernel("fused(int)", 400 * 5 * kUs));
      } else {
        for (int k = 0; k < 400; ++k) {
          b.LaunchKernel(Kernel("tiny(int)", 5 * kUs));
          b.HostIdle(40 * kUs);
        }
      }
      b.PopRange();
      break;
    case Problem::kSerialCopy:
      for (int s = 0; s < 30; ++s) {
        const uint32_t stream = fixed && s % 2 == 1 ? kCopyStream : kComputeStream;
        b.PushRange("step");
        b.Memcpy(CopyKind::kHtoD, kSerialBytes, stream, true, MemoryKind::kPinned);
        b.LaunchKernel(Kernel("compute(float const*)", 400 * kUs, stream));
        b.PopRange();
      }
      break;
    case Problem::kNone:
      for (int s = 0; s < 30; ++s) {
        b.PushRange("step");
        Compute(b);
        b.PopRange();
      }
      break;
  }
  b.DeviceSynchronize();
}

}  // namespace

std::string WriteProblemTrace(Problem problem, bool fixed, const std::string& path) {
  fixtures::SyntheticTraceOptions options;
  options.pm_interval_ns = 0;
  options.force_overwrite = true;
  std::string error;
  std::unique_ptr<SyntheticTraceBuilder> b = SyntheticTraceBuilder::Create(path, options, &error);
  if (b == nullptr) return error;
  Write(problem, fixed, *b);
  return b->Finish() ? "" : "warpscope: the fixture builder dropped records";
}

uint64_t DesignedCost(Problem problem) {
  switch (problem) {
    case Problem::kBlockingRead:
      // 19 gaps from the read's end to the next step's first kernel: the call returns (1 us),
      // pop, 150 us of host work, push, launch (3 us) and its latency (2 us).
      return 19 * (1000 + 200 + 150 * kUs + 200 + 3000 + 2000);
    case Problem::kSync:
      return 19 * (2000 + 200 + 150 * kUs + 200 + 3000 + 2000);
    case Problem::kPageable: {
      // Per copy: the pageable time minus the time at the pinned copies' bandwidth (both
      // with the 1 us setup, which the measured pinned bandwidth carries).
      const double pageable = 1000 + static_cast<double>(kPageableBytes) / 20.0;
      const double pinned = 1000 + static_cast<double>(kPageableBytes) / 50.0;
      return static_cast<uint64_t>(20 * (pageable - pinned));
    }
    case Problem::kHostRange:
      // A step takes the host 1.5 ms + 4 x 0.2 us of NVTX + 4 launches of 3 us; its kernels
      // run 1 ms: 19 gaps of the difference.
      return 19 * (1500 * kUs + 800 + 12 * kUs - 1000 * kUs);
    case Problem::kLaunchBound:
      // 399 gaps: a launch every 43 us (3 us call, 40 us host work), kernels of 5 us.
      return 399 * (43 * kUs - 5 * kUs);
    case Problem::kSerialCopy:
    case Problem::kNone:
      break;
  }
  return 0;
}

}  // namespace warpscope::advise_testing
