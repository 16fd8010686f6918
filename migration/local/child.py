"""One zk2kraft server run as a child process: ``zk2kraft --log-level INFO <command>
--config <file>`` (a broker or a controller), its output appended to ``log``. The one
lifecycle :class:`~migration.local.cluster.LocalCluster` and
:class:`~migration.local.quorum.LocalQuorum` share:

- :meth:`ChildProcess.start` starts it unless it is running, in a session of its own: a
  terminal's Ctrl-C reaches the parent only, which stops its children in its own order
  (brokers before the controllers they shut down through);
- :meth:`signal` sends a signal to a running child (SIGSTOP/SIGCONT included), nothing
  to one that has exited;
- :meth:`wait` is its exit code within a time, None while it still runs;
- :meth:`finish` waits out ``stop_s`` (the server's own stop budget) after a SIGTERM,
  then kills it.

``wrapper`` (a command the server is started under, e.g. a fault injector's launcher)
must ``exec`` the server, so the child's pid is the server's; ``env`` is added to the
environment the server starts with. Both take effect at the next :meth:`start`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

KILL_WAIT_S = 60.0  # for a SIGKILLed child to be reaped


@dataclass(kw_only=True)
class ChildProcess:
    command: str  # "broker" or "controller"
    config: Path
    log: Path
    stop_s: float = 60.0  # after a SIGTERM, the running server exits by then
    wrapper: list[str] = field(default_factory=list)  # started as ``*wrapper, server...``
    env: dict[str, str] = field(default_factory=dict)  # more environment for the server
    process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self) -> None:
        if self.running:
            return
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [*self.wrapper, sys.executable, "-m", "migration.cli.main", "--log-level",
                 "INFO", self.command, "--config", str(self.config)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
                start_new_session=True,
            )  # fmt: skip

    def signal(self, sig: int) -> None:
        if self.running:
            assert self.process is not None
            os.kill(self.process.pid, sig)

    def wait(self, timeout_s: float) -> int | None:
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> int | None:
        self.signal(signal.SIGKILL)
        return self.wait(KILL_WAIT_S)

    def finish(self) -> int | None:
        """After a SIGTERM: its exit code once it exits within ``stop_s``; else killed."""
        code = self.wait(self.stop_s)
        return code if code is not None else self.kill()
