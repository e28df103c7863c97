// The control channel's client (see control_client.h).
#include "analyzers/launcher/control_client.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "proto/settings/setting_error.h"

namespace warpscope {

std::vector<int64_t> ControlPidsFromProcNetUnix(std::string_view text) {
  // "Num RefCount Protocol Flags Type St Inode Path": the path is the eighth field, "@name"
  // for an abstract one. An accepted connection shows its listener's name too.
  std::vector<int64_t> pids;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string field;
    for (int i = 0; i < 8 && fields >> field; ++i) {
      if (i != 7) continue;
      if (std::optional<int64_t> pid = PidFromControlSocketPath(field)) pids.push_back(*pid);
    }
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

absl::StatusOr<std::vector<int64_t>> FindControlPids() {
  std::ifstream in("/proc/net/unix");
  if (!in) {
    return absl::UnavailableError(absl::StrCat("cannot read /proc/net/unix (", std::strerror(errno),
                                               "); name the process ids instead"));
  }
  std::stringstream text;
  text << in.rdbuf();
  std::vector<int64_t> pids = ControlPidsFromProcNetUnix(text.str());
  const uid_t me = geteuid();
  if (me == 0) return pids;
  std::erase_if(pids, [me](int64_t pid) {
    struct stat st;
    return stat(absl::StrCat("/proc/", pid).c_str(), &st) == 0 && st.st_uid != me;
  });
  return pids;
}

absl::StatusOr<ControlReply> SendControlRequest(int64_t pid, const ControlRequest& request,
                                                int timeout_ms) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  // Both bound connect (a full backlog) and the reply.
  timeval timeout = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_un address;
  socklen_t length = 0;
  ControlSocketAddress(pid, &address, &length);
  const std::string seconds = absl::StrCat(timeout_ms / 1000.0, " s");
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    const int err = errno;
    close(fd);
    if (err == EAGAIN || err == EINPROGRESS) {
      return absl::DeadlineExceededError(
          absl::StrCat("pid ", pid, " did not take the connection within ", seconds));
    }
    return absl::NotFoundError(absl::StrCat("no warpscope control channel in pid ", pid, " (",
                                            std::strerror(err), ")"));
  }
  const std::string line = FormatControlRequest(request);
  // A refused client may find the connection closed already; its reply is still there to read.
  (void)send(fd, line.data(), line.size(), MSG_NOSIGNAL);
  std::string reply_line;
  char buffer[1024];
  bool timed_out = false;
  while (reply_line.find('\n') == std::string::npos && reply_line.size() < kControlMaxLineBytes) {
    const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      reply_line.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    timed_out = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    break;
  }
  close(fd);
  const size_t newline = reply_line.find('\n');
  if (newline == std::string::npos) {
    if (timed_out) {
      return absl::DeadlineExceededError(
          absl::StrCat("pid ", pid, " did not answer within ", seconds));
    }
    return absl::UnavailableError(
        absl::StrCat("pid ", pid, " closed the connection without a reply"));
  }
  ControlReply reply;
  std::string error;
  if (!ParseControlReply(std::string_view(reply_line).substr(0, newline), &reply, &error)) {
    return absl::DataLossError(absl::StrCat("pid ", pid, " replied in another protocol: ", error));
  }
  return reply;
}

namespace {

// A whole number >= 0, digits only.
bool ParseRank(std::string_view text, int64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && text[0] != '-' && ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

absl::StatusOr<RankList> RankList::Parse(std::string_view text) {
  RankList list;
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    const size_t dash = part.find('-');
    int64_t lo = 0;
    int64_t hi = 0;
    const bool ok = dash == std::string_view::npos
                        ? ParseRank(part, &lo) && ParseRank(part, &hi)
                        : ParseRank(part.substr(0, dash), &lo) &&
                              ParseRank(part.substr(dash + 1), &hi) && lo <= hi;
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--rank ", QuoteValue(text), ": ", QuoteValue(part),
          " is not a rank or a range LO-HI; expected e.g. --rank 0,2-3"));
    }
    list.ranges_.emplace_back(lo, hi);
    if (comma == std::string_view::npos) return list;
    rest.remove_prefix(comma + 1);
  }
}

bool RankList::Contains(int64_t rank) const {
  return std::any_of(ranges_.begin(), ranges_.end(),
                     [rank](const auto& r) { return rank >= r.first && rank <= r.second; });
}

bool ControlSelection::Matches(const ControlStatus& status) const {
  if (ranks && (!status.rank || !ranks->Contains(*status.rank))) return false;
  if (!job.empty()) {
    const size_t eq = status.job_id.find('=');
    const bool value_matches = eq != std::string::npos && status.job_id.substr(eq + 1) == job;
    if (status.job_id != job && !value_matches) return false;
  }
  return true;
}

std::string ControlProcessName(int64_t pid, const ControlStatus* status) {
  if (status == nullptr || !status->rank) return absl::StrCat("pid ", pid);
  return absl::StrCat("pid ", pid, " (rank ", *status->rank, ")");
}

Table ControlStatusTable(const std::vector<ControlStatus>& statuses) {
  Table table({{"pid", true, CellKind::kInt},
               {"rank", true, CellKind::kInt},
               {"host", false, CellKind::kString},
               {"job", false, CellKind::kString},
               {"trace", false, CellKind::kString},
               {"window", false, CellKind::kString},
               {"windows", true, CellKind::kInt},
               {"mode", false, CellKind::kString},
               {"flight", false, CellKind::kString}});
  for (const ControlStatus& s : statuses) {
    table.AddRow({s.pid, s.rank ? Cell(*s.rank) : Cell(), s.host, s.job_id, s.trace_path,
                  s.window_open ? "open" : "closed", s.windows, s.mode,
                  s.flight_recorder ? "on" : "off"});
  }
  return table;
}

}  // namespace warpscope
