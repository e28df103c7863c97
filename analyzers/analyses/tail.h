// The `warpscope tail` report: kernels ranked by total tail cost (aggregated per name), per
// instance on request, and the SVG of one instance's active-warp curve.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_TAIL_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_TAIL_H_

#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "analyzers/analyses/pm_sweep.h"
#include "analyzers/measures/tail_summary.h"
#include "analyzers/render/output.h"
#include "analyzers/render/report.h"
#include "analyzers/render/short_names.h"

namespace warpscope {

struct TailReportOptions {
  std::string kernel_regex;  // RE2, searched in the demangled name; empty = all
  bool instances = false;    // also list every launch (keeps every launch's curve)
  size_t top = 0;            // kernel names kept, costliest tail first (0 = all), and their launches
  TailOptions tail;
  KernelNames names;  // whole, or short (--short-names)
};

// The launches and PM samples are swept in time order (pm_sweep.h) and each launch's curve
// summed into its name's summary as it comes (TailReportBuilder): memory grows with distinct
// kernel names and launch configurations, not with launches or samples, unless `instances`
// asks for every launch's curve.
absl::StatusOr<TailReport> BuildTailReportFiltered(const PmSources& in,
                                                   const TailReportOptions& options);
absl::StatusOr<TailReport> BuildTailReportFiltered(const PmInputs& in,
                                                   const TailReportOptions& options);

// Keeps the `top` kernel names with the most tail cost (summaries are ranked so) and the
// curves of those names; 0 keeps all.
void KeepTopKernels(size_t top, TailReport& report);

// The report, as the CLI (text, CSV, JSON) and Python give it: tables "kernels" (per name)
// and, with `instances`, "instances" (per launch) and "curves" (each launch's resampled
// active-warp curve, a row per point); scalar "problem" (why the trace gives no curves, or
// empty). Its text form is the per-name table with durations for people, the verdicts and
// footnotes below it, then (with instances) the per-launch table. Kernels named by `names`
// (--short-names).
Report TailReportTables(const TailReport& report, bool instances,
                        const KernelNames& names = KernelNames());

// The curve to draw: the worst launch (largest tail cost) of the top-ranked kernel name that
// has a curve. nullptr when no launch has one.
const ActiveWarpCurve* CurveToDraw(const TailReport& report);

// SVG of `curve`, one of `report`'s (RenderActiveWarpSvg with the capacity of its device, the
// last of `devices` with its id), its kernel named so.
std::string TailSvg(const ActiveWarpCurve& curve, const TailReport& report,
                    std::span<const DeviceInfo> devices, const KernelNames& names = KernelNames());

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_TAIL_H_
