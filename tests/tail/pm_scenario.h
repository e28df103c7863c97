// A synthetic PM-sampling trace for the occupancy and tail diff tests: an H200, four kernels
// with known launch configurations and designed active-warp profiles, PM samples every 10 us
// with metric set A, written through the protobuf classes as a real .wst file would be.
#ifndef WARPSCOPE_TESTS_TAIL_PM_SCENARIO_H_
#define WARPSCOPE_TESTS_TAIL_PM_SCENARIO_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analyzers/model/trace_model.h"  // brings the generated v1:: classes
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope::testing {

inline constexpr double kH200Warps = 132 * 64;

// Kernel launches of the scenario: name, launch config id, start, duration (ns), and the
// GPU-wide active warps over time since the kernel's start. A null name is work the trace does
// not show (another process on the same GPU): it is in the PM samples only.
struct ScenarioKernel {
  const char* name;
  uint64_t launch_config;
  uint64_t start_ns;
  uint64_t duration_ns;
  std::function<double(double)> warps;  // ns since start -> active warps on the GPU
};

inline std::vector<ScenarioKernel> ScenarioKernels() {
  auto flat = [](double level) { return [level](double) { return level * kH200Warps; }; };
  // A tail over the last `tail` of 1 ms at `level` (a few blocks run 2.5x longer).
  auto tail = [](double tail, double level) {
    return [tail, level](double t) {
      return (t < (1 - tail) * 1e6 ? 0.25 : 0.25 * level) * kH200Warps;
    };
  };
  return {
      {"gemm_balanced(float*)", 1, 100000, 1000000, flat(0.9)},
      {"reduce_imbalanced(float const*, int)", 2, 1300000, 1000000, tail(0.6, 0.05)},
      {"gemm_balanced(float*)", 1, 2500000, 1000000, flat(0.9)},
      {"reduce_imbalanced(float const*, int)", 2, 3700000, 1000000, tail(0.6, 0.05)},
      {"smem_tile(half*)", 3, 4900000, 400000, flat(0.12)},
      {"tiny_memset_like(int*)", 4, 5400000, 3000, flat(0.02)},
  };
}

inline void AddLaunchConfig(v1::Trace& trace, uint64_t id, uint32_t grid, uint32_t block,
                            uint32_t regs, uint32_t dyn_smem) {
  v1::LaunchConfig* l = trace.add_packet()->mutable_launch_config();
  l->set_id(id);
  l->set_grid_x(grid);
  l->set_grid_y(1);
  l->set_grid_z(1);
  l->set_block_x(block);
  l->set_block_y(1);
  l->set_block_z(1);
  l->set_registers_per_thread(regs);
  l->set_dynamic_shared_memory(dyn_smem);
}

// Kernel edges: a register-limited kernel (64 registers: 4 blocks of 256 threads per SM, at
// most 4,224 warps on the H200) running just below its limit, with a heavy kernel starting 1 us
// after it ends, inside its last 10 us sample; a 3 us kernel between two heavy ones, with no
// sample of its own; and, in the middle of the register-limited kernel, 10 us in which another
// process adds 2,000 warps (above what the kernel can hold).
inline std::vector<ScenarioKernel> EdgeScenarioKernels() {
  auto flat = [](double level) { return [level](double) { return level * kH200Warps; }; };
  return {
      {"heavy_prev(float*)", 1, 100000, 202000, flat(0.95)},
      {"regs_limited(float*)", 5, 303000, 400000, flat(0.48)},
      {nullptr, 0, 480000, 10000, [](double) { return 2000.0; }},
      {"heavy_next(float*)", 1, 704000, 300000, flat(0.95)},
      {"tiny_between(int*)", 4, 1005000, 3000, flat(0.02)},
      {"heavy_next(float*)", 1, 1009000, 300000, flat(0.95)},
  };
}

// The H200 as CUPTI's Device record describes it, and the scenario's launch configurations.
inline void AddScenarioDevice(v1::Trace& trace) {
  v1::Device* d = trace.add_packet()->mutable_device();
  d->set_id(0);
  d->set_name("NVIDIA H200");
  d->set_compute_capability_major(9);
  d->set_compute_capability_minor(0);
  d->set_sm_count(132);
  d->set_max_warps_per_sm(64);
  d->set_max_blocks_per_sm(32);
  d->set_max_threads_per_block(1024);
  d->set_max_registers_per_sm(65536);
  d->set_max_registers_per_block(65536);
  d->set_max_shared_memory_per_sm(233472);
  d->set_max_shared_memory_per_block(49152);
  d->set_threads_per_warp(32);
  AddLaunchConfig(trace, 1, 100000, 256, 32, 0);
  AddLaunchConfig(trace, 2, 264, 256, 128, 0);
  AddLaunchConfig(trace, 3, 1320, 128, 32, 100 * 1024);
  AddLaunchConfig(trace, 4, 64, 1024, 16, 0);
  AddLaunchConfig(trace, 5, 16384, 256, 64, 0);
}

// The kernels that the trace shows, each name interned once. Returns when the last kernel ends.
inline uint64_t AddScenarioKernels(v1::Trace& trace, const std::vector<ScenarioKernel>& kernels) {
  std::vector<std::string> names;
  uint64_t end_ns = 0;
  for (const ScenarioKernel& k : kernels) {
    end_ns = std::max(end_ns, k.start_ns + k.duration_ns);
    if (k.name == nullptr) continue;
    uint64_t id = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == k.name) id = i + 1;
    }
    if (id == 0) {
      names.push_back(k.name);
      id = names.size();
      v1::InternedString* s = trace.add_packet()->mutable_interned_string();
      s->set_id(id);
      s->set_value(k.name);
    }
    v1::KernelEvent* e = trace.add_packet()->mutable_kernel();
    e->set_name_id(id);
    e->set_launch_config_id(k.launch_config);
    e->set_start_ns(k.start_ns);
    e->set_duration_ns(k.duration_ns);
    e->set_stream_id(7);
  }
  return end_ns;
}

