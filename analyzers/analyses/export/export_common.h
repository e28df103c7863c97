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
// of the API call with `correlation_id`, into an open JSON object; nothing when the call has
// no recorded stack. Trace viewers show them on click.
void WriteCallStackArgs(JsonWriter& json, const TraceModel& model, uint32_t correlation_id);

// The API call that launched each correlation id (a runtime call rather than the driver call
// beneath it when both were traced): what a flow from a launch to its GPU work needs. The GPU
// work may come before or after its launch in the file, so the table is made before any GPU
// work is written, from one read of the API calls (from the file when the model did not keep
// them). It holds 24 bytes per API call with a correlation id: the one part of the streaming
// exports that grows with events.
class LaunchCalls {
 public:
  struct Call {
    uint64_t start_ns = 0;
    uint64_t thread_id = 0;
    uint32_t correlation_id = 0;
    uint32_t index : 31 = 0;  // in model.api_calls, in file order
    uint32_t runtime : 1 = 0;
  };
  static absl::StatusOr<LaunchCalls> Of(const TraceModel& model);
  // The launching call of `correlation_id`; nullptr when no API call has it.
  const Call* Find(uint32_t correlation_id) const;

 private:
  std::vector<Call> calls_;  // by correlation id, the runtime call first
};

// Stand-ins for the launches that no record of the trace holds: GPU work launched through the
// driver API while only the runtime API was traced (cuBLASLt and cutlass GEMMs, Triton, NCCL
// without its calls), for the formats whose readers drop GPU work without a launch (HTA reads
// only work whose launch is in the file, once the file has steps). One per correlation id,
// placed on the host's time line by launch_times.h's rule (the one the job view counts steps
// by), from the kernels whose launch `known` gives. Made, like LaunchCalls, before any GPU work
// is written, from one read of the kernels, copies and memsets; it holds 16 bytes per kernel
// with a known launch (while it is made) and 24 per GPU work without one.
class UnrecordedLaunches {
 public:
  struct Launch {
    uint32_t correlation_id = 0;
    uint32_t device_id = 0;  // where the work ran (the earliest placed, when several share it)
    uint32_t stream_id = 0;
    bool at_start = false;  // PlacedLaunch::at_start: no known launch before it on its stream
    uint64_t ns = 0;        // trace time
  };
  // `known(correlation_id)`: the host time of the recorded launch with that id, or nullopt.
  static absl::StatusOr<UnrecordedLaunches> Of(
      const TraceModel& model, const std::function<std::optional<uint64_t>(uint32_t)>& known);
  // The stand-in for `correlation_id`; nullptr when its launch was recorded.
  const Launch* Find(uint32_t correlation_id) const;
  // By correlation id.
  const std::vector<Launch>& launches() const { return launches_; }

 private:
  std::vector<Launch> launches_;
};

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
