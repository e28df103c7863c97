// Parsing of the WARPSCOPE_PM_* settings (see pm_sampling_config.h).
#include "collectors/pm_sampling/pm_sampling_config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "proto/settings/setting_error.h"
#include "proto/settings/setting_values.h"
#include "proto/settings/settings.h"

namespace warpscope {
namespace {

// Splits "12.5us" into 12.5 and "us". False when there is no leading number.
bool SplitNumber(std::string_view text, double* value, std::string_view* unit) {
  text = TrimBlanks(text);
  const std::string s(text);
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || errno != 0 || !std::isfinite(v)) return false;
  *value = v;
  *unit = TrimBlanks(text.substr(end - s.c_str()));
  return true;
}

}  // namespace

bool ParsePmInterval(std::string_view text, uint64_t* ns, std::string* error) {
  double v = 0;
  std::string_view unit;
  if (!SplitNumber(text, &v, &unit)) {
    *error = "expected a duration such as 100us, 20us or 250000 (ns)";
    return false;
  }
  double scale = 0;
  if (unit.empty() || unit == "ns")
    scale = 1;
  else if (unit == "us" || unit == "\xC2\xB5s")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  if (scale == 0) {
    *error = "unknown unit " + QuoteValue(unit) + ": use ns, us, ms or s";
    return false;
  }
  const double value = v * scale;
  if (value < kMinPmIntervalNs || value > kMaxPmIntervalNs) {
    *error = "out of range: use 1us .. 1s";
    return false;
  }
  *ns = static_cast<uint64_t>(std::llround(value));
  return true;
}

bool ParsePmBytes(std::string_view text, uint64_t* bytes, std::string* error) {
  double v = 0;
  std::string_view unit;
  if (!SplitNumber(text, &v, &unit)) {
    *error = "expected a size such as 64M, 512MiB or 67108864";
    return false;
  }
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KiB" || unit == "k")
    scale = 1024.0;
  else if (unit == "M" || unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  if (scale == 0) {
    *error = "unknown unit " + QuoteValue(unit) + ": use K, M or G (binary)";
    return false;
  }
  const double value = v * scale;
  if (value < kMinPmBufferBytes || value > kMaxPmBufferBytes) {
    *error = "out of range: use 1M .. 4G";
    return false;
  }
  *bytes = static_cast<uint64_t>(value);
  return true;
}

bool ParsePmMetrics(std::string_view text, std::vector<std::string>* metrics, std::string* error) {
  if (const std::vector<std::string>* named = NamedPmMetricSet(TrimBlanks(text))) {
    *metrics = *named;
    return true;
  }
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view name = TrimBlanks(text.substr(pos, comma - pos));
    constexpr std::string_view kNcuPrefix = "pmsampling:";
    if (name.substr(0, kNcuPrefix.size()) == kNcuPrefix) name.remove_prefix(kNcuPrefix.size());
    if (name.empty()) {
      *error = "empty metric name in the list";
      return false;
    }
    out.emplace_back(name);
    pos = comma + 1;
  }
  *metrics = std::move(out);
  return true;
}

uint32_t SamplesPerPoll(const PmSamplingConfig& config) {
  const uint64_t interval = std::max<uint64_t>(config.interval_ns, 1);
  const uint64_t per_poll = (uint64_t{config.poll_interval_ms} * 1000000 + interval - 1) / interval;
  return static_cast<uint32_t>(std::clamp<uint64_t>(per_poll, 1, 1u << 20));
}

uint32_t DecodeBatchFor(const PmSamplingConfig& config) {
  if (config.max_samples_per_decode != 0) return config.max_samples_per_decode;
  const uint64_t per_poll = SamplesPerPoll(config);
  uint32_t batch = 128;
  while (batch < 8192 && batch < 8 * per_poll) batch *= 2;
  return batch;
}

bool ParsePmEvaluation(std::string_view text, PmEvaluation* evaluation, std::string* error) {
  if (text == "process") {
    *evaluation = PmEvaluation::kProcess;
  } else if (text == "offline") {
    *evaluation = PmEvaluation::kOffline;
  } else if (text == "both") {
    *evaluation = PmEvaluation::kBoth;
  } else {
    *error = "expected process, offline or both";
    return false;
  }
  return true;
}

