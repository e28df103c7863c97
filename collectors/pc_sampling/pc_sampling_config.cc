// Parsing of the WARPSCOPE_PC_* settings.
#include "collectors/pc_sampling/pc_sampling_config.h"

#include <string>

#include "proto/common/setting_error.h"
#include "proto/common/setting_values.h"

namespace warpscope {

bool LoadPcSamplingConfig(const std::function<std::string(std::string_view)>& get_env,
                          PcSamplingConfig* config, std::string* error) {
  SettingError refused;
  if (LoadPcSamplingConfig(get_env, config, &refused)) return true;
  *error = "warpscope: " + refused.ForVariable() + "; PC sampling stays off";
  return false;
}

bool LoadPcSamplingConfig(const std::function<std::string(std::string_view)>& get_env,
                          PcSamplingConfig* config, SettingError* error) {
  const std::string period = get_env("WARPSCOPE_PC_PERIOD");
  if (!period.empty()) {
    uint64_t n = 0;
    if (!ParseWholeNumber(period, 0, kMaxPcPeriodExponent, &n) ||
        (n != 0 && n < kMinPcPeriodExponent)) {
      *error = SettingError{"WARPSCOPE_PC_PERIOD", period,
                            " is not an exponent N from 5 to 31 (the period is 2^N GPU cycles, "
                            "e.g. 15) or 0 (CUPTI's default)"};
      return false;
    }
    config->period_exponent = static_cast<uint32_t>(n);
  }
  const std::string buffer = get_env("WARPSCOPE_PC_BUFFER_MB");
  if (!buffer.empty()) {
    uint64_t mib = 0;
    if (!ParseWholeNumber(buffer, kMinPcBufferMiB, kMaxPcBufferMiB, &mib)) {
      *error = SettingError{"WARPSCOPE_PC_BUFFER_MB", buffer,
                            " is not a whole number of MiB from 1 to 4096 (e.g. 64)"};
      return false;
    }
    config->hardware_buffer_bytes = mib << 20;
  }
  const std::string debug = get_env("WARPSCOPE_PC_DEBUG");
  if (!ParseBoolSetting(debug, &config->debug)) {
    *error = SettingError{"WARPSCOPE_PC_DEBUG", debug, " is not 0 or 1"};
    return false;
  }
  return true;
}

}  // namespace warpscope
