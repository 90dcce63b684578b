# ms_defines(OUT SYMBOL SOURCES...): 1 when a source defines SYMBOL (a definition starts a line and names it
# before '('), else 0. Shared by fuzz/CMakeLists.txt and tests/reliability/CMakeLists.txt to leave out the
# targets of parts that are not in src/ yet.
function(ms_defines out symbol)
  set(found 0)
  foreach(f ${ARGN})
    file(STRINGS ${f} hits REGEX "^[A-Za-z_].*[ *]${symbol}\\(")
    if(hits)
      set(found 1)
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()
