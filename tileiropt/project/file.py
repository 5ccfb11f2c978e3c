"""The project file (`tileiropt.toml`): its TOML read and validated into a `Project` (`load_project`), or a
table built from the command-line flags of one kernel (`parse_project`). Every error names the file, the
key path and the fix.
"""

from __future__ import annotations

import builtins
import math
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from tileiropt.classify.modules import locate_module, package_name_for
from tileiropt.errors import MAX_SECONDS, UserError, check_seconds
from tileiropt.harness.entry_ref import EntryRef, reference_kind, unknown_names
from tileiropt.project import entries
from tileiropt.project.metric_expressions import ExpressionError, parse_expression
from tileiropt.project.model import (
    DEFAULT_ARTIFACTS,
    DEFAULT_MAX_CONFIGS,
    DEFAULT_SIZES,
    DEFAULT_TIMEOUT_S,
    PROJECT_FILE,
    KernelSpec,
    Project,
)
from tileiropt.project.run_tables import capture_request, executor_table
from tileiropt.project.where import Where, key_line, parse_command, unknown_keys  # noqa: F401 - read from here too
from tileiropt.releases import get_release

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8")
DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)
DTYPE_ALIASES = {"fp16": "float16", "half": "float16", "bf16": "bfloat16", "fp32": "float32",
                 "float": "float32", "fp64": "float64", "double": "float64", "int": "int32",
                 "long": "int64"}

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
KERNEL_KEYS = {"name", "path", "module", "entry", "call", "reference", "inputs", "dims", "sweep", "dtypes", "args",
               "ranges", "atol", "rtol", "flops", "bytes", "timeout", "optimized"}
_CALL_SCOPE = {"torch", "F", "math"}  # besides inputs, dims, args and the module's names
DEFAULT_KEYS = {"sizes", "dtypes", "atol", "rtol", "timeout", "seed"}
_TOP_KEYS = {"project", "defaults", "kernel", "executor"}
PROJECT_KEYS = {"artifacts", "max_configs", "hint_autotune", "capture", "capture_files", "capture_budget",
                "capture_stall", "capture_cap", "library", "include", "exclude", "tileir_version"}


def normalize_dtype(value: object, where: Where, key: str) -> str:
    if not isinstance(value, str):
        raise where.error(key, f"dtype must be a string, got {value!r}", f"use one of {', '.join(DTYPES)}")
    name = value.strip().removeprefix("torch.")
    name = DTYPE_ALIASES.get(name, name)
    if name not in DTYPES:
        raise where.error(key, f"unknown dtype {value!r}", f"use one of {', '.join(DTYPES)}")
    return name


def _shape(value: object, where: Where, key: str) -> list[int | str]:
    if not isinstance(value, list):
        raise where.error(key, f"shape must be a list of sizes, got {value!r}",
                          'write it like [32, 512] or ["M", 512]')
    shape: list[int | str] = []
    for i, dim in enumerate(value):
        if isinstance(dim, bool) or not isinstance(dim, (int, str)):
            raise where.error(f"{key}[{i}]", f"dimension must be an integer or a dim name, got {dim!r}")
        if isinstance(dim, int) and dim < 0:
            raise where.error(f"{key}[{i}]", f"dimension must be >= 0, got {dim}")
        if isinstance(dim, str) and not _NAME.match(dim):
            raise where.error(f"{key}[{i}]", f"dim name {dim!r} is not an identifier")
        shape.append(dim)
    return shape


def unquoted(name: str, value: object) -> str | None:
    """The fix of a number written as a string (`atol = "1e-2"`): the same number unquoted; None otherwise."""
    if not isinstance(value, str):
        return None
    try:
        float(value)
    except ValueError:
        return None
    return f"write it unquoted: {name} = {value.strip()}"


