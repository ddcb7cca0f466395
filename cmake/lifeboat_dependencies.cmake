# Finds every third-party library and wraps those without a CMake package
# (CAF, xxHash, NCCL) in imported targets, so the rest of the build links names.
find_package(Threads REQUIRED)
find_package(Protobuf 3.21 REQUIRED)
find_package(Boost 1.74 REQUIRED)
# The apps' command lines (Debian's libcli11-dev, header-only).
find_package(CLI11 2.1 CONFIG REQUIRED)

# CAF 0.17 on Debian ships no CMake config, Find module or pkg-config file.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
find_library(CAF_IO_LIBRARY caf_io REQUIRED)
add_library(caf::core INTERFACE IMPORTED)
target_include_directories(caf::core SYSTEM INTERFACE ${CAF_INCLUDE_DIR})
target_link_libraries(caf::core INTERFACE ${CAF_CORE_LIBRARY} Threads::Threads)
add_library(caf::io INTERFACE IMPORTED)
target_link_libraries(caf::io INTERFACE ${CAF_IO_LIBRARY} caf::core)

find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
find_library(XXHASH_LIBRARY xxhash REQUIRED)
add_library(xxhash::xxhash INTERFACE IMPORTED)
target_include_directories(xxhash::xxhash SYSTEM INTERFACE ${XXHASH_INCLUDE_DIR})
target_link_libraries(xxhash::xxhash INTERFACE ${XXHASH_LIBRARY})

# NCCL: compiled in only when CUDA and NCCL are both found (or forced ON).
set(LIFEBOAT_HAVE_NCCL OFF)
set(LIFEBOAT_NCCL_SUMMARY "not compiled in (LIFEBOAT_WITH_NCCL=${LIFEBOAT_WITH_NCCL})")
if(NOT LIFEBOAT_WITH_NCCL STREQUAL "OFF")
  if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  # FindCUDAToolkit also searches PATH and /usr/local/cuda; a CUDAToolkit_ROOT
  # the user names is taken at its word, so an empty one means "no CUDA".
  if(DEFINED CUDAToolkit_ROOT AND EXISTS ${CUDAToolkit_ROOT}/include/cuda_runtime.h)
    find_package(CUDAToolkit QUIET)
  endif()
  if(CUDAToolkit_FOUND)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_ROOT}/include)
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_ROOT}/lib64 ${CUDAToolkit_ROOT}/lib)
  endif()
  if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(LIFEBOAT_HAVE_NCCL ON)
    add_library(nccl::nccl INTERFACE IMPORTED)
    target_include_directories(nccl::nccl SYSTEM INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(nccl::nccl INTERFACE ${NCCL_LIBRARY} CUDA::cudart)
    set(LIFEBOAT_NCCL_SUMMARY "compiled in (CUDA ${CUDAToolkit_VERSION}, ${NCCL_LIBRARY})")
  elseif(LIFEBOAT_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "LIFEBOAT_WITH_NCCL=ON but CUDA or NCCL was not found (CUDAToolkit_ROOT=${CUDAToolkit_ROOT})")
  endif()
endif()

if(LIFEBOAT_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(LIFEBOAT_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# The Python module (runtime/python): where pybind11 is found, and not in the
# sanitizer builds (a sanitized module needs its runtime preloaded into the
# interpreter). Debian's interpreter is the one python3-dev has headers for,
# whatever python3 comes first on PATH.
set(LIFEBOAT_HAVE_PYTHON OFF)
if(NOT LIFEBOAT_SANITIZE)
  if(NOT DEFINED PYTHON_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(PYTHON_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(pybind11 2.10 CONFIG QUIET)
  if(pybind11_FOUND)
    set(LIFEBOAT_HAVE_PYTHON ON)
  endif()
endif()
