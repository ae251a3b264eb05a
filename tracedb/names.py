"""Kernel names for people: C++ (Itanium ABI) names demangled, and shortened to fit a table.

ROCm traces often carry kernels as mangled symbols (`_ZN4vllm18act_and_mul_kernelI...`) where
CUPTI writes them demangled (`void vllm::act_and_mul_kernel<...>(...)`). The demangling is the C++
runtime's own `__cxa_demangle` (libstdc++, or libc++ on macOS); for the names it cannot read (an
older runtime than the compiler that built the kernel: GCC 12 reads no `Tn` template parameter
declaration), LLVM's demangler (the pycxxfilt package, which ships LLVM's sources, so it reads what
the newest Clang writes), then binutils' c++filt when installed; so one operation reads the same on
both vendors. A name none can read is shown as written.

Only display uses this: the database, csv and json keep every name exactly as the trace wrote it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re
import shutil
import subprocess
from typing import Iterable, Sequence

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


_DEMANGLED: dict[str, str] = {}  # names demangled so far (by either demangler)
_CXXFILT = ("c++filt", "llvm-cxxfilt")


def _runtime_demangle(name: str) -> str | None:
    runtime = _cxa_demangle()
    if runtime is None:
        return None
    demangle_c, free = runtime
    status = ctypes.c_int()
    pointer = demangle_c(name.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not pointer:
        return None  # not a mangling this runtime knows (or not a valid name)
    try:
        return ctypes.string_at(pointer).decode("utf-8", "replace")
    finally:
        free(pointer)


def _cxxfilt(mangled: list[str]) -> dict[str, str]:
    """Names the runtime could not read, given to c++filt (binutils' libiberty, often newer than
    the C++ runtime: GCC 12's libstdc++ rejects the bfloat16 mangling DF16b that it reads) in one
    call; {} when no c++filt is installed."""
    for tool in _CXXFILT:
        exe = shutil.which(tool)
        if not exe:
            continue
        try:
            done = subprocess.run([exe], input="\n".join(mangled) + "\n", capture_output=True, text=True,
                                  timeout=30, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        lines = done.stdout.splitlines()
        if done.returncode == 0 and len(lines) == len(mangled):
            return dict(zip(mangled, lines))
    return {}


def _llvm_demangle(name: str) -> str | None:
    """LLVM's Itanium demangler (pycxxfilt), or None when it cannot read the name or is not
    installed (it needs Python 3.11)."""
    try:
        import pycxxfilt
    except ImportError:
        return None
    try:
        return pycxxfilt.itanium_demangle(name)
    except (ValueError, TypeError):
        return None


def prepare(names: Iterable[str]) -> None:
    """Demangle many names at once (a table's kernel column): the runtime first, then LLVM's
    demangler, then one c++filt call for the names neither could read."""
    left = []
    for name in {n for n in names if isinstance(n, str) and n.startswith("_Z") and n not in _DEMANGLED}:
        readable = _runtime_demangle(name) or _llvm_demangle(name)
        if readable is None:
            left.append(name)
        else:
            _DEMANGLED[name] = readable
    if left:
        found = _cxxfilt(left)
        for name in left:
            _DEMANGLED[name] = found.get(name, name)  # still mangled: shown as written


def prepare_columns(columns: Sequence[str], rows: Iterable[Sequence], formats: dict[str, str]) -> None:
    """Demangle at once every name in a table's kernel-format columns (lists included)."""
    at = [i for i, c in enumerate(columns) if formats.get(c) == "kernel"]
    if at:
        prepare(split_share(part)[0] for r in rows for i in at if isinstance(r[i], str)
                for part in r[i].split("; "))


def demangle(name: str) -> str:
    """The readable form of an Itanium-mangled name (`_Z...`); any other name as it is."""
    if not name.startswith("_Z"):
        return name
    if name not in _DEMANGLED:
        prepare([name])
    return _DEMANGLED[name]


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
    else cut with `…`: a template at its end, a flat generated name in the middle (its end kept)."""
    text = demangle(name).strip().replace("(anonymous namespace)::", "")
    text = _unqualify_arguments(_strip_signature(text)) or name
    for depth in (2, 1):
        if len(text) <= width:
            break
        text = _collapse_templates(text, depth)
    if len(text) <= width:
        return text
    # a template's name leads (the function, then its arguments); a flat generated name
    # (Cijk_..._MT128x128x64_..., sm90_xmma_..._tilesize128x256x64_...) ends in what tells it apart
    return text[:width - 1] + "…" if "<" in text else middle_cut(text, width)


def middle_cut(text: str, width: int) -> str:
    """text in at most `width` characters, cut in the middle: the end often tells names apart
    (the tile suffix of sm90_xmma_gemm_..._tilesize128x256x64_..., a file's extension)."""
    if len(text) <= width:
        return text
    tail = (width - 1) // 2
    return text[:width - 1 - tail] + "…" + text[len(text) - tail:]


_SHARE = re.compile(r"(.*?)( \(\d+%\))?\Z", re.S)  # a name may hold a newline (valid JSON)


def split_share(part: str) -> tuple[str, str]:
    """`name (45%)` -> (`name`, ` (45%)`); a bare name -> (name, "")."""
    m = _SHARE.match(part)
    return m.group(1), m.group(2) or ""


def short_list(cell: str, width: int = 48) -> str:
    """A `name (share%); name (share%)` list in about `width` characters: each name shortened to
    its part of the room, shares kept."""
    parts = [split_share(part) for part in cell.split("; ")]
    room = (width - 2 * (len(parts) - 1)) // len(parts)
    return "; ".join(short(name, max(12, room - len(share))) + share for name, share in parts)
