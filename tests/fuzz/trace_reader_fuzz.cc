// Fuzz entry for the trace reader and everything built on it: the columnar decoder
// (TraceColumns), the model, `info`, `summary`, `diff`, `advise` (with its HTML page),
// `timeline`, the Perfetto export, `occupancy`, `tail` and `stalls` with every renderer. Any
// bytes must give output or a clean error, never a crash, hang or sanitizer report. Used by the
// libFuzzer binary (clang, scripts/fuzz.sh) and by trace_reader_fuzz_replay (every compiler, a
// ctest).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "analyzers/analyses/advise/advise.h"
#include "analyzers/analyses/diff.h"
#include "analyzers/analyses/export/export_perfetto.h"
#include "analyzers/analyses/occupancy.h"
#include "analyzers/render/output.h"
#include "analyzers/measures/pm_attribution.h"
#include "analyzers/analyses/stalls.h"
#include "analyzers/analyses/summary.h"
#include "analyzers/analyses/tail.h"
#include "analyzers/analyses/timeline.h"
#include "analyzers/analyses/info.h"
#include "analyzers/model/trace_columns.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/model/trace_reader.h"

namespace {

using namespace warpscope;  // NOLINT: a fuzz entry, not library code

constexpr OutputFormat kFormats[] = {OutputFormat::kTable, OutputFormat::kCsv, OutputFormat::kJson};

void Summary(const TraceModel& model, bool by_name) {
  SummaryOptions options;
  if (by_name) {
    options.sort = SummarySort::kName;
    options.top = 1;
  }
  const std::vector<TraceSummary> summary = SummarizeTraces({&model}, {"fuzz"}, options);
  for (OutputFormat format : kFormats) {
    (void)RenderReport(SummaryReport(summary, options), format).value();
  }
}

void Occupancy(const PmInputs& in, const std::string& kernel_regex) {
  OccupancyReportOptions options;
  options.kernel_regex = kernel_regex;
  absl::StatusOr<OccupancyReport> report = BuildOccupancyReport(in, options);
  if (!report.ok()) return;
  for (OutputFormat format : kFormats)
    (void)RenderReport(OccupancyReportTables(*report), format).value();
}

void Tail(const PmInputs& in, const std::string& kernel_regex) {
  TailReportOptions options;
  options.kernel_regex = kernel_regex;
  options.instances = true;
  options.tail.points = 7;
  absl::StatusOr<TailReport> report = BuildTailReportFiltered(in, options);
  if (!report.ok()) return;
  for (OutputFormat format : kFormats) {
    (void)RenderReport(TailReportTables(*report, true), format).value();
  }
  (void)RenderReport(TailReportTables(*report, false), OutputFormat::kTable).value();
  if (const ActiveWarpCurve* curve = CurveToDraw(*report); curve != nullptr) {
    (void)TailSvg(*curve, *report, in.devices);
  }
}

void Stalls(const TraceModel& model, const std::string& kernel_regex) {
  for (StallView view : {StallView::kKernel, StallView::kPc, StallView::kLine}) {
    StallReportOptions options;
    options.kernel_regex = kernel_regex;
    options.view = view;
    options.top = view == StallView::kKernel ? 0 : 2;
    // A line per 16 bytes of code, without CUPTI: the aggregation is what is fuzzed here (a
    // child process runs the lookups only for traces whose cubins look like ELF images).
    options.locator = [](std::span<const uint8_t>, const std::string&,
                         uint64_t pc) -> absl::StatusOr<SassSourceLine> {
      if (pc % 3 == 2) return absl::NotFoundError("no such function");
      return SassSourceLine{"/src", "fuzz.cu", static_cast<uint32_t>(pc % 64 / 16)};
    };
    absl::StatusOr<StallReport> report = BuildStallReport({&model}, {"fuzz"}, options);
    if (!report.ok()) return;
    for (OutputFormat format : kFormats) {
      (void)RenderReport(StallReportTables(*report, view == StallView::kPc), format).value();
    }
    (void)StallReportNotes(*report);
    (void)RenderStallSvg(*report);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::FromBuffer(bytes, "fuzz");
  if (!reader.ok()) return 0;
  // The columnar decoder of the Python package reads the same bytes.
  absl::StatusOr<std::unique_ptr<TraceReader>> columns_reader = TraceReader::FromBuffer(bytes);
  absl::StatusOr<std::unique_ptr<TraceReader>> counting = TraceReader::FromBuffer(bytes);
  if (columns_reader.ok() && counting.ok()) {
    (void)TraceColumns::Decode(**columns_reader, counting->get());
  }
  // The model walks the reader itself; then the renderers touch every table.
  absl::StatusOr<TraceModel> model = TraceModel::Load(**reader);
  if (!model.ok()) return 0;
  (void)model->truncation.Describe();
  for (OutputFormat format : kFormats) (void)RenderReport(TraceInfoReport(*model), format).value();
  Summary(*model, /*by_name=*/false);
  Summary(*model, /*by_name=*/true);
  // The trace against itself and against an empty run, both ways.
  absl::StatusOr<std::unique_ptr<TraceReader>> empty_reader = TraceReader::FromBuffer("", "empty");
  for (OutputFormat format : kFormats) {
    (void)RenderReport(DiffReportTables(BuildDiffReport(*model, *model, "a", "b", {})), format)
        .value();
  }
  if (empty_reader.ok()) {
    absl::StatusOr<TraceModel> empty = TraceModel::Load(**empty_reader);
    if (empty.ok()) {
      (void)RenderReport(DiffReportTables(BuildDiffReport(*model, *empty, "a", "b", {})),
                         OutputFormat::kTable)
          .value();
      (void)RenderReport(DiffReportTables(BuildDiffReport(*empty, *model, "a", "b", {})),
                         OutputFormat::kCsv)
          .value();
    }
  }
  const AdviseReport advice = BuildAdviseReport(*model, "fuzz", {});
  for (OutputFormat format : kFormats)
    (void)RenderReport(AdviseReportTables(advice), format).value();
  (void)RenderAdviseHtml(advice, *model);
  (void)RenderTimelineSvg(*model, {});
  const TraceModel* exported[] = {&*model};
  (void)ExportPerfettoTrace(exported);

  const PmInputs in = PmInputsOf(*model);
  (void)PmDataLossNote(model->stats);
  // Without a filter; with one that matches some names; and with the first kernel's name
  // as the pattern: arbitrary bytes, often not a valid pattern.
  const std::string from_trace =
      model->kernels.empty() ? std::string("(") : std::string(model->kernels.front().name);
  for (const std::string& regex : {std::string(), std::string("[a-m]_|e$"), from_trace}) {
    Occupancy(in, regex);
    Tail(in, regex);
    Stalls(*model, regex);
  }
  return 0;
}
