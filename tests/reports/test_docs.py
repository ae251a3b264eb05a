"""The documentation: reference pages generated from the code and current, a site that builds
strictly, a README that is a front page whose links all lead somewhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

from tracedb import docgen, reports



def test_the_reference_pages_are_the_generators():
    assert docgen.stale() == [], "run python -m tracedb.docgen"
    page = (ROOT / "docs" / "reference" / "reports.md").read_text(encoding="utf-8")
    for name in reports.available():
        assert f"\n## {name}\n" in page


def test_a_changed_header_makes_the_page_stale(tmp_path):
    docs = tmp_path / "docs"
    for page, make in docgen.GENERATORS.items():
        (docs / page).parent.mkdir(parents=True, exist_ok=True)
        (docs / page).write_text(make(), encoding="utf-8")
    assert docgen.stale(docs) == []
    (docs / "reference" / "reports.md").write_text("# Reports\n", encoding="utf-8")
    assert docgen.stale(docs) == ["reference/reports.md"]


def test_the_readme_is_a_front_page_whose_links_lead_somewhere():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert "pip install '.[test]' && python -m pytest -q" in text  # the test command CI runs
    links = re.findall(r"\]\(([^)#]+)\)", text)
    assert links and [link for link in links if not (ROOT / link).exists()] == []
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert pages == set(re.findall(r":\s*([\w/-]+\.md)\s*$", nav, re.M))  # every page in the site's nav


def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs not installed (pip install '.[docs]')")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "site" / "reference" / "reports" / "index.html").is_file()
