"""A .properties file changed in place: only the changed keys' lines touched, and what
Java reads from the result is the old map with exactly those changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from migration.common.files import ChangedSinceReadError, replace_contents
from migration.common.properties import PropertiesError, parse_properties
from migration.common.properties_edit import edited_properties


def test_only_the_lines_of_changed_keys_are_touched() -> None:
    text = (
        "# the operator's header\r\n"
        "\r\n"
        "  broker.id = 2\r\n"
        "zookeeper.connect=zk:2181\r\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,\\\r\n"
        "    INTERNAL:PLAINTEXT\r\n"
        "! a note on the rack\r\n"
        "broker.rack: r1\r\n"
        "log.dirs=/old\r\n"
        "log.dirs=/data\r\n"
        "# the end, with no line end"
    )
    changes = {
        "broker.id": "7",  # the indent, spelling and separator kept
        "zookeeper.connect": None,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
        "log.dirs": "/data2",  # the last of a repeated key replaced, the earlier removed
        "node.id": "\u00e9 =",  # appended, escaped
    }
    assert edited_properties(text, changes) == (
        "# the operator's header\r\n"
        "\r\n"
        "  broker.id = 7\r\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL\r\n"
        "! a note on the rack\r\n"
        "broker.rack: r1\r\n"
        "log.dirs=/data2\r\n"
        "# the end, with no line end\r\n"
        "node.id=\\u00E9 =\r\n"
    )


def test_a_line_continued_at_the_end_is_ended_before_a_key_is_appended() -> None:
    assert edited_properties("a=x\\", {"b": "y"}) == "a=x\nb=y\n"
    assert edited_properties("\\\n", {"b": "y"}) == "=\nb=y\n"  # Java's "" = ""


def test_a_blank_separator_is_kept_and_a_leading_separator_escaped() -> None:
    assert edited_properties("key value\n", {"key": "=v"}) == "key \\=v\n"


_FRAGMENT = st.sampled_from(["a", "b", "k", "=", ":", " ", "\\", "#", "!", "\t", "\u00e9", "x"])
_LINE = st.lists(_FRAGMENT, max_size=8).map("".join)
_TEXT = st.tuples(
    st.lists(_LINE, max_size=8), st.sampled_from(["\n", "\r\n", "\r"]), st.booleans()
).map(lambda t: t[1].join(t[0]) + (t[1] if t[2] else ""))
_CHANGES = st.dictionaries(
    st.sampled_from(["a", "b", "k", "a b", "", "#"]),
    st.none() | st.text(st.characters(codec="utf-8"), max_size=6),
    max_size=4,
)


@given(_TEXT, _CHANGES)
def test_java_reads_the_old_map_with_exactly_the_changes(
    text: str, changes: dict[str, str | None]
) -> None:
    try:
        before = parse_properties(text)
    except PropertiesError:
        assume(False)
        return
    expected = {k: v for k, v in before.items() if k not in changes}
    expected |= {k: v for k, v in changes.items() if v is not None}
    after = parse_properties(edited_properties(text, changes))
    assert after == expected


def test_a_file_written_meanwhile_is_left_alone(tmp_path: Path) -> None:
    # The edit was made on what was read: a file that changed since is not overwritten
    # (the change made meanwhile would be lost) and no backup or temporary is left.
    config = tmp_path / "server.properties"
    config.write_bytes(b"broker.id=1\n# added by the operator meanwhile\n")
    with pytest.raises(ChangedSinceReadError):
        replace_contents(config, b"node.id=1\n", backup=".bak", expected=b"broker.id=1\n")
    assert config.read_bytes() == b"broker.id=1\n# added by the operator meanwhile\n"
    assert [p.name for p in tmp_path.iterdir()] == [config.name]
