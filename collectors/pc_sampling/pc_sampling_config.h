// WARPSCOPE_PC_* environment settings for the PC sampling collector, parsed and checked
// (pure; unit-tested). See docs/pc_sampling.md.
#ifndef WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_CONFIG_H_
#define WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_CONFIG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "proto/settings/setting_error.h"
#include "proto/settings/settings.h"

namespace warpscope {

// CUPTI's range of periods: 2^5 .. 2^31 cycles; buffers of 1 .. 4096 MiB (the table's rows).
inline constexpr uint32_t kMinPcPeriodExponent = Setting(SettingId::kPcPeriod).min;
inline constexpr uint32_t kMaxPcPeriodExponent = Setting(SettingId::kPcPeriod).max;
inline constexpr uint64_t kMinPcBufferMiB = Setting(SettingId::kPcBufferMb).min;
inline constexpr uint64_t kMaxPcBufferMiB = Setting(SettingId::kPcBufferMb).max;

// The period and buffer defaults equal the settings table's; a test checks it.
struct PcSamplingConfig {
  // 2^15 cycles (~17 us at 1.98 GHz): per SM about 60k samples/s, ~8M/s on a 132-SM H200,
  // thousands of samples for any kernel of a millisecond, and 8x less hardware-buffer
  // traffic and CUPTI decode work than 2^12, so it can stay on for a long job. Lower it
  // (WARPSCOPE_PC_PERIOD=12) for short captures of short kernels.
  // 0: SAMPLING_PERIOD is not set and CUPTI picks its own ("based on the number of SMs").
  uint32_t period_exponent = 15;
  // 0: sized from the period (PcHardwareBufferBytes); WARPSCOPE_PC_BUFFER_MB sets it.
  uint64_t hardware_buffer_bytes = 0;
  // CUPTI's host-side buffer of decoded PCs: 1 MB holds ~5500 PCs; 4 MiB ~22k, so a drain
  // interval with many distinct PCs (large programs) does not overflow it.
  uint64_t scratch_buffer_bytes = 4ull << 20;
  uint32_t max_pcs_per_read = 4096;      // our CUpti_PCSamplingData: ~1.5 MB with ~40 reasons
  uint32_t drain_interval_ms = 50;       // worker thread's GetData period
  uint32_t max_rounds_per_drain = 4096;  // bounds a drain if CUPTI keeps reporting more
  // WARPSCOPE_PC_DEBUG=1: one stderr line per CUPTI PC sampling call (PcSamplingCallLogger).
  bool debug = false;
};

// The hardware buffer per context: the one set, else sized from the period. When the buffer
// fills, CUPTI loses the samples of the whole drain (0 samples, not fewer), so it must hold
// what the GPU writes between drains. 64 MiB at 2^12 cycles and longer periods, doubled for
// each step shorter (2^11: 128 MiB ... 2^6 and shorter: 4096 MiB): on an H200 the five test
// kernels lost every sample at 2^10 and 2^11 with 64 MiB and none at 2^10 with 512 MiB.
// CUPTI's own period (0; it chose 2^11 on the H200): CUPTI's own 512 MiB, which held it.
// Beside CUPTI's 512 MB for every period, 64 MiB at the default 2^15 leaves 448 MiB per GPU to
// the job.
uint64_t PcHardwareBufferBytes(const PcSamplingConfig& config);

// Parses one PC sampling setting (a row of proto/settings/settings.h owned by kPcSampling) into
// its field of *config; on a refused value false, with *problem the row's refusal. Rows of
// other owners: true, untouched.
bool ApplyPcSamplingSetting(const SettingSpec& spec, std::string_view value,
                            PcSamplingConfig* config, std::string* problem);

// Reads the PC sampling rows of the settings table: WARPSCOPE_PC_PERIOD (exponent N, 5..31,
// or 0 for CUPTI's default), WARPSCOPE_PC_BUFFER_MB (1..4096) and WARPSCOPE_PC_DEBUG (0/1)
// through `get_env` ("" = unset). On a bad value returns false and sets *error to one line that
// starts with "warpscope:" and says what to do.
bool LoadPcSamplingConfig(const std::function<std::string(std::string_view)>& get_env,
                          PcSamplingConfig* config, std::string* error);
// The same, with the refusal typed, for `warpscope record` (which names the flag).
bool LoadPcSamplingConfig(const std::function<std::string(std::string_view)>& get_env,
                          PcSamplingConfig* config, SettingError* error);

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_CONFIG_H_
