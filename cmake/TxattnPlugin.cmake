# txattn_add_plugin(<name> SOURCES <files...> [LIBS <libs...>] [OUTPUT_DIR <dir>] [NO_INSTALL])
# Builds plugins/<name> as lib<...> "txattn_<name>.so" with hidden visibility into the plugin directory.
# Per-ISA sources get their flags with set_source_files_properties(... COMPILE_OPTIONS ...).
function(txattn_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIR" "SOURCES;LIBS" ${ARGN})
  set(target "txattn_plugin_${name}")
  add_library(${target} MODULE ${ARG_SOURCES})
  target_include_directories(${target} PRIVATE "${PROJECT_SOURCE_DIR}/include")
  if(ARG_LIBS)
    target_link_libraries(${target} PRIVATE ${ARG_LIBS})
  endif()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR "${TXATTN_PLUGIN_BUILD_DIR}")
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "" OUTPUT_NAME "txattn_${name}"
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIR}")
  target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  # The loader refuses plugin files and directories that group or others can write; a umask of 002
  # would make them so in the build tree.
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND chmod go-w "$<TARGET_FILE:${target}>" "$<TARGET_FILE_DIR:${target}>" VERBATIM)
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION "${TXATTN_PLUGIN_INSTALL_DIR}")
  endif()
endfunction()
