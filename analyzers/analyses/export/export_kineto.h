// `warpscope export --format kineto`: each trace as the JSON that PyTorch's profiler (Kineto)
// writes, one file per rank, so that Holistic Trace Analysis and other tools made for
// PyTorch traces read warpscope traces. docs/export.md lists what is written.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_KINETO_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_KINETO_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "analyzers/analyses/export/export_common.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

struct KinetoTraceFile {
  int64_t rank = 0;
  std::string file_name;  // "rank<R>.trace.json"
  std::string json;
};

// One file per trace, in the order given. Each has distributedInfo (rank; world size from the
// launcher's variables, else the number of traces), deviceProperties, and events in Kineto's
// categories: "cuda_runtime" and "cuda_driver" (API calls), "kernel", "gpu_memcpy",
// "gpu_memset" (GPU work, pid = device, tid = stream), "user_annotation" (NVTX ranges, NCCL's
// calls, and a ProfilerStep#N range per step that steps.h finds, `step` naming the step range
// as `warpscope job --step` does), "launch_not_recorded" (a stand-in launch for GPU work whose
// launch is in no record, UnrecordedLaunches, on a row of its own per stream) and "ac2g" flows
// from each launch to its GPU work.
// Timestamps are microseconds on the time line shared by all the traces, from
// baseTimeNanoseconds (the earliest trace's wall-clock start) when every trace has one.
std::vector<KinetoTraceFile> ExportKinetoTraces(std::span<const TraceModel* const> models,
                                                std::string_view step = "");
// The files ExportKinetoTraces makes, without their text.
std::vector<KinetoTraceFile> KinetoTraceFiles(std::span<const TraceModel* const> models);
// The text of file `index` written to `out` as it is made, the trace's API calls and GPU work
// read from its file when its model was loaded without them (ForEachEvent): memory grows with
// its definitions, launches (LaunchCalls), NVTX ranges and NCCL calls, not with the rest.
// Errors: those of reading the trace file again.
absl::Status WriteKinetoTrace(std::span<const TraceModel* const> models, size_t index,
                              std::string_view step, ExportOutput& out);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_KINETO_H_
