// WARPSCOPE_PM_* environment settings for the PM sampling collector, parsed and checked
// (pure; unit-tested). See docs/pm_sampling.md.
#ifndef WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_CONFIG_H_
#define WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_CONFIG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/pm_sampling/pm_metric_sets.h"
#include "proto/settings/setting_error.h"
#include "proto/settings/settings.h"

namespace warpscope {

// Where metric values are computed from the counter data that CUPTI decodes.
enum class PmEvaluation {
  kProcess,  // in the profiled process (PmSample records with values)
  kOffline,  // by the analyzers: the process writes counter data images (PmCounterData)
  kBoth,     // both, for checking that offline values equal the process's
};

// The defaults that have a value in the settings table (interval, buffer, evaluation) equal
// the table's; a test checks it.
struct PmSamplingConfig {
  // 200 us: 5k samples/s per GPU, about 0.2 MB/s of trace, 10+ samples in any kernel of
  // 2 ms or more. Decoding and evaluating a sample of the default set costs ~30 us of one
  // CPU core on the H200 machine, about 15% of a core at this interval.
  uint64_t interval_ns = 200000;
  // Hardware buffer (device memory). A default-set sample takes about 10 KB on the H200
  // (132 SMs), so 128 MiB hold about 1.3 s of samples at 100 us and 0.27 s at 20 us: room for
  // the decode thread to fall behind for a while without losing samples.
  uint64_t hardware_buffer_bytes = 128ull << 20;
  std::vector<std::string> metrics = DefaultPmMetrics();
  uint32_t poll_interval_ms = 10;  // decode thread period
  // Time one drain may take: a periodic one, and the last one after Stop (window closed,
  // context teardown, exit), which the program waits for. Ten periodic drains in a row
  // over budget stop sampling on that device (the decoder cannot keep up).
  uint32_t decode_budget_ms = 50;
  uint32_t final_decode_budget_ms = 2000;
  uint32_t overloaded_polls_limit = 10;
  // Counter data image capacity (samples per decode call); 0: DecodeBatchFor() sizes it.
  uint32_t max_samples_per_decode = 0;
  PmEvaluation evaluation = PmEvaluation::kProcess;  // WARPSCOPE_PM_EVALUATE
};

// Bytes a raw counter data image may take: it is written as one trace packet, which must
// fit in one writer chunk (1 MiB by default) with room to spare.
inline constexpr uint64_t kMaxPmRawImageBytes = 768u << 10;

inline constexpr uint64_t kMinPmIntervalNs = 1000;        // ~ Hopper's practical floor
inline constexpr uint64_t kMaxPmIntervalNs = 1000000000;  // 1 s
inline constexpr uint64_t kMinPmBufferBytes = 1ull << 20;
inline constexpr uint64_t kMaxPmBufferBytes = 4ull << 30;

// The counter data image's capacity: the configured one, else eight polls' worth of samples
// (a power of two, 128 .. 8192). Decodes append to the image; it is handed over and
// re-initialised only when less than two polls' worth of room is left (at a cost that grows
// with its capacity, about 1.5 us per sample slot on the H200), and before it could fill up
// in the middle of a decode, which loses the sample being decoded (gaps with 64 slots at
// 200 us).
uint32_t DecodeBatchFor(const PmSamplingConfig& config);

// Parses "250", "250ns", "50us", "50µs", "0.5ms", "1s" into ns. False with *error on junk.
bool ParsePmInterval(std::string_view text, uint64_t* ns, std::string* error);
// Parses "67108864", "64M", "64MiB", "512K", "1G" into bytes.
bool ParsePmBytes(std::string_view text, uint64_t* bytes, std::string* error);
// A set name ("sol", "default": pm_metric_sets.h) gives its list; anything else is a comma
// list: split, blanks trimmed, NCU's "pmsampling:" prefix dropped, empty names refused.
bool ParsePmMetrics(std::string_view text, std::vector<std::string>* metrics, std::string* error);

// Samples expected per poll of the decode thread (at least 1).
uint32_t SamplesPerPoll(const PmSamplingConfig& config);
// Parses "process", "offline" or "both".
bool ParsePmEvaluation(std::string_view text, PmEvaluation* evaluation, std::string* error);

// Parses one PM sampling setting (a row of proto/settings/settings.h owned by kPmSampling) into
// its field of *config; on a refused value false, with *problem the rest of the sentence after
// the quoted value (": out of range: use 1us .. 1s"). Rows of other owners: true, untouched.
bool ApplyPmSamplingSetting(const SettingSpec& spec, std::string_view value,
                            PmSamplingConfig* config, std::string* problem);

// Reads the PM sampling rows of the settings table (WARPSCOPE_PM_INTERVAL, _METRICS, _BUFFER,
// _DECODE_BATCH, _EVALUATE) through `get_env` ("" = unset). On a bad value returns false and sets
// *error to one line that starts with "warpscope:" and says what to do.
bool LoadPmSamplingConfig(const std::function<std::string(std::string_view)>& get_env,
                          PmSamplingConfig* config, std::string* error);
// The same, with the refusal typed, for `warpscope record` (which names the flag).
bool LoadPmSamplingConfig(const std::function<std::string(std::string_view)>& get_env,
                          PmSamplingConfig* config, SettingError* error);

// CUPTI's profiling APIs (PM sampling) dlopen "libnvperf_host.so" by bare name, so the
// dynamic loader picks the first copy on its search path, which need not be the one shipped
// with the libcupti in use. In a PyTorch process on the H200 the wheel's libcupti got the CUDA
// toolkit's libnvperf_host (found through ld.so.cache): a mismatched pair that corrupted the
// heap and crashed the process at exit. The plan below makes CUPTI use the copy that sits
// next to the loaded libcupti: loaded first by full path, it satisfies CUPTI's dlopen by its
// SONAME.
struct PerfHostPlan {
  std::string load;   // full path to dlopen before CUPTI does; "" = nothing to do
  std::string error;  // non-empty: a mismatched copy is already loaded; PM sampling must stay off
};

// `loaded` are the canonical (symlink-free) paths of the loaded libraries; `exists` says
// whether a file is there; `canonical` resolves a path's symlinks (the copy beside libcupti
// may be a link into another folder).
PerfHostPlan PlanPerfHostLibrary(const std::vector<std::string>& loaded,
                                 const std::function<bool(const std::string&)>& exists,
                                 const std::function<std::string(const std::string&)>& canonical);

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_CONFIG_H_
