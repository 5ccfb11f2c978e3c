"""The run's device: read from `device_description()` or a record's provenance, the CPU when there is none."""

from __future__ import annotations

import pytest

from tileiropt.check.device import CPU, Device
from tileiropt.check.environment import CPU_DEVICE


def test_a_gpu_reads_back_from_its_json_and_keys_by_model() -> None:
    h100 = Device.from_json({"name": "NVIDIA H100 80GB HBM3", "capability": "9.0", "sm_count": 132,
                             "memory_gib": 79.1})
    assert h100.is_gpu and h100.key() == ["NVIDIA H100 80GB HBM3", "9.0"]
    assert Device.from_json(h100.to_json()) == h100


@pytest.mark.parametrize("data", [CPU_DEVICE, None, {}, {"name": None}, "cuda"])
def test_no_gpu_or_an_unreadable_description_is_the_cpu(data: object) -> None:
    device = Device.from_json(data)
    assert device == CPU and not device.is_gpu and device.key() == ["cpu", None]


def test_unreadable_counts_are_left_out_not_guessed() -> None:
    device = Device.from_json({"name": "GPU", "capability": 10.0, "sm_count": "many", "memory_gib": "lots"})
    assert (device.capability, device.sm_count, device.memory_gib) == ("10.0", None, None)
