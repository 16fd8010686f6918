"""JAAS login configuration, as Kafka and ZooKeeper read it: a file of named sections
(``Client { <module> required key="value"...; };``, named by
``java.security.auth.login.config``), or one module in a ``sasl.jaas.config`` value.

Only what the modules' options say is taken (the class names are checked by the
callers); option values may hold secrets, so neither :class:`LoginModule` nor the
errors ever show them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from migration.common.files import UnreadableFileError, read_regular
from migration.common.text import shown

JAAS_MAX_BYTES = 64 * 1024  # a JAAS file is a few sections of a few lines: bytes to KiB

# Linear in time and memory: a quoted value is runs of plain characters between escapes,
# each run and the escapes matched possessively (*+), so ``re`` keeps no backtracking state
# per character (``(?:[^"\\]|\\.)*`` took ~160 bytes of memory per byte of a value).
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<comment>//[^\n]*|/\*.*?\*/)
      | "(?P<quoted>[^"\\]*+(?:\\.[^"\\]*+)*+)"
      | (?P<punct>[{};=])
      | (?P<word>[^\s{};="]+)
    )""",
    re.VERBOSE | re.DOTALL,
)
FLAGS = ("required", "requisite", "sufficient", "optional")


class JaasError(ValueError):
    """A JAAS text that cannot be read: names the source and what is wrong (never a
    value)."""


@dataclass(frozen=True)
class LoginModule:
    class_name: str
    flag: str
    options: dict[str, str] = field(repr=False)


def _tokens(text: str, source: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise JaasError(f"{source}: cannot read the JAAS text at character {pos}")
        pos = m.end()
        if m.group("comment") is not None:
            continue
        if m.group("quoted") is not None:
            out.append(("value", re.sub(r"\\(.)", r"\1", m.group("quoted"))))
        elif m.group("punct") is not None:
            out.append(("punct", m.group("punct")))
        else:
            out.append(("word", m.group("word")))
    return out


def _modules(
    tokens: list[tuple[str, str]], i: int, source: str, end: str | None
) -> tuple[list[LoginModule], int]:
    """Modules from ``tokens[i]`` up to the ``end`` punctuation (None: the end)."""
    modules: list[LoginModule] = []
    while i < len(tokens) and tokens[i] != ("punct", end):
        kind, class_name = tokens[i]
        if kind != "word" or i + 1 >= len(tokens) or tokens[i + 1][1] not in FLAGS:
            raise JaasError(f"{source}: expected '<LoginModule class> required|optional|...'")
        flag, i = tokens[i + 1][1], i + 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i] != ("punct", ";"):
            key = tokens[i]
            if (
                key[0] != "word"
                or i + 2 >= len(tokens)
                or tokens[i + 1] != ("punct", "=")
                or tokens[i + 2][0] == "punct"
            ):
                raise JaasError(f'{source}: {class_name}: options are key="value" pairs')
            options[key[1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise JaasError(f"{source}: {class_name}: the module's options do not end with ';'")
        modules.append(LoginModule(class_name, flag, options))
        i += 1
    if end is not None and i >= len(tokens):
        raise JaasError(f"{source}: a section does not end with '}};'")
    return modules, i


def parse_jaas_file(text: str, source: str) -> dict[str, list[LoginModule]]:
    """Sections by name."""
    tokens = _tokens(text, source)
    sections: dict[str, list[LoginModule]] = {}
    i = 0
    while i < len(tokens):
        if tokens[i][0] != "word" or i + 1 >= len(tokens) or tokens[i + 1] != ("punct", "{"):
            raise JaasError(f"{source}: expected 'SectionName {{'")
        name = tokens[i][1]
        modules, i = _modules(tokens, i + 2, f"{source} [{name}]", "}")
        i += 1
        if i < len(tokens) and tokens[i] == ("punct", ";"):
            i += 1
        sections[name] = modules
    return sections


def read_jaas_section(path: Path, section: str) -> LoginModule:
    """The one login module of ``section`` in the JAAS file at ``path``: a regular file of
    at most :data:`JAAS_MAX_BYTES` of UTF-8 text (JaasError naming the file otherwise, read
    no further than the limit)."""
    try:
        data = read_regular(path, JAAS_MAX_BYTES)
    except UnreadableFileError as exc:
        raise JaasError(f"{path}: cannot read: {exc.reason}") from None
    except OSError as exc:
        raise JaasError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JaasError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    sections = parse_jaas_file(text, str(path))
    if section not in sections:
        raise JaasError(f"{path}: no section {shown(section)} (sections: {sorted(sections)})")
    modules = sections[section]
    if len(modules) != 1:
        raise JaasError(f"{path} [{section}]: one login module expected, found {len(modules)}")
    return modules[0]


def parse_jaas_config(text: str, source: str) -> LoginModule:
    """One ``sasl.jaas.config`` value: ``<class> required key="value" ...;``."""
    modules, _ = _modules(_tokens(text, source), 0, source, None)
    if len(modules) != 1:
        raise JaasError(f"{source}: one login module expected, found {len(modules)}")
    return modules[0]
