# PM sampling collector (included by collectors/collectors.cmake, or by the tests when the
# collectors are not configured). warpscope_pm_sampling_pure: settings, controller and
# session listener, CUPTI-free and unit-tested with a fake API. warpscope_pm_sampling: the
# CUPTI wrapper and the collector factory, linked into libwarpscope_core.so.
if(NOT TARGET warpscope_pm_sampling_pure)
  warpscope_hidden_library(warpscope_pm_sampling_pure
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/pm_sampling_config.cc
            ${CMAKE_CURRENT_LIST_DIR}/pm_sampling_controller.cc
            ${CMAKE_CURRENT_LIST_DIR}/pm_sampling_collector.cc
    LINK warpscope_writer Threads::Threads ${CMAKE_DL_LIBS})
endif()

if(NOT TARGET warpscope_pm_sampling AND TARGET warpscope_core)
  warpscope_hidden_library(warpscope_pm_sampling CUPTI PRIVATE
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/cupti_pm_sampling.cc LINK warpscope_pm_sampling_pure)
endif()
