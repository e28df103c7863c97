// PcSamplingCollector: the session listener that runs PC sampling (warp stall reasons per PC)
// with the capture window. It reads WARPSCOPE_PC_* settings, owns the controller and writes
// through the session's TraceWriter. CUPTI-free: the PcSamplingApi comes from a factory.
#ifndef WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_COLLECTOR_H_
#define WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_COLLECTOR_H_

#include <memory>
#include <string_view>

#include "collectors/pc_sampling/pc_sampling_api.h"
#include "collectors/pc_sampling/pc_sampling_controller.h"
#include "collectors/collector_interface.h"

namespace warpscope {

class PcSamplingCollector final : public SessionListener, private PcRecordSink {
 public:
  using ApiFactory = std::unique_ptr<PcSamplingApi> (*)();
  explicit PcSamplingCollector(ApiFactory factory) : factory_(factory) {}
  ~PcSamplingCollector() override;

  std::string_view name() const override { return "pc_sampling"; }
  bool OnSessionStart(SessionServices& services) override;
  void OnContextCreated(void* cu_context, uint32_t context_id, uint32_t device_id) override;
  void OnContextDestroying(void* cu_context, uint32_t context_id) override;
  void OnModuleLoaded(void* cu_context, uint64_t module_id, const void* cubin,
                      size_t cubin_size) override;
  void OnCaptureStart(uint32_t window_id, uint64_t timestamp_ns) override;
  void OnCaptureStop(uint32_t window_id, uint64_t timestamp_ns) override;
  void OnShutdown() override;

 private:
  bool Write(const PcStallReasonsRecord& record) override;
  bool Write(const PcSampleBatchRecord& record) override;
  bool Write(const CubinImageRecord& record) override;
  uint64_t InternString(std::string_view value) override;
  void AddToCounter(std::string_view name, uint64_t delta, Severity severity) override;
  void Report(Severity severity, std::string_view message) override;
  uint64_t NowNs() override;
  void DebugLine(std::string_view line);  // WARPSCOPE_PC_DEBUG=1

  ApiFactory factory_;
  SessionServices* services_ = nullptr;
  std::unique_ptr<PcSamplingApi> api_;
  std::unique_ptr<PcSamplingController> controller_;
};

// WARPSCOPE_PM_SAMPLING asks for PM sampling (the PC collector then stays off).
bool PmSamplingRequested(const SessionServices& services);

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PC_SAMPLING_PC_SAMPLING_COLLECTOR_H_
