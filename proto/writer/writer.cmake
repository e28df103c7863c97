# The trace writer: protobuf wire-format encoder + buffered file writer. It goes inside the
# injected libwarpscope.so, so it links only the C++ standard library and Threads. Its field
# numbers, records and encoders are generated from trace.proto (proto/CMakeLists.txt).
add_library(warpscope_writer STATIC
  ${CMAKE_CURRENT_LIST_DIR}/trace_writer.cc
  ${CMAKE_CURRENT_LIST_DIR}/trace_writer.h
  ${CMAKE_CURRENT_LIST_DIR}/trace_records.h
  ${CMAKE_CURRENT_LIST_DIR}/wire_format.h
  ${CMAKE_CURRENT_LIST_DIR}/packet_framing.h
  ${CMAKE_CURRENT_LIST_DIR}/record_writers.cc
  ${CMAKE_CURRENT_LIST_DIR}/chunk_pool.cc
  ${CMAKE_CURRENT_LIST_DIR}/string_interning.h
  ${CMAKE_CURRENT_LIST_DIR}/string_interning.cc
  ${CMAKE_CURRENT_LIST_DIR}/writer_stats.h
  ${CMAKE_CURRENT_LIST_DIR}/writer_stats.cc
  ${CMAKE_CURRENT_LIST_DIR}/stats_table.h
  ${CMAKE_CURRENT_LIST_DIR}/stats_table.cc
  ${CMAKE_CURRENT_LIST_DIR}/writer_thread.cc
  ${CMAKE_CURRENT_LIST_DIR}/kept_definitions.h
  ${CMAKE_CURRENT_LIST_DIR}/kept_definitions.cc
  ${CMAKE_CURRENT_LIST_DIR}/next_file.cc
  ${CMAKE_CURRENT_LIST_DIR}/flight_ring.cc
  ${CMAKE_CURRENT_LIST_DIR}/writer_impl.h
  ${CMAKE_CURRENT_LIST_DIR}/output_name.h
  ${CMAKE_CURRENT_LIST_DIR}/output_name.cc
  ${WARPSCOPE_TRACE_GENERATED})
set_target_properties(warpscope_writer PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(warpscope_writer PUBLIC ${PROJECT_SOURCE_DIR} ${WARPSCOPE_TRACE_FIELDS_DIR})
target_compile_features(warpscope_writer PUBLIC cxx_std_20)
target_link_libraries(warpscope_writer PUBLIC Threads::Threads)
