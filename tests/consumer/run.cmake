# \brief ctest's consumer_package: installs the f8gemm build F8GEMM_BUILD_DIR into
# WORK_DIR/prefix, then configures, builds and runs the project SOURCE_DIR against it with
# find_package(f8gemm) (cmake -P; also runs by hand with the same -D arguments).
foreach(var F8GEMM_BUILD_DIR WORK_DIR SOURCE_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run.cmake: -D${var}=... is required")
  endif()
endforeach()
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer_package: failed (${rc}): ${ARGN}")
  endif()
endfunction()

step(${CMAKE_COMMAND} --install ${F8GEMM_BUILD_DIR} --prefix ${prefix} --component dev)
foreach(file include/f8gemm/f8gemm.hpp lib*/libf8gemm.a lib*/cmake/f8gemm/f8gemmConfig.cmake
             lib*/cmake/f8gemm/f8gemmConfigVersion.cmake lib*/cmake/f8gemm/f8gemmTargets.cmake)
  file(GLOB found ${prefix}/${file})
  if(NOT found)
    message(FATAL_ERROR "consumer_package: the install lacks ${file}")
  endif()
endforeach()

set(args -S ${SOURCE_DIR} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix}
         -DCMAKE_BUILD_TYPE=Release)
if(GENERATOR)
  list(APPEND args -G ${GENERATOR})
endif()
if(CUDAToolkit_ROOT)
  list(APPEND args -DCUDAToolkit_ROOT=${CUDAToolkit_ROOT})
endif()
step(${CMAKE_COMMAND} ${args})
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${WORK_DIR}/build/consumer)
