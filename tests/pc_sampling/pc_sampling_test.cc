// PC sampling collector without a GPU: WARPSCOPE_PC_* parsing, translation into records, and
// the controller's lifecycle, draining and error handling against a fake API.
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collectors/pc_sampling/pc_sample_translation.h"
#include "collectors/pc_sampling/pc_sampling_call_logger.h"
#include "collectors/pc_sampling/pc_sampling_config.h"
#include "collectors/pc_sampling/pc_sampling_controller.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warpscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PcSamplingConfigTest, DefaultsAndEnvironment) {
  std::map<std::string, std::string> env;
  auto get = [&](std::string_view name) {
    auto it = env.find(std::string(name));
    return it == env.end() ? std::string() : it->second;
  };
  PcSamplingConfig config;
  std::string error;
  ASSERT_TRUE(LoadPcSamplingConfig(get, &config, &error)) << error;
  EXPECT_EQ(config.period_exponent, 15u);
  EXPECT_EQ(config.hardware_buffer_bytes, 64ull << 20);

  env["WARPSCOPE_PC_PERIOD"] = " 12 ";
  env["WARPSCOPE_PC_BUFFER_MB"] = "256";
  ASSERT_TRUE(LoadPcSamplingConfig(get, &config, &error)) << error;
  EXPECT_EQ(config.period_exponent, 12u);
  EXPECT_EQ(config.hardware_buffer_bytes, 256ull << 20);
  env["WARPSCOPE_PC_PERIOD"] = "5";
  EXPECT_TRUE(LoadPcSamplingConfig(get, &config, &error));
  env["WARPSCOPE_PC_PERIOD"] = "31";
  EXPECT_TRUE(LoadPcSamplingConfig(get, &config, &error));

  env["WARPSCOPE_PC_PERIOD"] = "0";  // CUPTI's default
  EXPECT_TRUE(LoadPcSamplingConfig(get, &config, &error));
  EXPECT_EQ(config.period_exponent, 0u);

  for (const char* bad : {"4", "1", "32", "4096", "fast", "-1", "12x"}) {
    env["WARPSCOPE_PC_PERIOD"] = bad;
    EXPECT_FALSE(LoadPcSamplingConfig(get, &config, &error)) << bad;
    EXPECT_THAT(error, HasSubstr("warpscope: WARPSCOPE_PC_PERIOD='"));
    EXPECT_THAT(error, HasSubstr("PC sampling stays off"));
  }
  env["WARPSCOPE_PC_PERIOD"] = "15";
  for (const char* bad : {"0", "4097", "64M", "lots"}) {
    env["WARPSCOPE_PC_BUFFER_MB"] = bad;
    EXPECT_FALSE(LoadPcSamplingConfig(get, &config, &error)) << bad;
    EXPECT_THAT(error, HasSubstr("WARPSCOPE_PC_BUFFER_MB"));
  }
  env["WARPSCOPE_PC_BUFFER_MB"] = "64";
  EXPECT_FALSE(config.debug);
  env["WARPSCOPE_PC_DEBUG"] = "1";
  ASSERT_TRUE(LoadPcSamplingConfig(get, &config, &error)) << error;
  EXPECT_TRUE(config.debug);
  env["WARPSCOPE_PC_DEBUG"] = "maybe";
  EXPECT_FALSE(LoadPcSamplingConfig(get, &config, &error));
  EXPECT_THAT(error, HasSubstr("WARPSCOPE_PC_DEBUG='maybe'"));
}

PcRawPc Pc(std::string function, uint64_t offset,
           std::vector<std::pair<uint32_t, uint32_t>> stalls) {
  PcRawPc pc;
  pc.cubin_crc = 0xC0FFEE;
  pc.pc_offset = offset;
  pc.function_name = std::move(function);
  pc.stall_samples = std::move(stalls);
  return pc;
}

TEST(PcSampleTranslationTest, StallReasonTable) {
  PcStallReasonsRecord r = MakePcStallReasonsRecord(
      3,
      {{7, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}, {9, "smsp__pcsamp_sample_count"}});
  EXPECT_EQ(r.device_id, 3u);
  EXPECT_THAT(r.index, ElementsAre(7u, 9u));
  EXPECT_THAT(r.name, ElementsAre("smsp__pcsamp_warps_issue_stalled_long_scoreboard",
                                  "smsp__pcsamp_sample_count"));
}

