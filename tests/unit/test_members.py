"""tracedb.ingest.members: an object's members read from its bytes in chunks of any size, each
value kept within the cap or set aside with its size, never held beyond it."""

from __future__ import annotations

import json
import random
from decimal import Decimal

import pytest

from tracedb.ingest.members import BadObject, Members, SetAside

DOC = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "totalGlobalMem": 85e9}],
       "quote\"and\\back": "a \"string\" with \\ and \\\" inside, ] } [ {", "empty": {}, "list": [],
       "t": True, "f": False, "n": None, "neg": -1.5e-3, "big": 123456789012345678901234567890}


def _read(text: bytes, sizes, **kw) -> Members:
    members = Members(cap=kw.pop("cap", 1 << 20), total=kw.pop("total", 1 << 30), **kw)
    at = 0
    for size in sizes:
        if at >= len(text):
            break
        members.feed(text[at:at + size])
        at += size
    if at < len(text):
        members.feed(text[at:])
    return members


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1 << 20])
def test_members_are_read_whole_in_chunks_of_any_size(size):
    text = json.dumps(DOC, indent=1).encode()
    members = _read(text, [size] * len(text))
    assert members.done
    assert [k for k, _ in members.items] == list(DOC)
    assert dict(members.items) == json.loads(text, parse_float=Decimal)


def test_random_cuts_read_the_same_members():
    rng = random.Random(7)
    text = json.dumps(DOC).encode()
    for _ in range(200):
        sizes = [rng.randrange(1, 9) for _ in range(len(text))]
        assert dict(_read(text, sizes).items) == json.loads(text, parse_float=Decimal)


def test_a_value_beyond_the_cap_is_set_aside_with_its_size_and_never_held():
    samples = json.dumps(list(range(200_000))).encode()
    text = b'{"a": 1, "samples": ' + samples + b', "b": "x"}'
    members = Members(cap=64 << 10, total=1 << 30)
    held = 0
    for at in range(0, len(text), 4096):
        members.feed(text[at:at + 4096])
        held = max(held, len(members._value or b""))
    assert members.items == [("a", 1), ("samples", SetAside(len(samples), "beyond 65,536 bytes of JSON")), ("b", "x")]
    assert held <= 64 << 10


def test_values_beyond_the_total_kept_are_set_aside():
    text = json.dumps({"a": "x" * 100, "b": "y" * 100, "c": 1}).encode()
    members = _read(text, [len(text)], total=150)
    assert members.items[0] == ("a", "x" * 100)
    assert members.items[1][1] == SetAside(102, "beyond the 150 bytes of metadata kept")
    assert members.items[2] == ("c", 1)


def test_a_value_nested_too_deeply_to_parse_is_set_aside():
    deep = b"[" * 100_000 + b"]" * 100_000
    members = _read(b'{"deep": ' + deep + b', "after": 2}', [65536] * 10)
    assert members.items == [("deep", SetAside(len(deep), "nested too deeply to read")), ("after", 2)]


def test_the_scan_stops_at_the_array_of_stop_at_and_says_where():
    head = b'{"x": {"traceEvents": [1]}, "traceEvents": "not the list", "traceEvents" : \n ['
    members = _read(head + b'{"ph": "X"}]}', [5] * 100, stop_at=b"traceEvents")
    assert members.stopped_at == len(head)
    assert members.items == [("x", {"traceEvents": [1]}), ("traceEvents", "not the list")]


@pytest.mark.parametrize("text", [b'[1, 2]', b'{"a" 1}', b'{"a": 1 "b": 2}', b'{1: 2}', b'{"a": [1, }'])
def test_text_that_is_not_an_object_s_members_is_an_error(text):
    with pytest.raises(BadObject):
        _read(text, [len(text)])


def test_values_without_escapes_read_at_any_cut_the_same():
    """The bytes of a value with no escape are read many at a time: the same members at any cut."""
    doc = {"samples": [{"name": f"s{i}", "stack": [[i], {"a": "]}[{"}], "w": None} for i in range(300)],
           "after": {"x": "[[["}, "n": 5}
    text = json.dumps(doc).encode()
    rng = random.Random(11)
    for _ in range(100):
        sizes = [rng.randrange(1, 400) for _ in range(len(text))]
        assert dict(_read(text, sizes).items) == json.loads(text, parse_float=Decimal)
