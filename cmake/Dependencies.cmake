# Finds warpscope's fixed dependencies: protobuf, abseil, RE2, GoogleTest, Google Benchmark and
# the CUDA 13.0 toolkit (CUPTI, NVTX headers, the driver stub for linking).

find_package(Threads REQUIRED)

if(WARPSCOPE_STATIC_DEPS)
  set(Protobuf_USE_STATIC_LIBS ON)
endif()
find_package(Protobuf REQUIRED)
find_package(absl REQUIRED)
if(WARPSCOPE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

# Debian's abseil targets name the shared objects; point them at the static archives that sit
# beside them so that executables carry abseil with them.
if(WARPSCOPE_STATIC_DEPS)
  get_property(_absl_targets DIRECTORY PROPERTY IMPORTED_TARGETS)
  foreach(_t IN LISTS _absl_targets)
    if(_t MATCHES "^absl::")
      get_target_property(_type ${_t} TYPE)
      if(_type STREQUAL "SHARED_LIBRARY")
        get_target_property(_loc ${_t} IMPORTED_LOCATION_NONE)
        string(REGEX REPLACE "\\.so(\\.[0-9.]+)?$" ".a" _static "${_loc}")
        if(EXISTS "${_static}")
          set_target_properties(${_t} PROPERTIES IMPORTED_LOCATION_NONE "${_static}"
                                                 IMPORTED_LOCATION "${_static}")
        endif()
      endif()
    endif()
  endforeach()
endif()

# RE2 (linear-time regular expressions) for the analyzers' --kernel filters; only the
# analysis library links it, never the injected library. Debian ships no CMake package for it.
# Like protobuf and abseil, executables carry the static archive when there is one.
find_path(WARPSCOPE_RE2_INCLUDE_DIR re2/re2.h REQUIRED)
if(WARPSCOPE_STATIC_DEPS)
  find_library(WARPSCOPE_RE2_LIBRARY NAMES libre2.a re2 REQUIRED)
else()
  find_library(WARPSCOPE_RE2_LIBRARY NAMES re2 REQUIRED)
endif()
add_library(warpscope_re2 UNKNOWN IMPORTED)
set_target_properties(warpscope_re2 PROPERTIES
  IMPORTED_LOCATION "${WARPSCOPE_RE2_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${WARPSCOPE_RE2_INCLUDE_DIR}"
  INTERFACE_LINK_LIBRARIES Threads::Threads)

if(WARPSCOPE_ANALYZERS_ONLY)
  # Never use the toolkit, even where one is installed: this build must also work where none is.
  set(CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit ON)
  # The header alone (cuda_occupancy.h is header-only host code) where a toolkit put it, when
  # asked: `pip install ./python` asks, so that the package computes theoretical occupancy as
  # the CLI built beside it does (the CI's analyzers-only build does not: it proves the build
  # where there is none).
  set(_occupancy_hints "")
  if(WARPSCOPE_FIND_CUDA_OCCUPANCY)
    set(_occupancy_hints $ENV{CUDA_HOME}/include $ENV{CUDA_PATH}/include
        /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include)
  endif()
  find_path(WARPSCOPE_CUDA_OCCUPANCY_INCLUDE_DIR cuda_occupancy.h HINTS ${_occupancy_hints}
            NO_DEFAULT_PATH)
  set(WARPSCOPE_CUDA_INCLUDE_DIRS "")
  if(WARPSCOPE_CUDA_OCCUPANCY_INCLUDE_DIR)
    set(WARPSCOPE_CUDA_INCLUDE_DIRS ${WARPSCOPE_CUDA_OCCUPANCY_INCLUDE_DIR})
  endif()
else()
find_package(CUDAToolkit REQUIRED)
set(WARPSCOPE_CUDA_INCLUDE_DIRS ${CUDAToolkit_INCLUDE_DIRS})
find_library(WARPSCOPE_CUPTI_LIBRARY NAMES cupti
             HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/extras/CUPTI/lib64
             REQUIRED)
find_path(WARPSCOPE_CUPTI_INCLUDE_DIR cupti.h
          HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/extras/CUPTI/include
          REQUIRED)
find_path(WARPSCOPE_NVTX_INCLUDE_DIR nvtx3/nvToolsExt.h HINTS ${CUDAToolkit_INCLUDE_DIRS} REQUIRED)
endif()

# Static C++ runtime for executables that must run on other distributions.
function(warpscope_portable_executable target)
  if(WARPSCOPE_STATIC_DEPS)
    target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
  endif()
endfunction()