TEST(PcSampleTranslationTest, BatchInternsNamesOncePerRunAndDropsZeroReasons) {
  PcRawBatch raw;
  raw.total_samples = 100;
  raw.dropped_samples = 2;
  raw.non_user_kernel_samples = 5;
  raw.pcs = {Pc("_Z4axpyPf", 0x10, {{1, 4}, {2, 0}, {3, 6}}), Pc("_Z4axpyPf", 0x20, {{1, 1}}),
             Pc("_Z4gemmv", 0x30, {{5, 9}}), Pc("", 0x40, {{5, 1}})};
  std::vector<std::string> interned;
  PcStringInterner intern = [&](std::string_view s) {
    interned.emplace_back(s);
    return static_cast<uint64_t>(interned.size());
  };
  PcSampleBatchRecord out;
  out.records.resize(9);  // reused record with stale entries
  const uint64_t samples = TranslatePcBatch(raw, {1, 2, 123}, intern, &out);
  EXPECT_EQ(samples, 21u);
  EXPECT_THAT(interned, ElementsAre("_Z4axpyPf", "_Z4gemmv"));
  EXPECT_EQ(out.device_id, 1u);
  EXPECT_EQ(out.context_id, 2u);
  EXPECT_EQ(out.timestamp_ns, 123u);
  EXPECT_EQ(out.total_samples, 100u);
  EXPECT_EQ(out.dropped_samples, 2u);
  EXPECT_EQ(out.non_user_kernel_samples, 5u);
  EXPECT_FALSE(out.hardware_buffer_full);
  ASSERT_EQ(out.records.size(), 4u);
  EXPECT_EQ(out.records[0].function_name_id, 1u);
  EXPECT_EQ(out.records[0].cubin_crc, 0xC0FFEEu);
  EXPECT_EQ(out.records[0].pc_offset, 0x10u);
  EXPECT_THAT(out.records[0].stall_reason_index, ElementsAre(1u, 3u));
  EXPECT_THAT(out.records[0].samples, ElementsAre(4u, 6u));
  EXPECT_EQ(out.records[1].function_name_id, 1u);
  EXPECT_EQ(out.records[2].function_name_id, 2u);
  EXPECT_EQ(out.records[3].function_name_id, 0u);  // no name: no string
}

// A fake CUPTI: per context a queue of GetData rounds, failures to inject, a call log.
class FakePcApi : public PcSamplingApi {
 public:
  struct Round {
    PcResult result;
    PcRawBatch batch;
  };
  PcResult enable_result, reasons_result, configure_result, start_result, stop_result,
      crc_result;
  std::map<std::thread::id, std::set<PcContext>> bound;
  int binds = 0, unbinds = 0;
  std::vector<std::string> unbound_calls;
  std::vector<PcStallReason> reasons = {{0, "smsp__pcsamp_warps_issue_stalled_barrier"},
                                        {4, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"},
                                        {8, "smsp__pcsamp_warps_issue_stalled_selected"}};
  std::map<PcContext, std::deque<Round>> rounds;
  PcContextSettings settings;
  std::vector<std::string> calls;
  mutable std::mutex mu;  // the worker-thread test reads `calls` concurrently

  // Which contexts are current on the calling thread (the controller's ScopedBinding), and
  // the calls that ran on a thread where their context was not.
  PcBinding BindContext(PcContext ctx) override {
    std::lock_guard<std::mutex> lock(mu);
    if (bound[std::this_thread::get_id()].count(ctx) != 0) return PcBinding::kAlreadyCurrent;
    bound[std::this_thread::get_id()].insert(ctx);
    ++binds;
    return PcBinding::kPushed;
  }
  void UnbindContext(PcContext ctx, PcBinding binding) override {
    std::lock_guard<std::mutex> lock(mu);
    if (binding == PcBinding::kPushed) {
      bound[std::this_thread::get_id()].erase(ctx);
      ++unbinds;
    }
  }
  PcResult Enable(PcContext ctx) override { return Log("enable", ctx, enable_result); }
  std::string DescribeConfiguration(PcContext) override { return "SAMPLING_PERIOD=15"; }
  PcResult CubinCrc(const void* cubin, size_t size, uint64_t* crc) override {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back("crc " + std::to_string(size));
    *crc = crc_result.ok() ? std::hash<std::string_view>()(
                                 std::string_view(static_cast<const char*>(cubin), size))
                           : 0;
    return crc_result;
  }
  PcResult GetStallReasons(PcContext ctx, std::vector<PcStallReason>* out) override {
    *out = reasons;
    return Log("reasons", ctx, reasons_result);
  }
  PcResult Configure(PcContext ctx, const PcContextSettings& s) override {
    settings = s;
    return Log("configure", ctx, configure_result);
  }
  PcResult Start(PcContext ctx) override { return Log("start", ctx, start_result); }
  PcResult Stop(PcContext ctx) override { return Log("stop", ctx, stop_result); }
  PcResult GetData(PcContext ctx, PcRawBatch* batch) override {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back("getdata " + Name(ctx));
    NoteBindingLocked("getdata", ctx);
    batch->Clear();
    auto& q = rounds[ctx];
    if (q.empty()) return {};
    Round r = std::move(q.front());
    q.pop_front();
    *batch = std::move(r.batch);
    return r.result;
  }
  void Disable(PcContext ctx, PcRawBatch* leftover) override {
    Log("disable", ctx, {});
    std::lock_guard<std::mutex> lock(mu);
    leftover->Clear();
    auto it = at_disable.find(ctx);
    if (it != at_disable.end()) {
      *leftover = std::move(it->second);
      at_disable.erase(it);
    }
  }
  // What CUPTI leaves in the configured buffer at Disable, per context.
  std::map<PcContext, PcRawBatch> at_disable;

  void Queue(PcContext ctx, PcResult result, PcRawBatch batch) {
    std::lock_guard<std::mutex> lock(mu);
    rounds[ctx].push_back({std::move(result), std::move(batch)});
  }
  std::vector<std::string> TakeCalls() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::string> out;
    out.swap(calls);
    return out;
  }
  size_t CountCalls(const std::string& call) const {
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (const auto& c : calls) n += c == call;
    return n;
  }
  static std::string Name(PcContext ctx) {
    return std::to_string(reinterpret_cast<uintptr_t>(ctx));
  }

