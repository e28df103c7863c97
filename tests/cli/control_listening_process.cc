// A process that listens for control commands as an injected one does (libinject's
// ControlChannel), for the CLI tests of `warpscope start|stop|dump|status` without a GPU. Its
// rank and job id come from its environment (the variables of job_variables.h); its capture
// state is a fake: `start` opens window N+1 (an error while one is open), `stop` closes it (an
// error when none is), `dump` works when WARPSCOPE_TEST_FLIGHT=1. It prints "listening" once
// it listens and runs until killed, its parent is gone, or 120 s have passed.
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libinject/control_channel.h"
#include "proto/control/control_protocol.h"
#include "proto/settings/job_variables.h"

namespace warpscope {
namespace {

std::optional<int64_t> FirstNumber(const std::string_view* names, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (const char* v = std::getenv(std::string(names[i]).c_str())) return std::atoll(v);
  }
  return std::nullopt;
}

int Run() {
  ControlStatus state;
  state.pid = getpid();
  state.rank = FirstNumber(kRankVariables, std::size(kRankVariables));
  state.world_size = FirstNumber(kWorldSizeVariables, std::size(kWorldSizeVariables));
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  state.host = host;
  for (std::string_view name : kJobIdVariables) {
    if (const char* v = std::getenv(std::string(name).c_str())) {
      state.job_id = std::string(name) + "=" + v;
      break;
    }
  }
  state.trace_path = "/tmp/control listening " + std::to_string(state.pid) + ".wst";
  state.mode = "signal";
  const char* flight = std::getenv("WARPSCOPE_TEST_FLIGHT");
  state.flight_recorder = flight != nullptr && std::string_view(flight) == "1";

  ControlChannel channel;
  std::string error;
  if (!channel.Listen(getpid(), &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  std::printf("listening\n");
  std::fflush(stdout);
  const pid_t parent = getppid();
  auto handle = [&](ControlCommand command, const std::vector<std::string>&) -> ControlReply {
    const std::string window = "window " + std::to_string(state.windows);
    switch (command) {
      case ControlCommand::kStart:
        if (state.window_open) return {ControlResult::kError, window + " is open already"};
        state.window_open = true;
        ++state.windows;
        return {ControlResult::kOk, "window " + std::to_string(state.windows) + " opened"};
      case ControlCommand::kStop:
        if (!state.window_open) return {ControlResult::kError, "no window is open"};
        state.window_open = false;
        return {ControlResult::kOk, window + " closed"};
      case ControlCommand::kDump:
        if (!state.flight_recorder) return {ControlResult::kError, "the flight recorder is off"};
        return {ControlResult::kOk, "flight recorder written to /tmp/flight.wst"};
      case ControlCommand::kStatus:
        return {ControlResult::kOk, FormatControlStatus(state)};
    }
    return {ControlResult::kError, "?"};
  };
  for (int waited_ms = 0; waited_ms < 120000 && getppid() == parent;) {
    pollfd pfd = {channel.fd(), POLLIN, 0};
    if (poll(&pfd, 1, 100) > 0) {
      channel.Serve(handle);
    } else {
      waited_ms += 100;
    }
  }
  return 0;
}

}  // namespace
}  // namespace warpscope

int main() { return warpscope::Run(); }
