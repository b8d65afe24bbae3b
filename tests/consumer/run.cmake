# ctest driver: MODE=subdirectory builds the consumer against the source tree; MODE=install
# installs this build into a temporary prefix, checks that it holds exactly include/favor's
# headers, and builds the consumer with find_package.
set(work ${BUILD_DIR}/consumer-${MODE})
file(REMOVE_RECURSE ${work})
if(MODE STREQUAL "install")
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${work}/prefix
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(rc)
    message(FATAL_ERROR "install failed")
  endif()
  # Exactly the public headers are installed: nothing of src/favor leaks into the prefix.
  file(GLOB_RECURSE installed RELATIVE ${work}/prefix/include ${work}/prefix/include/*)
  file(GLOB public RELATIVE ${SOURCE_DIR}/include ${SOURCE_DIR}/include/favor/*.hpp)
  list(SORT installed)
  list(SORT public)
  if(NOT installed STREQUAL public)
    message(FATAL_ERROR "installed headers ${installed}\ndiffer from include/: ${public}")
  endif()
  set(configure_args -DCMAKE_PREFIX_PATH=${work}/prefix)
else()
  set(configure_args -DFAVOR_SOURCE_DIR=${SOURCE_DIR})
endif()
# The subdirectory build compiles the whole library, by far the longest native test: on every core,
# as a unity build, and unoptimized (how it compiles is not what this test is about; Eigen's range
# assertions are on, and the consumer's calls are small).
cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
foreach(step
    "${CMAKE_COMMAND};-S;${SOURCE_DIR}/tests/consumer;-B;${work}/build;-DCMAKE_BUILD_TYPE=Debug;-DCMAKE_CXX_FLAGS_DEBUG=-O0;-DCMAKE_UNITY_BUILD=ON;${configure_args}"
    "${CMAKE_COMMAND};--build;${work}/build;--parallel;${cores}"
    "${work}/build/consumer")
  execute_process(COMMAND ${step} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "step failed: ${step}\n${out}")
  endif()
endforeach()
message(STATUS "${out}")
