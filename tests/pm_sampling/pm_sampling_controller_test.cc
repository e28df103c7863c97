// PM sampling controller without a GPU: its state machine, one-pass check, error handling,
// decode and translation against a fake API.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "collectors/pm_sampling/pm_sampling_config.h"
#include "collectors/pm_sampling/pm_sampling_controller.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/writer/stats_table.h"

namespace warpscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A fake CUPTI: devices with a pass count and failures to inject, samples queued per device.
class FakePmApi : public PmSamplingApi {
 public:
  struct Sample {
    uint64_t start, end;
    std::vector<double> values;
  };
  PmResult init_result, prepare_result, enable_result, start_result;
  size_t passes = 1;
  std::map<uint32_t, std::vector<Sample>> queued;
  bool overflow_next = false;
  size_t per_decode = 1000;
  std::vector<std::string> calls;
  std::atomic<int> decodes{0};  // readable while the worker thread runs

  PmResult Initialize() override {
    calls.push_back("init");
    return init_result;
  }
  PmResult PrepareDevice(const PmDeviceSettings& s, std::string* chip, std::string* availability,
                         size_t* num_passes) override {
    calls.push_back("prepare " + std::to_string(s.device_index));
    settings = s;
    *chip = "GH100";
    *availability = std::string("\x01\x00\x02", 3);
    *num_passes = passes;
    return prepare_result;
  }
  PmResult EnableDevice(uint32_t d) override {
    calls.push_back("enable " + std::to_string(d));
    return enable_result;
  }
  PmResult Start(uint32_t d) override {
    calls.push_back("start " + std::to_string(d));
    return start_result;
  }
  PmResult Stop(uint32_t d) override {
    calls.push_back("stop " + std::to_string(d));
    return {};
  }
  // Like CUPTI: samples are appended to an image of `per_decode` slots; in raw modes the image
  // (its bytes are the sample indices) is handed over when full or on `flush`.
  PmResult Decode(uint32_t d, const PmSampleVisitor& visitor, const PmImageVisitor& image_visitor,
                  bool flush, PmDecodeResult* result) override {
    calls.push_back(std::string(flush ? "final decode " : "decode ") + std::to_string(d));
    auto& q = queued[d];
    auto& image = images[d];
    size_t n = std::min(per_decode - image.size(), q.size());
    for (size_t i = 0; i < n; ++i) {
      const uint32_t index = static_cast<uint32_t>(image.size());
      image.push_back(static_cast<uint8_t>(index));
      if (settings.evaluate) {
        visitor(index, q[i].start, q[i].end, q[i].values.data(), q[i].values.size());
      } else {
        visitor(index, q[i].start, q[i].end, nullptr, 0);
      }
    }
    q.erase(q.begin(), q.begin() + n);
    result->samples = n;
    result->more = !q.empty();
    if (image.size() == per_decode || flush) {
      if (settings.keep_raw && !image.empty()) image_visitor(image);
      image.clear();
    }
    result->overflow = overflow_next;
    overflow_next = false;
    ++decodes;
    return {};
  }
  void DisableDevice(uint32_t d) override { calls.push_back("disable " + std::to_string(d)); }
  void Deinitialize() override { calls.push_back("deinit"); }

  PmDeviceSettings settings;
  std::map<uint32_t, std::vector<uint8_t>> images;
};

class FakeSink : public PmRecordSink {
 public:
  std::vector<PmMetricSetRecord> sets;
  std::vector<PmSampleRecord> samples;
  struct Raw {
    uint32_t metric_set_id;
    std::vector<uint8_t> image;
    std::vector<uint32_t> sample_index;
    std::vector<uint64_t> start_ns, end_ns;
  };
  std::vector<Raw> raw;
  std::map<std::string, uint64_t, std::less<>> counters;
  std::vector<std::string> reports;
  uint64_t Count(const StatDef& stat) const {
    const auto it = counters.find(stat.name);
    return it == counters.end() ? 0 : it->second;
  }
  bool Write(const PmMetricSetRecord& r) override {
    sets.push_back(r);
    return true;
  }
  bool Write(const PmSampleRecord& r) override {
    samples.push_back(r);
    return true;
  }
  bool Write(const PmCounterDataRecord& r) override {
    raw.push_back({r.metric_set_id, {r.image.begin(), r.image.end()}, r.sample_index, r.start_ns,
                   r.end_ns});
    return true;
  }
  void AddToCounter(std::string_view name, uint64_t delta, Severity) override {
    counters[std::string(name)] += delta;
  }
  void Report(Severity, std::string_view message) override { reports.emplace_back(message); }
};

