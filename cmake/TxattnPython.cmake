# SPDX-License-Identifier: MIT
# The Python package txattn (python/, docs/python.md): a CPython extension over the public API.
# Built when Python 3's development files and NumPy are found; -DTXATTN_PYTHON=OFF turns it off,
# -DTXATTN_PYTHON=ON makes their absence an error. The interpreter is Debian's /usr/bin/python3
# when it exists (that is where python3-numpy, python3-torch and python3-pytest install), not
# whichever python3 comes first on PATH (a pyenv or virtualenv one may lack them); give
# -DPython3_EXECUTABLE=... for another. Not in a cross build: the host's Python cannot load it.
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "The Python 3 interpreter txattn's package is built for")
endif()
set(_txattn_python_default OFF)
if(NOT CMAKE_CROSSCOMPILING AND (NOT DEFINED TXATTN_PYTHON OR TXATTN_PYTHON))
  find_package(Python3 3.8 COMPONENTS Interpreter Development.Module NumPy)
  if(Python3_FOUND)
    set(_txattn_python_default ON)
  endif()
endif()
option(TXATTN_PYTHON "Build the Python package txattn (python/)" ${_txattn_python_default})
if(TXATTN_PYTHON AND NOT Python3_FOUND)
  message(FATAL_ERROR "TXATTN_PYTHON is ON but Python 3's development files or NumPy were not found "
    "(apt-get install python3-dev python3-numpy), or this is a cross build: -DTXATTN_PYTHON=OFF builds without it")
endif()
if(TXATTN_PYTHON)
  message(STATUS "txattn Python package: ${Python3_EXECUTABLE} (${Python3_VERSION}), into build/python")
  add_subdirectory(python)
endif()
