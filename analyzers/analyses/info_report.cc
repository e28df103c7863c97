// `warpscope info` as a Report (info.h): the figures of the text and JSON forms as scalars and
// typed tables, for CSV, --table and Python.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
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

// A figure of the trace's span; empty for a trace without events. A function, not a
// conditional of two Cell temporaries, which makes GCC 12 warn falsely (-Wmaybe-uninitialized).
Cell SpanCell(const TraceModel& m, uint64_t ns) { return m.span.empty ? Cell() : Cell(ns); }

}  // namespace

Report TraceInfoReport(const TraceModel& m, const TraceInfoOptions& options) {
  const TraceHeader& h = m.header;
  Report out;
  out.scalars = {
      {"trace", options.display_name.empty() ? m.source_name : options.display_name},
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
  return out;
}

}  // namespace warpscope
