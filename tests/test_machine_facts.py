"""The machine's facts, kept between runs: when they are reused, when they are probed again, and what adopts them."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from tileiropt.cache import CACHE_ENV
from tileiropt.check import environment, machine_facts

FACTS = {"triton": {"name": "triton", "version": "3.6.0", "tileir_backend": False, "all": ["triton"],
                    "distribution": "triton", "versions": {"triton": "3.6.0"}, "location": "/x/triton"},
         "torch": {"version": "2.13.0", "cuda": "12.8"},
         "gpu": {"name": "FAKE H100 (test)", "capability": "9.0", "sm_count": 132},
         "active_backend": ["cuda", None]}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(machine_facts, "gpu_listing", lambda: "0, FAKE H100 (test), GPU-1, 570.1")
    return tmp_path


def test_the_fingerprint_follows_what_the_facts_depend_on(cache: Path, tmp_path: Path, monkeypatch) -> None:
    assert machine_facts.package_stamp("torch")[0].endswith("__init__.py")  # found, not imported
    assert machine_facts.package_stamp("no_such_package_here") is None
    base = machine_facts.fingerprint({"PATH": "/bin"})
    assert machine_facts.fingerprint({"PATH": "/bin"}) == base
    assert machine_facts.fingerprint({"PATH": "/bin", "HOME": "/elsewhere"}) == base  # not a variable it reads
    assert machine_facts.fingerprint({"PATH": "/bin", "ENABLE_TILE": "1"}) != base
    assert machine_facts.fingerprint({"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "1"}) != base
    assert machine_facts.fingerprint({"PATH": "/bin", "TRITON_CACHE_DIR": "/tmp/c"}) == base  # where files go
    assert machine_facts.fingerprint({"PATH": "/usr/bin"}) != base
    before = machine_facts.fingerprint({"PATH": "/bin"})
    installed = tmp_path / "torch" / "__init__.py"
    installed.parent.mkdir()
    installed.write_text("")
    real = machine_facts.package_stamp
    monkeypatch.setattr(machine_facts, "package_stamp",
                        lambda name: [str(installed), installed.stat().st_mtime_ns] if name == "torch" else real(name))
    moved = machine_facts.fingerprint({"PATH": "/bin"})
    assert moved != before  # torch imported from elsewhere
    os.utime(installed, ns=(time.time_ns(), time.time_ns() + 10**9))  # reinstalled there
    assert machine_facts.fingerprint({"PATH": "/bin"}) != moved
    before = machine_facts.fingerprint({"PATH": "/bin"})
    monkeypatch.setattr(machine_facts, "gpu_listing", lambda: "0, FAKE B200 (test), GPU-2, 580.1")
    assert machine_facts.fingerprint({"PATH": "/bin"}) != before  # another GPU, or another driver


def test_facts_are_reused_only_under_the_same_fingerprint_and_for_a_day(cache: Path) -> None:
    machine_facts.save("key", FACTS)
    found = machine_facts.load("key")
    assert found is not None and found["gpu"] == FACTS["gpu"]
    assert machine_facts.load("another key") is None
    assert machine_facts.load("key", now=time.time() + machine_facts.MAX_AGE_S + 1) is None
    stored = json.loads((cache / machine_facts.FACTS_FILE).read_text())
    entry = stored["machines"][0]
    for damaged in ({**stored, "machines": [{**entry, "facts": {**FACTS, "gpu": 7}}]},
                    {**stored, "machines": [{**entry, "probed": "yesterday"}]}, {**stored, "machines": [[1, 2]]},
                    {**stored, "format": 2}, [1, 2]):
        (cache / machine_facts.FACTS_FILE).write_text(json.dumps(damaged))
        assert machine_facts.load("key") is None
    (cache / machine_facts.FACTS_FILE).write_text("{not json")
    assert machine_facts.load("key") is None


def test_the_facts_of_several_machines_are_kept_the_newest_first(cache: Path) -> None:
    for index in range(machine_facts.KEPT + 1):  # one host seen through CUDA_VISIBLE_DEVICES=0, then 0,1, ...
        machine_facts.save(f"key {index}", {**FACTS, "gpu": {**FACTS["gpu"], "index": index}})
    assert machine_facts.load("key 0") is None  # the oldest made room
    assert all(machine_facts.load(f"key {i}")["gpu"]["index"] == i for i in range(1, machine_facts.KEPT + 1))
    machine_facts.save("key 1", FACTS)  # probed again: first, not twice
    stored = json.loads((cache / machine_facts.FACTS_FILE).read_text())["machines"]
    assert [e["fingerprint"] for e in stored][:2] == ["key 1", f"key {machine_facts.KEPT}"]
    assert len(stored) == machine_facts.KEPT


def test_obtain_probes_once_then_reuses_and_fresh_probes_again(cache: Path, monkeypatch) -> None:
    probes: list[int] = []
    monkeypatch.setattr(machine_facts, "probe", lambda: probes.append(1) or dict(FACTS))
    facts, origin = machine_facts.obtain()
    assert origin == "probed now" and facts == FACTS and len(probes) == 1
    facts, origin = machine_facts.obtain()
    assert origin.startswith("probed at ") and "machine unchanged" in origin and len(probes) == 1
    assert facts == FACTS
    _, origin = machine_facts.obtain(fresh=True)
    assert origin == "probed now" and len(probes) == 2


def test_adopted_facts_answer_every_probe_without_importing_torch(monkeypatch) -> None:
    def never() -> None:
        raise AssertionError("probed although the facts were adopted")

    for name in ("probe_gpu", "probe_torch", "probe_active_backend", "_triton_distribution"):
        monkeypatch.setattr(environment, name, never)
    with environment.adopted_facts(FACTS):
        report = environment.check_environment({"PATH": os.environ.get("PATH", "")}, release="13.4")
        assert report.gpu["name"] == "FAKE H100 (test)" and report.torch["version"] == "2.13.0"
        assert report.active_backend == "cuda" and not report.tileir_ready
        assert environment.device_description()["capability"] == "9.0"
        assert environment.triton_distribution()["version"] == "3.6.0"
        assert environment.torch_info() == {"version": "2.13.0", "cuda": "12.8"}
    with pytest.raises(AssertionError, match="probed although"):  # outside, the probes run again
        environment.torch_info()


def test_the_run_pipeline_imports_without_torch() -> None:
    """An unchanged re-run must not pay torch's import (2-5 s): nothing the pipeline loads imports it at start."""
    import subprocess

    code = ("import sys, tileiropt.run.pipeline, tileiropt.run.command, tileiropt.bench.run; "
            "print(sorted(m for m in ('torch', 'torch.cuda') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout
