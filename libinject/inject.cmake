# The injected libraries:
#  * libwarpscope.so       — the LD_PRELOAD shim (C, libc/libdl/libpthread only, no CUPTI);
#  * libwarpscope_core.so  — session + collectors, links CUPTI by SONAME (libcupti.so.13),
#                            loaded by the shim from its own directory.
# Both hide every symbol but the injection entry points (version scripts; a ctest checks).

add_library(warpscope_shim SHARED ${CMAKE_CURRENT_LIST_DIR}/shim.c)
set_target_properties(warpscope_shim PROPERTIES
  OUTPUT_NAME warpscope
  C_VISIBILITY_PRESET hidden
  LINKER_LANGUAGE C
  LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/shim.map)
target_link_options(warpscope_shim PRIVATE
  -Wl,--version-script=${CMAKE_CURRENT_LIST_DIR}/shim.map -Wl,--no-undefined -Wl,-z,now)
target_link_libraries(warpscope_shim PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)

# Pure session code: the settings part (session_settings.cmake), the collector set, the
# driver version parser and the control channel's server; also linked by unit tests.
include(${CMAKE_CURRENT_LIST_DIR}/session_settings.cmake)
warpscope_hidden_library(warpscope_session_pure
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/collector_set.cc
          ${CMAKE_CURRENT_LIST_DIR}/driver_version.cc
          ${CMAKE_CURRENT_LIST_DIR}/control_channel.cc
  LINK warpscope_session_settings warpscope_writer)

add_library(warpscope_core SHARED
  ${CMAKE_CURRENT_LIST_DIR}/core_entry.cc
  ${CMAKE_CURRENT_LIST_DIR}/session.cc
  ${CMAKE_CURRENT_LIST_DIR}/session_control.cc
  ${CMAKE_CURRENT_LIST_DIR}/session_dumps.cc
  ${CMAKE_CURRENT_LIST_DIR}/session_signals.cc
  ${CMAKE_CURRENT_LIST_DIR}/session_watcher.cc
  ${CMAKE_CURRENT_LIST_DIR}/session_windows.cc
  ${CMAKE_CURRENT_LIST_DIR}/trace_header.cc
  ${CMAKE_CURRENT_LIST_DIR}/log.cc
  ${CMAKE_CURRENT_LIST_DIR}/collector_registry.cc)
set_target_properties(warpscope_core PROPERTIES
  OUTPUT_NAME warpscope_core
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON
  LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/core.map
  # CUPTI by SONAME: an already loaded libcupti.so.13 (PyTorch's wheel) is reused; else the
  # toolkit's, else one next to the core.
  BUILD_RPATH "$ORIGIN;/usr/local/cuda/lib64;/usr/local/cuda/extras/CUPTI/lib64;${CUDAToolkit_LIBRARY_DIR}"
  INSTALL_RPATH "$ORIGIN;/usr/local/cuda/lib64;/usr/local/cuda/extras/CUPTI/lib64")
target_compile_definitions(warpscope_core PRIVATE WARPSCOPE_VERSION="${PROJECT_VERSION}")
target_include_directories(warpscope_core PRIVATE ${PROJECT_SOURCE_DIR}
                           ${WARPSCOPE_CUPTI_INCLUDE_DIR} ${WARPSCOPE_CUDA_INCLUDE_DIRS})
target_link_options(warpscope_core PRIVATE
  -Wl,--version-script=${CMAKE_CURRENT_LIST_DIR}/core.map -Wl,--no-undefined -Wl,-z,now
  -static-libstdc++ -static-libgcc)
# The collectors (collectors.cmake) and the writer; no protobuf, no abseil. The registry
# (collector_registry.cc) names every collector's factory, so a plain link takes them all.
target_link_libraries(warpscope_core PRIVATE warpscope_collectors_cupti
                      warpscope_collectors_pure warpscope_session_pure warpscope_writer
                      ${WARPSCOPE_CUPTI_LIBRARY} ${CMAKE_DL_LIBS} Threads::Threads)

add_custom_target(warpscope_inject DEPENDS warpscope_shim warpscope_core)
