// The control channel's server: an abstract Unix socket ("\0warpscope-ctl.PID") on which
// `warpscope start|stop|dump|status` reaches a running, injected process
// (proto/control/control_protocol.h has the protocol). No CUPTI, libc only; the session's
// watcher thread polls fd() and calls Serve().
#ifndef WARPSCOPE_LIBINJECT_CONTROL_CHANNEL_H_
#define WARPSCOPE_LIBINJECT_CONTROL_CHANNEL_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "proto/control/control_protocol.h"

namespace warpscope {

// How long Serve waits for a client's request line before dropping the client: the client
// writes it right after connecting, so it is normally there when the connection is taken.
inline constexpr int kControlRequestTimeoutMs = 20;
// Connections one Serve call takes at most; the rest wait in the backlog (fd() stays readable,
// so the next poll returns at once). Bounds the watcher's time in one call.
inline constexpr int kControlMaxClientsPerServe = 16;

// Who may send commands: the process's own effective user, or root. Anyone else who shares the
// network namespace can connect to an abstract socket (it has no file permissions).
inline bool ControlPeerAllowed(uid_t peer_uid, uid_t own_euid) {
  return peer_uid == own_euid || peer_uid == 0;
}

// Threading: Listen, Serve and Close on one thread (the watcher); CloseAfterFork in the child
// of a fork (pthread_atfork's child handler: it only calls close). refused() from any thread.
class ControlChannel {
 public:
  // Called on Serve's thread, with no lock of the channel held, once per well-formed request
  // from an allowed peer; returns the reply. An exception it throws becomes an error reply.
  using Handler =
      std::function<ControlReply(ControlCommand command, const std::vector<std::string>& args)>;

  ControlChannel() = default;
  ~ControlChannel() { Close(); }
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // Binds and listens on ControlSocketName(pid) (SOCK_STREAM, close-on-exec, non-blocking).
  // False with *error set to one line (starting "warpscope: ") when it cannot: the process goes
  // on without the channel.
  bool Listen(pid_t pid, std::string* error);
  // The listening socket for poll (POLLIN: a connection waits), or -1.
  int fd() const { return listen_fd_.load(std::memory_order_relaxed); }
  // Takes each pending connection (up to kControlMaxClientsPerServe) without blocking for
  // more than kControlRequestTimeoutMs per client: checks the peer (SO_PEERCRED; a refused
  // peer gets a `refused` reply and is counted), reads one request line (a client that sends
  // none in time is dropped; a malformed one gets an `error` reply), calls `handler`, writes
  // the reply and closes. Returns the number of connections taken.
  int Serve(const Handler& handler);
  // In the child of a fork: closes this process's copies of the listening socket and of a
  // client being served. The parent keeps both (no shutdown, which would reach its socket).
  void CloseAfterFork();
  // Stops listening (the name goes with the last copy of the socket).
  void Close();

  // Connections refused for their peer's user, since Listen (the trace's `control.refused`).
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  void ServeClient(int client, const Handler& handler);

  std::atomic<int> listen_fd_{-1};
  std::atomic<int> client_fd_{-1};  // the connection Serve is on, for CloseAfterFork
  std::atomic<uint64_t> refused_{0};
};

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_CONTROL_CHANNEL_H_
