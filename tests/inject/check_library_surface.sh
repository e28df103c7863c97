#!/usr/bin/env bash
# Checks the injected libraries' dependencies (readelf -d NEEDED) and exported symbols
# (nm -D --defined-only) against allow-lists, that the core holds every collector its
# registry names, and that the shim is harmless in a program that never uses CUDA.
# Usage: check_library_surface.sh SHIM CORE [COLLECTOR_REGISTRY_CC]
set -u
shim=$1; core=$2; fail=0
for tool in readelf nm; do
  command -v $tool >/dev/null || { echo "FAIL: $tool not found"; exit 1; }
done
for lib in "$shim" "$core"; do
  [[ -f $lib ]] || { echo "FAIL: no library at $lib"; exit 1; }
done
check_needed() {  # lib allowed-regex; an empty list is a failure (a check that saw nothing)
  local lib=$1 allowed=$2 seen=0
  while read -r dep; do
    seen=1
    if ! [[ $dep =~ $allowed ]]; then echo "FAIL: $(basename "$lib") needs $dep"; fail=1; fi
  done < <(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  [[ $seen == 1 ]] || { echo "FAIL: no NEEDED entries read from $(basename "$lib")"; fail=1; }
}
check_exports() {  # lib allowed-regex
  local lib=$1 allowed=$2 seen=0
  while read -r sym; do
    seen=1
    if ! [[ $sym =~ $allowed ]]; then echo "FAIL: $(basename "$lib") exports $sym"; fail=1; fi
  done < <(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//')
  [[ $seen == 1 ]] || { echo "FAIL: no exported symbols read from $(basename "$lib")"; fail=1; }
}
check_needed "$shim" '^(libc\.so\.6|libdl\.so\.2|libpthread\.so\.0)$'
check_needed "$core" '^(libc\.so\.6|libdl\.so\.2|libpthread\.so\.0|libm\.so\.6|librt\.so\.1|ld-linux-x86-64\.so\.2|libcupti\.so\.13)$'
check_exports "$shim" '^(InitializeInjection|InitializeInjectionNvtx2|InitializeInjectionNvtx|InitializeInjectionNvtxExtension|_exit|_Exit|warpscope_shim_constructor_pid)$'
check_exports "$core" '^(InitializeInjection|InitializeInjectionNvtx2|InitializeInjectionNvtx|InitializeInjectionNvtxExtension|warpscope_core_initialize_injection|warpscope_core_initialize_nvtx2|warpscope_core_initialize_nvtx|warpscope_core_initialize_nvtx_extension|warpscope_core_before_exit)$'
if nm -D "$core" | grep -qiE 'protobuf|absl|_ZN3re2'; then echo "FAIL: core references protobuf/abseil/RE2"; fail=1; fi
# Every factory the registry names is linked into the core (the registry is all that pulls
# the collectors' objects in).
if [[ -n ${3:-} ]]; then
  factories=$(grep -oE '&Make[A-Za-z]+Collector' "$3" | tr -d '&')
  [[ -n $factories ]] || { echo "FAIL: no collector factories read from $3"; fail=1; }
  defined=$(nm -C --defined-only "$core")
  for f in $factories; do
    grep -qE " warpscope::$f\(" <<<"$defined" || { echo "FAIL: core lacks collector factory $f"; fail=1; }
  done
fi
# The shim in a program without CUDA: no output, same exit code, env set for children.
out=$(LD_PRELOAD=$shim sh -c 'echo "$CUDA_INJECTION64_PATH"' 2>&1)
if [[ $out != "$(realpath "$shim")" && $out != "$shim" ]]; then echo "FAIL: shim did not set CUDA_INJECTION64_PATH ($out)"; fail=1; fi
if ! LD_PRELOAD=$shim true; then echo "FAIL: shim breaks /bin/true"; fail=1; fi
# _exit/_Exit go through the shim (it closes a trace first, where there is one) and keep
# the status; without a session they end the process at once.
LD_PRELOAD=$shim python3 -c 'import os; os._exit(7)' 2>/dev/null
rc=$?
if [[ $rc != 7 ]]; then echo "FAIL: os._exit(7) under the shim ended with $rc"; fail=1; fi
# ...and says nothing there.
out=$(LD_PRELOAD=$shim sh -c 'echo hello' 2>&1)
if [[ $out != hello ]]; then echo "FAIL: shim printed in a program without CUDA: $out"; fail=1; fi
# WARPSCOPE_DISABLE=1: the shim sets nothing.
out=$(env -u CUDA_INJECTION64_PATH WARPSCOPE_DISABLE=1 LD_PRELOAD=$shim sh -c 'echo "[$CUDA_INJECTION64_PATH]"')
if [[ $out != "[]" ]]; then echo "FAIL: WARPSCOPE_DISABLE=1 still set CUDA_INJECTION64_PATH ($out)"; fail=1; fi
# An explicit CUDA_INJECTION64_PATH is kept.
out=$(LD_PRELOAD=$shim CUDA_INJECTION64_PATH=/x sh -c 'echo "$CUDA_INJECTION64_PATH"')
if [[ $out != /x ]]; then echo "FAIL: shim overrode CUDA_INJECTION64_PATH"; fail=1; fi
[[ $fail == 0 ]] && echo "library surface OK"
exit $fail
