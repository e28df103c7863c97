// Reader throughput on one core: a synthetic trace (2 M events with a CUDA-like mix:
// runtime API calls, kernels, copies, memsets, syncs, NVTX ranges) built with the
// generated classes, written to a temp file, then streamed, streamed and resolved, and
// loaded into a TraceModel. Target: >= 5 M events/s streaming and resolving. Also the NVTX
// GPU projection of the loaded model (100 k overlapping ranges over 800 k API calls).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/nvtx_projection.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/model/trace_reader.h"
#include "benchmark/benchmark.h"

namespace warpscope {
namespace {

constexpr int kEvents = 2'000'000;
constexpr int kKernelNames = 500;
constexpr int kApiNames = 40;
constexpr int kLaunchConfigs = 200;

// Appends one framed packet (tag 1, length-delimited) as the writer does.
void Append(const v1::TracePacket& packet, std::string* out) {
  const std::string bytes = packet.SerializeAsString();
  out->push_back('\x0a');
  uint64_t n = bytes.size();
  while (n >= 0x80) {
    out->push_back(static_cast<char>(n | 0x80));
    n >>= 7;
  }
  out->push_back(static_cast<char>(n));
  out->append(bytes);
}

std::string BuildTrace() {
  std::string out;
  v1::TracePacket p;
  v1::Header* h = p.mutable_header();
  h->set_format_major(1);
  h->set_producer("bench:reader");
  h->set_clock_domain(v1::CLOCK_DOMAIN_SYNTHETIC);
  Append(p, &out);
  p.Clear();
  p.mutable_device()->set_name("NVIDIA H200");
  p.mutable_device()->set_sm_count(132);
  Append(p, &out);
  for (int t = 1; t <= 8; ++t) {
    p.Clear();
    p.mutable_thread()->set_id(t);
    p.mutable_thread()->set_os_tid(1000 + t);
    Append(p, &out);
  }
  uint64_t next_id = 1;
  const uint64_t api_base = next_id;
  for (int i = 0; i < kApiNames; ++i) {
    p.Clear();
    p.mutable_interned_string()->set_id(next_id++);
    p.mutable_interned_string()->set_value(absl::StrCat("cudaRuntimeApiNumber", i));
    Append(p, &out);
  }
  const uint64_t kernel_base = next_id;
  for (int i = 0; i < kKernelNames; ++i) {
    p.Clear();
    p.mutable_interned_string()->set_id(next_id++);
    p.mutable_interned_string()->set_value(
        absl::StrCat("void at::native::elementwise_kernel<128, 4, ", i,
                     ">(int, at::native::gpu_kernel_impl_nocast<at::native::FillFunctor>)"));
    Append(p, &out);
  }
  for (int i = 1; i <= kLaunchConfigs; ++i) {
    p.Clear();
    v1::LaunchConfig* c = p.mutable_launch_config();
    c->set_id(i);
    c->set_grid_x(64 * i);
    c->set_grid_y(1);
    c->set_grid_z(1);
    c->set_block_x(128);
    c->set_block_y(1);
    c->set_block_z(1);
    c->set_registers_per_thread(32);
    c->set_static_shared_memory(4096);
    Append(p, &out);
  }
  std::mt19937_64 rng(42);
  uint64_t t = 1'000'000;
  uint32_t correlation = 1;
  for (int i = 0; i < kEvents; ++i) {
    p.Clear();
    t += 200 + rng() % 800;
    const int kind = static_cast<int>(rng() % 100);
    if (kind < 40) {
      v1::ApiCallEvent* a = p.mutable_api_call();
      a->set_domain(v1::API_DOMAIN_RUNTIME);
      a->set_name_id(api_base + rng() % kApiNames);
      a->set_start_ns(t);
      a->set_duration_ns(2000 + rng() % 3000);
      a->set_thread_id(1 + rng() % 8);
      a->set_correlation_id(correlation++);
      a->set_callback_id(211);
    } else if (kind < 75) {
      v1::KernelEvent* k = p.mutable_kernel();
      const uint64_t name = rng() % kKernelNames;
      k->set_name_id(kernel_base + name);
      k->set_launch_config_id(1 + name % kLaunchConfigs);
      k->set_start_ns(t);
      k->set_duration_ns(1000 + rng() % 100000);
      k->set_device_id(0);
      k->set_context_id(1);
      k->set_stream_id(7 + rng() % 4);
      k->set_correlation_id(correlation);
      k->set_grid_id(i);
    } else if (kind < 85) {
      v1::MemcpyEvent* c = p.mutable_memcpy();
      c->set_copy_kind(v1::COPY_KIND_HTOD);
      c->set_src_kind(v1::MEMORY_KIND_PINNED);
      c->set_dst_kind(v1::MEMORY_KIND_DEVICE);
      c->set_bytes(1 << (10 + rng() % 14));
      c->set_start_ns(t);
      c->set_duration_ns(1000 + rng() % 50000);
      c->set_context_id(1);
      c->set_stream_id(7);
      c->set_correlation_id(correlation);
      c->set_is_async(true);
    } else if (kind < 90) {
      v1::MemsetEvent* s = p.mutable_memset();
      s->set_bytes(1 << 20);
      s->set_start_ns(t);
      s->set_duration_ns(900);
      s->set_context_id(1);
      s->set_stream_id(7);
      s->set_correlation_id(correlation);
    } else if (kind < 95) {
      v1::NvtxRangeEvent* r = p.mutable_nvtx_range();
      r->set_name_id(api_base + rng() % kApiNames);
      r->set_start_ns(t);
      r->set_duration_ns(100000);
      r->set_thread_id(1);
      r->set_end_thread_id(1);
      r->set_is_push_pop(true);
      r->set_depth(rng() % 3);
    } else {
      v1::SyncEvent* s = p.mutable_synchronization();
      s->set_kind(v1::SYNC_KIND_STREAM);
      s->set_start_ns(t);
      s->set_duration_ns(50000);
      s->set_context_id(1);
      s->set_stream_id(7);
      s->set_correlation_id(correlation);
      s->set_thread_id(1);
    }
    Append(p, &out);
  }
  p.Clear();
  p.mutable_end_of_trace()->set_reason(v1::END_REASON_EXIT);
  Append(p, &out);
  return out;
}

// The trace, written once per process to a temp file that is removed at exit.
const std::string& TracePath() {
  static const std::string* path = [] {
    auto* p = new std::string(absl::StrCat("/tmp/warpscope_reader_bench_", getpid(), ".wst"));
    const std::string bytes = BuildTrace();
    std::ofstream(*p, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::fprintf(stderr, "reader_bench: %s, %zu bytes, %d events\n", p->c_str(), bytes.size(),
                 kEvents);
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
