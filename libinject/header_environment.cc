// The header's fields that come from the environment (see header_environment.h).
#include "libinject/header_environment.h"

#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "proto/settings/job_variables.h"
#include "proto/settings/settings.h"

namespace warpscope {
namespace {

// Placement variables launchers set beside those of job_variables.h: torchrun's group and node
// ranks and local world size, Slurm's and Open MPI's local ids, and the GPUs the process sees.
constexpr std::string_view kOtherPlacementVariables[] = {
    "LOCAL_WORLD_SIZE",           "NODE_RANK",           "GROUP_RANK", "SLURM_LOCALID",
    "OMPI_COMM_WORLD_LOCAL_RANK", "CUDA_VISIBLE_DEVICES"};

// A lookup in an environment array (KEY=VALUE strings).
const char* Lookup(char** environment, const char* name) {
  const size_t length = std::strlen(name);
  for (char** e = environment; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, name, length) == 0 && (*e)[length] == '=') return *e + length + 1;
  }
  return nullptr;
}

}  // namespace

KeyValueList RankEnvironment(const GetEnvFn& getenv_fn) {
  KeyValueList out;
  auto add = [&](std::string_view name) {
    for (const auto& [k, v] : out) {
      if (k == name) return;
    }
    const std::string key(name);
    if (const char* value = getenv_fn(key.c_str())) out.emplace_back(key, value);
  };
  for (const auto& list : {std::span<const std::string_view>(kRankVariables),
                           std::span<const std::string_view>(kWorldSizeVariables),
                           std::span<const std::string_view>(kLocalRankVariables),
                           std::span<const std::string_view>(kJobIdVariables),
                           std::span<const std::string_view>(kOtherPlacementVariables)}) {
    for (std::string_view name : list) add(name);
  }
  return out;
}

std::string JobId(const GetEnvFn& getenv_fn, std::string_view hostname) {
  for (std::string_view name : kJobIdVariables) {
    const std::string key(name);
    const char* value = getenv_fn(key.c_str());
    if (value != nullptr && value[0] != '\0') return key + "=" + value;
  }
  const char* launcher = getenv_fn(Setting(SettingId::kLauncherPid).variable.data());
  const char* start = getenv_fn(Setting(SettingId::kStartNs).variable.data());
  if (launcher == nullptr || start == nullptr) return "";
  return "warpscope-record=" + std::string(hostname) + ":" + launcher + ":" + start;
}

void AddEnvironmentToHeader(const Config& config, char** environment, HeaderRecord* header) {
  const GetEnvFn getenv_fn = [environment](const char* name) { return Lookup(environment, name); };
  header->rank_env = RankEnvironment(getenv_fn);
  header->job_id = JobId(getenv_fn, header->hostname);
  header->config = config.raw;
  // Collectors' own variables (WARPSCOPE_PM_*, WARPSCOPE_PC_*) are not in the session's
  // table: record every WARPSCOPE_* variable so the header says how the trace was taken.
  for (char** e = environment; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (entry.rfind("WARPSCOPE_", 0) != 0 || eq == std::string_view::npos) continue;
    std::string name(entry.substr(0, eq));
    bool known = false;
    for (const auto& [k, v] : header->config) known = known || k == name;
    if (!known) header->config.emplace_back(std::move(name), std::string(entry.substr(eq + 1)));
  }
  header->config.emplace_back("effective.trace", TraceKindsString(config.trace));
  header->config.emplace_back("effective.capture_range",
                              std::string(CaptureRangeName(config.capture_range)));
}

}  // namespace warpscope
