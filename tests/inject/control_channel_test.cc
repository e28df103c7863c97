// The control channel (libinject/control_channel.h) and its protocol
// (proto/control/control_protocol.h): a server in this process, served by a thread as the
// session's watcher would, answers real clients on its abstract socket. Another user is
// refused (needs root, to become that user in a child); a forked child holds no listener.
#include "libinject/control_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/control/control_protocol.h"

namespace warpscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A connected client socket to `pid`'s channel, or -1.
int Connect(pid_t pid) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un address;
  socklen_t length = 0;
  ControlSocketAddress(pid, &address, &length);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes (the reply line), waiting at most 30 s so that a
// broken server fails the test instead of hanging it.
std::string ReadAll(int fd) {
  std::string out;
  char buffer[1024];
  while (true) {
    pollfd pfd = {fd, POLLIN, 0};
    if (poll(&pfd, 1, 30000) <= 0) return out + "<no reply>";
    const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return out;
    out.append(buffer, static_cast<size_t>(n));
  }
}

std::string Exchange(pid_t pid, const std::string& request) {
  const int fd = Connect(pid);
  if (fd < 0) return std::string("<connect: ") + std::strerror(errno) + ">";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) {
    // The reply may still be there (a refused client).
  }
  std::string reply = ReadAll(fd);
  close(fd);
  return reply;
}

class ControlChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(channel_.Listen(getpid(), &error)) << error;
    server_ = std::thread([this] {
      while (!stop_.load()) {
        pollfd pfd = {channel_.fd(), POLLIN, 0};
        if (poll(&pfd, 1, 20) > 0) channel_.Serve([this](ControlCommand c, const auto& args) {
          return Handle(c, args);
        });
      }
    });
  }
  void TearDown() override {
    stop_.store(true);
    if (server_.joinable()) server_.join();
    channel_.Close();
  }

  // A fake session: says what it would do and remembers what it was asked.
  ControlReply Handle(ControlCommand command, const std::vector<std::string>& args) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string call(ControlCommandName(command));
    for (const std::string& a : args) call += " " + a;
    calls_.push_back(call);
    switch (command) {
      case ControlCommand::kStart: return {ControlResult::kOk, "window 2 opened"};
      case ControlCommand::kStop: return {ControlResult::kOk, "window 2 closed"};
      case ControlCommand::kDump: return {ControlResult::kError, "the flight recorder is off"};
      case ControlCommand::kStatus: break;
    }
    ControlStatus s;
    s.pid = getpid();
    s.rank = 3;
    s.host = "node 7";
    s.job_id = "SLURM_JOB_ID=42";
    s.trace_path = "/tmp/a b%.wst";
    s.window_open = true;
    s.windows = 2;
    s.mode = "signal";
    return {ControlResult::kOk, FormatControlStatus(s)};
  }
  std::vector<std::string> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

  ControlChannel channel_;
  std::thread server_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> calls_;
};

ControlReply Reply(const std::string& line) {
  ControlReply reply;
  std::string error;
  EXPECT_TRUE(ParseControlReply(line, &reply, &error)) << error << " in " << line;
  return reply;
}

TEST_F(ControlChannelTest, EachCommandRoundTrips) {
  const pid_t pid = getpid();
  ControlReply start = Reply(Exchange(pid, FormatControlRequest({ControlCommand::kStart, {}})));
  EXPECT_EQ(start.result, ControlResult::kOk);
  EXPECT_EQ(start.text, "window 2 opened");
  ControlReply stop = Reply(Exchange(pid, FormatControlRequest({ControlCommand::kStop, {}})));
  EXPECT_EQ(stop.result, ControlResult::kOk);
  EXPECT_EQ(stop.text, "window 2 closed");
  ControlReply dump =
      Reply(Exchange(pid, FormatControlRequest({ControlCommand::kDump, {"why not", ""}})));
  EXPECT_EQ(dump.result, ControlResult::kError);
  EXPECT_EQ(dump.text, "the flight recorder is off");
  const std::string line = Exchange(pid, FormatControlRequest({ControlCommand::kStatus, {}}));
  EXPECT_THAT(line, StartsWith("warpscope-ctl/1 ok pid="));
  EXPECT_EQ(line.back(), '\n');
  ControlStatus status;
  std::string error;
  ASSERT_TRUE(ParseControlStatus(Reply(line).text, &status, &error)) << error;
  EXPECT_EQ(status.pid, pid);
  EXPECT_EQ(status.rank, 3);
  EXPECT_FALSE(status.local_rank.has_value());
  EXPECT_EQ(status.host, "node 7");
  EXPECT_EQ(status.job_id, "SLURM_JOB_ID=42");
  EXPECT_EQ(status.trace_path, "/tmp/a b%.wst");
  EXPECT_TRUE(status.window_open);
  EXPECT_EQ(status.windows, 2u);
  EXPECT_EQ(status.mode, "signal");
  EXPECT_FALSE(status.flight_recorder);
  EXPECT_THAT(calls(), ElementsAre("start", "stop", "dump why not", "status"));
  EXPECT_EQ(channel_.refused(), 0u);
}