def _number(value: object, where: Where, key: str, *, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise where.error(key, f"expected a number, got {value!r}", unquoted(key.rpartition(".")[2], value))
    if positive and value < 0:
        raise where.error(key, f"expected a number >= 0, got {value!r}")
    return float(value)


def _kernel_location(raw: dict, key: str, root: Path, where: Where) -> tuple[Path, str | None]:
    """(the kernel file, its dotted module name or None): from `path`, from `module`, or both."""
    module = raw.get("module")
    if module is not None and (not isinstance(module, str) or not all(p.isidentifier() for p in module.split("."))):
        raise where.error(f"{key}.module", f"must be a dotted module name, got {module!r}",
                          'e.g. module = "mypackage.ops.softmax"')
    path_value = raw.get("path")
    if path_value is None:
        if module is None:
            raise where.error(f"{key}.path", "missing required key",
                              'add path = "..." (the kernel file) or module = "pkg.mod" to the [[kernel]] table')
        located = locate_module(module, [root])
        if located is None:
            raise where.error(f"{key}.module", f"cannot find module {module!r} under {root} or on sys.path",
                              "install the package, or give path = \"...\" to the kernel file")
        return located, module
    if not isinstance(path_value, str) or not path_value:
        raise where.error(f"{key}.path", "must be a file path string")
    path = (root / path_value).resolve()
    if not path.is_file():
        raise where.error(f"{key}.path", f"kernel file not found: {path}",
                          "fix the path (relative to the project file)")
    return path, module or package_name_for(path)[0]


def _entry_and_call(raw: dict, key: str, path: Path, module: str | None, root: Path,
                    where: Where) -> tuple[str, str | None]:
    """(entry, call): the entry as given (or the callee of `call`), and the call expression or None."""
    call = raw.get("call")
    if call is not None and (not isinstance(call, str) or not call.strip()):
        raise where.error(f"{key}.call", "must be a call expression string",
                          'e.g. call = "layer_norm(x, (N,), w, b, 1e-5)"')
    entry = raw.get("entry")
    if entry is None:
        if call is None:
            raise where.error(f"{key}.entry", "missing required key",
                              'add entry = "..." (the wrapper that launches the kernel) or call = "fn(x, ...)"')
        shape = entries.parse_call(call)
        if isinstance(shape, str) or not shape.callee:
            raise where.error(f"{key}.call", shape if isinstance(shape, str) else "must call a name, like fn(x)",
                              'e.g. call = "layer_norm(x, (N,), w, b, 1e-5)"')
        entry = ".".join(shape.callee)
    ref = EntryRef.parse(entry) if isinstance(entry, str) else None
    if ref is None:
        raise where.error(f"{key}.entry", f"entry must be a name, a dotted name or 'pkg.mod:name', got {entry!r}")
    source = _entry_source(ref, path, root, where, f"{key}.entry")
    missing = entries.name_missing(source, ref.name) if raw.get("entry") is not None else None
    if missing:
        raise where.error(f"{key}.entry", missing, "name the wrapper function that launches the kernel")
    return entry, call


def _entry_source(ref: EntryRef, path: Path, root: Path, where: Where, key: str) -> Path:
    """The file that defines the entry: the kernel file, or the module named before the colon."""
    if ref.module is None:
        return path
    located = locate_module(ref.module, [root, package_name_for(path)[1]])
    if located is None:
        raise where.error(key, f"cannot find module {ref.module!r} under {root} or on sys.path",
                          "install the package or fix the module name")
    return located


def _check_call(key: str, path: Path, entry: str, call: str | None, inputs: dict, dims: dict, args: dict,
                root: Path, where: Where) -> None:
    """The call (or ``entry(**inputs, **args)``) must read only known names and fit the callee's signature."""
    ref = EntryRef.parse(entry)
    assert ref is not None
    source = _entry_source(ref, path, root, where, f"{key}.entry")
    if call is None:
        problem = entries.signature_problem(source, ref.attributes, 0, [*inputs, *args])
        if problem:
            raise where.error(f"{key}.entry", f"{problem} (called with the inputs and args as keywords)",
                              'add call = "fn(x, ...)" to say how the entry is called')
        return
    shape = entries.parse_call(call)
    if isinstance(shape, str):
        raise where.error(f"{key}.call", shape, 'e.g. call = "layer_norm(x, (N,), w, b, 1e-5)"')
    known = set(inputs) | set(dims) | set(args) | _CALL_SCOPE | set(dir(builtins)) | {ref.name}
    for file in dict.fromkeys([path, source]):
        names = entries.file_names(file)
        if names is None:
            return  # `import *` or unreadable: the names cannot be known statically
        known |= names
    unknown = sorted(shape.names - known)
    if unknown:
        raise where.error(f"{key}.call", f"the call reads {unknown[0]!r}, which is not an input, a dim, an arg "
                          f"or a name of {path.name}", "add it to inputs, dims or args, or fix the call")
    if shape.callee:
        callee_file = source if shape.callee[0] == ref.name else path
        problem = entries.signature_problem(callee_file, shape.callee, shape.positional, shape.keywords,
                                            shape.starred)
        if problem:
            raise where.error(f"{key}.call", problem, "fix the call's arguments")


def _timeout(value: float | None, where: Where, key: str) -> float:
    if value is None:
        return DEFAULT_TIMEOUT_S
    try:
        return check_seconds(key, value)
    except UserError:
        raise where.error(key, f"must be a number of seconds in (0, {MAX_SECONDS:g}], got {value!r}") from None


def _seed(value: object, where: Where) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise where.error("defaults.seed", f"must be an integer, got {value!r}")
    return value


def _dtype_variants(value: object, inputs: dict[str, list], where: Where, key: str) -> list[dict[str, str]]:
    """dtypes as one string, a list of strings (a sweep), or a table per input name."""
    if value is None:
        value = "float32"
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list):
        if not value:
            raise where.error(key, "dtype list is empty")
        return [{name: normalize_dtype(v, where, f"{key}[{i}]") for name in inputs}
                for i, v in enumerate(value)]
    if isinstance(value, dict):
        extra = sorted(set(value) - set(inputs))
        if extra:
            raise where.error(f"{key}.{extra[0]}", "dtype given for an input that is not in `inputs`",
                              f"inputs are: {', '.join(inputs)}")
        base = {name: normalize_dtype(value.get(name, "float32"), where, f"{key}.{name}") for name in inputs}
        return [base]
    raise where.error(key, f"expected a dtype string, a list or a table, got {value!r}")


