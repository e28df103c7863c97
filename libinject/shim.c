/* libwarpscope.so: the tiny LD_PRELOAD shim. It has no CUPTI or C++ dependency, so leaking
 * into shells, compilers and data-loader workers costs nothing: its constructor only points
 * CUDA_INJECTION64_PATH / NVTX_INJECTION64_PATH at itself; the CUDA driver then calls
 * InitializeInjection (inside cuInit) and NVTX calls InitializeInjectionNvtx*, which load
 * libwarpscope_core.so from this directory and forward. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WS_EXPORT __attribute__((visibility("default")))

static char g_self_path[4096];
static pid_t g_ctor_pid;
static void* g_core;
static int g_core_failed; /* tried once and said why: later entry points stay silent */
static pthread_mutex_t g_load_lock = PTHREAD_MUTEX_INITIALIZER;

/* The core's warpscope_core_before_exit, once the core is loaded (read by _exit, which may
 * run in a signal handler: a plain atomic load, nothing else). */
typedef void (*BeforeExitFn)(void);
static BeforeExitFn g_before_exit;

static void FindSelf(void) {
  Dl_info info;
  if (g_self_path[0] != '\0') return;
  if (dladdr((void*)&FindSelf, &info) == 0 || info.dli_fname == NULL) return;
  if (info.dli_fname[0] != '/') {
    /* Relative path (LD_PRELOAD=build/lib/...): make it absolute for the driver's dlopen. */
    char cwd[2048];
    if (getcwd(cwd, sizeof cwd) == NULL) return;
    snprintf(g_self_path, sizeof g_self_path, "%s/%s", cwd, info.dli_fname);
  } else {
    snprintf(g_self_path, sizeof g_self_path, "%s", info.dli_fname);
  }
}

/* Whether `v` without blanks around is one of `words`, in any case. */
static int IsOneOf(const char* v, const char* const* words, size_t count) {
  size_t begin = 0, end = strlen(v);
  while (begin < end && (v[begin] == ' ' || v[begin] == '\t')) ++begin;
  while (end > begin && (v[end - 1] == ' ' || v[end - 1] == '\t')) --end;
  for (size_t i = 0; i < count; ++i) {
    if (strlen(words[i]) == end - begin && strncasecmp(v + begin, words[i], end - begin) == 0) {
      return 1;
    }
  }
  return 0;
}

/* WARPSCOPE_DISABLE, read as the library reads every true/false setting (any case, blanks
 * around allowed): 1/true/yes/on do nothing at all, also when an inherited
 * CUDA_INJECTION64_PATH still names this library (checked again in every entry point);
 * unset, empty or 0/false/no/off profile. Any other value is a mistake: it says so once and
 * the program runs without profiling, as with any invalid setting. */
static int Disabled(void) {
  static const char* const kTrue[] = {"1", "true", "yes", "on"};
  static const char* const kFalse[] = {"", "0", "false", "no", "off"};
  static int warned;
  const char* v = getenv("WARPSCOPE_DISABLE");
  if (v == NULL || IsOneOf(v, kFalse, sizeof kFalse / sizeof kFalse[0])) return 0;
  if (IsOneOf(v, kTrue, sizeof kTrue / sizeof kTrue[0])) return 1;
  if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) {
    fprintf(stderr,
            "warpscope: WARPSCOPE_DISABLE='%s' is not 1/true/yes/on or 0/false/no/off; running "
            "without profiling\n",
            v);
  }
  return 1;
}

__attribute__((constructor)) static void WarpscopeShimInit(void) {
  if (Disabled()) return;
  g_ctor_pid = getpid();
  FindSelf();
  if (g_self_path[0] == '\0') return;
  setenv("CUDA_INJECTION64_PATH", g_self_path, 0);
  setenv("NVTX_INJECTION64_PATH", g_self_path, 0);
}

/* Loads the core from the shim's directory (or WARPSCOPE_CORE_PATH) once; NULL when it cannot,
 * after one line that says why and what to do. A library without the core's entry point
 * (the shim itself, or an unrelated one) would otherwise disable profiling silently. */
