#include "analyzers/model/child_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace warpscope {
namespace {
constexpr size_t kMaxText = 1u << 16;  // a message, never more
}  // namespace

bool WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool TakeBytes(const std::string& bytes, size_t* offset, void* data, size_t size) {
  if (*offset > bytes.size() || bytes.size() - *offset < size) return false;
  std::memcpy(data, bytes.data() + *offset, size);
  *offset += size;
  return true;
}

void WriteText(int fd, const std::string& text) {
  const uint32_t length = static_cast<uint32_t>(std::min<size_t>(text.size(), kMaxText));
  WriteAll(fd, &length, sizeof length);
  WriteAll(fd, text.data(), length);
}

std::string TakeText(const std::string& bytes, size_t* offset) {
  uint32_t length = 0;
  if (!TakeBytes(bytes, offset, &length, sizeof length) || length > kMaxText ||
      bytes.size() - *offset < length) {
    return "";
  }
  std::string text = bytes.substr(*offset, length);
  *offset += length;
  return text;
}

ChildOutput RunInChildProcess(const std::function<void(int fd)>& work) {
  ChildOutput out;
  int fds[2];
  if (pipe(fds) != 0) {
    out.failure = absl::StrCat("no pipe for the child process: ", std::strerror(errno));
    return out;
  }
  const pid_t child = fork();
  if (child < 0) {
    out.failure = absl::StrCat("cannot start a child process: ", std::strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return out;
  }
  if (child == 0) {
    close(fds[0]);
    // A parent that stopped reading must not leave the child blocked or killed silently by
    // SIGPIPE: a failed write ends the child's work through its own checks.
    signal(SIGPIPE, SIG_IGN);
    work(fds[1]);
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.bytes.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    out.failure = absl::StrCat("crashed (signal ", WTERMSIG(status), ")");
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    out.failure = absl::StrCat("ended with status ", WEXITSTATUS(status));
  } else {
    out.completed = true;
  }
  return out;
}

}  // namespace warpscope
