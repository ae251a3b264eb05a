"""The rules of TensorCast's per-operator comparison script (generate_op_comparison.py), stated
in plain Python over the input files: an oracle for the SQL of sql/modules/tensorcast/tensorcast.sql and
the peer of bench/ascend_bench.py.

It reads the files as the script does (json.load of the TensorCast trace, csv.DictReader of the
profile, yaml.safe_load of the op mapping) and follows its rules. Two differences, both also
tracedb's: sums are exact decimals rounded half to even at the end (the script sums binary floats,
which can move an exact tie such as 1275.35 by 0.1), and an hcom kernel's whole-µs start is the
exact integer part of its start (the script's float() of a 16-digit epoch value can round up).
Entries of the op mapping are read under operator_mappings and at the top level. With
exact=False the sums are the script's floats (the benchmark's peer: its cost, not its last digit).
"""

from __future__ import annotations

import ast
import csv
import json
from collections import defaultdict
from decimal import ROUND_HALF_EVEN, Decimal

import yaml

TENTH = Decimal("0.1")


def _dec(value) -> Decimal:
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(str(value).strip())


def load_mapping(path) -> dict:
    if path is None:
        return {}
    with open(path) as f:
        doc = yaml.safe_load(f) or {}
    entries = {k: v for k, v in doc.items() if k != "operator_mappings" and isinstance(v, dict)}
    entries.update(doc.get("operator_mappings") or {})
    return entries


def _entry(name: str, mapping: dict):
    entry = mapping.get(name.replace("torch.ops.", "")) or mapping.get(name)
    return entry if isinstance(entry, dict) else None


def _pairs(raw):
    if not raw or not isinstance(raw, str):
        return None
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return None
    ok = isinstance(value, list) and all(
        isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], str)
        and isinstance(p[1], (int, float)) and not isinstance(p[1], bool) for p in value)
    return value if ok and value else None


def _float(value) -> float:
    return float(value)


def model_side(trace_path, mapping: dict, exact: bool = True) -> dict:
    num = _dec if exact else _float
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    pid = None
    for ev in events:
        if ev.get("ph") == "M" and ev.get("name") == "process_name":
            label = ev.get("args", {}).get("name", "").lower()
            if "profiling" in label or "empirical" in label:
                pid = ev["pid"]
                break
    if pid is None:
        pids = {ev["pid"] for ev in events if ev.get("ph") == "X"}
        if len(pids) != 1:
            raise ValueError(f"cannot identify the profiling pid: {pids}")
        pid = pids.pop()
    zero = num(0)
    stats = defaultdict(lambda: {"total": zero, "count": 0, "hit": 0, "miss": 0, "funcs": []})

    def add(kt, dur, short, hit):
        s = stats[kt]
        s["total"] += dur
        s["count"] += 1
        s["hit" if hit else "miss"] += 1
        if short not in s["funcs"]:
            s["funcs"].append(short)

    for ev in events:
        if ev.get("ph") != "X" or ev.get("pid") != pid:
            continue
        name, dur, args = ev["name"], num(ev.get("dur", 0)), ev.get("args", {})
        short = name.replace("torch.ops.", "")
        entry = _entry(name, mapping)
        if entry and entry.get("zero_cost"):
            continue
        kt = args.get("kernel_type")
        if kt and kt != "?":
            subs = [s.strip() for s in str(kt).split(",") if s.strip()]
            pairs = _pairs(args.get("sub_kernel_durations"))
            if pairs:
                for sub, sub_dur in pairs:
                    add(sub, num(sub_dur), short, True)
            else:
                for sub in subs:
                    add(sub, dur / len(subs), short, True)
            if "all_reduce" in name.lower() and "hcom_allReduce_" not in subs:
                add("hcom_allReduce_", zero, short, True)
        else:
            add((entry or {}).get("kernel_type") or name, dur, short, False)
    for s in stats.values():
        s["status"] = "PARTIAL" if s["hit"] and s["miss"] else "HIT" if s["hit"] else "MISS"
    return dict(stats)


def profile_side(csv_path, exact: bool = True) -> dict:
    num = _dec if exact else _float
    zero = num(0)
    stats = defaultdict(lambda: {"total": zero, "count": 0})
    hcom: dict = {}
    with open(csv_path, encoding="utf-8-sig", newline="") as f:
        for row in csv.DictReader(f):
            kt = (row.get("Type") or "").strip()
            if not kt:
                continue
            dur = num(row.get("Duration(us)", 0))
            if kt.startswith("hcom_"):
                try:
                    start = int(num(row.get("Start Time(us)", "0")))
                except (ArithmeticError, ValueError):
                    start = 0
                hcom[(start, kt)] = max(hcom.get((start, kt), zero), dur)
            elif not kt.endswith("AicpuKernel"):
                stats[kt]["total"] += dur
                stats[kt]["count"] += 1
    for (_, kt), dur in hcom.items():
        stats[kt]["total"] += dur
        stats[kt]["count"] += 1
    return dict(stats)


def _round(value, places: Decimal = TENTH) -> float:
    if isinstance(value, float):
        return round(value, 1 if places == TENTH else 0)
    return float(value.quantize(places, rounding=ROUND_HALF_EVEN))


def comparison(trace_path, csv_path, mapping_path=None, forward_passes: int = 1, exact: bool = True) -> list[dict]:
    tc = model_side(trace_path, load_mapping(mapping_path), exact)
    prof = profile_side(csv_path, exact)
    rows = []
    for kt in sorted(set(tc) | set(prof)):
        zero = Decimal(0) if exact else 0.0
        t = tc.get(kt, {"total": zero, "count": 0, "status": "unmodelled", "funcs": []})
        p = prof.get(kt, {"total": zero, "count": 0})
        per_fwd = p["total"] / forward_passes
        count = (Decimal(p["count"]) if exact else float(p["count"])) / forward_passes
        rows.append({
            "kernel_type": kt,
            "tc_funcs": ", ".join(t["funcs"][:3]),
            "tc_total_us": _round(t["total"]),
            "tc_count": t["count"],
            "prof_per_fwd_us": _round(per_fwd),
            "prof_count": int(_round(count, Decimal(1))),
            "error_pct": _round((t["total"] - per_fwd) / per_fwd * 100) if per_fwd > 0 else 0.0,
            "count_error_pct": _round((t["count"] - count) / count * 100) if count > 0 else 0.0,
            "status": t["status"],
        })
    rows.sort(key=lambda r: max(r["tc_total_us"], r["prof_per_fwd_us"]), reverse=True)
    return rows
