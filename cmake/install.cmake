# make install PREFIX=...: header, both libraries, the tool, memspace.pc and a CMake package; with the benchmarks,
# their helper programs (libexec/memspace) and scripts (share/memspace), so an installed `memspace bench` runs.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(FILES include/memspace.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS memspace memspace_static EXPORT memspaceTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS memspace_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET memspace_debug) # the preloadable library with every heap check on (docs/heap.md)
  install(TARGETS memspace_debug LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(EXPORT memspaceTargets NAMESPACE memspace:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memspace)
configure_package_config_file(cmake/memspaceConfig.cmake.in ${CMAKE_BINARY_DIR}/memspaceConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memspace)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/memspaceConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/memspaceConfig.cmake ${CMAKE_BINARY_DIR}/memspaceConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memspace)
# relocatable: prefix is found from the .pc file's own place, so `cmake --install --prefix DIR` works too
file(RELATIVE_PATH MEMSPACE_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" MEMSPACE_PC_TO_PREFIX "${MEMSPACE_PC_TO_PREFIX}") # ../.. : no "//" in the flags
configure_file(cmake/memspace.pc.in ${CMAKE_BINARY_DIR}/memspace.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/memspace.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(MEMSPACE_BUILD_BENCH)
  set(helpers ${CMAKE_INSTALL_LIBEXECDIR}/memspace)
  set(data ${CMAKE_INSTALL_DATADIR}/memspace)
  foreach(t heap_rptest heap_realloc_grow heap_larson heap_xmalloc heap_cache_scratch heap_cache_thrash heap_mstress
      heap_glibc_simple heap_glibc_thread heap_sh6bench heap_sh8bench heap_alloc_test heap_cxx_map heap_malloc_large
      heap_cgroup_purge spill_probe)
    install(TARGETS ${t} RUNTIME DESTINATION ${helpers}/bench)
  endforeach()
  foreach(t spaces_work_space spaces_work_malloc)
    if(TARGET ${t})
      install(TARGETS ${t} RUNTIME DESTINATION ${helpers})
    endif()
  endforeach()
  install(FILES bench/heap/churn.py RENAME heap_churn.py DESTINATION ${helpers}/bench)
  install(FILES bench/heap/numpy_churn.py RENAME heap_numpy_churn.py DESTINATION ${helpers}/bench)
  install(FILES bench/heap/http_load.py RENAME heap_http_load.py DESTINATION ${helpers}/bench)
  install(FILES bench/heap/r_growth.R RENAME heap_r_growth.R DESTINATION ${helpers}/bench)
  install(TARGETS heap_floor LIBRARY DESTINATION ${helpers}/bench) # the real programs' LD_PRELOAD floor
  install(FILES bench/plot.py bench/report.py DESTINATION ${data}/bench)
  install(DIRECTORY bench/plots DESTINATION ${data}/bench FILES_MATCHING PATTERN "*.py")
  install(FILES bench/spill/run.py bench/spill/mscgroup.py bench/spill/seed.py bench/spill/seed.R
    DESTINATION ${data}/bench/spill)
endif()
