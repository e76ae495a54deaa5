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


RANDOM_SERVER = {
    "engine": "agent",
    "demand.rate_per_s": 9.5,
    "demand.process": "poisson",
    "server.capacity_per_s": 10,
    "server.service": "exponential",
    "server.queue_limit": 30,
    "client.timeout_s": 3,
    "client.retries": 4,
    "client.backoff.base_s": 0.2,
    "incident.duration_s": 0,
    "horizon_s": 120,
}


@pytest.fixture(scope="session")
def random_server():
    """One server with random arrivals and service (the scenario of `risk`'s
    tests, docs/risk.md): random_server(key=value, ...) sets more keys."""
    import retrystorm as rs

    def make(**overrides):
        s = rs.Scenario.preset("order-status")
        for key, value in {**RANDOM_SERVER, **{k.replace("__", "."): v for k, v in overrides.items()}}.items():
            s = s.set(key, value)
        return s

    return make
