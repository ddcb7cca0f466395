# Fails when a source file includes a project header outside its layer.
# Run as a script by lifeboat_check_includes (cmake/lifeboat_layering.cmake):
#   cmake -DLAYER=<library> -DROOT=<source dir> -DFILES=<a|b|...>
#         -DALLOWED=<prefix|prefix|...> [-DSTAMP=<file>] -P check_includes.cmake
# Every `#include "..."` (the project's own headers are included from the
# project root with quotes; system and third-party ones with <>) must start
# with one of the ALLOWED prefixes: a folder ("messages/") or one file
# ("actors/atoms.hpp"). A header-only include would not fail a link, so this
# check is what holds the layering for headers.
foreach(var LAYER ROOT FILES ALLOWED)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_includes.cmake: ${var} is not set")
  endif()
endforeach()
string(REPLACE "|" ";" files "${FILES}")
string(REPLACE "|" ";" allowed "${ALLOWED}")

set(violations "")
foreach(file IN LISTS files)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  file(RELATIVE_PATH shown "${ROOT}" "${file}")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*$" "\\1" header "${line}")
    set(inside FALSE)
    foreach(prefix IN LISTS allowed)
      string(FIND "${header}" "${prefix}" at)
      if(at EQUAL 0)
        set(inside TRUE)
        break()
      endif()
    endforeach()
    if(NOT inside)
      string(APPEND violations "\n  ${shown} includes \"${header}\"")
    endif()
  endforeach()
endforeach()

if(violations)
  string(REPLACE ";" ", " shown_allowed "${allowed}")
  message(FATAL_ERROR "layering: ${LAYER} may include only ${shown_allowed}; outside its layer:"
                      "${violations}")
endif()
if(DEFINED STAMP)
  file(TOUCH "${STAMP}")
endif()