// Metric set A and a 10 us PM sample from 0 until `end_ns` rounded up to 100 us.
inline void AddScenarioPm(v1::Trace& trace, const std::vector<ScenarioKernel>& kernels,
                          uint64_t end_ns) {
  v1::PmMetricSet* set = trace.add_packet()->mutable_pm_metric_set();
  set->set_id(1);
  set->set_device_id(0);
  for (const char* m :
       {"sm__warps_active.avg.per_cycle_active", "sm__warps_active.sum.per_cycle_elapsed",
        "sm__cycles_active.avg", "gr__cycles_elapsed.max"}) {
    set->add_metric_names(m);
  }
  set->set_interval_ns(10000);
  const double cycles_per_ns = 1.98;
  // Samples until the last kernel's end rounded up to 100 us (5.5 ms in the base scenario).
  const uint64_t sampled_until = (end_ns + 99999) / 100000 * 100000;
  for (uint64_t t = 0; t < sampled_until; t += 10000) {
    double warps_time = 0, busy_time = 0;
    const int steps = 50;
    for (int i = 0; i < steps; ++i) {
      const double at = t + (i + 0.5) * 10000.0 / steps;
      for (const ScenarioKernel& k : kernels) {
        if (at >= k.start_ns && at < k.start_ns + k.duration_ns) {
          warps_time += k.warps(at - k.start_ns);
          busy_time += k.name != nullptr ? 1 : 0;
        }
      }
    }
    const double gpu_warps = warps_time / steps;
    const double busy = busy_time / steps;
    const double elapsed = 10000 * cycles_per_ns;
    v1::PmSample* s = trace.add_packet()->mutable_pm_sample();
    s->set_metric_set_id(1);
    s->set_start_ns(t);
    s->set_duration_ns(10000);
    // Per-SM warps per active cycle: busy SMs hold gpu_warps/132 on average while active.
    s->add_values(busy > 0 ? gpu_warps / 132 / busy : 0);
    s->add_values(gpu_warps);
    s->add_values(elapsed * busy);
    s->add_values(elapsed);
  }
}

// The wire form of the scenario. `with_pm` = false leaves out the PM packets.
inline std::string ScenarioWire(bool with_pm = true,
                                const std::vector<ScenarioKernel>& kernels = ScenarioKernels()) {
  v1::Trace trace;
  v1::Header* h = trace.add_packet()->mutable_header();
  h->set_format_major(1);
  h->set_tool_version("0.1.0");
  h->set_clock_domain(v1::CLOCK_DOMAIN_SYNTHETIC);
  h->set_producer("fixture:pm_scenario");
  AddScenarioDevice(trace);
  const uint64_t end_ns = AddScenarioKernels(trace, kernels);
  if (with_pm) AddScenarioPm(trace, kernels, end_ns);
  trace.add_packet()->mutable_end_of_trace()->set_reason(v1::END_REASON_EXIT);
  return trace.SerializeAsString();
}

// The scenario written to a temporary file and loaded as the analyzers load a trace.
inline TraceModel LoadScenario(bool with_pm = true,
                               const std::vector<ScenarioKernel>& kernels = ScenarioKernels()) {
  absl::StatusOr<TraceModel> model =
      TraceModel::Load(WriteTempFile(ScenarioWire(with_pm, kernels)));
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

}  // namespace warpscope::testing

#endif  // WARPSCOPE_TESTS_TAIL_PM_SCENARIO_H_
