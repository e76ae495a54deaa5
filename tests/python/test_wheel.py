"""The package as a user installs it: `python3 -m build --no-isolation --wheel`
and `pip install --no-build-isolation .` work offline with Debian's
setuptools, the wheel carries the shared libraries the module needs
(retrystorm/_libs) and installs into a fresh virtual environment (system site
packages for numpy and pandas), where a sweep runs; the version is the one of
VERSION, as `retrystorm --version` says (docs/python.md, "Installing").

The module is the one CMake built for the tests (RETRYSTORM_CMAKE_BUILD_DIR),
so that the test does not rebuild the project; setup.py's own CMake build is
the same target in another directory."""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

PACKAGE_FILES = ["pyproject.toml", "setup.py", "setup.cfg", "VERSION", "README.md"]
SWEEP = (
    "import retrystorm as rs, sys\n"
    "frame = rs.sweep(rs.Scenario.preset('primary-failover'), {'client.retries': [0, 1, 3]})\n"
    "assert list(frame['client.retries']) == [0, 1, 3], frame\n"
    "print(rs.__version__, rs.__file__, rs._core.__file__)\n"
)


@pytest.fixture(scope="module")
def build_dir():
    binary = os.environ.get("RETRYSTORM_BIN")
    if not binary:
        pytest.fail("RETRYSTORM_BIN must name the retrystorm binary (ctest sets it)")
    return pathlib.Path(binary).resolve().parent


@pytest.fixture(scope="module")
def project(source_dir, tmp_path_factory):
    """What a wheel is built from, copied so that the build leaves the checkout clean."""
    root = tmp_path_factory.mktemp("project")
    for name in PACKAGE_FILES:
        shutil.copy(source_dir / name, root / name)
    shutil.copytree(source_dir / "python" / "retrystorm", root / "python" / "retrystorm",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


def clean_env(build_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["RETRYSTORM_CMAKE_BUILD_DIR"] = str(build_dir)
    env["PIP_NO_INDEX"] = "1"  # never a download
    return env


def run(args, env, cwd, timeout=300):
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, args))}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def fresh_venv(path, env):
    run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(path)], env, path.parent)
    return path / "bin" / "python"


@pytest.fixture(scope="module")
def wheel(project, build_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    run(["/usr/bin/python3", "-m", "build", "--no-isolation", "--wheel", "--outdir", str(out)],
        clean_env(build_dir), project)
    wheels = list(out.glob("retrystorm-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_the_wheel_holds_the_module_its_libraries_and_the_version(wheel, source_dir, cli):
    version = (source_dir / "VERSION").read_text().strip()
    assert wheel.name.startswith(f"retrystorm-{version}-cp3")  # a platform wheel
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("retrystorm/_core") and n.endswith(".so") for n in names)
    assert "retrystorm/__init__.py" in names and "retrystorm/distributed.py" in names
    libs = {pathlib.PurePath(n).name for n in names if n.startswith("retrystorm/_libs/")}
    for needed in ("libyaml-cpp.so", "libfmt.so", "libcpp-httplib.so"):
        assert any(lib.startswith(needed) for lib in libs), (needed, libs)
    assert not any(lib.startswith(("libc.so", "libstdc++", "libpython")) for lib in libs)
    assert cli("--version").stdout.strip().endswith(version)


def test_the_wheel_installs_into_a_fresh_venv_and_sweeps(wheel, build_dir, tmp_path, source_dir):
    env = clean_env(build_dir)
    python = fresh_venv(tmp_path / "venv", env)
    run([str(python), "-m", "pip", "install", "--no-index", str(wheel)], env, tmp_path)
    version, package, module = run([str(python), "-c", SWEEP], env, tmp_path).split()
    assert version == (source_dir / "VERSION").read_text().strip()
    assert package.startswith(str(tmp_path / "venv"))
    # Every library the module loads, its libraries' libraries included, is
    # either one of the wheel's copies or part of any Linux with Python.
    ldd = run(["ldd", module], env, tmp_path)
    bundled = str(pathlib.Path(module).parent / "_libs")
    system = re.compile(r"(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|"
                        r"libgcc_s|libpython\d)[.-]")
    for line in ldd.strip().splitlines():
        name = line.split()[0]
        assert system.match(pathlib.PurePath(name).name) or bundled in line, line
    assert "libyaml-cpp" in ldd and "libssl" in ldd


def test_pip_installs_the_source_tree_without_build_isolation(project, build_dir, tmp_path):
    env = clean_env(build_dir)
    python = fresh_venv(tmp_path / "venv", env)
    run([str(python), "-m", "pip", "install", "--no-build-isolation", str(project)], env, tmp_path)
    out = run([str(python), "-c", SWEEP], env, tmp_path)
    assert str(tmp_path / "venv") in out
