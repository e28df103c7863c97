# Kernel names demangled as the writer does (activity/kernel_names.h) and NVTX ranges built
# from push/pop records (nvtx/nvtx_range_builder.h): the collectors' parts that need no CUPTI,
# which the analyzers link too. Included by collectors.cmake and, in the analyzers-only
# configuration (cmake/AnalyzersOnly.cmake), on its own.
warpscope_hidden_library(warpscope_kernel_names
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/activity/kernel_names.cc
          ${CMAKE_CURRENT_LIST_DIR}/nvtx/nvtx_range_builder.cc
  LINK warpscope_writer)
