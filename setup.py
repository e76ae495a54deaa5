"""Builds the wheel of the Python package with the project's CMake.

pyproject.toml holds the metadata; this file adds the one extension,
retrystorm._core, built by CMake rather than by setuptools, and bundles the
shared libraries it needs beyond the C and C++ runtimes and Python itself
(yaml-cpp, fmt, cpp-httplib and theirs) in retrystorm/_libs, where the module
looks first (cmake/python.cmake). A wheel built so runs on a machine that has
only Python, numpy and pandas (docs/distributed.md, "Workers").

Environment:
  RETRYSTORM_CMAKE_BUILD_DIR  a configured build directory to build the module
                              in (default: build/wheel, configured here)
  RETRYSTORM_JOBS             parallel build jobs (default: every core)
"""

import os
import pathlib
import re
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = pathlib.Path(__file__).resolve().parent

# What every Linux machine with Python has: never bundled.
SYSTEM_LIBRARIES = re.compile(
    r"^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libpython"
    r"\d)[.-]"
)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


def needed_libraries(module):
    """(soname, path) of each shared library the module loads, as ldd resolves
    them, without the system's own."""
    out = subprocess.run(["ldd", str(module)], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m and not SYSTEM_LIBRARIES.match(m.group(1)):
            found.append((m.group(1), pathlib.Path(m.group(2))))
        elif "not found" in line:
            raise RuntimeError(f"setup.py: {module} needs a library ldd cannot find: {line.strip()}")
    return found


class BuildWithCMake(build_ext):
    def run(self):
        for ext in self.extensions:
            self.build_cmake(ext)

    def build_directory(self):
        given = os.environ.get("RETRYSTORM_CMAKE_BUILD_DIR")
        if given:  # already configured (a developer's build, the tests)
            return pathlib.Path(given).resolve()
        build = SOURCE / "build" / "wheel"
        subprocess.run(
            [
                "cmake", "-S", str(SOURCE), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                "-DRETRYSTORM_PYTHON=ON", "-DRETRYSTORM_WEB=OFF", "-DRETRYSTORM_TESTS=OFF",
                "-DRETRYSTORM_BENCH=OFF", "-DRETRYSTORM_GRPC=OFF",
            ],
            check=True,
        )
        return build

    def build_cmake(self, ext):
        build = self.build_directory()
        jobs = os.environ.get("RETRYSTORM_JOBS") or str(os.cpu_count() or 2)
        subprocess.run(
            ["cmake", "--build", str(build), "--target", "retrystorm_python", "-j", jobs],
            check=True,
        )
        built = list((build / "python" / "retrystorm").glob("_core*.so"))
        if len(built) != 1:
            raise RuntimeError(f"setup.py: expected one _core module in {build}, found {built}")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)
        libs = target.parent / "_libs"
        shutil.rmtree(libs, ignore_errors=True)
        libs.mkdir()
        for soname, path in needed_libraries(built[0]):
            shutil.copyfile(path.resolve(), libs / soname)  # under the name the loader asks for


setup(ext_modules=[CMakeExtension("retrystorm._core")], cmdclass={"build_ext": BuildWithCMake})