def _kernel(raw: object, index: int, defaults: dict, root: Path, where: Where, artifacts_folder: str) -> KernelSpec:
    key = f"kernel[{index}]"
    if not isinstance(raw, dict):
        raise where.error(key, "each [[kernel]] must be a table")
    unknown_keys(raw, KERNEL_KEYS, where, key)
    path, module = _kernel_location(raw, key, root, where)
    entry, call = _entry_and_call(raw, key, path, module, root, where)
    name = raw.get("name", entry.rpartition(":")[2].split(".")[0])
    if not isinstance(name, str) or not name:
        raise where.error(f"{key}.name", "must be a non-empty string")
    reference = raw.get("reference")
    if reference is not None and (not isinstance(reference, str) or not reference.strip()):
        raise where.error(f"{key}.reference", "must be a torch expression, 'pkg.mod:fn' or \"original\"")

    inputs_raw = raw.get("inputs", {})
    if not isinstance(inputs_raw, dict) or not inputs_raw:
        raise where.error(f"{key}.inputs", "missing or empty", 'give tensor shapes, e.g. inputs = { x = [1024, 512] }')
    inputs = {}
    for tname, shape in inputs_raw.items():
        if not _NAME.match(tname):
            raise where.error(f"{key}.inputs.{tname}", "input name is not an identifier")
        inputs[tname] = _shape(shape, where, f"{key}.inputs.{tname}")

    dims_raw = raw.get("dims", {})
    if not isinstance(dims_raw, dict):
        raise where.error(f"{key}.dims", "must be a table of dim name = size")
    dims = {}
    for dname, size in dims_raw.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise where.error(f"{key}.dims.{dname}", f"dim size must be an integer >= 0, got {size!r}",
                              unquoted(dname, size))
        dims[dname] = size
    named = {d for shape in inputs.values() for d in shape if isinstance(d, str)}
    undefined = sorted(named - set(dims))
    if undefined:
        missing = undefined[0]
        raise where.error(f"{key}.dims", f"dim {missing!r} is used in inputs but has no size",
                          f"add {missing} = 1024 to dims" if dims_raw else f"add dims = {{ {missing} = 1024 }}")

    sweep = raw.get("sweep")
    if sweep is None:
        sweep = sorted(named, key=lambda d: [d in s for s in inputs.values()].index(True)) if named else []
        sweep = sweep[:1]
    if not isinstance(sweep, list) or any(not isinstance(s, str) or s not in dims for s in sweep):
        raise where.error(f"{key}.sweep", f"sweep must list dims defined in `dims`, got {sweep!r}",
                          f"dims defined: {', '.join(dims) or 'none'}")

    args = raw.get("args", {})
    if not isinstance(args, dict):
        raise where.error(f"{key}.args", "must be a table of keyword = value")
    if isinstance(reference, str):
        folders = [root, *import_folders(Path(path), module)] if path else [root]  # a worker's sys.path has them
        _check_reference(reference, inputs, dims, args, where, f"{key}.reference", folders)
    ranges_raw = raw.get("ranges", {})
    if not isinstance(ranges_raw, dict):
        raise where.error(f"{key}.ranges", "must be a table of input name = [low, high)",
                          "e.g. ranges = { ids = [0, 1000] }")
    ranges = {}
    for rname, bounds in ranges_raw.items():
        if (not isinstance(bounds, list) or len(bounds) != 2
                or not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds) or bounds[0] >= bounds[1]):
            raise where.error(f"{key}.ranges.{rname}", f"must be [low, high) integers, got {bounds!r}")
        ranges[rname] = (bounds[0], bounds[1])

    def optional_number(name: str) -> float | None:
        value = raw.get(name, defaults.get(name))
        return None if value is None else _number(value, where, f"{key}.{name}")

    def optional_expr(name: str) -> str | None:
        value = raw.get(name)
        if value is not None and not isinstance(value, str):
            raise where.error(f"{key}.{name}", "must be a Python expression string over dims and shapes")
        if value is not None:
            try:
                parse_expression(value)
            except ExpressionError as exc:
                raise where.error(f"{key}.{name}", f"{value!r}: {exc}",
                                  "arithmetic over dims and shapes, e.g. \"2 * M * N * K\"") from None
        return value

    optimized = raw.get("optimized")
    spec = KernelSpec(
        name=name,
        path=path,
        entry=entry,
        reference=reference,
        inputs=inputs,
        dims=dims,
        sweep=list(sweep),
        dtypes=_dtype_variants(raw.get("dtypes", defaults.get("dtypes")), inputs, where, f"{key}.dtypes"),
        args=dict(args),
        ranges=ranges,
        atol=optional_number("atol"),
        rtol=optional_number("rtol"),
        flops=optional_expr("flops"),
        bytes=optional_expr("bytes"),
        timeout=_timeout(optional_number("timeout"), where, f"{key}.timeout"),
        optimized=(root / optimized).resolve() if isinstance(optimized, str) else None,
        sizes=list(defaults.get("sizes", DEFAULT_SIZES)),
        seed=_seed(defaults.get("seed", 0), where),
        module=module,
        call=call,
        root=root,
        artifacts=root / artifacts_folder,
    )
    _check_call(key, path, entry, call, inputs, dims, args, root, where)
    return spec


