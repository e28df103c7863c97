// Reader throughput on one core: a synthetic trace (2 M events with a CUDA-like mix:
// runtime API calls, kernels, copies, memsets, syncs, NVTX ranges) written by the fixture
// builder (tests/fixtures) to a temp file, then streamed, streamed and resolved, and loaded
// into a TraceModel. Target: >= 5 M events/s streaming and resolving. Also the NVTX GPU
// projection of the loaded model (tens of thousands of nested ranges over the API calls).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzers/measures/nvtx_projection.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/model/trace_reader.h"
#include "benchmark/benchmark.h"
#include "proto/writer/stats_table.h"
#include "tests/fixtures/synthetic_trace.h"

namespace warpscope {
namespace {

using fixtures::KernelSpec;
using fixtures::kComputeStream;
using fixtures::kCopyStream;
using fixtures::SyntheticTraceBuilder;
using fixtures::SyntheticTraceOptions;

constexpr int kEvents = 2'000'000;
constexpr int kKernelNames = 500;
constexpr int kApiNames = 40;
constexpr int kLaunchConfigs = 200;

// Kernel names as long as PyTorch's; launch shapes `i` of kLaunchConfigs.
KernelSpec BenchKernel(uint64_t name, uint64_t duration_ns, uint32_t stream) {
  KernelSpec k;
  k.name = absl::StrCat("void at::native::elementwise_kernel<128, 4, ", name,
                        ">(int, at::native::gpu_kernel_impl_nocast<at::native::FillFunctor>)");
  k.grid_x = static_cast<uint32_t>(64 * (1 + name % kLaunchConfigs));
  k.block_x = 128;
  k.registers_per_thread = 32;
  k.static_shared_memory = 4096;
  k.duration_ns = duration_ns;
  k.stream = stream;
  return k;
}

// One randomly chosen CUDA call (with its GPU record) or an NVTX push or pop, in the mix of a
// PyTorch process: mostly kernel launches, some copies, memsets, syncs and NVTX ranges.
void OneStep(SyntheticTraceBuilder& b, std::mt19937_64& rng, int* depth) {
  b.HostIdle(200 + rng() % 800);
  const int kind = static_cast<int>(rng() % 100);
  if (kind < 60) {
    b.LaunchKernel(BenchKernel(rng() % kKernelNames, 1000 + rng() % 100000,
                               kComputeStream + static_cast<uint32_t>(rng() % 4)));
  } else if (kind < 75) {
    b.Memcpy(CopyKind::kHtoD, uint64_t{1} << (10 + rng() % 14), kCopyStream, /*async=*/true);
  } else if (kind < 85) {
    b.Memset(1 << 20, kComputeStream);
  } else if (kind < 95) {
    if (*depth < 3 && rng() % 2 == 0) {
      b.PushRange(absl::StrCat("cudaRuntimeApiNumber", rng() % kApiNames));
      ++*depth;
    } else if (*depth > 0) {
      b.PopRange();
      --*depth;
    }
  } else {
    b.StreamSynchronize(kComputeStream);
  }
}

// Writes the trace with the fixture builder until it holds kEvents events.
void WriteTrace(const std::string& path) {
  SyntheticTraceOptions options;
  options.seed = 42;
  options.pm_interval_ns = 0;  // The reader, not PM sampling, is measured.
  options.producer = "bench:reader";
  options.force_overwrite = true;
  std::string error;
  auto b = SyntheticTraceBuilder::Create(path, options, &error);
  if (b == nullptr) {
    std::fprintf(stderr, "%s\n", error.c_str());
    std::exit(1);
  }
  std::mt19937_64 rng(42);
  int depth = 0;
  while (b->writer().Counter(stats::kWriterEventsWritten.name) < static_cast<uint64_t>(kEvents)) {
    OneStep(*b, rng, &depth);
  }
  if (!b->Finish()) {
    std::fprintf(stderr, "reader_bench: the trace lost records\n");
    std::exit(1);
  }
}

// The trace, written once per process to a temp file that is removed at exit.
const std::string& TracePath() {
  static const std::string* path = [] {
    auto* p = new std::string(absl::StrCat("/tmp/warpscope_reader_bench_", getpid(), ".wst"));
    WriteTrace(*p);
    std::fprintf(stderr, "reader_bench: %s, %d events\n", p->c_str(), kEvents);
    std::atexit([] { std::remove(TracePath().c_str()); });
    return p;
  }();
  return *path;
}

void SetCounters(benchmark::State& state, uint64_t packets) {
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(kEvents) * state.iterations(),
                                                  benchmark::Counter::kIsRate);
  state.counters["packets"] = static_cast<double>(packets);
}

// Frames and parses every packet.
void BM_ReadPackets(benchmark::State& state) {
  const std::string& path = TracePath();
  uint64_t packets = 0;
  for (auto _ : state) {
    std::unique_ptr<TraceReader> reader = std::move(TraceReader::Open(path).value());
    packets = 0;
    while (const v1::TracePacket* p = reader->Next().value()) {
      benchmark::DoNotOptimize(p);
      ++packets;
    }
  }
  SetCounters(state, packets);
}
BENCHMARK(BM_ReadPackets)->Unit(benchmark::kMillisecond)->UseRealTime();

// What a streaming analysis does: parse, then resolve names, launch configs and threads.
void BM_ReadAndResolve(benchmark::State& state) {
  const std::string& path = TracePath();
  uint64_t packets = 0;
  for (auto _ : state) {
    std::unique_ptr<TraceReader> reader = std::move(TraceReader::Open(path).value());
    packets = 0;
    size_t resolved = 0;
    while (const v1::TracePacket* p = reader->Next().value()) {
      ++packets;
      switch (p->data_case()) {
        case v1::TracePacket::kKernel: {
          resolved += reader->strings().Get(p->kernel().name_id()).size();
          const v1::LaunchConfig* c = reader->FindLaunchConfig(p->kernel().launch_config_id());
          resolved += c != nullptr ? c->grid_x() : 0;
          break;
        }
        case v1::TracePacket::kApiCall:
          resolved += reader->strings().Get(p->api_call().name_id()).size();
          resolved += reader->FindThread(p->api_call().thread_id()) != nullptr;
          break;
        case v1::TracePacket::kNvtxRange:
          resolved += reader->strings().Get(p->nvtx_range().name_id()).size();
          break;
        default:
          break;
      }
    }
    benchmark::DoNotOptimize(resolved);
  }
  SetCounters(state, packets);
}
BENCHMARK(BM_ReadAndResolve)->Unit(benchmark::kMillisecond)->UseRealTime();

// The whole model: every event converted to a plain struct with names resolved.
void BM_LoadModel(benchmark::State& state) {
  const std::string& path = TracePath();
  uint64_t packets = 0;
  for (auto _ : state) {
    absl::StatusOr<TraceModel> model = TraceModel::Load(path);
    packets = model->packet_count;
    benchmark::DoNotOptimize(model->kernels.data());
  }
  SetCounters(state, packets);
}
BENCHMARK(BM_LoadModel)->Unit(benchmark::kMillisecond)->UseRealTime();

// NVTX GPU projection of the loaded model (the model is loaded once, outside the timing).
void ProjectNvtx(benchmark::State& state, bool work_by_name) {
  static const TraceModel* model = new TraceModel(TraceModel::Load(TracePath()).value());
  NvtxProjectionOptions options;
  options.work_by_name = work_by_name;
  uint64_t gpu_ns = 0;
  for (auto _ : state) {
    const NvtxProjection p = ProjectNvtxRanges(*model, options);
    gpu_ns = 0;
    for (const NvtxRangeGroup& g : p.groups) gpu_ns += g.gpu_time_ns;
    benchmark::DoNotOptimize(gpu_ns);
  }
  SetCounters(state, model->packet_count);
  state.counters["ranges"] = static_cast<double>(model->nvtx_ranges.size());
}
void BM_NvtxProjection(benchmark::State& state) { ProjectNvtx(state, false); }
BENCHMARK(BM_NvtxProjection)->Unit(benchmark::kMillisecond)->UseRealTime();
// With the per-range kernel breakdown (`summary --report nvtx-kernels`).
void BM_NvtxProjectionByKernel(benchmark::State& state) { ProjectNvtx(state, true); }
BENCHMARK(BM_NvtxProjectionByKernel)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace warpscope

BENCHMARK_MAIN();
