// The report of `warpscope advise`: its tables and its text form (rendered by RenderReport).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "analyzers/analyses/advise/advise.h"

namespace warpscope {
namespace {

std::string ThreadText(const AdviseFinding& f) {
  if (f.os_tid == 0 && f.thread_name.empty()) return "";
  if (f.thread_name.empty()) return absl::StrCat(f.os_tid);
  return absl::StrCat(f.os_tid, " (", f.thread_name, ")");
}

// "line train.py:57 train_step · nvtx step/forward · api cudaMemcpy · ..." with the parts that
// are known.
std::string WhereText(const AdviseFinding& f) {
  std::vector<std::string> parts;
  if (f.job_rank >= 0) parts.push_back(absl::StrCat("rank ", f.job_rank));
  if (!f.where.empty()) parts.push_back(absl::StrCat("line ", f.where));
  if (!f.nvtx_path.empty()) parts.push_back(absl::StrCat("nvtx ", f.nvtx_path));
  if (!f.api_call.empty()) parts.push_back(absl::StrCat("api ", f.api_call));
  if (!f.kernel.empty()) parts.push_back(absl::StrCat("work ", ShortKernelName(f.kernel, true)));
  if (!f.stream.empty()) parts.push_back(absl::StrCat("stream ", f.stream));
  if (const std::string t = ThreadText(f); !t.empty()) parts.push_back("thread " + t);
  parts.push_back(absl::StrCat("device ", f.device_id));
  return absl::StrJoin(parts, " | ");
}

// The text form, prose from top to bottom: the headline, each finding with where, evidence
// and fix, then the notes.
std::string AdviseText(const AdviseReport& report) {
  std::string out = absl::StrCat("warpscope advise: ", report.label, "\n", report.headline, "\n");
  if (report.steps > 0 && report.steady_steps == 0) {
    absl::StrAppendFormat(&out,
                          "%d steps (%s), spanning %.1f%% of the run after warm-up: not the "
                          "program's iteration, so costs are over the GPU span (name the "
                          "iteration's range with --step-range)\n",
                          report.steps, report.step_rule, 100 * report.steps_coverage);
  } else if (report.steps > 0) {
    absl::StrAppend(&out, report.steps, " steps (", report.step_rule, "); ", report.warmup_steps,
                    " warm-up step", report.warmup_steps == 1 ? "" : "s", ", then ",
                    report.steady_steps, " steady step", report.steady_steps == 1 ? "" : "s",
                    " of ", FormatDuration(static_cast<double>(report.steady_step_ns)),
                    " on average: costs are per steady step\n");
  }
  int rank = 0;
  bool once_heading = false, memory_heading = false;
  for (const AdviseFinding& f : report.findings) {
    if (IsMemoryRule(f.rule) && !memory_heading) {
      memory_heading = true;
      absl::StrAppend(&out, "\ndevice memory (costs in bytes, not time):\n");
    } else if (f.one_time && !once_heading) {
      once_heading = true;
      absl::StrAppend(&out, "\npaid once, before the steady state (start-up, warm-up):\n");
    }
    // A wait whose saving depends on the host's speed shows its range: the cost as recorded,
    // up to cost_max_ns should the host keep up with the GPU.
    const std::string up_to =
        f.cost_max_ns > f.cost_ns
            ? absl::StrCat(", up to ", FormatDuration(static_cast<double>(f.cost_max_ns)))
            : "";
    const std::string cost =
        IsMemoryRule(f.rule) ? MemoryCostText(f)
        : HasCostPerStep(report, f)
            ? absl::StrCat(CostText(report, f), "; ",
                           FormatDuration(static_cast<double>(f.cost_ns)), up_to, " in all")
            : absl::StrFormat("%s%s (%.1f%% of the GPU span)",
                              FormatDuration(static_cast<double>(f.cost_ns)), up_to,
                              100 * f.cost_fraction);
    absl::StrAppendFormat(&out, "\n#%d [%s] %s: %s, %d occurrence%s\n", ++rank,
                          AdviseSeverityName(f.severity), f.rule, cost,
                          static_cast<int>(f.occurrences), f.occurrences == 1 ? "" : "s");
    absl::StrAppend(&out, "   ", f.title, "\n   where:    ", WhereText(f),
                    "\n   evidence: ", f.evidence, "\n   fix:      ", f.fix, "\n");
  }
  if (!report.notes.empty()) {
    absl::StrAppend(&out, "\nnotes:\n");
    for (const std::string& note : report.notes) absl::StrAppend(&out, "  ", note, "\n");
  }
  return out;
}

}  // namespace

Table AdviseFindingsTable(const AdviseReport& report) {
  using K = CellKind;
  Table table({{"order", true, K::kInt},
               {"rule", false, K::kString},
               {"severity", false, K::kString},
               {"cost_ns", true, K::kInt},
               {"cost_percent", true, K::kReal},
               {"cost_max_ns", true, K::kInt},
               {"occurrences", true, K::kInt},
               {"device", true, K::kInt},
               {"nvtx_path", false, K::kString},
               {"kernel", false, K::kString},
               {"api_call", false, K::kString},
               {"stream", false, K::kString},
               {"os_tid", true, K::kInt},
               {"thread_name", false, K::kString},
               {"title", false, K::kString},
               {"evidence", false, K::kString},
               {"fix", false, K::kString},
               {"worst_begin_ns", true, K::kInt},
               {"worst_end_ns", true, K::kInt},
               {"rank", true, K::kInt},
               {"one_time", false, K::kBool},
               {"where", false, K::kString},
               {"host_blocked_ns", true, K::kInt},
               {"host_blocked_calls", true, K::kInt},
               {"host_blocked_gpu_idle_ns", true, K::kInt},
               {"cost_per_step_ns", true, K::kInt},
               {"step_percent", true, K::kReal}});
  int rank = 0;
  for (const AdviseFinding& f : report.findings) {
    const bool per_step = HasCostPerStep(report, f);
    table.AddRow({++rank, f.rule, std::string(AdviseSeverityName(f.severity)), f.cost_ns,
                  Cell(100 * f.cost_fraction), f.cost_max_ns, f.occurrences, f.device_id,
                  f.nvtx_path, f.kernel, f.api_call, f.stream, f.os_tid, f.thread_name, f.title,
                  f.evidence, f.fix, f.worst_begin_ns, f.worst_end_ns, f.job_rank,
                  Cell::Bool(f.one_time), f.where, f.host_blocked_ns, f.host_blocked_calls,
                  f.host_blocked_gpu_idle_ns, per_step ? Cell(f.cost_per_step_ns) : Cell(),
                  per_step ? Cell(100 * f.step_fraction) : Cell()});
  }
  return table;
}

Report AdviseReportTables(const AdviseReport& report) {
  Report out;
  out.scalars = {{"trace", report.label},
                 {"headline", report.headline},
                 {"wall_ns", report.wall_ns},
                 {"gpu_span_ns", report.gpu_span_ns},
                 {"gpu_busy_ns", report.gpu_busy_ns},
                 {"gpu_busy_percent", Cell(100 * report.busy_fraction)},
                 {"gpu_idle_ns", report.gpu_idle_ns},
                 {"idle_attributed_ns", report.idle_attributed_ns},
                 {"steps", static_cast<uint64_t>(report.steps)},
                 {"warmup_steps", static_cast<uint64_t>(report.warmup_steps)},
                 {"step_rule", report.step_rule},
                 {"steady_steps", static_cast<uint64_t>(report.steady_steps)},
                 {"steady_step_ns", report.steady_step_ns},
                 {"steps_coverage_percent", Cell(100 * report.steps_coverage)}};
  out.tables.emplace_back("findings", AdviseFindingsTable(report));
  Table devices({{"device", true, CellKind::kInt},
                 {"begin_ns", true, CellKind::kInt},
                 {"end_ns", true, CellKind::kInt},
                 {"busy_ns", true, CellKind::kInt}});
  for (const AdviseDeviceBusy& d : report.devices) {
    devices.AddRow({d.device_id, d.begin_ns, d.end_ns, d.busy_ns});
  }
  out.tables.emplace_back("devices", std::move(devices));
  // The memory findings' costs in bytes, by their order among the findings: only when there
  // are any (a trace without memory events reads as before).
  Table memory({{"order", true, CellKind::kInt},
                {"rule", false, CellKind::kString},
                {"device", true, CellKind::kInt},
                {"bytes", true, CellKind::kInt},
                {"steps_to_full", true, CellKind::kInt},
                {"where", false, CellKind::kString}});
  for (size_t i = 0; i < report.findings.size(); ++i) {
    const AdviseFinding& f = report.findings[i];
    if (!IsMemoryRule(f.rule)) continue;
    memory.AddRow({static_cast<uint64_t>(i + 1), f.rule, f.device_id, f.memory_bytes,
                   f.steps_to_full < 0 ? Cell() : Cell(f.steps_to_full), f.where});
  }
  if (memory.num_rows() > 0) out.tables.emplace_back("memory", std::move(memory));
  Table notes({{"note", false, CellKind::kString}});
  for (const std::string& note : report.notes) notes.AddRow({note});
  out.tables.emplace_back("notes", std::move(notes));
  // The text form is prose: one block of lines, no table.
  TextBlock prose;
  prose.before = absl::StrSplit(AdviseText(report), '\n');
  prose.before.pop_back();  // the text ends in a newline
  out.text_blocks.push_back(std::move(prose));
  return out;
}

}  // namespace warpscope
