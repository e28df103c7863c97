// Builds and renders the stall report (see stall_report.h and docs/cli.md#stalls).
//
// The `_not_issued` variants: each CUPTI stall reason comes twice, `X` and `X_not_issued`. As
// in the activity API's PC sampling record ("samples ... includes latencySamples") and in
// Nsight Compute's source view (an "All Samples" column next to a "Not-issued Samples" one),
// the `_not_issued` count is read as the part of `X`'s samples in which the scheduler issued no
// instruction, not as further samples. So the warp-state shares use `X` alone (every sample
// of the state, issued or not, as Nsight Compute's warp state breakdown does) and the
// `_not_issued` samples are only summed into their own column; adding them would count those
// samples twice.
#include "analyzers/analyses/stall_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"
#include "analyzers/analyses/kernel_name_filter.h"
#include "analyzers/render/svg.h"
#include "collectors/activity/kernel_names.h"

namespace warpscope {
namespace {

struct StateAdvice {
  std::string_view state;
  std::string_view advice;
};

// Nsight Compute's warp states (its "Warp State Statistics" names, lower case), most common
// first. One sentence each: what the warp is waiting for, then what usually helps.
constexpr StateAdvice kStateAdvice[] = {
    {"long_scoreboard",
     "waiting for a global or local memory (L1TEX) result: improve locality and coalescing, "
     "prefetch or stage reused data in shared memory, or run more warps to hide the latency"},
    {"barrier",
     "waiting at __syncthreads() or another block barrier for the slowest warps: balance the "
     "work done before barriers, or use fewer of them"},
    {"wait",
     "waiting out a fixed-latency dependency (an arithmetic result needed right away): give "
     "each warp more independent instructions (ILP) or run more warps"},
    {"math_pipe_throttle",
     "a math pipe (FMA, ALU, FP64, tensor) is busy: the kernel is bound by that pipe; move work "
     "to another pipe or a lower precision, or accept it as the limit"},
    {"short_scoreboard",
     "waiting for a shared memory or special-function (sqrt, exp, rcp) result: remove shared "
     "memory bank conflicts and use cheaper math where precision allows"},
    {"mio_throttle",
     "the memory input/output queue (shared memory, special math, dynamic branches) is full: "
     "issue fewer, wider shared memory accesses and avoid bank conflicts"},
    {"lg_throttle",
     "the local/global memory instruction queue is full: use wider (vectorized) loads and "
     "stores, fewer separate accesses, and avoid register spills to local memory"},
    {"tex_throttle",
     "the texture pipe (L1TEX) queue is full: issue fewer texture or surface fetches, or "
     "interleave them with other work"},
    {"not_selected",
     "ready, but the scheduler issued another warp: there is enough work to issue every cycle, "
     "so this is rarely a problem"},
    {"selected",
     "the warp issued an instruction: useful work; its share is the issue rate, and its inverse "
     "the cycles per issued instruction"},
    {"no_instruction",
     "waiting for instructions (an instruction cache miss, often after a jump): shrink hot "
     "code (less unrolling or inlining) or give the SM fewer distinct kernels at once"},
    {"branch_resolving",
     "waiting for a branch target or predicate to resolve: make branches uniform across the "
     "warp, or replace short branches with predication"},
    {"dispatch_stall",
     "the picked instruction could not be dispatched (a pipeline conflict): rarely large; "
     "usually nothing in the code to change"},
    {"drain",
     "the warp has finished and waits for its memory writes to drain: normal at the end of a "
     "kernel, large when the last stores are scattered (coalesce them)"},
    {"imc_miss",
     "waiting on an immediate constant cache miss (__constant__ data or kernel parameters): "
     "keep constant data small and index it uniformly across the warp"},
    {"membar",
     "waiting at a memory fence (__threadfence and similar): fence less often, or with a "
     "narrower scope (block instead of GPU)"},
    {"sleeping",
     "the warp is sleeping (__nanosleep) or all its threads are blocked: check spin-wait and "
     "backoff loops"},
    {"misc",
     "a reason the hardware does not break down further: rarely actionable"},
};

constexpr std::string_view kPrefixes[] = {"smsp__pcsamp_warps_issue_stalled_",
                                          "smsp__pcsamp_warps_issue_", "smsp__pcsamp_"};
constexpr std::string_view kNotIssuedSuffix = "_not_issued";

template <typename Map>
std::vector<StallShare> Ranked(const Map& samples_by_state, uint64_t total) {
  std::vector<StallShare> out;
  for (const auto& [state, samples] : samples_by_state) {
    out.push_back({state, samples, total > 0 ? static_cast<double>(samples) / total : 0.0});
  }
  std::stable_sort(out.begin(), out.end(), [](const StallShare& a, const StallShare& b) {
    return a.samples > b.samples;
  });
  return out;
}

struct PcAcc {
  uint64_t samples = 0;
  std::string_view function;  // mangled; a view into the trace model
  std::map<std::string, uint64_t> by_state;
};

struct LineAcc {
  uint64_t samples = 0, pcs = 0;
  std::map<std::string, uint64_t> by_state;
};

// The text of source lines, read once per file: from the recorded path, else by the file's
// name in each of `dirs`.
class SourceText {
 public:
  explicit SourceText(const std::vector<std::string>& dirs) : dirs_(dirs) {}