TEST_F(ControlChannelTest, ASilentClientIsDroppedAndOthersAreServed) {
  const int silent = Connect(getpid());
  ASSERT_GE(silent, 0);
  // Served after the silent one was dropped (or before it was taken): either way Serve goes on.
  const std::string line = Exchange(getpid(), "warpscope-ctl/1 start\n");
  EXPECT_EQ(Reply(line).text, "window 2 opened");
  EXPECT_EQ(ReadAll(silent), "");  // closed without a reply
  close(silent);
  EXPECT_THAT(calls(), ElementsAre("start"));
}

TEST_F(ControlChannelTest, MalformedRequestsGetAnErrorReply) {
  const pid_t pid = getpid();
  EXPECT_THAT(Exchange(pid, "hello\n"),
              StartsWith("warpscope-ctl/1 error expected a request starting with warpscope-ctl/1"));
  EXPECT_THAT(Exchange(pid, "warpscope-ctl/2 start\n"), StartsWith("warpscope-ctl/1 error"));
  EXPECT_THAT(Exchange(pid, "warpscope-ctl/1 reboot\n"),
              StartsWith("warpscope-ctl/1 error unknown command 'reboot'"));
  EXPECT_THAT(Exchange(pid, "warpscope-ctl/1\n"), StartsWith("warpscope-ctl/1 error no command"));
  EXPECT_THAT(Exchange(pid, "warpscope-ctl/1 start %zz\n"), HasSubstr(" error argument 1"));
  EXPECT_THAT(Exchange(pid, "warpscope-ctl/1 start " + std::string(5000, 'x') + "\n"),
              StartsWith("warpscope-ctl/1 error request longer than 4096 bytes"));
  EXPECT_THAT(calls(), ElementsAre());
}