constexpr uint64_t kTraceNow = 5'000'000'000;

PmClockReadings Clocks() { return {kTraceNow, 1'763'000'000'000'000'000ull, 9'000'000'000'000}; }

std::vector<double> Values(double v) { return std::vector<double>(DefaultPmMetrics().size(), v); }

struct Harness {
  FakePmApi api;
  FakeSink sink;
  PmSamplingConfig config;
  std::unique_ptr<PmSamplingController> controller;
  void Make() {
    controller = std::make_unique<PmSamplingController>(api, sink, config, &Clocks,
                                                        /*worker_thread=*/false);
  }
  // Device 0 set up and sampling inside an open window.
  void Start() {
    Make();
    controller->OnDevice(0);
    controller->StartCapture();
  }
  void StartSampling(uint64_t interval_ns) {
    config.interval_ns = interval_ns;
    Start();
  }
  // Started with a decoder that decodes one sample per call and has no time for a second:
  // every poll with more queued is cut short; `limit` such polls in a row stop sampling.
  void StartOverloaded(uint32_t limit) {
    api.per_decode = 1;
    config.decode_budget_ms = 0;
    config.overloaded_polls_limit = limit;
    Start();
  }
  // `n` back-to-back samples of 100 ns from kTraceNow, queued on device 0.
  void QueueSamples(int n) {
    for (int i = 0; i < n; ++i) {
      api.queued[0].push_back({kTraceNow + i * 100u, kTraceNow + (i + 1) * 100u, Values(1)});
    }
  }
};
TEST(PmSamplingControllerTest, FullLifecycleWritesSetAndSamples) {
  Harness h;
  h.config.interval_ns = 20000;
  h.Make();
  h.controller->OnDevice(0);
  h.controller->OnDevice(0);  // a second context on the same device: nothing new
  h.controller->StartCapture();
  EXPECT_TRUE(h.controller->sampling(0));
  ASSERT_EQ(h.sink.sets.size(), 1u);
  EXPECT_EQ(h.sink.sets[0].id, 1u);
  EXPECT_EQ(h.sink.sets[0].interval_ns, 20000u);
  EXPECT_EQ(h.sink.sets[0].metric_names, DefaultPmMetrics());
  EXPECT_EQ(h.api.settings.hardware_buffer_bytes, 128u << 20);
  EXPECT_EQ(h.api.settings.max_samples_per_decode, 4096u);  // 20 us: 500 samples a poll
  EXPECT_EQ(h.api.settings.image_headroom_samples, 1000u);
  EXPECT_TRUE(h.api.settings.evaluate);
  EXPECT_FALSE(h.api.settings.keep_raw);
  EXPECT_TRUE(h.sink.sets[0].chip_name.empty());  // values evaluated here: nothing for later
  EXPECT_TRUE(h.sink.sets[0].counter_availability.empty());
  h.api.queued[0] = {{kTraceNow + 1000, kTraceNow + 21000, Values(3)},
                     {kTraceNow + 21000, kTraceNow + 41000, Values(4)}};
  h.controller->Poll();
  ASSERT_EQ(h.sink.samples.size(), 2u);
  EXPECT_EQ(h.sink.samples[1].start_ns, kTraceNow + 21000);  // same clock: unchanged
  EXPECT_EQ(h.sink.samples[1].end_ns, kTraceNow + 41000);
  EXPECT_EQ(h.sink.samples[1].metric_set_id, 1u);
  EXPECT_EQ(h.sink.samples[1].values, Values(4));
  h.api.queued[0] = {{kTraceNow + 41000, kTraceNow + 61000, Values(5)}};
  h.controller->StopCapture();  // final decode after Stop
  EXPECT_EQ(h.sink.samples.size(), 3u);
  EXPECT_FALSE(h.controller->sampling(0));
  h.controller->Shutdown();
  h.controller->Shutdown();
  EXPECT_THAT(h.api.calls, ElementsAre("init", "prepare 0", "enable 0", "start 0", "decode 0",
                                       "stop 0", "final decode 0", "disable 0", "deinit"));
  EXPECT_EQ(h.sink.Count(stats::kPmSamples), 3u);
  EXPECT_TRUE(h.sink.reports.empty());
  EXPECT_TRUE(h.sink.raw.empty());
}