  std::string Line(const std::string& path, uint32_t line) {
    auto [it, inserted] = files_.try_emplace(path);
    if (inserted) it->second = Load(path);
    if (line == 0 || line > it->second.size()) return "";
    return it->second[line - 1];
  }

 private:
  std::vector<std::string> Load(const std::string& path) const {
    std::vector<std::string> candidates = {path};
    const size_t slash = path.rfind('/');
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    for (const std::string& dir : dirs_) candidates.push_back(JoinSourcePath(dir, name));
    for (const std::string& candidate : candidates) {
      std::ifstream in(candidate);
      if (!in) continue;
      std::vector<std::string> lines;
      std::string text;
      while (lines.size() < (1u << 20) && std::getline(in, text)) {
        absl::string_view trimmed = absl::StripAsciiWhitespace(text);
        if (trimmed.size() > kMaxCode) trimmed = trimmed.substr(0, kMaxCode);
        lines.emplace_back(trimmed);
      }
      return lines;
    }
    return {};
  }

  static constexpr size_t kMaxCode = 160;
  const std::vector<std::string>& dirs_;
  std::map<std::string, std::vector<std::string>> files_;
};

std::string BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// "pc_kernels.cu:41", or with the whole path.
std::string LineText(const SourceLocation& source, bool base_name) {
  return absl::StrCat(base_name ? BaseName(source.path) : source.path, ":", source.line);
}

struct KernelAcc {
  uint64_t samples = 0, selected = 0, not_issued = 0;
  std::map<std::string, uint64_t> by_state;
  std::map<std::pair<uint64_t, uint64_t>, PcAcc> pcs;  // (pc offset, cubin crc)
};

// "1 PC", "3 PCs".
std::string Count(uint64_t n, absl::string_view noun) {
  return absl::StrCat(n, " ", noun, n == 1 ? "" : "s");
}

std::string PctText(double fraction) { return absl::StrFormat("%.1f%%", fraction * 100); }

size_t Shown(size_t available, int top) {
  return top > 0 ? std::min(available, static_cast<size_t>(top)) : available;
}

// "long_scoreboard 64.0%, barrier 20.0%".
std::string ReasonList(const std::vector<StallShare>& reasons, size_t count) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < count && i < reasons.size(); ++i) {
    parts.push_back(absl::StrCat(reasons[i].state, " ", PctText(reasons[i].fraction)));
  }
  return absl::StrJoin(parts, ", ");
}

