// Session listener for PC sampling: configuration, context and module events, capture window
// edges, writer output.
#include "collectors/pc_sampling/pc_sampling_collector.h"

#include <cstdio>
#include <string>

#include "collectors/pc_sampling/pc_sampling_call_logger.h"
#include "proto/settings/setting_values.h"
#include "proto/settings/settings.h"
#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {

PcSamplingCollector::~PcSamplingCollector() { OnShutdown(); }

bool PcSamplingCollector::OnSessionStart(SessionServices& services) {
  services_ = &services;
  // Seen on the H200 (CUDA 13.0, driver 580): with PM sampling running, cuptiPCSamplingStart
  // fails with CUPTI_ERROR_HARDWARE_BUSY and the process later crashed. Asked for both, PM
  // sampling is kept: it is the one verified on that GPU, and a whole-run occupancy curve is
  // what a long job is traced for; PC sampling is a targeted second run.
  if (PmSamplingRequested(services)) {
    AddToStat(services.writer(), stats::kPcDisabledPmSamplingChosen, 1);
    Report(Severity::kError,
           "warpscope: PC sampling and PM sampling were both requested and cannot share the GPU "
           "(cuptiPCSamplingStart reports it busy); keeping PM sampling, PC sampling is off: "
           "record PC sampling in a separate run");
    return false;
  }
  PcSamplingConfig config;
  std::string error;
  if (!LoadPcSamplingConfig([&services](std::string_view name) { return services.GetConfig(name); },
                            &config, &error)) {
    Report(Severity::kError, error);
    return false;
  }
  api_ = factory_();
  if (api_ == nullptr) return false;
  if (config.debug) {
    api_ = std::make_unique<PcSamplingCallLogger>(std::move(api_), [this](std::string_view line) {
      DebugLine(line);
    });
    DebugLine("debug log on (WARPSCOPE_PC_DEBUG=1): period=" +
              (config.period_exponent == 0 ? std::string("CUPTI default")
                                           : "2^" + std::to_string(config.period_exponent)) +
              " hardware_buffer=" + std::to_string(PcHardwareBufferBytes(config)) +
              " drain every " + std::to_string(config.drain_interval_ms) + " ms");
  }
  PcRecordSink& sink = *this;
  controller_ = std::make_unique<PcSamplingController>(*api_, sink, config);
  return true;
}

void PcSamplingCollector::OnContextCreated(void* cu_context, uint32_t context_id,
                                           uint32_t device_id) {
  if (controller_) controller_->OnContextCreated(cu_context, context_id, device_id);
}

void PcSamplingCollector::OnContextDestroying(void* cu_context, uint32_t /*context_id*/) {
  if (controller_) controller_->OnContextDestroying(cu_context);
}

void PcSamplingCollector::OnModuleLoaded(void* cu_context, uint64_t /*module_id*/,
                                         const void* cubin, size_t cubin_size) {
  if (controller_) controller_->OnModuleLoaded(cu_context, cubin, cubin_size);
}

void PcSamplingCollector::OnCaptureStart(uint32_t /*window_id*/, uint64_t /*timestamp_ns*/) {
  if (controller_) controller_->StartCapture();
}

void PcSamplingCollector::OnCaptureStop(uint32_t /*window_id*/, uint64_t /*timestamp_ns*/) {
  if (controller_) controller_->StopCapture();
}

void PcSamplingCollector::OnShutdown() {
  // The controller and the API object stay alive: a CUPTI callback on another thread may
  // still be inside this collector, and the controller ignores calls once shut down.
  if (controller_) controller_->Shutdown();
}

bool PcSamplingCollector::Write(const PcStallReasonsRecord& record) {
  return services_->writer().Write(record);
}

bool PcSamplingCollector::Write(const PcSampleBatchRecord& record) {
  return services_->writer().Write(record);
}

bool PcSamplingCollector::Write(const CubinImageRecord& record) {
  return services_->writer().Write(record);
}

uint64_t PcSamplingCollector::InternString(std::string_view value) {
  return services_->writer().InternString(value);
}

void PcSamplingCollector::AddToCounter(std::string_view name, uint64_t delta, Severity severity) {
  services_->writer().AddToCounter(name, delta, severity);
}

void PcSamplingCollector::Report(Severity severity, std::string_view message) {
  // SessionServices::Report logs the message as given; every stderr line starts with
  // "warpscope: " (the controller's messages come without it).
  constexpr std::string_view kPrefix = "warpscope: ";
  std::string line(message);
  if (line.compare(0, kPrefix.size(), kPrefix) != 0) line.insert(0, kPrefix);
  if (services_ != nullptr) services_->Report(severity, "pc_sampling", line);
}

uint64_t PcSamplingCollector::NowNs() { return services_->NowNs(); }

void PcSamplingCollector::DebugLine(std::string_view line) {
  // Straight to stderr, whatever WARPSCOPE_LOG_LEVEL says: the variable asked for it.
  const double ms = services_ != nullptr ? services_->NowNs() / 1e6 : 0.0;
  std::fprintf(stderr, "warpscope: pc-debug [%.3f ms] %.*s\n", ms, static_cast<int>(line.size()),
               line.data());
}

bool PmSamplingRequested(const SessionServices& services) {
  bool on = false;  // read as the session reads it when it starts the PM collector
  return ParseBoolSetting(services.GetConfig(Setting(SettingId::kPmSampling).variable), &on) && on;
}

}  // namespace warpscope
