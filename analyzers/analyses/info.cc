// Renders `warpscope info` (see info.h).
#include "analyzers/analyses/info.h"

#include <algorithm>
#include <ctime>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/info_coverage.h"
#include "analyzers/analyses/info_sampling.h"
#include "analyzers/model/trace_limits.h"
#include "proto/writer/stats_table.h"

namespace warpscope {
namespace {

std::string Sv(std::string_view s) { return std::string(s); }

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

InfoSamplingCoverage SamplingCoverageOf(const TraceModel& m) {
  return ComputeInfoSamplingCoverage(m, !m.pm_metric_sets.empty(), SummarizePc(m).requested);
}

// Counters worth a warning: data loss or errors with a non-zero value.
bool Alarming(const StatCounter& c) { return c.value != 0 && c.severity != v1::SEVERITY_INFO; }

// The trace, its process and clock, its span and how it ended.
void AppendTextHeader(const TraceModel& m, const std::string& name, std::string& out) {
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
    line("ended", absl::StrCat(Sv(EndReasonName(m.end_of_trace->reason)), " at ",
                               Relative(m.end_of_trace->timestamp_ns)));
  } else {
    line("ended", "no end-of-trace marker");
  }
  for (size_t i = 0; i < h.config.size(); ++i) {
    line(i == 0 ? "config" : "", absl::StrCat(h.config[i].first, "=", h.config[i].second));
  }
}

void AppendTextDevices(const TraceModel& m, std::string& out) {
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
    out += t.RenderText();
    for (const DeviceInfo& d : m.devices) {
      if (std::string problem = DeviceLimitsProblem(d); !problem.empty()) {
        absl::StrAppend(&out, "  ! device ", d.id, " is unusable: ", problem,
                        "; occupancy is not computed for it\n");
      }
    }
  }
}

// Event counts by kind, and the capture windows.
void AppendTextEvents(const TraceModel& m, std::string& out) {
  out += "\nevents\n";
  {
    Table t({{"Kind", false, CellKind::kString}, {"Count", true, CellKind::kInt}});
    for (const auto& [kind, count] : CountEventsByKind(m)) t.AddRow({kind, count});
    out += t.RenderText();
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
    out += t.RenderText();
  }
}

