"""A plain-Python statement of the seed AIE post-processor's rules, used to check the SQL views on
random traces: robust kernel pairing, LOCK_STALL spans and boundaries, iteration split.

It follows the seed step by step (two-pointer walks over sorted lists), which is exactly what the
views compute with window functions; the one intended difference, empty iterations, is applied by
the caller.
"""

from __future__ import annotations

from statistics import median

LOCK_STALL_FACTOR = 20.0


def greedy_pairs(starts: list[int], ends: list[int]) -> list[tuple[int, int]]:
    i = j = 0
    out = []
    while i < len(starts) and j < len(ends):
        if ends[j] <= starts[i]:
            j += 1
            continue
        out.append((starts[i], ends[j]))
        i += 1
        j += 1
    return out


def dedup_by_gap(times: list[int], gap: int) -> list[int]:
    out: list[int] = []
    for t in times:
        if not out or (t > out[-1] and t - out[-1] >= gap):
            out.append(t)
    return out


def robust_pairs(starts: list[int], ends: list[int]) -> list[tuple[int, int]]:
    prelim = greedy_pairs(sorted(starts), sorted(ends))
    med = max(1, int(median([e - s for s, e in prelim]))) if prelim else 1
    gap = max(1, int(0.25 * med))
    s_kept, e_kept = dedup_by_gap(sorted(starts), gap), dedup_by_gap(sorted(ends), gap)
    pairs = []
    i = j = 0
    last_end = -1
    while i < len(s_kept) and j < len(e_kept):
        if s_kept[i] <= last_end:
            i += 1
            continue
        while j < len(e_kept) and e_kept[j] <= s_kept[i]:
            j += 1
        if j >= len(e_kept):
            break
        pairs.append((s_kept[i], e_kept[j]))
        last_end = e_kept[j]
        i += 1
        j += 1
    if not pairs:
        return []
    m = median([e - s for s, e in pairs])
    lo = max(1, int((1.0 / 3.0) * m))
    hi = max(lo + 1, int(3.0 * m))
    kept = [p for p in pairs if lo <= p[1] - p[0] <= hi]
    return kept or pairs


def iterations(pairs: list[tuple[int, int]], stall_begins: list[int], stall_ends: list[int]) -> list[list[tuple[int, int]]]:
    """The seed's split, empty iterations included."""
    if not pairs:
        return []
    med = median([e - s for s, e in pairs])
    stalls = greedy_pairs(sorted(stall_begins), sorted(stall_ends))
    bounds = sorted({e for s, e in stalls if e - s >= LOCK_STALL_FACTOR * med})
    out, cur, b = [], [], 0
    for p in pairs:
        while b < len(bounds) and p[0] > bounds[b]:
            out.append(cur)
            cur = []
            b += 1
        cur.append(p)
    out.append(cur)
    return out
