"""JSON text of values parsed with exact numbers (Decimal), whatever their size or depth."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import orjson


# A JSON escape: a surrogate pair, a lone surrogate, or any other (consumed, so that "\\\\ud800",
# an escaped backslash and the text ud800, is told from an escape).
_ESCAPE = re.compile(rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[dD][89a-fA-F][0-9a-fA-F]{2}|.)",
                     re.S)
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def replace_lone_surrogates(text: bytes) -> tuple[bytes, list[int]]:
    """JSON text (from outside any escape) with each invalid surrogate escape (a lone or unpaired
    \\uD800-\\uDFFF, which strict parsers refuse and lenient ones rewrite) replaced by \\ufffd, the
    same length; and the offsets replaced."""
    if not _SURROGATE.search(text):
        return text, []
    out = bytearray(text)
    where = []
    for m in _ESCAPE.finditer(text):
        if m.end() - m.start() == 6 and text[m.start() + 1] in b"uU":
            out[m.start():m.end()] = b"\\ufffd"
            where.append(m.start())
    return bytes(out), where


def _fragment(value):
    if isinstance(value, Decimal):
        return orjson.Fragment(str(value))
    raise TypeError(f"cannot encode {type(value).__name__}")


def fast_dumps(value) -> bytes:
    """orjson encoding keeping Decimal digits as written. Raises TypeError for integers beyond
    64 bits and for nesting deeper than orjson's limit (254 levels)."""
    return orjson.dumps(value, default=_fragment)


def loads_exact(data: bytes | str):
    """Parse JSON keeping every number exact: big integers as int, fractions as Decimal."""
    return json.loads(data, parse_float=Decimal)


def dumps(value) -> str:
    """JSON text of any parsed value: Decimals and big integers exactly, any nesting depth."""
    try:
        return fast_dumps(value).decode()
    except TypeError:
        return _dumps_iterative(value)


def _dumps_iterative(value) -> str:
    out: list[str] = []
    stack: list = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Raw):
            out.append(item.text)
        elif isinstance(item, dict):
            out.append("{")
            parts: list = []
            for i, (k, v) in enumerate(item.items()):
                parts.append(_Raw(("," if i else "") + json.dumps(str(k)) + ":"))
                parts.append(v)
            parts.append(_Raw("}"))
            stack.extend(reversed(parts))
        elif isinstance(item, (list, tuple)):
            out.append("[")
            parts = []
            for i, v in enumerate(item):
                if i:
                    parts.append(_Raw(","))
                parts.append(v)
            parts.append(_Raw("]"))
            stack.extend(reversed(parts))
        elif isinstance(item, Decimal):
            out.append(str(item))
        elif item is None or isinstance(item, (bool, int, float, str)):
            out.append(json.dumps(item))
        else:
            out.append(json.dumps(str(item)))
    return "".join(out)


class _Raw:
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text