 private:
  PcResult Log(const char* what, PcContext ctx, PcResult result) {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back(std::string(what) + " " + Name(ctx));
    NoteBindingLocked(what, ctx);
    return result;
  }
  void NoteBindingLocked(const std::string& what, PcContext ctx) {
    auto it = bound.find(std::this_thread::get_id());
    if (it == bound.end() || it->second.count(ctx) == 0) {
      unbound_calls.push_back(what + " " + Name(ctx));
    }
  }
};

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
  std::map<std::string, uint64_t> counters;
  std::vector<std::string> lines;
};

// Lets a worker thread drain until the sink has a batch (or 5 s pass).
void WaitForABatch(const FakeSink& sink) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (sink.BatchCount() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

PcContext Context(uintptr_t id) {
  return reinterpret_cast<PcContext>(id);  // NOLINT(performance-no-int-to-ptr): fake handles
}

PcRawBatch Batch(uint64_t total, uint64_t remaining, std::vector<PcRawPc> pcs) {
  PcRawBatch b;
  b.total_samples = total;
  b.remaining_num_pcs = remaining;
  b.pcs = std::move(pcs);
  return b;
}

class PcSamplingControllerTest : public ::testing::Test {
 protected:
  PcSamplingController& Make(bool worker = false) {
    controller_ = std::make_unique<PcSamplingController>(api_, sink_, config_, worker);
    return *controller_;
  }
  FakePcApi api_;
  FakeSink sink_;
  PcSamplingConfig config_;
  std::unique_ptr<PcSamplingController> controller_;
};

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
  EXPECT_EQ(sink_.counters[kPcStatBatches], 2u);
  EXPECT_EQ(sink_.counters[kPcStatPcs], 2u);
  EXPECT_EQ(sink_.counters[kPcStatSamples], 13u);
  EXPECT_EQ(sink_.counters[kPcStatContextsSampled], 1u);
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
  EXPECT_EQ(sink_.counters[kPcStatPcs], 4u);
  EXPECT_EQ(sink_.counters[kPcStatSamples], 10u);
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
  EXPECT_EQ(sink_.counters[kPcStatDrainCapped], 1u);
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
  EXPECT_EQ(sink_.counters[kPcStatHardwareBufferFull], 2u);
  EXPECT_EQ(sink_.counters[kPcStatSamplesDropped], 14u);
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
  EXPECT_EQ(sink_.counters[kPcStatGetDataErrors], 2u);
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
  EXPECT_EQ(sink_.counters[kPcStatBatchesDropped], 1u);
  EXPECT_EQ(sink_.counters[kPcStatBatches], 0u);
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
  EXPECT_EQ(sink_.counters[kPcStatContextRefused], 1u);
  ASSERT_EQ(sink_.lines.size(), 1u);
  EXPECT_THAT(sink_.lines[0], HasSubstr("context 8 on device 0 is not sampled"));
  EXPECT_THAT(sink_.lines[0], HasSubstr("context 7 has it"));
  EXPECT_EQ(sink_.reasons.size(), 2u);  // one table per device
}

TEST_F(PcSamplingControllerTest, DestroyedContextIsDrainedDisabledAndFreesTheDevice) {
  PcSamplingController& c = Make();
  c.OnContextCreated(Context(1), 1, 0);
  c.StartCapture();
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
  EXPECT_EQ(sink_.counters[kPcStatSamples], 8u);
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
  EXPECT_EQ(sink_.counters[kPcStatPrivileges], 1u);
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
  EXPECT_EQ(sink_.counters[kPcStatUnsupported], 1u);
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
  PcSamplingController& c = Make();
  c.OnContextCreated(Context(1), 1, 0);
  c.StartCapture();
  EXPECT_FALSE(c.enabled(Context(1)));
  EXPECT_EQ(api_.CountCalls("disable 1"), 0u);  // not where the failure happened
  EXPECT_EQ(sink_.counters[kPcStatOtherError], 1u);
  c.Shutdown();  // the session's end disables what is left
  EXPECT_EQ(api_.CountCalls("disable 1"), 1u);
}

