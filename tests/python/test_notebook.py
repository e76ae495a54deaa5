"""examples/retry-storms.ipynb runs from top to bottom (nbclient, Debian's
ipykernel), so the notebook and its checks of the published numbers never rot;
one of its sweeps runs on a Dask cluster of two local worker processes."""

import os

import nbformat
from nbclient import NotebookClient


def test_the_example_notebook_runs(source_dir, tmp_path, monkeypatch):
    nb = nbformat.read(source_dir / "examples" / "retry-storms.ipynb", as_version=4)
    # The kernel is a child process started in tmp_path: it imports the
    # package from PYTHONPATH made absolute, and draws inline (PNG outputs).
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(os.path.abspath(p) for p in paths if p))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors
    images = [
        out
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if "image/png" in out.get("data", {})
    ]
    assert len(images) >= 4  # two load charts, the ladder, the agent band, the phase map
