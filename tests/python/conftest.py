"""Shared fixtures of the Python package's tests (docs/python.md).

CTest passes PYTHONPATH=<build>/python, RETRYSTORM_BIN (the command line
built beside the module) and RETRYSTORM_SOURCE_DIR."""

import os
import pathlib
import subprocess

import pytest

SOURCE_DIR = pathlib.Path(
    os.environ.get("RETRYSTORM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2])
)


@pytest.fixture(scope="session")
def source_dir():
    return SOURCE_DIR


@pytest.fixture(scope="session")
def cli():
    """Runs the command line; returns its standard output (bytes as text)."""
    binary = os.environ.get("RETRYSTORM_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.fail("RETRYSTORM_BIN must name the retrystorm binary (ctest sets it)")

    def run(*args, check=True):
        done = subprocess.run(
            [binary, *args], capture_output=True, text=True, timeout=60, check=False
        )
        if check and done.returncode != 0:
            raise AssertionError(f"retrystorm {' '.join(args)}: {done.stderr}")
        return done

    return run