// What PM and PC sampling produced, and what of the kernels they saw.
void AppendTextSampling(const TraceModel& m, const InfoSamplingCoverage& coverage,
                        std::string& out) {
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
void AppendTextCounters(const TraceModel& m, std::string& out) {
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
    out += t.RenderText();
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
    out += t.RenderText();
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
void AppendTextWarnings(const TraceModel& m, std::string& out) {
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

std::string RenderText(const TraceModel& m, const std::string& name) {
  std::string out;
  AppendTextHeader(m, name, out);
  AppendTextDevices(m, out);
  AppendTextEvents(m, out);
  AppendTextSampling(m, SamplingCoverageOf(m), out);
  AppendTextCounters(m, out);
  AppendTextWarnings(m, out);
  return out;
}

void WriteJsonHeader(const TraceHeader& h, JsonWriter& j) {
  j.Key("header").BeginObject();
  j.Key("format_major").Uint(h.format_major);
  j.Key("format_minor").Uint(h.format_minor);
  j.Key("tool_version").String(h.tool_version);
  j.Key("producer").String(h.producer);
  j.Key("pid").Uint(h.pid);
  j.Key("ppid").Uint(h.ppid);
  j.Key("hostname").String(h.hostname);
  j.Key("command_line").BeginArray();
  for (const std::string& arg : h.command_line) j.String(arg);
  j.EndArray();
  j.Key("rank_env").BeginObject();
  for (const auto& [k, v] : h.rank_env) j.Key(k).String(v);
  j.EndObject();
  j.Key("job_id").String(h.job_id);
  j.Key("clock_domain").String(ClockDomainName(h.clock_domain));
  j.Key("time_base_ns").Uint(h.time_base_ns);
  j.Key("unix_time_base_ns").Uint(h.unix_time_base_ns);
  j.Key("config").BeginObject();
  for (const auto& [k, v] : h.config) j.Key(k).String(v);
  j.EndObject();
  j.Key("cupti_version").Uint(h.cupti_version);
  j.Key("cuda_driver_version").Uint(h.cuda_driver_version);
  j.Key("display_driver_version").String(h.display_driver_version);
  j.EndObject();
}

void WriteJsonDevices(const TraceModel& m, JsonWriter& j) {
  j.Key("devices").BeginArray();
  for (const DeviceInfo& d : m.devices) {
    j.BeginObject();
    j.Key("id").Uint(d.id);
    j.Key("name").String(d.name);
    j.Key("compute_capability")
        .String(absl::StrCat(d.compute_capability_major, ".", d.compute_capability_minor));
    j.Key("sm_count").Uint(d.sm_count);
    j.Key("max_warps_per_sm").Uint(d.max_warps_per_sm);
    j.Key("max_blocks_per_sm").Uint(d.max_blocks_per_sm);
    j.Key("max_threads_per_block").Uint(d.max_threads_per_block);
    j.Key("max_registers_per_sm").Uint(d.max_registers_per_sm);
    j.Key("max_registers_per_block").Uint(d.max_registers_per_block);
    j.Key("max_shared_memory_per_sm").Uint(d.max_shared_memory_per_sm);
    j.Key("max_shared_memory_per_block").Uint(d.max_shared_memory_per_block);
    j.Key("max_shared_memory_per_block_optin").Uint(d.max_shared_memory_per_block_optin);
    j.Key("threads_per_warp").Uint(d.threads_per_warp);
    j.Key("core_clock_khz").Uint(d.core_clock_khz);
    j.Key("global_memory_bytes").Uint(d.global_memory_bytes);
    j.Key("l2_cache_bytes").Uint(d.l2_cache_bytes);
    j.Key("uuid").String(d.uuid);
    j.Key("pci_bus_id").Uint(d.pci_bus_id);
    if (std::string problem = DeviceLimitsProblem(d); !problem.empty()) {
      j.Key("problem").String(problem);
    }
    j.EndObject();
  }
  j.EndArray();
}

// Event counts, the span and the capture windows.
void WriteJsonEvents(const TraceModel& m, JsonWriter& j) {
  const TraceHeader& h = m.header;
  j.Key("event_counts").BeginObject();
  for (const auto& [kind, count] : CountEventsByKind(m)) j.Key(kind).Uint(count);
  j.EndObject();

  j.Key("span");
  if (m.span.empty) {
    j.Null();
  } else {
    j.BeginObject();
    j.Key("begin_ns").Uint(m.span.begin_ns);
    j.Key("end_ns").Uint(m.span.end_ns);
    j.Key("duration_ns").Uint(m.span.duration_ns());
    if (h.unix_time_base_ns != 0) {
      j.Key("wall_clock_begin_unix_ns").Uint(h.unix_time_base_ns + m.span.begin_ns);
      j.Key("wall_clock_begin").String(FormatUtcTimestamp(h.unix_time_base_ns + m.span.begin_ns));
    }
    j.EndObject();
  }

  j.Key("capture_windows").BeginArray();
  for (const CaptureWindowRange& w : m.capture_windows) {
    j.BeginObject();
    j.Key("id").Uint(w.id);
    j.Key("begin_ns").Uint(w.begin_ns);
    j.Key("begin_trigger").String(CaptureTriggerName(w.begin_trigger));
    j.Key("end_ns");
    if (w.end_ns.has_value()) {
      j.Uint(*w.end_ns);
    } else {
      j.Null();
    }
    j.Key("end_trigger");
    if (w.end_ns.has_value()) {
      j.String(CaptureTriggerName(w.end_trigger));
    } else {
      j.Null();
    }
    j.EndObject();
  }
  j.EndArray();
}

void WriteJsonSampling(const TraceModel& m, const InfoSamplingCoverage& coverage, JsonWriter& j) {
  if (!m.pm_metric_sets.empty()) {
    j.Key("pm_sampling").BeginObject();
    j.Key("metric_sets").BeginArray();
    for (const PmSetSummary& s : SummarizePm(m)) {
      j.BeginObject();
      j.Key("id").Uint(s.set->id);
      j.Key("device_id").Uint(s.set->device_id);
      j.Key("interval_ns").Uint(s.set->interval_ns);
      j.Key("metrics").Uint(s.set->metric_names.size());
      j.Key("samples").Uint(s.samples);
      j.Key("sampled_ns").Uint(s.sampled_ns);
      j.EndObject();
    }
    j.EndArray();
    j.Key("gap_ns").Uint(StatCounterValue(m, stats::kPmGapNs.name));
    j.Key("overflows").Uint(StatCounterValue(m, stats::kPmOverflows.name));
    j.Key("decode_busy_us").Uint(StatCounterValue(m, stats::kPmDecodeBusyUs.name));
    if (coverage.pm) WriteCoverageJson(*coverage.pm, j.Key("coverage"));
    j.EndObject();
  }

  if (const PcSummary pc = SummarizePc(m); pc.requested) {
    j.Key("pc_sampling").BeginObject();
    j.Key("samples").Uint(pc.samples);
    j.Key("pc_records").Uint(pc.pc_records);
    j.Key("batches").Uint(pc.batches);
    j.Key("samples_dropped").Uint(pc.dropped);
    j.Key("hardware_buffer_full").Uint(pc.buffer_full);
    j.Key("cupti_total_samples").Uint(pc.cupti_total);
    j.Key("non_user_kernel_samples").Uint(pc.non_user);
    j.Key("contexts_sampled").Uint(pc.contexts);
    j.Key("cubins").Uint(pc.cubins);
    j.Key("cubin_bytes").Uint(pc.cubin_bytes);
    j.Key("zero_samples_cause").String(pc.diagnosis);
    if (coverage.pc) WriteCoverageJson(*coverage.pc, j.Key("coverage"));
    j.EndObject();
  }
}

// Stats, import counters and notices. Stats counters are described by the stats table,
// import counters by the reader.
void WriteJsonCounters(const TraceModel& m, JsonWriter& j) {
  auto counters = [&](const std::vector<StatCounter>& list, bool stats_counters) {
    j.BeginArray();
    for (const StatCounter& c : list) {
      j.BeginObject();
      j.Key("name").String(c.name);
      j.Key("value").Uint(c.value);
      j.Key("severity").String(SeverityName(c.severity));
      j.Key("description").String(stats_counters ? StatMeaning(c.name) : c.description);
      j.EndObject();
    }
    j.EndArray();
  };
  j.Key("stats").BeginObject();
  j.Key("packets").Uint(m.stats_packets);
  j.Key("final").Bool(m.stats_final);
  j.Key("counters");
  counters(m.stats, true);
  j.EndObject();
  j.Key("import_counters");
  counters(m.import_counters, false);

  j.Key("notices").BeginArray();
  for (const Notice& n : m.notices) {
    j.BeginObject();
    j.Key("timestamp_ns").Uint(n.timestamp_ns);
    j.Key("severity").String(SeverityName(n.severity));
    j.Key("source").String(n.source);
    j.Key("message").String(n.message);
    j.EndObject();
  }
  j.EndArray();
}

// How the trace ended: its marker and any truncation.
void WriteJsonEnd(const TraceModel& m, JsonWriter& j) {
  j.Key("end_of_trace");
  if (m.end_of_trace.has_value()) {
    j.BeginObject();
    j.Key("timestamp_ns").Uint(m.end_of_trace->timestamp_ns);
    j.Key("reason").String(EndReasonName(m.end_of_trace->reason));
    j.EndObject();
  } else {
    j.Null();
  }
  j.Key("truncation").BeginObject();
  j.Key("truncated").Bool(m.truncation.truncated());
  j.Key("partial_packet").Bool(m.truncation.partial_packet);
  j.Key("partial_packet_offset").Uint(m.truncation.partial_offset);
  j.Key("bytes_lost").Uint(m.truncation.bytes_lost);
  j.Key("message").String(m.truncation.Describe());
  j.EndObject();
}

std::string RenderJson(const TraceModel& m, const std::string& name) {
  JsonWriter j;
  j.BeginObject();
  j.Key("trace").String(name);
  j.Key("file_size_bytes").Uint(m.file_size);
  j.Key("packets").Uint(m.packet_count);
  WriteJsonHeader(m.header, j);
  WriteJsonDevices(m, j);
  WriteJsonEvents(m, j);
  WriteJsonSampling(m, SamplingCoverageOf(m), j);
  WriteJsonCounters(m, j);
  WriteJsonEnd(m, j);
  j.Key("worst_severity").String(SeverityName(m.WorstSeverity()));
  j.EndObject();
  return j.str() + "\n";
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

std::string RenderTraceInfo(const TraceModel& model, OutputFormat format,
                            const TraceInfoOptions& options) {
  const std::string name = options.display_name.empty() ? model.source_name : options.display_name;
  return format == OutputFormat::kTable ? RenderText(model, name) : RenderJson(model, name);
}

}  // namespace warpscope
