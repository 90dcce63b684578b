# make install PREFIX=...: header, both libraries, the tool, memspace.pc and a CMake package.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(FILES include/memspace.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS memspace memspace_static EXPORT memspaceTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS memspace_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT memspaceTargets NAMESPACE memspace:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memspace)
configure_package_config_file(cmake/memspaceConfig.cmake.in ${CMAKE_BINARY_DIR}/memspaceConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memspace)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/memspaceConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/memspaceConfig.cmake ${CMAKE_BINARY_DIR}/memspaceConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memspace)
# relocatable: prefix is found from the .pc file's own place, so `cmake --install --prefix DIR` works too
file(RELATIVE_PATH MEMSPACE_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/memspace.pc.in ${CMAKE_BINARY_DIR}/memspace.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/memspace.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