TEST(PmSamplingControllerTest, OfflineEvaluationWritesImagesWithTheUsableSamples) {
  Harness h;
  h.config.evaluation = PmEvaluation::kOffline;
  h.api.per_decode = 4;  // image slots
  h.StartSampling(20000);
  EXPECT_FALSE(h.api.settings.evaluate);
  EXPECT_TRUE(h.api.settings.keep_raw);
  ASSERT_EQ(h.sink.sets.size(), 1u);
  EXPECT_EQ(h.sink.sets[0].chip_name, "GH100");
  EXPECT_EQ(h.sink.sets[0].counter_availability, std::string("\x01\x00\x02", 3));
  // An overlong first sample (left out), two regular ones: the image is not full yet.
  h.api.queued[0] = {{kTraceNow - 725'000'000, kTraceNow, {}},
                     {kTraceNow, kTraceNow + 20000, {}},
                     {kTraceNow + 20000, kTraceNow + 40000, {}}};
  h.controller->Poll();
  EXPECT_TRUE(h.sink.samples.empty());  // no values in the process
  EXPECT_TRUE(h.sink.raw.empty());      // the image is still being filled
  // One more fills it: handed over with the usable samples 1 to 3; the next one starts a
  // new image.
  h.api.queued[0] = {{kTraceNow + 40000, kTraceNow + 60000, {}},
                     {kTraceNow + 60000, kTraceNow + 80000, {}}};
  h.controller->Poll();
  ASSERT_EQ(h.sink.raw.size(), 1u);
  EXPECT_EQ(h.sink.raw[0].metric_set_id, 1u);
  EXPECT_EQ(h.sink.raw[0].image, (std::vector<uint8_t>{0, 1, 2, 3}));
  EXPECT_THAT(h.sink.raw[0].sample_index, ElementsAre(1u, 2u, 3u));
  EXPECT_THAT(h.sink.raw[0].start_ns, ElementsAre(kTraceNow, kTraceNow + 20000, kTraceNow + 40000));
  EXPECT_THAT(h.sink.raw[0].end_ns,
              ElementsAre(kTraceNow + 20000, kTraceNow + 40000, kTraceNow + 60000));
  // The last sample waits in the new image until the final decode after Stop.
  h.controller->StopCapture();
  ASSERT_EQ(h.sink.raw.size(), 2u);
  EXPECT_THAT(h.sink.raw[1].sample_index, ElementsAre(0u));
  EXPECT_THAT(h.sink.raw[1].start_ns, ElementsAre(kTraceNow + 60000));
  EXPECT_EQ(h.sink.Count(stats::kPmRawImages), 2u);
  EXPECT_EQ(h.sink.Count(stats::kPmRawImageBytes), 4u + 1u);
  EXPECT_EQ(h.sink.Count(stats::kPmSamplesTooLong), 1u);
  EXPECT_EQ(h.sink.Count(stats::kPmSamples), 5u);
  EXPECT_TRUE(h.sink.samples.empty());
}

TEST(PmSamplingControllerTest, BothEvaluationsWriteValuesAndImagesOfTheSameSamples) {
  Harness h;
  h.config.evaluation = PmEvaluation::kBoth;
  h.StartSampling(20000);
  EXPECT_TRUE(h.api.settings.evaluate);
  EXPECT_TRUE(h.api.settings.keep_raw);
  h.api.queued[0] = {{kTraceNow, kTraceNow + 20000, Values(1)},
                     {kTraceNow + 20000, kTraceNow + 40000, Values(2)}};
  h.controller->Poll();
  h.controller->StopCapture();
  ASSERT_EQ(h.sink.samples.size(), 2u);
  ASSERT_EQ(h.sink.raw.size(), 1u);
  EXPECT_THAT(h.sink.raw[0].sample_index, ElementsAre(0u, 1u));
  EXPECT_EQ(h.sink.raw[0].start_ns[1], h.sink.samples[1].start_ns);
}

