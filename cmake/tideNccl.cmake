# Finds NCCL and makes the imported target NCCL::NCCL. NCCL ships no CMake
# package: it is looked for in the CUDA toolkit (find_package(CUDAToolkit)
# first) or under NCCL_HOME. Used by tide's build and, installed beside
# tideConfig.cmake, by find_package(tide) in a consumer project.
if(NOT TARGET NCCL::NCCL)
  find_path(TIDE_NCCL_INCLUDE_DIR nccl.h
    HINTS ENV NCCL_HOME ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  find_library(TIDE_NCCL_LIBRARY nccl
    HINTS ENV NCCL_HOME ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib PATH_SUFFIXES lib lib64)
  if(TIDE_NCCL_INCLUDE_DIR AND TIDE_NCCL_LIBRARY)
    add_library(NCCL::NCCL UNKNOWN IMPORTED GLOBAL)
    set_target_properties(NCCL::NCCL PROPERTIES
      IMPORTED_LOCATION "${TIDE_NCCL_LIBRARY}" INTERFACE_INCLUDE_DIRECTORIES "${TIDE_NCCL_INCLUDE_DIR}")
  endif()
endif()
