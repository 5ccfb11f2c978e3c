"""Phase 1: what is installed and active -- the `check` report and the provenance of every record.

Public API:

- `triton_distribution()`: which distribution provides `import triton` (cached).
- `device_description()`: the GPU this process would use, or ``{"name": "cpu", ...}`` (cached).
- `check_environment(env)`: the full `CheckReport` behind `tileiropt check`.

Nothing here touches CUDA at import time, and no probe raises on a machine without a GPU. The
`probe_*` functions are small on purpose: tests replace them to simulate other machines.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, cast

from tileiropt.output import dataclass_from_dict
from tileiropt.releases import Release, known_releases, resolve_release
from tileiropt.schema import SCHEMA_VERSION

NVTRITON = "nvtriton"
TILEIR_BACKEND_MODULE = "triton.backends.tileir"
TILEIR_BACKEND = "tileir"
BLACKWELL_MAJOR = 10
TILEIRAS = "tileiras"
TILEIRAS_TIMEOUT_S = 5.0

# Environment variables the report shows, in display order. nvtriton reads the TILEIR_* names;
# early builds read CUTILE_ENABLE_APPROX / CUTILE_ENABLE_FTZ instead (shown only when set).
ENV_KEYS = ("ENABLE_TILE", "TILEIR_ENABLE_APPROX", "TILEIR_ENABLE_FTZ", "TRITON_TILEIR_RUNTIME_FALLBACK",
            "TRITON_INTERPRET", "TRITON_TILEIRAS_PATH", "CUDA_HOME")
LEGACY_ENV_KEYS = ("CUTILE_ENABLE_APPROX", "CUTILE_ENABLE_FTZ")

CPU_DEVICE: dict[str, Any] = {"name": "cpu", "capability": None, "sm_count": None}


# --------------------------------------------------------------------------- probes


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def probe_distributions() -> list[dict[str, str]]:
    """Every installed distribution that ships the top-level `triton` package: [{name, version}]."""
    try:
        names = importlib.metadata.packages_distributions().get("triton", [])
    except Exception:  # a broken metadata folder must not break the report
        return []
    found: dict[str, dict[str, str]] = {}
    for name in names:
        key = _normalize(name)
        if key in found:
            continue
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        found[key] = {"name": name, "version": version}
    return list(found.values())


def probe_triton_location() -> str | None:
    """The folder `import triton` loads from (found without importing it), or None."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return str(Path(next(iter(spec.submodule_search_locations))).resolve())
    return str(Path(spec.origin).resolve().parent) if spec.origin else None


def probe_distribution_owner(names: list[str], location: str | None) -> str | None:
    """Which of `names` installed the files at `location` (the package folder of `triton`)."""
    if location is None:
        return None
    init = Path(location) / "__init__.py"
    for name in names:
        try:
            dist = importlib.metadata.distribution(name)
            files = dist.files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for entry in files:
            if entry.as_posix() == "triton/__init__.py":
                try:
                    # the stubs type it SimplePath; an installed distribution's files are paths
                    if Path(cast("os.PathLike[str]", dist.locate_file(entry))).resolve() == init.resolve():
                        return name
                except OSError:
                    pass
    return None


def probe_tileir_backend() -> bool:
    """True when `triton.backends.tileir` exists (nvtriton, the Triton-to-tile-IR fork)."""
    try:
        return importlib.util.find_spec(TILEIR_BACKEND_MODULE) is not None
    except (ImportError, ValueError, AttributeError):
        return False
    except Exception:  # importing a broken triton can raise anything; it simply is not usable
        return False


EMULATED_MARK = "TILEIROPT_EMULATED_TILEIR"  # set by the tests' emulated nvtriton on its backend module


def probe_emulated_tileir() -> str | None:
    """What the TileIR backend module says of itself when it is an emulation (the tests' emulated nvtriton), else
    None: an emulation is never taken for the TileIR backend."""
    try:
        if importlib.util.find_spec(TILEIR_BACKEND_MODULE) is None:
            return None
        module = importlib.import_module(TILEIR_BACKEND_MODULE)
    except Exception:  # nvtriton's own module failing to import is reported by the other probes
        return None
    mark = getattr(module, EMULATED_MARK, None)
    return str(mark) if mark else None


EMULATED_RECOMMENDATION = ("emulated TileIR: the optimized files run under the tests' emulated nvtriton (standard "
                           "Triton underneath, the interpreter without a GPU); TileIR itself needs nvtriton on a "
                           "Blackwell GPU")


