"""migration/common/signals.py: a SIGTERM inside ``terminated_as_interrupt`` runs the
clean-up a Ctrl-C runs, in a real interpreter sent a real signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import signal, sys, time
    from migration.common.signals import terminated_as_interrupt
    try:
        with terminated_as_interrupt():
            try:
                print("ready", flush=True)
                time.sleep(60)
            finally:
                print("cleaned up", flush=True)
    except KeyboardInterrupt:
        print("interrupted", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, flush=True)
        sys.exit(130)
    """
)


@pytest.mark.timeout(60)
def test_sigterm_runs_the_clean_up_of_a_ctrl_c() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True,
        env=os.environ | {"PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    assert child.stdout is not None
    assert child.stdout.readline() == "ready\n"
    child.send_signal(signal.SIGTERM)
    out, _ = child.communicate(timeout=30)
    assert (child.returncode, out) == (130, "cleaned up\ninterrupted True\n")
