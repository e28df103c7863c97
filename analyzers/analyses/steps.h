// Training steps from NVTX ranges: which repeated range marks a program's steps, and each
// step's span on the host. Used wherever figures are given per step (the job view, the Kineto
// export's ProfilerStep#N).
//
// The rule: a family is a range name with its trailing number taken off ("step_12" and
// "step_13" are family "step_", "ProfilerStep#3" is "ProfilerStep#"), on one thread. Among the
// families that repeat at least twice without overlapping, the step family is, in order of
// preference: the one named by the user; the outermost numbered family; the outermost family
// whose name says step, iter or batch; the outermost family with the most instances. Step i
// runs from the start of its range to the start of the next (the last to its range's end), so
// host time between two step ranges belongs to the step before it.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_STEPS_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_STEPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  std::string family;  // e.g. "step_"; empty when no steps were found
  uint64_t thread_id = 0;
  std::string how;     // which rule chose it, for reports ("numbered range step_<N>", ...)
  std::vector<Step> steps;  // in time order
  // The step holding `ns` (host time), or -1 before the first and after the last.
  int64_t StepAt(uint64_t ns) const;
};

// `requested`: a range name or family given by the user ("" = choose by the rule above). A
// requested name that matches no repeated range gives an empty set whose `how` says so.
StepSet FindSteps(const std::vector<NvtxRange>& ranges, std::string_view requested = "");

// The family of a range name: without its trailing digits ("step_12" -> "step_").
std::string_view StepFamily(std::string_view name);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_STEPS_H_
