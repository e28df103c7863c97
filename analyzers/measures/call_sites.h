// Call sites: the one frame of a recorded call stack that says where the program made a CUDA
// call (`loss.item()` at train.py:57), by one rule that summary, advise and the exports share
// (docs/format.md, "Call stacks").
#ifndef WARPSCOPE_ANALYZERS_MEASURES_CALL_SITES_H_
#define WARPSCOPE_ANALYZERS_MEASURES_CALL_SITES_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzers/model/trace_model.h"

namespace warpscope {

// What a call site shows when the call has no frame to name.
inline constexpr std::string_view kNoStack = "no stack";
inline constexpr std::string_view kNoPythonFrames =
    "launched from a thread with no Python frames";
// After a site found among the outermost frames of a stack cut in the middle.
inline constexpr char kPastCut[] = "[stack cut]";

struct CallSite {
  // The frame chosen; nullptr when the call has no stack (`site` says kNoStack) or no frame
  // the rule accepts (kNoPythonFrames).
  const StackFrameInfo* frame = nullptr;
  // "train.py:57" (Python: the file's base name and the line), "libapp.so+0x1a2f" (native),
  // or one of the phrases above.
  std::string site;
  std::string function;  // "train_step"; "" when unknown
  std::string file;      // the whole path (Python file or native module); "" when none
  // The frame is one of the stack's outermost, kept past frames the recorder left out: the
  // stack was deeper than its depth, and frames between this line and the CUDA call are not
  // known.
  bool past_cut = false;

  // "train.py:57 train_step" (the site and function), or the phrase; kPastCut after it when
  // `past_cut`.
  std::string Display() const;
  bool operator<(const CallSite& other) const;
};

// A Python file of the standard library or of an installed package (site-packages,
// dist-packages, lib/python3.*), or generated code: not the program's own code.
bool IsLibraryPythonFile(std::string_view file);
// Code a library generated at run time: `<string>`, `<eval_with_key>.N`, `<frozen ...>` (any
// name in angle brackets but `<stdin>`), Inductor's cache (`.../torchinductor_<user>/...`) and
// Triton's (`.../.triton/...`).
bool IsGeneratedPythonFile(std::string_view file);
// A native module of CUDA, the profiler or a runtime under the program (libcuda, libcudart,
// libcupti, libwarpscope*, libnvrtc, libcublas*, libcudnn*, libnccl, libtorch*, libc10*,
// libstdc++, libc, libpthread, ld-linux, libgcc_s, libm, libpython3*), by its path's base name.
bool IsRuntimeModule(std::string_view module_path);
// A demangled function that is an autograd node's backward: `...::MmBackward0::apply(...)`.
bool IsAutogradNode(std::string_view function);

// The call site of `stack`: its innermost Python frame of the program's own code; else its
// innermost Python frame; with no Python frame, its innermost native frame of the program's
// own modules (neither a runtime module nor under site-packages); else the library frame that
// names the operation: the innermost autograd node (`MmBackward0::apply`), else the innermost
// named frame outside the plumbing modules (the driver, the runtime, the profiler, libc,
// libstdc++) and the plumbing functions (c10::, std::, at::detail::, at::_ops::, at::empty*,
// at::native::empty*, at::native::resize*, kernel wrappers, the autograd engine); else none
// (kNoPythonFrames). A null stack is kNoStack.
CallSite CallSiteOfStack(const TraceModel& model, const CallStackInfo* stack);
// The call site of the API call with `correlation_id` (also its kernel's, copy's or sync's).
CallSite CallSiteOfCall(const TraceModel& model, uint32_t correlation_id);

// One frame as the exports list it: "train.py:57 train_step", "libapp.so+0x1a2f main".
std::string FrameDisplay(const StackFrameInfo& frame);
// A frame's function as people read it: Python's qualified name, a native symbol demangled.
std::string FunctionName(const StackFrameInfo& frame);
// Every frame of `stack`, innermost first, as FrameDisplay writes it, with the cut marked:
// "... N frames left out ..." before the outermost frames kept past it, or "..." last when the
// outer frames were left out.
std::vector<std::string> StackLines(const TraceModel& model, const CallStackInfo& stack);

// The call site most of `correlation_ids` were made from, sites with a frame first (ties: the
// first in CallSite order); kNoStack when there are none. E.g. the launch line of a kernel's most common stack.
CallSite MostCommonCallSite(const TraceModel& model, const std::vector<uint32_t>& correlation_ids);

// Calls summed by their call site: the site, each call's time, and the time per CUDA call or
// kernel name made there.
struct CallSiteGroup {
  CallSite site;
  std::vector<uint64_t> durations_ns;  // one per call
  std::map<std::string, uint64_t> ns_by_call;
  uint64_t total_ns = 0;
};

// Sums calls (of one trace or several) by call site, keyed by the site's display and file.
// The site is worked out once per stack: a kernel launched a million times comes from a few
// stacks.
class CallSiteGroups {
 public:
  using Key = std::pair<std::string, std::string>;  // CallSite::Display(), CallSite::file
  // Returns the group the call went to.
  const CallSiteGroup& Add(const TraceModel& model, uint32_t correlation_id,
                           std::string_view call, uint64_t ns);
  const std::map<Key, CallSiteGroup>& groups() const { return groups_; }

 private:
  std::map<Key, CallSiteGroup> groups_;
  const TraceModel* model_ = nullptr;  // whose stacks by_stack_ holds
  std::map<const CallStackInfo*, CallSiteGroup*> by_stack_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_CALL_SITES_H_
