// PmSamplingCollector: the session listener that runs PM sampling with the capture window.
// It reads WARPSCOPE_PM_* settings, owns the controller and writes through the session's
// TraceWriter. CUPTI-free: the PmSamplingApi comes from a factory (CuptiPmSampling in
// libwarpscope).
#ifndef WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_COLLECTOR_H_
#define WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_COLLECTOR_H_

#include <map>
#include <memory>
#include <mutex>
#include <string_view>

#include "collectors/pm_sampling/pm_sampling_api.h"
#include "collectors/pm_sampling/pm_sampling_controller.h"
#include "collectors/collector_interface.h"

namespace warpscope {

class PmSamplingCollector final : public SessionListener, private PmRecordSink {
 public:
  using ApiFactory = std::unique_ptr<PmSamplingApi> (*)();
  explicit PmSamplingCollector(ApiFactory factory) : factory_(factory) {}
  ~PmSamplingCollector() override;

  std::string_view name() const override { return "pm_sampling"; }
  bool OnSessionStart(SessionServices& services) override;
  void OnContextCreated(void* cu_context, uint32_t context_id, uint32_t device_id) override;
  void OnContextDestroying(void* cu_context, uint32_t context_id) override;
  void OnCaptureStart(uint32_t window_id, uint64_t timestamp_ns) override;
  void OnCaptureStop(uint32_t window_id, uint64_t timestamp_ns) override;
  void OnShutdown() override;

 private:
  bool Write(const PmMetricSetRecord& record) override;
  bool Write(const PmSampleRecord& record) override;
  bool Write(const PmCounterDataRecord& record) override;
  void AddToCounter(std::string_view name, uint64_t delta, Severity severity) override;
  void Report(Severity severity, std::string_view message) override;

  ApiFactory factory_;
  SessionServices* services_ = nullptr;
  std::unique_ptr<PmSamplingApi> api_;
  std::unique_ptr<PmSamplingController> controller_;
  std::mutex contexts_mu_;
  std::map<uint32_t, uint32_t> context_device_;  // live context id -> device
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PM_SAMPLING_PM_SAMPLING_COLLECTOR_H_
