"""The reference pages of the documentation, generated from the code: every report from its
header (tracedb.reports), every table, view and column from the COMMENTs of a new database, and
the command line from its --help, and the layout of the repository from its modules' docstrings
and its SQL files' headers.

    python -m tracedb.docgen           # write docs/reference/*.md and docs/layout.md
    python -m tracedb.docgen --check   # exit 1 naming each page that differs from what it would write

tests/reports/test_docs.py fails when a committed page differs from the generator's, so the reference
never drifts from the SQL it describes.
"""

from __future__ import annotations

import ast
import re
import sys
import tempfile
from pathlib import Path

from . import charts, reports

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ("reference/reports.md", "reference/schema.md")


def _cell(text: object) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


ALIAS_TEXT = {"many": "more than two traces (`--vs` repeated) or a pattern as `--trace`",
              "patterns": "a pattern as `--trace` and one as `--vs`"}


def reports_page() -> str:
    """Every report: its summary, how to run it, its parameters and each section's columns."""
    out = ["# Reports", "",
           "Generated from the headers of `sql/reports/*.sql` by `python -m tracedb.docgen`; each report is",
           "one file, its header the only place its parameters and columns are described.", ""]
    available = reports.available()
    out += ["| report | summary |", "|---|---|"]
    out += [f"| [`{name}`](#{name}) | {_cell(r.summary)} |" for name, r in available.items()]
    out += ["", "A report's header lines beyond its summary, parameters and columns (`tracedb.reports.KEYS`):", "",
            "| line | what it does |", "|---|---|"]
    out += [f"| `-- {_cell(k.form)}` | {_cell(k.doc)}{' (in any section)' if k.any_section else ''} |"
            for k in reports.KEYS.values()]
    charted = [name for name, r in available.items() if any(s.charts for s in r.sections)]
    out += ["", "Reports whose HTML draws charts (`--format html`): "
            + ", ".join(f"[`{name}`](#{name})" for name in charted) + "."]
    for name, r in available.items():
        out += ["", f"## {name}", "", r.summary, ""]
        if r.examples:
            out += ["```", *r.examples, "```", ""]
        if r.alone:
            out += [f"With `--trace` alone: {r.alone}.", ""]
        if r.rows_for:
            out += [f"Rows only for {r.rows_for}.", ""]
        if r.strips:
            out += [f"Timeline strips (HTML): {r.strips}.", ""]
        for alias in r.aliases:
            out += [f"`tracedb report {alias.name}` runs this report when given "
                    f"{ALIAS_TEXT[alias.when]}.", ""]
        if r.params:
            takes = {"integer": "whole number", "number": "number", None: "text"}
            out += ["| parameter | takes | default | meaning |", "|---|---|---|---|"]
            out += [f"| `{reports.given_as(r, p.name)}` | {takes[p.kind]} | {_cell(reports.default_text(p))} | "
                    f"{_cell(p.doc)} |" for p in r.params.values()]
            out.append("")
        for section in r.sections:
            if section.name != "main":
                out += [f"### Section `{section.name}`", "", section.summary, ""]
            for chart in section.charts:
                out += [f"Chart (HTML): {chart.title}.", ""]
            out += ["| column | format | meaning |", "|---|---|---|"]
            for c in section.columns.values():
                flags = ", ".join(f for f, on in (("total", c.total), ("wide", c.wide), ("note", c.note),
                                                  ("json", c.json_only)) if on)
                out.append(f"| `{c.name}` | {c.format}{f' ({flags})' if flags else ''} | {_cell(c.doc)} |")
            out.append("")
    out += ["## Chart kinds", "",
            "A header's `-- Chart: LABELS -> VALUES [KIND]  Title` draws a section's rows in its HTML page by "
            "one of these kinds (`tracedb.charts.KINDS`; bars when none is named):", "",
            "| kind | value columns | draws |", "|---|---|---|"]
    out += [f"| `{k.name}` | {_cell(k.takes)} | {_cell(k.doc)} |" for k in charts.KINDS.values()]
    return "\n".join(out).rstrip() + "\n"


def schema_page() -> str:
    """Every table and view of a new database, with what it holds and each column's meaning."""
    from . import api, db

    with tempfile.TemporaryDirectory(prefix="tracedb-docgen-") as tmp:
        path = Path(tmp) / "new.duckdb"
        db.open_db(path).close()
        with api.connect(path) as database:
            objects = database.objects().rows
            columns = database.schema(None).rows
    out = ["# Tables and views", "",
           "Generated from the COMMENTs of a new database (`sql/schema/*.sql`, `sql/modules/*/*.sql`) by",
           "`python -m tracedb.docgen`; `tracedb schema NAME` shows the same in a terminal.", ""]
    by_object: dict[str, list] = {}
    for obj, _kind, column, type_, description in columns:
        by_object.setdefault(obj, []).append((column, type_, description))
    for kind in ("table", "view"):
        out += [f"## {kind.capitalize()}s", ""]
        for obj, k, description in sorted(objects, key=lambda o: o[0]):
            if k != kind or obj.startswith("_") or obj.startswith("tracedb_"):
                continue
            out += [f"### `{obj}`", "", description or "", "", "| column | type | meaning |", "|---|---|---|"]
            out += [f"| `{c}` | {t} | {_cell(d)} |" for c, t, d in by_object.get(obj, [])]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


