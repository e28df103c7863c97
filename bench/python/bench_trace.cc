// warpscope_bench_trace: writes large synthetic traces for the benchmarks (bench/size,
// bench/python/reader_bench.py) with the fixture builder the analyzer tests use
// (tests/fixtures/synthetic_trace.h, synthetic_job.h):
//   warpscope_bench_trace OUT.wst ROWS [--pm-ns NS] [--pc] [--alloc]
//   warpscope_bench_trace OUT_DIR ROWS --ranks N
// One trace: each step is an NVTX range around 48 kernel launches of 500 names, a pinned HtoD
// copy, a memset and a stream synchronize. --pm-ns NS adds back-to-back PM samples of NS ns
// (for `tail`), --pc one PC sample batch per step over 8 of its kernels (for `stalls`),
// --alloc a device block of 1 MiB allocated at the step's start and freed at its end (for
// `memory`).
// --ranks N writes a data-parallel job of N ranks into OUT_DIR (rank_<r>.wst, synthetic_job.h:
// AllReduces matched across ranks, rank 1 late) for `job`. About ROWS events in all
// (DataFrame rows; PM and PC samples not counted).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/fixtures/synthetic_job.h"
#include "tests/fixtures/synthetic_trace.h"

namespace {

using namespace warpscope;
using namespace warpscope::fixtures;

constexpr int kKernelsPerStep = 48;
constexpr int kNames = 500;
constexpr int kPcKernelsPerStep = 8;
constexpr int kPcsPerKernel = 4;

// Stall reasons as CUPTI names them on Hopper; the batches use their indices.
const char* const kStallReasons[] = {"smsp__pcsamp_warps_issue_stalled_long_scoreboard",
                                     "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle",
                                     "smsp__pcsamp_warps_issue_stalled_wait",
                                     "smsp__pcsamp_warps_issue_stalled_selected"};
constexpr uint32_t kNumReasons = sizeof(kStallReasons) / sizeof(kStallReasons[0]);

std::string KernelName(long launched) {
  return "void at::native::elementwise_kernel<128, 4, " + std::to_string(launched % kNames) +
         ">(int, float*)";
}

bool WriteStallReasons(SyntheticTraceBuilder& trace) {
  PcStallReasonsRecord reasons{.device_id = kDeviceId, .index = {}, .name = {}};
  for (uint32_t i = 0; i < kNumReasons; ++i) {
    reasons.index.push_back(i);
    reasons.name.push_back(kStallReasons[i]);
  }
  return trace.writer().Write(reasons);
}

// One batch of PC samples over the step's first kernels, as the builder mangles their names.
bool WritePcBatch(SyntheticTraceBuilder& trace, long first_launch) {
  TraceWriter::Batch batch(trace.writer());
  PcSampleBatchRecord pc{.device_id = kDeviceId, .context_id = kContextId,
                         .timestamp_ns = SyntheticTraceBuilder::ToAbsolute(trace.host_now()),
                         .total_samples = 0, .dropped_samples = 0, .non_user_kernel_samples = 0,
                         .hardware_buffer_full = false, .records = {}};
  for (int k = 0; k < kPcKernelsPerStep; ++k) {
    const std::string name = KernelName(first_launch + k);
    const uint64_t function_id =
        batch.InternString("_Z" + std::to_string(name.size()) + name);
    for (int p = 0; p < kPcsPerKernel; ++p) {
      PcSampleRecord rec{.cubin_crc = 0xbe7c4, .function_name_id = function_id,
                         .pc_offset = 16u * p, .stall_reason_index = {}, .samples = {},
                         .correlation_id = 0};
      for (uint32_t r = 0; r < kNumReasons; ++r) {
        rec.stall_reason_index.push_back(r);
        rec.samples.push_back(1 + (first_launch + 3 * p + r) % 17);
        pc.total_samples += rec.samples.back();
      }
      pc.records.push_back(std::move(rec));
    }
  }
  return batch.Write(pc);
}

// The step's block, allocated or freed now (64 addresses in turn).
bool WriteBlock(SyntheticTraceBuilder& trace, long step, MemoryOperation operation) {
  return trace.writer().Write(MemoryRecord{
      .operation = operation, .memory_kind = MemoryKind::kDevice,
      .address = 0x7f0000000000 + static_cast<uint64_t>(step % 64) * (2 << 20),
      .bytes = 1 << 20, .timestamp_ns = SyntheticTraceBuilder::ToAbsolute(trace.host_now()),
      .device_id = kDeviceId, .context_id = kContextId});
}

int WriteTrace(const char* path, long rows, uint64_t pm_ns, bool pc, bool alloc) {
  SyntheticTraceOptions options;
  options.pm_interval_ns = pm_ns;
  options.force_overwrite = true;
  std::string error;
  std::unique_ptr<SyntheticTraceBuilder> trace =
      SyntheticTraceBuilder::Create(path, options, &error);
  if (trace == nullptr) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  bool written = !pc || WriteStallReasons(*trace);
  // Rows per step: 2 per launch (API call, kernel), 2 per copy and memset, 2 for the sync
  // (API call, SyncEvent) and the NVTX range.
  constexpr long kRowsPerStep = 2 * kKernelsPerStep + 2 + 2 + 2 + 1;
  KernelSpec spec;
  for (long step = 0, launched = 0; step * kRowsPerStep < rows; ++step) {
    trace->PushRange("train_step");
    if (pc) written &= WritePcBatch(*trace, launched);
    if (alloc) written &= WriteBlock(*trace, step, MemoryOperation::kAllocate);
    for (int k = 0; k < kKernelsPerStep; ++k, ++launched) {
      spec.name = KernelName(launched);
      spec.mangled_name.clear();
      spec.duration_ns = 5'000 + (launched * 7919) % 40'000;
      trace->LaunchKernel(spec);
    }
    trace->Memcpy(CopyKind::kHtoD, 1 << 20, kCopyStream, true);
    trace->Memset(1 << 16, kAuxStream);
    trace->StreamSynchronize(kComputeStream);
    if (alloc) written &= WriteBlock(*trace, step, MemoryOperation::kRelease);
    trace->PopRange();
  }
  return trace->Finish() && written ? 0 : 1;
}

int WriteJob(const char* dir, long rows, uint32_t ranks) {
  DdpJobSpec spec;
  spec.ranks = ranks;
  spec.late_rank = ranks > 1 ? 1 : -1;
  spec.late_ns = 200'000;
  // Rows per step and rank (synthetic_job.h): 2 per launch (a data-load kernel, forward,
  // backward, the optimizer), 2 per bucket's AllReduce (NCCL call, kernel), 2 for the sync
  // and 5 NVTX ranges.
  const long per_step = 2 * (2 + 2 * spec.kernels_per_phase) + 2 * spec.buckets + 2 + 5;
  spec.steps = static_cast<uint32_t>(std::max<long>(1, rows / (per_step * ranks)));
  std::error_code made;
  std::filesystem::create_directories(dir, made);
  std::string error;
  if (WriteDdpJob(spec, dir, &error).empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: warpscope_bench_trace OUT.wst ROWS [--pm-ns NS] [--pc] [--alloc]\n"
      "       warpscope_bench_trace OUT_DIR ROWS --ranks N\n";
  if (argc < 3) {
    std::fputs(usage, stderr);
    return 2;
  }
  const long rows = std::atol(argv[2]);
  uint64_t pm_ns = 0;
  bool pc = false;
  bool alloc = false;
  long ranks = 0;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--pc") == 0) {
      pc = true;
    } else if (std::strcmp(argv[i], "--alloc") == 0) {
      alloc = true;
    } else if (std::strcmp(argv[i], "--pm-ns") == 0 && i + 1 < argc) {
      pm_ns = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) {
      ranks = std::atol(argv[++i]);
    } else {
      std::fputs(usage, stderr);
      return 2;
    }
  }
  if (ranks > 0) return WriteJob(argv[1], rows, static_cast<uint32_t>(ranks));
  return WriteTrace(argv[1], rows, pm_ns, pc, alloc);
}
