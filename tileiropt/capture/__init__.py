"""Capture: the recorder on Triton's launch path, the program's run, replay of captured launches."""
