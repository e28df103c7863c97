// Named PM sampling metric sets (`--pm-metrics sol`): a name that stands for a metric list,
// chosen to fit one pass on GH100 (docs/sol.md gives the pass counts CUPTI's host API
// reported). Pure; the analyzers read the same table to find each unit's metric by name.
#ifndef WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_METRIC_SETS_H_
#define WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_METRIC_SETS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace warpscope {

// One unit of the speed-of-light view: its short name (a column of `warpscope sol`), whether
// it is a memory unit (else a compute one), and the metric, a share of the unit's peak
// sustained rate over the sample's elapsed time, in percent.
struct SolUnitMetric {
  std::string_view unit;
  bool memory = false;
  std::string_view metric;
};

// The units, in the order reports show them. "sm" is Nsight Compute's Compute (SM)
// throughput, the most loaded of the SM's sub-units; "issue" is instructions issued; the
// pipes follow. L1 is read as its two data pipes (LSU and texture wavefronts):
// l1tex__throughput, the whole unit's figure, does not fit one pass with the active-warp
// metric (CUPTI reports two passes on GH100).
inline constexpr SolUnitMetric kSolUnits[] = {
    {"sm", false, "TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed"},
    {"issue", false, "TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed"},
    {"fma", false,
     "TPC.TriageCompute.sm__inst_executed_pipe_fma_realtime.avg.pct_of_peak_sustained_elapsed"},
    {"alu", false,
     "TPC.TriageCompute.sm__inst_executed_pipe_alu_realtime.avg.pct_of_peak_sustained_elapsed"},
    {"tensor", false,
     "TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed"},
    {"fp64", false,
     "TPC.TriageCompute.sm__pipe_fp64_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed"},
    {"dram", true, "FBSP.TriageCompute.dramc__throughput.avg.pct_of_peak_sustained_elapsed"},
    {"dram_read", true,
     "FBSP.TriageCompute.dramc__read_throughput.avg.pct_of_peak_sustained_elapsed"},
    {"dram_write", true,
     "FBSP.TriageCompute.dramc__write_throughput.avg.pct_of_peak_sustained_elapsed"},
    {"l2", true, "LTS.TriageCompute.lts__throughput.avg.pct_of_peak_sustained_elapsed"},
    {"l1_lsu", true,
     "SM_A.TriageCompute.l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed"},
    {"l1_tex", true,
     "SM_A.TriageCompute.l1tex__data_pipe_tex_wavefronts.avg.pct_of_peak_sustained_elapsed"},
};

// Raw counts over the sample, for the roofline's bytes/s and FLOP/s.
inline constexpr char kMetricDramBytesRead[] = "dram__bytes_read.sum";
inline constexpr char kMetricDramBytesWrite[] = "dram__bytes_write.sum";
// Warp instructions on the FMA pipe (FFMA, FMUL, FADD, IMAD, ...), summed over the SMs.
inline constexpr char kMetricFmaPipeInstructions[] =
    "TPC.TriageCompute.sm__inst_executed_pipe_fma_realtime.sum";

// The default set: active warps per active SM cycle, active SM cycles and elapsed cycles,
// from which occupancy and GPU-wide active warps follow exactly (sum.per_cycle_elapsed =
// avg.per_cycle_active x SMs x cycles_active.avg / elapsed). Each metric adds CUPTI decode and
// evaluation work: on the H200 at 200 us this set costs 23 us of decode and 5 us of
// evaluation a sample, against 49 and 39 us for the same set plus SM, DRAM and tensor-pipe
// throughput (docs/pm_sampling.md).
inline const std::vector<std::string>& DefaultPmMetrics() {
  static const std::vector<std::string> kMetrics = {
      "sm__warps_active.avg.per_cycle_active",
      "sm__cycles_active.avg",
      "gr__cycles_elapsed.max",
  };
  return kMetrics;
}

// The `sol` set: the default set's three active-warp metrics (occupancy and tail work on a
// sol recording too), the units above and the raw counts: 18 metrics, one pass on GH100.
// The sol set's interval when none is given (pm_sampling_config.cc says why).
inline constexpr uint64_t kSolPmIntervalNs = 1000000;

inline const std::vector<std::string>& SolPmMetrics() {
  static const std::vector<std::string> kMetrics = [] {
    std::vector<std::string> m = DefaultPmMetrics();
    for (const SolUnitMetric& u : kSolUnits) m.emplace_back(u.metric);
    for (const char* raw : {kMetricDramBytesRead, kMetricDramBytesWrite, kMetricFmaPipeInstructions})
      m.emplace_back(raw);
    return m;
  }();
  return kMetrics;
}

// The list a set name stands for ("default", "sol"); nullptr for any other text.
inline const std::vector<std::string>* NamedPmMetricSet(std::string_view name) {
  if (name == "default") return &DefaultPmMetrics();
  if (name == "sol") return &SolPmMetrics();
  return nullptr;
}

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_METRIC_SETS_H_
