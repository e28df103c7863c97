// Figures of kernels that share their PM samples with kernels of other names, unmixed.
//
// A sample of length D that kernel groups k overlap by o_k measured, for a unit, the share of
// peak y. Kernels add their work, idle time adds none:
//     y = Σ_k (o_k / D) · r_k
// where r_k is group k's share of peak while it runs. Over all samples this is a least-squares
// problem in the r_k, solved within [0, 100] by coordinate descent on the normal equations,
// which are summed sample by sample (memory grows with the groups that share samples, not with
// samples). Groups that the samples cannot tell apart (always together in the same
// proportions) keep the figure they are pulled toward: a penalty of kPull times each group's
// own weight toward its `prior` (the pooled figure). The interval is a delete-one-block
// jackknife over kBlocks runs of consecutive samples. A group whose samples cannot tell it from
// the groups beside it (separability below kSolUnmixSeparable, sol_unmix.cc) is not solved. docs/sol.md says when a figure is used.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_SOL_UNMIX_H_
#define WARPSCOPE_ANALYZERS_MEASURES_SOL_UNMIX_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "analyzers/measures/pm_attribution.h"
#include "analyzers/measures/sol_attribution.h"

namespace warpscope {

struct SolUnmixed {
  // The group overlaps some sample holding each unit, and the samples tell it apart from the
  // groups beside it: separable >= kSolUnmixSeparable.
  bool solved = false;
  // The share of the group's own signal the other groups cannot reproduce (1: alone in its
  // samples; near 0: always beside the same groups in the same proportions).
  double separable = 0;
  SolUnitValues value{}, low{}, high{};  // percent of peak; NaN for units not solved
  uint32_t samples = 0;                  // samples the group overlaps
};

inline constexpr double kSolUnmixPull = 1e-6;
inline constexpr size_t kSolUnmixBlocks = 10;
inline constexpr double kSolUnmixSeparable = 0.01;

// `group` names each kernel's group (0..groups-1), `attribution` is AttributeSamples over the
// same kernels and samples, `prior` one figure per group (NaN: none; 0 is then the pull).
// Returns one entry per group.
std::vector<SolUnmixed> UnmixSolFigures(std::span<const uint32_t> group, size_t groups,
                                        const SolSamples& samples,
                                        const PmAttribution& attribution,
                                        std::span<const SolUnitValues> prior);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_SOL_UNMIX_H_
