// PC sampling controller without a GPU: its per-context state machine, drains, errors and
// cubins against a fake PcSamplingApi.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectors/pc_sampling/pc_sampling_controller.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/writer/stats_table.h"
#include "tests/pc_sampling/fake_pc_sampling_api.h"

namespace warpscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace pc_sampling_test;  // NOLINT(build/namespaces): the fake and its helpers.

class FakeSink : public PcRecordSink {
 public:
  bool Write(const PcStallReasonsRecord& r) override {
    std::lock_guard<std::mutex> lock(mu);
    reasons.push_back(r);
    return true;
  }
  bool Write(const CubinImageRecord& r) override {
    std::lock_guard<std::mutex> lock(mu);
    if (refuse_cubins) return false;
    cubins.push_back({r.crc, r.device_id,
                      std::string(static_cast<const char*>(r.image), r.size)});
    return true;
  }
  bool Write(const PcSampleBatchRecord& r) override {
    std::lock_guard<std::mutex> lock(mu);
    if (refuse_batches) return false;
    batches.push_back(r);
    return true;
  }
  uint64_t InternString(std::string_view value) override {
    std::lock_guard<std::mutex> lock(mu);
    auto [it, inserted] = strings.emplace(std::string(value), strings.size() + 1);
    return it->second;
  }
  void AddToCounter(std::string_view name, uint64_t delta, Severity) override {
    std::lock_guard<std::mutex> lock(mu);
    counters[std::string(name)] += delta;
  }
  void Report(Severity, std::string_view message) override {
    std::lock_guard<std::mutex> lock(mu);
    lines.emplace_back(message);
  }
  uint64_t NowNs() override { return 1000; }
  uint64_t Count(const StatDef& stat) const {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = counters.find(stat.name);
    return it == counters.end() ? 0 : it->second;
  }
  size_t BatchCount() const {
    std::lock_guard<std::mutex> lock(mu);
    return batches.size();
  }

  struct Cubin {
    uint64_t crc;
    uint32_t device_id;
    std::string image;
  };
  mutable std::mutex mu;
  bool refuse_batches = false;
  bool refuse_cubins = false;
  std::vector<Cubin> cubins;
  std::vector<PcStallReasonsRecord> reasons;
  std::vector<PcSampleBatchRecord> batches;
  std::map<std::string, uint64_t> strings;
  std::map<std::string, uint64_t, std::less<>> counters;
  std::vector<std::string> lines;
};

