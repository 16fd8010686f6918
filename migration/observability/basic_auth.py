"""HTTP basic auth for the metrics port, as Prometheus's own endpoints do it (its web
config's ``basic_auth_users``: each user's bcrypt hash, never a password).

The users come from a file of ``user:hash`` lines (what ``htpasswd -nB user`` prints;
Prometheus's ``htpasswd -nBC 10 "" | tr -d ':\\n'`` gives the hash alone), named by
``metrics.basic.auth.users.file``. Blank lines and ``#`` comments are skipped. A hash
that is not bcrypt's (``$2a$``, ``$2b$``, ``$2y$``, cost 04-31) is a problem naming the
file and the line, never the hash.

A request's password is checked by :func:`bcrypt.checkpw` (constant time); an unknown
user is checked against a fixed hash of the same cost, so the time does not say whether
the user exists. Each check costs one bcrypt hash (tens of milliseconds at cost 10):
the server's bound on its connections bounds what a flood of guesses can spend.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from pathlib import Path

import bcrypt

from migration.common.files import UnreadableFileError, read_regular
from migration.common.text import shown

USERS_KEY = "metrics.basic.auth.users.file"
REALM = "zk2kraft"
USERS_MAX_BYTES = 1024 * 1024  # ~14,000 users of 70 bytes a line
_BCRYPT = re.compile(r"\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}")
_PASSWORD_MAX_BYTES = 72  # bcrypt's own bound: it refuses longer


def read_users(location: str, problems: list[str]) -> dict[str, bytes]:
    """The users of the file at ``location``: user -> bcrypt hash. Problems (an
    unreadable file, a line that is not ``user:hash``, a hash that is not bcrypt's, a
    user twice, no user at all) go to ``problems``, each naming the key and the file."""
    where = f"{USERS_KEY}={shown(location, limit=4096)}"
    try:
        data = read_regular(Path(location), USERS_MAX_BYTES)
    except UnreadableFileError as exc:
        problems.append(f"{where}: {exc.reason}")
        return {}
    except OSError as exc:
        problems.append(f"{where}: cannot read it: {exc.strerror}")
        return {}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        problems.append(f"{where}: not UTF-8 text")
        return {}
    users: dict[str, bytes] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        user, colon, hashed = line.partition(":")
        if not colon or not user:
            problems.append(f"{where}: line {number} is not user:bcrypt-hash")
        elif not _BCRYPT.fullmatch(hashed):
            problems.append(
                f"{where}: line {number} (user {shown(user)}): not a bcrypt hash "
                "($2y$/$2b$..., as htpasswd -B makes)"
            )
        elif user in users:
            problems.append(f"{where}: user {shown(user)} is given twice")
        else:
            users[user] = hashed.encode("ascii")
    if not users and not any(where in p for p in problems):
        problems.append(f"{where}: names no user")
    return users


class BasicAuth:
    """Checks a request's ``Authorization`` header against ``users`` (user -> hash)."""

    def __init__(self, users: Mapping[str, bytes]) -> None:
        self._users = dict(users)
        cost = next(iter(self._users.values()), b"$2b$10$")[4:6]
        # An unknown user costs what a known one does (a hash nobody's password matches).
        self._decoy = bcrypt.hashpw(b"zk2kraft-decoy", b"$2b$" + cost + b"$" + b"." * 22)

    @property
    def challenge(self) -> str:
        """The ``WWW-Authenticate`` value of a 401."""
        return f'Basic realm="{REALM}", charset="UTF-8"'

    def allows(self, header: str | None) -> bool:
        """Whether ``header`` (the ``Authorization`` value, None when absent) names a user
        and that user's password."""
        credentials = _credentials(header)
        if credentials is None:
            return False
        user, password = credentials
        hashed = self._users.get(user)
        if len(password) > _PASSWORD_MAX_BYTES:
            return False
        try:
            matches = bcrypt.checkpw(password, hashed or self._decoy)
        except ValueError:
            return False
        return matches and hashed is not None


def _credentials(header: str | None) -> tuple[str, bytes] | None:
    """(user, password) of a ``Basic`` header, None when it is not one."""
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        # WSGI hands headers over as latin-1 str; base64 is ASCII anyway.
        decoded = base64.b64decode(token.strip().encode("latin-1"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        return None
    user, colon, password = decoded.partition(b":")
    if not colon:
        return None
    try:
        return user.decode("utf-8"), password
    except UnicodeDecodeError:
        return None
