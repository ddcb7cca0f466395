# Installs the public library and headers and exports a CMake package, so that
# a program outside the tree can `find_package(lifeboat)` and link `lifeboat::lifeboat`;
# and the apps.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS lifeboat EXPORT lifeboatTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/lifeboat
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The programs a job is run and looked after with, on PATH for P = /usr/local.
install(TARGETS lifeboat-launch lifeboat-coordinator lifeboat-demo lifeboat-status
                lifeboat-checkpoint
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT lifeboatTargets NAMESPACE lifeboat::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lifeboat)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/lifeboatConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/lifeboatConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lifeboat)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lifeboatConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/lifeboatConfig.cmake
              ${PROJECT_BINARY_DIR}/lifeboatConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lifeboat)
