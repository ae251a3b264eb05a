"""The SQL modules of sql/modules/<domain>/<name>.sql, known as "domain.name", and the order they
run in, resolved from what each includes.

A module opens with the modules whose views and macros it reads, one line each, as Perfetto's
standard library does (`INCLUDE PERFETTO MODULE ...`):

    -- include: core.events
    -- include: classify.launches

The loader runs a module after everything it includes; an include of no module, or modules that
include each other, is an error naming them. The derivation's files (sql/derive/*.sql) open with
their includes too, so a database re-derives its traces only when a module the derivation reads
changed (tracedb.db). tests/unit/test_modules.py checks that every module includes exactly the modules
whose objects it uses.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import sqlfiles
from .errors import TracedbError

_INCLUDE = re.compile(r"^--\s*include:\s*([\w.]+)\s*$")


def root() -> Path:
    return sqlfiles.sql_dir() / "modules"


def modules(base: Path | None = None) -> dict[str, Path]:
    """Every module by name ("timeline.gaps"), in name order."""
    base = base or root()
    return {f"{p.parent.name}.{p.stem}": p for p in sorted(base.glob("*/*.sql"))}


def includes(path: Path) -> list[str]:
    """The modules a SQL file includes: the include lines at its top (before its first other line)."""
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = _INCLUDE.match(line.strip())
        if m:
            found.append(m.group(1))
        elif line.strip():
            break
    return found


def order(base: Path | None = None) -> list[str]:
    """The modules in an order that runs each after everything it includes (ties by name); a
    TracedbError for an include of no module or a cycle."""
    known = modules(base)
    graph = {name: includes(path) for name, path in known.items()}
    for name, wanted in graph.items():
        missing = [w for w in wanted if w not in known]
        if missing:
            raise TracedbError(f"SQL module {name} includes {', '.join(missing)}, which is no module "
                               f"(sql/modules/<domain>/<name>.sql)")
    done: list[str] = []
    state: dict[str, int] = {}  # 1: being visited, 2: done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = path[path.index(name):] + [name]
            raise TracedbError(f"SQL modules include each other: {' -> '.join(cycle)}")
        state[name] = 1
        for dep in sorted(graph[name]):
            visit(dep, path + [name])
        state[name] = 2
        done.append(name)

    for name in sorted(graph):
        visit(name, [])
    return done


def closure(names: list[str], base: Path | None = None) -> set[str]:
    """The modules the given ones include, directly or not (themselves too)."""
    known = modules(base)
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen or name not in known:
            continue
        seen.add(name)
        todo += includes(known[name])
    return seen


def derivation_modules() -> set[str]:
    """The modules the load-time derivation (sql/derive/*.sql) reads, directly or not."""
    wanted = [name for path in sorted((sqlfiles.sql_dir() / "derive").glob("*.sql")) for name in includes(path)]
    return closure(wanted)