TEST_F(ControlChannelTest, AnotherUserIsRefused) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "needs root to connect as another user (uid 65534) from a child";
  }
  const pid_t server_pid = getpid();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Plain calls only: the parent has threads.
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    const int fd = Connect(server_pid);
    if (fd < 0) _exit(4);
    const char request[] = "warpscope-ctl/1 start\n";
    (void)send(fd, request, sizeof request - 1, MSG_NOSIGNAL);
    char reply[256] = {0};
    size_t got = 0;
    while (got < sizeof reply - 1) {
      const ssize_t n = recv(fd, reply + got, sizeof reply - 1 - got, 0);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    constexpr char kRefused[] = "warpscope-ctl/1 refused uid 65534 may not control pid";
    _exit(std::strncmp(reply, kRefused, sizeof kRefused - 1) == 0 ? 0 : 5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: setuid failed, 4: connect failed, 5: not refused";
  EXPECT_THAT(calls(), ElementsAre());
  EXPECT_EQ(channel_.refused(), 1u);
  // This process's own user is still served.
  EXPECT_EQ(Reply(Exchange(server_pid, "warpscope-ctl/1 stop\n")).result, ControlResult::kOk);
}

TEST_F(ControlChannelTest, AForkedChildClosesItsListenerAndTheParentKeepsIt) {
  const int listener = channel_.fd();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    channel_.CloseAfterFork();
    const bool gone = channel_.fd() == -1 && fcntl(listener, F_GETFD) == -1 && errno == EBADF;
    _exit(gone ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child still holds the listening socket";
  EXPECT_EQ(channel_.fd(), listener);
  EXPECT_EQ(Reply(Exchange(getpid(), "warpscope-ctl/1 start\n")).text, "window 2 opened");
}

TEST_F(ControlChannelTest, ASecondListenerOnTheSameNameFailsInOneLine) {
  ControlChannel second;
  std::string error;
  EXPECT_FALSE(second.Listen(getpid(), &error));
  EXPECT_THAT(error, StartsWith("warpscope: cannot listen for control commands on @warpscope-ctl."));
  EXPECT_THAT(error, HasSubstr("Address already in use"));
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_EQ(second.fd(), -1);
}

TEST(ControlPeerTest, OnlyTheOwnUserOrRoot) {
  EXPECT_TRUE(ControlPeerAllowed(1000, 1000));
  EXPECT_TRUE(ControlPeerAllowed(0, 1000));
  EXPECT_TRUE(ControlPeerAllowed(0, 0));
  EXPECT_FALSE(ControlPeerAllowed(1001, 1000));
  EXPECT_FALSE(ControlPeerAllowed(1000, 0));
}

TEST(ControlProtocolTest, WordsRoundTrip) {
  const std::vector<std::string> values = {"",           "plain",         "a b",
                                           "100%",       "tab\there",     "line\nbreak",
                                           std::string("nul\0byte", 8), "héllo=x"};
  for (const std::string& value : values) {
    const std::string word = EncodeControlWord(value);
    EXPECT_EQ(word.find_first_of(" \n\t"), std::string::npos) << word;
    std::string back;
    ASSERT_TRUE(DecodeControlWord(word, &back)) << word;
    EXPECT_EQ(back, value);
  }
  std::string out;
  EXPECT_FALSE(DecodeControlWord("%", &out));
  EXPECT_FALSE(DecodeControlWord("%4", &out));
  EXPECT_FALSE(DecodeControlWord("%G0", &out));
}

TEST(ControlProtocolTest, SocketNamesAndPaths) {
  EXPECT_EQ(ControlSocketName(1234), std::string("\0warpscope-ctl.1234", 19));
  EXPECT_EQ(PidFromControlSocketPath("@warpscope-ctl.1234"), 1234);
  EXPECT_EQ(PidFromControlSocketPath("warpscope-ctl.1234"), std::nullopt);
  EXPECT_EQ(PidFromControlSocketPath("@warpscope-ctl."), std::nullopt);
  EXPECT_EQ(PidFromControlSocketPath("@warpscope-ctl.12x"), std::nullopt);
  EXPECT_EQ(PidFromControlSocketPath("@other.12"), std::nullopt);
}

TEST(ControlProtocolTest, RepliesAreOneLine) {
  EXPECT_EQ(FormatControlReply({ControlResult::kRefused, "a\nb"}), "warpscope-ctl/1 refused a b\n");
  EXPECT_EQ(FormatControlReply({ControlResult::kOk, std::string(9000, 'x')}).size(),
            kControlMaxLineBytes);
  ControlReply reply;
  std::string error;
  EXPECT_FALSE(ParseControlReply("warpscope-ctl/1 maybe x", &reply, &error));
  EXPECT_THAT(error, HasSubstr("expected ok, error or refused"));
  ASSERT_TRUE(ParseControlReply("warpscope-ctl/1 ok\n", &reply, &error));
  EXPECT_EQ(reply.text, "");
}

TEST(ControlProtocolTest, StatusSkipsUnknownKeysAndNeedsPid) {
  ControlStatus s;
  std::string error;
  ASSERT_TRUE(ParseControlStatus("pid=5 rank= later=x flight=on", &s, &error)) << error;
  EXPECT_EQ(s.pid, 5);
  EXPECT_FALSE(s.rank.has_value());
  EXPECT_TRUE(s.flight_recorder);
  EXPECT_FALSE(ParseControlStatus("rank=1", &s, &error));
  EXPECT_THAT(error, HasSubstr("no pid"));
  EXPECT_FALSE(ParseControlStatus("pid=5 rank=x", &s, &error));
  EXPECT_THAT(error, HasSubstr("rank is not a whole number"));
}

}  // namespace
}  // namespace warpscope