ROOT = DOCS.parent

# the folders outside the package and sql/, which hold no docstring to read
OTHER_FOLDERS = {
    "docs/": "this site (mkdocs.yml at the top of the repository); reference/ and this page are generated",
    "bench/": "benchmarks beside their peers, on the corpus and on synthetic traces of real traces' shape "
              "(each script's docstring says how to run it; figures in [Performance](performance.md))",
    "examples/": "a real H100 / MI300X trace pair, and compare_two_gpus.ipynb, the worked notebook",
    "tests/": "the tests, one folder per layer (unit, ingest, store, analysis, reports, end_to_end)",
}


def _first_sentence(text: str) -> str:
    """The first sentence of a docstring's or a header's first paragraph, on one line."""
    paragraph = " ".join(text.strip().split("\n\n", 1)[0].split())
    end = re.search(r"\.(\s|$)", paragraph)
    return paragraph[:end.start()] if end else paragraph


def _sql_summary(path: Path) -> str:
    """A SQL file's header: its first comment paragraph (after the includes), first sentence."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("-- include:"):
            continue
        if line.startswith("--"):
            lines.append(line[2:].strip())
        elif lines:
            break
    return _first_sentence("\n".join(lines))


def layout_page() -> str:
    """Where everything is: every Python module by the first sentence of its docstring, every SQL
    file by its header's, the folders around them."""
    out = ["# Layout", "",
           "Generated by `python -m tracedb.docgen` from each Python module's docstring and each SQL file's",
           "header (their first sentence): a new file is listed by writing its first sentence.", "",
           "## The Python package", "", "| module | what it is |", "|---|---|"]
    package = ROOT / "tracedb"
    for path in sorted(package.rglob("*.py"), key=lambda p: (len(p.relative_to(package).parts), str(p))):
        if path.name == "__main__.py":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        out.append(f"| `{path.relative_to(ROOT).as_posix()}` | {_cell(_first_sentence(doc))} |")
    out += ["", "## SQL", "", "| file | what it is |", "|---|---|",
            "| `sql/reports/*.sql` | one report per file, its header the report's documentation: "
            "[Reports](reference/reports.md) |"]
    sql = ROOT / "sql"
    for folder in ("schema", "modules", "derive", "ingest", "rules"):
        for path in sorted((sql / folder).rglob("*.sql")):
            out.append(f"| `{path.relative_to(ROOT).as_posix()}` | {_cell(_sql_summary(path))} |")
        for path in sorted((sql / folder).rglob("*.csv")):
            table = path.stem
            out.append(f"| `{path.relative_to(ROOT).as_posix()}` | the built-in rows of `{table}` |")
    out += ["", "## Around them", "", "| folder | what it holds |", "|---|---|"]
    out += [f"| `{folder}` | {text} |" for folder, text in OTHER_FOLDERS.items()]
    return "\n".join(out) + "\n"


def cli_page() -> str:
    """Every command's --help, as the command line prints it 100 columns wide."""
    from .cli import command

    root = command()
    out = ["# Command line", "",
           "Generated from `tracedb --help` and each command's by `python -m tracedb.docgen`. What the",
           "commands do, and how they fail, is told in [Command line and reliability](../command-line.md).", ""]

    def walk(command, path: list[str]) -> None:
        # the Context class of the command's own click (typer may carry its own)
        ctx = command.context_class(command, info_name=" ".join(path), terminal_width=100, max_content_width=100)
        out.extend([f"## {' '.join(path)}", "", "```", command.get_help(ctx).rstrip(), "```", ""])
        if hasattr(command, "list_commands"):  # a group: its commands in the order it lists them
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), path + [name])

    walk(root, ["tracedb"])
    return "\n".join(out).rstrip() + "\n"


GENERATORS = {"reference/reports.md": reports_page, "reference/schema.md": schema_page, "reference/cli.md": cli_page,
              "layout.md": layout_page}


def stale(docs: Path = DOCS) -> list[str]:
    """The pages whose committed text differs from the generator's."""
    return [page for page, make in GENERATORS.items()
            if not (docs / page).is_file() or (docs / page).read_text(encoding="utf-8") != make()]


def main(argv: list[str]) -> int:
    if argv[1:] == ["--check"]:
        pages = stale()
        for page in pages:
            print(f"docs/{page}: differs from the code; run python -m tracedb.docgen", file=sys.stderr)
        return 1 if pages else 0
    for page, make in GENERATORS.items():
        target = DOCS / page
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(make(), encoding="utf-8")
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
