// Builds the stall report (see stalls.h and docs/cli.md#stalls); stalls_render.cc renders it.
//
// The `_not_issued` variants: each CUPTI stall reason comes twice, `X` and `X_not_issued`. As
// in the activity API's PC sampling record ("samples ... includes latencySamples") and in
// Nsight Compute's source view (an "All Samples" column next to a "Not-issued Samples" one),
// the `_not_issued` count is read as the part of `X`'s samples in which the scheduler issued no
// instruction, not as further samples. So the warp-state shares use `X` alone (every sample
// of the state, issued or not, as Nsight Compute's warp state breakdown does) and the
// `_not_issued` samples are only summed into their own column; adding them would count those
// samples twice.
#include "analyzers/analyses/stalls.h"

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
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "analyzers/measures/intervals.h"
#include "analyzers/measures/kernel_name_filter.h"
#include "analyzers/measures/sampling_coverage.h"
#include "collectors/activity/kernel_names.h"
#include "proto/settings/settings.h"

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
  std::string function;  // mangled
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

// A function's launches in one trace: what its samples can rest on.
struct FunctionLaunches {
  double instants = 0;  // sampling instants: recorded time x SM clock / 2^period
  uint64_t launches = 0, covered_launches = 0;  // all, and those PC sampling ran during
  uint64_t kernel_ns = 0, covered_ns = 0;
};

struct KernelAcc {
  uint64_t samples = 0, selected = 0, not_issued = 0;
  // Summed over the traces and functions of the name; its instants are the sampling instants
  // of its recorded launches (StallKernelRow).
  FunctionLaunches launches;
  std::map<std::string, uint64_t> by_state;
  std::map<std::pair<uint64_t, uint64_t>, PcAcc> pcs;  // (pc offset, cubin crc)
  double fallback_units = 0;  // samples over SM sub-partitions, where launches are unknown
  std::map<size_t, std::set<std::string, std::less<>>> functions;  // mangled names, by trace
};

// FunctionLaunches by mangled name (heterogeneous lookup: records name functions by view).
using LaunchesByName = std::map<std::string, FunctionLaunches, std::less<>>;

// Per mangled kernel name of one trace: the sampling instants of its launches (the recorded
// time of its launches x the SM clock / 2^period), and how many of them, and how much of
// their time, PC sampling ran during. The launches are visited one at a time (ForEachEvent):
// memory grows with the functions, not with the launches.
absl::StatusOr<LaunchesByName> LaunchesByFunction(const TraceModel& model) {
  LaunchesByName out;
  const double period = std::ldexp(1.0, static_cast<int>(PcSamplingPeriodExponent(model)));
  SamplingCoverage coverage(PcSampledSpans(model));
  absl::Status read = ForEachEvent<KernelEvent>(model, [&](const KernelEvent& k) {
    const std::string_view function = k.mangled_name.empty() ? k.name : k.mangled_name;
    auto it = out.find(function);
    if (it == out.end()) it = out.emplace(std::string(function), FunctionLaunches()).first;
    FunctionLaunches& f = it->second;
    const uint64_t covered = coverage.AddKernel(k.device_id, k.start_ns, k.duration_ns);
    ++f.launches;
    f.covered_launches += covered > 0 ? 1 : 0;
    f.kernel_ns += k.duration_ns;
    f.covered_ns += covered;
    const DeviceInfo* device = model.FindDevice(k.device_id);
    if (device == nullptr || device->core_clock_khz == 0) return;
    const double cycles = static_cast<double>(k.duration_ns) * 1e-6 *
                          static_cast<double>(device->core_clock_khz);
    f.instants += cycles / period;
  });
  if (!read.ok()) return read;
  return out;
}

// What a record adds to its kernel's independent looks: the sampling instants of the
// function's launches in trace `t`, once per trace and function (with the launches); where its
// launches, or their clock, are not in the trace, its samples over the device's SM
// sub-partitions (four per SM).
void AddLooks(size_t t, std::string_view function, uint64_t samples, const DeviceInfo* device,
              const LaunchesByName& launches, KernelAcc& kernel) {
  auto it = launches.find(function);
  if (it == launches.end() || it->second.instants == 0) {
    const double units = device != nullptr && device->sm_count > 0 ? 4.0 * device->sm_count : 1.0;
    kernel.fallback_units += static_cast<double>(samples) / units;
  }
  if (it == launches.end()) return;
  std::set<std::string, std::less<>>& seen = kernel.functions[t];
  if (seen.find(function) != seen.end()) return;
  seen.emplace(function);
  const FunctionLaunches& f = it->second;
  kernel.launches.instants += f.instants;
  kernel.launches.launches += f.launches;
  kernel.launches.covered_launches += f.covered_launches;
  kernel.launches.kernel_ns += f.kernel_ns;
  kernel.launches.covered_ns += f.covered_ns;
}

