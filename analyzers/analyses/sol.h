// The `warpscope sol` report: per kernel, how close it ran to each unit's peak (PM samples
// recorded with `--pm-metrics sol`), the unit closest to its limit and a verdict (memory-bound,
// compute-bound with its pipe, latency-bound), and a roofline of the top kernels (docs/sol.md).
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_SOL_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_SOL_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/measures/sol_attribution.h"
#include "analyzers/render/report.h"
#include "analyzers/render/short_names.h"

namespace warpscope {

// Below this share of peak on every unit a kernel is latency-bound: Nsight Compute's
// SpeedOfLight rule uses the same 60% ("throughput below 60% of peak typically indicates
// latency issues"), so both tools give the same verdict on the same figures.
inline constexpr double kSolLatencyBoundPct = 60.0;

// kMixed: the kernel's figures rest mostly on samples it shared with other kernels (it ran
// for less than kSolOwnShareForVerdict of its time inside samples of its own): they are the
// mix's figures, not its own, so no verdict is drawn from them.
enum class SolVerdict { kNoFigure, kLatencyBound, kMemoryBound, kComputeBound, kMixed };
inline constexpr double kSolOwnShareForVerdict = 0.5;
// Such a kernel's figures are unmixed from the shared samples (sol_unmix.h); a verdict is drawn
// from them when the interval of every unit is at most this many points wide.
inline constexpr double kSolUnmixedWidestForVerdict = 30.0;
std::string_view SolVerdictName(SolVerdict verdict);

struct SolRow {
  SolKernel kernel;
  double time_share = 0;  // of the kernel time of the selected kernels
  SolVerdict verdict = SolVerdict::kNoFigure;
  bool unmixed = false;   // its figures are the unmixed ones (it shared most of its samples)
  size_t closest = 0;     // index in kSolUnits of the unit closest to its limit
  std::string bound_by;   // the memory unit or compute pipe named by the verdict
};

struct SolReportOptions {
  std::string kernel_regex;  // RE2, searched in the name; empty = all
  std::optional<uint32_t> device;
  size_t top = 20;  // rows kept, most GPU time first (0 = all)
};

struct SolReport {
  std::vector<SolRow> rows;  // most GPU time first
  uint64_t kernel_ns = 0;    // of the matched kernels
  bool has_sol_samples = false;
  uint64_t interval_ns = 0;  // the first device's sampling interval
  std::vector<std::string> notes;
};

// The verdict and closest unit of one kernel from its figures (pure, tested).
void JudgeSol(SolRow& row);

absl::StatusOr<SolReport> BuildSolReport(const PmInputs& in, const SolReportOptions& options);
Report SolReportTables(const SolReport& report, const KernelNames& names);

// The device's roofs: FLOP/s of FP32 on the FMA pipe, of the tensor pipe at FP16/BF16 dense
// and TF32, of FP64, and DRAM bytes/s.
struct SolRoofs {
  double fp32 = 0, tensor_fp16 = 0, tensor_tf32 = 0, fp64 = 0;
  double dram_bytes_per_s = 0;
  std::string dram_source;  // where the bandwidth came from
};
SolRoofs SolRoofsOf(const DeviceInfo& device, const SolSamples& samples);
std::string SolRooflineSvg(const SolReport& report, const SolRoofs& roofs,
                           const KernelNames& names, size_t top);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_SOL_H_
