// Tail metrics per kernel name, summed over its launches' active-warp curves (active_warps.h)
// as they come, in any order: the tail report's rows. What is held grows with distinct kernel
// names and launch configurations, not with launches, unless every curve is asked for.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_TAIL_SUMMARY_H_
#define WARPSCOPE_ANALYZERS_MEASURES_TAIL_SUMMARY_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analyzers/measures/active_warps.h"
#include "analyzers/measures/occupancy_calculator.h"
#include "analyzers/measures/pm_attribution.h"

namespace warpscope {

// Per kernel name over its launches (only launches with tail metrics count in the means;
// means are weighted by duration).
struct KernelTailSummary {
  std::string name;
  uint32_t launches = 0;
  uint32_t launches_with_curve = 0;
  uint64_t total_ns = 0;  // all launches
  uint64_t curve_ns = 0;  // launches with tail metrics
  double total_tail_cost_ns = 0;
  double tail_fraction = 0;
  double tail_low = 0, tail_high = 0;  // duration-weighted, as tail_fraction (ActiveWarpCurve)
  // When tail_high - tail_low exceeds kMaxTailWidth: what would give enough; "" otherwise.
  std::string too_few;
  double tail_cost_fraction = 0;
  double below_50 = 0;
  double below_25 = 0;
  double steady = 0;
  double peak = 0;              // max over launches
  uint32_t shared_samples = 0;  // over launches with tail metrics
  uint32_t above_limit = 0;     // samples capped at the limit, over launches with tail metrics
  uint32_t launches_levels_from_shared = 0;  // launches whose steady/peak rest on shared samples
  double limit_warps = 0;                    // largest limit over its launches
  // Index into TailReport::curves of its launch with the largest tail cost (the first in the
  // trace's order of equals); set when launches_with_curve > 0.
  uint32_t worst_instance = 0;
  std::string verdict;
  // Of total_ns, the time of the launches with tail metrics inside PM samples: what the
  // figures rest on, with launches_with_curve. Below kLowCoverage, coverage_note says so
  // (LowCoverageNote); it is kept apart from `verdict`, which says only whether a tail is
  // material.
  double covered_ns = 0;
  std::string coverage_note;
  std::string note;  // e.g. why no launch had a curve
  double covered_fraction() const { return total_ns > 0 ? covered_ns / total_ns : 0; }
};

// A summary's tail fraction is "too few" beyond this width of its interval.
inline constexpr double kMaxTailWidth = 0.10;

struct TailReport {
  // In the trace's order of launches: every selected launch's curve, or per kernel name the
  // one TailReportBuilder keeps (see there).
  std::vector<ActiveWarpCurve> curves;
  std::vector<KernelTailSummary> summaries;  // ranked by total tail cost, descending
  std::string problem;                       // non-empty: the trace cannot give curves
};

// Why a trace gives no curves, or "": its PM samples could not be evaluated
// (`samples_unavailable`), it has none with their metrics resolved, or none with GPU-wide
// active warps.
std::string MissingSamplesProblem(std::string_view samples_unavailable, bool any_samples,
                                  bool has_gpu_warps);

// Builds a TailReport from launches handed over in any order. Each launch is first added in
// the trace's order (AddLaunch, which counts it in its name's summary), then its curve, built
// with its kind's limit (AddCurve). Every launch's curve is kept with `keep_every_curve`; else
// per kernel name one: its worst launch's (largest tail cost), or while no launch of it has
// tail metrics, its first launch's with a curve (what CurveToDraw falls back to drawing).
// Memory: per kernel name its summary and that curve, per kind a limit.
class TailReportBuilder {
 public:
  // `select` (null: all) is asked once per kernel name; `devices` must outlive AddLaunch.
  TailReportBuilder(const TailOptions& options, bool keep_every_curve,
                    std::span<const DeviceInfo> devices,
                    const std::function<bool(std::string_view)>& select = {});

  // Kinds are (name, launch configuration, device); kNotSelected when `select` refused the name.
  static constexpr uint32_t kNotSelected = UINT32_MAX;
  uint32_t AddLaunch(const KernelEvent& kernel);
  // The resident-warp limit of a selected kind's launches (ResidentWarpLimitOf).
  const ResidentWarpLimit& LimitOf(uint32_t kind) const { return kinds_[kind].limit; }
  // The curve of a launch of a selected kind; curve.kernel_index is its place in the trace.
  void AddCurve(uint32_t kind, ActiveWarpCurve curve);
  // The summaries, finished and ranked; the curves kept, in the trace's order. Once, last.
  TailReport Finish(std::string problem);

 private:
  struct Kind {
    uint32_t summary = 0;
    ResidentWarpLimit limit;
  };
  // What a name's summary needs of its launches beside the sums.
  struct NameState {
    std::optional<ActiveWarpCurve> kept;  // without keep_every_curve
    uint64_t worst_index = 0;             // the worst launch's kernel_index
    double worst_cost = 0;
    std::optional<uint64_t> note_index;  // the launch whose note the summary gives
  };
  void AddToSummary(const ActiveWarpCurve& c, KernelTailSummary& sum, NameState& state);
  void Keep(ActiveWarpCurve& c, NameState& state);

  const TailOptions options_;
  const bool keep_every_curve_;
  std::span<const DeviceInfo> devices_;
  std::function<bool(std::string_view)> select_;
  absl::flat_hash_map<std::string, uint32_t> summary_of_name_;  // kNotSelected: left out
  absl::flat_hash_map<std::tuple<uint32_t, uint64_t, uint32_t>, uint32_t> kind_of_;
  std::vector<Kind> kinds_;
  std::vector<KernelTailSummary> summaries_;  // in the order of their first launch
  std::vector<NameState> names_;              // beside summaries_
  std::vector<ActiveWarpCurve> curves_;       // with keep_every_curve
};

// Curves and summaries for the kernels whose name `select` accepts (all when null), from the
// whole tables: every launch's curve is kept.
TailReport BuildTailReport(const PmInputs& in, const TailOptions& options,
                           const std::function<bool(std::string_view)>& select = {});

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_TAIL_SUMMARY_H_
