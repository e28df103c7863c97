# PC sampling collector (included by collectors/collectors.cmake, or by the tests when the
# collectors are not configured). warpscope_pc_sampling_pure: settings, translation,
# controller and session listener, CUPTI-free and unit-tested with a fake API.
# warpscope_pc_sampling: the CUPTI wrapper and the collector factory, linked into
# libwarpscope_core.so.
if(NOT TARGET warpscope_pc_sampling_pure)
  warpscope_hidden_library(warpscope_pc_sampling_pure
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/pc_sampling_config.cc
            ${CMAKE_CURRENT_LIST_DIR}/pc_sample_translation.cc
            ${CMAKE_CURRENT_LIST_DIR}/pc_sampling_call_logger.cc
            ${CMAKE_CURRENT_LIST_DIR}/pc_sampling_controller.cc
            ${CMAKE_CURRENT_LIST_DIR}/pc_sampling_collector.cc
    LINK warpscope_writer Threads::Threads)
endif()

if(NOT TARGET warpscope_pc_sampling AND TARGET warpscope_core)
  warpscope_hidden_library(warpscope_pc_sampling CUPTI PRIVATE
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/cupti_pc_sampling.cc LINK warpscope_pc_sampling_pure)
endif()
