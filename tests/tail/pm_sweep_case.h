// Random launches and PM samples over two devices for the tests of the PM sweep
// (pm_sweep_test.cc) and of the tail report built on it (tail_sweep_test.cc): launches of five
// names handed in out of time order, concurrent launches, launches without time, gaps between
// samples, samples with per-SM and GPU-wide active warps.
#ifndef WARPSCOPE_TESTS_TAIL_PM_SWEEP_CASE_H_
#define WARPSCOPE_TESTS_TAIL_PM_SWEEP_CASE_H_

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "analyzers/measures/pm_attribution.h"

namespace warpscope::testing {

struct Case {
  std::vector<KernelEvent> kernels;
  std::vector<PmSample> samples;
  std::vector<PmMetricSet> sets;
  std::vector<DeviceInfo> devices;
  std::vector<uint32_t> groups;  // some launches share a group
};

inline Case MakeCase(size_t launches, uint64_t seed) {
  static constexpr const char* kNames[] = {"gemm", "reduce", "scan", "copy_like", "softmax"};
  std::mt19937_64 rng(seed);
  Case c;
  const uint64_t span = launches * 700;
  for (uint32_t d = 0; d < 2; ++d) {
    PmMetricSet set;
    set.id = d + 1;
    set.device_id = d;
    set.metric_names = {kMetricWarpsPerSmActive, kMetricSmCyclesActive, kMetricGpuWarpsElapsed};
    set.interval_ns = 1000;
    c.sets.push_back(set);
    DeviceInfo device;
    device.id = d;
    device.core_clock_khz = 1'980'000;
    c.devices.push_back(device);
    for (uint64_t t = 0; t < span; t += 1000) {
      if (rng() % 10 == 0) continue;  // a hole
      const uint64_t duration = rng() % 3 == 0 ? 800 : 1000;
      const double warps = static_cast<double>(rng() % 64);
      c.samples.push_back({d + 1, t, duration, {warps, 900.0, warps * (rng() % 133)}, d});
    }
  }
  for (size_t i = 0; i < launches; ++i) {
    KernelEvent k;
    k.name = kNames[rng() % 5];
    k.device_id = static_cast<uint32_t>(rng() % 2);
    k.start_ns = rng() % span;
    k.duration_ns = rng() % 8 == 0 ? 0 : 100 + rng() % 6000;
    c.kernels.push_back(k);
    c.groups.push_back(static_cast<uint32_t>(rng() % 7));
  }
  std::shuffle(c.samples.begin(), c.samples.end(), rng);
  return c;
}

}  // namespace warpscope::testing

#endif  // WARPSCOPE_TESTS_TAIL_PM_SWEEP_CASE_H_
