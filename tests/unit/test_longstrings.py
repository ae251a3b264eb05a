"""Strings longer than one event may hold never reach the parser whole: cut in the bytes, marked,
their length kept; every other string reaches it as it was."""

from __future__ import annotations

import io
import json
import random
import re

import pytest

from tracedb.ingest.longstrings import StringCutter, chars_at_least
from tracedb.ingest.nesting import NestingGuard

LIMIT = 40
# texts a string is made of: plain, two- to four-byte characters, escapes of every kind, a
# surrogate pair, backslashes before a quote and before a u
PIECES = ["a", "word ", "é", "€", "\U0001F600", "\\n", "\\\\", "\\\"", "\\u00e9", "\\ud83d\\ude00", "\\\\u0041",
          "{[", "]}", ":,"]


def _string(rng: random.Random) -> str:
    """The JSON text of a string (inside its quotes), short or far beyond LIMIT characters."""
    count = rng.choice((rng.randint(0, 8), rng.randint(LIMIT - 5, LIMIT + 5), rng.randint(3 * LIMIT, 30 * LIMIT)))
    return "".join(rng.choice(PIECES) for _ in range(count))


def _text(rng: random.Random) -> bytes:
    events = []
    for i in range(rng.randint(1, 6)):
        events.append('{"ph": "X", "name": "%s", "i": %d, "args": {"k": ["%s", "%s"]}}'
                      % (_string(rng), i, _string(rng), _string(rng)))
    return ("[" + ", ".join(events) + "]").encode()


def _read(text: bytes, rng: random.Random, cutter: StringCutter) -> bytes:
    guard = NestingGuard(io.BytesIO(text), strings=cutter)
    out = bytearray()
    while chunk := guard.read(rng.choice((rng.randint(1, 7), rng.randint(8, 64), rng.randint(65, 300)))):
        out += chunk
    return bytes(out)


def _strings(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


def _raw_strings(text: bytes) -> list[bytes]:
    return re.findall(rb'"((?:[^"\\]|\\.)*)"', text, re.S)


@pytest.mark.parametrize("seed", range(40))
def test_a_string_beyond_the_limit_is_cut_marked_and_counted_and_no_other(seed):
    """Read in chunks of any size (escapes, characters and surrogate pairs cut in two): the text
    keeps its length and parses; a string within the limit is as it was; one beyond it is as it
    was or its beginning and the marker, the number under which its length is kept; what the
    parser builds of a string is at most the limit and a chunk."""
    rng = random.Random(seed)
    text = _text(rng)
    cutter = StringCutter(LIMIT)
    read = _read(text, rng, cutter)
    assert len(read) == len(text)
    before, after = json.loads(text), json.loads(read)
    raw = _raw_strings(text)
    pairs = list(zip(_strings(before), _strings(after)))
    assert len(pairs) == len(raw)  # the same strings, in the same places
    marker = cutter.marker_text()
    numbers = []
    for (was, now), bytes_ in zip(pairs, raw):
        if now == was:
            continue
        assert len(was) > LIMIT, (was, now)  # never one within the limit
        assert now.endswith("\x00") and marker in now, now
        kept, number = now[:now.rindex(marker)], int(now[now.rindex(marker) + len(marker):-1])
        assert was.startswith(kept) and len(kept) <= LIMIT + 300
        # counted by pieces: never above the string's length, never below the count of it whole
        assert chars_at_least(bytes_) <= cutter.sizes[number] <= len(was) and cutter.sizes[number] > LIMIT
        numbers.append(number)
    assert sorted(numbers) == list(range(cutter.started))


def test_the_count_is_exact_without_escapes_and_never_above_with_them():
    for text in ("plain", "é€\U0001F600 and more", ""):
        assert chars_at_least(text.encode()) == len(text)
    rng = random.Random(7)
    for _ in range(200):
        body = _string(rng)
        assert chars_at_least(body.encode()) <= len(json.loads(f'"{body}"'))


def test_a_marker_in_the_file_is_only_text():
    """A file cannot forge the marker: it carries a token of this reader."""
    one, other = StringCutter(LIMIT), StringCutter(LIMIT)
    assert one.marker_text() != other.marker_text()


def test_a_long_string_is_cut_once_and_its_length_kept_exactly():
    body = "é" * (10 * LIMIT)
    text = json.dumps({"name": body, "next": "x"}, ensure_ascii=False).encode()
    cutter = StringCutter(LIMIT)
    read = _read(text, random.Random(1), cutter)
    parsed = json.loads(read)
    assert cutter.started == 1 and cutter.sizes == {0: 10 * LIMIT} and parsed["next"] == "x"
    assert parsed["name"] == parsed["name"][:parsed["name"].index("\x00")] + cutter.marker_text() + "0\x00"
    assert len(parsed["name"]) < 2 * LIMIT + 300  # what the parser built of it


@pytest.mark.parametrize("seed", range(40))
def test_a_string_cut_for_its_bytes_within_the_limit_keeps_its_rest(seed):
    """Strings of more than a few bytes reach the parser cut (keep_bytes); those within the limit
    keep the bytes the marker stood for, from which the string is whole again; the others are
    beyond the limit."""
    rng = random.Random(seed)
    text = _text(rng)
    cutter = StringCutter(LIMIT, keep_bytes=24)
    after = json.loads(_read(text, rng, cutter))
    marker = cutter.marker_text()
    restored = 0
    for was, now in zip(_strings(json.loads(text)), _strings(after)):
        if now == was:
            continue
        kept, number = now[:now.rindex(marker)], int(now[now.rindex(marker) + len(marker):-1])
        if number in cutter.rests:
            assert kept + json.loads(b'"' + cutter.rests[number] + b'"') == was
            restored += 1
        else:
            assert len(was) > LIMIT and cutter.sizes[number] > LIMIT
    assert restored == len(cutter.rests)
