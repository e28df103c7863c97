# WARPSCOPE_ANALYZERS_ONLY: the CUPTI-free libraries that the analyzers and the launcher link,
# in place of libinject/ and collectors/ (whose other parts need the CUDA toolkit), each
# defined once in its own folder:
#   warpscope_kernel_names:     kernel name demangling as the writer does it (kernel_names.h)
#   warpscope_session_settings: the library's settings and capture windows (the launcher checks
#                               flags with the library's own parsers)
#   PM and PC sampling and stacks settings, from their own *.cmake (their CUPTI parts need warpscope_core)
include(${PROJECT_SOURCE_DIR}/collectors/collectors_names.cmake)
include(${PROJECT_SOURCE_DIR}/libinject/session_settings.cmake)

include(${PROJECT_SOURCE_DIR}/collectors/pm_sampling/pm_sampling.cmake)
include(${PROJECT_SOURCE_DIR}/collectors/pc_sampling/pc_sampling.cmake)
include(${PROJECT_SOURCE_DIR}/collectors/stacks/stacks.cmake)

# The tests of what this configuration builds (tests/CMakeLists.txt reads the list).
# -DWARPSCOPE_ANALYZER_TEST_DIRS="a;b" picks fewer (CI: those that run the CLI and the Python
# package; the rest test code the full build tests too).
if(NOT DEFINED WARPSCOPE_ANALYZER_TEST_DIRS)
  set(WARPSCOPE_ANALYZER_TEST_DIRS reader summary measures cli diff fixtures fuzz stalls tail
      writer python)
endif()
if(WARPSCOPE_CUDA_OCCUPANCY_INCLUDE_DIR)
  list(APPEND WARPSCOPE_ANALYZER_TEST_DIRS occupancy)  # theoretical figures need the header
endif()

# The toolkit's headers may still be on the compiler's default path (/usr/local/include):
# the two analyzer files that could use them must not, so that this build behaves as it
# would where there are none. Called once analyzers/ is added.
function(warpscope_analyzers_without_cuda)
  set(_defs WARPSCOPE_WITHOUT_CUPTI)
  if(NOT WARPSCOPE_CUDA_OCCUPANCY_INCLUDE_DIR)
    list(APPEND _defs WARPSCOPE_WITHOUT_CUDA_OCCUPANCY)
  endif()
  set_source_files_properties(${PROJECT_SOURCE_DIR}/analyzers/model/cupti_host.cc
                              ${PROJECT_SOURCE_DIR}/analyzers/measures/occupancy_calculator.cc
                              DIRECTORY ${PROJECT_SOURCE_DIR}/analyzers
                              PROPERTIES COMPILE_DEFINITIONS "${_defs}")
endfunction()
