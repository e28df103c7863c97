// `warpscope info` as a Report (info.h): the figures as scalars and typed tables, for text, CSV,
// JSON, --table and Python.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/info_sampling.h"
#include "analyzers/analyses/info.h"
#include "analyzers/model/trace_limits.h"
#include "proto/writer/stats_table.h"

namespace warpscope {
namespace {

using K = CellKind;

Table DevicesTable(const TraceModel& m) {
  Table t({{"id", true, K::kInt},
           {"name", false, K::kString},
           {"compute_capability", false, K::kString},
           {"sm_count", true, K::kInt},
           {"max_warps_per_sm", true, K::kInt},
           {"max_blocks_per_sm", true, K::kInt},
           {"max_threads_per_block", true, K::kInt},
           {"max_registers_per_sm", true, K::kInt},
           {"max_shared_memory_per_sm", true, K::kInt},
           {"core_clock_khz", true, K::kInt},
           {"global_memory_bytes", true, K::kInt},
           {"l2_cache_bytes", true, K::kInt},
           {"uuid", false, K::kString},
           {"problem", false, K::kString}});
  for (const DeviceInfo& d : m.devices) {
    t.AddRow({d.id, d.name,
              absl::StrCat(d.compute_capability_major, ".", d.compute_capability_minor),
              d.sm_count, d.max_warps_per_sm, d.max_blocks_per_sm, d.max_threads_per_block,
              d.max_registers_per_sm, d.max_shared_memory_per_sm, d.core_clock_khz,
              d.global_memory_bytes, d.l2_cache_bytes, d.uuid, DeviceLimitsProblem(d)});
  }
  return t;
}

Table CaptureWindowsTable(const TraceModel& m) {
  Table t({{"id", true, K::kInt},
           {"begin_ns", true, K::kInt},
           {"begin_trigger", false, K::kString},
           {"end_ns", true, K::kInt},
           {"end_trigger", false, K::kString}});
  for (const CaptureWindowRange& w : m.capture_windows) {
    const bool ended = w.end_ns.has_value();
    t.AddRow({w.id, w.begin_ns, std::string(CaptureTriggerName(w.begin_trigger)),
              ended ? Cell(*w.end_ns) : Cell(),
              ended ? Cell(std::string(CaptureTriggerName(w.end_trigger))) : Cell()});
  }
  return t;
}

// Stats counters (described by the stats table) and import counters (by the reader).
Table CountersTable(const TraceModel& m) {
  Table t({{"source", false, K::kString},
           {"name", false, K::kString},
           {"value", true, K::kInt},
           {"severity", false, K::kString},
           {"description", false, K::kString}});
  for (const StatCounter& c : m.stats) {
    const StatDef* stat = FindStat(c.name);
    t.AddRow({"stats", c.name, c.value, std::string(SeverityName(c.severity)),
              stat != nullptr ? std::string(stat->meaning) : std::string()});
  }
  for (const StatCounter& c : m.import_counters) {
    t.AddRow({"import", c.name, c.value, std::string(SeverityName(c.severity)), c.description});
  }
  return t;
}

Table NoticesTable(const TraceModel& m) {
  Table t({{"timestamp_ns", true, K::kInt},
           {"severity", false, K::kString},
           {"source", false, K::kString},
           {"message", false, K::kString}});
  for (const Notice& n : m.notices) {
    t.AddRow({n.timestamp_ns, std::string(SeverityName(n.severity)), n.source, n.message});
  }
  return t;
}

// The rank variables and the recording settings of the header, a row each.
Table HeaderValuesTable(const TraceHeader& h) {
  Table t({{"source", false, K::kString}, {"key", false, K::kString}, {"value", false, K::kString}});
  for (const auto& [key, value] : h.rank_env) t.AddRow({"rank_env", key, value});
  for (const auto& [key, value] : h.config) t.AddRow({"config", key, value});
  return t;
}

Table PmMetricSetsTable(const TraceModel& m) {
  Table t({{"id", true, K::kInt},
           {"device_id", true, K::kInt},
           {"interval_ns", true, K::kInt},
           {"metrics", true, K::kInt},
           {"samples", true, K::kInt},
           {"sampled_ns", true, K::kInt}});
  for (const PmSetSummary& s : SummarizePm(m)) {
    t.AddRow({s.set->id, s.set->device_id, s.set->interval_ns, s.set->metric_names.size(),
              s.samples, s.sampled_ns});
  }
  return t;
}

// One row when PC sampling was asked for (or left data), none otherwise.
Table PcSamplingTable(const PcSummary& pc) {
  Table t({{"samples", true, K::kInt},
           {"pc_records", true, K::kInt},
           {"batches", true, K::kInt},
           {"samples_dropped", true, K::kInt},
           {"hardware_buffer_full", true, K::kInt},
           {"cupti_total_samples", true, K::kInt},
           {"non_user_kernel_samples", true, K::kInt},
           {"contexts_sampled", true, K::kInt},
           {"cubins", true, K::kInt},
           {"cubin_bytes", true, K::kInt},
           {"zero_samples_cause", false, K::kString}});
  if (pc.requested) {
    t.AddRow({pc.samples, pc.pc_records, pc.batches, pc.dropped, pc.buffer_full, pc.cupti_total,
              pc.non_user, pc.contexts, pc.cubins, pc.cubin_bytes, pc.diagnosis});
  }
  return t;
}

// A figure of the trace's span; empty for a trace without events. A function, not a
// conditional of two Cell temporaries, which makes GCC 12 warn falsely (-Wmaybe-uninitialized).
Cell SpanCell(const TraceModel& m, uint64_t ns) { return m.span.empty ? Cell() : Cell(ns); }

// When the trace began by the wall clock ("2026-11-21T00:20:01.123456789Z"); "" when unknown.
std::string WallClockBegin(const TraceModel& m) {
  if (m.span.empty || m.header.unix_time_base_ns == 0) return "";
  return FormatUtcTimestamp(m.header.unix_time_base_ns + m.span.begin_ns);
}

// The end-of-trace marker's time; empty without one.
Cell EndCell(const TraceModel& m) {
  return m.end_of_trace.has_value() ? Cell(m.end_of_trace->timestamp_ns) : Cell();
}

// How the trace ended and was cut, after the header's figures.
void AddEndScalars(const TraceModel& m, Report& out) {
  const TraceHeader& h = m.header;
  std::vector<std::pair<std::string, Cell>> more = {
      {"command_line", absl::StrJoin(h.command_line, " ")},
      {"cuda_driver_version", h.cuda_driver_version},
      {"display_driver_version", h.display_driver_version},
      {"wall_clock_begin", WallClockBegin(m)},
      {"stats_packets", m.stats_packets},
      {"end_reason",
       m.end_of_trace.has_value() ? std::string(EndReasonName(m.end_of_trace->reason)) : ""},
      {"end_signal", m.end_of_trace.has_value() ? m.end_of_trace->signal : 0},
      {"end_ns", EndCell(m)},
      {"partial_packet", Cell::Bool(m.truncation.partial_packet)},
      {"partial_packet_offset", m.truncation.partial_offset},
      {"truncation_message", m.truncation.Describe()}};
  out.scalars.insert(out.scalars.end(), more.begin(), more.end());
}

// The tables of what PM and PC sampling produced, and what of the kernels they saw.
void AddSamplingTables(const TraceModel& m, const PcSummary& pc,
                       const InfoSamplingCoverage& coverage, Report& out) {
  Table coverage_table = SamplingCoverageTable();
  Table holes = SamplingHolesTable();
  if (coverage.pm) AddCoverageRows(*coverage.pm, "pm", coverage_table, holes);
  if (coverage.pc) AddCoverageRows(*coverage.pc, "pc", coverage_table, holes);
  out.tables.emplace_back("pm_metric_sets", PmMetricSetsTable(m));
  out.tables.emplace_back("pc_sampling", PcSamplingTable(pc));
  out.tables.emplace_back("sampling_coverage", std::move(coverage_table));
  out.tables.emplace_back("sampling_holes", std::move(holes));
}

}  // namespace

Report TraceInfoReport(const TraceModel& m, const TraceInfoOptions& options) {
  const TraceHeader& h = m.header;
  const std::string name = options.display_name.empty() ? m.source_name : options.display_name;
  Report out;
  out.scalars = {
      {"trace", name},
      {"file_size_bytes", m.file_size},
      {"packets", m.packet_count},
      {"format_major", h.format_major},
      {"format_minor", h.format_minor},
      {"tool_version", h.tool_version},
      {"producer", h.producer},
      {"pid", h.pid},
      {"ppid", h.ppid},
      {"hostname", h.hostname},
      {"job_id", h.job_id},
      {"clock_domain", std::string(ClockDomainName(h.clock_domain))},
      {"time_base_ns", h.time_base_ns},
      {"unix_time_base_ns", h.unix_time_base_ns},
      {"cupti_version", h.cupti_version},
      {"span_begin_ns", SpanCell(m, m.span.begin_ns)},
      {"span_end_ns", SpanCell(m, m.span.end_ns)},
      {"duration_ns", SpanCell(m, m.span.duration_ns())},
      {"stats_final", Cell::Bool(m.stats_final)},
      {"truncated", Cell::Bool(m.truncation.truncated())},
      {"bytes_lost", m.truncation.bytes_lost},
      {"worst_severity", std::string(SeverityName(m.WorstSeverity()))}};
  Table events({{"kind", false, K::kString}, {"count", true, K::kInt}});
  for (const auto& [kind, count] : CountEventsByKind(m)) events.AddRow({kind, count});
  out.tables.emplace_back("devices", DevicesTable(m));
  out.tables.emplace_back("events", std::move(events));
  out.tables.emplace_back("capture_windows", CaptureWindowsTable(m));
  out.tables.emplace_back("counters", CountersTable(m));
  out.tables.emplace_back("notices", NoticesTable(m));
  out.tables.emplace_back("header_values", HeaderValuesTable(h));
  AddEndScalars(m, out);
  const PcSummary pc = SummarizePc(m);
  const InfoSamplingCoverage coverage =
      ComputeInfoSamplingCoverage(m, !m.pm_metric_sets.empty(), pc.requested);
  AddSamplingTables(m, pc, coverage, out);
  AddTraceInfoText(m, name, coverage, out);
  return out;
}

}  // namespace warpscope
