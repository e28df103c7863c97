// Session listener for PM sampling: configuration, capture window edges, writer output.
#include "collectors/pm_sampling/pm_sampling_collector.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>

#include <string>
#include <utility>
#include <vector>

#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {
namespace {

std::vector<std::string> LoadedLibraries() {
  std::vector<std::string> out;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
          static_cast<std::vector<std::string>*>(data)->emplace_back(info->dlpi_name);
        }
        return 0;
      },
      &out);
  return out;
}

std::string Canonical(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  if (real == nullptr) return path;
  std::string out = real;
  free(real);
  return out;
}

// Loads the libnvperf_host.so that belongs to the libcupti in use before CUPTI looks for one
// (see PlanPerfHostLibrary). Returns "" or the line that explains why PM sampling is off,
// with the counter that records it.
std::pair<std::string, const StatDef*> LoadMatchingPerfHostLibrary() {
  std::vector<std::string> loaded = LoadedLibraries();
  for (std::string& path : loaded) path = Canonical(path);
  const PerfHostPlan plan = PlanPerfHostLibrary(
      loaded, [](const std::string& path) { return access(path.c_str(), R_OK) == 0; },
      &Canonical);
  if (!plan.error.empty()) return {plan.error, &stats::kPmDisabledLibraryMismatch};
  if (plan.load.empty()) return {"", nullptr};
  if (dlopen(plan.load.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
    const char* why = dlerror();
    return {"warpscope: PM sampling off: cannot load " + plan.load + " (" +
                (why != nullptr ? why : "dlopen failed") +
                "), and another copy may not match libcupti; tracing goes on",
            &stats::kPmDisabledError};
  }
  return {"", nullptr};
}

}  // namespace

PmSamplingCollector::~PmSamplingCollector() { OnShutdown(); }

bool PmSamplingCollector::OnSessionStart(SessionServices& services) {
  services_ = &services;
  PmSamplingConfig config;
  std::string error;
  if (!LoadPmSamplingConfig([&services](std::string_view name) { return services.GetConfig(name); },
                            &config, &error)) {
    Report(Severity::kError, error);
    return false;
  }
  if (auto [error, counter] = LoadMatchingPerfHostLibrary(); !error.empty()) {
    services.writer().AddToCounter(counter->name, 1, counter->severity);
    Report(Severity::kError, error);
    return false;
  }
  api_ = factory_();
  if (api_ == nullptr) return false;
  PmRecordSink& sink = *this;
  controller_ = std::make_unique<PmSamplingController>(
      *api_, sink, std::move(config), [this] { return ReadSystemClocks(services_->NowNs()); });
  return true;
}

void PmSamplingCollector::OnContextCreated(void* /*cu_context*/, uint32_t context_id,
                                           uint32_t device_id) {
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    context_device_[context_id] = device_id;
  }
  if (controller_) controller_->OnDevice(device_id);
}

void PmSamplingCollector::OnContextDestroying(void* /*cu_context*/, uint32_t context_id) {
  uint32_t device = 0;
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    auto it = context_device_.find(context_id);
    if (it == context_device_.end()) return;
    device = it->second;
    context_device_.erase(it);
    for (const auto& [ctx, dev] : context_device_) {
      if (dev == device) return;  // another context still uses the device
    }
  }
  if (controller_) controller_->OnDeviceGone(device);
}

void PmSamplingCollector::OnCaptureStart(uint32_t /*window_id*/, uint64_t /*timestamp_ns*/) {
  if (controller_) controller_->StartCapture();
}

void PmSamplingCollector::OnCaptureStop(uint32_t /*window_id*/, uint64_t /*timestamp_ns*/) {
  if (controller_) controller_->StopCapture();
}

void PmSamplingCollector::OnShutdown() {
  // The controller and the API object stay alive: a CUPTI callback on another thread may
  // still be inside this collector, and the controller ignores calls once shut down.
  if (controller_) controller_->Shutdown();
}

bool PmSamplingCollector::Write(const PmMetricSetRecord& record) {
  return services_->writer().Write(record);
}

bool PmSamplingCollector::Write(const PmSampleRecord& record) {
  return services_->writer().Write(record);
}

bool PmSamplingCollector::Write(const PmCounterDataRecord& record) {
  return services_->writer().Write(record);
}

void PmSamplingCollector::AddToCounter(std::string_view name, uint64_t delta, Severity severity) {
  services_->writer().AddToCounter(name, delta, severity);
}

void PmSamplingCollector::Report(Severity severity, std::string_view message) {
  // SessionServices::Report logs the message as given: every stderr line starts with
  // "warpscope: " (the controller's messages come without it).
  constexpr std::string_view kPrefix = "warpscope: ";
  std::string line(message);
  if (line.compare(0, kPrefix.size(), kPrefix) != 0) line.insert(0, kPrefix);
  if (services_ != nullptr) services_->Report(severity, "pm_sampling", line);
}

}  // namespace warpscope
