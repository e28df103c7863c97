// The injection session: configuration, the trace file, the capture window state machine,
// the tracer (CUPTI subscriber + activity), optional collectors, and the process-lifecycle
// plumbing (flush thread, atexit, fork, SIGINT/SIGTERM, capture signal). One per process.
#ifndef WARPSCOPE_LIBINJECT_SESSION_H_
#define WARPSCOPE_LIBINJECT_SESSION_H_

namespace warpscope {

// Called from InitializeInjection (inside cuInit, on the application's thread). Never throws,
// never exits; on any problem logs one line and leaves the program unprofiled.
void StartSession();

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_SESSION_H_
