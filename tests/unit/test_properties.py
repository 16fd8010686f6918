"""Java's .properties rules (java.util.Properties.load(InputStream)), as Kafka reads its
configs, and the writing that Java reads back as meant."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from migration.common.properties import (
    ConfigError,
    PropertiesError,
    load_properties,
    parse_properties,
    read_properties,
    render_properties,
)

# (input bytes, the map Java 17's Properties.load(InputStream) gives). Worked out from
# Java's documented rules, and checked once against Java itself.
JAVA_READS: list[tuple[bytes, dict[str, str]]] = [
    (b"a=b\n", {"a": "b"}),
    (b"a:b", {"a": "b"}),
    (b"a b", {"a": "b"}),
    (b"a\t\f b\n", {"a": "b"}),
    (b"a = b  \t\n", {"a": "b  \t"}),  # trailing blanks of a value are kept
    (b"a = = b\n", {"a": "= b"}),  # at most one separator
    (b"a  :  :b\n", {"a": ":b"}),
    (b"  # comment\n\t! another\n\n", {}),
    (b"a=b # not a comment\n", {"a": "b # not a comment"}),
    (b"a\\=b=c\n", {"a=b": "c"}),
    (b"a\\ b c\n", {"a b": "c"}),
    (b"a\\:b:c\n", {"a:b": "c"}),
    (b"\\#a=b\n", {"#a": "b"}),
    (b"a\\\\=b\n", {"a\\": "b"}),  # an even run of backslashes escapes none of the `=`
    (b"=b\n", {"": "b"}),
    (b"   a   \n", {"a": ""}),
    (b"a=\\ b\n", {"a": " b"}),  # an escaped leading blank is kept
    (b"a=\\t\\n\\r\\f\\b\\q\\\\\n", {"a": "\t\n\r\fbq\\"}),
    (b"a=\\u00e9\\u20AC\\U0041\n", {"a": "\u00e9\u20acU0041"}),  # \U is not an escape
    (b"a=\\uD83D\\uDE00\n", {"a": "\U0001f600"}),  # a UTF-16 surrogate pair: one character
    (b"a=x\\\n   y\n", {"a": "xy"}),  # the continued line's leading blanks are dropped
    (b"ke\\\n  y=v\n", {"key": "v"}),
    (b"a=x\\\\\nb=y\n", {"a": "x\\", "b": "y"}),  # an even run does not continue
    (b"a=x\\\\\\\n  y\n", {"a": "x\\y"}),
    (b"a=x\\\r\n y\r\nb=z\rc=w", {"a": "xy", "b": "z", "c": "w"}),
    (b"a=x\\\r\ny", {"a": "xy"}),
    (b"a=1\r\rb=2\r", {"a": "1", "b": "2"}),
    (b"# x\\\nb=c\n", {"b": "c"}),  # a comment never continues
    (b"a=x\\\n  # not a comment\n", {"a": "x# not a comment"}),
    (b"a=x\\\n!y\n", {"a": "x!y"}),
    (b"a=x\\\n\nb=y\n", {"a": "x", "b": "y"}),  # an empty continuation ends the line
    (b"a=x\\\n   \nb=y\n", {"a": "x", "b": "y"}),
    (b"a=x\\", {"a": "x"}),  # a backslash ending the file is dropped
    (b"a=\\\n", {"a": ""}),
    (b"a=\\\n\\\n  z\n", {"a": "z"}),
    (b"a=x\\\n#c\\\nb=d\n", {"a": "x#cb=d"}),
    (b"\\\n#c\\\nb=d\n", {"b": "d"}),  # a continued line holding nothing: still new
    (b"\\\n\nk=v\n", {"k": "v"}),
    (b"\\\n  k=v\n", {"k": "v"}),
    (b"\\\n", {"": ""}),
    (b"a\x0bb=c\n", {"a\x0bb": "c"}),  # a vertical tab is not a blank
    (b"a=b\x00c\n", {"a": "b\x00c"}),
    (b"a\xa0=b\n", {"a\xa0": "b"}),  # nor is a no-break space
    (b"\x0c a=b\n", {"a": "b"}),
    (b"a=1\na=2\n", {"a": "2"}),  # the last wins
    (b"a=caf\xe9\n", {"a": "caf\u00e9"}),  # ISO-8859-1: a byte is a character
    (b"a=caf\xc3\xa9\n", {"a": "caf\u00c3\u00a9"}),  # so a UTF-8 \u00e9 is two
]


@pytest.mark.parametrize(("data", "expected"), JAVA_READS)
def test_what_java_reads(data: bytes, expected: dict[str, str]) -> None:
    assert parse_properties(data.decode("latin-1")) == expected


@pytest.mark.parametrize("text", ["a=\\u00\n", "ok=1\nbad=\\u12g4\n"])
def test_a_malformed_unicode_escape_names_its_line(text: str) -> None:
    with pytest.raises(PropertiesError, match=r"line \d: malformed \\uXXXX"):
        parse_properties(text)


def test_a_file_is_read_as_iso_8859_1_and_trimmed_as_kafka_parses_values(
    tmp_path: Path,
) -> None:
    path = tmp_path / "server.properties"
    path.write_bytes(b"latin=caf\xe9 \nkept=\\ \\u0020v \\t\nplain=1\n")
    assert read_properties(path) == {"latin": "caf\u00e9", "kept": "v", "plain": "1"}
    assert load_properties(path).text.encode("latin-1") == path.read_bytes()


def test_utf8_in_a_value_is_named_not_shown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "server.properties"
    path.write_bytes(
        b"# caf\xc3\xa9 in a comment is no matter\nok=1\nssl.key.password=p\xc3\xa4ss\n"
    )
    with caplog.at_level(logging.WARNING):
        assert read_properties(path)["ssl.key.password"] == "p\u00c3\u00a4ss"  # as Java
    [warning] = [r.getMessage() for r in caplog.records]
    assert f"{path}: line 3 ('ssl.key.password')" in warning
    assert "ISO-8859-1" in warning and "\\uXXXX" in warning
    assert "ss" not in warning.replace("ssl.key.password", "")  # the value is not shown


def test_a_byte_order_mark_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_bytes(b"\xef\xbb\xbfbroker.id=1\n")
    with pytest.raises(ConfigError, match="byte-order mark"):
        read_properties(path)


def test_a_properties_file_over_a_mebibyte_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    with path.open("wb") as f:  # sparse: 2 GiB that are never read
        f.truncate(2 * 1024**3)
    with pytest.raises(ConfigError, match=r"server.properties.*more than 1,048,576 bytes"):
        read_properties(path)


def test_writing_escapes_what_java_needs_escaped_in_ascii() -> None:
    text = render_properties(
        {"a key=:#!": " lead=:#! trail ", "uni": "\u00e9\u20ac\U0001f600", "=v": "=x"},
        "zk2kraft \u00e9",
    )
    assert text == (
        "# zk2kraft \\u00E9\n"
        "a\\ key\\=\\:\\#\\!=\\ lead=:#! trail \n"
        "uni=\\u00E9\\u20AC\\uD83D\\uDE00\n"
        "\\=v=\\=x\n"
    )


_TEXT = st.text(st.characters(codec="utf-8"), max_size=20)


@given(st.dictionaries(_TEXT, _TEXT, max_size=8), _TEXT)
def test_rendered_properties_read_back_equal(props: dict[str, str], header: str) -> None:
    text = render_properties(props, header)
    assert text.isascii()
    assert parse_properties(text) == props
