"""The `sitecustomize` of a capture run: `capture` writes this module's text, as it is, into the folder it
puts first on the program's PYTHONPATH, so Python runs it at the program's start-up and it installs the
launch recorder of `capture_hook`. Whatever goes wrong is one line on stderr: the program runs on.
"""

import sys


def start_recorder() -> None:
    """Install the launch recorder; a failure is printed, never raised."""
    try:
        # imported here, inside the guard: an environment where tileiropt cannot import must not stop the program
        from tileiropt.runtime.capture_hook import install

        install()
    except Exception as exc:  # never stop the user's program
        print(f"tileiropt capture: the recorder is not installed ({type(exc).__name__}: {exc})", file=sys.stderr)


if __name__ == "sitecustomize":
    start_recorder()
