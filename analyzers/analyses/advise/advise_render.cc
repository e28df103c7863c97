// Table, CSV and JSON output of `warpscope advise`.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/advise/advise.h"

namespace warpscope {
namespace {

std::string ThreadText(const AdviseFinding& f) {
  if (f.os_tid == 0 && f.thread_name.empty()) return "";
  if (f.thread_name.empty()) return absl::StrCat(f.os_tid);
  return absl::StrCat(f.os_tid, " (", f.thread_name, ")");
}

// "nvtx step/forward · api cudaMemcpy · ..." with the parts that are known.
std::string WhereText(const AdviseFinding& f) {
  std::vector<std::string> parts;
  if (f.job_rank >= 0) parts.push_back(absl::StrCat("rank ", f.job_rank));
  if (!f.nvtx_path.empty()) parts.push_back(absl::StrCat("nvtx ", f.nvtx_path));
  if (!f.api_call.empty()) parts.push_back(absl::StrCat("api ", f.api_call));
  if (!f.kernel.empty()) parts.push_back(absl::StrCat("work ", ShortKernelName(f.kernel, true)));
  if (!f.stream.empty()) parts.push_back(absl::StrCat("stream ", f.stream));
  if (const std::string t = ThreadText(f); !t.empty()) parts.push_back("thread " + t);
  parts.push_back(absl::StrCat("device ", f.device_id));
  return absl::StrJoin(parts, " | ");
}

std::string RenderText(const AdviseReport& report) {
  std::string out = absl::StrCat("warpscope advise: ", report.label, "\n", report.headline, "\n");
  if (report.steps > 0) {
    absl::StrAppend(&out, report.steps, " steps (", report.step_rule, "); ", report.warmup_steps,
                    " warm-up step", report.warmup_steps == 1 ? "" : "s",
                    " before the steady state; costs are summed over every step\n");
  }
  int rank = 0;
  for (const AdviseFinding& f : report.findings) {
    // A wait whose saving depends on the host's speed shows its range: the cost as recorded,
    // up to cost_max_ns should the host keep up with the GPU.
    std::string cost = FormatDuration(static_cast<double>(f.cost_ns));
    if (f.cost_max_ns > f.cost_ns) {
      absl::StrAppend(&cost, ", up to ", FormatDuration(static_cast<double>(f.cost_max_ns)));
    }
    absl::StrAppendFormat(&out, "\n#%d [%s] %s: %s (%.1f%% of the GPU span), %d occurrence%s\n",
                          ++rank, AdviseSeverityName(f.severity), f.rule, cost,
                          100 * f.cost_fraction, static_cast<int>(f.occurrences),
                          f.occurrences == 1 ? "" : "s");
    absl::StrAppend(&out, "   ", f.title, "\n   where:    ", WhereText(f),
                    "\n   evidence: ", f.evidence, "\n   fix:      ", f.fix, "\n");
  }
  if (!report.notes.empty()) {
    absl::StrAppend(&out, "\nnotes:\n");
    for (const std::string& note : report.notes) absl::StrAppend(&out, "  ", note, "\n");
  }
  return out;
}

Table FindingsTable(const AdviseReport& report) {
  Table table({{"rank", true},
               {"rule"},
               {"severity"},
               {"cost_ns", true},
               {"cost_percent", true},
               {"cost_max_ns", true},
               {"occurrences", true},
               {"device", true},
               {"nvtx_path"},
               {"kernel"},
               {"api_call"},
               {"stream"},
               {"thread"},
               {"title"},
               {"evidence"},
               {"fix"},
               {"job_rank", true},
               {"one_time"}});
  int rank = 0;
  for (const AdviseFinding& f : report.findings) {
    table.AddRow({++rank, f.rule, std::string(AdviseSeverityName(f.severity)), f.cost_ns,
                  PercentCell(f.cost_fraction), f.cost_max_ns, f.occurrences, f.device_id,
                  f.nvtx_path, f.kernel, f.api_call, f.stream, ThreadText(f), f.title, f.evidence,
                  f.fix, f.job_rank, f.one_time ? "yes" : "no"});
  }
  return table;
}

void WriteFinding(const AdviseFinding& f, int rank, JsonWriter& json) {
  json.BeginObject();
  json.Key("rank").Int(rank).Key("rule").String(f.rule);
  json.Key("severity").String(AdviseSeverityName(f.severity));
  json.Key("cost_ns").Uint(f.cost_ns).Key("cost_percent").Double(100 * f.cost_fraction);
  json.Key("cost_max_ns").Uint(f.cost_max_ns);
  json.Key("occurrences").Uint(f.occurrences).Key("device").Uint(f.device_id);
  json.Key("nvtx_path").String(f.nvtx_path).Key("kernel").String(f.kernel);
  json.Key("api_call").String(f.api_call).Key("stream").String(f.stream);
  json.Key("os_tid").Uint(f.os_tid).Key("thread_name").String(f.thread_name);
  json.Key("title").String(f.title).Key("evidence").String(f.evidence).Key("fix").String(f.fix);
  json.Key("worst_begin_ns").Uint(f.worst_begin_ns).Key("worst_end_ns").Uint(f.worst_end_ns);
  json.Key("job_rank").Int(f.job_rank).Key("one_time").Bool(f.one_time);
  json.EndObject();
}

std::string RenderJson(const AdviseReport& report) {
  JsonWriter json;
  json.BeginObject();
  json.Key("trace").String(report.label).Key("headline").String(report.headline);
  json.Key("wall_ns").Uint(report.wall_ns).Key("gpu_span_ns").Uint(report.gpu_span_ns);
  json.Key("gpu_busy_ns").Uint(report.gpu_busy_ns);
  json.Key("gpu_busy_percent").Double(100 * report.busy_fraction);
  json.Key("gpu_idle_ns").Uint(report.gpu_idle_ns);
  json.Key("idle_attributed_ns").Uint(report.idle_attributed_ns);
  json.Key("steps").Uint(report.steps).Key("warmup_steps").Uint(report.warmup_steps);
  json.Key("step_rule").String(report.step_rule);
  json.Key("devices").BeginArray();
  for (const AdviseDeviceBusy& d : report.devices) {
    json.BeginObject().Key("device").Uint(d.device_id).Key("begin_ns").Uint(d.begin_ns);
    json.Key("end_ns").Uint(d.end_ns).Key("busy_ns").Uint(d.busy_ns).EndObject();
  }
  json.EndArray().Key("findings").BeginArray();
  int rank = 0;
  for (const AdviseFinding& f : report.findings) WriteFinding(f, ++rank, json);
  json.EndArray().Key("notes").BeginArray();
  for (const std::string& note : report.notes) json.String(note);
  json.EndArray().EndObject();
  return json.str() + "\n";
}

}  // namespace

std::string RenderAdviseReport(const AdviseReport& report, OutputFormat format) {
  switch (format) {
    case OutputFormat::kTable:
      return RenderText(report);
    case OutputFormat::kCsv:
      return FindingsTable(report).RenderCsv();
    case OutputFormat::kJson:
      break;
  }
  return RenderJson(report);
}

}  // namespace warpscope