// The 95% intervals of a row's shares, over its sampling instants, and what would give
// enough when the top share's is wider than kMaxStallHalfWidth.
void AddIntervals(const KernelAcc& kernel, uint32_t period, StallKernelRow& row) {
  const double n = kernel.launches.instants > 0 ? kernel.launches.instants : kernel.fallback_units;
  row.sampling_instants = std::min(static_cast<double>(row.samples), std::max(n, 1.0));
  for (StallShare& share : row.reasons) {
    const Interval i = WilsonInterval(share.fraction, row.sampling_instants);
    share.low = i.low;
    share.high = i.high;
  }
  if (row.reasons.empty()) return;
  const StallShare& top = row.reasons.front();
  const double worst = std::max(top.fraction - top.low, top.high - top.fraction);
  if (worst <= kMaxStallHalfWidth) return;
  // Instants for +-5 points at p = 0.5: (z / 0.05)^2 / 4, about 385.
  const double wanted = kZ95 * kZ95 / (4 * kMaxStallHalfWidth * kMaxStallHalfWidth);
  const int lower = static_cast<int>(std::ceil(std::log2(wanted / row.sampling_instants)));
  const int suggested = std::max(5, static_cast<int>(period) - std::max(lower, 1));
  row.too_few = absl::StrFormat(
      "only about %.0f sampling instants: its top share could be %.0f points off; record with "
      "--pc-period %d or over %s launches",
      row.sampling_instants, 100 * worst, suggested,
      lower > 0 ? absl::StrCat(1 << std::min(lower, 20), "x more") : std::string("more"));
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

uint32_t PcSamplingPeriodExponent(const TraceModel& model) {
  const SettingSpec& spec = Setting(SettingId::kPcPeriod);
  uint32_t period = 0;
  for (const auto& [key, value] : model.header.config) {
    if (key == spec.variable && absl::SimpleAtoi(value, &period) && period >= spec.min &&
        period <= spec.max) {
      return period;
    }
  }
  return absl::SimpleAtoi(std::string(spec.default_value), &period) ? period : 15;
}

size_t StallRowsShown(size_t available, int top) {
  return top > 0 ? std::min(available, static_cast<size_t>(top)) : available;
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
    std::stable_sort(
        row.lines.begin(), row.lines.end(),
        [](const LineHotspot& a, const LineHotspot& b) { return a.samples > b.samples; });
    // Only the lines a report shows need their text.
    const size_t shown = report->view == StallView::kLine
                             ? StallRowsShown(row.lines.size(), report->top)
                             : std::min<size_t>(1, row.lines.size());
    for (size_t i = 0; i < shown; ++i) {
      row.lines[i].code = text.Line(row.lines[i].source.path, row.lines[i].source.line);
    }
  }
  report->source.lines.clear();
}

// The warp state of a sample's stall reason index; an index the trace does not name is
// counted in the report and becomes "reason_<index>".
WarpStateName StateOfReason(const PcStallReasons* names, uint32_t index, uint64_t samples,
                            StallReport& report) {
  if (names != nullptr) {
    auto found = names->name_by_index.find(index);
    if (found != names->name_by_index.end()) return ParseStallReasonName(found->second);
  }
  WarpStateName state;
  state.state = absl::StrCat("reason_", index);
  report.unknown_reasons.insert(index);
  report.unknown_reason_samples += samples;
  return state;
}

