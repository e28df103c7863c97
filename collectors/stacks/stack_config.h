// The WARPSCOPE_STACK* settings, and which CUDA calls are syncs, copies, launches and
// allocations. Pure.
#ifndef WARPSCOPE_COLLECTORS_STACKS_STACK_CONFIG_H_
#define WARPSCOPE_COLLECTORS_STACKS_STACK_CONFIG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "proto/settings/setting_error.h"
#include "proto/settings/settings.h"

namespace warpscope {

// What a CUDA runtime or driver function is, for stacks.
enum class StackCallKind : uint8_t {
  kOther = 0,
  kSync,    // blocks the host until the GPU is done: stream, event, device/context syncs
  kCopy,    // a copy or memset (a copy to the host blocks the host)
  kLaunch,  // a kernel or graph launch
  kAlloc,   // allocates, frees or maps memory (cudaMalloc*, cudaFree*, cuMemCreate, ...)
};

// By the function's name as CUPTI gives it ("cudaStreamSynchronize_v3020" has its version
// suffix; "cuMemcpyDtoH_v2").
StackCallKind StackCallKindOf(std::string_view function);

struct StackConfig {
  bool syncs = true;
  bool copies = true;
  bool launches = true;
  bool allocs = true;
  int depth = 32;
  // Every Nth launch of a thread; 0: kPythonLaunchEvery or kNativeLaunchEvery by the stack.
  uint32_t launch_every = 0;
  static constexpr uint32_t kPythonLaunchEvery = 1;
  // A native stack unwinds with backtrace(3): +5.9 us a launch measured on an H200 host.
  static constexpr uint32_t kNativeLaunchEvery = 1024;
  bool any() const { return syncs || copies || launches || allocs; }
  bool Wants(StackCallKind kind) const {
    return (kind == StackCallKind::kSync && syncs) || (kind == StackCallKind::kCopy && copies) ||
           (kind == StackCallKind::kLaunch && launches) ||
           (kind == StackCallKind::kAlloc && allocs);
  }
};

// "syncs,copies,launches,allocs" (any subset, any order) or "none".
bool ParseStackCalls(std::string_view value, StackConfig* config);
// One row of the table; false with *problem (the rest of the refusal) when refused.
bool ApplyStackSetting(const SettingSpec& spec, std::string_view value, StackConfig* config,
                       std::string* problem);
bool LoadStackConfig(const std::function<std::string(std::string_view)>& get_env,
                     StackConfig* config, SettingError* error);

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_STACKS_STACK_CONFIG_H_
