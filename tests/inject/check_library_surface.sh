#!/usr/bin/env bash
# Checks the injected libraries' dependencies (readelf -d NEEDED) and exported symbols
# (nm -D --defined-only) against allow-lists, and that the shim is harmless in a program
# that never uses CUDA. Usage: check_library_surface.sh SHIM CORE
set -u
shim=$1; core=$2; fail=0
check_needed() {  # lib allowed-regex
  local lib=$1 allowed=$2
  while read -r dep; do
    if ! [[ $dep =~ $allowed ]]; then echo "FAIL: $(basename "$lib") needs $dep"; fail=1; fi
  done < <(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
}
check_exports() {  # lib allowed-regex
  local lib=$1 allowed=$2
  while read -r sym; do
    if ! [[ $sym =~ $allowed ]]; then echo "FAIL: $(basename "$lib") exports $sym"; fail=1; fi
  done < <(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//')
}
check_needed "$shim" '^(libc\.so\.6|libdl\.so\.2|libpthread\.so\.0)$'
check_needed "$core" '^(libc\.so\.6|libdl\.so\.2|libpthread\.so\.0|libm\.so\.6|librt\.so\.1|ld-linux-x86-64\.so\.2|libcupti\.so\.13)$'
check_exports "$shim" '^(InitializeInjection|InitializeInjectionNvtx2|InitializeInjectionNvtx|InitializeInjectionNvtxExtension|warpscope_shim_constructor_pid)$'
check_exports "$core" '^(InitializeInjection|InitializeInjectionNvtx2|InitializeInjectionNvtx|InitializeInjectionNvtxExtension|warpscope_core_initialize_injection|warpscope_core_initialize_nvtx2|warpscope_core_initialize_nvtx|warpscope_core_initialize_nvtx_extension)$'
if nm -D "$core" | grep -qiE 'protobuf|absl'; then echo "FAIL: core references protobuf/abseil"; fail=1; fi
# The shim in a program without CUDA: no output, same exit code, env set for children.
out=$(LD_PRELOAD=$shim sh -c 'echo "$CUDA_INJECTION64_PATH"' 2>&1)
if [[ $out != "$(realpath "$shim")" && $out != "$shim" ]]; then echo "FAIL: shim did not set CUDA_INJECTION64_PATH ($out)"; fail=1; fi
if ! LD_PRELOAD=$shim true; then echo "FAIL: shim breaks /bin/true"; fail=1; fi
# An explicit CUDA_INJECTION64_PATH is kept.
out=$(LD_PRELOAD=$shim CUDA_INJECTION64_PATH=/x sh -c 'echo "$CUDA_INJECTION64_PATH"')
if [[ $out != /x ]]; then echo "FAIL: shim overrode CUDA_INJECTION64_PATH"; fail=1; fi
[[ $fail == 0 ]] && echo "library surface OK"
exit $fail
