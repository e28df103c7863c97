// One run of `warpscope export` in chrome, perfetto or kineto (export_run.h): checks, loading
// options and writing, shared by the CLI and the Python package.
#include "analyzers/analyses/export_run.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/export/export_chrome.h"
#include "analyzers/analyses/export/export_common.h"
#include "analyzers/analyses/export/export_kineto.h"
#include "analyzers/analyses/export/export_perfetto.h"
#include "analyzers/render/output_path.h"
#include "proto/settings/setting_error.h"

namespace warpscope {
namespace {

// The exports write a whole trace above kWholeExportBytes only when asked (--all): its JSON
// is ten times its size, more than a viewer opens.
constexpr uint64_t kWholeExportBytes = uint64_t{64} << 20;

absl::Status CheckWholeExport(const std::vector<std::string>& traces) {
  uint64_t bytes = 0;
  for (const std::string& path : traces) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) bytes += static_cast<uint64_t>(st.st_size);
  }
  if (bytes <= kWholeExportBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "export of %.0f MB of trace: the whole trace is written only when asked (over %d MB); "
      "give a slice (--step N-M, --from MS --to MS or --window K) or --all",
      static_cast<double>(bytes) / 1e6, static_cast<int>(kWholeExportBytes >> 20)));
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// One kineto file per rank goes into a directory unless one trace goes to a .json file.
bool KinetoDirectory(const ExportRequest& r) {
  return r.format == "kineto" && r.output != "-" &&
         !(r.traces.size() == 1 && absl::EndsWith(r.output, ".json"));
}

// Writes one file with `write`, closes it and says where it went.
template <typename Write>
absl::Status WriteFile(const std::string& path, Write write) {
  FileExportOutput file(path, "-o");
  absl::Status written = write(file);
  if (absl::Status closed = file.Finish(); written.ok()) written = closed;
  return written;
}

}  // namespace

std::vector<AnalysisOption> ExportOptions() {
  std::vector<AnalysisOption> options = SliceOptions();
  options.emplace_back("step-range", "", OptionKind::kText, "RANGE",
                       "the NVTX range that marks a step: --step's numbering and kineto's "
                       "ProfilerStep#N (default: a numbered or step-named range, as warpscope "
                       "job finds it)",
                       "");
  options.emplace_back("all", "", OptionKind::kSwitch, "",
                       "write the whole trace however large (chrome, perfetto, kineto)", "");
  return options;
}

absl::StatusOr<ExportRequest> ExportRequestOf(std::string format, std::string output,
                                              std::vector<std::string> traces,
                                              const OptionValues& values) {
  if (absl::Status s = values.Check(); !s.ok()) return s;
  absl::StatusOr<SliceRequest> slice = ParseSlice(values);
  if (!slice.ok()) return slice.status();
  ExportRequest r;
  r.format = std::move(format);
  r.output = std::move(output);
  r.traces = std::move(traces);
  r.slice = std::move(*slice);
  r.step_range = values.Text("step-range");
  r.all = values.Has("all") && values.Text("all") != "false";
  return r;
}

absl::Status PrepareExport(const ExportRequest& r) {
  if (r.slice.empty() && !r.all) {
    if (absl::Status s = CheckWholeExport(r.traces); !s.ok()) return s;
  }
  if (r.format == "kineto" && r.output == "-" && r.traces.size() != 1) {
    return absl::InvalidArgumentError(
        "-o - (stdout) takes the kineto export of one trace; name a directory for several");
  }
  if (KinetoDirectory(r)) {
    if (!IsDirectory(r.output) && ::mkdir(r.output.c_str(), 0777) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("-o ", QuoteValue(r.output), ": cannot create the directory (",
                       std::strerror(errno), "); choose another path"));
    }
  } else if (r.output != "-") {
    const char* example = r.format == "perfetto" ? "trace.pftrace" : "trace.json";
    if (absl::StatusOr<bool> ok = CheckOutputPath(r.output, "-o", example); !ok.ok()) {
      return ok.status();
    }
  }
  return absl::OkStatus();
}

// The exports read the events from the file kind by kind (ForEachEvent): the models hold
// what the traces define and, for Kineto's steps, NVTX ranges and NCCL calls. Each call's
// stack and launches are joined to their calls and GPU work through temporary files
// (launch_join.h); Perfetto's events are put in time order through them too (spill_sort.h).
TraceModelOptions ExportLoadOptions(const std::string& format) {
  TraceModelOptions options;
  options.index_call_stacks = false;
  if (format == "chrome" || format == "perfetto") options.keep_events = 0;
  if (format == "kineto") {
    options.keep_events = EventKindBit(EventKind::kNvtxRange) | EventKindBit(EventKind::kNcclCall);
  }
  return options;
}

absl::StatusOr<std::vector<std::string>> WriteExport(const ExportRequest& r,
                                                     const std::vector<const TraceModel*>& traces) {
  std::vector<std::string> written;
  if (r.format != "kineto") {
    absl::Status s = WriteFile(r.output, [&](ExportOutput& out) -> absl::Status {
      if (r.format == "chrome") return WriteChromeTraceJson(traces, out);
      return WritePerfettoTrace(traces, out);
    });
    if (!s.ok()) return s;
    written.push_back(r.output);
    return written;
  }
  const bool directory = KinetoDirectory(r);
  const std::vector<KinetoTraceFile> files = KinetoTraceFiles(traces);
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string path = directory ? absl::StrCat(r.output, "/", files[i].file_name) : r.output;
    absl::Status s = WriteFile(path, [&](ExportOutput& out) {
      return WriteKinetoTrace(traces, i, r.step_range, out);
    });
    if (!s.ok()) return s;
    written.push_back(path);
  }
  return written;
}

}  // namespace warpscope
