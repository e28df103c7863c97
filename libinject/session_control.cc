// The session's side of the control channel (libinject/control_channel.h serves the socket on
// the watcher thread): its status, and the start, stop and dump that `warpscope start|stop|dump`
// ask for.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "libinject/session_internal.h"
#include "proto/settings/job_variables.h"

namespace warpscope::session_internal {

void Session::StartControl() {
  if (!config_.control) return;
  std::string error;
  if (!control_.Listen(pid_, &error)) Report(Severity::kInfo, "session", error);
}

ControlStatus Session::Status() {
  ControlStatus s;
  s.pid = pid_;
  auto first_number = [](const auto& variables) -> std::optional<int64_t> {
    for (std::string_view v : variables) {
      const char* value = std::getenv(std::string(v).c_str());
      if (value == nullptr || value[0] == '\0') continue;
      char* end = nullptr;
      const long long n = std::strtoll(value, &end, 10);
      if (end != value && *end == '\0') return n;
      return std::nullopt;
    }
    return std::nullopt;
  };
  s.rank = first_number(kRankVariables);
  s.local_rank = first_number(kLocalRankVariables);
  s.world_size = first_number(kWorldSizeVariables);
  s.host = header_.hostname;
  s.job_id = header_.job_id;
  {
    std::lock_guard<std::mutex> lock(window_mu_);
    s.trace_path = trace_path_;
    s.window_open = window_->is_open();
    s.windows = window_->windows_opened();
  }
  s.mode = flight_ ? "flight-recorder" : std::string(CaptureRangeName(config_.capture_range));
  s.flight_recorder = flight_;
  return s;
}

ControlReply Session::HandleControl(ControlCommand command) {
  const uint64_t now = TraceClockNs();
  switch (command) {
    case ControlCommand::kStatus:
      return {ControlResult::kOk, FormatControlStatus(Status())};
    case ControlCommand::kDump: {
      if (!flight_) {
        return {ControlResult::kError,
                "no flight recorder in this process (record with --flight-recorder SECONDS)"};
      }
      std::string result;
      const bool ok = Dump(CaptureTrigger::kControl, /*flush_cupti=*/true, &result);
      return {ok ? ControlResult::kOk : ControlResult::kError, result};
    }
    case ControlCommand::kStart:
    case ControlCommand::kStop: {
      if (flight_) {
        return {ControlResult::kError,
                "the flight recorder records all the time; ask it for a dump (warpscope dump)"};
      }
      const bool start = command == ControlCommand::kStart;
      // With a file per window, the records of the window that closed last go to its own
      // file before the next one begins (at least those CUPTI has completed).
      if (start && window_files_) collectors_.OnFlush();
      std::lock_guard<std::mutex> lock(window_mu_);
      CaptureWindow::Edge edge = window_->Control(start, now);
      if (start && edge && !edge->begin) {
        ApplyEdge(edge);  // a duration or limit that ran out closed the window first
        edge = window_->Control(start, now);
      }
      if (!edge || edge->begin != start) {
        ApplyEdge(edge);
        if (start) {
          return {ControlResult::kError,
                  window_->is_open()
                      ? "capture window " + std::to_string(window_->windows_opened()) +
                            " is open already"
                      : "no capture window can open any more (" +
                            std::string(window_->limited() ? "--max-duration reached"
                                                           : "--capture-range-end allows " +
                                                                 std::to_string(window_->windows_opened())) +
                            ")"};
        }
        return {ControlResult::kError, "no capture window is open"};
      }
      ApplyEdge(edge);
      char attach[64] = "";
      if (start) std::snprintf(attach, sizeof attach, "; recording began after %.1f ms",
                               static_cast<double>(last_attach_ns_) / 1e6);
      return {ControlResult::kOk, "capture window " + std::to_string(edge->window_id) +
                                      (start ? " opened" : " closed") + " (" + trace_path_ + ")" +
                                      attach};
    }
  }
  return {ControlResult::kError, "unknown command"};
}

}  // namespace warpscope::session_internal
