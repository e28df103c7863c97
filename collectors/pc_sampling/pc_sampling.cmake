# PC sampling collector (included by collectors/collectors.cmake, or by the tests when the
# collectors are not configured). warpscope_pc_sampling_pure: settings, translation,
# controller and session listener, CUPTI-free and unit-tested with a fake API.
# warpscope_pc_sampling: the CUPTI wrapper and the collector factory, linked into
# libwarpscope_core.so.
if(NOT TARGET warpscope_pc_sampling_pure)
  add_library(warpscope_pc_sampling_pure STATIC
    ${CMAKE_CURRENT_LIST_DIR}/pc_sampling_config.cc
    ${CMAKE_CURRENT_LIST_DIR}/pc_sample_translation.cc
    ${CMAKE_CURRENT_LIST_DIR}/pc_sampling_call_logger.cc
    ${CMAKE_CURRENT_LIST_DIR}/pc_sampling_controller.cc
    ${CMAKE_CURRENT_LIST_DIR}/pc_sampling_collector.cc)
  target_include_directories(warpscope_pc_sampling_pure PUBLIC ${PROJECT_SOURCE_DIR})
  set_target_properties(warpscope_pc_sampling_pure PROPERTIES CXX_VISIBILITY_PRESET hidden
                        VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(warpscope_pc_sampling_pure PUBLIC warpscope_writer Threads::Threads)
endif()

if(NOT TARGET warpscope_pc_sampling AND TARGET warpscope_core)
  add_library(warpscope_pc_sampling STATIC ${CMAKE_CURRENT_LIST_DIR}/cupti_pc_sampling.cc)
  target_include_directories(warpscope_pc_sampling PRIVATE ${WARPSCOPE_CUPTI_INCLUDE_DIR}
                             ${WARPSCOPE_CUDA_INCLUDE_DIRS})
  set_target_properties(warpscope_pc_sampling PROPERTIES CXX_VISIBILITY_PRESET hidden
                        VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(warpscope_pc_sampling PUBLIC warpscope_pc_sampling_pure)
endif()
