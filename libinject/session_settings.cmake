# The session's CUPTI-free parts that the launcher checks flags with (settings, capture
# windows, the slow-step rule, the trace header's environment, the trace's name). Included by
# inject.cmake and, in the analyzers-only configuration (cmake/AnalyzersOnly.cmake), on its
# own. capture_window.h speaks in trace records, whose enums come from the generated field
# header.
warpscope_hidden_library(warpscope_session_settings
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/config.cc
          ${CMAKE_CURRENT_LIST_DIR}/capture_window.cc
          ${CMAKE_CURRENT_LIST_DIR}/slow_step.cc
          ${CMAKE_CURRENT_LIST_DIR}/header_environment.cc
          ${CMAKE_CURRENT_LIST_DIR}/trace_name.cc
  LINK warpscope_writer)
