"""The state of this process's GPU around a measurement: SM clock (MHz), its maximum, power (W), temperature (C) and
the active throttle reasons, stored with every bench row and paired timing.

Read through NVML (`libnvidia-ml.so.1`, which every NVIDIA driver installs and `nvidia-smi` itself reads) in
microseconds; `nvidia-smi` costs a process per reading (tens to hundreds of milliseconds, four readings per captured
launch), so it is only the fallback when NVML cannot be loaded. {} when neither answers.
"""

from __future__ import annotations

import ctypes
import subprocess
from typing import Any

NVML_SUCCESS = 0
NVML_CLOCK_SM = 1
NVML_TEMPERATURE_GPU = 0
FIELDS = ("clocks.sm", "clocks.max.sm", "power.draw", "temperature.gpu", "clocks_throttle_reasons.active")
NAMES = ("sm_clock_mhz", "max_sm_clock_mhz", "power_w", "temperature_c", "throttle_reasons")


class Nvml:
    """NVML, initialised once per process; `handle(uuid)` finds a GPU by its UUID ("GPU-...")."""

    def __init__(self, library: ctypes.CDLL):
        self.library = library
        self.handles: dict[str, Any] = {}
        if library.nvmlInit_v2() != NVML_SUCCESS:
            raise OSError("nvmlInit_v2 failed")

    def handle(self, uuid: str) -> Any:
        if uuid not in self.handles:
            found = ctypes.c_void_p()
            if self.library.nvmlDeviceGetHandleByUUID(uuid.encode(), ctypes.byref(found)) != NVML_SUCCESS:
                raise OSError(f"no GPU {uuid} in NVML")
            self.handles[uuid] = found
        return self.handles[uuid]

    def _uint(self, name: str, *args: object) -> int:
        value = ctypes.c_uint()
        if getattr(self.library, name)(*args, ctypes.byref(value)) != NVML_SUCCESS:
            raise OSError(f"{name} failed")
        return int(value.value)

    def state(self, uuid: str) -> dict[str, Any]:
        device = self.handle(uuid)
        reasons = ctypes.c_ulonglong()
        if self.library.nvmlDeviceGetCurrentClocksThrottleReasons(device, ctypes.byref(reasons)) != NVML_SUCCESS:
            raise OSError("nvmlDeviceGetCurrentClocksThrottleReasons failed")
        return {"sm_clock_mhz": float(self._uint("nvmlDeviceGetClockInfo", device, NVML_CLOCK_SM)),
                "max_sm_clock_mhz": float(self._uint("nvmlDeviceGetMaxClockInfo", device, NVML_CLOCK_SM)),
                "power_w": self._uint("nvmlDeviceGetPowerUsage", device) / 1000.0,  # NVML says milliwatts
                "temperature_c": float(self._uint("nvmlDeviceGetTemperature", device, NVML_TEMPERATURE_GPU)),
                "throttle_reasons": f"0x{reasons.value:016x}"}  # as nvidia-smi prints them


_NVML: list[Nvml | None] = []  # loaded on the first reading: [] not tried yet, [None] not available


def nvml() -> Nvml | None:
    if not _NVML:
        try:
            _NVML.append(Nvml(ctypes.CDLL("libnvidia-ml.so.1")))
        except (OSError, AttributeError):
            _NVML.append(None)
    return _NVML[0]


def device_uuid() -> str:
    """This process's current GPU as NVML and nvidia-smi name it ("GPU-<uuid>"), else its index."""
    import torch  # the worker's own; never imported by the tool's process for this

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    uuid = getattr(props, "uuid", None)
    return f"GPU-{uuid}" if uuid is not None else str(torch.cuda.current_device())


def gpu_state() -> dict[str, Any]:
    """The GPU's state now (see the module docstring); {} when it cannot be read."""
    try:
        target = device_uuid()
    except Exception:  # no CUDA device: the row simply has no GPU state
        return {}
    library = nvml()
    if library is not None and target.startswith("GPU-"):
        try:
            return library.state(target)
        except (OSError, AttributeError):  # a driver without one of the calls: nvidia-smi instead
            pass
    return smi_state(target)


def smi_state(target: str) -> dict[str, Any]:
    """The same from `nvidia-smi -i TARGET` (a process per reading)."""
    try:
        result = subprocess.run(["nvidia-smi", "-i", target, f"--query-gpu={','.join(FIELDS)}",
                                 "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10)
        values = [v.strip() for v in result.stdout.strip().splitlines()[0].split(",")]
    except Exception:  # no nvidia-smi, another driver: the row simply has no GPU state
        return {}
    state: dict[str, Any] = {}
    for name, value in zip(NAMES, values):
        try:
            state[name] = float(value) if name != "throttle_reasons" else value
        except ValueError:
            state[name] = value
    return state
