"""The GPU's state around a measurement: read through NVML in-process, nvidia-smi only when NVML cannot be loaded."""

from __future__ import annotations

import ctypes

import pytest

from tileiropt.bench import gpu_state as module


class FakeNvml:
    """libnvidia-ml's calls as ctypes passes them: values written through the byref pointers."""

    def __init__(self, throttle: int = 0x4):
        self.throttle = throttle
        self.calls: list[str] = []

    @staticmethod
    def _put(pointer: object, value: int) -> int:
        pointer._obj.value = value  # type: ignore[attr-defined] - ctypes.byref's object
        return module.NVML_SUCCESS

    def nvmlInit_v2(self) -> int:
        self.calls.append("init")
        return module.NVML_SUCCESS

    def nvmlDeviceGetHandleByUUID(self, uuid: bytes, pointer: object) -> int:
        self.calls.append(f"handle {uuid.decode()}")
        return module.NVML_SUCCESS if uuid == b"GPU-1234" else 999

    def nvmlDeviceGetClockInfo(self, device: object, kind: int, pointer: object) -> int:
        assert kind == module.NVML_CLOCK_SM
        return self._put(pointer, 1755)

    def nvmlDeviceGetMaxClockInfo(self, device: object, kind: int, pointer: object) -> int:
        return self._put(pointer, 1980)

    def nvmlDeviceGetPowerUsage(self, device: object, pointer: object) -> int:
        return self._put(pointer, 312_500)  # milliwatts

    def nvmlDeviceGetTemperature(self, device: object, kind: int, pointer: object) -> int:
        assert kind == module.NVML_TEMPERATURE_GPU
        return self._put(pointer, 41)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, device: object, pointer: object) -> int:
        return self._put(pointer, self.throttle)


def test_nvml_reads_the_state_nvidia_smi_would_print_once_initialised() -> None:
    library = FakeNvml()
    nvml = module.Nvml(library)
    first = nvml.state("GPU-1234")
    assert first == {"sm_clock_mhz": 1755.0, "max_sm_clock_mhz": 1980.0, "power_w": 312.5, "temperature_c": 41.0,
                     "throttle_reasons": "0x0000000000000004"}
    nvml.state("GPU-1234")
    assert library.calls == ["init", "handle GPU-1234"]  # one initialisation, one lookup per GPU
    with pytest.raises(OSError, match="no GPU GPU-9"):
        nvml.state("GPU-9")


def test_nvidia_smi_is_the_fallback_when_nvml_cannot_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "device_uuid", lambda: "GPU-9")  # not a GPU the fake NVML knows
    monkeypatch.setattr(module, "_NVML", [module.Nvml(FakeNvml())])
    monkeypatch.setattr(module, "smi_state", lambda target: {"asked nvidia-smi for": target})
    assert module.gpu_state() == {"asked nvidia-smi for": "GPU-9"}
    monkeypatch.setattr(module, "device_uuid", lambda: "GPU-1234")
    assert module.gpu_state()["power_w"] == 312.5


def test_no_gpu_no_state(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_device() -> str:
        raise RuntimeError("Found no NVIDIA driver on your system")

    monkeypatch.setattr(module, "device_uuid", no_device)
    assert module.gpu_state() == {}


def test_a_library_without_nvml_is_not_loaded_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    tried: list[str] = []

    def missing(name: str) -> object:
        tried.append(name)
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(module, "_NVML", [])
    monkeypatch.setattr(ctypes, "CDLL", missing)
    assert module.nvml() is None and module.nvml() is None
    assert tried == ["libnvidia-ml.so.1"]
