"""Kernel names for people: C++ (Itanium ABI) names demangled, and shortened to fit a table.

ROCm traces often carry kernels as mangled symbols (`_ZN4vllm18act_and_mul_kernelI...`) where
CUPTI writes them demangled (`void vllm::act_and_mul_kernel<...>(...)`). The demangling is the C++
runtime's own `__cxa_demangle` (libstdc++, or libc++ on macOS), the demangler c++filt and gdb use,
so one operation reads the same on both vendors. Without a C++ runtime a name is shown as written.

Only display uses this: the database, csv and json keep every name exactly as the trace wrote it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re

_RUNTIMES = ("libstdc++.so.6", "libc++.so.1", "libc++.1.dylib", "libc++.dylib")


@functools.cache
def _cxa_demangle():
    """The C++ runtime's __cxa_demangle and the C library's free, or None when there is none."""
    candidates = list(_RUNTIMES)
    for name in ("stdc++", "c++"):
        found = ctypes.util.find_library(name)
        if found:
            candidates.append(found)
    for candidate in candidates:
        try:
            runtime = ctypes.CDLL(candidate)
            demangle = runtime.__cxa_demangle
        except (OSError, AttributeError):
            continue
        demangle.restype = ctypes.c_void_p
        demangle.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
                             ctypes.POINTER(ctypes.c_int)]
        free = ctypes.CDLL(None).free
        free.argtypes = [ctypes.c_void_p]
        free.restype = None
        return demangle, free
    return None


@functools.lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """The readable form of an Itanium-mangled name (`_Z...`); any other name as it is."""
    if not name.startswith("_Z"):
        return name
    runtime = _cxa_demangle()
    if runtime is None:
        return name
    demangle_c, free = runtime
    status = ctypes.c_int()
    pointer = demangle_c(name.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not pointer:
        return name  # not a valid mangled name after all
    try:
        return ctypes.string_at(pointer).decode("utf-8", "replace")
    finally:
        free(pointer)


def _strip_signature(text: str) -> str:
    """Drop a demangled function's parameter list and its return type: `void f<T>(int*)` -> `f<T>`."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(" and depth == 0 and i > 0:
            text = text[:i]
            break
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth = max(0, depth - 1)
    # the return type is the part before the last space outside brackets (`void ns::kernel<...>`)
    depth, cut = 0, -1
    for i, ch in enumerate(text):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth = max(0, depth - 1)
        elif ch == " " and depth == 0:
            cut = i
    return text[cut + 1:] if cut >= 0 else text


def _unqualify_arguments(text: str) -> str:
    """Inside template arguments, a qualified name keeps its last part, and a function pointer its
    name: `k<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&))>`
    -> `k<BFloat16, &silu_kernel<BFloat16>>`."""
    start = text.find("<")
    if start < 0:
        return text
    args = text[start:]
    for _ in range(3):  # a pointer to a function whose arguments hold another
        args = re.sub(r"&\((?:[^()<>]*\s)?([\w:]+(?:<[^()]*?>)?)\([^()]*\)\)", r"&\1", args)
    args = re.sub(r"\b(?:\w+::)+(\w)", r"\1", args)
    return text[:start] + args


def _collapse_templates(text: str, keep_depth: int) -> str:
    """Template arguments nested deeper than keep_depth become `…`."""
    out, depth = [], 0
    for ch in text:
        if ch == "<":
            depth += 1
            if depth == keep_depth + 1:
                out.append("<…")
                continue
        elif ch == ">":
            depth -= 1
            if depth == keep_depth:
                out.append(">")
                continue
        if depth <= keep_depth:
            out.append(ch)
    return "".join(out)


@functools.lru_cache(maxsize=65536)
def short(name: str, width: int = 48) -> str:
    """A kernel name in at most `width` characters: demangled, without return type, parameters and
    the namespaces of its template arguments; nested template arguments collapsed until it fits,
    else cut with `…`."""
    text = demangle(name).strip().replace("(anonymous namespace)::", "")
    text = _unqualify_arguments(_strip_signature(text)) or name
    for depth in (2, 1):
        if len(text) <= width:
            break
        text = _collapse_templates(text, depth)
    return text if len(text) <= width else text[:width - 1] + "…"


_SHARE = re.compile(r"^(.*?)( \(\d+%\))?$")


def short_list(cell: str, width: int = 48) -> str:
    """Each name of a `name (share%); name (share%)` list shortened (shares kept)."""
    parts = []
    for part in cell.split("; "):
        m = _SHARE.match(part)
        parts.append(short(m.group(1), width) + (m.group(2) or ""))
    return "; ".join(parts)