def import_folders(path: Path, module: str | None) -> list[Path]:
    """The folders a worker puts on sys.path for a kernel file: its own, and for a module of a package the folder
    above its top package (as `harness.loading` imports it)."""
    folders = [path.resolve().parent]
    levels = (module or "").count(".") + (1 if path.name == "__init__.py" else 0)
    if module and levels and levels < len(path.resolve().parents):
        folders.append(path.resolve().parents[levels])
    return folders


def _check_reference(reference: str, inputs: dict, dims: dict, args: dict, where: Where, key: str,
                     folders: list[Path]) -> None:
    """What can be known of a reference before anything runs: an expression reads only what its scope holds; a
    function's top-level package can be found (without importing it) in `folders` or on sys.path."""
    import importlib.machinery

    try:
        reference_kind(reference)
    except ValueError as exc:
        raise where.error(key, str(exc), 'a torch expression over the inputs, "pkg.mod:fn" or "original"') from None
    unknown = unknown_names(reference, [*inputs, *dims, *args])
    if unknown:
        readable = "; ".join(f"{what}: {', '.join(names)}" for what, names in
                             (("inputs", inputs), ("dims", dims), ("args", args)) if names)
        dotted = re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", reference.strip())
        module, _, function = reference.strip().rpartition(".")
        raise where.error(key, f"{reference!r} reads {', '.join(map(repr, unknown))}, which is not an input, a dim "
                          "or an arg of this kernel (nor torch, F or math)",
                          f"read only what the kernel names: {readable}"
                          + (f"; a function is written {module}:{function}" if dotted else ""))
    if reference_kind(reference) == "function":
        package = reference.strip().partition(":")[0].split(".")[0]
        try:
            found = package in sys.modules or package in sys.builtin_module_names or \
                importlib.machinery.PathFinder.find_spec(package, [*map(str, folders), *sys.path]) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise where.error(key, f"{reference!r}: no module named {package!r} can be imported here",
                              "install it, or put its folder on PYTHONPATH")


