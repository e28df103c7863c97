// The one-page HTML report of `warpscope advise --html`: inline CSS and SVG, no script and
// nothing fetched, so it opens anywhere and can be attached to a bug report.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/measures/tail_summary.h"
#include "analyzers/analyses/advise/advise.h"
#include "analyzers/analyses/stalls.h"
#include "analyzers/analyses/tail.h"
#include "analyzers/analyses/timeline.h"
#include "analyzers/model/interval_union.h"
#include "analyzers/render/svg.h"

namespace warpscope {
namespace {

constexpr const char* kStyle = R"(
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
.headline{background:#f3f6fa;border-left:4px solid #2b6cb0;padding:8px 12px}
table{border-collapse:collapse;font-size:13px;width:100%}
th,td{border:1px solid #ccc;padding:4px 6px;vertical-align:top;text-align:left}
th{background:#eee}td.num{text-align:right;white-space:nowrap}
.sev-high{color:#b00020;font-weight:bold}.sev-medium{color:#b35c00}.sev-low{color:#555}
.note{color:#555;font-size:13px}
)";

std::string Html(std::string_view text) { return SvgEscape(text); }

// The stretch to draw: the worst occurrence of the top finding that has one, widened so its
// surroundings show.
bool WorstStretch(const AdviseReport& report, uint64_t* begin, uint64_t* end,
                  const AdviseFinding** finding) {
  for (const AdviseFinding& f : report.findings) {
    if (f.worst_end_ns <= f.worst_begin_ns) continue;
    const uint64_t length = f.worst_end_ns - f.worst_begin_ns;
    const uint64_t pad = std::max<uint64_t>(length, 10'000);
    *begin = f.worst_begin_ns > pad ? f.worst_begin_ns - pad : 0;
    *end = f.worst_end_ns + pad;
    *finding = &f;
    return true;
  }
  return false;
}

// "thread 4242 API": the OS thread id when the trace has it.
std::string ThreadLane(const TraceModel& model, uint64_t thread_id, std::string_view what) {
  const ThreadInfo* thread = model.FindThread(thread_id);
  const uint64_t shown = thread != nullptr && thread->os_tid != 0 ? thread->os_tid : thread_id;
  return absl::StrCat("thread ", shown, " ", std::string(what));
}

std::string Timeline(const AdviseReport& report, const TraceModel& model) {
  uint64_t begin = 0, end = 0;
  const AdviseFinding* f = nullptr;
  if (!WorstStretch(report, &begin, &end, &f)) return "";
  SvgTimeline::Options options;
  options.sort_rows = true;
  options.names_in_boxes = options.axis = options.legend = true;
  SvgTimeline svg(begin, end, options);
  const uint32_t device = f->device_id;
  auto lane = [](uint32_t stream) { return absl::StrCat("stream ", stream); };
  std::vector<TimeInterval> busy;
  for (const KernelEvent& k : model.kernels) {
    if (k.device_id != device) continue;
    const std::string name = KernelDisplayName(k);  // whole in the tooltip
    svg.Add(lane(k.stream_id), k.start_ns, k.end_ns(), "kernel", name,
            report.names.Show(name, false));
    busy.push_back({k.start_ns, k.end_ns()});
  }
  for (const MemcpyEvent& c : model.memcpys) {
    if (c.device_id != device) continue;
    svg.Add(lane(c.stream_id), c.start_ns, c.end_ns(), "copy",
            absl::StrCat(MemcpyOperationName(c.copy_kind), " ",
                         FormatBytes(static_cast<double>(c.bytes)), " ",
                         std::string(MemoryKindName(
                             c.copy_kind == v1::COPY_KIND_HTOD ? c.src_kind : c.dst_kind))));
    busy.push_back({c.start_ns, c.end_ns()});
  }
  for (const MemsetEvent& m : model.memsets) {
    if (m.device_id != device) continue;
    svg.Add(lane(m.stream_id), m.start_ns, m.end_ns(), "memset", std::string(kMemsetOperationName));
    busy.push_back({m.start_ns, m.end_ns()});
  }
  for (const IntervalGap& gap : UnionOf(std::move(busy)).gaps) svg.AddGap(gap.begin_ns, gap.end_ns);
  for (const ApiCallEvent& api : model.api_calls) {
    svg.Add(ThreadLane(model, api.thread_id, "API"), api.start_ns, api.end_ns(),
            std::string(ApiCallBoxClass(api.name)), std::string(api.name));
  }
  for (const NvtxRange& r : model.nvtx_ranges) {
    svg.Add(ThreadLane(model, r.thread_id, "NVTX"), r.start_ns, r.end_ns(), "range",
            std::string(r.name));
  }
  for (const OverheadEvent& o : model.overheads) {
    svg.Add(ThreadLane(model, o.thread_id, "recording"), o.start_ns, o.end_ns(), "overhead",
            std::string(o.kind));
  }
  return svg.Render(absl::StrCat("worst stretch of finding ", f->rule),
                    absl::StrCat(FormatDuration(static_cast<double>(end - begin)),
                                 " of the trace from ",
                                 FormatDuration(static_cast<double>(begin)), "; GPU idle shaded"));
}

std::string FindingsTable(const AdviseReport& report) {
  std::string s =
      "<table class=\"findings\"><tr><th>#</th><th>severity</th><th>rule</th><th>cost</th>"
      "<th>what</th><th>where</th><th>evidence</th><th>fix</th></tr>\n";
  int rank = 0;
  for (const AdviseFinding& f : report.findings) {
    std::string where;
    if (f.job_rank >= 0) absl::StrAppend(&where, "rank ", f.job_rank, "<br>");
    if (!f.where.empty()) absl::StrAppend(&where, "line ", Html(f.where), "<br>");
    if (!f.nvtx_path.empty()) absl::StrAppend(&where, "NVTX ", Html(f.nvtx_path), "<br>");
    if (!f.api_call.empty()) absl::StrAppend(&where, "API ", Html(f.api_call), "<br>");
    if (!f.kernel.empty()) absl::StrAppend(&where, Html(ShortKernelName(f.kernel, true)), "<br>");
    if (!f.stream.empty()) absl::StrAppend(&where, "stream ", Html(f.stream), "<br>");
    if (f.os_tid != 0) {
      absl::StrAppend(&where, "thread ", f.os_tid,
                      f.thread_name.empty() ? "" : absl::StrCat(" (", Html(f.thread_name), ")"),
                      "<br>");
    }
    absl::StrAppend(&where, "device ", f.device_id);
    absl::StrAppendFormat(
        &s,
        "<tr class=\"finding\"><td class=\"num\">%d</td><td class=\"sev-%s\">%s</td><td>%s</td>"
        "<td class=\"num\">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
        ++rank, AdviseSeverityName(f.severity), AdviseSeverityName(f.severity), Html(f.rule),
        Html(absl::StrCat(CostText(report, f), f.one_time ? ", paid once" : "")), Html(f.title),
        where, Html(f.evidence), Html(f.fix));
  }
  return s + "</table>\n";
}

// The active-warp curve of the kernel with the costliest tail, and the stall bars.
std::string SampleCharts(const TraceModel& model, const KernelNames& names) {
  std::string s;
  if (!model.pm_samples.empty()) {
    const PmInputs in = PmInputsOf(model);
    const TailReport tails = BuildTailReport(in, TailOptions{});
    if (const ActiveWarpCurve* curve = CurveToDraw(tails); curve != nullptr) {
      absl::StrAppend(&s, "<h2>Active warps of the kernel with the costliest tail</h2>\n",
                      TailSvg(*curve, tails, in.devices, names));
    }
  }
  StallReportOptions options;
  options.locator = {};
  if (absl::StatusOr<StallReport> stalls = BuildStallReport({&model}, {model.source_name}, options);
      stalls.ok() && !stalls->rows.empty()) {
    stalls->names = names;
    absl::StrAppend(&s, "<h2>Warp stall reasons</h2>\n", RenderStallSvg(*stalls));
  }
  return s;
}

}  // namespace

std::string RenderAdviseHtml(const AdviseReport& report, const TraceModel& model,
                             std::string_view picture_title, std::string_view picture) {
  std::string s = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>warpscope advise: ",
      Html(report.label), "</title><style>", kStyle, "</style></head><body>\n",
      "<h1>warpscope advise: ", Html(report.label), "</h1>\n<p class=\"headline\">",
      Html(report.headline), "</p>\n<h2>Findings, by the time a fix would save</h2>\n");
  if (report.findings.empty()) {
    absl::StrAppend(&s, "<p class=\"none\">No findings.</p>\n");
  } else {
    absl::StrAppend(&s, FindingsTable(report));
  }
  if (!picture.empty()) {
    absl::StrAppend(&s, "<h2>", Html(picture_title), "</h2>\n", std::string(picture), "\n");
  }
  if (std::string timeline = Timeline(report, model); !timeline.empty()) {
    absl::StrAppend(&s, "<h2>Timeline of the worst stretch</h2>\n", timeline);
  }
  absl::StrAppend(&s, SampleCharts(model, report.names));
  for (const std::string& note : report.notes) {
    absl::StrAppend(&s, "<p class=\"note\">", Html(note), "</p>\n");
  }
  return s + "</body></html>\n";
}

}  // namespace warpscope
