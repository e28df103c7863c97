// TraceColumns: a trace decoded into typed columns, one table per kind of event, in one pass
// over the file without building a TraceModel: the fast path of the Python package's
// to_dataframes (python/src/native_columns.cc hands the columns to numpy without a copy).
#ifndef WARPSCOPE_ANALYZERS_MODEL_TRACE_COLUMNS_H_
#define WARPSCOPE_ANALYZERS_MODEL_TRACE_COLUMNS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/model/trace_reader.h"

namespace warpscope {

// Column storage: large buffers ask the kernel for huge pages, so that filling a column
// of millions of rows takes a few hundred page faults instead of hundreds of thousands.
void* AllocateColumnBytes(size_t bytes);
void FreeColumnBytes(void* p);
template <typename T>
struct ColumnAllocator {
  using value_type = T;
  ColumnAllocator() = default;
  template <typename U>
  ColumnAllocator(const ColumnAllocator<U>&) {}  // NOLINT: allocators convert implicitly
  T* allocate(size_t n) { return static_cast<T*>(AllocateColumnBytes(n * sizeof(T))); }
  void deallocate(T* p, size_t) { FreeColumnBytes(p); }
  bool operator==(const ColumnAllocator&) const { return true; }
};
template <typename T>
using ColumnVector = std::vector<T, ColumnAllocator<T>>;

// One column, typed as pandas holds it: times and ids int64 (the schema's uint64 read as
// two's complement), flags as bytes, strings as codes into sorted distinct values, enums as
// their int32 values.
struct ColumnData {
  enum class Type { kInt64, kBool, kString, kEnum };
  std::string name;
  Type type = Type::kInt64;
  ColumnVector<int64_t> ints;                // kInt64
  ColumnVector<uint8_t> bools;               // kBool: 0 or 1
  ColumnVector<int32_t> codes;               // kString: index into `categories`; kEnum: the value
  std::vector<std::string_view> categories;  // kString: distinct values, sorted
  const char* enum_name = nullptr;           // kEnum: the schema's enum ("CopyKind", ...)
  // kInt64, kBool, kEnum: while every value is 0 the column stores nothing and counts them
  // here; the first other value writes them out (`stored`). Columns that stay 0 (graph ids,
  // cluster sizes, ...) are often most of a frame's bytes: handed out as `zeros` rows of
  // pages the kernel fills on first touch, they cost neither the writes nor the memory.
  size_t zeros = 0;
  bool stored = false;  // the values are in ints / bools / codes (kString: always)
  void Store() {
    switch (type) {
      case Type::kBool:
        bools.assign(zeros, 0);
        break;
      case Type::kEnum:
        codes.assign(zeros, 0);
        break;
      default:
        ints.assign(zeros, 0);
    }
    zeros = 0;
    stored = true;
  }
};

// A frame of events: `rows` rows, the same in every column.
struct FrameColumns {
  std::string name;  // the key of to_dataframes ("kernels", "api", ...)
  size_t rows = 0;
  std::vector<ColumnData> columns;
};

// The tables of few rows (descriptions, samples, window edges, call stacks), as the model
// holds them.
struct SampleTables {
  std::vector<DeviceInfo> devices;  // every description, in file order
  std::vector<ContextInfo> contexts;
  std::vector<PmMetricSet> pm_metric_sets;
  std::vector<PmSample> pm_samples;
  std::vector<PcStallReasons> pc_stall_reasons;
  std::vector<PcSampleBatch> pc_sample_batches;
  std::vector<CaptureWindowRange> capture_windows;
  std::vector<StackFrameInfo> stack_frames;  // by id, the last definition of each
  std::vector<CallStackInfo> call_stacks;    // by id, the last definition of each
};

struct TraceColumns {
  // Reads `path` in one pass. Fails as TraceModel::Load fails (TraceReader's errors), with
  // the same messages. A trace holding raw PM samples (PmCounterData) is read whole and
  // `needs_model` is set: its small tables, import counters and stats are then TraceModel's,
  // which evaluates those samples (CUPTI's host API).
  static absl::StatusOr<TraceColumns> Decode(const std::string& path);
  // The same from `reader`, just opened (nothing read past the header); `counting`, another
  // reader of the same bytes, sizes the columns beforehand (without it they grow as read).
  static absl::StatusOr<TraceColumns> Decode(TraceReader& reader, TraceReader* counting);
  // Reads `path` as Decode does, but hands the event frames and the samples read since the
  // last chunk (`samples.pm_samples` and `samples.pc_sample_batches`, with every table defined
  // so far) to `take` each time the events and PM samples make `chunk_rows` rows together, and
  // once more at the end when rows are left; then starts them again empty, so that memory
  // holds one chunk of events and samples (the Parquet export writes each as row groups). The
  // last PC batch read waits for the next chunk, whole with the continuations still to come.
  // `take` may move the columns out; false stops the reading (Cancelled). The TraceColumns
  // returned holds the other small tables, the counters, and frames and samples of no rows.
  // With `needs_model` set, a TraceModel's PM samples replace the ones handed out.
  using ChunkSink =
      std::function<bool(std::vector<FrameColumns>& frames, const SampleTables& samples)>;
  static absl::StatusOr<TraceColumns> DecodeInChunks(const std::string& path, size_t chunk_rows,
                                                     const ChunkSink& take);

  // kernels, api, nvtx_ranges, nvtx_marks, nccl_calls, api_stacks, memcpy, memset, memory, sync,
  // graph_launches, overhead.
  std::vector<FrameColumns> frames;
  SampleTables samples;
  bool needs_model = false;

  // The import counters TraceModel counts (same names), but for the time-span and
  // value-range ones, which the Python package does not show.
  std::vector<StatCounter> import_counters;
  std::vector<StatCounter> stats;  // of the last Stats packet
  bool stats_final = false;
  bool complete = false;  // an EndOfTrace packet was read
  TruncationInfo truncation;

  // What the string_views above point into.
  std::shared_ptr<InternedStrings> strings;
  std::unique_ptr<std::deque<std::string>> owned = std::make_unique<std::deque<std::string>>();

 private:
  // Decode's pass; with `take`, in chunks of `chunk_rows` rows (DecodeInChunks).
  static absl::StatusOr<TraceColumns> DecodeFrom(TraceReader& reader, TraceReader* counting,
                                                 size_t chunk_rows, const ChunkSink* take);
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_TRACE_COLUMNS_H_
