"""Find the Triton kernels of a file: parameters, decorators, autotune configs, launch sites.

One parse and one pass over the syntax tree per file. Kernels are found whatever the spelling:
`@triton.jit`, `@triton.jit(...)`, `@jit` after `from triton import jit`, `import triton as tr`,
with `@triton.autotune(...)` / `@triton.heuristics(...)` stacked above. Autotune configs are
resolved within the file: a list literal, a comprehension, a module-level name, or a call to a
module-level config-building function (one level).

Module-level means inside module-level `if` / `try` / `with` blocks too (`if HAS_TRITON:`, see
`tileiropt.classify.blocks`): each kernel there records its branch (`KernelInfo.condition`). Where a
kernel's name is bound on an alternative branch too (a plain-Python fallback under `else:`, a second kernel
under another `elif`), the first Triton definition is the one analysed; `ModuleInfo.definitions` lists
every binding.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from tileiropt.classify.assigned import Made, assigned_kernels
from tileiropt.classify.blocks import (
    Branch,
    Definition,
    alternatives,
    condition,
    decided_against,
    flatten,
    module_definitions,
)
from tileiropt.classify.collector import Collector
from tileiropt.classify.names import AUTOTUNE, CONFIG, CONSTEXPR, HEURISTICS, JIT, call_name
from tileiropt.classify.source import SourceText, parse_source, read_source

# Positional parameters of triton.Config(kwargs, num_warps, num_stages, num_ctas, maxnreg, pre_hook, ...).
_CONFIG_POSITIONAL = ("kwargs", "num_warps", "num_stages", "num_ctas", "maxnreg", "pre_hook")
# Positional parameters of triton.autotune(configs, key, prune_configs_by, reset_to_zero, ...).
_AUTOTUNE_POSITIONAL = ("configs", "key", "prune_configs_by", "reset_to_zero", "restore_value",
                        "pre_hook", "post_hook", "warmup", "rep", "use_cuda_graph", "do_bench")


@dataclass
class Param:
    name: str
    annotation: str | None  # source text of the annotation
    is_constexpr: bool  # annotated tl.constexpr / triton.language.constexpr (any alias)
    default: str | None  # source text of the default


@dataclass
class ConfigInfo:
    """One `triton.Config(...)` call found in source."""

    line: int
    kwargs: dict[str, str]  # meta-parameter -> value source (from a dict literal); {} if not a literal
    options: dict[str, str]  # num_warps / num_stages / num_ctas / maxnreg / pre_hook / ... -> source
    source: str  # source text of the call


@dataclass
class AutotuneInfo:
    line: int
    configs_source: str  # source of the `configs=` argument (or the first positional)
    configs_kind: str  # "list" | "comprehension" | "name" | "call" | "other"
    configs: list[ConfigInfo]  # every triton.Config call resolvable within the file
    config_function: str | None  # name of the config-building function when configs_kind == "call"
    config_function_params: list[str]  # its parameter names (e.g. ["pre_hook"])
    config_names: list[str]  # meta-parameter names set by the configs, in first-seen order
    key: list[str] | None  # literal list of strings, None if not a literal
    other_args: dict[str, str]  # prune_configs_by, reset_to_zero, restore_value, warmup, ... -> source
    package: str | None = None  # a package's own autotune decorator (its source name), not triton.autotune


@dataclass
class LaunchSite:
    line: int
    function: str | None  # enclosing def name (the wrapper) or None at module level
    grid: str  # source of the subscript
    args: list[str]  # positional argument sources
    kwargs: dict[str, str]  # keyword -> source (num_warps/num_stages too); `**x` is key "**"
    launched_as: str | None = None  # the name launched, where an assignment bound the kernel to another one


@dataclass
class KernelInfo:
    name: str
    line: int  # line of the `def`
    first_line: int  # line of the first decorator
    end_line: int
    params: list[Param]
    jit_decorator: str  # source of the jit decorator, e.g. "triton.jit(do_not_specialize=...)"
    autotune: AutotuneInfo | None
    heuristics: dict[str, str]  # names set by @triton.heuristics({...}) -> lambda source
    launches: list[LaunchSite]  # kernel[grid](...) sites in this file
    calls: list[str]  # other JIT functions of this module it calls (helpers)
    is_entry: bool  # an entry point rather than a device helper (see `_is_entry`)
    returns_value: bool = False  # has `return <expr>`: only device helpers return values
    called_by: list[str] = field(default_factory=list)  # JIT functions of this module calling it
    wrappers: list[str] = field(default_factory=list)  # decorators that are not Triton's (a package's entry object)
    condition: str | None = None  # the module-level block it is defined in ("if HAS_TRITON"); None at the top
    made_by: str = "decorator"  # "decorator" (`@triton.jit`) | "assignment" (`k = triton.jit(k)`, `assigned`)
    bound_to: str | None = None  # made by assignment: the name holding its outermost object, where not the def's
    bound_names: list[str] = field(default_factory=list)  # made by assignment: every name bound to it or a wrapper

    @property
    def names(self) -> list[str]:
        """The module-level names the file launches the kernel through: its own (a decorated kernel's), or those
        its assignments bind (`add = triton.jit(_add_py)`: `add`, never the plain def)."""
        return list(self.bound_names) if self.made_by == "assignment" else [self.name]

    @property
    def binding(self) -> str:
        """The module-level name holding the kernel's outermost object (its autotuner, heuristics, wrappers)."""
        return self.bound_to or self.name

    @property
    def constexprs(self) -> set[str]:
        """Parameters annotated `tl.constexpr`."""
        return {p.name for p in self.params if p.is_constexpr}

    @property
    def launch_arguments(self) -> set[str]:
        """Parameters whose values the launch passes: set neither by the autotuner's configs nor by heuristics."""
        config_names = set(self.autotune.config_names) if self.autotune else set()
        return {p.name for p in self.params} - config_names - set(self.heuristics)


@dataclass
class ModuleInfo:
    path: str
    kernels: list[KernelInfo]
    triton_names: set[str]  # local names bound to the triton module ("triton")
    tl_names: set[str]  # local names bound to triton.language ("tl", "language", ...)
    jit_names: set[str]  # local names bound to triton.jit ("jit" after `from triton import jit`)
    module_functions: dict[str, int]  # module-level def name -> line
    aliases: dict[str, str] = field(default_factory=dict)  # every Triton-bound local name -> qualified
    definitions: dict[str, list[Definition]] = field(default_factory=dict)  # module-level bindings by name


@dataclass
class Scan:
    """A parsed file with its discovery result and the syntax-tree nodes later phases need."""

    module: ModuleInfo
    tree: ast.Module
    text: SourceText
    kernel_nodes: list[ast.FunctionDef]  # parallel to module.kernels
    functions: dict[str, ast.FunctionDef]  # module-level defs by name
    launch_functions: dict[tuple[str, int], ast.FunctionDef | None] = field(default_factory=dict)
    # (kernel name, launch line) -> the def that holds the launch (None at module level)
    launch_calls: dict[tuple[str, int], ast.Call] = field(default_factory=dict)  # -> the launch call
    constants: dict[str, int] = field(default_factory=dict)  # module-level names bound once to an int literal
    branches: dict[int, Branch] = field(default_factory=dict)  # id(module-level statement) -> its branch
    configs_nodes: dict[str, ast.expr] = field(default_factory=dict)  # kernel name -> its autotuner's configs=
    made: dict[str, Made] = field(default_factory=dict)  # kernel name -> how assignments made it (`assigned`)

    def layers(self, kernel: str, node: ast.FunctionDef) -> list[ast.expr]:
        """What is applied over a kernel's def, outermost first: its decorators, or the layers its assignments
        apply (`assigned.Made.layers`)."""
        made = self.made.get(kernel)
        return list(made.layers) if made is not None and made.node is node else list(node.decorator_list)


def discover(source: str, path: str = "<string>") -> ModuleInfo:
    """Discover the kernels of `source`; raises UserError(file, line) on a syntax error."""
    return scan(source, path).module


def discover_file(path: Path) -> ModuleInfo:
    """Discover the kernels of a file; UserError when it is unreadable or does not parse."""
    return scan_file(path).module


def scan_file(path: Path) -> Scan:
    return scan(read_source(Path(path)), str(path))


def scan(source: str, path: str = "<string>") -> Scan:
    tree = parse_source(source, path)
    text = SourceText(source)
    collector = Collector(path)
    collector.visit(tree)
    return _Builder(collector, text, path).build(tree)


# --------------------------------------------------------------------------- building records


def _not_here(defs: list[ast.FunctionDef], branches: dict[int, Branch]) -> set[int]:
    """The ids of module-level defs that do not run in this environment while an alternative of the same name does:
    `if os.environ.get("FAST") == "1": def log ... else: def log ...` analyses the `log` the module defines here
    (`blocks.decided_against`). A def with no alternative that runs is kept, whatever the environment."""
    against = {id(node) for node in defs if id(node) in branches and decided_against(branches[id(node)])}
    return {id(node) for node in defs if id(node) in against and any(
        other.name == node.name and id(other) in branches and id(other) not in against
        and alternatives(branches[id(other)], branches[id(node)]) for other in defs)}


class _Builder:
    def __init__(self, collector: Collector, text: SourceText, path: str):
        self.c = collector
        self.text = text
        self.path = path
        self.aliases = collector.aliases
        self.configs_nodes: dict[str, ast.expr] = {}
        self.made: dict[str, Made] = {}  # kernel name -> how assignments made it
        self._not_here: set[int] = set()  # defs this environment does not run (`_not_here`)

    def build(self, tree: ast.Module) -> Scan:
        made = {id(m.node): m for m in assigned_kernels((s for s, _ in flatten(tree)), self.aliases)}
        definitions, branches = module_definitions(
            tree, self.text, lambda node: self._jit_decorator(node) is not None or id(node) in made)
        kernel_nodes: list[ast.FunctionDef] = []
        self._not_here = _not_here(self.c.defs, branches)
        for node in self.c.defs:
            if (self._jit_decorator(node) is not None or id(node) in made) and id(node) not in self._not_here \
                    and not self._alternative_of_kernel(node, kernel_nodes, branches):
                kernel_nodes.append(node)
        self.made = {node.name: made[id(node)] for node in kernel_nodes if id(node) in made}
        module_functions = self._module_functions(branches)
        names = self._launched_names(kernel_nodes)
        launches, launch_functions, launch_calls = self._launches(names)

        kernels = [self._kernel(node, names, launches) for node in kernel_nodes]
        for kernel in kernels:
            for callee in kernel.calls:
                for other in kernels:
                    if other.name == callee and kernel.name not in other.called_by:
                        other.called_by.append(kernel.name)
        for kernel, node in zip(kernels, kernel_nodes, strict=True):
            kernel.is_entry = _is_entry(kernel)
            kernel.condition = condition(branches.get(id(node), ()))

        aliases = self.aliases
        module = ModuleInfo(
            path=self.path,
            kernels=kernels,
            triton_names={name for name, q in aliases.items() if q == "triton"},
            tl_names={name for name, q in aliases.items() if q == "triton.language"},
            jit_names={name for name, q in aliases.items() if q in JIT},
            module_functions={name: node.lineno for name, node in module_functions.items()},
            aliases=dict(aliases),
            definitions=definitions,
        )
        return Scan(module=module, tree=tree, text=self.text, kernel_nodes=kernel_nodes,
                    functions=module_functions, launch_functions=launch_functions,
                    launch_calls=launch_calls, constants=self._constants(), branches=branches,
                    configs_nodes=self.configs_nodes, made=self.made)

    def _launched_names(self, kernel_nodes: list[ast.FunctionDef]) -> dict[str, str]:
        """Module-level name -> the kernel launched through it: a decorated kernel's own name, every name the
        assignments of a kernel made by assignment bind (`add = triton.jit(_add_py)`: `add`)."""
        names = {node.name: node.name for node in kernel_nodes if node.name not in self.made}
        for kernel, made in self.made.items():
            names.update(dict.fromkeys(made.names, kernel))
        return names

    @staticmethod
    def _alternative_of_kernel(node: ast.FunctionDef, kernels: list[ast.FunctionDef],
                               branches: dict[int, Branch]) -> bool:
        """A kernel whose name an earlier kernel binds on an alternative branch (`if`/`else`): not analysed."""
        branch = branches.get(id(node))
        return branch is not None and any(
            other.name == node.name and id(other) in branches and alternatives(branches[id(other)], branch)
            for other in kernels)

    def _module_functions(self, branches: dict[int, Branch]) -> dict[str, ast.FunctionDef]:
        """Module-level defs by name: a later def replaces an earlier one, except on a branch alternative to it
        (the plain-Python fallback under `else:` never replaces the Triton branch's kernel or wrapper)."""
        functions: dict[str, ast.FunctionDef] = {}
        for node in self.c.defs:
            if id(node) not in branches or id(node) in self._not_here:
                continue
            current = functions.get(node.name)
            if current is None or not alternatives(branches[id(current)], branches[id(node)]):
                functions[node.name] = node
        for name, node in self.c.module_functions.items():  # defs in module-level loops
            functions.setdefault(name, node)
        return functions

    def _constants(self) -> dict[str, int]:
        constants = {}
        for name, values in self.c.module_values.items():
            if len(values) == 1 and isinstance(values[0], ast.Constant) and type(values[0].value) is int:
                constants[name] = values[0].value
        return constants

    def _jit_decorator(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
        for decorator in node.decorator_list:
            if call_name(decorator, self.aliases) in JIT:
                return decorator
        return None

    def _kernel(self, node: ast.FunctionDef, names: dict[str, str], launches: dict[str, list[LaunchSite]]
                ) -> KernelInfo:
        """The record of one kernel, from what is applied over its def: its decorators, or the layers its
        assignments apply (`assigned`), read alike."""
        made = self.made.get(node.name)
        made = made if made is not None and made.node is node else None
        autotune = None
        heuristics: dict[str, str] = {}
        wrappers: list[str] = []
        for dec in made.layers if made is not None else node.decorator_list:
            name = call_name(dec, self.aliases)
            if name in AUTOTUNE and isinstance(dec, ast.Call):
                autotune = self._autotune(dec, node.name)
            elif name in HEURISTICS and isinstance(dec, ast.Call):
                heuristics.update(self._heuristics(dec))
            elif name in JIT:
                continue
            elif isinstance(dec, ast.Call) and any(k.arg == "configs" for k in dec.keywords) and autotune is None:
                # a package's own autotuner (`@libtuner(configs=..., key=...)`): never wrapped in a second one
                autotune = self._autotune(dec, node.name)
                autotune.package = self.text.segment(dec.func)
            else:
                wrappers.append(self.text.segment(dec))
        calls: list[str] = []
        for callee in self.c.called.get(id(node), []):
            helper = names.get(callee)
            if helper is not None and helper != node.name and helper not in calls:
                calls.append(helper)
        first_line = min([node.lineno] + [d.lineno for d in node.decorator_list])
        jit = made.jit if made is not None else self._jit_decorator(node)
        assert jit is not None  # a kernel has one or the other
        return KernelInfo(
            name=node.name,
            line=node.lineno,
            first_line=first_line,
            end_line=node.end_lineno or node.lineno,
            params=self._params(node.args),
            jit_decorator=self.text.segment(jit),
            autotune=autotune,
            heuristics=heuristics,
            launches=list(launches.get(node.name, [])),
            calls=calls,
            is_entry=False,
            returns_value=id(node) in self.c.returns_value,
            wrappers=wrappers,
            made_by="assignment" if made is not None else "decorator",
            bound_to=made.top if made is not None and made.top != node.name else None,
            bound_names=list(made.names) if made is not None else [],
        )

    def _params(self, args: ast.arguments) -> list[Param]:
        positional = [*args.posonlyargs, *args.args]
        missing = len(positional) - len(args.defaults)
        defaults: list[ast.expr | None] = [None] * missing + list(args.defaults)
        pairs = [*zip(positional, defaults, strict=True),
                 *zip(args.kwonlyargs, args.kw_defaults, strict=True)]
        params = []
        for arg, default in pairs:
            annotation = arg.annotation
            params.append(Param(
                name=arg.arg,
                annotation=self.text.segment(annotation) if annotation is not None else None,
                is_constexpr=self._is_constexpr(annotation),
                default=self.text.segment(default) if default is not None else None,
            ))
        return params

    def _is_constexpr(self, annotation: ast.expr | None) -> bool:
        if annotation is None:
            return False
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:  # a string annotation, e.g. "tl.constexpr"
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return False
        return call_name(annotation, self.aliases) in CONSTEXPR

    # autotune / heuristics ---------------------------------------------------
    def _autotune(self, dec: ast.Call, kernel: str) -> AutotuneInfo:
        named: dict[str, ast.expr] = {}
        for index, arg in enumerate(dec.args):
            if index < len(_AUTOTUNE_POSITIONAL):
                named[_AUTOTUNE_POSITIONAL[index]] = arg
        for keyword in dec.keywords:
            if keyword.arg is not None:
                named[keyword.arg] = keyword.value
        configs_node = named.pop("configs", None)
        if configs_node is not None:
            self.configs_nodes[kernel] = configs_node
        key_node = named.pop("key", None)

        kind = _configs_kind(configs_node)
        function_name: str | None = None
        function_params: list[str] = []
        if kind == "call" and isinstance(configs_node, ast.Call):
            function_name = self.text.segment(configs_node.func)
            target = self.c.module_functions.get(function_name)
            if target is not None:
                function_params = [a.arg for a in (*target.args.posonlyargs, *target.args.args,
                                                   *target.args.kwonlyargs)]
        configs = self._resolve_configs(configs_node) if configs_node is not None else []
        names: list[str] = []
        for config in configs:
            for name in config.kwargs:
                if name not in names:
                    names.append(name)
        return AutotuneInfo(
            line=dec.lineno,
            configs_source=self.text.segment(configs_node) if configs_node is not None else "",
            configs_kind=kind,
            configs=configs,
            config_function=function_name,
            config_function_params=function_params,
            config_names=names,
            key=_string_list(key_node),
            other_args={name: self.text.segment(value) for name, value in named.items()},
        )

    def _resolve_configs(self, root: ast.expr) -> list[ConfigInfo]:
        """Config calls inside `root`, following module-level names and module-level function calls."""
        found: list[ConfigInfo] = []
        seen_calls: set[int] = set()
        seen_names: set[str] = set()

        def walk(node: ast.AST, follow_functions: bool) -> None:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call):
                    if call_name(sub, self.aliases) in CONFIG:
                        if id(sub) not in seen_calls:
                            seen_calls.add(id(sub))
                            found.append(self._config(sub))
                    elif follow_functions and isinstance(sub.func, ast.Name):
                        target = self.c.module_functions.get(sub.func.id)
                        if target is not None and sub.func.id not in seen_names:
                            seen_names.add(sub.func.id)
                            for statement in target.body:
                                walk(statement, follow_functions=False)
                elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                    values = self.c.module_values.get(sub.id)
                    if values and sub.id not in seen_names:
                        seen_names.add(sub.id)
                        for value in values:
                            walk(value, follow_functions)

        walk(root, follow_functions=True)
        found.sort(key=lambda config: config.line)
        return found

    def _config(self, call: ast.Call) -> ConfigInfo:
        kwargs: dict[str, str] = {}
        options: dict[str, str] = {}
        for index, arg in enumerate(call.args):
            if index == 0:
                kwargs = self._meta_dict(arg)
            elif index < len(_CONFIG_POSITIONAL):
                options[_CONFIG_POSITIONAL[index]] = self.text.segment(arg)
        for keyword in call.keywords:
            if keyword.arg == "kwargs":
                kwargs = self._meta_dict(keyword.value)
            elif keyword.arg is not None:
                options[keyword.arg] = self.text.segment(keyword.value)
        return ConfigInfo(line=call.lineno, kwargs=kwargs, options=options, source=self.text.segment(call))

    def _meta_dict(self, node: ast.expr) -> dict[str, str]:
        """{"BLOCK": 128} or dict(BLOCK=128) -> {"BLOCK": "128"}; {} for anything else."""
        result: dict[str, str] = {}
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    result[key.value] = self.text.segment(value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            for keyword in node.keywords:
                if keyword.arg is not None:
                    result[keyword.arg] = self.text.segment(keyword.value)
        return result

    def _heuristics(self, dec: ast.Call) -> dict[str, str]:
        values = dec.args[0] if dec.args else next((k.value for k in dec.keywords if k.arg == "values"), None)
        return self._meta_dict(values) if values is not None else {}

    # launches ----------------------------------------------------------------
    def _launches(self, names: dict[str, str]) -> tuple[
            dict[str, list[LaunchSite]], dict[tuple[str, int], ast.FunctionDef | None],
            dict[tuple[str, int], ast.Call]]:
        """Each `name[grid](...)` of the file whose name is one the kernels are launched through (`names`: the
        module-level name -> the kernel), by kernel; keyed by (kernel, line) for the def and the call."""
        launches: dict[str, list[LaunchSite]] = {}
        functions: dict[tuple[str, int], ast.FunctionDef | None] = {}
        calls: dict[tuple[str, int], ast.Call] = {}
        for call, function in self.c.subscript_calls:
            subscript = call.func
            assert isinstance(subscript, ast.Subscript) and isinstance(subscript.value, ast.Name)
            launched = subscript.value.id
            name = names.get(launched)
            if name is None:
                continue
            kwargs = {}
            for keyword in call.keywords:
                kwargs[keyword.arg or "**"] = self.text.segment(keyword.value)
            functions[(name, call.lineno)] = function
            calls[(name, call.lineno)] = call
            launches.setdefault(name, []).append(LaunchSite(
                line=call.lineno,
                function=function.name if function is not None else None,
                grid=self.text.segment(subscript.slice),
                args=[self.text.segment(arg) for arg in call.args],
                kwargs=kwargs,
                launched_as=launched if launched != name else None,
            ))
        return launches, functions, calls


def _configs_kind(node: ast.expr | None) -> str:
    if isinstance(node, (ast.List, ast.Tuple)):
        return "list"
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        return "comprehension"
    if isinstance(node, ast.Name):
        return "name"
    if isinstance(node, ast.Call):
        return "call"
    return "other"


def _string_list(node: ast.expr | None) -> list[str] | None:
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    items = []
    for element in node.elts:
        if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
            return None
        items.append(element.value)
    return items


def _is_entry(kernel: KernelInfo) -> bool:
    """Launched or autotuned here; or, launched from elsewhere: called by no JIT function of this
    module and returning no value (a device helper is called by kernels or returns a value)."""
    if kernel.launches or kernel.autotune is not None or kernel.heuristics:
        return True
    return not kernel.called_by and not kernel.returns_value