// Adds one PC record's samples to its kernel and PC, by warp state.
void AddRecordSamples(const PcRecord& record, const PcStallReasons* names, KernelAcc& kernel,
                      PcAcc& pc, StallReport& report) {
  for (const auto& [index, samples] : record.stall_samples) {
    const WarpStateName state = StateOfReason(names, index, samples, report);
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

// A kernel's row: its reasons, and its PCs hottest first.
StallKernelRow KernelRow(const std::string& name, const KernelAcc& kernel) {
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
  return row;
}

// The kernels by demangled name: the map's keys stay put, so the filter can remember its
// answer per key (KernelNameFilter::Matches caches by address).
struct KernelsByName {
  std::map<std::string, KernelAcc> kernels;
  std::map<std::string, bool> selected_by_name;
};

// Adds the PC samples of trace `t` to the kernels the filter selects; false when the trace
// has none. The records are visited one packet at a time (ForEachPcRecords): memory grows with
// the kernels' names and PCs, not with the samples.
absl::StatusOr<bool> AddTraceSamples(size_t t, const TraceModel& model, KernelNameFilter& filter,
                                     KernelsByName& by_name, StallReport& report) {
  absl::StatusOr<LaunchesByName> launches = LaunchesByFunction(model);
  if (!launches.ok()) return launches.status();
  for (const PcSampleBatch& batch : model.pc_sample_batches) {
    report.dropped_samples += batch.dropped_samples;
    if (batch.hardware_buffer_full) ++report.buffer_full_batches;
  }
  std::map<std::string, std::string, std::less<>> demangled;  // by mangled name
  bool trace_has_samples = false;
  absl::Status read = ForEachPcRecords(model, [&](const PcSampleBatch& batch) {
    const PcStallReasons* names = model.FindPcStallReasons(batch.device_id);
    for (const PcRecord& record : batch.records) {
      trace_has_samples = true;
      auto name_it = demangled.find(record.function_name);
      if (name_it == demangled.end()) {
        const std::string mangled(record.function_name);
        name_it = demangled.emplace(mangled, DemangleKernelName(mangled.c_str())).first;
      }
      auto kernel_it = by_name.kernels.try_emplace(name_it->second).first;
      auto [match_it, new_name] = by_name.selected_by_name.try_emplace(name_it->second);
      if (new_name) match_it->second = filter.Matches(kernel_it->first);
      if (!match_it->second) continue;
      KernelAcc& kernel = kernel_it->second;
      PcAcc& pc = kernel.pcs[{record.pc_offset, record.cubin_crc}];
      if (pc.function.empty()) pc.function = record.function_name;
      const uint64_t before = kernel.samples;
      AddRecordSamples(record, names, kernel, pc, report);
      AddLooks(t, record.function_name, kernel.samples - before, model.FindDevice(batch.device_id),
               *launches, kernel);
    }
  });
  if (!read.ok()) return read;
  return trace_has_samples;
}

// The share of a kernel's launches and time that its samples rest on.
void AddCoverage(const FunctionLaunches& f, StallKernelRow& row) {
  row.launches = f.launches;
  row.covered_launches = f.covered_launches;
  if (f.kernel_ns > 0) {
    row.covered_time_fraction = static_cast<double>(f.covered_ns) / f.kernel_ns;
  } else {
    row.covered_time_fraction = f.launches > 0 && f.covered_launches == f.launches ? 1 : 0;
  }
  row.coverage_note =
      LowCoverageNote("PC", row.covered_launches, row.launches, row.covered_time_fraction);
}

// A row per kernel with samples, each with its share of all samples, most sampled first.
void AddKernelRows(const std::map<std::string, KernelAcc>& kernels, uint32_t period,
                   StallReport& report) {
  for (const auto& [name, kernel] : kernels) {
    if (kernel.samples == 0 && kernel.not_issued == 0) continue;
    StallKernelRow row = KernelRow(name, kernel);
    AddIntervals(kernel, period, row);
    AddCoverage(kernel.launches, row);
    report.samples += row.samples;
    report.rows.push_back(std::move(row));
  }
  for (StallKernelRow& row : report.rows) {
    row.fraction = report.samples > 0 ? static_cast<double>(row.samples) / report.samples : 0;
  }
  std::stable_sort(
      report.rows.begin(), report.rows.end(),
      [](const StallKernelRow& a, const StallKernelRow& b) { return a.samples > b.samples; });
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
  KernelsByName by_name;
  bool any_samples = false;
  uint32_t period = 0;  // the smallest period of the traces, for the advice
  for (size_t t = 0; t < traces.size(); ++t) {
    const uint32_t trace_period = PcSamplingPeriodExponent(*traces[t]);
    period = period == 0 ? trace_period : std::min(period, trace_period);
    absl::StatusOr<bool> has_samples = AddTraceSamples(t, *traces[t], *filter, by_name, report);
    if (!has_samples.ok()) return has_samples.status();
    if (*has_samples) {
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
  AddKernelRows(by_name.kernels, period, report);
  if (options.locator) {
    AddSourceLines(traces, options, &report);
  }
  return report;
}

}  // namespace warpscope
