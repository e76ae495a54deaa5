# Whether to build the Python package (docs/python.md): on by default when
# pybind11 and the headers of Debian's Python are found. Debian's interpreter
# is named explicitly, so a pyenv or virtualenv python3 first on PATH never
# decides which Python the module is built for.
if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "The Python the package is built for")
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
find_package(pybind11 CONFIG QUIET)
if(Python3_FOUND AND pybind11_FOUND)
  set(RETRYSTORM_PYTHON_DEFAULT ON)
else()
  set(RETRYSTORM_PYTHON_DEFAULT OFF)
endif()
option(RETRYSTORM_PYTHON "Build the Python package retrystorm (pybind11)" ${RETRYSTORM_PYTHON_DEFAULT})
if(RETRYSTORM_PYTHON)
  if(NOT (Python3_FOUND AND pybind11_FOUND))
    message(FATAL_ERROR "RETRYSTORM_PYTHON needs pybind11-dev and python3-dev (scripts/setup.sh)")
  endif()
  # The static libraries are linked into the module, a shared object.
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
endif()
