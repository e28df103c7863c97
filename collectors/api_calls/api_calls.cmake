# The API calls collector (included by collectors/collectors.cmake). warpscope_api_calls_pure:
# the per-thread call log and the recorder, CUPTI-free and unit-tested. warpscope_api_calls:
# the collector that runs them in CUPTI's API callbacks, linked into libwarpscope_core.so.
if(NOT TARGET warpscope_api_calls_pure)
  warpscope_hidden_library(warpscope_api_calls_pure CUPTI PUBLIC
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/call_log.cc
            ${CMAKE_CURRENT_LIST_DIR}/api_call_recorder.cc
            ${CMAKE_CURRENT_LIST_DIR}/memory_call_log.cc
    LINK warpscope_stacks_pure warpscope_collectors_pure warpscope_writer Threads::Threads)
endif()

if(NOT TARGET warpscope_api_calls AND TARGET warpscope_core)
  warpscope_hidden_library(warpscope_api_calls CUPTI PRIVATE
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/api_calls_collector.cc
    LINK warpscope_api_calls_pure warpscope_collectors_cupti warpscope_writer)
endif()
