# The build holds the actors' layering: a library's own sources may include
# only the project headers of its layer (cmake/check_includes.cmake), checked
# before the library compiles, so a wrong include fails the build.
set(LIFEBOAT_CHECK_INCLUDES_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/check_includes.cmake)

# lifeboat_check_includes(<target> FILES <sources and headers> ALLOWED <prefixes>)
# The allowed prefixes are also kept as the global property
# lifeboat_layer_<target>, for the tests that prove a violation is rejected.
function(lifeboat_check_includes target)
  cmake_parse_arguments(L "" "" "FILES;ALLOWED" ${ARGN})
  string(REPLACE ";" "|" files "${L_FILES}")
  string(REPLACE ";" "|" allowed "${L_ALLOWED}")
  set_property(GLOBAL PROPERTY lifeboat_layer_${target} "${allowed}")
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/${target}_includes.stamp)
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DLAYER=${target} -DROOT=${PROJECT_SOURCE_DIR} -DFILES=${files}
            -DALLOWED=${allowed} -DSTAMP=${stamp} -P ${LIFEBOAT_CHECK_INCLUDES_SCRIPT}
    DEPENDS ${L_FILES} ${LIFEBOAT_CHECK_INCLUDES_SCRIPT}
    COMMENT "Checking that ${target} includes only its layer's headers"
    VERBATIM)
  add_custom_target(${target}_includes DEPENDS ${stamp})
  add_dependencies(${target} ${target}_includes)
endfunction()
