// What PM and PC sampling produced in a trace, for `warpscope info` (see info_sampling.h).
#include "analyzers/analyses/info_sampling.h"

#include <algorithm>

#include "proto/settings/setting_values.h"
#include "proto/settings/settings.h"
#include "proto/writer/stats_table.h"

namespace warpscope {

std::vector<PmSetSummary> SummarizePm(const TraceModel& m) {
  std::vector<PmSetSummary> out;
  for (const PmMetricSet& s : m.pm_metric_sets) out.push_back({&s});
  for (const PmSample& p : m.pm_samples) {
    for (PmSetSummary& s : out) {
      if (s.set->id == p.metric_set_id) {
        ++s.samples;
        s.sampled_ns += p.duration_ns;
        break;
      }
    }
  }
  return out;
}

uint64_t StatCounterValue(const TraceModel& m, std::string_view name) {
  for (const StatCounter& c : m.stats) {
    if (c.name == name) return c.value;
  }
  return 0;
}

PcSummary SummarizePc(const TraceModel& m) {
  PcSummary s;
  for (const auto& [key, value] : m.header.config) {
    bool on = false;
    if (key == Setting(SettingId::kPcSampling).variable && ParseBoolSetting(value, &on) && on)
      s.requested = true;
  }
  // From the data where the model kept it, else the collector's counters.
  s.batches = m.pc_sample_batches.size();
  for (const PcSampleBatch& b : m.pc_sample_batches) {
    s.pc_records += b.records.size();
    for (const PcRecord& r : b.records) {
      for (const auto& [reason, n] : r.stall_samples) s.samples += n;
    }
    s.dropped += b.dropped_samples;
    s.buffer_full += b.hardware_buffer_full ? 1 : 0;
  }
  if (s.pc_records == 0) {
    s.samples = StatCounterValue(m, stats::kPcSamples.name);
    s.pc_records = StatCounterValue(m, stats::kPcRecords.name);
  }
  s.dropped = std::max(s.dropped, StatCounterValue(m, stats::kPcSamplesDropped.name));
  s.buffer_full = std::max(s.buffer_full, StatCounterValue(m, stats::kPcHardwareBufferFull.name));
  s.cubins = m.cubins.size();
  s.cubin_bytes = StatCounterValue(m, stats::kPcCubinBytes.name);
  s.contexts = StatCounterValue(m, stats::kPcContextsSampled.name);
  for (const PcSampleBatch& b : m.pc_sample_batches) {
    s.cupti_total += b.total_samples;
    s.non_user += b.non_user_kernel_samples;
  }
  s.requested = s.requested || !m.pc_sample_batches.empty() || !m.pc_stall_reasons.empty();
  if (!s.requested || s.samples != 0) return s;
  if (StatCounterValue(m, stats::kPcDisabledPmSamplingChosen.name) != 0) {
    s.diagnosis = "PM sampling was also requested and was kept; record PC sampling alone";
  } else if (StatCounterValue(m, stats::kPcDisabledPrivileges.name) != 0) {
    s.diagnosis =
        "GPU profiling is restricted to admin users (NVreg_RestrictProfilingToAdminUsers=0 "
        "or root)";
  } else if (StatCounterValue(m, stats::kPcDisabledBusy.name) != 0) {
    s.diagnosis = "another process (or profiler) was sampling the GPU";
  } else if (s.contexts == 0) {
    s.diagnosis =
        "no CUDA context was set up for sampling (see the notices: unsupported device, "
        "setup error, or no context created while warpscope was attached)";
  } else if (s.buffer_full != 0) {
    s.diagnosis =
        "the hardware buffer overflowed and CUPTI returned no PCs: raise the period "
        "(--pc-period) or WARPSCOPE_PC_BUFFER_MB";
  } else if (s.cupti_total != 0 && s.non_user == s.cupti_total) {
    s.diagnosis = "CUPTI counted samples only in kernels it treats as non-user (no PC records)";
  } else if (s.cupti_total != 0) {
    s.diagnosis =
        "CUPTI counted samples but returned no PC records; rerun with "
        "WARPSCOPE_PC_DEBUG=1 to see each CUPTI call";
  } else if (StatCounterValue(m, stats::kPcGetDataErrors.name) != 0 ||
             StatCounterValue(m, stats::kPcStartStopErrors.name) != 0 ||
             StatCounterValue(m, stats::kPcDisabledError.name) != 0) {
    s.diagnosis = "CUPTI calls failed (see the notices and pc_sampling.* counters)";
  } else if (m.capture_windows.empty()) {
    s.diagnosis = "no capture window opened, so sampling never started";
  } else {
    s.diagnosis =
        "CUPTI reported no samples at all: kernels shorter than the period, or "
        "sampling not running while they ran; rerun with WARPSCOPE_PC_DEBUG=1";
  }
  return s;
}

}  // namespace warpscope
