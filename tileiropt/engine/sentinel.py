"""Stands between the tool and a worker: `python -m tileiropt.engine.sentinel <worker module>`.

A kernel file runs inside the worker, and code there that kills its parent (`os.kill(os.getppid(), ...)`)
must not take the tool down. So the tool starts this small process, which starts the worker as its child
(same stdin, stdout and stderr, same process group) and waits: the worker's parent is this process, and
its exit (a code, or the signal that ended it) becomes this process's own, so the tool sees it as before.
If the sentinel is killed, the worker goes on writing to the tool's pipe; the tool still reads its events.
"""

from __future__ import annotations

import os
import signal
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tileiropt.engine.sentinel <worker module>", file=sys.stderr)
        return 2
    child = os.fork()
    if child == 0:
        try:
            os.execv(sys.executable, [sys.executable, "-m", argv[1]])
        finally:
            os._exit(127)
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
