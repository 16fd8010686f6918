"""Every preflight finding says what to do about it: each code the checks can yield has
an entry in :data:`migration.bridge.preflight.FIXES` (the rehearsal's report shows it)."""

from __future__ import annotations

import inspect
import re

from migration.bridge import preflight


def codes_yielded() -> set[str]:
    """The codes passed to ``_blocker``/``_warning`` in the checks' source: literals, or
    the module's constants."""
    source = inspect.getsource(preflight)
    found = set()
    for arg in re.findall(r"_(?:blocker|warning)\(\s*([A-Z_\"]+)", source):
        found.add(arg.strip('"') if arg.startswith('"') else getattr(preflight, arg))
    return found


def test_every_code_the_checks_yield_has_a_fix() -> None:
    codes = codes_yielded()
    assert len(codes) >= 15
    assert codes <= set(preflight.FIXES), codes - set(preflight.FIXES)


def test_a_finding_without_a_fix_falls_back_to_its_own_words() -> None:
    known = preflight.Finding("blocker", "REASSIGNMENT_IN_PROGRESS", "m")
    assert "kafka-reassign-partitions --cancel" in preflight.fix_of(known)
    assert preflight.fix_of(preflight.Finding("warning", "NEW_CODE", "do this")) == "do this"
