"""Java's .properties rules (java.util.Properties.load), as Kafka reads its configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from migration.common.properties import (
    ConfigError,
    PropertiesError,
    parse_properties,
    read_properties,
)


def test_javas_rules() -> None:
    text = (
        "# a comment\n"
        "   ! another, indented\n"
        "\n"
        "plain=value\n"
        "colon: value two\n"
        "blank separated   value three  \n"
        "listeners = CONTROLLER://h:9093,\\\n"
        "            PLAINTEXT://h:9092\n"
        "escaped\\=key\\ with\\:stuff = v\n"
        "unicode=caf\\u00e9\\ttab\n"
        "backslash=C:\\\\kafka\\\\data\n"
        "empty=\n"
        "lonely\n"
        "# a comment ending in a backslash does not continue \\\n"
        "after.comment=yes\n"
    )
    assert parse_properties(text) == {
        "plain": "value",
        "colon": "value two",
        "blank": "separated   value three",
        "listeners": "CONTROLLER://h:9093,PLAINTEXT://h:9092",
        "escaped=key with:stuff": "v",
        "unicode": "café\ttab",
        "backslash": "C:\\kafka\\data",
        "empty": "",
        "lonely": "",
        "after.comment": "yes",
    }


def test_an_even_number_of_backslashes_does_not_continue() -> None:
    assert parse_properties("a=x\\\\\nb=y\n") == {"a": "x\\", "b": "y"}


def test_a_malformed_unicode_escape_names_its_line() -> None:
    with pytest.raises(PropertiesError, match=r"line 2: malformed \\uXXXX"):
        parse_properties("ok=1\nbad=\\u12g4\n")


def test_a_properties_file_over_a_mebibyte_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    with path.open("wb") as f:  # sparse: 2 GiB that are never read
        f.truncate(2 * 1024**3)
    with pytest.raises(ConfigError, match=r"server.properties.*more than 1,048,576 bytes"):
        read_properties(path)