bool LoadPmSamplingConfig(const std::function<std::string(std::string_view)>& get_env,
                          PmSamplingConfig* config, std::string* error) {
  SettingError refused;
  if (LoadPmSamplingConfig(get_env, config, &refused)) return true;
  *error = "warpscope: " + refused.ForVariable() + "; PM sampling stays off";
  return false;
}

bool ApplyPmSamplingSetting(const SettingSpec& spec, std::string_view v, PmSamplingConfig* config,
                            std::string* problem) {
  std::string error;
  bool ok = false;
  switch (spec.id) {
    case SettingId::kPmInterval:
      ok = ParsePmInterval(v, &config->interval_ns, &error);
      break;
    case SettingId::kPmBuffer:
      ok = ParsePmBytes(v, &config->hardware_buffer_bytes, &error);
      break;
    case SettingId::kPmMetrics:
      ok = ParsePmMetrics(v, &config->metrics, &error);
      break;
    case SettingId::kPmEvaluate:
      ok = ParsePmEvaluation(v, &config->evaluation, &error);
      break;
    case SettingId::kPmDecodeBatch: {
      uint64_t n = 0;
      ok = ParseWholeNumber(v, spec.min, spec.max, &n);
      if (ok) config->max_samples_per_decode = static_cast<uint32_t>(n);
      break;
    }
    default:
      return true;  // not a PM sampling setting
  }
  if (!ok) *problem = spec.refusal.empty() ? ": " + error : std::string(spec.refusal);
  return ok;
}

bool LoadPmSamplingConfig(const std::function<std::string(std::string_view)>& get_env,
                          PmSamplingConfig* config, SettingError* error) {
  auto apply = [config](const SettingSpec& spec, std::string_view v, std::string* problem) {
    return ApplyPmSamplingSetting(spec, v, config, problem);
  };
  if (!LoadOwnedSettings(SettingOwner::kPmSampling, get_env, apply, error)) return false;
  // The sol set's samples cost about 220 us each to decode and evaluate on the H200 machine:
  // at 200 us the decoder falls behind and samples are lost, so it samples every 1 ms unless
  // an interval is given.
  if (config->metrics == SolPmMetrics() && TrimBlanks(get_env("WARPSCOPE_PM_INTERVAL")).empty()) {
    config->interval_ns = kSolPmIntervalNs;
  }
  return true;
}

namespace {

std::string_view Dirname(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

PerfHostPlan PlanPerfHostLibrary(const std::vector<std::string>& loaded,
                                 const std::function<bool(const std::string&)>& exists,
                                 const std::function<std::string(const std::string&)>& canonical) {
  constexpr std::string_view kPerfHost = "libnvperf_host.so";
  PerfHostPlan plan;
  std::string_view cupti;
  std::string_view perf_host;
  for (const std::string& path : loaded) {
    const std::string_view base = Basename(path);
    if (cupti.empty() && base.rfind("libcupti.so", 0) == 0) cupti = path;
    if (perf_host.empty() && base.rfind(kPerfHost, 0) == 0) perf_host = path;
  }
  if (cupti.empty()) return plan;  // CUPTI resolves it itself; nothing to match against
  const std::string wanted = std::string(Dirname(cupti)) + "/" + std::string(kPerfHost);
  if (!exists(wanted)) return plan;  // no copy beside libcupti: leave the search to CUPTI
  if (perf_host.empty()) {
    plan.load = wanted;
  } else if (perf_host != canonical(wanted)) {
    plan.error = "warpscope: PM sampling off: libcupti comes from " + std::string(Dirname(cupti)) +
                 " but libnvperf_host.so was already loaded from " +
                 std::string(Dirname(perf_host)) +
                 "; mixing CUPTI components of different releases corrupts memory. Put " +
                 std::string(Dirname(cupti)) +
                 " first in LD_LIBRARY_PATH to sample; tracing goes on";
  }
  return plan;
}

}  // namespace warpscope