def parse_project(data: dict, file: Path | None, root: Path) -> Project:
    where = Where(str(file) if file else None)
    unknown_keys(data, _TOP_KEYS, where, "")
    project = data.get("project", {})
    defaults = data.get("defaults", {})
    if not isinstance(project, dict):
        raise where.error("project", "must be a table")
    if not isinstance(defaults, dict):
        raise where.error("defaults", "must be a table")
    unknown_keys(project, PROJECT_KEYS, where, "project")
    unknown_keys(defaults, DEFAULT_KEYS, where, "defaults")
    sizes = defaults.get("sizes", list(DEFAULT_SIZES))
    if (not isinstance(sizes, list) or not sizes
            or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes)):
        raise where.error("defaults.sizes", f"must be a list of positive integers, got {sizes!r}",
                          "e.g. sizes = [1024, 4096]")
    if "dtypes" in defaults:  # checked even where every kernel names its own: a typo there is still a typo
        given = defaults["dtypes"]
        _dtype_variants(given, {name: [] for name in given} if isinstance(given, dict) else {"x": []}, where,
                        "defaults.dtypes")
    kernels_raw = data.get("kernel", [])
    capture = capture_request(project, root, where)
    if not isinstance(kernels_raw, list) or (not kernels_raw and capture is None):
        raise where.error("kernel", "no [[kernel]] table", "add one [[kernel]] table per kernel entry point, "
                          "or `capture = \"<command>\"` with `capture_files` under [project]")
    artifacts = project.get("artifacts", DEFAULT_ARTIFACTS)
    if not isinstance(artifacts, str):
        raise where.error("project.artifacts", "must be a folder path string")
    kernels = [_kernel(raw, i, defaults, root, where, artifacts) for i, raw in enumerate(kernels_raw)]
    seen: set[str] = set()
    for i, k in enumerate(kernels):
        if k.name in seen:
            raise where.error(f"kernel[{i}].name", f"duplicate kernel name {k.name!r}",
                              "give each kernel a unique name")
        seen.add(k.name)
    max_configs = project.get("max_configs", DEFAULT_MAX_CONFIGS)
    if isinstance(max_configs, bool) or not isinstance(max_configs, int) or max_configs < 1:
        raise where.error("project.max_configs", f"must be a positive integer, got {max_configs!r}",
                          f"max_configs = {DEFAULT_MAX_CONFIGS} (the default)")
    hint_autotune = project.get("hint_autotune", [])
    if not isinstance(hint_autotune, list) or not all(isinstance(name, str) and name for name in hint_autotune):
        raise where.error("project.hint_autotune", f"must be a list of kernel names (or \"all\"), got "
                                                   f"{hint_autotune!r}")
    if capture is not None and not capture.files:
        capture.files = list(dict.fromkeys(k.path for k in kernels))
    tileir_version = project.get("tileir_version")
    if tileir_version is not None:
        if not isinstance(tileir_version, str):
            raise where.error("project.tileir_version", f"must be a release string like \"13.4\", got "
                                                        f"{tileir_version!r}")
        try:
            get_release(tileir_version)
        except UserError as exc:
            raise where.error("project.tileir_version", exc.message, exc.hint) from None
    return Project(file=file, root=root, kernels=kernels, artifacts=(root / artifacts), max_configs=max_configs,
                   capture=capture, tileir_version=tileir_version, executor=executor_table(data.get("executor"), where),
                   hint_autotune=tuple(hint_autotune))


def load_project(path: Path | str) -> Project:
    """Load and validate a project file; a folder means its `tileiropt.toml`."""
    path = Path(path)
    if path.is_dir():
        path = path / PROJECT_FILE
    if not path.is_file():
        raise UserError("project file not found", file=str(path),
                        hint="run `tileiropt init` to write one, pass a kernel file, or a library folder and the "
                             "command that exercises it: tileiropt run src/mypkg -- pytest tests/")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        raise UserError(f"invalid TOML: {exc}", file=str(path), line=int(line.group(1)) if line else None,
                        hint="check the TOML syntax at that line") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read: {exc}", file=str(path)) from None
    return parse_project(data, path.resolve(), path.resolve().parent)
