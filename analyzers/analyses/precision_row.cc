// `warpscope precision`, a row of the list of analyses (analysis.h): each kernel's math class
// as the precision rule of `advise` reads it (measures/kernel_precision.h), with its GPU time,
// so that a user sees which kernels run FP32 on the SIMT cores, which already run on tensor
// cores, and which names the table does not read (unknown, never guessed).
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzers/analyses/analysis.h"
#include "analyzers/measures/kernel_name_filter.h"
#include "analyzers/measures/kernel_precision.h"

namespace warpscope {
namespace {

struct KernelRow {
  std::string name;
  KernelMathClass math;
  uint64_t launches = 0;
  uint64_t ns = 0;
};

struct ClassRow {
  uint64_t kernels = 0;
  uint64_t launches = 0;
  uint64_t ns = 0;
};

double Share(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

// Kernels of the selected devices matching the filter, by name, most GPU time first. The
// kernels are read again from the file one at a time (the model keeps none: memory grows with
// distinct names, not with launches).
absl::StatusOr<std::vector<KernelRow>> KernelRows(const TraceModel& model,
                                                  const OptionValues& values) {
  absl::StatusOr<KernelNameFilter> filter = KernelNameFilter::Create(values.Text("kernel"));
  if (!filter.ok()) return filter.status();
  const std::optional<uint32_t> device = values.Device();
  std::map<std::string, KernelRow, std::less<>> by_name;
  absl::Status read = ForEachEvent<KernelEvent>(model, [&](const KernelEvent& k) {
    if (device && k.device_id != *device) return;
    if (!filter->Matches(k.name)) return;
    auto it = by_name.find(k.name);
    if (it == by_name.end()) {
      it = by_name.emplace(std::string(k.name), KernelRow{}).first;
      it->second.name = it->first;
      it->second.math = ClassifyKernelMath(k.name);
    }
    ++it->second.launches;
    it->second.ns += k.duration_ns;
  });
  if (!read.ok()) return read;
  std::vector<KernelRow> rows;
  rows.reserve(by_name.size());
  for (auto& [name, row] : by_name) rows.push_back(std::move(row));
  std::sort(rows.begin(), rows.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.name < b.name;
  });
  return rows;
}

Report PrecisionReport(const std::vector<KernelRow>& rows, size_t top, const KernelNames& names) {
  uint64_t total = 0, known = 0, fp32 = 0, tensor = 0;
  std::map<KernelMath, ClassRow> classes;
  for (const KernelRow& r : rows) {
    total += r.ns;
    if (r.math.math != KernelMath::kUnknown) known += r.ns;
    if (IsFp32Simt(r.math.math)) fp32 += r.ns;
    if (OnTensorCores(r.math.math)) tensor += r.ns;
    ClassRow& c = classes[r.math.math];
    ++c.kernels;
    c.launches += r.launches;
    c.ns += r.ns;
  }
  Report report;
  report.scalars = {{"kernel_ns", total},
                    {"kernels", static_cast<uint64_t>(rows.size())},
                    {"classified_percent", PercentCell(Share(known, total))},
                    {"fp32_simt_percent", PercentCell(Share(fp32, total))},
                    {"tensor_core_percent", PercentCell(Share(tensor, total))}};
  report.text.push_back(
      "kernel time by the math its kernels' names say (docs/advise.md, \"Precision\"): " +
      CellText(PercentCell(Share(fp32, total)), CellKind::kReal) + "% FP32 on the SIMT cores, " +
      CellText(PercentCell(Share(tensor, total)), CellKind::kReal) +
      "% on tensor cores; the names of " +
      CellText(PercentCell(Share(known, total)), CellKind::kReal) +
      "% of it are read (the rest is unknown, never guessed)");
  Table by_class({{"math", false, CellKind::kString},
                  {"kernels", true, CellKind::kInt},
                  {"launches", true, CellKind::kInt},
                  {"total_ns", true, CellKind::kInt},
                  {"percent", true, CellKind::kReal}});
  std::vector<std::pair<KernelMath, ClassRow>> ordered(classes.begin(), classes.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  for (const auto& [math, c] : ordered) {
    by_class.AddRow({std::string(KernelMathName(math)), c.kernels, c.launches, c.ns,
                     PercentCell(Share(c.ns, total))});
  }
  Table kernels({{"kernel", false, CellKind::kString},
                 {"math", false, CellKind::kString},
                 {"scheme", false, CellKind::kString},
                 {"long_reduction", false, CellKind::kBool},
                 {"launches", true, CellKind::kInt},
                 {"total_ns", true, CellKind::kInt},
                 {"percent", true, CellKind::kReal}});
  for (size_t i = 0; i < rows.size() && (top == 0 || i < top); ++i) {
    const KernelRow& r = rows[i];
    kernels.AddRow({names.Show(r.name, false), std::string(KernelMathName(r.math.math)),
                    std::string(r.math.scheme), Cell::Bool(r.math.long_reduction), r.launches,
                    r.ns, PercentCell(Share(r.ns, total))});
  }
  report.tables.emplace_back("classes", std::move(by_class));
  report.tables.emplace_back("kernels", std::move(kernels));
  return report;
}

absl::StatusOr<AnalysisResult> RunPrecision(const AnalysisInputs& in, const OptionValues& values) {
  const TraceModel& model = *in.traces[0];
  absl::StatusOr<std::vector<KernelRow>> rows = KernelRows(model, values);
  if (!rows.ok()) return rows.status();
  AnalysisResult result;
  result.report = PrecisionReport(*rows, values.Count("top"), KernelNamesOf(values, in.traces));
  if (rows->empty()) result.notices.push_back("warpscope: no kernel in the trace matches");
  return result;
}

}  // namespace

AnalysisRow PrecisionAnalysis() {
  AnalysisRow row;
  row.name = "precision";
  row.summary = "each kernel's math: FP32 SIMT, TF32/BF16/FP16/FP8 tensor core, FP64, unknown";
  row.usage = "TRACE.wst [flags]";
  row.input = AnalysisInput::kOneTrace;
  row.options = {
      KernelRegexOption(),
      KernelDeviceOption(),
      TopKernelsOption(),
      ShortNamesOption()};
  row.about =
      "The class of each kernel comes from its name, by the table advise's fp32-matrix rule "
      "uses;\na name no row reads is unknown. See docs/advise.md, \"Precision\".\n";
  row.load_options = SamplesReadAgainLoad;
  row.run = RunPrecision;
  return row;
}

}  // namespace warpscope
