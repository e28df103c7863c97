// The client side of the control channel behind `warpscope start|stop|dump|status`: finding the
// processes that listen (/proc/net/unix), asking one of them (proto/control/control_protocol.h),
// choosing among them by rank and job, and the status table.
#ifndef WARPSCOPE_ANALYZERS_LAUNCHER_CONTROL_CLIENT_H_
#define WARPSCOPE_ANALYZERS_LAUNCHER_CONTROL_CLIENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/render/output.h"
#include "proto/control/control_protocol.h"

namespace warpscope {

// How long the client waits to connect and for the reply: the process's watcher answers
// between its other work (a periodic flush can take a while).
inline constexpr int kControlReplyTimeoutMs = 5000;

// The pids of the control sockets in the text of /proc/net/unix (listening or not), ascending,
// each once.
std::vector<int64_t> ControlPidsFromProcNetUnix(std::string_view text);
// The same for this network namespace's /proc/net/unix, keeping only the processes this user
// may control (all for root; a pid that /proc does not show is kept: it may be another pid
// namespace's).
absl::StatusOr<std::vector<int64_t>> FindControlPids();

// Sends `request` to `pid` and reads its reply. NotFound: nothing listens for pid;
// DeadlineExceeded: no reply within `timeout_ms`; Unavailable: the connection closed without
// a reply; DataLoss: the reply does not parse.
absl::StatusOr<ControlReply> SendControlRequest(int64_t pid, const ControlRequest& request,
                                                int timeout_ms = kControlReplyTimeoutMs);

// `--rank 0,2-3`: ranks and inclusive ranges, separated by commas.
class RankList {
 public:
  // InvalidArgument naming the part that is not a rank or a range LO-HI with LO <= HI.
  static absl::StatusOr<RankList> Parse(std::string_view text);
  bool Contains(int64_t rank) const;

 private:
  std::vector<std::pair<int64_t, int64_t>> ranges_;
};

// Which processes a command without PIDs addresses: those whose status matches every flag given.
struct ControlSelection {
  std::optional<RankList> ranks;  // --rank; a process without a rank never matches
  std::string job;                // --job: the job id, or its value after "VARIABLE="
  bool all = false;               // --all
  bool any() const { return ranks.has_value() || !job.empty() || all; }
  bool Matches(const ControlStatus& status) const;
};

// "pid 1234 (rank 0)", or "pid 1234" without a rank: how output lines name a process.
std::string ControlProcessName(int64_t pid, const ControlStatus* status);

// One row a process: pid, rank, host, job, trace, window ("open", "closed"), windows, mode,
// flight.
Table ControlStatusTable(const std::vector<ControlStatus>& statuses);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_LAUNCHER_CONTROL_CLIENT_H_