TEST_F(PcSamplingControllerTest, AGpuSampledByAnotherProcessIsOneLineAndTracingGoesOn) {
  api_.enable_result = {PcErrorKind::kBusy,
                        "another process already samples the PCs of GPU 0000:19:00.0"};
  PcSamplingController& c = Make();
  c.OnContextCreated(Context(1), 1, 0);
  c.StartCapture();
  EXPECT_FALSE(c.enabled(Context(1)));
  EXPECT_EQ(sink_.counters[kPcStatBusy], 1u);
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
  config_.drain_interval_ms = 1;
  PcSamplingController& c = Make(/*worker=*/true);
  c.OnContextCreated(Context(1), 1, 0);
  c.StartCapture();
  api_.Queue(Context(1), {}, Batch(1, 0, {Pc("a", 1, {{0, 1}})}));
  WaitForABatch(sink_);
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
  PcSamplingController& c = Make();
  c.OnContextCreated(Context(1), 1, 0);
  c.StartCapture();
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
  config_.drain_interval_ms = 1;
  PcSamplingController& c = Make(/*worker=*/true);
  c.OnContextCreated(Context(1), 1, 0);
  c.StartCapture();
  api_.Queue(Context(1), {}, Batch(1, 0, {Pc("a", 1, {{0, 1}})}));
  WaitForABatch(sink_);
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
  EXPECT_EQ(sink_.counters[kPcStatCubins], 2u);
  EXPECT_EQ(sink_.counters[kPcStatCubinBytes], a.size() + b.size());
  EXPECT_EQ(sink_.counters[kPcStatCubinsLost], 2u);
}

TEST(PcSamplingCallLoggerTest, LogsEveryCallWithArgumentsResultsAndTotals) {
  auto fake = std::make_unique<FakePcApi>();
  FakePcApi& api = *fake;
  std::vector<std::string> lines;
  PcSamplingCallLogger logger(std::move(fake), [&](std::string_view l) { lines.emplace_back(l); });
  const PcContext ctx = Context(0x20);
  PcRawBatch batch;
  std::vector<PcStallReason> reasons;
  EXPECT_TRUE(logger.Enable(ctx).ok());
  EXPECT_TRUE(logger.GetStallReasons(ctx, &reasons).ok());
  PcContextSettings settings;
  settings.period_exponent = 0;
  settings.hardware_buffer_bytes = 1 << 20;
  EXPECT_TRUE(logger.Configure(ctx, settings).ok());
  const PcBinding binding = logger.BindContext(ctx);
  api.start_result = {PcErrorKind::kOther, "cuptiPCSamplingStart: CUPTI_ERROR_INVALID_OPERATION (3)"};
  EXPECT_FALSE(logger.Start(ctx).ok());
  PcRawBatch full = Batch(40, 0, {Pc("a", 1, {{0, 3}, {4, 2}})});
  full.non_user_kernel_samples = 7;
  api.Queue(ctx, {}, full);
  EXPECT_TRUE(logger.GetData(ctx, &batch).ok());
  logger.UnbindContext(ctx, binding);
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_THAT(lines[0], HasSubstr("cuptiPCSamplingEnable ctx="));
  EXPECT_THAT(lines[0], HasSubstr("-> ok"));
  EXPECT_THAT(lines[1], HasSubstr("count=3 0:smsp__pcsamp_warps_issue_stalled_barrier"));
  EXPECT_THAT(lines[2], HasSubstr("period=default hardware_buffer=1048576"));
  EXPECT_THAT(lines[3], HasSubstr("reads back: SAMPLING_PERIOD=15"));
  EXPECT_THAT(lines[4], HasSubstr("bind-context"));
  EXPECT_THAT(lines[4], HasSubstr("pushed"));
  EXPECT_THAT(lines[5], HasSubstr("cuptiPCSamplingStart"));
  EXPECT_THAT(lines[5], HasSubstr("CUPTI_ERROR_INVALID_OPERATION"));
  EXPECT_THAT(lines[6], HasSubstr("total=40 dropped=0 non_user=7 pcs=1 remaining=0 pc_samples=5"));
  EXPECT_THAT(lines[6], HasSubstr("so far: pcs=1 pc_samples=5"));
  EXPECT_THAT(lines[6], HasSubstr("tid "));
}

}  // namespace
}  // namespace warpscope
