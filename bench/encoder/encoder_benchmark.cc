// Encoder benchmark: how many records per second one thread can hand to a TraceWriter, and
// how many bytes a kernel event takes on disk, with values shaped like a real trace.
//   build/bin/warpscope_encoder_bench [--benchmark_filter=Kernel]
// Output goes to /dev/null (force-overwrite) so that the figure is the encoder's, not the
// disk's; BM_KernelToFile writes a real file under $TMPDIR to show the end-to-end rate.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {
namespace {

constexpr uint64_t kBase = 1'700'000'000'000'000'000ull;
// Events start 10 minutes into the trace: start_ns needs 6 varint bytes, as in a long run.
constexpr uint64_t kStart = kBase + 600'000'000'000ull;

// ring_ns > 0: the flight recorder's ring (256 MiB, its default cap) instead of a file.
std::unique_ptr<TraceWriter> OpenWriter(const std::string& path, bool force,
                                        uint64_t ring_ns = 0) {
  TraceWriterOptions options;
  options.path = path;
  options.force_overwrite = force;
  if (ring_ns > 0) {
    options.ring_ns = ring_ns;
    options.max_buffered_bytes = size_t{256} << 20;
  }
  HeaderRecord header;
  header.clock_domain = ClockDomain::kRealtime;
  header.time_base_ns = kBase;
  std::string error;
  auto writer = TraceWriter::Open(options, header, &error);
  if (writer == nullptr) std::abort();
  return writer;
}

struct KernelSource {
  std::vector<uint64_t> name_ids;
  std::vector<uint64_t> config_ids;
  explicit KernelSource(TraceWriter& writer) {
    for (int i = 0; i < 64; ++i) {
      name_ids.push_back(writer.InternString(
          "void at::native::vectorized_elementwise_kernel<4, functor_" + std::to_string(i) + ">"));
      config_ids.push_back(writer.InternLaunchConfig(
          LaunchConfigRecord{.grid_x = 1024u + i, .block_x = 256, .registers_per_thread = 32}));
    }
  }
  // A kernel like CUPTI reports it: ids from small tables, times advancing by a few us.
  KernelRecord Make(uint64_t i) const {
    const uint64_t start = kStart + i * 4'000;
    return KernelRecord{.name_id = name_ids[i & 63], .mangled_name_id = name_ids[(i + 1) & 63],
                        .launch_config_id = config_ids[i & 63], .start_ns = start,
                        .end_ns = start + 2'500 + (i & 1023), .device_id = 0, .context_id = 1,
                        .stream_id = 7 + static_cast<uint32_t>(i & 3),
                        .correlation_id = static_cast<uint32_t>(100'000 + i),
                        .graph_id = 0, .graph_node_id = 0, .grid_id = 50'000 + i};
  }
};

// Items are records handed to the writer. When the machine is oversubscribed the writer
// thread may not get a core for tens of ms, the 64 MiB pool fills and records are dropped
// (and counted): `dropped` says how many, and per-record sizes divide by records written.
void ReportItems(benchmark::State& state, TraceWriter& writer, uint64_t records) {
  writer.Flush();
  state.SetItemsProcessed(static_cast<int64_t>(records));
  state.counters["dropped"] =
      static_cast<double>(writer.Counter(stats::kWriterDroppedBufferFull.name));
}

void ReportBytesPer(benchmark::State& state, TraceWriter& writer, const char* counter,
                    std::string_view kind_counter, uint64_t bytes_before) {
  const double written = static_cast<double>(writer.Counter(kind_counter));
  const double bytes =
      static_cast<double>(writer.Counter(stats::kWriterBytesWritten.name) - bytes_before);
  state.counters[counter] = written > 0 ? bytes / written : 0;
}

// Collectors write a CUPTI buffer's records under one Batch: state.range(0) kernels a batch,
// as many batches as the benchmark runs. Returns the kernels written.
uint64_t WriteKernelBatches(benchmark::State& state, TraceWriter& writer) {
  KernelSource source(writer);
  const int64_t per_batch = state.range(0);
  uint64_t i = 0;
  for (auto _ : state) {
    TraceWriter::Batch batch(writer);
    for (int64_t k = 0; k < per_batch; ++k) benchmark::DoNotOptimize(batch.Write(source.Make(i++)));
  }
  return i;
}

void BM_KernelBatch(benchmark::State& state) {
  auto writer = OpenWriter("/dev/null", true);
  const uint64_t bytes_before = [&] {
    writer->Flush();
    return writer->Counter(stats::kWriterBytesWritten.name);
  }();
  ReportItems(state, *writer, WriteKernelBatches(state, *writer));
  ReportBytesPer(state, *writer, "bytes_per_kernel", "writer.events_written.kernel", bytes_before);
}
BENCHMARK(BM_KernelBatch)->Arg(1000);

// The same into the flight recorder's ring (30 s, 256 MiB): what recording costs a collector
// there. At this rate the ring fills in well under 30 s, so the oldest chunks are reused
// (evicted) too, as in a long job.
void BM_KernelBatchRing(benchmark::State& state) {
  auto writer = OpenWriter("/tmp/warpscope_encoder_bench_ring.wst", true, 30'000'000'000ull);
  ReportItems(state, *writer, WriteKernelBatches(state, *writer));
  state.counters["evicted"] =
      static_cast<double>(writer->Counter(stats::kWriterRingEvictedEvents.name));
}
BENCHMARK(BM_KernelBatchRing)->Arg(1000);

// One lock per record: TraceWriter::Write.
void BM_KernelSingle(benchmark::State& state) {
  auto writer = OpenWriter("/dev/null", true);
  KernelSource source(*writer);
  uint64_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(writer->Write(source.Make(i++)));
  ReportItems(state, *writer, i);
}
BENCHMARK(BM_KernelSingle);

// A collector that interns the (long, templated) name of every kernel instead of caching ids.
void BM_KernelInternEach(benchmark::State& state) {
  auto writer = OpenWriter("/dev/null", true);
  KernelSource source(*writer);
  std::vector<std::string> names;
  names.reserve(64);
  for (int k = 0; k < 64; ++k) {
    names.push_back("void at::native::vectorized_elementwise_kernel<4, functor_" +
                    std::to_string(k) + ">");
  }
  uint64_t i = 0;
  for (auto _ : state) {
    TraceWriter::Batch batch(*writer);
    for (int k = 0; k < 1000; ++k, ++i) {
      KernelRecord r = source.Make(i);
      r.name_id = batch.InternString(names[i & 63]);
      benchmark::DoNotOptimize(batch.Write(r));
    }
  }
  ReportItems(state, *writer, i);
}
BENCHMARK(BM_KernelInternEach);

// Events of one host thread made by `make(i, thread)`, 1000 to a batch, after the
// definitions are flushed: items per second and the bytes each event adds (`bytes_label`).
template <typename MakeRecord>
void WriteThreadEvents(benchmark::State& state, TraceWriter& writer, const MakeRecord& make,
                       const char* bytes_label, std::string_view events_counter) {
  const uint64_t thread = writer.InternThread(0x7f00aa001700ull, 4242, "main");
  writer.Flush();
  const uint64_t bytes_before = writer.Counter(stats::kWriterBytesWritten.name);
  uint64_t i = 0;
  for (auto _ : state) {
    TraceWriter::Batch batch(writer);
    for (int k = 0; k < 1000; ++k, ++i) benchmark::DoNotOptimize(batch.Write(make(i, thread)));
  }
  ReportItems(state, writer, i);
  ReportBytesPer(state, writer, bytes_label, events_counter, bytes_before);
}

void BM_ApiBatch(benchmark::State& state) {
  auto writer = OpenWriter("/dev/null", true);
  const uint64_t name = writer->InternString("cudaLaunchKernel");
  auto make = [&](uint64_t i, uint64_t thread) {
    const uint64_t start = kStart + i * 4'000;
    return ApiCallRecord{.domain = ApiDomain::kRuntime, .name_id = name, .start_ns = start,
                         .end_ns = start + 3'300, .thread_id = thread,
                         .correlation_id = static_cast<uint32_t>(100'000 + i), .result = 0,
                         .callback_id = 211};
  };
  WriteThreadEvents(state, *writer, make, "bytes_per_api", "writer.events_written.api_call");
}
BENCHMARK(BM_ApiBatch);

void BM_NvtxRangeBatch(benchmark::State& state) {
  auto writer = OpenWriter("/dev/null", true);
  const uint64_t names[] = {writer->InternString("forward"), writer->InternString("backward"),
                            writer->InternString("optimizer")};
  auto make = [&](uint64_t i, uint64_t thread) {
    const uint64_t start = kStart + i * 40'000;
    return NvtxRangeRecord{.name_id = names[i % 3], .domain_id = 0, .category = 0, .color = 0,
                           .start_ns = start, .end_ns = start + 35'000, .thread_id = thread,
                           .end_thread_id = thread, .is_push_pop = true, .depth = 1};
  };
  WriteThreadEvents(state, *writer, make, "bytes_per_range", "writer.events_written.nvtx_range");
}
BENCHMARK(BM_NvtxRangeBatch);

// End to end into a real file: bounded by the disk once the 64 MiB pool is full.
void BM_KernelToFile(benchmark::State& state) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/warpscope_encoder_bench.wst";
  {
    auto writer = OpenWriter(path, true);
    KernelSource source(*writer);
    uint64_t i = 0;
    for (auto _ : state) {
      TraceWriter::Batch batch(*writer);
      for (int k = 0; k < 1000; ++k) benchmark::DoNotOptimize(batch.Write(source.Make(i++)));
    }
    ReportItems(state, *writer, i);
  }
  unlink(path.c_str());
}
BENCHMARK(BM_KernelToFile);

}  // namespace
}  // namespace warpscope

BENCHMARK_MAIN();
