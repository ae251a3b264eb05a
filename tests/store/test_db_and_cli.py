"""The database file (versioned schema, documented columns) and the command line."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from conftest import KINETO, load, run_cli, table_counts
from tracedb import cli
from tracedb.db import latest_version, open_db, schema_version
from tracedb.errors import TracedbError

PUBLIC = {"traces": ["trace_id", "name"], "kernels": ["trace_id", "kernel_id", "name", "ts_ns", "dur_ns",
                                                     "correlation", "external_id", "stream", "device"],
          "cpu_ops": ["trace_id"], "python_functions": ["trace_id"], "runtime_calls": ["trace_id"],
          "annotations": ["trace_id"], "flows": ["trace_id"]}


def test_schema_version_is_recorded(con):
    assert schema_version(con) == latest_version() >= 1
    rows = con.execute("SELECT version, name FROM tracedb_schema ORDER BY version").fetchall()
    assert rows[0] == (1, "001_core.sql")


def test_newer_database_is_refused(db_path):
    with open_db(db_path) as c:
        c.execute("INSERT INTO tracedb_schema VALUES (999, '999_future.sql', now()::TIMESTAMP)")
    with pytest.raises(TracedbError, match="newer than this tracedb"):
        open_db(db_path)
    with pytest.raises(TracedbError, match="newer than this tracedb"):
        open_db(db_path, read_only=True)


def test_public_names_exist(con):
    for table, columns in PUBLIC.items():
        have = [r[0] for r in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = ?",
                                          [table]).fetchall()]
        assert set(columns) <= set(have), table


def test_every_table_view_and_column_is_documented(con):
    undocumented = con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main' AND NOT internal AND "
        "(comment IS NULL OR comment = '') AND table_name NOT LIKE '\\_%' ESCAPE '\\'").fetchall()
    assert undocumented == []
    objects = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND comment IS NULL "
        "UNION ALL SELECT view_name FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal "
        "AND comment IS NULL").fetchall()
    assert objects == []


def test_same_content_is_skipped_and_replace_reloads(con):
    path = KINETO[0]
    first = load(con, path)
    again = load(con, path)
    assert again.status == "skipped" and "already loaded" in again.note
    replaced = load(con, path, replace=True)
    assert replaced.status == "replaced" and replaced.trace_id > first.trace_id
    assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == 1
    assert con.execute("SELECT count(DISTINCT trace_id) FROM all_events").fetchone()[0] == 1


def test_name_clash_needs_replace_or_name(con):
    load(con, KINETO[0], name="run")
    with pytest.raises(TracedbError, match="already exists"):
        load(con, KINETO[1], name="run")
    other = load(con, KINETO[1], name="run2")
    assert other.status == "loaded"


def test_cli_load_ls_sql_rm_round_trip(tmp_path):
    db = tmp_path / "runs.duckdb"
    proc = run_cli("load", KINETO[0], KINETO[1], "--format", "json", db=db, check=True, process=True)
    loaded = json.loads(proc.stdout)
    assert [r["status"] for r in loaded] == ["loaded", "loaded"]
    ls = json.loads(run_cli("ls", "--format", "json", db=db, check=True).stdout)
    assert [r["name"] for r in ls] == [r["name"] for r in loaded]
    assert all(r["events"] > 0 and r["rejected"] == 0 for r in ls)
    out = run_cli("sql", "SELECT count(*) AS n FROM kernels", "--format", "csv", db=db, check=True).stdout
    n = list(csv.reader(io.StringIO(out)))
    assert n[0] == ["n"] and int(n[1][0]) > 0
    md = run_cli("ls", "--format", "markdown", db=db, check=True).stdout
    assert md.splitlines()[2].startswith("| trace_id |")
    table = run_cli("ls", db=db, check=True).stdout
    assert "\x1b[" not in table and ls[0]["name"] in table
    run_cli("rm", ls[0]["name"], db=db, check=True)
    left = json.loads(run_cli("ls", "--format", "json", db=db, check=True).stdout)
    assert [r["name"] for r in left] == [ls[1]["name"]]
    with open_db(db, read_only=True) as c:
        assert c.execute("SELECT count(*) FROM all_events WHERE trace_id = ?", [ls[0]["trace_id"]]).fetchone()[0] == 0


def test_a_finished_command_ends_with_all_its_output(tmp_path):
    """A command that is done ends without the interpreter's teardown: all of its output reaches the
    pipe, its exit status is kept, and the database it wrote was closed (no log left to replay)."""
    db = tmp_path / "runs.duckdb"
    run_cli("load", KINETO[0], db=db, check=True, process=True)
    assert db.exists() and not Path(f"{db}.wal").exists()
    big = run_cli("sql", "SELECT range AS i, repeat('x', 50) AS pad FROM range(20000)", "--format", "csv",
                  db=db, process=True)
    assert big.returncode == 0 and len(big.stdout.splitlines()) == 20_001
    assert big.stdout.splitlines()[-1] == "19999," + "x" * 50
    assert run_cli("rm", "nope", db=db, process=True).returncode == 1


def test_run_ends_at_once_only_when_nothing_waits_for_the_exit(tmp_path, monkeypatch):
    """run() skips the teardown only when no exit function was registered and no thread started
    since it began (a parallel load registers both): otherwise the interpreter exits as usual."""
    import atexit
    import signal
    import sys

    from tracedb import cli

    db = tmp_path / "runs.duckdb"
    run_cli("load", KINETO[0], db=db, check=True)
    ended = []
    monkeypatch.setattr(cli, "_exit_now", ended.append)
    monkeypatch.setattr(sys, "argv", ["tracedb", "ls", "--db", str(db)])
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    left_behind = []
    real_main = cli.main

    def main_that_leaves_work():
        real_main()
        atexit.register(left_behind.append, "ran")

    try:
        with pytest.raises(SystemExit) as done:
            cli.run()
        assert done.value.code == 0 and ended == [0]
        monkeypatch.setattr(cli, "main", main_that_leaves_work)
        with pytest.raises(SystemExit):
            cli.run()
        assert ended == [0]  # not called again: the exit function must run
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
        atexit.unregister(left_behind.append)


def test_cli_user_errors_are_one_line(tmp_path):
    db = tmp_path / "runs.duckdb"
    run_cli("load", KINETO[0], db=db, check=True)
    for args in (("rm", "nope"), ("sql", "SELEC 1"), ("schema", "nope")):
        proc = run_cli(*args, db=db, process=True)  # as a shell sees it: one line, exit code 1
        assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    proc = run_cli("ls", db=tmp_path / "missing.duckdb")
    assert proc.returncode == 1 and "no such database" in proc.stderr


def test_schema_command_lists_documented_columns(tmp_path):
    db = tmp_path / "runs.duckdb"
    run_cli("load", KINETO[0], db=db, check=True)
    rows = json.loads(run_cli("schema", "kernels", "--format", "json", db=db, check=True).stdout)
    by_col = {r["column"]: r for r in rows}
    assert by_col["dur_ns"]["type"] == "BIGINT" and "nanoseconds" in by_col["dur_ns"]["description"]


def test_every_command_has_help():
    group = cli.command()
    for name, command in group.commands.items():
        assert command.help and command.help.strip(), name
        for param in command.params:
            assert getattr(param, "help", None), f"{name} {param.name}"


def test_env_var_selects_database(tmp_path):
    db = tmp_path / "env.duckdb"
    run_cli("load", KINETO[0], env={"TRACEDB_DB": str(db)}, check=True)
    assert db.exists()


def test_a_failed_load_leaves_the_connection_s_settings_as_they_were(con, monkeypatch):
    """The derivation raises the memory limit and the load changes insertion order; a derivation
    that fails inside the transaction cannot put them back itself (DuckDB refuses every statement
    there), so the rollback does: the connection is as it was, and the database unchanged."""
    import tracedb.store as storemod  # the derivation runs its files through the store

    def settings():
        return con.execute("SELECT current_setting('memory_limit'), current_setting('preserve_insertion_order'), "
                           "current_setting('threads')").fetchone()

    con.execute("SET memory_limit = '3GiB'")  # a value DuckDB shows exactly (it shows 0.1 GiB steps)
    con.execute("SET threads = 2")  # a small trace is derived on one thread
    before, counts = settings(), table_counts(con)
    real = storemod.run_file

    def failing(c, rel, params=None):
        if rel.startswith("derive/"):
            c.execute("SELECT error('derivation failed')")
        return real(c, rel, params)

    monkeypatch.setattr(storemod, "run_file", failing)
    with pytest.raises(TracedbError, match="cannot load: .*derivation failed"):
        load(con, KINETO[0])
    assert settings() == before and table_counts(con) == counts
    monkeypatch.setattr(storemod, "run_file", real)
    assert load(con, KINETO[0]).status == "loaded" and settings() == before


@pytest.mark.parametrize("small", [True, False])
def test_a_trace_of_a_row_group_or_two_is_derived_on_one_thread(con, monkeypatch, small):
    """Up to ONE_THREAD_EVENTS events the transaction runs on one thread, beyond them on as many
    as the database was given; the setting is the database's again after the load either way."""
    from tracedb import facts
    from tracedb.ingest import loader

    seen = []
    real = facts.derive

    def derive(c, trace_id):
        seen.append(c.execute("SELECT current_setting('threads')").fetchone()[0])
        return real(c, trace_id)

    monkeypatch.setattr(facts, "derive", derive)
    if not small:
        monkeypatch.setattr(loader, "ONE_THREAD_EVENTS", 10)  # the fixture then counts as large
    con.execute("SET threads = 3")
    outcome = load(con, KINETO[0])
    assert outcome.status == "loaded" and (outcome.events <= loader.ONE_THREAD_EVENTS) == small
    assert seen == [1 if small else 3]
    assert con.execute("SELECT current_setting('threads')").fetchone()[0] == 3