TEST(PmSamplingControllerTest, AnImageOfOnlyUnusableSamplesIsNotWritten) {
  Harness h;
  h.config.evaluation = PmEvaluation::kOffline;
  h.StartSampling(20000);
  h.api.queued[0] = {{kTraceNow - 725'000'000, kTraceNow, {}}};
  h.controller->StopCapture();
  EXPECT_TRUE(h.sink.raw.empty());
  EXPECT_EQ(h.sink.Count(stats::kPmRawImages), 0u);
}

TEST(PmSamplingControllerTest, DrainsAFullCounterDataImage) {
  Harness h;
  h.api.per_decode = 2;
  h.Start();
  for (int i = 0; i < 5; ++i) {
    h.api.queued[0].push_back({kTraceNow + i * 100u, kTraceNow + (i + 1) * 100u, Values(i)});
  }
  h.controller->Poll();
  EXPECT_EQ(h.sink.samples.size(), 5u);
}

TEST(PmSamplingControllerTest, RefusesMultiPassMetricSets) {
  Harness h;
  h.api.passes = 2;
  h.Start();
  EXPECT_FALSE(h.controller->sampling(0));
  EXPECT_EQ(h.sink.Count(stats::kPmDisabledMultiplePasses), 1u);
  ASSERT_EQ(h.sink.reports.size(), 1u);
  EXPECT_THAT(h.sink.reports[0], HasSubstr("needs 2 passes on GH100"));
  EXPECT_THAT(h.sink.reports[0], HasSubstr("tracing goes on"));
  EXPECT_TRUE(h.sink.sets.empty());
  EXPECT_THAT(h.api.calls, ElementsAre("init", "prepare 0", "disable 0"));
}

TEST(PmSamplingControllerTest, PrivilegesAndBusyHardwareAreOneLineEach) {
  for (PmErrorKind kind : {PmErrorKind::kInsufficientPrivileges, PmErrorKind::kHardwareBusy,
                           PmErrorKind::kUnsupported}) {
    Harness h;
    h.api.enable_result = {kind, "cuptiPmSamplingEnable: CUPTI_ERROR_X (35)"};
    h.Make();
    h.controller->OnDevice(0);
    h.controller->OnDevice(1);
    h.controller->StartCapture();
    EXPECT_FALSE(h.controller->sampling(0));
    ASSERT_EQ(h.sink.reports.size(), 2u);  // one per device
    const StatDef& counter =
        kind == PmErrorKind::kInsufficientPrivileges ? stats::kPmDisabledPrivileges
        : kind == PmErrorKind::kHardwareBusy         ? stats::kPmDisabledHardwareBusy
                                                     : stats::kPmDisabledUnsupported;
    EXPECT_EQ(h.sink.Count(counter), 2u);
    EXPECT_THAT(h.sink.reports[0], HasSubstr("PM sampling off on device 0"));
    EXPECT_THAT(h.sink.reports[0], HasSubstr("tracing goes on"));
    if (kind == PmErrorKind::kInsufficientPrivileges) {
      EXPECT_THAT(h.sink.reports[0], HasSubstr("NVreg_RestrictProfilingToAdminUsers=0"));
    }
  }
}

TEST(PmSamplingControllerTest, InitializeFailureDisablesEverything) {
  Harness h;
  h.api.init_result = {PmErrorKind::kOther, "cuptiProfilerInitialize: CUPTI_ERROR_UNKNOWN (999)"};
  h.Start();
  h.controller->OnDevice(1);
  EXPECT_TRUE(h.controller->disabled());
  EXPECT_EQ(h.sink.reports.size(), 1u);
  h.controller->Shutdown();
  EXPECT_THAT(h.api.calls, ElementsAre("init"));
}

TEST(PmSamplingControllerTest, OverflowIsCountedAndReportedOnce) {
  Harness h;
  h.Start();
  h.api.overflow_next = true;
  h.controller->Poll();
  h.api.overflow_next = true;
  h.controller->Poll();
  EXPECT_EQ(h.sink.Count(stats::kPmOverflows), 2u);
  ASSERT_EQ(h.sink.reports.size(), 1u);
  EXPECT_THAT(h.sink.reports[0], HasSubstr("raise WARPSCOPE_PM_BUFFER"));
}

