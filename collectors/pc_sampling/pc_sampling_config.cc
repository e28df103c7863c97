// Parsing of the WARPSCOPE_PC_* settings.
#include "collectors/pc_sampling/pc_sampling_config.h"

#include <algorithm>
#include <string>

#include "proto/settings/setting_error.h"
#include "proto/settings/setting_values.h"
#include "proto/settings/settings.h"

namespace warpscope {

bool LoadPcSamplingConfig(const std::function<std::string(std::string_view)>& get_env,
                          PcSamplingConfig* config, std::string* error) {
  SettingError refused;
  if (LoadPcSamplingConfig(get_env, config, &refused)) return true;
  *error = "warpscope: " + refused.ForVariable() + "; PC sampling stays off";
  return false;
}

uint64_t PcHardwareBufferBytes(const PcSamplingConfig& config) {
  if (config.hardware_buffer_bytes != 0) return config.hardware_buffer_bytes;
  constexpr uint64_t kMiB = 1ull << 20;
  if (config.period_exponent == 0) return 512 * kMiB;
  constexpr uint32_t kFullAt = 12;  // 64 MiB from this period up
  if (config.period_exponent >= kFullAt) return 64 * kMiB;
  const uint32_t shorter = kFullAt - config.period_exponent;
  return std::min<uint64_t>(kMaxPcBufferMiB * kMiB, (64 * kMiB) << shorter);
}

bool ApplyPcSamplingSetting(const SettingSpec& spec, std::string_view v, PcSamplingConfig* config,
                            std::string* problem) {
  uint64_t n = 0;
  bool ok = false;
  switch (spec.id) {
    case SettingId::kPcPeriod:
      // 0 leaves the period to CUPTI; otherwise an exponent in [min, max].
      ok = ParseWholeNumber(v, 0, spec.max, &n) && (n == 0 || n >= spec.min);
      if (ok) config->period_exponent = static_cast<uint32_t>(n);
      break;
    case SettingId::kPcBufferMb:
      ok = ParseWholeNumber(v, spec.min, spec.max, &n);
      if (ok) config->hardware_buffer_bytes = n << 20;
      break;
    case SettingId::kPcDebug:
      ok = ParseBoolSetting(v, &config->debug);
      break;
    default:
      return true;  // not a PC sampling setting
  }
  if (!ok) *problem = std::string(spec.refusal);
  return ok;
}

bool LoadPcSamplingConfig(const std::function<std::string(std::string_view)>& get_env,
                          PcSamplingConfig* config, SettingError* error) {
  auto apply = [config](const SettingSpec& spec, std::string_view v, std::string* problem) {
    return ApplyPcSamplingSetting(spec, v, config, problem);
  };
  return LoadOwnedSettings(SettingOwner::kPcSampling, get_env, apply, error);
}

}  // namespace warpscope