def test_help_shows_flags_without_a_value():
    for args in (("load", "--help"), ("report", "--help"), ("--help",)):
        out = run_cli(*args, env={"COLUMNS": "120"}, check=True).stdout
        assert "<bool>" not in out and "--help" in out, args
    assert "--replace " in run_cli("load", "--help", check=True).stdout


def test_atomic_writes_leave_the_target_whole_or_untouched(tmp_path):
    from tracedb import atomic

    target = tmp_path / "report.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic.replacing(target) as out:
            out.write("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    with atomic.replacing(target) as out:
        out.write("new")
    assert target.read_text() == "new"
    assert atomic.create(target, lambda f: f.write(b"other")) is False and target.read_text() == "new"
    fresh = tmp_path / "fresh.bin"
    assert atomic.create(fresh, lambda f: f.write(b"x")) is True and fresh.read_bytes() == b"x"
    folder = tmp_path / "export"
    with pytest.raises(RuntimeError):
        with atomic.directory(folder) as tmp:
            (tmp / "a").write_text("1")
            raise RuntimeError("interrupted")
    assert not folder.exists()
    with atomic.directory(folder) as tmp:
        (tmp / "a").write_text("1")
    assert (folder / "a").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "fresh.bin", "report.txt"]  # no leftovers


def test_settings_come_back_even_unlimited_and_after_a_commit_the_block_made(con):
    from tracedb import store

    con.execute("SET memory_limit = '-1'")  # no limit: shown as 16383.9 PiB, which SET refuses
    with store.settings(con, memory_limit="100MB"):
        pass
    assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0].endswith("PiB")
    # a Ctrl-C landing as COMMIT returns: the rollback finds no transaction, and the interrupt goes on
    with pytest.raises(KeyboardInterrupt):
        with store.transaction(con, "cannot test"):
            con.execute("CREATE TABLE kept (x INTEGER)")
            con.execute("COMMIT")
            raise KeyboardInterrupt
    assert con.execute("SELECT count(*) FROM kept").fetchone()[0] == 0