def emulated_blocker(emulated: str) -> str:
    """Why TileIR is not ready where its backend module is an emulation (see `probe_emulated_tileir`)."""
    return f"the TileIR backend is {emulated}"


def probe_triton_version() -> str | None:
    """`triton.__version__` of the imported package, or None when it does not import."""
    try:
        import triton
    except Exception:
        return None
    return str(getattr(triton, "__version__", None) or "unknown")


def probe_torch() -> dict[str, str | None]:
    """torch's version and the CUDA runtime it was built with (None for a CPU build)."""
    try:
        import torch
    except Exception:
        return {"version": None, "cuda": None}
    return {"version": str(torch.__version__), "cuda": getattr(torch.version, "cuda", None)}


def probe_gpu() -> dict[str, Any] | None:
    """Name, capability, SM count and memory (GiB) of the current CUDA device; None without a usable GPU."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        index = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
    except Exception:
        return None
    return {
        "name": str(props.name),
        "capability": f"{props.major}.{props.minor}",
        "sm_count": int(props.multi_processor_count),
        "memory_gib": round(int(props.total_memory) / 2**30, 1),
    }


def probe_active_backend() -> tuple[str | None, str | None]:
    """(backend, error): `triton.runtime.driver.active.get_current_target().backend`."""
    try:
        import triton

        return str(triton.runtime.driver.active.get_current_target().backend), None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}".strip()


def probe_tileiras_version(path: str) -> str | None:
    """The version `tileiras --version` prints (e.g. "13.1, V13.1.80"), or None. The probe runs in its own
    session and its whole process group is killed when it does not answer in time."""
    try:
        process = subprocess.Popen([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    except (OSError, ValueError):
        return None
    try:
        raw, _ = process.communicate(timeout=TILEIRAS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return None
    # Bytes, not text: a damaged or foreign binary may print anything; keep only its printable characters.
    text = "".join(c for c in (raw or b"").decode("utf-8", errors="replace") if c.isprintable() or c == "\n")
    match = re.search(r"release\s+([0-9][0-9.]*)(?:,\s*V([0-9][0-9.]*))?", text)
    if match:
        return f"{match.group(1)}, V{match.group(2)}" if match.group(2) else match.group(1)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:120] if lines else None


def _kill_group(process: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.communicate(timeout=TILEIRAS_TIMEOUT_S)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        pass


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


# Where nvtriton wheels bundle tileiras, relative to the `triton` package folder (13.3 and 13.4 lines).
BUNDLED_TILEIRAS = ("backends/nvidia/tileir_cuda/bin/tileiras", "backends/nvidia/bin/tileiras")
TILEIRAS_DISTRIBUTION = "nvidia-cuda-tileiras"


def find_tileiras(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(path, where): TRITON_TILEIRAS_PATH (a folder), then the copy bundled with nvtriton, then
    CUDA_HOME/bin, then PATH."""
    folder = env.get("TRITON_TILEIRAS_PATH")
    if folder and _executable(Path(folder) / TILEIRAS):
        return str(Path(folder) / TILEIRAS), "TRITON_TILEIRAS_PATH"
    location = probe_triton_location()
    if location:
        for relative in BUNDLED_TILEIRAS:
            if _executable(Path(location) / relative):
                return str(Path(location) / relative), "bundled with nvtriton"
    cuda_home = env.get("CUDA_HOME")
    if cuda_home and _executable(Path(cuda_home) / "bin" / TILEIRAS):
        return str(Path(cuda_home) / "bin" / TILEIRAS), "CUDA_HOME"
    on_path = shutil.which(TILEIRAS, path=env.get("PATH", ""))
    if on_path:
        return on_path, "PATH"
    return None, None


def probe_backend_release() -> str | None:
    """The CUDA Tile IR release nvtriton's TileIR backend says it targets (`get_tileir_version()`), or None."""
    if not probe_tileir_backend():
        return None
    try:
        from triton.backends.tileir import compiler  # nvtriton only; installed package code, not the user's

        return str(compiler.get_tileir_version())
    except Exception:
        return None


