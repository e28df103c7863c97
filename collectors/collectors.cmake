# Collectors: the CUPTI-free parts (translation, controllers; unit-tested without a GPU) and
# the CUPTI-facing parts linked into libwarpscope_core.so. The PM and PC sampling collectors
# bring their own *.cmake; the core's one list of collectors (libinject/collector_registry.cc)
# names every collector's factory, so their libraries link like any other.

include(${CMAKE_CURRENT_LIST_DIR}/collectors_names.cmake)
warpscope_hidden_library(warpscope_collectors_pure CUPTI PUBLIC
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/activity/activity_controller.cc
          ${CMAKE_CURRENT_LIST_DIR}/activity/activity_translator.cc
          ${CMAKE_CURRENT_LIST_DIR}/memory/live_blocks.cc
          ${CMAKE_CURRENT_LIST_DIR}/nvtx/nvtx_capture_range.cc
          ${CMAKE_CURRENT_LIST_DIR}/nccl/nccl_calls.cc
  LINK warpscope_kernel_names warpscope_writer)

warpscope_hidden_library(warpscope_collectors_cupti CUPTI PUBLIC
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/activity/cupti_activity.cc
          ${CMAKE_CURRENT_LIST_DIR}/callbacks/cupti_callbacks.cc
          ${CMAKE_CURRENT_LIST_DIR}/callbacks/memory_call_params.cc
          ${CMAKE_CURRENT_LIST_DIR}/nccl/nccl_collector.cc
          ${CMAKE_CURRENT_LIST_DIR}/nvtx/cupti_nvtx_injection.cc
          ${CMAKE_CURRENT_LIST_DIR}/common/cupti_util.cc
  LINK warpscope_collectors_pure warpscope_session_pure warpscope_writer)

# Collectors owned by other folders.
file(GLOB _warpscope_optional_collectors CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_LIST_DIR}/pm_sampling/*.cmake ${CMAKE_CURRENT_LIST_DIR}/pc_sampling/*.cmake
     ${CMAKE_CURRENT_LIST_DIR}/stacks/*.cmake ${CMAKE_CURRENT_LIST_DIR}/api_calls/*.cmake)
foreach(_f IN LISTS _warpscope_optional_collectors)
  include(${_f})
endforeach()
target_link_libraries(warpscope_core PRIVATE warpscope_pm_sampling warpscope_pc_sampling
                      warpscope_api_calls)
