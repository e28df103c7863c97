// The WARPSCOPE_STACK* settings (see stack_config.h).
#include "collectors/stacks/stack_config.h"

#include "proto/settings/setting_values.h"

namespace warpscope {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

StackCallKind StackCallKindOf(std::string_view f) {
  // CUDA 13's `<<<>>>` calls __cudaLaunchKernel: the same launch under a reserved name.
  while (StartsWith(f, "_")) f.remove_prefix(1);
  for (std::string_view sync :
       {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
        "cudaThreadSynchronize", "cuStreamSynchronize", "cuCtxSynchronize",
        "cuEventSynchronize"}) {
    if (StartsWith(f, sync)) return StackCallKind::kSync;
  }
  for (std::string_view copy : {"cudaMemcpy", "cudaMemset", "cuMemcpy", "cuMemset"}) {
    if (StartsWith(f, copy)) return StackCallKind::kCopy;
  }
  // Every function that launches a kernel or a graph; cudaLaunchHostFunc and cuLaunchHostFunc
  // launch none. "cudaLaunch_" and "cuLaunch" alone are the old launch calls.
  for (std::string_view launch :
       {"cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cudaGraphLaunch", "cudaLaunch_",
        "cuLaunchKernel", "cuLaunchCooperativeKernel", "cuGraphLaunch", "cuLaunchGrid"}) {
    if (StartsWith(f, launch)) return StackCallKind::kLaunch;
  }
  if (f == "cuLaunch") return StackCallKind::kLaunch;
  // Every function that takes or gives back memory, the stream-ordered and VMM ones included
  // (cuMemCreate and cuMemMap: PyTorch's expandable segments).
  for (std::string_view alloc :
       {"cudaMalloc", "cudaFree", "cudaHostAlloc", "cudaMemPoolCreate", "cudaMemPoolDestroy",
        "cudaMemPoolTrimTo", "cuMemAlloc", "cuMemFree", "cuMemHostAlloc", "cuMemCreate",
        "cuMemRelease", "cuMemMap_", "cuMemUnmap", "cuMemPoolCreate", "cuMemPoolDestroy",
        "cuMemPoolTrimTo"}) {
    if (StartsWith(f, alloc)) return StackCallKind::kAlloc;
  }
  if (f == "cuMemMap") return StackCallKind::kAlloc;
  return StackCallKind::kOther;
}

bool ParseStackCalls(std::string_view value, StackConfig* config) {
  StackConfig parsed = *config;
  parsed.syncs = parsed.copies = parsed.launches = parsed.allocs = false;
  if (value == "none") {
    *config = parsed;
    return true;
  }
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view item = value.substr(0, comma);
    if (item == "syncs") {
      parsed.syncs = true;
    } else if (item == "copies") {
      parsed.copies = true;
    } else if (item == "launches") {
      parsed.launches = true;
    } else if (item == "allocs") {
      parsed.allocs = true;
    } else {
      return false;
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
    if (value.empty()) return false;
  }
  *config = parsed;
  return parsed.any();
}

bool ApplyStackSetting(const SettingSpec& spec, std::string_view v, StackConfig* config,
                       std::string* problem) {
  uint64_t n = 0;
  bool ok = false;
  switch (spec.id) {
    case SettingId::kStacks:
      ok = ParseStackCalls(v, config);
      break;
    case SettingId::kStackDepth:
      ok = ParseWholeNumber(v, spec.min, spec.max, &n);
      if (ok) config->depth = static_cast<int>(n);
      break;
    case SettingId::kStackLaunchEvery:
      ok = ParseWholeNumber(v, spec.min, spec.max, &n);
      if (ok) config->launch_every = static_cast<uint32_t>(n);
      break;
    default:
      return true;  // not a stack setting
  }
  if (!ok) *problem = std::string(spec.refusal);
  return ok;
}

bool LoadStackConfig(const std::function<std::string(std::string_view)>& get_env,
                     StackConfig* config, SettingError* error) {
  auto apply = [config](const SettingSpec& spec, std::string_view v, std::string* problem) {
    return ApplyStackSetting(spec, v, config, problem);
  };
  return LoadOwnedSettings(SettingOwner::kStacks, get_env, apply, error);
}

}  // namespace warpscope
