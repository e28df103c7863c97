// Parsing of the WARPSCOPE_PC_* settings.
#include "collectors/pc_sampling/pc_sampling_config.h"

#include <charconv>
#include <string>

#include "libinject/setting_error.h"

namespace warpscope {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A whole decimal number in [lo, hi].
bool ParseUnsigned(std::string_view text, uint64_t lo, uint64_t hi, uint64_t* out) {
  text = Trim(text);
  if (text.empty()) return false;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace

bool LoadPcSamplingConfig(const std::function<std::string(std::string_view)>& get_env,
                          PcSamplingConfig* config, std::string* error) {
  const std::string period = get_env("WARPSCOPE_PC_PERIOD");
  if (!period.empty()) {
    uint64_t n = 0;
    if (!ParseUnsigned(period, 0, kMaxPcPeriodExponent, &n) ||
        (n != 0 && n < kMinPcPeriodExponent)) {
      *error = "warpscope: WARPSCOPE_PC_PERIOD=" + QuoteValue(period) +
               " is not an exponent N from 5 to 31 (the period is 2^N GPU cycles, e.g. 15) "
               "or 0 (CUPTI's default); PC sampling stays off";
      return false;
    }
    config->period_exponent = static_cast<uint32_t>(n);
  }
  const std::string buffer = get_env("WARPSCOPE_PC_BUFFER_MB");
  if (!buffer.empty()) {
    uint64_t mib = 0;
    if (!ParseUnsigned(buffer, kMinPcBufferMiB, kMaxPcBufferMiB, &mib)) {
      *error = "warpscope: WARPSCOPE_PC_BUFFER_MB=" + QuoteValue(buffer) +
               " is not a whole number of MiB from 1 to 4096 (e.g. 64); PC sampling stays "
               "off";
      return false;
    }
    config->hardware_buffer_bytes = mib << 20;
  }
  const std::string debug(Trim(get_env("WARPSCOPE_PC_DEBUG")));
  if (debug == "1" || debug == "true" || debug == "yes" || debug == "on") {
    config->debug = true;
  } else if (debug.empty() || debug == "0" || debug == "false" || debug == "no" || debug == "off") {
    config->debug = false;
  } else {
    *error = "warpscope: WARPSCOPE_PC_DEBUG=" + QuoteValue(debug) +
             " is not 0 or 1; PC sampling stays off";
    return false;
  }
  return true;
}

}  // namespace warpscope
