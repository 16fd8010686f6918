"""A ``.properties`` file's text changed as an operator would change it by hand: only the
lines of the keys that change are touched, everything else is kept character for
character (comments, blank lines, order, indentation, line ends, the spelling of every
other entry).

- a key set that the file has: its last logical line (every physical line of it, a
  continued value as a whole) becomes one line, keeping the key and separator as spelled
  when they sit on its first line; earlier lines of the same key, which Java reads and
  then overrides, are removed;
- a key set that the file lacks: appended at the end;
- a key removed: every line of it removed.

New lines end as the file's first line does (``\\n`` in a file without one) and are
escaped as :func:`migration.common.properties.property_line` writes. Reading the result
by Java's rules gives the old map with exactly these changes.
"""

from __future__ import annotations

from collections.abc import Mapping

from migration.common.properties import (
    Entry,
    line_continues,
    physical_lines,
    property_entries,
    property_line,
)


def edited_properties(text: str, changes: Mapping[str, str | None]) -> str:
    """``text`` with each key of ``changes`` set to its value, or removed where the value
    is None (see the module doc)."""
    lines = physical_lines(text)
    entries = property_entries(text)
    last: dict[str, Entry] = {e.key: e for e in entries}
    dropped: set[int] = set()
    replaced: dict[int, str] = {}  # the first physical line of an entry -> its new line
    added = {k: v for k, v in changes.items() if v is not None and k not in last}
    for e in entries:
        if e.key in changes:
            value = changes[e.key]
        elif added and e is entries[-1] and e.last == len(lines) and line_continues(lines[-1][0]):
            value = e.value  # continued at the end of the file: ended, to append after it
        else:
            continue
        dropped.update(range(e.first, e.last + 1))
        if value is not None and last[e.key] is e:
            replaced[e.first] = property_line(e.key, value, e.prefix) + lines[e.last - 1][1]
    ending = next((end for _, end in lines if end), "\n")
    out: list[str] = []
    for number, (content, end) in enumerate(lines, 1):
        if number in replaced:
            out.append(replaced[number])
        elif number not in dropped:
            out.append(content + end)
    if added and out and not out[-1].endswith(("\n", "\r")):
        out[-1] += ending
    out += [property_line(key, value) + ending for key, value in added.items()]
    return "".join(out)
