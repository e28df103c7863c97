// Training steps from NVTX ranges: which repeated range marks a program's steps, and each
// step's span on the host. Used wherever figures are given per step (the job view, the Kineto
// export's ProfilerStep#N).
//
// The rule: a family is a range name with its numbers replaced by <N> ("step_12" and
// "step_13" are family "step_<N>", "ProfilerStep#3" is "ProfilerStep#<N>"; RangeFamily), on
// one thread. Among the
// families that repeat at least twice without overlapping, the step family is, in order of
// preference: the one named by the user; the outermost numbered family; the outermost family
// whose name says step, iter or batch; the outermost family with the most instances. A
// library's ranges (IsLibraryRange) are chosen only when named by the user. Step i
// runs from the start of its range to the start of the next (the last to its range's end), so
// host time between two step ranges belongs to the step before it.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_STEPS_H_
#define WARPSCOPE_ANALYZERS_MEASURES_STEPS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/model/interval_union.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

struct Step {
  std::string name;           // the range's own name, e.g. "step_12"
  std::optional<uint64_t> number;  // its trailing number, when it has one
  uint64_t start_ns = 0;      // the range's start
  uint64_t end_ns = 0;        // the next step's start (the last: its range's end)
  uint64_t range_end_ns = 0;  // the range's own end
  uint64_t duration_ns() const { return end_ns - start_ns; }
};

struct StepSet {
  std::string family;  // e.g. "step_<N>"; empty when no steps were found
  uint64_t thread_id = 0;
  std::string how;     // which rule chose it, for reports ("numbered range step_<N>", ...)
  // Chosen by the last rule: a repeated range that is neither numbered nor named a step (and
  // not asked for), which may be a phase rather than the program's iteration.
  bool guessed = false;
  std::vector<Step> steps;  // in time order
  // The step holding `ns` (host time), or -1 before the first and after the last.
  int64_t StepAt(uint64_t ns) const;
};

// Warm-up steps: the leading steps that take at least kWarmupFactor times the median step
// (first CUDA calls, cuBLAS handles, the caching allocator's first allocations, autotuning,
// compilation), at most half of the steps. Their count; 0 without steps.
inline constexpr double kWarmupFactor = 1.5;
size_t WarmupSteps(const StepSet& steps);

// The steady state's steps: those after the first `warmup` (at most all of them), and their
// summed duration. Costs per step are the steady state's costs over `steps`.
struct SteadyStepTime {
  size_t steps = 0;
  uint64_t ns = 0;
  uint64_t mean_ns() const { return steps == 0 ? 0 : ns / steps; }
};
SteadyStepTime SteadyStepTimeOf(const StepSet& steps, size_t warmup);

// `requested`: a range name or family given by the user ("" = choose by the rule above). A
// requested name that matches no repeated range gives an empty set whose `how` says so.
StepSet FindSteps(const std::vector<NvtxRange>& ranges, std::string_view requested = "");

// The family of a range name: each number in it replaced by <N>, so that the instances of a
// numbered range group as one ("step_12" -> "step_<N>", "ProfilerStep#12" ->
// "ProfilerStep#<N>", "iteration 12" -> "iteration <N>", "epoch 3 step 12" -> "epoch <N>
// step <N>", "layers.3.attn" -> "layers.<N>.attn"). A number is a run of digits with no
// letter on either side, or one that follows a word naming a step (step, iter, iteration,
// batch, epoch: "step12") with no letter after it. Digits that are part of a word stay:
// "conv2d", "layer3", "fp16", "sm90".
std::string RangeFamily(std::string_view name);

// Whether a range is a library's rather than the program's: in a library's NVTX domain (NCCL,
// CCCL/CUB, cuDNN, cuBLAS, NVSHMEM) or named in a library's namespace (cub::, thrust::,
// cutlass::, PyTorch's aten::, autograd::, c10d::, ...; nccl*, cudnn*, cublas*). Such ranges
// wrap one library call each and repeat as often as it is called.
bool IsLibraryRange(std::string_view name, std::string_view domain);


// The host time of the steps' thread in each NVTX range path per step: over each step's span,
// the time each path (RangeFamily of the path of ranges open, outermost first; "" when none is
// open, NCCL's own left out) was the innermost open, less the time the thread was blocked
// waiting for the GPU (synchronisations, blocking copies); the median over the steps (a step
// without the path counts 0). Empty without steps.
std::map<std::string, uint64_t> HostTimePerStep(const TraceModel& model, const StepSet& steps);
// The same from the NVTX ranges and the steps' thread's blocked time (merged, in order), for a
// reader that streams the other events (the job's rank digest).
std::map<std::string, uint64_t> HostTimePerStep(const std::vector<NvtxRange>& ranges,
                                                const StepSet& steps,
                                                const std::vector<TimeInterval>& blocked);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_STEPS_H_
