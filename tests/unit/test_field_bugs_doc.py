"""docs/field-bugs.md and the citations of it stay honest: every cited id has a section,
every test a section names exists, and the old citation form (a bare bug number) does
not come back. Reads files only."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "field-bugs.md"
SCANNED = ("migration", "tests", "docs", "runbooks", "charts", "README.md", "ARCHITECTURE.md")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".tpl", ".txt", ".json", ".toml", ".sh"}
SKIPPED_DIRS = {"__pycache__", "node_modules"}

SECTION = re.compile(r'^<a id="(fb-\d{2})"></a>\n## (FB-\d{2}): ', re.MULTILINE)
CITATION = re.compile(r"field-bugs\.md#(fb-\d+)\b", re.IGNORECASE)
SHORT_ID = re.compile(r"\bFB-(\d+)\b")
TEST_REF = re.compile(r"\b(tests/[\w/]+\.py)::(test_\w+)(?:\[[^\]]*\])?")
OLD_STYLE = re.compile(
    r"\bfield[ -]bugs? #?\d+|\bbugs? #\d+|\bbugs? \d+\b|shared/reference/kafka-migration\.md",
    re.IGNORECASE,
)


@cache
def _texts() -> tuple[tuple[Path, str], ...]:
    """Every scanned file (docs/field-bugs.md among them), with its text."""
    return tuple((p, p.read_text(errors="replace")) for p in _files())


def _files() -> list[Path]:
    out = []
    for name in SCANNED:
        top = ROOT / name
        if top.is_file():
            out.append(top)
            continue
        for p in sorted(top.rglob("*")):
            if (
                p.is_file()
                and p.suffix in SUFFIXES
                and not SKIPPED_DIRS.intersection(p.relative_to(ROOT).parts)
                and p != Path(__file__).resolve()
            ):
                out.append(p)
    return out


def _sections() -> dict[str, str]:
    """Each section's anchor -> its text up to the next section."""
    text = DOC.read_text()
    found = list(SECTION.finditer(text))
    assert found, 'docs/field-bugs.md has no <a id="fb-NN"></a> / ## FB-NN: sections'
    out = {}
    for i, m in enumerate(found):
        anchor, heading = m.groups()
        assert heading.lower() == anchor, f"{heading} under the anchor {anchor}"
        assert anchor not in out, f"{anchor} twice"
        end = found[i + 1].start() if i + 1 < len(found) else len(text)
        out[anchor] = text[m.start() : end]
    return out


def _where(path: Path, text: str, pos: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, pos) + 1}"


def test_the_sections_are_numbered_in_order_without_gaps() -> None:
    anchors = list(_sections())
    assert anchors == [f"fb-{n:02d}" for n in range(1, len(anchors) + 1)]


def test_every_citation_names_a_section() -> None:
    sections = _sections()
    missing = []
    for path, text in _texts():
        for m in CITATION.finditer(text):
            if m.group(1).lower() not in sections:
                missing.append(f"{_where(path, text, m.start())}: {m.group(0)}")
        for m in SHORT_ID.finditer(text):
            if f"fb-{int(m.group(1)):02d}" not in sections or len(m.group(1)) != 2:
                missing.append(f"{_where(path, text, m.start())}: {m.group(0)}")
    assert not missing, "citations of no section of docs/field-bugs.md:\n" + "\n".join(missing)


def test_the_writer_scenarios_are_named_after_sections() -> None:
    scenarios = (ROOT / "tests/integration/test_zk_writer_field_bugs.py").read_text()
    sections = _sections()
    for number in re.findall(r"^def test_bug_(\d+)_", scenarios, re.MULTILINE):
        assert f"fb-{number}" in sections, f"test_bug_{number}_... has no section"


def test_every_test_a_section_names_exists() -> None:
    wrong = []
    named = 0
    for anchor, body in _sections().items():
        for rel, name in TEST_REF.findall(body):
            named += 1
            path = ROOT / rel
            if not path.is_file():
                wrong.append(f"{anchor}: {rel} does not exist")
            elif not re.search(rf"^\s*def {name}\(", path.read_text(), re.MULTILINE):
                wrong.append(f"{anchor}: {rel} has no def {name}")
    assert named, "no section names a test"
    assert not wrong, "\n".join(wrong)


def test_each_section_names_a_test_or_says_it_has_none() -> None:
    for anchor, body in _sections().items():
        assert "**Tests:**" in body, f"{anchor} has no Tests line"
        assert TEST_REF.search(body) or "not yet tested" in body, anchor


def test_the_old_citation_form_does_not_come_back() -> None:
    found = []
    for path, text in _texts():
        for m in OLD_STYLE.finditer(text):
            found.append(f"{_where(path, text, m.start())}: {m.group(0)!r}")
    assert not found, "cite docs/field-bugs.md#fb-NN instead:\n" + "\n".join(found)


def test_the_old_style_pattern_catches_the_forms_it_replaced() -> None:
    for old in ("(field bug 24)", "field bug #5", "Kafka's field bug 16:", "bug 12", "bug #3"):
        assert OLD_STYLE.search(old), old
    for fine in ("test_bug_01_writes", "docs/field-bugs.md#fb-24", "a bug in the edit"):
        assert not OLD_STYLE.search(fine), fine
