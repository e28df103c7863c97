// The call-site rule (call_sites.h): which frame of a stack is the program's line.
#include "analyzers/measures/call_sites.h"

#include <array>
#include <cstdint>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/render/output.h"
#include "collectors/activity/kernel_names.h"

namespace warpscope {
namespace {

// Runtime modules by base name: `name` exact, or followed by a version or a variant
// (".so.12", "-2.31.so"); the starred ones of call_sites.h by any suffix ("libcublasLt",
// "libtorch_cuda"). "libc" alone must not take "libcustom.so". `plumbing`: the module only
// carries a call (the driver, the runtime, the profiler, C and C++'s runtimes): none of its
// frames names what the program asked for.
struct RuntimeModule {
  std::string_view name;
  bool any_suffix;
  bool plumbing;
};
constexpr std::array<RuntimeModule, 17> kRuntimeModules = {{
    {"libcuda", false, true},
    {"libcudart", false, true},
    {"libcupti", false, true},
    {"libwarpscope", true, true},
    {"libnvrtc", false, false},
    {"libcublas", true, false},
    {"libcudnn", true, false},
    {"libnccl", false, false},
    {"libtorch", true, false},
    {"libc10", true, false},
    {"libstdc++", false, true},
    {"libc", false, true},
    {"libpthread", false, true},
    {"ld-linux", false, true},
    {"libgcc_s", false, true},
    {"libm", false, true},
    {"libpython3", true, true},
}};

// Functions (demangled) that carry a call inside a library without naming an operation:
// PyTorch's caching allocator and dispatcher (all of c10), the allocation of an output
// (at::detail, at::empty, at::native::empty*, resize), the operator stubs and kernel wrappers,
// the autograd engine around a node, and the C++ library.
constexpr std::array<std::string_view, 15> kPlumbingFunctions = {
    "c10::",
    "std::",
    "__gnu_cxx::",
    "at::detail::",
    "at::_ops::",
    "at::empty",
    "at::native::empty",
    "at::native::resize",
    "at::(anonymous namespace)::",
    "at::TensorIteratorBase::",
    "at::meta::",
    "torch::autograd::Engine::",
    "torch::autograd::Node::",
    "torch::autograd::call_function",
    "torch::autograd::(anonymous namespace)::",
};

const RuntimeModule* FindRuntimeModule(std::string_view module_path) {
  const std::string base = PathBaseName(module_path);
  for (const RuntimeModule& m : kRuntimeModules) {
    if (!std::string_view(base).starts_with(m.name)) continue;
    if (m.any_suffix || base.size() == m.name.size()) return &m;
    const char next = base[m.name.size()];
    if (next == '.' || next == '-') return &m;
  }
  return nullptr;
}

// A native frame of the program's own code: a module neither of the runtimes nor installed
// with Python (an extension module under site-packages is a library's).
bool IsProgramModule(std::string_view module_path) {
  return !IsRuntimeModule(module_path) && !IsLibraryPythonFile(module_path);
}

// A library frame that names an operation, by NativeOpRank; 0: plumbing, or no name.
int NativeOpRank(const StackFrameInfo& frame, const std::string& function) {
  const RuntimeModule* m = FindRuntimeModule(frame.file);
  if ((m != nullptr && m->plumbing) || function.empty()) return 0;
  for (std::string_view prefix : kPlumbingFunctions) {
    if (function.starts_with(prefix)) return 0;
  }
  return IsAutogradNode(function) ? 2 : 1;
}

bool IsPython(const StackFrameInfo& frame) { return frame.kind == v1::FRAME_KIND_PYTHON; }

}  // namespace

bool IsLibraryPythonFile(std::string_view file) {
  return file.find("/site-packages/") != std::string_view::npos ||
         file.find("/dist-packages/") != std::string_view::npos ||
         file.find("/lib/python3.") != std::string_view::npos || IsGeneratedPythonFile(file);
}

bool IsGeneratedPythonFile(std::string_view file) {
  // "<string>", "<eval_with_key>.3", "<frozen ...>"; "<stdin>" is what the user typed.
  if (file.starts_with("<")) return file != "<stdin>";
  return file.find("/torchinductor_") != std::string_view::npos ||
         file.find("/.triton/") != std::string_view::npos;
}

bool IsRuntimeModule(std::string_view module_path) {
  return FindRuntimeModule(module_path) != nullptr;
}

bool IsAutogradNode(std::string_view function) {
  const size_t apply = function.find("::apply(");
  if (apply == std::string_view::npos) return false;
  const size_t scope = function.rfind("::", apply - 1);
  const std::string_view node =
      function.substr(scope == std::string_view::npos ? 0 : scope + 2,
                      apply - (scope == std::string_view::npos ? 0 : scope + 2));
  return node.find("Backward") != std::string_view::npos;
}

std::string FunctionName(const StackFrameInfo& frame) {
  // Native symbols are stored as the module's symbol table has them: mangled.
  if (IsPython(frame) || frame.function.empty()) return std::string(frame.function);
  return DemangleKernelName(std::string(frame.function).c_str());
}

std::string FrameDisplay(const StackFrameInfo& frame) {
  std::string out = IsPython(frame)
                        ? absl::StrCat(PathBaseName(frame.file), ":", frame.line)
                        : absl::StrFormat("%s+0x%x", PathBaseName(frame.file), frame.module_offset);
  if (!frame.function.empty()) absl::StrAppend(&out, " ", FunctionName(frame));
  return out;
}

std::vector<std::string> StackLines(const TraceModel& model, const CallStackInfo& stack) {
  std::vector<std::string> lines;
  lines.reserve(stack.frames.size() + 1);
  const size_t outer_from = stack.frames.size() - stack.outermost;
  for (size_t i = 0; i < stack.frames.size(); ++i) {
    if (stack.outermost > 0 && i == outer_from) {
      lines.push_back(absl::StrCat("... ", stack.left_out, " frames left out ..."));
    }
    lines.push_back(FrameDisplay(model.stack_frames[stack.frames[i]]));
  }
  if (stack.truncated && stack.outermost == 0) lines.emplace_back("...");
  return lines;
}

std::string CallSite::Display() const {
  if (frame == nullptr) return site;
  std::string out = function.empty() ? site : absl::StrCat(site, " ", function);
  if (past_cut) absl::StrAppend(&out, " ", kPastCut);
  return out;
}

bool CallSite::operator<(const CallSite& other) const {
  return std::tie(site, function, file, past_cut) <
         std::tie(other.site, other.function, other.file, other.past_cut);
}

CallSite CallSiteOfStack(const TraceModel& model, const CallStackInfo* stack) {
  CallSite out;
  if (stack == nullptr) {
    out.site = std::string(kNoStack);
    return out;
  }
  // Positions in the stack of the first frame of each kind, innermost first.
  constexpr size_t kNone = SIZE_MAX;
  size_t own_python = kNone, any_python = kNone, native = kNone, op = kNone;
  int op_rank = 0;
  for (size_t i = 0; i < stack->frames.size(); ++i) {
    const StackFrameInfo& f = model.stack_frames[stack->frames[i]];
    if (IsPython(f)) {
      if (any_python == kNone) any_python = i;
      if (own_python == kNone && !IsLibraryPythonFile(f.file)) own_python = i;
    } else if (native == kNone && IsProgramModule(f.file)) {
      native = i;
    } else if (native == kNone && op_rank < 2) {
      const int rank = NativeOpRank(f, FunctionName(f));
      if (rank > op_rank) op = i, op_rank = rank;
    }
  }
  const size_t at = own_python != kNone   ? own_python
                    : any_python != kNone ? any_python
                    : native != kNone     ? native
                                          : op;
  if (at == kNone) {
    out.site = std::string(kNoPythonFrames);
    return out;
  }
  out.frame = &model.stack_frames[stack->frames[at]];
  out.past_cut = at >= stack->frames.size() - stack->outermost;
  const StackFrameInfo& f = *out.frame;
  out.site = IsPython(f) ? absl::StrCat(PathBaseName(f.file), ":", f.line)
                         : absl::StrFormat("%s+0x%x", PathBaseName(f.file), f.module_offset);
  out.function = FunctionName(f);
  out.file = std::string(f.file);
  return out;
}

CallSite CallSiteOfCall(const TraceModel& model, uint32_t correlation_id) {
  return CallSiteOfStack(model, model.StackOfCall(correlation_id));
}

CallSite MostCommonCallSite(const TraceModel& model,
                            const std::vector<uint32_t>& correlation_ids) {
  // Counted per stack first: a kernel launched a million times comes from a few stacks.
  std::map<const CallStackInfo*, uint64_t> by_stack;
  for (uint32_t id : correlation_ids) ++by_stack[model.StackOfCall(id)];
  std::map<CallSite, uint64_t> by_site;
  for (const auto& [stack, count] : by_stack) by_site[CallSiteOfStack(model, stack)] += count;
  // A site with a frame wins over "no stack": the line is what the reader is after.
  const std::pair<const CallSite, uint64_t>* best = nullptr;
  for (const auto& entry : by_site) {
    if (best == nullptr || std::make_tuple(entry.first.frame != nullptr, entry.second) >
                               std::make_tuple(best->first.frame != nullptr, best->second)) {
      best = &entry;
    }
  }
  if (best == nullptr) return CallSiteOfStack(model, nullptr);
  return best->first;
}

const CallSiteGroup& CallSiteGroups::Add(const TraceModel& model, uint32_t correlation_id,
                                         std::string_view call, uint64_t ns) {
  if (model_ != &model) {
    by_stack_.clear();
    model_ = &model;
  }
  const CallStackInfo* stack = model.StackOfCall(correlation_id);
  auto it = by_stack_.find(stack);
  if (it == by_stack_.end()) {
    CallSite site = CallSiteOfStack(model, stack);
    auto [group, added] = groups_.try_emplace({site.Display(), site.file});
    if (added) group->second.site = std::move(site);
    it = by_stack_.emplace(stack, &group->second).first;
  }
  CallSiteGroup& group = *it->second;
  group.durations_ns.push_back(ns);
  group.ns_by_call[std::string(call)] += ns;
  group.total_ns += ns;
  return group;
}

}  // namespace warpscope
