// `warpscope memory` (memory.h): the steps and NVTX phases as intervals and instants for the
// memory timeline, and its figures as the report's tables and verdict.
#include "analyzers/analyses/memory.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/measures/call_sites.h"
#include "analyzers/measures/memory_timeline.h"
#include "analyzers/measures/steps.h"

namespace warpscope {

std::string MemorySvg(const MemoryTimeline& timeline, const std::vector<Step>& steps,
                      const std::vector<std::pair<std::string, MemoryInterval>>& phases);

namespace {

// The phases (NVTX ranges of the program, not of a library, not the steps), by family, with
// their instances as intervals.
struct PhaseSet {
  std::vector<std::string> names;          // by family, first seen first
  std::vector<size_t> phase_of_interval;   // one per instance
  std::vector<std::pair<std::string, MemoryInterval>> instances;
};

PhaseSet FindPhases(const TraceModel& model, const StepSet& steps) {
  PhaseSet out;
  std::map<std::string, size_t> index;
  for (const NvtxRange& r : model.nvtx_ranges) {
    if (IsLibraryRange(r.name, r.domain)) continue;
    std::string family = RangeFamily(r.name);
    if (!steps.steps.empty() && family == steps.family) continue;
    auto [it, added] = index.emplace(family, out.names.size());
    if (added) out.names.push_back(family);
    out.phase_of_interval.push_back(it->second);
    out.instances.push_back({family, {r.start_ns, r.end_ns()}});
  }
  return out;
}

std::string Hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, value);
  return text;
}

