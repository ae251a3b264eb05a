"""The worked example (examples/compare_two_gpus.ipynb) runs from top to bottom in a Jupyter kernel
and shows what its text says. Skipped when the notebook extra is not installed."""

from __future__ import annotations

import pytest

from conftest import ROOT

nbformat = pytest.importorskip("nbformat", reason="the notebook extra is not installed: pip install '.[notebook]'")
nbclient = pytest.importorskip("nbclient", reason="the notebook extra is not installed: pip install '.[notebook]'")
pytest.importorskip("ipykernel", reason="the notebook extra is not installed: pip install '.[notebook]'")

NOTEBOOK = ROOT / "examples" / "compare_two_gpus.ipynb"


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")  # kept without outputs
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    return [c for c in nb.cells if c.cell_type == "code"]


def output(cell, kind: str) -> str:
    return "".join(o.get("data", {}).get(kind, "") if "data" in o else o.get("text", "") for o in cell.outputs)


def cell_with(cells, code: str):
    return next(c for c in cells if code in c.source)


def test_the_notebook_runs_and_shows_tables_and_charts(executed):
    assert not [o for c in executed for o in c.outputs if o.output_type == "error"]
    loaded = output(cell_with(executed, "db.load_all"), "text/html")
    assert "h100_bert-small" in loaded and "mi300_bert-small" in loaded and "loaded" in loaded
    report = output(cell_with(executed, 'db.report("compare"'), "text/html")
    assert "<svg" in report and "<table>" in report and "Dense GEMM" in report


def test_what_the_notebook_says_is_what_it_shows(executed):
    """Its text: the GEMMs take longer on the H100, attention on the MI300X."""
    sql = output(cell_with(executed, "db.sql("), "text/plain").splitlines()[1:]
    total = {(row.split()[1], row.split()[2]): float(row.split()[-1]) for row in sql}
    assert total[("NVIDIA", "Dense")] > total[("AMD", "Dense")]
    assert total[("NVIDIA", "Attention")] < total[("AMD", "Attention")]
    layers = output(cell_with(executed, '"alignment"'), "text/plain")
    assert "a_total µs" in layers and "_ns" not in layers  # durations in a person's unit


def test_each_result_is_shown_once(executed):
    """A cell ending in a result shows it once (its HTML, with the text beside it in the same
    output), never a second time as a table printed on the side."""
    for code in ('db.report("compare"', "db.traces()", '"alignment"', "db.sql("):
        cell = cell_with(executed, code)
        assert [o.output_type for o in cell.outputs] == ["execute_result"], (code, cell.outputs)
