"""Stands between the tool and a worker: `python -m tileiropt.engine.sentinel <worker module>`.

A kernel file runs inside the worker, and code there that kills its parent (`os.kill(os.getppid(), ...)`)
must not take the tool down. So the tool starts this small process, which starts the worker as its child
(same stdin, stdout and stderr, same process group) and waits: the worker's parent is this process, and
its exit (a code, or the signal that ended it) becomes this process's own, so the tool sees it as before.
If the sentinel is killed, the worker goes on writing to the tool's pipe; the tool still reads its events.

However the tool ends (SIGKILL, the OOM killer, a cancelled CI job), its workers end with it: the sentinel watches
its parent, and once the tool is gone (the sentinel is handed to another parent) it kills its process group, the
worker and whatever the worker started, within `WATCH_EVERY_S`. A parent-death signal would do the same only for the
thread that started the sentinel, which may end long before the tool.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

WATCH_EVERY_S = 0.5


def watch_parent(parent: int) -> None:
    """Kill this process group once the parent that started it is gone (then never returns)."""
    while os.getppid() == parent:
        time.sleep(WATCH_EVERY_S)
    try:
        os.killpg(os.getpgid(0), signal.SIGKILL)
    finally:
        os._exit(1)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tileiropt.engine.sentinel <worker module>", file=sys.stderr)
        return 2
    parent = os.getppid()
    child = os.fork()
    if child == 0:
        try:
            os.execv(sys.executable, [sys.executable, "-m", argv[1]])
        finally:
            os._exit(127)
    if os.getpgid(0) == os.getpid():  # its own group (the tool starts it so): the worker's group to end
        threading.Thread(target=watch_parent, args=(parent,), daemon=True).start()
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):  # end the same way, so the tool reports "crashed: SIGSEGV" as it would
        number = os.WTERMSIG(status)
        if number not in (signal.SIGKILL, signal.SIGSTOP):  # those two have no handler to reset
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    return os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
