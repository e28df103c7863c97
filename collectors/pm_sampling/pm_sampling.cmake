# PM sampling collector (included by collectors/collectors.cmake, or by the tests when the
# collectors are not configured). warpscope_pm_sampling_pure: settings, controller and
# session listener, CUPTI-free and unit-tested with a fake API. warpscope_pm_sampling: the
# CUPTI wrapper and the collector factory, linked into libwarpscope_core.so.
if(NOT TARGET warpscope_pm_sampling_pure)
  add_library(warpscope_pm_sampling_pure STATIC
    ${CMAKE_CURRENT_LIST_DIR}/pm_sampling_config.cc
    ${CMAKE_CURRENT_LIST_DIR}/pm_sampling_controller.cc
    ${CMAKE_CURRENT_LIST_DIR}/pm_sampling_collector.cc)
  target_include_directories(warpscope_pm_sampling_pure PUBLIC ${PROJECT_SOURCE_DIR})
  set_target_properties(warpscope_pm_sampling_pure PROPERTIES CXX_VISIBILITY_PRESET hidden
                        VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(warpscope_pm_sampling_pure PUBLIC warpscope_writer Threads::Threads ${CMAKE_DL_LIBS})
endif()

if(NOT TARGET warpscope_pm_sampling AND TARGET warpscope_core)
  add_library(warpscope_pm_sampling STATIC ${CMAKE_CURRENT_LIST_DIR}/cupti_pm_sampling.cc)
  target_include_directories(warpscope_pm_sampling PRIVATE ${WARPSCOPE_CUPTI_INCLUDE_DIR}
                             ${WARPSCOPE_CUDA_INCLUDE_DIRS})
  set_target_properties(warpscope_pm_sampling PROPERTIES CXX_VISIBILITY_PRESET hidden
                        VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(warpscope_pm_sampling PUBLIC warpscope_pm_sampling_pure)
endif()