static void* Core(void) {
  void* core;
  pthread_mutex_lock(&g_load_lock);
  if (g_core == NULL && !g_core_failed) {
    char path[4096];
    const char* override = getenv("WARPSCOPE_CORE_PATH");
    const int overridden = override != NULL && override[0] != '\0';
    FindSelf();
    if (overridden) {
      snprintf(path, sizeof path, "%s", override);
    } else {
      const char* slash = strrchr(g_self_path, '/');
      int dir_len = slash ? (int)(slash - g_self_path) : 0;
      snprintf(path, sizeof path, "%.*s%slibwarpscope_core.so", dir_len, g_self_path,
               dir_len ? "/" : "");
    }
    core = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (core == NULL) {
      const char* err = dlerror();
      fprintf(stderr, "warpscope: cannot load %s (%s); %s; running without profiling\n", path,
              err ? err : "unknown error",
              overridden ? "point WARPSCOPE_CORE_PATH at libwarpscope_core.so, or unset it"
                         : "rebuild or reinstall warpscope (libwarpscope_core.so goes beside "
                           "libwarpscope.so)");
      g_core_failed = 1;
    } else if (dlsym(core, "warpscope_core_initialize_injection") == NULL) {
      if (dlsym(core, "warpscope_shim_constructor_pid") != NULL) {
        fprintf(stderr,
                "warpscope: %s%s is libwarpscope.so, the shim, not the core; point "
                "WARPSCOPE_CORE_PATH at libwarpscope_core.so (beside it), or unset it; running "
                "without profiling\n",
                overridden ? "WARPSCOPE_CORE_PATH=" : "", path);
      } else {
        fprintf(stderr,
                "warpscope: %s%s is not warpscope's core library (no "
                "warpscope_core_initialize_injection in it); %s; running without profiling\n",
                overridden ? "WARPSCOPE_CORE_PATH=" : "", path,
                overridden ? "point WARPSCOPE_CORE_PATH at libwarpscope_core.so, or unset it"
                           : "rebuild or reinstall warpscope");
      }
      dlclose(core);
      g_core_failed = 1;
    } else {
      g_core = core;
      __atomic_store_n(&g_before_exit, (BeforeExitFn)dlsym(core, "warpscope_core_before_exit"),
                       __ATOMIC_RELEASE);
    }
  }
  core = g_core;
  pthread_mutex_unlock(&g_load_lock);
  return core;
}

typedef int (*InitFn)(void);
typedef int (*NvtxInitFn)(void*);

WS_EXPORT int InitializeInjection(void) {
  void* core;
  InitFn fn;
  if (Disabled()) return 1;
  core = Core();
  if (core == NULL) return 1; /* 1: the driver carries on; we simply do nothing. */
  fn = (InitFn)dlsym(core, "warpscope_core_initialize_injection");
  return fn ? fn() : 1;
}

static int ForwardNvtx(const char* symbol, void* arg) {
  void* core;
  NvtxInitFn fn;
  if (Disabled()) return 0;
  core = Core();
  if (core == NULL) return 0;
  fn = (NvtxInitFn)dlsym(core, symbol);
  return fn ? fn(arg) : 0;
}

WS_EXPORT int InitializeInjectionNvtx2(void* get_export_table) {
  return ForwardNvtx("warpscope_core_initialize_nvtx2", get_export_table);
}
WS_EXPORT int InitializeInjectionNvtx(void* get_export_table) {
  return ForwardNvtx("warpscope_core_initialize_nvtx", get_export_table);
}
WS_EXPORT int InitializeInjectionNvtxExtension(void* ext_info) {
  return ForwardNvtx("warpscope_core_initialize_nvtx_extension", ext_info);
}

/* _exit and _Exit skip atexit handlers, so a program that ends with them (Python's
 * os._exit, a fast exit after a job is done) would leave its trace without its last events
 * and ending. The core closes the trace first, on its own thread, and this waits a bounded
 * time (async-signal-safe here: _exit may be called from a signal handler). Forked children,
 * processes without a session and calls after the trace is closed return at once. */
WS_EXPORT __attribute__((noreturn)) void _exit(int status) {
  BeforeExitFn before_exit = __atomic_load_n(&g_before_exit, __ATOMIC_ACQUIRE);
  if (before_exit != NULL) before_exit();
  for (;;) syscall(SYS_exit_group, status);
}
WS_EXPORT __attribute__((noreturn)) void _Exit(int status) { _exit(status); }

/* The pid the constructor ran in (tests; forks inherit it, so differs from getpid()). */
WS_EXPORT int warpscope_shim_constructor_pid(void) { return (int)g_ctor_pid; }
