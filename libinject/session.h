// The injection session: configuration, the trace file, the capture window state machine,
// the tracer (CUPTI subscriber + activity), optional collectors, and the process-lifecycle
// plumbing (flush thread, atexit, fork, SIGINT/SIGTERM, capture signal). One per process;
// its class and the files that each do one of its jobs: session_internal.h.
#ifndef WARPSCOPE_LIBINJECT_SESSION_H_
#define WARPSCOPE_LIBINJECT_SESSION_H_

namespace warpscope {

// Called from InitializeInjection (inside cuInit, on the application's thread) and from
// NVTX's first call when that comes first. Never throws, never exits; on any problem logs
// one line and leaves the program unprofiled. Only the first call starts the session;
// concurrent callers on other threads wait until it has started, a call made again on the
// starting thread (CUPTI initialising CUDA underneath) returns at once.
void StartSession();

// True when the session subscribed to CUPTI, opened its trace and runs in this process (not
// in a forked child, not after shutdown).
bool SessionRunning();

// The process is about to end through _exit/_Exit, which skips atexit: asks the session's own
// thread to close the trace as at exit and waits for it, at most a few seconds. Only
// async-signal-safe calls on the calling thread; returns at once where there is nothing to do
// (no session, a forked child, already closed, or called on the session's thread).
void CloseBeforeQuickExit();

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_SESSION_H_
