// The session's capture windows: every edge of the window goes through ApplyEdge (collectors
// told, edge records written, limits reported), the edges that the profiler API and the NVTX
// capture range ask for, the --max-size check, and the next file of a window with %w.
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

#include "libinject/session_internal.h"
#include "libinject/trace_name.h"
#include "proto/writer/stats_table.h"

namespace warpscope::session_internal {
namespace {

// Each thread's NVTX push depth in the capture range's domain, counted without a lock: only
// the push of the capture range's name, and the pop that may end the window's range, take
// the window's lock (NvtxRangeMatch).
thread_local uint32_t t_capture_depth = 0;

}  // namespace

void Session::ApplyEdge(CaptureWindow::Edge edge) {
  // Every change of the window goes through here (under window_mu_): publish whether NVTX
  // events can still matter, so the NVTX callbacks skip the lock once they cannot.
  nvtx_live_.store(window_ != nullptr && window_->wants_nvtx(), std::memory_order_relaxed);
  if (window_ != nullptr) {
    nvtx_window_thread_.store(window_->nvtx_window_thread(), std::memory_order_relaxed);
    nvtx_window_depth_.store(window_->nvtx_window_depth(), std::memory_order_relaxed);
    nvtx_window_open_.store(window_->nvtx_window_open(), std::memory_order_release);
  }
  if (!edge) return;
  // A flight-recorder dump has window edges of its own (the events it holds); the whole-run
  // window's would only confuse them.
  const bool write_edge = !flight_;
  if (edge->begin) {
    if (window_files_ && edge->window_id > 1) StartWindowFile(edge->window_id);
    window_bytes_base_ = writer_->Counter("writer.bytes_written");
    const uint64_t attach_start = TraceClockNs();
    collectors_.OnCaptureOpening(*edge, window_->nvtx_window_thread(), window_->nvtx_window_depth());
    // Recording begins once the activity kinds are on, which can take CUPTI seconds the first
    // time in a process that loaded many modules: the edge says when it did.
    const uint64_t attached = TraceClockNs();
    last_attach_ns_ = attached - attach_start;
    edge->timestamp_ns = std::max(edge->timestamp_ns, attached);
    if (write_edge) writer_->Write(*edge);
    collectors_.OnCaptureStart(edge->window_id, edge->timestamp_ns);
    Log(LogLevel::kInfo, "warpscope: capture window " + std::to_string(edge->window_id) + " opened");
  } else {
    collectors_.OnCaptureClosing(*edge);
    if (write_edge) writer_->Write(*edge);
    // With a file per window, the window's records still in CUPTI's buffers should reach its
    // file before the next window begins another: the watcher flushes them now (this may run
    // in a CUPTI callback, where flushing is not allowed).
    if (window_files_) SignalToPipe(kWakeFlush);
    if (edge->trigger == CaptureTrigger::kLimit) {
      Report(Severity::kInfo, "session",
             window_->limited() ? "warpscope: --max-duration reached: capture window " +
                                      std::to_string(edge->window_id) +
                                      " closed and no other opens"
                                : "warpscope: --max-size reached: capture window " +
                                      std::to_string(edge->window_id) + " closed");
      writer_->SetCounter(stats::kCaptureLimitedWindows.name, ++limited_windows_,
                          stats::kCaptureLimitedWindows.severity);
    }
    collectors_.OnCaptureStop(edge->window_id, edge->timestamp_ns);
    Log(LogLevel::kInfo, "warpscope: capture window " + std::to_string(edge->window_id) + " closed");
  }
}

void Session::StartWindowFile(uint32_t window) {
  std::string path, error;
  if (!ProcessTraceName(config_, header_, [](const char* n) { return std::getenv(n); }, window,
                        &path, &error) ||
      !writer_->StartNextFile(path, TraceClockNs(), &error)) {
    Report(Severity::kError, "session",
           error + "; capture window " + std::to_string(window) + " goes on in " + trace_path_);
    return;
  }
  trace_path_ = path;
  Log(LogLevel::kInfo, "warpscope: capture window " + std::to_string(window) + " goes to " + path);
}

void Session::CheckWindowSize(uint64_t now) {
  if (config_.max_size_bytes == 0) return;
  std::lock_guard<std::mutex> lock(window_mu_);
  if (!window_->is_open()) return;
  const uint64_t written = writer_->Counter("writer.bytes_written");
  // With a file per window the counter starts again at 0 once the writer thread has switched
  // to the window's file (after ApplyEdge read the base): from then on it counts the window.
  if (written < window_bytes_base_) window_bytes_base_ = 0;
  const uint64_t bytes = written - window_bytes_base_;
  if (bytes >= config_.max_size_bytes) ApplyEdge(window_->SizeLimit(now));
}

void Session::OnProfilerApi(bool start) {
  if (forked_child_.load() || shut_down_.load()) return;
  std::lock_guard<std::mutex> lock(window_mu_);
  if (window_ == nullptr) return;  // CUPTI is subscribed before the window exists
  uint64_t now = TraceClockNs();
  ApplyEdge(start ? window_->ProfilerStart(now) : window_->ProfilerStop(now));
}

void Session::OnNvtxPush(uint32_t os_tid, std::string_view name, std::string_view domain) {
  if (!step_match_.empty()) OnStepPush(name, domain);
  if (!nvtx_live_.load(std::memory_order_relaxed)) return;
  const std::optional<uint32_t> depth = capture_match_.Push(t_capture_depth, name, domain);
  if (!depth || forked_child_.load() || shut_down_.load()) return;
  std::lock_guard<std::mutex> lock(window_mu_);
  if (!window_->wants_nvtx()) return;
  ApplyEdge(window_->NvtxPush(os_tid, *depth, TraceClockNs()));
}

void Session::OnNvtxPop(uint32_t os_tid, std::string_view domain) {
  if (!step_match_.empty()) OnStepPop(domain);
  if (!nvtx_live_.load(std::memory_order_relaxed)) return;
  const std::optional<uint32_t> depth = capture_match_.Pop(t_capture_depth, domain);
  // Only the pop of the range that opened the window, on its thread and at its depth, can
  // close it; the pushing thread published both before its push returned.
  if (!depth || !nvtx_window_open_.load(std::memory_order_acquire) ||
      nvtx_window_thread_.load(std::memory_order_relaxed) != os_tid ||
      nvtx_window_depth_.load(std::memory_order_relaxed) != *depth) {
    return;
  }
  if (forked_child_.load() || shut_down_.load()) return;
  std::lock_guard<std::mutex> lock(window_mu_);
  ApplyEdge(window_->NvtxPop(os_tid, *depth, TraceClockNs()));
}

}  // namespace warpscope::session_internal