std::string HexPc(uint64_t pc) { return absl::StrFormat("0x%x", pc); }

Cell CyclesCell(double cycles, bool text) {
  if (std::isnan(cycles)) return text ? Cell("n/a") : Cell();
  return Cell(cycles, 2);
}

}  // namespace

std::vector<std::string> StallReportNotes(const StallReport& report) {
  std::vector<std::string> notes;
  if (report.unknown_reason_samples > 0) {
    std::vector<std::string> names;
    for (uint32_t i : report.unknown_reasons) names.push_back(absl::StrCat("reason_", i));
    notes.push_back(absl::StrCat(report.unknown_reason_samples,
                                 " samples have a stall reason index the trace does not name (",
                                 absl::StrJoin(names, ", "), "); shown by index"));
  }
  if (report.dropped_samples > 0) {
    notes.push_back(absl::StrCat("CUPTI dropped ", report.dropped_samples,
                                 " samples (hardware buffer or decode could not keep up); "
                                 "shares are of the samples that arrived"));
  }
  if (report.buffer_full_batches > 0) {
    notes.push_back(absl::StrCat(report.buffer_full_batches,
                                 " reads found the hardware buffer full: raise "
                                 "WARPSCOPE_PC_BUFFER_MB or the period (docs/pc_sampling.md)"));
  }
  for (const std::string& label : report.traces_without_samples) {
    notes.push_back(absl::StrCat(label, " has no PC samples"));
  }
  if (report.source_mapped) {
    const SourceMapping& source = report.source;
    const bool listing = report.view != StallView::kKernel;
    if (source.failed > 0) {
      notes.push_back(absl::StrCat("no source line for ", Count(source.failed, "PC"), ": ",
                                   source.problem));
    }
    if (listing && source.without_line_info > 0) {
      notes.push_back(absl::StrCat(
          Count(source.without_line_info, "PC"),
          source.without_line_info == 1 ? " is" : " are",
          " in cubins without line information: build with nvcc -lineinfo to see source "
          "lines"));
    }
    if (listing && source.without_cubin > 0) {
      notes.push_back(absl::StrCat(
          Count(source.without_cubin, "PC"), source.without_cubin == 1 ? " has" : " have",
          " no cubin in the trace, so no source line (a cubin the writer dropped, or a trace "
          "without cubins)"));
    }
  }
  return notes;
}

