// What the export formats (Chrome trace-event JSON, Perfetto protobuf, Kineto JSON) and the
// timeline picture share: which rank each trace is, how it is labelled, the offset that puts
// several traces on one time line, and how slices that overlap are stacked.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_COMMON_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_COMMON_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

class JsonWriter;  // analyzers/render/output.h

struct ExportedTrace {
  const TraceModel* model = nullptr;
  int64_t rank = 0;    // RANK (or a launcher's equivalent) from the header, else the position
  std::string label;   // "rank 0: host (pid 123)"
  // Added to the trace's times (ns since its time 0) so that traces recorded together share
  // one time line: each trace's wall-clock start minus the earliest one's. 0 for every trace
  // when one of them lacks a wall-clock start (Header.unix_time_base_ns).
  uint64_t offset_ns = 0;
};

// The traces in the order given, with ranks, labels and offsets filled in.
std::vector<ExportedTrace> PrepareExport(std::span<const TraceModel* const> models);

// Nanoseconds as exact microseconds ("12.345"), the unit of trace-event timestamps.
std::string TraceEventMicros(uint64_t ns);

// The args `call_site` ("train.py:57 train_step") and `stack` (every frame, innermost first)
// of an API call whose recorded stack has `stack_id` (LaunchJoin::StackOf), into an open JSON
// object; nothing when the call has no recorded stack. Trace viewers show them on click.
void WriteCallStackArgs(JsonWriter& json, const TraceModel& model,
                        std::optional<uint64_t> stack_id);

// Where an export's bytes go as they are made: a string (tests) or a file written piece by
// piece, so that the output of a large trace is never held whole.
class ExportOutput {
 public:
  virtual ~ExportOutput() = default;
  virtual void Write(std::string_view bytes) = 0;
};
class StringExportOutput : public ExportOutput {
 public:
  void Write(std::string_view bytes) override { text.append(bytes); }
  std::string text;
};
// Writes to `path`, "-" for stdout. status() is the first error (opening or writing), which
// names `flag` and the path.
class FileExportOutput : public ExportOutput {
 public:
  FileExportOutput(const std::string& path, std::string_view flag);
  ~FileExportOutput() override;
  void Write(std::string_view bytes) override;
  // Closes the file (flushes stdout) and returns the first error.
  absl::Status Finish();

 private:
  void Fail();
  std::string path_;
  std::string flag_;
  std::FILE* file_ = nullptr;
  absl::Status status_;
};

// How much JSON an exporter holds before it hands it to its ExportOutput.
inline constexpr size_t kExportFlushBytes = 1 << 20;

// A slice's place on its track. Slices that nest or follow one another share lane 0, one
// row per nesting depth; a slice that overlaps another without nesting in it (two CUDA calls
// whose recorded times cross, say) goes to the first further lane where it nests. Every
// lane's slices thus nest, as Perfetto's begin/end events and the timeline's rows need.
struct SlicePlace {
  uint32_t lane = 0;   // kNoLane: more overlap than kMaxSliceLanes lanes hold; not placed
  uint32_t depth = 0;  // slices open around it on its lane
};
struct SliceInterval {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};
inline constexpr uint32_t kNoLane = ~uint32_t{0};
inline constexpr uint32_t kMaxSliceLanes = 64;
// Places parallel to `slices`. `order` receives the slices' indices in the order placed: by
// start, the longer first when two start together (the one that encloses the other).
std::vector<SlicePlace> StackSlices(std::span<const SliceInterval> slices,
                                    std::vector<uint32_t>* order);

// The PM counter values the timeline exports draw, in order: per device, GPU-wide active
// warps ("GPU D active warps", as `tail` and `occupancy` compute them) with a 0 where the
// device's samples stop, so that a gap does not read as the last value held; then every
// sampled metric ("GPU D METRIC"). Values that are not finite are left out.
void ForEachPmCounterValue(
    const TraceModel& model,
    const std::function<void(const std::string& name, uint64_t ns, double value)>& emit);

// Host thread ids as the OS knows them (ThreadInfo.os_tid) by warpscope's thread id.
class HostTids {
 public:
  explicit HostTids(const TraceModel& model);
  // The OS thread id, else warpscope's own id when the trace does not know it.
  int64_t Of(uint64_t thread_id) const;

 private:
  std::map<uint64_t, int64_t> os_tid_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_COMMON_H_
