"""Put this folder on PYTHONPATH to run a process under the emulated nvtriton (`emulated_nvtriton.py`): it installs
only with ENABLE_TILE=1, as nvtriton's TileIR driver does."""

import os

if os.environ.get("ENABLE_TILE") == "1":
    import emulated_nvtriton

    emulated_nvtriton.install()