namespace {

bool AnyLines(const StallReport& report) {
  for (const StallKernelRow& row : report.rows) {
    if (!row.lines.empty()) return true;
  }
  return false;
}

std::string RenderByPc(const StallReport& report, OutputFormat format) {
  const bool text = format == OutputFormat::kTable;
  // The source column is there whenever lines were looked up, so scripts see one layout.
  const bool source = report.source_mapped && (!text || AnyLines(report));
  std::vector<Table::Column> columns = {{"kernel"},           {"pc", true},
                                        {"samples", true},    {"kernel_pct", true},
                                        {"top_reasons"}};
  if (!text) columns.insert(columns.begin() + 2, {"cubin_crc", true});
  if (source) columns.insert(columns.begin() + 2, {"source"});
  Table table(columns);
  for (const StallKernelRow& row : report.rows) {
    for (size_t i = 0; i < Shown(row.pcs.size(), report.top); ++i) {
      const PcHotspot& pc = row.pcs[i];
      std::vector<Cell> cells;
      cells.emplace_back(ShortKernelName(row.name, text));
      cells.emplace_back(HexPc(pc.pc_offset));
      if (source) {
        cells.emplace_back(pc.source.line > 0 ? LineText(pc.source, text) : std::string());
      }
      if (!text) cells.emplace_back(HexPc(pc.cubin_crc));
      cells.emplace_back(pc.samples);
      cells.emplace_back(PercentCell(pc.fraction));
      cells.emplace_back(ReasonList(pc.reasons, 3));
      table.AddRow(std::move(cells));
    }
  }
  return table.Render(format);
}

// A row per hot line of each kernel, and one for the samples at PCs without a line.
std::string RenderByLine(const StallReport& report, OutputFormat format) {
  const bool text = format == OutputFormat::kTable;
  std::vector<Table::Column> columns = {{"kernel"},           {"line"},
                                        {"samples", true},    {"kernel_pct", true},
                                        {"pcs", true},        {"top_reasons"},
                                        {"code"}};
  if (!text) {
    columns[1] = {"file"};
    columns.insert(columns.begin() + 2, {"line", true});
  }
  Table table(columns);
  for (const StallKernelRow& row : report.rows) {
    for (size_t i = 0; i < Shown(row.lines.size(), report.top); ++i) {
      const LineHotspot& line = row.lines[i];
      std::vector<Cell> cells;
      cells.emplace_back(ShortKernelName(row.name, text));
      if (text) {
        cells.emplace_back(LineText(line.source, true));
      } else {
        cells.emplace_back(line.source.path);
        cells.emplace_back(static_cast<uint64_t>(line.source.line));
      }
      cells.emplace_back(line.samples);
      cells.emplace_back(PercentCell(line.fraction));
      cells.emplace_back(line.pcs);
      cells.emplace_back(ReasonList(line.reasons, 3));
      cells.emplace_back(line.code);
      table.AddRow(std::move(cells));
    }
    if (row.unlocated_samples > 0) {
      std::vector<Cell> cells;
      cells.emplace_back(ShortKernelName(row.name, text));
      cells.emplace_back(text ? "(no source line)" : "");
      if (!text) cells.emplace_back();
      cells.emplace_back(row.unlocated_samples);
      cells.emplace_back(PercentCell(row.samples > 0 ? static_cast<double>(row.unlocated_samples) /
                                                           static_cast<double>(row.samples)
                                                     : 0.0));
      uint64_t pcs = 0;
      for (const PcHotspot& pc : row.pcs) pcs += pc.source.line == 0 ? 1 : 0;
      cells.emplace_back(pcs);
      cells.emplace_back("");
      cells.emplace_back("");
      table.AddRow(std::move(cells));
    }
  }
  return table.Render(format);
}

void WriteLineJson(const LineHotspot& line, int top, JsonWriter& json) {
  json.BeginObject();
  json.Key("file").String(line.source.path);
  json.Key("line").Uint(line.source.line);
  json.Key("samples").Uint(line.samples);
  json.Key("pct").Double(std::round(line.fraction * 10000.0) / 100.0);
  json.Key("pcs").Uint(line.pcs);
  json.Key("code").String(line.code);
  json.Key("reasons").BeginArray();
  for (size_t i = 0; i < Shown(line.reasons.size(), top); ++i) {
    json.BeginObject();
    json.Key("reason").String(line.reasons[i].state);
    json.Key("samples").Uint(line.reasons[i].samples);
    json.Key("pct").Double(std::round(line.reasons[i].fraction * 10000.0) / 100.0);
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
}

std::string RenderJson(const StallReport& report) {
  JsonWriter json;
  json.BeginArray();
  for (const StallKernelRow& row : report.rows) {
    json.BeginObject();
    json.Key("kernel").String(row.name);
    json.Key("samples").Uint(row.samples);
    json.Key("pct").Double(std::round(row.fraction * 10000.0) / 100.0);
    json.Key("selected").Uint(row.selected);
    json.Key("not_issued").Uint(row.not_issued);
    json.Key("cycles_per_issue").Double(row.cycles_per_issue);
    json.Key("reasons").BeginArray();
    for (size_t i = 0; i < Shown(row.reasons.size(), report.top); ++i) {
      const StallShare& r = row.reasons[i];
      json.BeginObject();
      json.Key("reason").String(r.state);
      json.Key("samples").Uint(r.samples);
      json.Key("pct").Double(std::round(r.fraction * 10000.0) / 100.0);
      json.Key("advice").String(StallReasonAdvice(r.state));
      json.EndObject();
    }
    json.EndArray();
    json.Key("hottest_line");
    if (row.lines.empty()) {
      json.Null();
    } else {
      WriteLineJson(row.lines.front(), 3, json);
    }
    json.Key("unlocated_samples").Uint(row.unlocated_samples);
    if (report.view == StallView::kLine) {
      json.Key("lines").BeginArray();
      for (size_t i = 0; i < Shown(row.lines.size(), report.top); ++i) {
        WriteLineJson(row.lines[i], 0, json);
      }
      json.EndArray();
    }
    json.EndObject();
  }
  json.EndArray();
  return json.str() + "\n";
}

}  // namespace

WarpStateName ParseStallReasonName(std::string_view cupti_name) {
  for (std::string_view prefix : kPrefixes) {
    if (cupti_name.starts_with(prefix)) {
      cupti_name.remove_prefix(prefix.size());
      break;
    }
  }
  WarpStateName out;
  out.not_issued = cupti_name.ends_with(kNotIssuedSuffix);
  if (out.not_issued) cupti_name.remove_suffix(kNotIssuedSuffix.size());
  // CUPTI says "no_instructions" where Nsight Compute shows "no_instruction" (H200, CUPTI 13.0).
  if (cupti_name == "no_instructions") cupti_name = "no_instruction";
  out.state = std::string(cupti_name);
  return out;
}

std::string_view StallReasonAdvice(std::string_view state) {
  for (const StateAdvice& entry : kStateAdvice) {
    if (entry.state == state) return entry.advice;
  }
  return "";
}

std::vector<std::string_view> KnownWarpStates() {
  std::vector<std::string_view> states;
  for (const StateAdvice& entry : kStateAdvice) states.push_back(entry.state);
  return states;
}

double WarpCyclesPerIssue(uint64_t samples, uint64_t selected) {
  if (selected == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(samples) / static_cast<double>(selected);
}

namespace {

// Looks up the source line of every PC in the report and sums each kernel's samples per line.
void AddSourceLines(const std::vector<const TraceModel*>& traces,
                    const StallReportOptions& options, StallReport* report) {
  std::set<PcKey> unique;
  for (const StallKernelRow& row : report->rows) {
    for (const PcHotspot& pc : row.pcs) unique.insert({pc.cubin_crc, pc.function, pc.pc_offset});
  }
  report->source = MapPcsToSource(traces, {unique.begin(), unique.end()}, options.locator);
  report->source_mapped = true;
  SourceText text(options.source_dirs);
  for (StallKernelRow& row : report->rows) {
    std::map<std::pair<std::string, uint32_t>, LineAcc> by_line;
    for (PcHotspot& pc : row.pcs) {
      auto found = report->source.lines.find({pc.cubin_crc, pc.function, pc.pc_offset});
      if (found == report->source.lines.end()) {
        row.unlocated_samples += pc.samples;
        continue;
      }
      pc.source = found->second;
      LineAcc& line = by_line[{pc.source.path, pc.source.line}];
      line.samples += pc.samples;
      ++line.pcs;
      for (const StallShare& r : pc.reasons) line.by_state[r.state] += r.samples;
    }
    for (const auto& [where, line] : by_line) {
      LineHotspot hot;
      hot.source = {where.first, where.second};
      hot.samples = line.samples;
      hot.pcs = line.pcs;
      hot.fraction = row.samples > 0 ? static_cast<double>(line.samples) / row.samples : 0;
      hot.reasons = Ranked(line.by_state, line.samples);
      row.lines.push_back(std::move(hot));
    }
    std::stable_sort(row.lines.begin(), row.lines.end(),
                     [](const LineHotspot& a, const LineHotspot& b) {
                       return a.samples > b.samples;
                     });
    // Only the lines a report shows need their text.
    const size_t shown = report->view == StallView::kLine ? Shown(row.lines.size(), report->top)
                                                          : std::min<size_t>(1, row.lines.size());
    for (size_t i = 0; i < shown; ++i) {
      row.lines[i].code = text.Line(row.lines[i].source.path, row.lines[i].source.line);
    }
  }
  report->source.lines.clear();
}

}  // namespace

absl::StatusOr<StallReport> BuildStallReport(const std::vector<const TraceModel*>& traces,
                                             const std::vector<std::string>& labels,
                                             const StallReportOptions& options) {
  absl::StatusOr<KernelNameFilter> filter = KernelNameFilter::Create(options.kernel_regex);
  if (!filter.ok()) return filter.status();
  StallReport report;
  report.top = options.top;
  report.view = options.view;
  // Keyed by demangled name: the map's keys stay put, so the filter can remember its answer
  // per key (KernelNameFilter::Matches caches by address).
  std::map<std::string, KernelAcc> kernels;
  std::map<std::string, bool> selected_by_name;
  bool any_samples = false;
  for (size_t t = 0; t < traces.size(); ++t) {
    const TraceModel& model = *traces[t];
    std::unordered_map<std::string_view, std::string> demangled;  // views into the model
    bool trace_has_samples = false;
    for (const PcSampleBatch& batch : model.pc_sample_batches) {
      report.dropped_samples += batch.dropped_samples;
      if (batch.hardware_buffer_full) ++report.buffer_full_batches;
      const PcStallReasons* names = model.FindPcStallReasons(batch.device_id);
      for (const PcRecord& record : batch.records) {
        trace_has_samples = true;
        auto [name_it, inserted] = demangled.try_emplace(record.function_name);
        if (inserted) {
          name_it->second = DemangleKernelName(std::string(record.function_name).c_str());
        }
        auto kernel_it = kernels.try_emplace(name_it->second).first;
        auto [match_it, new_name] = selected_by_name.try_emplace(name_it->second);
        if (new_name) match_it->second = filter->Matches(kernel_it->first);
        if (!match_it->second) continue;
        KernelAcc& kernel = kernel_it->second;
        PcAcc& pc = kernel.pcs[{record.pc_offset, record.cubin_crc}];
        if (pc.function.empty()) pc.function = record.function_name;
        for (const auto& [index, samples] : record.stall_samples) {
          WarpStateName state;
          const std::string* cupti_name = nullptr;
          if (names != nullptr) {
            auto found = names->name_by_index.find(index);
            if (found != names->name_by_index.end()) cupti_name = &found->second;
          }
          if (cupti_name != nullptr) {
            state = ParseStallReasonName(*cupti_name);
          } else {
            state.state = absl::StrCat("reason_", index);
            report.unknown_reasons.insert(index);
            report.unknown_reason_samples += samples;
          }
          if (state.not_issued) {
            kernel.not_issued += samples;
            continue;
          }
          kernel.samples += samples;
          kernel.by_state[state.state] += samples;
          pc.samples += samples;
          pc.by_state[state.state] += samples;
          if (state.state == "selected") kernel.selected += samples;
        }
      }
    }
    if (trace_has_samples) {
      any_samples = true;
    } else {
      report.traces_without_samples.push_back(t < labels.size() ? labels[t]
                                                                : absl::StrCat("trace ", t + 1));
    }
  }
  if (!any_samples) {
    return absl::FailedPreconditionError(absl::StrCat(
        traces.size() == 1 ? "the trace has no PC samples" : "none of the traces has PC samples",
        "; record them with `warpscope record --pc-sampling -- ./app` "
        "(docs/pc_sampling.md)"));
  }
  for (auto& [name, kernel] : kernels) {
    if (kernel.samples == 0 && kernel.not_issued == 0) continue;
    StallKernelRow row;
    row.name = name;
    row.samples = kernel.samples;
    row.selected = kernel.selected;
    row.not_issued = kernel.not_issued;
    row.cycles_per_issue = WarpCyclesPerIssue(kernel.samples, kernel.selected);
    row.reasons = Ranked(kernel.by_state, kernel.samples);
    for (const auto& [key, pc] : kernel.pcs) {
      if (pc.samples == 0) continue;
      PcHotspot hot;
      hot.pc_offset = key.first;
      hot.cubin_crc = key.second;
      hot.function = std::string(pc.function);
      hot.samples = pc.samples;
      hot.fraction = kernel.samples > 0 ? static_cast<double>(pc.samples) / kernel.samples : 0;
      hot.reasons = Ranked(pc.by_state, pc.samples);
      row.pcs.push_back(std::move(hot));
    }
    std::stable_sort(row.pcs.begin(), row.pcs.end(), [](const PcHotspot& a, const PcHotspot& b) {
      return a.samples > b.samples;
    });
    report.samples += row.samples;
    report.rows.push_back(std::move(row));
  }
  for (StallKernelRow& row : report.rows) {
    row.fraction = report.samples > 0 ? static_cast<double>(row.samples) / report.samples : 0;
  }
  std::stable_sort(report.rows.begin(), report.rows.end(),
                   [](const StallKernelRow& a, const StallKernelRow& b) {
                     return a.samples > b.samples;
                   });
  if (options.locator) {
    AddSourceLines(traces, options, &report);
  }
  return report;
}

std::string RenderStallReport(const StallReport& report, OutputFormat format) {
  const bool text = format == OutputFormat::kTable;
  if (text && report.rows.empty()) return "warpscope: no kernels with PC samples match\n";
  if (format == OutputFormat::kJson && report.view != StallView::kPc) return RenderJson(report);
  if (report.view == StallView::kPc && !text) return RenderByPc(report, format);
  if (report.view == StallView::kLine && !text) return RenderByLine(report, format);
  std::string out;
  if (format == OutputFormat::kCsv) {
    Table table({{"kernel"},
                 {"samples", true},
                 {"pct", true},
                 {"cycles_per_issue", true},
                 {"not_issued", true},
                 {"hottest_line"},
                 {"reason"},
                 {"reason_samples", true},
                 {"reason_pct", true}});
    for (const StallKernelRow& row : report.rows) {
      for (size_t i = 0; i < Shown(row.reasons.size(), report.top); ++i) {
        const StallShare& r = row.reasons[i];
        std::vector<Cell> cells;
        cells.emplace_back(row.name);
        cells.emplace_back(row.samples);
        cells.emplace_back(PercentCell(row.fraction));
        cells.emplace_back(CyclesCell(row.cycles_per_issue, false));
        cells.emplace_back(row.not_issued);
        cells.emplace_back(row.lines.empty() ? std::string()
                                             : LineText(row.lines.front().source, false));
        cells.emplace_back(r.state);
        cells.emplace_back(r.samples);
        cells.emplace_back(PercentCell(r.fraction));
        table.AddRow(std::move(cells));
      }
    }
    return table.RenderCsv();
  }
  if (report.view == StallView::kPc) {
    out = RenderByPc(report, format);
  } else if (report.view == StallView::kLine) {
    out = RenderByLine(report, format);
  } else {
    const bool lines = AnyLines(report);
    std::vector<Table::Column> columns = {{"kernel"},
                                          {"samples", true},
                                          {"pct", true},
                                          {"cycles_per_issue", true},
                                          {"not_issued_pct", true},
                                          {"top_reasons"}};
    if (lines) columns.push_back({"hottest_line"});
    Table table(columns);
    for (const StallKernelRow& row : report.rows) {
      std::vector<Cell> cells;
      cells.emplace_back(ShortKernelName(row.name, true));
      cells.emplace_back(row.samples);
      cells.emplace_back(PercentCell(row.fraction));
      cells.emplace_back(CyclesCell(row.cycles_per_issue, true));
      cells.emplace_back(row.samples > 0 ? PercentCell(static_cast<double>(row.not_issued) /
                                                   static_cast<double>(row.samples))
                                         : Cell());
      cells.emplace_back(ReasonList(row.reasons, Shown(row.reasons.size(), report.top)));
      if (lines) {
        cells.emplace_back(row.lines.empty()
                               ? std::string()
                               : absl::StrCat(LineText(row.lines.front().source, true), " ",
                                              PctText(row.lines.front().fraction)));
      }
      table.AddRow(std::move(cells));
    }
    out = table.RenderText();
    for (const StallKernelRow& row : report.rows) {
      absl::StrAppend(&out, "\n", row.name, "\n");
      for (size_t i = 0; i < Shown(row.reasons.size(), report.top); ++i) {
        const StallShare& r = row.reasons[i];
        std::string_view advice = StallReasonAdvice(r.state);
        absl::StrAppendFormat(&out, "  %-20s %6s  %s\n", r.state, PctText(r.fraction),
                              advice.empty() ? "no description for this reason" : advice);
      }
    }
  }
  const std::vector<std::string> notes = StallReportNotes(report);
  if (!notes.empty()) out += "\n";
  for (const std::string& note : notes) absl::StrAppend(&out, "note: ", note, "\n");
  return out;
}

std::string RenderStallSvg(const StallReport& report) {
  // A colour per warp state (its row in kStateAdvice), so a reason looks the same in every bar;
  // states the table does not know are grey.
  static constexpr std::string_view kColours[] = {"#d62728", "#1f77b4", "#ff7f0e", "#2ca02c",
                                                  "#9467bd", "#8c564b", "#e377c2", "#17becf",
                                                  "#bcbd22", "#7f7f7f"};
  const auto colour = [](std::string_view state) -> std::string_view {
    for (size_t i = 0; i < std::size(kStateAdvice); ++i) {
      if (kStateAdvice[i].state == state) return kColours[i % std::size(kColours)];
    }
    return "#555555";
  };
  constexpr double kWidth = 880, kLeft = 16, kBarWidth = 848, kBarHeight = 26, kRowHeight = 64;
  const size_t shown_reasons = Shown(8, report.top);
  const double height = 48 + kRowHeight * static_cast<double>(report.rows.size()) + 16;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"24\" font-size=\"15\">Warp states of PC samples per kernel</text>\n",
      kWidth, height, kLeft);
  double y = 48;
  for (const StallKernelRow& row : report.rows) {
    absl::StrAppendFormat(&svg, "<text x=\"%.0f\" y=\"%.0f\">%s (%d samples)</text>\n", kLeft,
                          y + 12, SvgEscape(row.name), row.samples);
    double x = kLeft;
    const double bar_y = y + 18;
    double rest = 1.0;
    for (size_t i = 0; i < Shown(row.reasons.size(), static_cast<int>(shown_reasons)); ++i) {
      const StallShare& r = row.reasons[i];
      const double w = r.fraction * kBarWidth;
      rest -= r.fraction;
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" "
                            "fill=\"%s\"><title>%s %s</title></rect>\n",
                            x, bar_y, w, kBarHeight, colour(r.state),
                            SvgEscape(r.state), PctText(r.fraction));
      if (w > 90) {
        absl::StrAppendFormat(&svg,
                              "<text x=\"%.1f\" y=\"%.0f\" fill=\"white\">%s %s</text>\n",
                              x + 4, bar_y + 17, SvgEscape(r.state), PctText(r.fraction));
      }
      x += w;
    }
    if (rest > 1e-9 && row.samples > 0) {
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" "
                            "fill=\"#bbbbbb\"><title>other %s</title></rect>\n",
                            x, bar_y, rest * kBarWidth, kBarHeight, PctText(rest));
    }
    y += kRowHeight;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace warpscope
