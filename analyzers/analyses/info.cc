// The text form of `warpscope info` (see info.h).
#include "analyzers/analyses/info.h"

#include <algorithm>
#include <ctime>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "analyzers/analyses/info_coverage.h"
#include "analyzers/analyses/info_sampling.h"
#include "analyzers/model/trace_limits.h"
#include "proto/writer/stats_table.h"

namespace warpscope {
namespace {

std::string Sv(std::string_view s) { return std::string(s); }

// The text form as it is written: prose (lines, each ending in a newline) and tables, put in
// the report's text blocks in their order.
class TextForm {
 public:
  explicit TextForm(Report& out) : out_(out) {}
  std::string& prose() { return prose_; }
  void Add(Table table) {
    Flush();
    TextBlock block;
    block.table = std::move(table);
    out_.text_blocks.push_back(std::move(block));
  }
  void Flush() {
    if (prose_.empty()) return;
    absl::string_view text = prose_;
    text.remove_suffix(1);  // the last newline ends the last line
    std::vector<std::string> lines = absl::StrSplit(text, '\n');
    TextBlock block;
    block.before = std::move(lines);
    out_.text_blocks.push_back(std::move(block));
    prose_.clear();
  }

 private:
  Report& out_;
  std::string prose_;
};

// What a stats counter means, from the stats table; empty for a name the table lacks (a
// newer or foreign producer).
std::string StatMeaning(std::string_view name) {
  const StatDef* stat = FindStat(name);
  return stat != nullptr ? std::string(stat->meaning) : std::string();
}

std::string Relative(uint64_t ns) { return absl::StrCat("+", FormatDuration(ns)); }

std::string FormatDriverVersion(uint32_t v) {
  // The driver encodes its version as major*1000 + minor*10 (13000 -> 13.0). Traces from
  // libraries that do not ask the driver carry 0.
  if (v == 0) return "version not recorded";
  return absl::StrFormat("%u (%u.%u)", v, v / 1000, (v % 1000) / 10);
}

std::string FormatCuptiVersion(uint32_t v) {
  if (v == 0) return "version not recorded";
  // From CUDA 13 on, CUPTI's version is the toolkit's: major*10000 + minor*100 + patch
  // (130001 -> CUDA 13.0); older CUPTIs count API versions (e.g. 22), which say nothing of it.
  if (v < 100000) return absl::StrCat(v);
  return absl::StrFormat("%u (CUDA %u.%u)", v, v / 10000, (v % 10000) / 100);
}

std::string JoinKeyValues(const std::vector<std::pair<std::string, std::string>>& kvs) {
  return absl::StrJoin(kvs, " ", [](std::string* out, const auto& kv) {
    absl::StrAppend(out, kv.first, "=", kv.second);
  });
}

// Counters worth a warning: data loss or errors with a non-zero value.
bool Alarming(const StatCounter& c) { return c.value != 0 && c.severity != v1::SEVERITY_INFO; }

// The trace, its process and clock, its span and how it ended.
void AppendTextHeader(const TraceModel& m, const std::string& name, TextForm& text) {
  std::string& out = text.prose();
  auto line = [&](const std::string& key, const std::string& value) {
    absl::StrAppend(&out, absl::StrFormat("%-14s", key), value, "\n");
  };
  const TraceHeader& h = m.header;
  line("trace",
       absl::StrCat(name, " (", FormatBytes(m.file_size), ", ", m.packet_count, " packets)"));
  line("format", absl::StrCat(h.format_major, ".", h.format_minor));
  line("producer", absl::StrCat(h.producer.empty() ? "unknown" : h.producer,
                                h.tool_version.empty() ? "" : " " + h.tool_version));
  line("process", absl::StrCat("pid ", h.pid, " (parent ", h.ppid, ") on ",
                               h.hostname.empty() ? "unknown host" : h.hostname));
  line("command", h.command_line.empty() ? "unknown" : absl::StrJoin(h.command_line, " "));
  if (!h.rank_env.empty()) line("rank", JoinKeyValues(h.rank_env));
  if (!h.job_id.empty()) line("job", h.job_id);
  line("clock",
       absl::StrCat(Sv(ClockDomainName(h.clock_domain)), ", time base ", h.time_base_ns, " ns"));
  line("cuda",
       absl::StrCat("driver ", FormatDriverVersion(h.cuda_driver_version),
                    h.display_driver_version.empty()
                        ? std::string()
                        : absl::StrCat(" (kernel module ", h.display_driver_version, ")"),
                    ", CUPTI ", FormatCuptiVersion(h.cupti_version)));
  if (m.span.empty) {
    line("span", "no timed events");
  } else {
    line("span", absl::StrCat(FormatDuration(m.span.duration_ns()), " (from ",
                              Relative(m.span.begin_ns), " to ", Relative(m.span.end_ns), ")"));
    if (h.unix_time_base_ns != 0) {
      line("started", FormatUtcTimestamp(h.unix_time_base_ns + m.span.begin_ns));
    }
  }
  if (m.end_of_trace.has_value()) {
    line("ended", absl::StrCat(EndText(*m.end_of_trace), " at ",
                               Relative(m.end_of_trace->timestamp_ns)));
  } else {
    line("ended", "no end-of-trace marker");
  }
  for (size_t i = 0; i < h.config.size(); ++i) {
    line(i == 0 ? "config" : "", absl::StrCat(h.config[i].first, "=", h.config[i].second));
  }
}

void AppendTextDevices(const TraceModel& m, TextForm& text) {
  std::string& out = text.prose();
  out += "\ndevices\n";
  if (m.devices.empty()) {
    out += "  (none described)\n";
  } else {
    Table t({{"ID", true, CellKind::kInt},
             {"Name", false, CellKind::kString},
             {"CC", false, CellKind::kString},
             {"SMs", true, CellKind::kInt},
             {"Warps/SM", true, CellKind::kInt},
             {"Regs/SM", true, CellKind::kInt},
             {"Shared/SM", true, CellKind::kInt},
             {"Memory", true, CellKind::kInt},
             {"Clock", true, CellKind::kInt}});
    for (const DeviceInfo& d : m.devices) {
      t.AddRow({d.id, d.name,
                absl::StrCat(d.compute_capability_major, ".", d.compute_capability_minor),
                d.sm_count, d.max_warps_per_sm, d.max_registers_per_sm,
                FormatBytes(d.max_shared_memory_per_sm), FormatBytes(d.global_memory_bytes),
                absl::StrFormat("%.0f MHz", d.core_clock_khz / 1000.0)});
    }
    text.Add(std::move(t));
    for (const DeviceInfo& d : m.devices) {
      if (std::string problem = DeviceLimitsProblem(d); !problem.empty()) {
        absl::StrAppend(&out, "  ! device ", d.id, " is unusable: ", problem,
                        "; occupancy is not computed for it\n");
      }
    }
  }
}

// Event counts by kind, and the capture windows.
void AppendTextEvents(const TraceModel& m, TextForm& text) {
  std::string& out = text.prose();
  out += "\nevents\n";
  {
    Table t({{"Kind", false, CellKind::kString}, {"Count", true, CellKind::kInt}});
    for (const auto& [kind, count] : CountEventsByKind(m)) t.AddRow({kind, count});
    text.Add(std::move(t));
  }

  if (!m.capture_windows.empty()) {
    out += "\ncapture windows\n";
    Table t({{"ID", true, CellKind::kInt},
             {"Begin", true, CellKind::kInt},
             {"By", false, CellKind::kString},
             {"End", true, CellKind::kInt},
             {"By", false, CellKind::kString}});
    for (const CaptureWindowRange& w : m.capture_windows) {
      t.AddRow({w.id, Relative(w.begin_ns), Sv(CaptureTriggerName(w.begin_trigger)),
                w.end_ns.has_value() ? Relative(*w.end_ns) : std::string("open"),
                w.end_ns.has_value() ? Sv(CaptureTriggerName(w.end_trigger)) : std::string()});
    }
    text.Add(std::move(t));
  }
}

// What PM and PC sampling produced, and what of the kernels they saw.
void AppendTextSampling(const TraceModel& m, const InfoSamplingCoverage& coverage,
                        TextForm& text) {
  std::string& out = text.prose();
  if (!m.pm_metric_sets.empty()) {
    out += "\npm sampling\n";
    for (const PmSetSummary& s : SummarizePm(m)) {
      absl::StrAppend(&out, "  device ", s.set->device_id, ": ", s.samples, " samples every ",
                      FormatDuration(s.set->interval_ns), " (", s.set->metric_names.size(),
                      " metrics), covering ", FormatDuration(s.sampled_ns), "\n");
    }
    const uint64_t gap_ns = StatCounterValue(m, stats::kPmGapNs.name);
    const uint64_t overflows = StatCounterValue(m, stats::kPmOverflows.name);
    // The recorder counts only gaps between two samples, not the time before the first or
    // after the last: the coverage lines below measure every hole from the samples.
    absl::StrAppend(&out, "  gaps the recorder counted: ", FormatDuration(gap_ns),
                    "; hardware buffer overflows: ", overflows, "\n");
    if (const uint64_t busy = StatCounterValue(m, stats::kPmDecodeBusyUs.name); busy != 0) {
      absl::StrAppend(&out, "  decode thread CPU: ", FormatDuration(busy * 1e3), " (CUPTI decode ",
                      FormatDuration(StatCounterValue(m, stats::kPmDecodeDataUs.name) * 1e3),
                      ", metric evaluation ",
                      FormatDuration(StatCounterValue(m, stats::kPmEvaluateUs.name) * 1e3), ")\n");
    }
    if (coverage.pm) AppendCoverageText(*coverage.pm, "PM", "occupancy and tail", out);
  }

  if (const PcSummary pc = SummarizePc(m); pc.requested) {
    out += "\npc sampling\n";
    absl::StrAppend(&out, "  samples: ", pc.samples, " in ", pc.pc_records, " PC records, ",
                    pc.batches, " batches; dropped samples: ", pc.dropped,
                    "; hardware buffer full: ", pc.buffer_full, "\n");
    absl::StrAppend(&out, "  CUPTI totals: ", pc.cupti_total, " samples (", pc.non_user,
                    " in non-user kernels); contexts sampled: ", pc.contexts, "; cubins: ",
                    pc.cubins, " (", pc.cubin_bytes, " bytes)\n");
    if (!pc.diagnosis.empty()) {
      absl::StrAppend(&out, "  PC sampling was on but produced 0 samples: likely cause: ",
                      pc.diagnosis, "\n");
    }
    if (coverage.pc) AppendCoverageText(*coverage.pc, "PC", "stalls", out);
  }
  if (!coverage.problem.empty()) absl::StrAppend(&out, "  ", coverage.problem, "\n");
}

// The writer's stats, the import problems, and the notices collectors left.
void AppendTextCounters(const TraceModel& m, TextForm& text) {
  std::string& out = text.prose();
  absl::StrAppend(&out, "\nstats",
                  m.stats_packets == 0 ? " (no stats packet)"
                  : m.stats_final      ? " (final)"
                                       : " (last periodic; no final stats)",
                  "\n");
  if (!m.stats.empty()) {
    Table t({{"Counter", false, CellKind::kString},
             {"Value", true, CellKind::kInt},
             {"Severity", false, CellKind::kString},
             {"Meaning", false, CellKind::kString}});
    for (const StatCounter& c : m.stats) {
      // Upper case makes data loss stand out in a column of "info".
      std::string severity = Sv(SeverityName(c.severity));
      if (Alarming(c)) severity = absl::AsciiStrToUpper(severity) + " !";
      t.AddRow({c.name, c.value, severity, StatMeaning(c.name)});
    }
    text.Add(std::move(t));
  }

  if (!m.import_counters.empty()) {
    out += "\nimport problems\n";
    Table t({{"Counter", false, CellKind::kString},
             {"Value", true, CellKind::kInt},
             {"Severity", false, CellKind::kString},
             {"Meaning", false, CellKind::kString}});
    for (const StatCounter& c : m.import_counters) {
      t.AddRow({c.name, c.value, Sv(SeverityName(c.severity)), c.description});
    }
    text.Add(std::move(t));
  }

  if (!m.notices.empty()) {
    out += "\nnotices\n";
    for (const Notice& n : m.notices) {
      absl::StrAppend(&out, "  [", Sv(SeverityName(n.severity)), "] ", Relative(n.timestamp_ns),
                      " ", n.source, ": ", n.message, "\n");
    }
  }
}

// Lost data and truncation, last so that they are seen.
void AppendTextWarnings(const TraceModel& m, TextForm& text) {
  std::string& out = text.prose();
  std::vector<std::string> warnings;
  for (const StatCounter& c : m.stats) {
    if (Alarming(c)) {
      warnings.push_back(
          absl::StrCat(c.name, " = ", c.value, " (", Sv(SeverityName(c.severity)), ")"));
    }
  }
  if (!warnings.empty()) {
    absl::StrAppend(&out,
                    "\nWARNING: the writer or collectors lost data or failed; figures may "
                    "be incomplete: ",
                    absl::StrJoin(warnings, ", "), "\n");
  }
  if (m.truncation.truncated()) {
    absl::StrAppend(&out, "\nTRUNCATED: ", m.truncation.Describe(), "\n");
  }
}

}  // namespace

std::vector<std::pair<std::string, uint64_t>> CountEventsByKind(const TraceModel& m) {
  uint64_t window_edges = 0;
  for (const CaptureWindowRange& w : m.capture_windows)
    window_edges += w.end_ns.has_value() ? 2 : 1;
  // Timed events from the counts, which a model loaded without its event tables has too.
  return {
      {"kernel", m.EventCount(EventKind::kKernel)},
      {"memcpy", m.EventCount(EventKind::kMemcpy)},
      {"memset", m.EventCount(EventKind::kMemset)},
      {"memory", m.EventCount(EventKind::kMemory)},
      {"synchronization", m.EventCount(EventKind::kSync)},
      {"api_call", m.EventCount(EventKind::kApiCall)},
      {"nvtx_range", m.EventCount(EventKind::kNvtxRange)},
      {"nvtx_mark", m.EventCount(EventKind::kNvtxMark)},
      {"graph_launch", m.EventCount(EventKind::kGraphLaunch)},
      {"pm_sample", m.pm_samples.size()},
      {"pc_samples", m.pc_sample_batches.size()},
      {"capture_window", window_edges},
      {"overhead", m.EventCount(EventKind::kOverhead)},
      {"notice", m.notices.size()},
  };
}

std::string FormatUtcTimestamp(uint64_t unix_ns) {
  if (unix_ns == 0) return "";
  const time_t seconds = static_cast<time_t>(unix_ns / 1000000000);
  struct tm tm {};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%S", &tm);
  return absl::StrFormat("%s.%09uZ", buffer, unix_ns % 1000000000);
}

void AddTraceInfoText(const TraceModel& m, const std::string& name,
                      const InfoSamplingCoverage& coverage, Report& out) {
  TextForm text(out);
  AppendTextHeader(m, name, text);
  AppendTextDevices(m, text);
  AppendTextEvents(m, text);
  AppendTextSampling(m, coverage, text);
  AppendTextCounters(m, text);
  AppendTextWarnings(m, text);
  text.Flush();
}

}  // namespace warpscope
