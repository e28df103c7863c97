// The activity controller's test fixture: a fake ActivityApi (synthetic CUDA 13.0 activity
// records) under a real ActivityController and TraceWriter, the file read back with the
// TraceModel.
#ifndef WARPSCOPE_TESTS_ACTIVITY_ACTIVITY_CONTROLLER_FIXTURE_H_
#define WARPSCOPE_TESTS_ACTIVITY_ACTIVITY_CONTROLLER_FIXTURE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/model/trace_model.h"
#include "collectors/activity/activity_controller.h"
#include "gtest/gtest.h"
#include "proto/writer/trace_writer.h"
#include "tests/activity/fake_activity_api.h"
#include "tests/collectors/written_trace_test.h"
#include "tests/support/trace_test_util.h"

namespace warpscope::testing {

inline constexpr size_t kBufferBytes = 4096;  // a few dozen records: traces span several buffers

inline TraceKinds EveryKind(bool on) {
  return TraceKinds{.kernel = on,
                    .launch = on,
                    .memory = on,
                    .alloc = on,
                    .runtime = on,
                    .driver = on,
                    .nvtx = on,
                    .sync = on,
                    .overhead = on,
                    .graph = on};
}

inline const StatCounter* FindStat(const TraceModel& model, std::string_view name) {
  for (const StatCounter& c : model.stats) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

class ActivityControllerTest : public WrittenTraceTest {
 protected:
  void SetUp() override {
    HeaderRecord header;
    header.clock_domain = ClockDomain::kMonotonic;
    header.time_base_ns = kTimeBase;
    TraceWriterOptions options;
    options.stats_interval_ms = 0;  // only the final Stats packet
    ASSERT_NO_FATAL_FAILURE(OpenWriter("activity_controller_test", header, options));
  }

  static ActivityOptions Options() {
    ActivityOptions o;
    o.buffer_bytes = kBufferBytes;
    return o;
  }
  void Init(const ActivityOptions& options) {
    std::string error;
    ASSERT_TRUE(controller_.Init(options, writer_.get(), &error)) << error;
  }
  void OpenWindow() {
    std::string error;
    ASSERT_TRUE(controller_.SetEnabled(true, &error)) << error;
  }
  // The calls opening the first capture window makes.
  std::vector<std::string> InitThenOpenWindow(const ActivityOptions& options) {
    Init(options);
    fake_.calls.clear();
    OpenWindow();
    return fake_.calls;
  }
  // An open window, with a clock at 10 ms into the trace on which reading a record takes
  // 1 us and a flush 500 ns more.
  void TraceWithAClock() {
    Init(Options());
    OpenWindow();
    fake_.now_ns = kTimeBase + 10'000'000;
    fake_.record_ns = 1'000;
    fake_.flush_ns = 500;
  }
  // The activity counters as they would go into the next Stats packet.
  uint64_t Published(std::string_view name) {
    controller_.PublishCounters();
    return writer_->Counter(name);
  }
  TraceModel CloseAndLoad() { return WrittenTraceTest::CloseAndLoad(kTimeBase + 1'000'000'000); }

  FakeActivityApi fake_;
  ActivityController controller_{fake_};
};

}  // namespace warpscope::testing

#endif  // WARPSCOPE_TESTS_ACTIVITY_ACTIVITY_CONTROLLER_FIXTURE_H_