TEST(PmSamplingControllerTest, InvalidSamplesAreCountedNotWritten) {
  Harness h;
  h.Start();
  h.api.queued[0] = {{kTraceNow + 10, kTraceNow + 10, Values(1)},
                     {kTraceNow + 10, kTraceNow + 20, std::vector<double>{1, 2}}};
  h.controller->Poll();
  EXPECT_TRUE(h.sink.samples.empty());
  EXPECT_EQ(h.sink.Count(stats::kPmSamplesInvalid), 2u);
}

TEST(PmSamplingControllerTest, SamplesMuchLongerThanTheIntervalAreDiscarded) {
  Harness h;
  h.StartSampling(20000);
  // The first sample after start spans the time before the counters ran (seen on the H200:
  // 725 ms of zeros); a regular one follows.
  h.api.queued[0] = {{kTraceNow - 725'000'000, kTraceNow, Values(0)},
                     {kTraceNow, kTraceNow + 20000, Values(7)}};
  h.controller->Poll();
  ASSERT_EQ(h.sink.samples.size(), 1u);
  EXPECT_EQ(h.sink.samples[0].values, Values(7));
  EXPECT_EQ(h.sink.Count(stats::kPmSamplesTooLong), 1u);
}

TEST(PmSamplingControllerTest, GapsBetweenSamplesAreCountedAsLostTime) {
  Harness h;
  h.StartSampling(10000);
  // Two contiguous samples, then 66.8 ms missing (seen on the H200 at 10 us: the decoder
  // fell behind a 64 MiB buffer), then contiguous again; a 3 us jitter is no gap.
  const uint64_t t = kTraceNow;
  h.api.queued[0] = {{t, t + 10000, Values(1)},
                     {t + 10000, t + 20000, Values(1)},
                     {t + 66'820'000, t + 66'830'000, Values(1)},
                     {t + 66'833'000, t + 66'843'000, Values(1)}};
  h.controller->Poll();
  EXPECT_EQ(h.sink.samples.size(), 4u);
  EXPECT_EQ(h.sink.Count(stats::kPmGaps), 1u);
  EXPECT_EQ(h.sink.Count(stats::kPmGapNs), 66'800'000u);
  ASSERT_EQ(h.sink.reports.size(), 1u);
  EXPECT_THAT(h.sink.reports[0], HasSubstr("fell behind on device 0: 66800 us"));
  EXPECT_THAT(h.sink.reports[0], HasSubstr("WARPSCOPE_PM_INTERVAL"));
  // A new capture window starts afresh: the time between windows is not a gap.
  h.controller->StopCapture();
  h.controller->StartCapture();
  h.api.queued[0] = {{t + 900'000'000, t + 900'010'000, Values(1)}};
  h.controller->Poll();
  EXPECT_EQ(h.sink.Count(stats::kPmGaps), 1u);
  EXPECT_EQ(h.sink.reports.size(), 1u);  // reported once per device
}

