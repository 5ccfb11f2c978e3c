"""The tool's own Ctrl-C and SIGTERM handling (`engine.workers.stopping_on_signals`): a signal raises
KeyboardInterrupt even where the parent set SIGINT to be ignored; the clean-up after it has a deadline, and a second
signal ends the tool at once. Each case runs in a child process with its own short limits."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from tileiropt.errors import ExitCode

from shared import with_sigint

GUARD_S = 60  # no case needs more than seconds; a hang fails the test instead of the suite

CHILD = textwrap.dedent("""\
    import sys, time
    from tileiropt.engine import workers
    workers.STOP_GRACE_S = float(sys.argv[1])
    with workers.stopping_on_signals():
        try:
            print("ready", flush=True)
            time.sleep(GUARD)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            if sys.argv[2] == "stuck":
                time.sleep(GUARD)  # a clean-up that never ends
    time.sleep(2 * workers.STOP_GRACE_S if workers.STOP_GRACE_S < 5 else 0)  # after it: no deadline fires
    sys.exit(0)
    """).replace("GUARD", str(GUARD_S))


def _child(grace: float, cleanup: str, ignore_sigint: bool = False) -> subprocess.Popen:
    process = subprocess.Popen(with_sigint([sys.executable, "-c", CHILD, str(grace), cleanup], ignored=ignore_sigint),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def _finish(process: subprocess.Popen) -> tuple[str, str]:
    try:
        out, err = process.communicate(timeout=GUARD_S)
    finally:
        if process.poll() is None:
            process.kill()
    return out, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_interrupts_and_the_clean_up_ends_in_peace(sig) -> None:
    process = _child(grace=1.0, cleanup="quick")  # the deadline ends with the context: no late exit
    process.send_signal(sig)
    out, err = _finish(process)
    assert process.returncode == 0, err
    assert "interrupted" in out and "still stopping" not in err


def test_a_sigint_the_parent_ignored_stays_ignored_and_sigterm_still_stops() -> None:
    """A background job's SIGINT is ignored by its shell: the tool keeps that convention."""
    process = _child(grace=GUARD_S * 10, cleanup="quick", ignore_sigint=True)
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGTERM)
    out, err = _finish(process)
    assert process.returncode == 0, err
    assert out.strip().splitlines() == ["interrupted"]


def test_a_clean_up_that_never_ends_is_cut_at_the_deadline_with_every_threads_stack() -> None:
    process = _child(grace=1.0, cleanup="stuck")
    process.send_signal(signal.SIGINT)
    out, err = _finish(process)
    assert process.returncode == ExitCode.INTERRUPTED, err
    assert "interrupted" in out
    assert "still stopping 1 s after the signal" in err
    assert "most recent call first" in err  # the stacks, for a bug report


def test_a_second_signal_ends_the_tool_at_once() -> None:
    process = _child(grace=GUARD_S * 10, cleanup="stuck")
    process.send_signal(signal.SIGINT)
    assert process.stdout is not None and process.stdout.readline().strip() == "interrupted"
    process.send_signal(signal.SIGINT)
    _, err = _finish(process)
    assert process.returncode == ExitCode.INTERRUPTED, err
    assert "signal 2 again while stopping" in err
