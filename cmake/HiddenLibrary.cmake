# warpscope_hidden_library(NAME SOURCES src... [LINK lib...] [CUPTI PUBLIC|PRIVATE])
#
# A static library of code that goes into libwarpscope_core.so, inside the profiled program:
# its symbols are hidden, so none of them can clash with the host program's own. It includes
# from the source root; CUPTI adds the CUPTI and CUDA headers (PUBLIC where its own headers
# include them); LINK names what it links, publicly.
function(warpscope_hidden_library name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "CUPTI" "SOURCES;LINK")
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  if(ARG_CUPTI)
    target_include_directories(${name} ${ARG_CUPTI} ${WARPSCOPE_CUPTI_INCLUDE_DIR}
                               ${WARPSCOPE_CUDA_INCLUDE_DIRS})
  endif()
  set_target_properties(${name} PROPERTIES CXX_VISIBILITY_PRESET hidden
                        VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${name} PUBLIC ${ARG_LINK})
endfunction()
