"""Finding tracedb's SQL files and reading the documentation in their comment headers.

Every CREATE in a tracedb SQL file is preceded by a comment block:

    -- What the object is (one or more lines).
    -- Columns:
    --   name   what the column holds
    CREATE TABLE name (...)

The same block becomes COMMENT ON TABLE/VIEW/COLUMN in the database, so a plain DuckDB client
sees the documentation (duckdb_tables(), duckdb_views(), duckdb_columns()).
"""

from __future__ import annotations

import functools
import glob
import re
from dataclasses import dataclass, field
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def sql_dir() -> Path:
    """The sql/ directory: inside the installed package, or at the top of a source checkout."""
    for candidate in (_HERE / "sql", _HERE.parent / "sql"):
        if (candidate / "schema").is_dir():
            return candidate
    raise FileNotFoundError("tracedb's sql/ directory is missing from the installation")


def read(relative: str) -> str:
    return (sql_dir() / relative).read_text(encoding="utf-8")


def split_statements(text: str) -> list[str]:
    """Split a SQL file into statements on semicolons outside quotes and comments."""
    return list(_split(text))


@functools.lru_cache(maxsize=128)
def _split(text: str) -> tuple[str, ...]:
    # a load splits the same few files every time (a character at a time: 12 ms a load), so each
    # text is split once a process
    statements, current = [], []
    i, n = 0, len(text)
    quote = None
    while i < n:
        ch = text[i]
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
            current.append(ch)
        elif ch == "-" and text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            current.append(text[i:end])
            i = end
            continue
        elif ch == ";":
            stmt = "".join(current).strip()
            if _has_code(stmt):
                statements.append(stmt)
            current = []
        else:
            current.append(ch)
        i += 1
    stmt = "".join(current).strip()
    if _has_code(stmt):
        statements.append(stmt)
    return tuple(statements)


def _has_code(stmt: str) -> bool:
    return any(line.strip() and not line.strip().startswith("--") for line in stmt.splitlines())


@dataclass
class ObjectDoc:
    kind: str  # TABLE, VIEW, MACRO or MACRO TABLE
    name: str
    summary: str
    columns: dict[str, str] = field(default_factory=dict)


_CREATE = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+|TEMPORARY\s+)?(TABLE|VIEW|MACRO)\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z_][\w]*)",
    re.IGNORECASE | re.MULTILINE,
)


def object_docs(statement: str) -> ObjectDoc | None:
    """The documentation block directly above the CREATE in one statement, if any."""
    m = _CREATE.search(statement)
    if not m:
        return None
    lines = statement[: m.start()].rstrip("\n").splitlines()
    block: list[str] = []
    for line in reversed(lines):
        s = line.strip()
        if not s.startswith("--"):
            break
        block.append(s[2:])
    block.reverse()
    summary_lines, columns, in_columns = [], {}, False
    last_col = None
    indent = None  # indentation of column names; deeper lines continue the previous column
    for line in block:
        if line.strip().lower() == "columns:":
            in_columns = True
            continue
        if in_columns:
            cm = re.match(r"^(\s{2,})([A-Za-z_]\w*)\s+(.*)$", line)
            if cm and (indent is None or len(cm.group(1)) == indent):
                indent = len(cm.group(1))
                cm = re.match(r"^\s*([A-Za-z_]\w*)\s+(.*)$", line)
                last_col = cm.group(1)
                columns[last_col] = cm.group(2).strip()
            elif last_col and line.strip():
                columns[last_col] += " " + line.strip()
        elif line.strip():
            summary_lines.append(line.strip())
    kind = m.group(1).upper()
    if kind == "MACRO" and re.search(r"\)\s+AS\s+TABLE\b", statement[m.end():], re.IGNORECASE):
        kind = "MACRO TABLE"
    return ObjectDoc(kind, m.group(2), " ".join(summary_lines), columns)


def comment_statements(doc: ObjectDoc) -> list[str]:
    """COMMENT ON statements applying a doc block. A macro's comment is its whole block (summary
    and columns), shown by duckdb_functions(); macros have no column comments."""
    if doc.kind.startswith("MACRO"):
        text = " ".join([doc.summary] + [f"{c}: {d}" for c, d in doc.columns.items()]).strip()
        return [f"COMMENT ON {doc.kind} {doc.name} IS {literal(text)}"] if text else []
    out = [f"COMMENT ON {doc.kind} {doc.name} IS {literal(doc.summary)}"] if doc.summary else []
    for col, text in doc.columns.items():
        out.append(f"COMMENT ON COLUMN {doc.name}.{col} IS {literal(text)}")
    return out


def file_path(path) -> str:
    """A file's path as DuckDB's readers (read_csv, read_parquet, read_json_objects) are to take
    it: they expand *, ? and [...] as a glob pattern, so that run[1]/kernels.csv read run1/kernels.csv
    when that existed; glob.escape's escapes ([[], [*], [?]) are theirs too. In a pattern DuckDB
    also takes a backslash for a separator, so a path holding one is left as it is (read as named
    unless another file matches it as a pattern; such names are rare where backslash is no
    separator)."""
    text = str(path)
    return text if "\\" in text else glob.escape(text)


def literal(text: str) -> str:
    """text as a SQL string literal (COMMENT ON, DDL and COPY's file name take literals, not parameters)."""
    return "'" + text.replace("'", "''") + "'"
