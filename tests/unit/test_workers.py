"""How many worker processes a load of several files takes by default: one per free core and file,
and none (the command's own process) for one file, for files too small to pay for a worker, or
when other tasks keep the cores busy."""

from __future__ import annotations

import pytest

from tracedb import parallel


def files(tmp_path, *mib):
    out = []
    for i, size in enumerate(mib):
        path = tmp_path / f"t{i}.json"
        with open(path, "wb") as f:
            f.truncate(int(size * (1 << 20)))  # sparse: the size is what counts
        out.append(path)
    return out


@pytest.fixture
def machine(monkeypatch):
    """A machine of 4 cores with a given number of other tasks running."""
    state = {"others": 0}
    monkeypatch.setattr(parallel, "cores", lambda: 4)
    monkeypatch.setattr(parallel, "free_cores", lambda: max(1, 4 - state["others"]))
    return state


def test_asked_for_is_given(tmp_path, machine):
    assert parallel.workers(3, files(tmp_path, 0.1)) == 3
    assert parallel.workers(1, files(tmp_path, 50, 50, 50)) == 1


def test_one_per_free_core_and_file(tmp_path, machine):
    assert parallel.workers(None, files(tmp_path, 20, 20, 20, 20, 20, 20)) == 4
    assert parallel.workers(None, files(tmp_path, 20, 20)) == 2
    machine["others"] = 2
    assert parallel.workers(None, files(tmp_path, 20, 20, 20, 20, 20, 20)) == 2


def test_this_process_for_one_file_small_files_or_busy_cores(tmp_path, machine):
    assert parallel.workers(None, files(tmp_path, 60)) == 1
    assert parallel.workers(None, files(tmp_path, 2, 2, 2)) == 1  # 6 MiB: less than a worker costs
    machine["others"] = 4
    assert parallel.workers(None, files(tmp_path, 20, 20, 20)) == 1


def test_free_cores_reads_the_running_tasks(monkeypatch):
    monkeypatch.setattr(parallel, "cores", lambda: 2)
    real_open = open

    def fake(text):
        return lambda path, *a, **k: (__import__("io").StringIO(text) if path == "/proc/loadavg"
                                      else real_open(path, *a, **k))

    monkeypatch.setattr("builtins.open", fake("0.50 0.40 0.30 1/300 123\n"))  # this process alone
    assert parallel.free_cores() == 2
    monkeypatch.setattr("builtins.open", fake("2.10 2.00 1.90 3/300 123\n"))  # two others running
    assert parallel.free_cores() == 1


@pytest.mark.parametrize("files_text, cpus", [
    ({"/sys/fs/cgroup/cpu.max": "150000 100000\n"}, 2),  # cgroup v2: 1.5 CPUs, rounded up
    ({"/sys/fs/cgroup/cpu.max": "max 100000\n"}, None),
    ({"/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "100000\n", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, 1),
    ({"/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({}, None),
])
def test_a_containers_cpu_quota_bounds_the_cores(monkeypatch, files_text, cpus):
    import io

    def fake(path, *a, **k):
        if path in files_text:
            return io.StringIO(files_text[path])
        raise FileNotFoundError(path)

    monkeypatch.setattr("builtins.open", fake)
    assert parallel._cpu_quota() == cpus