def probe_tileiras_package() -> str | None:
    """The version of the `nvidia-cuda-tileiras` distribution (e.g. "13.4.92"), or None."""
    try:
        return importlib.metadata.version(TILEIRAS_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    except Exception:
        return None


def detect_release(env: Mapping[str, str] | None = None,
                   tileiras: Mapping[str, str | None] | None = None) -> tuple[str | None, str]:
    """(release, how it was found): nvtriton's backend, then `tileiras --version` (`tileiras`: what a caller
    already probed, {path, found_via, version}), then the nvidia-cuda-tileiras package; (None, "none
    detected") when nothing names one."""
    env = os.environ if env is None else env
    backend = probe_backend_release()
    if backend and re.match(r"\d+\.\d+", backend):
        return backend, "nvtriton's TileIR backend"
    if tileiras is None:
        path, where = find_tileiras(env)
        version = probe_tileiras_version(path) if path else None
    else:
        where, version = tileiras.get("found_via"), tileiras.get("version")
    if version and re.match(r"\d+\.\d+", version):
        return version.split(",")[0], f"tileiras --version ({where})"
    package = probe_tileiras_package()
    if package:
        return ".".join(package.split(".")[:2]), f"the {TILEIRAS_DISTRIBUTION} package"
    return None, "none detected"


def choose_release(requested: str | None = None, env: Mapping[str, str] | None = None,
                   tileiras: Mapping[str, str | None] | None = None) -> Any:
    """The release a command follows (`tileiropt.releases.Choice`): `requested` (--tileir-version or a
    project's `tileir_version`), else the detected one, else the newest known."""
    if requested:
        return resolve_release(requested)
    detected, via = detect_release(env, tileiras)
    return resolve_release(None, detected, via)


# --------------------------------------------------------------------------- provenance API


# Facts adopted from `check.machine_facts` while a run holds them (None: every probe runs): which Triton, which
# torch, which GPU, the active backend. The probes themselves never read them (tests replace the probes).
_ADOPTED: dict[str, Any] | None = None


@contextlib.contextmanager
def adopted_facts(facts: dict[str, Any]) -> Iterator[None]:
    """While inside, `triton_distribution`, `torch_info`, `device_description` and `check_environment` answer from
    `facts` ({"triton", "torch", "gpu", "active_backend"}) instead of importing torch and asking CUDA."""
    global _ADOPTED
    before = _ADOPTED
    _ADOPTED = copy.deepcopy(facts)
    triton_distribution.cache_clear()
    device_description.cache_clear()
    try:
        yield
    finally:
        _ADOPTED = before
        triton_distribution.cache_clear()
        device_description.cache_clear()


def _fact(name: str, probe: Callable[[], Any]) -> Any:
    """The adopted fact `name`, else what `probe` says now."""
    if _ADOPTED is not None and name in _ADOPTED:
        value = copy.deepcopy(_ADOPTED[name])
        return tuple(value) if name == "active_backend" else value
    return probe()


def torch_info() -> dict[str, str | None]:
    """torch's version and CUDA runtime (`probe_torch`, or the adopted fact)."""
    return _fact("torch", probe_torch)


def torch_version() -> str | None:
    """torch's version: the adopted fact, else torch's own once imported, else its distribution's (torch is not
    imported for it: a key that names the version costs no 1.5 s import)."""
    if (_ADOPTED is not None and "torch" in _ADOPTED) or "torch" in sys.modules:
        return torch_info().get("version")
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def _triton_distribution() -> dict[str, Any]:
    dists = probe_distributions()
    names = [d["name"] for d in dists]
    location = probe_triton_location()
    owner = probe_distribution_owner(names, location) if len(names) > 1 else (names[0] if names else None)
    version = next((d["version"] for d in dists if d["name"] == owner), None)
    tileir = probe_tileir_backend()
    emulated = probe_emulated_tileir() if tileir else None
    imported_version = probe_triton_version() if location else None
    return {
        "name": f"{owner or 'triton'} with an emulated TileIR backend" if emulated else
        NVTRITON if tileir else (owner or ("unknown" if location else None)),
        "emulated": emulated,
        "version": imported_version or version,
        "all": names,
        "distribution": owner,
        "versions": {d["name"]: d["version"] for d in dists},
        "location": location,
        "tileir_backend": tileir,
    }


@functools.lru_cache(maxsize=1)
def triton_distribution() -> dict[str, Any]:
    """Which distribution provides `import triton`, for provenance records.

    Keys: ``name`` ("triton", "pytorch-triton", "nvtriton" when `triton.backends.tileir` exists,
    "unknown" when no distribution claims the package, None when triton is not installed),
    ``version`` (`triton.__version__`), ``all`` (names of every installed distribution shipping
    `triton`), ``distribution`` (the metadata name of the one imported), ``versions``
    (name -> version), ``location`` (package folder), ``tileir_backend`` (bool).
    Imports triton (not CUDA); cached -- call ``triton_distribution.cache_clear()`` to re-probe.
    """
    return _fact("triton", _triton_distribution)


@functools.lru_cache(maxsize=1)
def device_description() -> dict[str, Any]:
    """The current GPU as ``{"name", "capability" ("9.0"), "sm_count", "memory_gib"}``, else `CPU_DEVICE`.

    Queries torch.cuda when called (never at import); never raises. Cached -- call
    ``device_description.cache_clear()`` to re-probe.
    """
    gpu = _fact("gpu", probe_gpu)
    return dict(gpu) if gpu else dict(CPU_DEVICE)


def capability_major(capability: str | None) -> int | None:
    if not capability:
        return None
    try:
        return int(capability.split(".")[0])
    except ValueError:
        return None


# --------------------------------------------------------------------------- the check report


@dataclass
class CheckReport:
    """Everything `tileiropt check` reports; `tileir_ready` is True exactly when `reasons` is empty."""

    FILE: ClassVar[str] = "check.json"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckReport:
        """The record from its JSON document (every field's JSON type checked: TypeError names a wrong one)."""
        return dataclass_from_dict(cls, data)

    python: str
    triton: dict[str, Any]
    torch: dict[str, str | None]
    gpu: dict[str, Any]
    blackwell: bool
    env: dict[str, str | None]
    active_backend: str | None
    active_backend_error: str | None
    tileiras: dict[str, str | None]
    tileir_ready: bool
    release: dict[str, Any] = field(default_factory=dict)  # the CUDA Tile IR release followed, and what it targets
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    recommendation: str = ""
    schema_version: int = SCHEMA_VERSION


def _reasons(nvtriton: bool, enable_tile: bool, gpu: dict[str, Any] | None, targeted: bool, release: Release,
             backend: str | None, backend_error: str | None, emulated: str | None = None) -> list[str]:
    reasons = []
    if emulated:
        reasons.append(emulated_blocker(emulated))
    elif not nvtriton:
        reasons.append(f"nvtriton is not installed ({TILEIR_BACKEND_MODULE} not found)")
    if not enable_tile:
        reasons.append("ENABLE_TILE is not 1")
    if gpu is None:
        reasons.append("no GPU")
    elif not targeted:
        reasons.append(f"{gpu['name']} is sm_{gpu['capability'].replace('.', '')}; {release.label()} targets "
                       f"{_architectures(release)}")
    if gpu is not None and backend != TILEIR_BACKEND:
        if backend is None:
            reasons.append(f"active backend unknown ({backend_error or 'no driver'})")
        else:
            reasons.append(f"active backend is {backend!r}, not {TILEIR_BACKEND!r}")
    return reasons


def _architectures(release: Release) -> str:
    return ", ".join(release.architectures)


def _recommendation(nvtriton: bool, enable_tile: bool, gpu: dict[str, Any] | None, targeted: bool, release: Release,
                    backend: str | None, ready: bool) -> str:
    if ready:
        return "TileIR ready: validate and bench both PTX (ENABLE_TILE=0) and TileIR (ENABLE_TILE=1)"
    if gpu is None:
        return ("no GPU: kernels are validated under Triton's interpreter (TRITON_INTERPRET=1); neither TileIR code "
                "nor benchmarks can run here")
    if not targeted:
        newer = [r for r in _known().values() if r.targets(gpu["capability"])]
        hint = f"; {newer[0].label()} targets it" if newer else ""
        return f"PTX only: {release.label()} does not target sm_{gpu['capability'].replace('.', '')}{hint}"
    if not nvtriton:
        return "PTX only: install nvtriton (Triton-to-tile-IR) to run TileIR on this GPU"
    if not enable_tile:
        return "set ENABLE_TILE=1 to run TileIR (ENABLE_TILE=0 runs PTX)"
    return (f"ENABLE_TILE=1 but the active backend is {backend or 'unknown'}: "
            "make sure nvtriton is the triton that Python imports")


def check_environment(env: Mapping[str, str] | None = None, release: str | None = None) -> CheckReport:
    """Probe this machine. `env` (default `os.environ`) supplies the variables that are reported
    and searched (ENABLE_TILE, TRITON_TILEIRAS_PATH, CUDA_HOME, PATH, ...); the active backend is
    the one this process sees. `release` names the CUDA Tile IR release to judge by (default: the one
    detected, else the newest known)."""
    env = os.environ if env is None else env
    dist = _fact("triton", _triton_distribution)
    torch = _fact("torch", probe_torch)
    gpu = _fact("gpu", probe_gpu)
    blackwell = bool(gpu) and (capability_major(gpu["capability"]) or 0) >= BLACKWELL_MAJOR
    emulated = dist.get("emulated")
    nvtriton = bool(dist["tileir_backend"]) and not emulated
    enable_tile = env.get("ENABLE_TILE") == "1"
    backend, backend_error = _fact("active_backend", probe_active_backend) if gpu is not None else (None, None)

    tileiras_path, found_via = find_tileiras(env)
    tileiras = {"path": tileiras_path, "found_via": found_via,
                "version": probe_tileiras_version(tileiras_path) if tileiras_path else None}
    choice = choose_release(release, env, tileiras)  # the probe above serves the detection too
    chosen = choice.release
    targeted = bool(gpu) and chosen.targets(gpu["capability"])

    reasons = _reasons(nvtriton, enable_tile, gpu, targeted, chosen, backend, backend_error, emulated)
    ready = not reasons
    warnings = _warnings(dist, env, nvtriton, enable_tile, tileiras)
    if gpu is not None and targeted and f"sm_{gpu['capability'].replace('.', '')}" not in chosen.validated:
        warnings.append(f"{chosen.label()} compiles for sm_{gpu['capability'].replace('.', '')}, but the "
                        f"Triton-to-tile-IR backend is validated on {', '.join(chosen.validated)} only")
    fallback_on = bool(chosen.fallback_variable) and env.get(chosen.fallback_variable or "") == "1"
    if fallback_on:
        warnings.append(f"{chosen.fallback_variable}=1: a kernel TileIR cannot compile runs on PTX silently; "
                        "every TileIR record checks which backend compiled it")
    elif env.get("TRITON_TILEIR_RUNTIME_FALLBACK") == "1" and not chosen.fallback_variable:
        warnings.append(f"TRITON_TILEIR_RUNTIME_FALLBACK=1 has no effect on {chosen.label()} (no runtime fallback)")
    release_info = {"version": chosen.version, "origin": choice.origin, "label": chosen.label(),
                    "architectures": chosen.architectures, "validated": chosen.validated,
                    "targets_this_gpu": targeted if gpu is not None else None,
                    "fallback_variable": chosen.fallback_variable, "fallback_on": fallback_on,
                    "occupancy": list(chosen.occupancy), "num_warps": chosen.num_warps}
    variables = {key: env.get(key) for key in ENV_KEYS}
    variables.update({key: env[key] for key in LEGACY_ENV_KEYS if key in env})
    return CheckReport(
        python=sys.version.split()[0],
        triton=dist,
        torch=torch,
        gpu=dict(gpu) if gpu else dict(CPU_DEVICE),
        blackwell=blackwell,
        env=variables,
        active_backend=backend,
        active_backend_error=backend_error,
        tileiras=tileiras,
        tileir_ready=ready,
        release=release_info,
        reasons=reasons,
        warnings=warnings,
        recommendation=EMULATED_RECOMMENDATION if emulated else
        _recommendation(nvtriton, enable_tile, gpu, targeted, chosen, backend, ready),
    )


def _warnings(dist: dict[str, Any], env: Mapping[str, str], nvtriton: bool, enable_tile: bool,
              tileiras: dict[str, str | None]) -> list[str]:
    warnings = []
    if len(dist["all"]) > 1:
        listed = ", ".join(f"{n} {v}" for n, v in dist["versions"].items())
        provider = dist["distribution"] or "cannot tell which"
        warnings.append(f"{len(dist['all'])} distributions ship `import triton` ({listed}); "
                        f"the one imported: {provider}. Keep only one installed")
    if dist["location"] is None:
        warnings.append("triton is not installed")
    if enable_tile and not nvtriton:
        warnings.append("ENABLE_TILE=1 has no effect: this triton has no TileIR backend")
    folder = env.get("TRITON_TILEIRAS_PATH")
    if folder and not _executable(Path(folder) / TILEIRAS):
        warnings.append(f"TRITON_TILEIRAS_PATH={folder} holds no executable tileiras; "
                        "nvtriton does not look further when it is set")
    if nvtriton and tileiras["path"] is None:
        warnings.append("tileiras not found (TRITON_TILEIRAS_PATH, CUDA_HOME/bin, PATH): "
                        "TileIR compiles will fail or fall back to PTX")
    if env.get("TRITON_INTERPRET") == "1":
        warnings.append("TRITON_INTERPRET=1: kernels run in the interpreter, no backend compiles them")
    for key in LEGACY_ENV_KEYS:
        if key in env:
            new = key.replace("CUTILE_", "TILEIR_")
            warnings.append(f"{key} is read only by early nvtriton builds; current builds read {new}")
    return warnings


def _known() -> dict[str, Any]:
    return known_releases()