double Share(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

void AddDeviceTables(const TraceModel& model, const MemoryTimeline& t, Report& report) {
  Table devices({{"device", true, CellKind::kInt}, {"peak_bytes", true, CellKind::kInt},
                 {"peak_ns", true, CellKind::kInt}, {"reserved_at_peak_bytes", true, CellKind::kInt},
                 {"peak_reserved_bytes", true, CellKind::kInt}, {"end_bytes", true, CellKind::kInt},
                 {"owners_at_peak", false, CellKind::kString}});
  Table owners({{"device", true, CellKind::kInt}, {"owner", false, CellKind::kString},
                {"bytes_at_peak", true, CellKind::kInt}, {"percent", true, CellKind::kReal}});
  Table blocks({{"device", true, CellKind::kInt}, {"bytes", true, CellKind::kInt},
                {"owner", false, CellKind::kString}, {"call_site", false, CellKind::kString},
                {"allocated_ns", true, CellKind::kInt}, {"kind", false, CellKind::kString},
                {"address", false, CellKind::kString}});
  Table kinds({{"device", true, CellKind::kInt}, {"memory_kind", false, CellKind::kString},
               {"peak_bytes", true, CellKind::kInt}});
  for (const DeviceMemory& d : t.devices) {
    devices.AddRow({d.device_id, d.peak_bytes, d.peak_ns, d.reserved_at_peak_bytes,
                    d.peak_reserved_bytes, d.end_bytes, MemoryOwnersText(d.owners_at_peak, 3)});
    for (const auto& [owner, bytes] : d.owners_at_peak) {
      owners.AddRow({d.device_id, owner, bytes, PercentCell(Share(bytes, d.peak_bytes))});
    }
    for (const MemoryBlock& b : d.largest_at_peak) {
      blocks.AddRow({d.device_id, b.bytes, b.owner, MemoryCallSite(model, b.stack_id), b.allocated_ns,
                     std::string(MemoryKindName(b.kind)), Hex(b.address)});
    }
    for (const auto& [kind, bytes] : d.peak_by_kind) {
      kinds.AddRow({d.device_id, std::string(MemoryKindName(kind)), bytes});
    }
  }
  report.tables.emplace_back("devices", std::move(devices));
  report.tables.emplace_back("owners", std::move(owners));
  report.tables.emplace_back("largest_blocks", std::move(blocks));
  report.tables.emplace_back("kinds", std::move(kinds));
}

void AddIntervalTables(const MemoryTimeline& t, const StepSet& steps, size_t warmup,
                       const PhaseSet& phases, Report& report) {
  Table step_table({{"device", true, CellKind::kInt}, {"step", false, CellKind::kString},
                    {"start_ns", true, CellKind::kInt}, {"steady", false, CellKind::kBool},
                    {"in_use_at_start_bytes", true, CellKind::kInt},
                    {"peak_bytes", true, CellKind::kInt}});
  Table phase_table({{"device", true, CellKind::kInt}, {"phase", false, CellKind::kString},
                     {"instances", true, CellKind::kInt}, {"peak_bytes", true, CellKind::kInt}});
  const size_t n_steps = steps.steps.size();
  for (const DeviceMemory& d : t.devices) {
    for (size_t i = 0; i < n_steps; ++i) {
      step_table.AddRow({d.device_id, steps.steps[i].name, steps.steps[i].start_ns,
                         Cell::Bool(i >= warmup), d.in_use_at_bytes[i], d.interval_peak_bytes[i]});
    }
    std::vector<uint64_t> peak(phases.names.size(), 0), count(phases.names.size(), 0);
    for (size_t i = 0; i < phases.phase_of_interval.size(); ++i) {
      const size_t p = phases.phase_of_interval[i];
      peak[p] = std::max(peak[p], d.interval_peak_bytes[n_steps + i]);
      ++count[p];
    }
    for (size_t p = 0; p < phases.names.size(); ++p) {
      phase_table.AddRow({d.device_id, phases.names[p], count[p], peak[p]});
    }
  }
  report.tables.emplace_back("steps", std::move(step_table));
  report.tables.emplace_back("phases", std::move(phase_table));
}

std::vector<MemoryGrowth> AddGrowthTables(const TraceModel& model, const MemoryTimeline& t,
                                          const MemoryProgress& progress, size_t top,
                                          Report& report) {
  Table sites({{"device", true, CellKind::kInt}, {"call_site", false, CellKind::kString},
               {"owner", false, CellKind::kString}, {"first_bytes", true, CellKind::kInt},
               {"last_bytes", true, CellKind::kInt}, {"growth_bytes", true, CellKind::kInt}});
  std::vector<MemoryGrowth> out;
  for (const DeviceMemory& d : t.devices) {
    MemoryGrowth g = GrowthOf(model, d, progress);
    for (size_t i = 0; i < g.growing_sites.size() && (top == 0 || i < top); ++i) {
      const SiteGrowth& s = g.growing_sites[i];
      sites.AddRow({d.device_id, MemoryCallSite(model, s.stack_id), s.owner, s.first_bytes, s.last_bytes,
                    s.last_bytes - s.first_bytes});
    }
    out.push_back(std::move(g));
  }
  report.tables.emplace_back("growing_sites", std::move(sites));
  return out;
}

void AddFailureTable(const TraceModel& model, const MemoryTimeline& t, Report& report) {
  Table failures({{"timestamp_ns", true, CellKind::kInt}, {"device", true, CellKind::kInt},
                  {"bytes_asked", true, CellKind::kInt}, {"result", true, CellKind::kInt},
                  {"in_use_bytes", true, CellKind::kInt}, {"reserved_bytes", true, CellKind::kInt},
                  {"pool_free_bytes", true, CellKind::kInt}, {"owner", false, CellKind::kString},
                  {"call_site", false, CellKind::kString},
                  {"largest_owners", false, CellKind::kString}});
  for (const MemoryFailure& f : t.failures) {
    failures.AddRow({f.timestamp_ns, f.device_id, f.bytes_asked, f.result, f.in_use_bytes,
                     f.reserved_bytes, f.pool_free_bytes, f.owner, MemoryCallSite(model, f.stack_id),
                     MemoryOwnersText(f.owners, 3)});
  }
  report.tables.emplace_back("failures", std::move(failures));
}

std::string GrowthBasisName(MemoryProgress::Basis basis) {
  switch (basis) {
    case MemoryProgress::Basis::kSteps: return "steps";
    case MemoryProgress::Basis::kKernels: return "kernels";
    case MemoryProgress::Basis::kNone: break;
  }
  return "none";
}

// The plain-words verdict, one line per finding.
std::vector<std::string> Verdict(const TraceModel& model, const MemoryTimeline& t,
                                 const std::vector<MemoryGrowth>& growth, const Report& report) {
  std::vector<std::string> lines;
  if (t.events == 0) return {"no memory events in the trace: nothing to say about memory"};
  for (const DeviceMemory& d : t.devices) {
    lines.push_back(absl::StrCat("device ", d.device_id, ": peak ",
                                 FormatBytes(static_cast<double>(d.peak_bytes)), " in use at ",
                                 FormatDuration(static_cast<double>(d.peak_ns)), " (reserved ",
                                 FormatBytes(static_cast<double>(d.reserved_at_peak_bytes)),
                                 "), held by ", MemoryOwnersText(d.owners_at_peak, 3)));
  }
  const Table* sites = report.FindTable("growing_sites");
  for (const MemoryGrowth& g : growth) {
    if (g.too_little_work) {
      lines.push_back(absl::StrFormat(
          "device %d: memory rose by %s over %.0f kernels launched (the trace has no steps), too "
          "little work to tell a leak from start-up (a leak is judged over %.0f kernels or more)",
          g.device_id, FormatBytes(static_cast<double>(g.gained)), g.kernels_judged,
          kLeakMinimumKernels));
    }
    if (!g.leak) continue;
    std::string where;
    for (const auto& row : sites->rows()) {
      if (CellText(row[0], CellKind::kInt) == absl::StrCat(g.device_id)) {
        where = absl::StrCat(", most at ", CellText(row[1], CellKind::kString));
        break;
      }
    }
    lines.push_back(absl::StrCat("device ", g.device_id, ": memory grows by ",
                                 g.RateText(true), ": a leak", where));
  }
  for (const MemoryFailure& f : t.failures) {
    lines.push_back(absl::StrCat(
        "device ", f.device_id, ": a request for ", FormatBytes(static_cast<double>(f.bytes_asked)),
        " failed at ", FormatDuration(static_cast<double>(f.timestamp_ns)), " with ",
        FormatBytes(static_cast<double>(f.in_use_bytes)), " in use (",
        MemoryOwnersText(f.owners, 2), ")",
        f.pool_free_bytes == 0 ? std::string()
                               : absl::StrCat("; its pools held ",
                                              FormatBytes(static_cast<double>(f.pool_free_bytes)),
                                              " reserved but unused (fragmentation)"),
        ", asked from ", MemoryCallSite(model, f.stack_id)));
  }
  return lines;
}

}  // namespace

