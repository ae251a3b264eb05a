"""Output formats: each renderer says what it can do (tracedb.present.RENDERERS), and no code outside
the presentation modules asks which format it is, so that a new format is one entry there."""

from __future__ import annotations

import re
from pathlib import Path

from tracedb import present
from tracedb.render import Format

PACKAGE = Path(present.__file__).resolve().parent
# the modules that are the presentation: the registry and the writers it names
PRESENTATION = {"present.py", "render.py", "html.py"}
SWITCH = re.compile(r"(?:\bis|\bis not|==|!=)\s+Format\.\w+|\bin\s*[(\[{]\s*Format\.")


def test_every_format_has_a_renderer_that_says_what_it_can_do():
    assert set(present.RENDERERS) == set(Format)
    can = {fmt.value: (r.for_people, r.nested, r.one_table, r.figures, r.screen) for fmt, r in present.RENDERERS.items()}
    # exactly one format each draws for a terminal, draws figures, holds one table a file, nests sections
    for i in (2, 3, 4):
        assert sum(c[i] for c in can.values()) == 1
    assert sum(c[1] for c in can.values()) == 1


def test_no_code_outside_the_presentation_switches_on_the_format():
    switching = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in PRESENTATION:
            continue
        lines = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if SWITCH.search(line.split("#", 1)[0])]
        if lines:
            switching[path.relative_to(PACKAGE).as_posix()] = lines
    assert switching == {}, "ask present.renderer(fmt) what the format can do instead"
