# mtplx_library(area SOURCES ... DEPS ...): one static library per src/ folder, alias mtplx::area.
function(mtplx_library area)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(mtplx_${area} STATIC ${ARG_SOURCES})
  add_library(mtplx::${area} ALIAS mtplx_${area})
  target_include_directories(mtplx_${area} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(mtplx_${area} PUBLIC ${ARG_DEPS} mtplx_options
                        PRIVATE ${ARG_PRIVATE_DEPS} mtplx_warnings)
endfunction()

# mtplx_test(area name LABELS l1 [l2] DEPS ...): one GoogleTest executable, discovered per test.
function(mtplx_test area name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "LABELS;DEPS;SOURCES" ${ARGN})
  set(target ${area}_${name})
  add_executable(${target} ${name}.cc ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE ${ARG_DEPS} mtplx_test_support GTest::gtest_main
                        mtplx_warnings mtplx_options)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  if("unit" IN_LIST ARG_LABELS)  # built together by the unit_tests target (tests/CMakeLists.txt)
    set_property(GLOBAL APPEND PROPERTY MTPLX_UNIT_TEST_TARGETS ${target})
  endif()
  gtest_discover_tests(${target} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                       DISCOVERY_TIMEOUT 60
                       ENVIRONMENT "MTPLX_SOURCE_DIR=${PROJECT_SOURCE_DIR};MTPLX_BINARY_DIR=${PROJECT_BINARY_DIR};MTPLX_HOME=${PROJECT_BINARY_DIR}/test-home")
endfunction()
