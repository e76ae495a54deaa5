# The Python package (docs/python.md): the module retrystorm._core, binding
# the application layer, and the package's .py files beside it in
# ${CMAKE_BINARY_DIR}/python/retrystorm, so PYTHONPATH=<build>/python imports it.
set(RETRYSTORM_PYTHON_DIR ${CMAKE_BINARY_DIR}/python/retrystorm)
file(GLOB PYTHON_BIND_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/python/*.cpp)
pybind11_add_module(retrystorm_python MODULE NO_EXTRAS ${PYTHON_BIND_SOURCES})
set_target_properties(retrystorm_python PROPERTIES OUTPUT_NAME _core
                                                   LIBRARY_OUTPUT_DIRECTORY ${RETRYSTORM_PYTHON_DIR})
target_include_directories(retrystorm_python PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(retrystorm_python PRIVATE retrystorm_app)
target_compile_definitions(retrystorm_python PRIVATE RETRYSTORM_VERSION="${PROJECT_VERSION}")
# A wheel carries the shared libraries the module needs beyond the C and C++
# runtimes in retrystorm/_libs (setup.py): the module looks there first, and
# as DT_RPATH (not RUNPATH) the path also serves those libraries' own
# dependencies (libcpp-httplib's libssl). Without _libs, as in the build
# directory, the system's libraries are found as usual.
set_target_properties(retrystorm_python PROPERTIES BUILD_RPATH "$ORIGIN/_libs")
target_link_options(retrystorm_python PRIVATE -Wl,--disable-new-dtags)

# The .py files, copied at build time so an edit reaches the build directory.
file(GLOB PYTHON_PACKAGE_FILES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/retrystorm/*.py)
set(PYTHON_COPIED_FILES)
foreach(source ${PYTHON_PACKAGE_FILES})
  get_filename_component(name ${source} NAME)
  add_custom_command(
    OUTPUT ${RETRYSTORM_PYTHON_DIR}/${name}
    COMMAND ${CMAKE_COMMAND} -E copy_if_different ${source} ${RETRYSTORM_PYTHON_DIR}/${name}
    DEPENDS ${source}
    VERBATIM)
  list(APPEND PYTHON_COPIED_FILES ${RETRYSTORM_PYTHON_DIR}/${name})
endforeach()
add_custom_target(retrystorm_python_files ALL DEPENDS ${PYTHON_COPIED_FILES})
add_dependencies(retrystorm_python retrystorm_python_files)

# The package against the command line (tests/python, pytest from Debian).
if(RETRYSTORM_TESTS)
  add_test(NAME python_package
           COMMAND ${Python3_EXECUTABLE} -m pytest -q ${CMAKE_SOURCE_DIR}/tests/python
                   -p no:cacheprovider
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(
    python_package
    PROPERTIES LABELS python TIMEOUT 400
               ENVIRONMENT
               "PYTHONPATH=${CMAKE_BINARY_DIR}/python;RETRYSTORM_BIN=$<TARGET_FILE:retrystorm>;RETRYSTORM_SOURCE_DIR=${CMAKE_SOURCE_DIR};MPLBACKEND=Agg;PYTHONDONTWRITEBYTECODE=1")
endif()