// Lets a worker thread drain until the sink has a batch (or 5 s pass).
void WaitForABatch(const FakeSink& sink) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (sink.BatchCount() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

class PcSamplingControllerTest : public ::testing::Test {
 protected:
  PcSamplingController& Make(bool worker = false) {
    controller_ = std::make_unique<PcSamplingController>(api_, sink_, config_, worker);
    return *controller_;
  }
  // A controller with context 1 (device 0) created and a capture window open.
  PcSamplingController& MakeSampling() {
    PcSamplingController& c = Make();
    c.OnContextCreated(Context(1), 1, 0);
    c.StartCapture();
    return c;
  }
  // The same with the worker thread draining every millisecond, after it wrote one batch.
  PcSamplingController& MakeWorkerWithABatch() {
    config_.drain_interval_ms = 1;
    PcSamplingController& c = Make(/*worker=*/true);
    c.OnContextCreated(Context(1), 1, 0);
    c.StartCapture();
    api_.Queue(Context(1), {}, Batch(1, 0, {Pc("a", 1, {{0, 1}})}));
    WaitForABatch(sink_);
    return c;
  }
  FakePcApi api_;
  FakeSink sink_;
  PcSamplingConfig config_;
  std::unique_ptr<PcSamplingController> controller_;
};

TEST_F(PcSamplingControllerTest, ConfiguresTheBufferSizedFromThePeriod) {
  config_.period_exponent = 10;
  PcSamplingController& c = Make();
  c.OnContextCreated(Context(0x10), 1, 0);
  EXPECT_EQ(api_.settings.period_exponent, 10u);
  EXPECT_EQ(api_.settings.hardware_buffer_bytes, 256ull << 20);
}

TEST_F(PcSamplingControllerTest, LifecycleWithCaptureWindow) {
  config_.period_exponent = 13;
  PcSamplingController& c = Make();
  const PcContext ctx = Context(0x10);
  c.OnContextCreated(ctx, 1, 0);
  EXPECT_THAT(api_.TakeCalls(), ElementsAre("enable 16", "reasons 16", "configure 16"));
  EXPECT_EQ(api_.settings.period_exponent, 13u);
  EXPECT_EQ(api_.settings.hardware_buffer_bytes, 64ull << 20);
  EXPECT_THAT(api_.settings.stall_reason_indices, ElementsAre(0u, 4u, 8u));
  ASSERT_EQ(sink_.reasons.size(), 1u);
  EXPECT_EQ(sink_.reasons[0].device_id, 0u);
  EXPECT_THAT(sink_.reasons[0].index, ElementsAre(0u, 4u, 8u));
  EXPECT_TRUE(c.enabled(ctx));
  EXPECT_FALSE(c.sampling(ctx));  // no capture window yet
  c.Poll();
  EXPECT_TRUE(api_.TakeCalls().empty());

  c.StartCapture();
  EXPECT_TRUE(c.sampling(ctx));
  api_.Queue(ctx, {}, Batch(10, 0, {Pc("_Z1kv", 0x80, {{4, 10}})}));
  c.Poll();
  EXPECT_THAT(api_.TakeCalls(), ElementsAre("start 16", "getdata 16"));
  ASSERT_EQ(sink_.batches.size(), 1u);
  EXPECT_EQ(sink_.batches[0].context_id, 1u);
  EXPECT_EQ(sink_.batches[0].timestamp_ns, 1000u);
  EXPECT_EQ(sink_.batches[0].records[0].function_name_id, sink_.strings["_Z1kv"]);
  c.Poll();  // nothing new: no empty batch
  EXPECT_EQ(sink_.batches.size(), 1u);

  api_.Queue(ctx, {}, Batch(3, 0, {Pc("_Z1kv", 0x90, {{0, 3}})}));
  c.StopCapture();
  EXPECT_THAT(api_.TakeCalls(), ElementsAre("getdata 16", "stop 16", "getdata 16"));
  EXPECT_EQ(sink_.batches.size(), 2u);
  EXPECT_FALSE(c.sampling(ctx));
  EXPECT_TRUE(c.enabled(ctx));

  c.StartCapture();  // a second window
  c.StopCapture();
  EXPECT_THAT(api_.TakeCalls(), ElementsAre("start 16", "stop 16", "getdata 16"));

  c.Shutdown();
  EXPECT_THAT(api_.TakeCalls(), ElementsAre("disable 16"));
  c.Shutdown();  // idempotent
  controller_.reset();
  EXPECT_TRUE(api_.TakeCalls().empty());
  EXPECT_EQ(sink_.Count(stats::kPcBatches), 2u);
  EXPECT_EQ(sink_.Count(stats::kPcRecords), 2u);
  EXPECT_EQ(sink_.Count(stats::kPcSamples), 13u);
  EXPECT_EQ(sink_.Count(stats::kPcContextsSampled), 1u);
  EXPECT_TRUE(sink_.lines.empty());
}

TEST_F(PcSamplingControllerTest, ContextCreatedDuringCaptureStartsAtOnce) {
  PcSamplingController& c = Make();
  c.StartCapture();
  c.OnContextCreated(Context(1), 1, 0);
  EXPECT_TRUE(c.sampling(Context(1)));
  EXPECT_EQ(api_.CountCalls("start 1"), 1u);
}

TEST_F(PcSamplingControllerTest, DrainsSeveralRounds) {
  PcSamplingController& c = Make();
  const PcContext ctx = Context(2);
  c.OnContextCreated(ctx, 1, 0);
  c.StartCapture();
  api_.Queue(ctx, {}, Batch(50, 2, {Pc("a", 1, {{0, 1}}), Pc("a", 2, {{0, 2}})}));
  api_.Queue(ctx, {}, Batch(50, 1, {Pc("b", 3, {{4, 3}})}));
  api_.Queue(ctx, {}, Batch(50, 0, {Pc("c", 4, {{8, 4}})}));
  api_.Queue(ctx, {}, Batch(99, 0, {Pc("never", 5, {{8, 4}})}));  // next drain's
  c.Poll();
  EXPECT_EQ(api_.CountCalls("getdata 2"), 3u);
  ASSERT_EQ(sink_.batches.size(), 3u);
  EXPECT_EQ(sink_.batches[0].records.size(), 2u);
  EXPECT_EQ(sink_.batches[2].records[0].pc_offset, 4u);
  EXPECT_EQ(sink_.Count(stats::kPcRecords), 4u);
  EXPECT_EQ(sink_.Count(stats::kPcSamples), 10u);
  EXPECT_EQ(sink_.strings.size(), 3u);
}

TEST_F(PcSamplingControllerTest, DrainIsBoundedWhenCuptiKeepsReportingMore) {
  config_.max_rounds_per_drain = 4;
  PcSamplingController& c = Make();
  const PcContext ctx = Context(2);
  c.OnContextCreated(ctx, 1, 0);
  c.StartCapture();
  for (int i = 0; i < 6; ++i) api_.Queue(ctx, {}, Batch(1, 1, {Pc("a", 1, {{0, 1}})}));
  c.Poll();
  EXPECT_EQ(api_.CountCalls("getdata 2"), 4u);
  EXPECT_EQ(sink_.Count(stats::kPcDrainCapped), 1u);
}

TEST_F(PcSamplingControllerTest, HardwareBufferFullIsReportedOnceAndCounted) {
  PcSamplingController& c = Make();
  const PcContext ctx = Context(3);
  c.OnContextCreated(ctx, 1, 2);
  c.StartCapture();
  PcResult oom{PcErrorKind::kOutOfMemory, "cuptiPCSamplingGetData: CUPTI_ERROR_OUT_OF_MEMORY (4)"};
  PcRawBatch full = Batch(0, 5, {});
  full.hardware_buffer_full = true;
  full.dropped_samples = 7;
  api_.Queue(ctx, oom, full);
  api_.Queue(ctx, {}, Batch(5, 0, {Pc("a", 1, {{0, 5}})}));
  api_.Queue(ctx, oom, full);
  c.Poll();  // stops at the full buffer: no spinning
  EXPECT_EQ(api_.CountCalls("getdata 3"), 1u);
  c.Poll();
  c.Poll();
  ASSERT_EQ(sink_.batches.size(), 3u);
  EXPECT_TRUE(sink_.batches[0].hardware_buffer_full);
  EXPECT_EQ(sink_.batches[0].device_id, 2u);
  EXPECT_FALSE(sink_.batches[1].hardware_buffer_full);
  EXPECT_EQ(sink_.Count(stats::kPcHardwareBufferFull), 2u);
  EXPECT_EQ(sink_.Count(stats::kPcSamplesDropped), 14u);
  ASSERT_EQ(sink_.lines.size(), 1u);
  EXPECT_THAT(sink_.lines[0], HasSubstr("hardware buffer of device 2 filled up"));
  EXPECT_THAT(sink_.lines[0], HasSubstr("WARPSCOPE_PC_BUFFER_MB"));
  EXPECT_TRUE(c.sampling(ctx));  // sampling goes on
}

TEST_F(PcSamplingControllerTest, GetDataErrorIsCountedAndSamplingGoesOn) {
  PcSamplingController& c = Make();
  const PcContext ctx = Context(4);
  c.OnContextCreated(ctx, 1, 0);
  c.StartCapture();
  api_.Queue(ctx, {PcErrorKind::kOther, "cuptiPCSamplingGetData: CUPTI_ERROR_UNKNOWN (999)"},
             Batch(0, 3, {}));
  api_.Queue(ctx, {PcErrorKind::kOther, "again"}, {});
  api_.Queue(ctx, {}, Batch(1, 0, {Pc("a", 1, {{0, 1}})}));
  c.Poll();
  c.Poll();
  c.Poll();
  EXPECT_EQ(sink_.Count(stats::kPcGetDataErrors), 2u);
  ASSERT_EQ(sink_.lines.size(), 1u);
  EXPECT_THAT(sink_.lines[0], HasSubstr("CUPTI_ERROR_UNKNOWN"));
  EXPECT_EQ(sink_.batches.size(), 1u);
}

TEST_F(PcSamplingControllerTest, WriterRefusalIsCounted) {
  PcSamplingController& c = Make();
  c.OnContextCreated(Context(5), 1, 0);
  c.StartCapture();
  sink_.refuse_batches = true;
  api_.Queue(Context(5), {}, Batch(1, 0, {Pc("a", 1, {{0, 1}})}));
  c.Poll();
  EXPECT_EQ(sink_.Count(stats::kPcBatchesDropped), 1u);
  EXPECT_EQ(sink_.Count(stats::kPcBatches), 0u);
}

TEST_F(PcSamplingControllerTest, SecondContextOnSameDeviceIsRefused) {
  PcSamplingController& c = Make();
  c.OnContextCreated(Context(1), 7, 0);
  c.OnContextCreated(Context(2), 8, 0);
  c.OnContextCreated(Context(3), 9, 1);
  EXPECT_TRUE(c.enabled(Context(1)));
  EXPECT_FALSE(c.enabled(Context(2)));
  EXPECT_TRUE(c.enabled(Context(3)));
  EXPECT_EQ(api_.CountCalls("enable 2"), 0u);
  EXPECT_EQ(sink_.Count(stats::kPcContextsRefused), 1u);
  ASSERT_EQ(sink_.lines.size(), 1u);
  EXPECT_THAT(sink_.lines[0], HasSubstr("context 8 on device 0 is not sampled"));
  EXPECT_THAT(sink_.lines[0], HasSubstr("context 7 has it"));
  EXPECT_EQ(sink_.reasons.size(), 2u);  // one table per device
}

TEST_F(PcSamplingControllerTest, DestroyedContextIsDrainedDisabledAndFreesTheDevice) {
  PcSamplingController& c = MakeSampling();
  api_.TakeCalls();
  api_.Queue(Context(1), {}, Batch(2, 0, {Pc("a", 1, {{0, 2}})}));
  c.OnContextDestroying(Context(1));
  EXPECT_THAT(api_.TakeCalls(), ElementsAre("stop 1", "getdata 1", "disable 1"));
  EXPECT_EQ(sink_.batches.size(), 1u);
  EXPECT_FALSE(c.enabled(Context(1)));
  c.OnContextDestroying(Context(1));  // unknown now: nothing
  EXPECT_TRUE(api_.TakeCalls().empty());

  c.OnContextCreated(Context(2), 2, 0);  // same device, after the first is gone
  EXPECT_TRUE(c.sampling(Context(2)));
  EXPECT_EQ(sink_.reasons.size(), 1u);  // table already in the trace
  c.Shutdown();
  EXPECT_EQ(api_.CountCalls("disable 2"), 1u);
}

// CUPTI puts the PCs no GetData returned into the configured buffer at Disable: they are
// written like any drained batch, at context teardown and at shutdown.
TEST_F(PcSamplingControllerTest, PcsLeftInTheConfiguredBufferAtDisableAreWritten) {
  PcSamplingController& c = Make();
  c.OnContextCreated(Context(1), 1, 0);
  c.OnContextCreated(Context(2), 2, 1);
  c.StartCapture();
  api_.at_disable[Context(1)] = Batch(3, 0, {Pc("left_a", 1, {{4, 3}})});
  api_.at_disable[Context(2)] = Batch(5, 0, {Pc("left_b", 2, {{8, 5}})});
  c.OnContextDestroying(Context(1));
  ASSERT_EQ(sink_.batches.size(), 1u);
  EXPECT_EQ(sink_.batches[0].device_id, 0u);
  c.Shutdown();
  ASSERT_EQ(sink_.batches.size(), 2u);
  EXPECT_EQ(sink_.batches[1].device_id, 1u);
  EXPECT_EQ(sink_.Count(stats::kPcSamples), 8u);
}

TEST_F(PcSamplingControllerTest, ModuleLoadDrainsOnlyWhileSampling) {
  PcSamplingController& c = Make();
  c.OnContextCreated(Context(1), 1, 0);
  c.OnModuleLoaded(Context(1));
  c.OnModuleLoaded(Context(99));
  EXPECT_EQ(api_.CountCalls("getdata 1"), 0u);
  c.StartCapture();
  c.OnModuleLoaded(Context(1));
  EXPECT_EQ(api_.CountCalls("getdata 1"), 1u);
}

TEST_F(PcSamplingControllerTest, InsufficientPrivilegesDisablesForTheProcess) {
  api_.enable_result = {PcErrorKind::kInsufficientPrivileges,
                        "cuptiPCSamplingEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35)"};
  PcSamplingController& c = Make();
  c.OnContextCreated(Context(1), 1, 0);
  c.OnContextCreated(Context(2), 2, 1);  // not even tried
  EXPECT_EQ(api_.CountCalls("enable 2"), 0u);
  EXPECT_FALSE(c.enabled(Context(1)));
  EXPECT_EQ(sink_.Count(stats::kPcDisabledPrivileges), 1u);
  ASSERT_EQ(sink_.lines.size(), 1u);
  EXPECT_THAT(sink_.lines[0], HasSubstr("NVreg_RestrictProfilingToAdminUsers=0"));
  EXPECT_THAT(sink_.lines[0], HasSubstr("tracing goes on"));
  c.StartCapture();
  c.Poll();
  c.Shutdown();
  EXPECT_TRUE(sink_.batches.empty());
}

TEST_F(PcSamplingControllerTest, UnsupportedAndConfigureFailuresStayPerContext) {
  api_.configure_result = {PcErrorKind::kUnsupported,
                           "cuptiPCSamplingSetConfigurationAttribute: "
                           "CUPTI_ERROR_NOT_SUPPORTED (27)"};
  PcSamplingController& c = Make();
  c.OnContextCreated(Context(1), 1, 0);
  // Not disabled inside the context-created callback: when the context goes away.
  EXPECT_EQ(api_.CountCalls("disable 1"), 0u);
  EXPECT_FALSE(c.enabled(Context(1)));
  EXPECT_TRUE(sink_.reasons.empty());
  EXPECT_EQ(sink_.Count(stats::kPcDisabledUnsupported), 1u);
  api_.configure_result = {};
  c.OnContextCreated(Context(2), 2, 0);  // the device is still free
  EXPECT_TRUE(c.enabled(Context(2)));
  c.OnContextDestroying(Context(1));
  EXPECT_EQ(api_.CountCalls("disable 1"), 1u);
  c.Shutdown();
  EXPECT_EQ(api_.CountCalls("disable 1"), 1u);
}

TEST_F(PcSamplingControllerTest, StartFailureDisablesTheContext) {
  api_.start_result = {PcErrorKind::kOther, "cuptiPCSamplingStart: CUPTI_ERROR_UNKNOWN (999)"};
  PcSamplingController& c = MakeSampling();
  EXPECT_FALSE(c.enabled(Context(1)));
  EXPECT_EQ(api_.CountCalls("disable 1"), 0u);  // not where the failure happened
  EXPECT_EQ(sink_.Count(stats::kPcDisabledError), 1u);
  c.Shutdown();  // the session's end disables what is left
  EXPECT_EQ(api_.CountCalls("disable 1"), 1u);
}

TEST_F(PcSamplingControllerTest, AGpuSampledByAnotherProcessIsOneLineAndTracingGoesOn) {
  api_.enable_result = {PcErrorKind::kBusy,
                        "another process already samples the PCs of GPU 0000:19:00.0"};
  PcSamplingController& c = MakeSampling();
  EXPECT_FALSE(c.enabled(Context(1)));
  EXPECT_EQ(sink_.Count(stats::kPcDisabledBusy), 1u);
  ASSERT_EQ(sink_.lines.size(), 1u);
  EXPECT_THAT(sink_.lines[0], HasSubstr("PC sampling off on device 0"));
  EXPECT_THAT(sink_.lines[0], HasSubstr("one process per GPU"));
  EXPECT_THAT(sink_.lines[0], HasSubstr("tracing goes on"));
  c.Shutdown();
  EXPECT_EQ(api_.CountCalls("disable 1"), 0u);  // never enabled
}

TEST_F(PcSamplingControllerTest, EnableFailureNeedsNoDisable) {
  api_.enable_result = {PcErrorKind::kUnsupported, "cuptiPCSamplingEnable: CUPTI_ERROR_X (27)"};
  PcSamplingController& c = Make();
  c.OnContextCreated(Context(1), 1, 0);
  c.OnContextDestroying(Context(1));
  c.Shutdown();
  EXPECT_EQ(api_.CountCalls("disable 1"), 0u);
}

TEST_F(PcSamplingControllerTest, WorkerThreadDrainsPeriodically) {
  PcSamplingController& c = MakeWorkerWithABatch();
  EXPECT_EQ(sink_.BatchCount(), 1u);
  c.Shutdown();  // joins the worker
  c.Shutdown();
  EXPECT_EQ(api_.CountCalls("disable 1"), 1u);
}

// CUPTI's per-context calls made from threads that are not the application's (capture
// edges from the session's watcher, the drain thread, process end) run with the context made
// current there; the resource callbacks (context created/destroyed, module loaded), where the
// driver is busy with the context, do not touch the context stack.
TEST_F(PcSamplingControllerTest, CallsOffTheApplicationThreadsRunWithTheContextCurrent) {
  PcSamplingController& c = MakeSampling();
  api_.Queue(Context(1), {}, Batch(2, 0, {Pc("a", 1, {{0, 2}})}));
  c.Poll();
  c.StopCapture();
  c.StartCapture();
  c.Shutdown();
  EXPECT_THAT(api_.unbound_calls, ElementsAre("enable 1", "reasons 1", "configure 1"));
  EXPECT_EQ(api_.binds, api_.unbinds);
  EXPECT_GE(api_.binds, 5);
}

TEST_F(PcSamplingControllerTest, WorkerThreadDrainsWithTheContextCurrent) {
  PcSamplingController& c = MakeWorkerWithABatch();
  c.Shutdown();
  std::lock_guard<std::mutex> lock(api_.mu);
  for (const std::string& call : api_.unbound_calls) EXPECT_THAT(call, ::testing::Not(HasSubstr("getdata")));
}

TEST_F(PcSamplingControllerTest, CubinsAreWrittenOncePerCrcForSampledContexts) {
  PcSamplingController& c = Make();
  c.OnContextCreated(Context(1), 1, 3);
  c.OnContextCreated(Context(2), 2, 3);  // refused: same device
  const std::string a = "cubin-a", b = "cubin-bb";
  c.OnModuleLoaded(Context(1), a.data(), a.size());
  c.OnModuleLoaded(Context(1), a.data(), a.size());  // same CRC: once
  c.OnModuleLoaded(Context(2), b.data(), b.size());  // context not sampled
  c.OnModuleLoaded(Context(1), nullptr, 0);          // no image: nothing
  ASSERT_EQ(sink_.cubins.size(), 1u);
  EXPECT_EQ(sink_.cubins[0].image, a);
  EXPECT_EQ(sink_.cubins[0].device_id, 3u);
  EXPECT_EQ(sink_.cubins[0].crc, std::hash<std::string_view>()(a));
  sink_.refuse_cubins = true;
  c.OnModuleLoaded(Context(1), b.data(), b.size());
  sink_.refuse_cubins = false;
  c.OnModuleLoaded(Context(1), b.data(), b.size());  // retried after the writer refused
  ASSERT_EQ(sink_.cubins.size(), 2u);
  api_.crc_result = {PcErrorKind::kOther, "cuptiGetCubinCrc: CUPTI_ERROR_INVALID_PARAMETER (2)"};
  c.OnModuleLoaded(Context(1), "x", 1);
  EXPECT_EQ(sink_.Count(stats::kPcCubins), 2u);
  EXPECT_EQ(sink_.Count(stats::kPcCubinBytes), a.size() + b.size());
  EXPECT_EQ(sink_.Count(stats::kPcCubinsLost), 2u);
}

}  // namespace
}  // namespace warpscope
