"""The SQL modules: each includes exactly the modules whose objects it reads, the loader orders
them from the includes and refuses a missing include or a cycle, and a change re-derives the stored
facts only when the derivation reads the module that changed, never for a read-only open."""

from __future__ import annotations

import re
import shutil

import pytest

from conftest import FIXTURES, KINETO, load
from tracedb import db, facts, modules, sqlfiles
from tracedb.errors import TracedbError

_DEFINES = re.compile(r"CREATE OR REPLACE (?:TEMP )?(?:VIEW|MACRO)\s+(\w+)", re.I)


def _code(path) -> str:
    return "\n".join(line.split("--", 1)[0] for line in path.read_text(encoding="utf-8").splitlines())


def _uses(paths: dict) -> dict[str, set[str]]:
    """For each file, the modules defining an object its code names (comments left out)."""
    defined = {obj: name for name, path in modules.modules().items() for obj in _DEFINES.findall(_code(path))}
    return {name: {defined[o] for o in defined if defined[o] != name and re.search(rf"\b{o}\b", _code(path))}
            for name, path in paths.items()}


def test_every_module_includes_what_it_reads_and_nothing_else():
    uses = _uses(modules.modules())
    wrong = {name: (sorted(set(modules.includes(path))), sorted(uses[name]))
             for name, path in modules.modules().items() if set(modules.includes(path)) != uses[name]}
    assert wrong == {}, "(includes, what the code reads) per module"


def test_the_derivation_includes_what_it_reads():
    derive = {p.name: p for p in (sqlfiles.sql_dir() / "derive").glob("*.sql")}
    uses = _uses(derive)
    assert {name: set(modules.includes(p)) for name, p in derive.items()} == uses
    # the derivation reads no comparison, timeline or report module
    assert {m.split(".")[0] for m in modules.derivation_modules()} <= {"core", "classify", "steps", "aie"}


def test_modules_live_in_domains_and_run_after_what_they_include():
    names = modules.order()
    assert set(names) == set(modules.modules()) and len(names) == len(set(names))
    domains = {n.split(".")[0] for n in names}
    assert {"core", "classify", "steps", "timeline", "efficiency", "compare", "why", "aie"} <= domains
    at = {n: i for i, n in enumerate(names)}
    for name, path in modules.modules().items():
        assert all(at[dep] < at[name] for dep in modules.includes(path))


def _fake(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        domain, stem = name.split(".")
        (tmp_path / domain).mkdir(parents=True, exist_ok=True)
        (tmp_path / domain / f"{stem}.sql").write_text(text)
    return tmp_path


def test_a_missing_include_or_a_cycle_is_refused(tmp_path):
    base = _fake(tmp_path / "a", {"core.x": "SELECT 1;\n", "why.y": "-- include: core.z\nSELECT 1;\n"})
    with pytest.raises(TracedbError, match="SQL module why.y includes core.z, which is no module"):
        modules.order(base)
    base = _fake(tmp_path / "b", {"core.x": "-- include: why.y\nSELECT 1;\n", "why.y": "-- include: core.x\nSELECT 1;\n"})
    with pytest.raises(TracedbError, match=r"SQL modules include each other: core.x -> why.y -> core.x"):
        modules.order(base)
    base = _fake(tmp_path / "c", {"core.x": "SELECT 1;\n", "why.y": "-- include: core.x\n\nSELECT 1;\n"})
    assert modules.order(base) == ["core.x", "why.y"]


def _edit(sql_root, module: str, monkeypatch):
    """A copy of the SQL tree with one module's text changed (a comment appended), used from now on."""
    copy = sql_root / "sql"
    shutil.copytree(sqlfiles.sql_dir(), copy)
    domain, stem = module.split(".")
    path = copy / "modules" / domain / f"{stem}.sql"
    path.write_text(path.read_text() + "\n-- edited\n")
    monkeypatch.setattr(sqlfiles, "sql_dir", lambda: copy)


@pytest.mark.parametrize("module, derives", [("why.findings", []), ("steps.layers", ["kernel_facts.sql"]),
                                             ("aie.kernels", ["aie_kernels.sql"])])
def test_a_change_re_derives_only_what_reads_it(tmp_path, monkeypatch, module, derives):
    """A changed module re-derives the files of sql/derive/ whose include closure holds it, and no
    other: steps.layers the kernel facts alone, aie.kernels the AIE kernel runs alone."""
    path = tmp_path / "t.duckdb"
    con = db.open_db(path)
    load(con, KINETO[3])
    con.close()
    _edit(tmp_path, module, monkeypatch)
    derived = []
    real = facts.derive_all
    monkeypatch.setattr(facts, "derive_all", lambda c, files=None: derived.append(sorted(files)) or real(c, files))
    applied = []
    real_apply = db._apply_views
    monkeypatch.setattr(db, "_apply_views", lambda *a, **k: applied.append(1) or real_apply(*a, **k))
    for _ in range(2):
        with db.open_db(path, read_only=True) as ro:  # a reader brings the views up to date, never the facts
            assert ro.execute("SELECT count(*) FROM kernel_facts").fetchone()[0] > 0
    assert derived == [] and applied == [1]  # once: the next reader finds them current
    with db.open_db(path) as rw:  # a writer derives when the derivation reads what changed
        stored = dict(rw.execute("SELECT file, sha256 FROM tracedb_views").fetchall())
    assert derived == ([derives] if derives else []) and applied == [1]
    assert stored == db._views_fingerprint()
    with db.open_db(path) as rw:  # and once only
        pass
    assert derived == ([derives] if derives else [])


def test_a_derivation_file_says_when_it_applies(con, tmp_path):
    """Each file of sql/derive/ runs for the traces its header's When line names: the AIE kernel
    runs for an mlir-aie trace only, the kernel facts for every trace with kernels (an AIE trace,
    whose kernel runs are tiles' events, has none)."""
    assert dict(facts.derivations()) == {
        "aie_kernels.sql": "format = 'mlir-aie'",
        "kernel_facts.sql": "EXISTS (SELECT 1 FROM kernels k WHERE k.trace_id = traces.trace_id)"}
    ran = []
    real = facts.store.run_file

    def spy(c, rel, params=None):
        ran.append(rel)
        return real(c, rel, params)

    trace = load(con, KINETO[3])
    aie = load(con, FIXTURES / "aie" / "mlir-aie_parse-trace_test1.json")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(facts.store, "run_file", spy)
        facts.derive(con, trace.trace_id)
        assert ran == ["derive/kernel_facts.sql"]
        ran.clear()
        facts.derive(con, aie.trace_id)
        assert ran == ["derive/aie_kernels.sql"]
    assert con.execute("SELECT count(*) FROM kernels WHERE trace_id = ?", [aie.trace_id]).fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM aie_kernels WHERE trace_id = ?", [aie.trace_id]).fetchone()[0] > 0


def test_the_macros_the_rules_rewrite_are_marked_generated():
    """Each macro tracedb.facts.refresh_regex_rules writes out is marked in its module as a
    placeholder that tracedb rewrites, so a reader of the SQL knows its text is not the one used."""
    written = {"_regex_rule_hits", "_inductor_rule_hits", "_context_rule_hits", "_step_frame_rule_hits",
               "_rule_hits_digest"}
    marked = set()
    for path in modules.modules().values():
        lines = path.read_text(encoding="utf-8").splitlines()
        for before, line in zip(lines, lines[1:]):
            m = re.match(r"CREATE OR REPLACE MACRO (\w+)\(", line)
            if m and before.startswith("-- Generated: tracedb.facts.refresh_regex_rules"):
                marked.add(m.group(1))
    assert marked == written
