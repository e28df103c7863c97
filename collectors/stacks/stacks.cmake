# Call stacks (included by collectors/collectors.cmake, or by the analyzers-only configuration
# for its settings). warpscope_stacks_pure: settings, the CPython frame reader and stack
# interning, CUPTI-free and unit-tested. The API calls collector (collectors/api_calls) takes
# the stacks in CUPTI's API callbacks.
if(NOT TARGET warpscope_stacks_pure)
  warpscope_hidden_library(warpscope_stacks_pure
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/stack_config.cc
            ${CMAKE_CURRENT_LIST_DIR}/python_frames.cc
            ${CMAKE_CURRENT_LIST_DIR}/stack_table.cc
            ${CMAKE_CURRENT_LIST_DIR}/elf_symbols.cc
    LINK warpscope_writer Threads::Threads ${CMAKE_DL_LIBS})
endif()
