"""Files an operator points zk2kraft at are read within a size cap (key and trust stores,
JAAS files), the JAAS parser is linear in its input, and the files zk2kraft writes are
0600 (issue 55, deliverables 4 and 6). Nothing here starts a process or binds a port;
the rehearsal's properties files, holding ``password.encoder.secret``:
tests/integration/test_operator_files.py."""

from __future__ import annotations

import os
import stat
import tracemalloc
from pathlib import Path

import pytest

from migration.cli.output import CliError, read_secret_file
from migration.common.files import PRIVATE_MODE, write_private
from migration.common.jaas import JAAS_MAX_BYTES, JaasError, parse_jaas_config, read_jaas_section
from migration.common.tls import STORE_MAX_BYTES, tls_settings
from migration.local.zookeeper import client_jaas

SECRET = "rehearsal-secret-42"
MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path, follow_symlinks=False).st_mode)


# -- JAAS ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unit", "size"), [("x", 2_000_000), ("\\x", 400_000)], ids=["plain", "escaped"]
)
def test_a_large_quoted_jaas_value_parses_in_linear_memory(unit: str, size: int) -> None:
    # The old pattern, (?:[^"\\]|\\.)*, kept 80-160 bytes of backtracking state per byte
    # of a value (2 MB -> ~300 MB); linear means a few copies of the value at most. (The
    # escaped value is smaller only because tracemalloc slows its many small strings.)
    value = unit * (size // len(unit))
    text = f'{MODULE} required password="{value}";'
    tracemalloc.start()
    try:
        module = parse_jaas_config(text, "sasl.jaas.config")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert module.options["password"] == "x" * (size // len(unit))
    assert peak < 16 * size, f"{peak:,} bytes for a {size:,}-byte value"


@pytest.mark.parametrize(
    ("quoted", "value"),
    [
        (r'"a\"b"', 'a"b'),
        (r'"a\\b"', "a\\b"),
        (r'"\\"', "\\"),
        ('""', ""),
        ('"a;b}c{d=e"', "a;b}c{d=e"),
    ],
)
def test_jaas_quoted_values_keep_their_escapes(quoted: str, value: str) -> None:
    module = parse_jaas_config(f"{MODULE} required k={quoted};", "v")
    assert module.options == {"k": value}


@pytest.mark.parametrize("quoted", [r'"abc', r'"abc\"', '"ab\\'])
def test_an_unterminated_jaas_value_is_an_error(quoted: str) -> None:
    with pytest.raises(JaasError, match=r"^v: cannot read the JAAS text"):
        parse_jaas_config(f"{MODULE} required k={quoted};", "v")


def test_a_jaas_file_is_read_within_its_cap(tmp_path: Path) -> None:
    path = tmp_path / "jaas.conf"
    body = f'Client {{\n  {MODULE} required username="u" password="p";\n}};\n'
    path.write_text(body + "/" + "*" * (JAAS_MAX_BYTES - len(body) - 3) + "*/")
    assert path.stat().st_size == JAAS_MAX_BYTES
    assert read_jaas_section(path, "Client").options == {"username": "u", "password": "p"}
    with path.open("a") as f:
        f.write("\n")
    with pytest.raises(JaasError) as caught:
        read_jaas_section(path, "Client")
    assert str(caught.value) == f"{path}: cannot read: more than {JAAS_MAX_BYTES:,} bytes"


def test_a_jaas_location_that_is_no_file_or_not_text_is_named(tmp_path: Path) -> None:
    with pytest.raises(JaasError, match=r"^/dev/zero: cannot read: not a regular file$"):
        read_jaas_section(Path("/dev/zero"), "Client")
    fifo = tmp_path / "jaas.fifo"
    os.mkfifo(fifo)  # would block a plain read for ever
    with pytest.raises(JaasError, match="not a regular file"):
        read_jaas_section(fifo, "Client")
    binary = tmp_path / "jaas.bin"
    binary.write_bytes(b"Client { \xff };")
    with pytest.raises(JaasError, match=r"jaas\.bin: not UTF-8 text \(byte 9\)"):
        read_jaas_section(binary, "Client")


# -- key and trust stores -----------------------------------------------------------------


@pytest.mark.parametrize("store", ["keystore", "truststore"])
def test_a_store_location_past_the_cap_or_no_file_is_a_problem_naming_it(
    store: str, tmp_path: Path
) -> None:
    big = tmp_path / f"{store}.p12"
    with big.open("wb") as f:
        f.truncate(STORE_MAX_BYTES + 1)  # sparse: costs no disk
    for location, reason in (
        (big, f"more than {STORE_MAX_BYTES:,} bytes"),
        (Path("/dev/zero"), "not a regular file"),
    ):
        problems: list[str] = []
        tls_settings({f"ssl.{store}.location": str(location)}, None, problems)
        assert len(problems) == 1, problems
        assert problems[0].startswith(f"ssl.{store}.location: cannot read ")
        assert str(location) in problems[0] and reason in problems[0]


# -- files holding secrets ----------------------------------------------------------------


def test_write_private_is_0600_new_or_rewritten_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "a.properties"
    old = os.umask(0)
    try:
        write_private(path, "k=1\n")
        assert _mode(path) == PRIVATE_MODE and path.read_text() == "k=1\n"
        path.chmod(0o644)
        write_private(path, "k=2\n")
        assert _mode(path) == PRIVATE_MODE and path.read_text() == "k=2\n"
    finally:
        os.umask(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.properties"]  # no temporary


def test_write_private_replaces_a_symlink_never_writing_through_it(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("untouched\n")
    elsewhere.chmod(0o644)
    link = tmp_path / "b.properties"
    link.symlink_to(elsewhere)
    write_private(link, f"password.encoder.secret={SECRET}\n")
    assert not link.is_symlink() and _mode(link) == PRIVATE_MODE
    assert elsewhere.read_text() == "untouched\n" and _mode(elsewhere) == 0o644


def test_a_secret_file_that_is_no_regular_file_or_too_large_is_refused_unread(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opened plainly, it would block for ever
    big = tmp_path / "big"
    big.write_bytes(b"x" * (64 * 1024 + 1))
    for path, reason in ((fifo, "not a regular file"), (big, "more than 65,536 bytes")):
        with pytest.raises(CliError, match=f"--secret-file {path}: {reason}"):
            read_secret_file(str(path), "--secret-file")
    good = tmp_path / "good"
    good.write_text("s3cret\n")
    assert read_secret_file(str(good), "--secret-file") == "s3cret"


def test_the_local_zookeepers_jaas_files_are_0600_when_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "client-jaas.conf"
    path.write_text("old")
    path.chmod(0o644)
    client_jaas(path, "zk", "pw")
    assert stat.S_IMODE(path.stat().st_mode) == PRIVATE_MODE
    assert 'password="pw"' in path.read_text()
