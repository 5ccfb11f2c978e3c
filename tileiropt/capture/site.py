"""The `sitecustomize` of a capture run: `capture` writes this module's text, as it is, into the folder it
puts first on the program's PYTHONPATH, so Python runs it at the program's start-up and it installs the
launch recorder of `capture_hook`. Whatever goes wrong is one line on stderr: the program runs on.

Python runs only the first `sitecustomize` it finds, so this one first runs the program's own, the next one on
`sys.path` after this folder (an environment's, a test setup's, another capture's), then installs the recorder:
the program starts as it would without it.
"""

import importlib.machinery
import importlib.util
import os
import sys


def start_recorder() -> None:
    """Install the launch recorder; a failure is printed, never raised."""
    try:
        # imported here, inside the guard: an environment where tileiropt cannot import must not stop the program
        from tileiropt.capture.hook import install

        install()
    except ModuleNotFoundError as exc:
        if exc.name not in ("tileiropt", "triton"):  # a Python without them (a tool the program runs): silent
            print(f"tileiropt capture: the recorder is not installed ({type(exc).__name__}: {exc})",
                  file=sys.stderr)
    except Exception as exc:  # never stop the user's program
        print(f"tileiropt capture: the recorder is not installed ({type(exc).__name__}: {exc})", file=sys.stderr)


def run_shadowed_sitecustomize(own_folder: str) -> None:
    """Run the `sitecustomize` this one shadows (the next on `sys.path` after `own_folder`), if there is one."""
    folder = os.path.realpath(own_folder)
    real = [os.path.realpath(p or os.curdir) for p in sys.path]
    rest = sys.path[real.index(folder) + 1:] if folder in real else [p for p, r in zip(sys.path, real) if r != folder]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module  # as Python would have it
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # as Python itself does with a failing sitecustomize: said, not raised
        print(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(exc).__name__}: {exc}",
              file=sys.stderr)


if __name__ == "sitecustomize":
    run_shadowed_sitecustomize(os.path.dirname(os.path.abspath(__file__)))
    start_recorder()
