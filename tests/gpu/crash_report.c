/* libws_crash_report.so: preloaded by the GPU scripts next to warpscope. On SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL or SIGABRT it writes the signal, the faulting thread's name and a backtrace
 * (library + offset per frame) to stderr, then lets the signal kill the process as it would
 * have. It tells which library and thread a crash came from on a machine without gdb. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void Report(int sig, siginfo_t* info, void* uctx) {
  (void)uctx;
  char name[32] = "?";
  char line[160];
  void* frames[64];
  int n;
  pthread_getname_np(pthread_self(), name, sizeof name);
  n = snprintf(line, sizeof line, "ws_crash_report: signal %d (%s) in thread '%s' tid %ld addr %p\n",
               sig, strsignal(sig), name, (long)gettid(), info ? info->si_addr : NULL);
  if (n > 0) (void)!write(2, line, (size_t)n);
  n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void Install(void) {
  struct sigaction sa;
  int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = Report;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; ++i) sigaction(sigs[i], &sa, NULL);
}
