"""Error text is bounded and inert (issue 55): every message quoting input goes through
``shown()`` (escaped, cut, the total length said), ``iso()`` never raises, and the admin
listings print what the cluster holds inert. The readers fed control sequences and
megabyte values, through the command in a child process:
tests/integration/test_error_text.py."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from migration.cli.admin_commands import _print_acls
from migration.cli.output import error, errors_as_json, json_error
from migration.common.text import LINE_LIMIT, printable_line, shown
from migration.common.times import MAX_MS, MIN_MS, iso, representable_ms
from migration.proto import controller_pb2 as cpb
from migration.zk.errors import ZnodeFormatError

HOSTILE = "\x1b[2J\x1b]0;pwned\x07"
MEGABYTE = 1 << 20
# what a terminal acts on: C0 controls but newline and tab, DEL, C1 controls, bidi marks
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
LINE_BOUND = LINE_LIMIT + 100  # the backstop's cut and its note


def inert(text: str) -> None:
    """Every line of ``text`` bounded, none holding a raw control character."""
    for line in text.splitlines():
        assert len(line) <= LINE_BOUND, f"a line of {len(line):,} characters"
        assert not RAW_CONTROL.search(line), f"a raw control character in {line[:200]!r}"


# --- the one function ---------------------------------------------------------------


def test_shown_escapes_bounds_and_says_the_length() -> None:
    assert shown(HOSTILE) == repr(HOSTILE) and "\x1b" not in shown(HOSTILE)
    big = HOSTILE + "x" * MEGABYTE
    assert len(shown(big)) < 120 and f"({len(big):,} characters)" in shown(big)
    assert shown(b"\x00" * MEGABYTE).endswith(f"({MEGABYTE:,} bytes)")
    assert shown(bytearray(b"ab")) == "b'ab'" and shown(memoryview(b"a" * 100)).endswith(
        "(100 bytes)"
    )
    assert shown("\u202eevil") == repr("\u202eevil") and "\u202e" not in shown("\u202eevil")
    assert shown(10**5000).startswith("<an integer of")  # past int's str() limit
    assert len(shown(list(range(10**5)))) < 120


def test_bare_is_the_plain_text_only_when_it_is_plain() -> None:
    assert shown("/brokers/ids/1", bare=True) == "/brokers/ids/1"
    assert shown(b"/brokers/ids/1", bare=True) == "/brokers/ids/1"
    assert shown("/a/" + HOSTILE, bare=True) == repr("/a/" + HOSTILE)
    assert shown(b"/a/\xff", bare=True) == repr(b"/a/\xff")
    assert shown("/" + "a" * 100, bare=True).endswith("(101 characters)")
    assert str(ZnodeFormatError("/a/" + HOSTILE, "x")).startswith("'/a/\\x1b[2J")


def test_printable_line_is_the_backstop() -> None:
    assert printable_line("plain\tand\nlines") == "plain\tand\nlines"
    assert printable_line(HOSTILE) == "\\x1b[2J\\x1b]0;pwned\\x07"
    cut = printable_line("y" * MEGABYTE)
    assert len(cut) < LINE_BOUND and cut.endswith(f"(cut: {MEGABYTE:,} characters)")


def test_error_prints_and_holds_only_safe_lines(capsys: pytest.CaptureFixture[str]) -> None:
    error("raw " + HOSTILE + "z" * MEGABYTE, details=[HOSTILE])
    inert(capsys.readouterr().err)
    errors_as_json(True)
    try:
        error("raw " + HOSTILE)
        held = json_error(2)
    finally:
        errors_as_json(False)
    assert held is not None and "\x1b" not in held["error"]["message"]


# --- iso() is total --------------------------------------------------------------------


@pytest.mark.parametrize(
    "ms", [-(2**63), MIN_MS - 1, MIN_MS, -1, 0, 2**53 - 1, 2**53, 2**53 + 1, MAX_MS, MAX_MS + 1,
           253402300800000, 2**63 - 1],
)  # fmt: skip
def test_iso_never_raises(ms: int) -> None:
    text = iso(ms)
    if representable_ms(ms):
        assert text.endswith("Z") and text[:4].isdigit()
    else:
        assert text == f"<out of range: {ms} ms>"


def test_iso_of_the_edges_and_of_datetimes() -> None:
    assert iso(MAX_MS) == "9999-12-31T23:59:59.999Z"
    assert iso(MIN_MS) == "0001-01-01T00:00:00.000Z"
    assert iso(1_764_370_000_123) == "2025-11-28T22:46:40.123Z"
    assert iso(datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)) == "2026-01-02T03:04:05.006Z"
    assert iso(datetime.max.replace(tzinfo=UTC)) == "9999-12-31T23:59:59.999Z"


# --- the readers, through the command a operator runs ----------------------------------


def test_admin_listings_print_what_the_cluster_holds_inert(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An ACL principal or a config value holds any text: printed as a table line, its
    control characters are escaped (text.inert), the rest as stored."""
    hostile = "User:\x1b]0;pwned\x07\u202e"
    _print_acls(
        [cpb.AclBinding(principal=hostile, host="*", operation=3, permission_type=3,
                        resource_type=2, resource_name="t", pattern_type=3)],
        as_json=False,
    )  # fmt: skip
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert "principal=User:\\x1b]0;pwned\\x07\\u202e" in out