MemoryReportResult MemoryReport(const TraceModel& model, const MemoryReportOptions& options) {
  const StepSet steps = FindSteps(model.nvtx_ranges);
  const size_t warmup = WarmupSteps(steps);
  const PhaseSet phases = FindPhases(model, steps);
  MemoryProgress progress;
  MemoryTimelineOptions o = ProgressTimelineOptions(model, steps, warmup, &progress);
  o.device = options.device;
  o.top = options.top;
  for (const auto& [name, interval] : phases.instances) o.intervals.push_back(interval);
  const MemoryTimeline t = ComputeMemoryTimeline(model, o);

  MemoryReportResult out;
  Report& report = out.report;
  AddDeviceTables(model, t, report);
  AddIntervalTables(t, steps, warmup, phases, report);
  const std::vector<MemoryGrowth> growth = AddGrowthTables(model, t, progress, options.top, report);
  AddFailureTable(model, t, report);
  uint64_t peak = 0;
  for (const DeviceMemory& d : t.devices) peak = std::max(peak, d.peak_bytes);
  const MemoryGrowth* leak = nullptr;
  for (const MemoryGrowth& g : growth) {
    if (g.leak) leak = &g;
  }
  report.scalars = {
      {"memory_events", t.events},
      {"devices", static_cast<uint64_t>(t.devices.size())},
      {"peak_bytes", peak},
      {"failed_requests", static_cast<uint64_t>(t.failures.size())},
      {"unknown_releases", t.unknown_releases},
      {"steps", static_cast<uint64_t>(steps.steps.size())},
      {"steady_steps", static_cast<uint64_t>(steps.steps.size() - warmup)},
      {"leak", Cell::Bool(leak != nullptr)},
      {"growth_basis", GrowthBasisName(progress.basis)},
      {"growth_from_step",
       leak && progress.basis == MemoryProgress::Basis::kSteps ? Cell(leak->onset_step) : Cell()},
      {"growth_per_step_bytes",
       leak && progress.basis == MemoryProgress::Basis::kSteps ? Cell(leak->slope->per_step, 0)
                                                               : Cell(0.0, 0)},
      {"growth_per_kernel_bytes", leak ? Cell(leak->PerKernel(), 1) : Cell(0.0, 1)}};
  report.text = Verdict(model, t, growth, report);
  if (t.unknown_releases != 0) {
    report.notes.push_back(absl::StrCat(
        "frees of blocks the trace never saw allocated (before the recording began): ",
        t.unknown_releases, ", counted, not subtracted"));
  }
  report.text_tables = {"devices", "owners",         "kinds",         "phases",
                        "steps",   "largest_blocks", "growing_sites", "failures"};
  if (options.svg) out.svg = MemorySvg(t, steps.steps, phases.instances);
  return out;
}

}  // namespace warpscope
