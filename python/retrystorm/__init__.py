"""retrystorm: how client retries turn incidents into metastable outages.

The package binds the C++ core (the module retrystorm._core, built by CMake)
and hands results back as dicts and pandas DataFrames. See docs/python.md.

    import retrystorm as rs
    s = rs.Scenario.preset("primary-failover").set("client.retries", 0)
    r = rs.run(s)
    r.verdict["headline"], r.series.goodput.max()
"""

from ._core import InputError, Scenario, __version__
from .api import (
    Result,
    analyze,
    export,
    import_configs,
    keys,
    ladder,
    lint,
    presets,
    requests,
    risk,
    step_down,
    run,
    tipping,
)

try:  # the grid sweep (python/retrystorm/sweep.py)
    from .sweep import sweep
except ImportError:  # pragma: no cover - only while sweep.py is absent
    pass

__all__ = [
    "__version__",
    "InputError",
    "Result",
    "Scenario",
    "analyze",
    "export",
    "import_configs",
    "keys",
    "ladder",
    "lint",
    "presets",
    "requests",
    "risk",
    "step_down",
    "run",
    "sweep",
    "tipping",
]


def __getattr__(name):
    # rs.distributed and rs.plot import dask and matplotlib: only when used.
    if name in ("distributed", "plot"):
        import importlib

        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'retrystorm' has no attribute {name!r}")
