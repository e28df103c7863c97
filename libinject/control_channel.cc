// The control channel's server (see control_channel.h).
//
// Lifecycle: Listen (bind the abstract name, listen) → the watcher polls fd() → Serve: accept
// each pending connection → SO_PEERCRED (refuse others) → one request line, waited for at most
// kControlRequestTimeoutMs → handler → one reply line → close … fork: the child closes its
// copies (CloseAfterFork) … Close at shutdown; the name is gone with the socket.
#include "libinject/control_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace warpscope {
namespace {

int64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Sends the whole reply or gives up: the socket is non-blocking and a reply (at most
// kControlMaxLineBytes) fits an empty socket buffer; a client gone already costs no SIGPIPE.
void SendReply(int client, const ControlReply& reply) {
  const std::string line = FormatControlReply(reply);
  size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = send(client, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

enum class ReadOutcome { kLine, kTooLong, kNothing };

// Reads up to the first '\n' (not kept) within the deadline; EOF after some bytes counts as
// the end of the line.
ReadOutcome ReadRequestLine(int client, int64_t deadline_ms, std::string* line) {
  char buffer[512];
  while (true) {
    const ssize_t n = recv(client, buffer, sizeof buffer, 0);
    if (n > 0) {
      line->append(buffer, static_cast<size_t>(n));
      const size_t newline = line->find('\n');
      if (newline != std::string::npos) {
        line->resize(newline);
        return line->size() + 1 > kControlMaxLineBytes ? ReadOutcome::kTooLong : ReadOutcome::kLine;
      }
      if (line->size() >= kControlMaxLineBytes) return ReadOutcome::kTooLong;
      continue;
    }
    if (n == 0) return line->empty() ? ReadOutcome::kNothing : ReadOutcome::kLine;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return ReadOutcome::kNothing;
    const int64_t left = deadline_ms - MonotonicMs();
    if (left <= 0) return ReadOutcome::kNothing;
    pollfd pfd = {client, POLLIN, 0};
    const int r = poll(&pfd, 1, static_cast<int>(left));
    if (r < 0 && errno != EINTR) return ReadOutcome::kNothing;
  }
}

}  // namespace

bool ControlChannel::Listen(pid_t pid, std::string* error) {
  auto fail = [&](const char* call, int err) {
    *error = "warpscope: cannot listen for control commands on @" +
             ControlSocketName(pid).substr(1) + " (" + call + ": " + std::strerror(err) +
             "); `warpscope start|stop|dump|status` will not reach this process";
    return false;
  };
  if (fd() >= 0) return fail("listen", EALREADY);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return fail("socket", errno);
  sockaddr_un address;
  socklen_t length = 0;
  ControlSocketAddress(pid, &address, &length);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0 ||
      listen(fd, kControlMaxClientsPerServe) != 0) {
    const int err = errno;
    close(fd);
    return fail("bind", err);
  }
  listen_fd_.store(fd);
  return true;
}

int ControlChannel::Serve(const Handler& handler) {
  const int listener = fd();
  if (listener < 0) return 0;
  int taken = 0;
  while (taken < kControlMaxClientsPerServe) {
    const int client = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      break;  // EAGAIN: none left; anything else: try again at the next poll
    }
    ++taken;
    client_fd_.store(client);
    ServeClient(client, handler);
    client_fd_.store(-1);
    close(client);
  }
  return taken;
}

void ControlChannel::ServeClient(int client, const Handler& handler) {
  ucred peer{};
  socklen_t peer_size = sizeof peer;
  const uid_t own = geteuid();
  if (getsockopt(client, SOL_SOCKET, SO_PEERCRED, &peer, &peer_size) != 0 ||
      !ControlPeerAllowed(peer.uid, own)) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    SendReply(client, {ControlResult::kRefused,
                       "uid " + std::to_string(peer.uid) + " may not control pid " +
                           std::to_string(getpid()) + ": only its user (uid " +
                           std::to_string(own) + ") or root may"});
    return;
  }
  std::string line;
  switch (ReadRequestLine(client, MonotonicMs() + kControlRequestTimeoutMs, &line)) {
    case ReadOutcome::kNothing:
      return;
    case ReadOutcome::kTooLong:
      SendReply(client, {ControlResult::kError, "request longer than " +
                                                    std::to_string(kControlMaxLineBytes) +
                                                    " bytes"});
      return;
    case ReadOutcome::kLine:
      break;
  }
  ControlRequest request;
  std::string error;
  if (!ParseControlRequest(line, &request, &error)) {
    SendReply(client, {ControlResult::kError, error});
    return;
  }
  ControlReply reply;
  try {
    reply = handler(request.command, request.args);
  } catch (...) {
    reply = {ControlResult::kError, "internal error while carrying out " +
                                        std::string(ControlCommandName(request.command))};
  }
  SendReply(client, reply);
}

void ControlChannel::CloseAfterFork() {
  // close() only: shutdown() would act on the socket the parent shares.
  const int client = client_fd_.exchange(-1);
  if (client >= 0) close(client);
  const int listener = listen_fd_.exchange(-1);
  if (listener >= 0) close(listener);
}

void ControlChannel::Close() {
  const int listener = listen_fd_.exchange(-1);
  if (listener >= 0) close(listener);
}

}  // namespace warpscope
