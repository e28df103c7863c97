// Runs work that may crash (CUPTI given bytes from a trace, which it trusts) in a forked child
// process, so that a corrupt trace costs the results of that work, never the analysis.
#ifndef WARPSCOPE_ANALYZERS_MODEL_CHILD_PROCESS_H_
#define WARPSCOPE_ANALYZERS_MODEL_CHILD_PROCESS_H_

#include <cstddef>
#include <functional>
#include <string>

namespace warpscope {

// Writes all of `data` to `fd`, retrying after EINTR; false on an error.
bool WriteAll(int fd, const void* data, size_t size);

// Reads `size` bytes at `*offset` of a child's output into `data` and moves the offset; false
// when the output ended before them.
bool TakeBytes(const std::string& bytes, size_t* offset, void* data, size_t size);

// A short text (a problem's message) as its length and bytes; the reading side is TakeText,
// which gives "" when the output ended before the whole text.
void WriteText(int fd, const std::string& text);
std::string TakeText(const std::string& bytes, size_t* offset);

struct ChildOutput {
  std::string bytes;       // everything the child wrote, up to the point it stopped
  bool completed = false;  // the child returned from `work` and exited normally
  std::string failure;     // why not, in words ("crashed (signal 11)", "cannot fork: ...")
};

// Forks; the child calls work(fd) with the write end of a pipe and leaves with _exit (no
// destructors, no atexit handlers of the parent's libraries) once it returns. The parent reads
// the pipe to its end while the child runs, then reaps the child.
ChildOutput RunInChildProcess(const std::function<void(int fd)>& work);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_CHILD_PROCESS_H_