TEST(PmSamplingControllerTest, AFullHardwareBufferIsDrainedAndSamplingRestarted) {
  Harness h;
  h.StartSampling(20000);
  const uint64_t t = kTraceNow;
  h.api.queued[0] = {{t, t + 20000, Values(1)}, {t + 20000, t + 40000, Values(1)}};
  h.api.overflow_next = true;
  h.api.calls.clear();
  h.controller->Poll();
  EXPECT_THAT(h.api.calls, ElementsAre("decode 0", "stop 0", "start 0"));
  EXPECT_EQ(h.sink.Count(stats::kPmOverflows), 1u);
  EXPECT_EQ(h.sink.Count(stats::kPmRestarts), 1u);
  EXPECT_TRUE(h.controller->sampling(0));
  // After the restart: the first sample spans the pause (discarded as overlong), then regular
  // ones. The time from the last sample before the overflow to the first regular one is lost.
  h.api.queued[0] = {{t + 10'000'000, t + 30'000'000, Values(0)},
                     {t + 30'000'000, t + 30'020'000, Values(2)}};
  h.controller->Poll();
  EXPECT_EQ(h.sink.samples.size(), 3u);
  EXPECT_EQ(h.sink.Count(stats::kPmSamplesTooLong), 1u);
  EXPECT_EQ(h.sink.Count(stats::kPmGaps), 1u);
  EXPECT_EQ(h.sink.Count(stats::kPmGapNs), 30'000'000u - 40'000u);
}

TEST(PmSamplingControllerTest, NoRestartWhenTheFinalDrainAfterStopOverflows) {
  for (const bool device_gone : {false, true}) {
    Harness h;
    h.StartSampling(20000);
    h.api.queued[0] = {{kTraceNow, kTraceNow + 20000, Values(1)}};
    h.api.overflow_next = true;
    h.api.calls.clear();
    if (device_gone) {
      h.controller->OnDeviceGone(0);
      EXPECT_THAT(h.api.calls, ElementsAre("stop 0", "final decode 0", "disable 0"));
    } else {
      h.controller->StopCapture();
      EXPECT_THAT(h.api.calls, ElementsAre("stop 0", "final decode 0"));
      EXPECT_FALSE(h.controller->sampling(0));
    }
    EXPECT_EQ(h.sink.Count(stats::kPmOverflows), 1u);
    EXPECT_EQ(h.sink.Count(stats::kPmRestarts), 0u);
  }
}

TEST(PmSamplingControllerTest, AnOverlongSampleEndingBeforeThePreviousOneIsNoGap) {
  Harness h;
  h.StartSampling(20000);
  const uint64_t t = kTraceNow;
  h.api.queued[0] = {{t, t + 200000, Values(1)},  // overlong first sample: discarded
                     {t + 200000, t + 220000, Values(1)},
                     {t - 500000, t + 100000, Values(1)}};  // overlong, ends before the last
  h.controller->Poll();
  EXPECT_EQ(h.sink.Count(stats::kPmGapNs), 0u);
  EXPECT_EQ(h.sink.Count(stats::kPmGaps), 0u);
  EXPECT_EQ(h.sink.Count(stats::kPmSamplesTooLong), 2u);
}

TEST(PmSamplingControllerTest, DeviceGoneStopsDrainsAndDisablesWhileTheContextExists) {
  Harness h;
  h.Start();
  ASSERT_TRUE(h.controller->sampling(0));
  h.api.queued[0] = {{kTraceNow, kTraceNow + 100, Values(2)}};
  h.controller->OnDeviceGone(0);
  EXPECT_FALSE(h.controller->sampling(0));
  EXPECT_EQ(h.sink.samples.size(), 1u);  // drained before the disable
  h.controller->Shutdown();              // nothing left to stop or disable for device 0
  EXPECT_THAT(h.api.calls, ElementsAre("init", "prepare 0", "enable 0", "start 0", "stop 0",
                                       "final decode 0", "disable 0", "deinit"));
}

TEST(PmSamplingControllerTest, RealtimeTimestampsAreMappedOntoTheTraceClock) {
  Harness h;
  h.Start();
  const uint64_t realtime = Clocks().realtime_ns;
  h.api.queued[0] = {{realtime - 30000, realtime - 10000, Values(1)}};
  h.controller->Poll();
  ASSERT_EQ(h.sink.samples.size(), 1u);
  EXPECT_EQ(h.sink.samples[0].start_ns, kTraceNow - 30000);
  EXPECT_EQ(h.sink.samples[0].end_ns, kTraceNow - 10000);
  EXPECT_EQ(h.sink.Count(stats::kPmClockRemapped), 1u);
  EXPECT_THAT(h.sink.reports[0], HasSubstr("CLOCK_REALTIME"));
}

TEST(PmSamplingControllerTest, CaptureWindowsRestartSampling) {
  Harness h;
  h.Make();
  h.controller->StartCapture();  // window open before any context
  h.controller->OnDevice(0);     // set up and started inside the context-created callback
  EXPECT_TRUE(h.controller->sampling(0));
  h.controller->Poll();
  h.controller->StopCapture();
  EXPECT_FALSE(h.controller->sampling(0));
  h.controller->StartCapture();
  EXPECT_TRUE(h.controller->sampling(0));
  h.controller->Shutdown();
  EXPECT_THAT(h.api.calls,
              ElementsAre("init", "prepare 0", "enable 0", "start 0", "decode 0", "stop 0",
                          "final decode 0", "start 0", "stop 0", "final decode 0", "disable 0", "deinit"));
}

// A decoder that cannot drain within its time budget (here: a budget of 0 ms, one decode
// call per poll) keeps the program's threads waiting on it: after overloaded_polls_limit polls
// in a row it stops sampling that device for good, with one line and a counter.
TEST(PmSamplingControllerTest, AnOverloadedDecoderStopsSamplingInsteadOfFallingBehind) {
  Harness h;
  h.StartOverloaded(3);
  h.QueueSamples(100);
  h.controller->Poll();
  h.controller->Poll();
  EXPECT_TRUE(h.controller->sampling(0));  // two polls behind: still sampling
  EXPECT_EQ(h.sink.Count(stats::kPmDecodesCutShort), 2u);
  h.controller->Poll();
  EXPECT_FALSE(h.controller->sampling(0));
  EXPECT_EQ(h.sink.Count(stats::kPmDisabledDecoderOverloaded), 1u);
  ASSERT_EQ(h.sink.reports.size(), 1u);
  EXPECT_THAT(h.sink.reports[0], HasSubstr("decoding cannot keep up with one sample every 200 us"));
  EXPECT_THAT(h.sink.reports[0], HasSubstr("tracing goes on"));
  h.controller->StopCapture();
  h.controller->StartCapture();  // a new window does not restart it
  EXPECT_FALSE(h.controller->sampling(0));
  EXPECT_EQ(h.sink.samples.size(), 3u);  // one decode call per poll
}

TEST(PmSamplingControllerTest, APollThatDrainsInTimeResetsTheOverloadCount) {
  Harness h;
  h.StartOverloaded(2);
  h.api.queued[0] = {{kTraceNow, kTraceNow + 100, Values(1)},
                     {kTraceNow + 100, kTraceNow + 200, Values(1)}};
  h.controller->Poll();  // cut short once
  h.controller->Poll();  // drained: the count starts again
  h.api.queued[0] = {{kTraceNow + 200, kTraceNow + 300, Values(1)},
                     {kTraceNow + 300, kTraceNow + 400, Values(1)}};
  h.controller->Poll();  // cut short once more
  EXPECT_TRUE(h.controller->sampling(0));
  EXPECT_EQ(h.sink.Count(stats::kPmDisabledDecoderOverloaded), 0u);
}

TEST(PmSamplingControllerTest, TheLastDrainIsBoundedAndSaysWhatItDropped) {
  Harness h;
  h.api.per_decode = 1;
  h.config.final_decode_budget_ms = 0;
  h.Start();
  h.QueueSamples(10);
  h.controller->StopCapture();
  EXPECT_EQ(h.sink.samples.size(), 1u);
  ASSERT_EQ(h.sink.reports.size(), 1u);
  EXPECT_THAT(h.sink.reports[0], HasSubstr("stopped after 0 ms"));
  EXPECT_EQ(h.sink.Count(stats::kPmDecodesCutShort), 1u);
}

TEST(PmSamplingControllerTest, DeviceIsSamplingWhenTheContextCallbackReturns) {
  // The first kernel of a context can only be launched after the context-created callback
  // returns: sampling must already run then, with the setup time counted.
  Harness h;
  h.Make();
  h.controller->StartCapture();
  h.controller->OnDevice(0);
  EXPECT_TRUE(h.controller->sampling(0));
  EXPECT_THAT(h.api.calls, ElementsAre("init", "prepare 0", "enable 0", "start 0"));
  EXPECT_EQ(h.sink.counters.count(stats::kPmSetupUs.name), 1u);
  EXPECT_EQ(h.sink.counters.count(stats::kPmSetupPrepareUs.name), 1u);
  EXPECT_EQ(h.sink.counters.count(stats::kPmSetupEnableUs.name), 1u);
}

TEST(PmSamplingControllerTest, WorkerThreadDecodes) {
  FakePmApi api;
  FakeSink sink;
  PmSamplingConfig config;
  config.poll_interval_ms = 1;
  api.queued[0] = {{kTraceNow, kTraceNow + 100, Values(1)}};
  {
    PmSamplingController controller(api, sink, config, &Clocks);
    controller.StartCapture();
    controller.OnDevice(0);  // starts the worker
    for (int i = 0; i < 5000 && api.decodes.load() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_GT(api.decodes.load(), 0);  // decoded by the worker, before any Stop
  }  // destructor: Shutdown joins the worker and drains
  EXPECT_EQ(sink.samples.size(), 1u);
}

}  // namespace
}  // namespace warpscope