def test_a_fifo_socket_device_or_directory_as_the_database_is_one_line_at_once(tmp_path):
    """A path that is not a regular file is refused by its kind before anything opens it: a FIFO
    would hold the command until some writer opened it."""
    import os
    import socket

    nodes = {tmp_path / "dir": "is a directory"}
    (tmp_path / "dir").mkdir()
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
        nodes[tmp_path / "fifo"] = "is a FIFO (named pipe)"
    if hasattr(socket, "AF_UNIX"):
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(tmp_path / "sock"))
        nodes[tmp_path / "sock"] = "is a socket"
    if Path("/dev/null").exists():
        nodes[Path("/dev/null")] = "is a character device"
    if len(nodes) < 4:
        pytest.skip("this system cannot make a FIFO or a socket")
    for node, kind in nodes.items():
        commands = [["ls"], ["sql", "SELECT 1"], ["report", "summary"], ["load", str(KINETO[0])], ["rm", "x"],
                    ["export", str(tmp_path / "out")]]
        for argv in commands if "fifo" not in node.name else [["ls"]] + commands:
            # a FIFO in a process of its own: were it opened, the run would wait (until the timeout)
            run = run_cli(*argv, db=node, process="fifo" in node.name and argv == ["ls"])
            assert run.returncode == 1 and run.stderr == f"tracedb: error: {node}: {kind}, not a database file\n", \
                (argv, node, run.stderr)
    assert not (tmp_path / "out").exists()


def test_a_damaged_database_is_one_line_naming_it_in_every_command(tmp_path):
    """A database file cut short, or with a block overwritten, wherever DuckDB meets the damage
    (opening it, reading a table, a transaction of load or rm, an export): one line naming the
    file and DuckDB's reason, exit 1, no traceback."""
    import shutil

    good = tmp_path / "good.duckdb"
    run_cli("load", KINETO[0], db=good, check=True)
    size = good.stat().st_size
    work = tmp_path / "t.duckdb"

    def damaged_at(offset: int | None) -> Path:
        shutil.copyfile(good, work)
        with open(work, "r+b") as f:
            if offset is None:
                f.truncate(size - 1)
            else:
                f.seek(offset)
                f.write(b"\xff" * 4096)
        return work

    def said(argv: list[str]) -> str | None:
        shutil.rmtree(tmp_path / "out", ignore_errors=True)
        run = run_cli(*argv, db=work)
        if run.returncode == 0:
            return None
        assert run.returncode == 1 and "Traceback" not in run.stderr, (argv, run.stderr)
        lines = run.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"tracedb: error: {work}: "), (argv, run.stderr)
        return lines[0]

    seen = {}
    for offset in [None, *range(3 * 4096, size - 4096, 256 * 1024)]:
        damaged_at(offset)
        line = said(["report", "kernels"])
        if line:
            seen.setdefault("at open" if "cannot open database" in line else "later", offset)
    assert set(seen) == {"at open", "later"}, seen  # both kinds of damage were met
    for offset in seen.values():
        for argv in (["load", str(KINETO[1])], ["rm", KINETO[0].name.split(".")[0]], ["export", str(tmp_path / "out")],
                     ["sql", "SELECT count(*) FROM kernels"], ["ls"]):
            damaged_at(offset)
            said(argv)
