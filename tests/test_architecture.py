"""The architecture holds: no import cycle among pinext's modules, and modules of ~600 lines.

The import graph is grimp's (the library under import-linter, whose contracts in
``pyproject.toml`` check the layers): every ``import`` of a pinext module by another counts,
at the top of a module or inside a function; only imports under ``if TYPE_CHECKING:`` (which
never run) are left out. See docs/architecture.md, "Layers".
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import grimp

import pinext

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PACKAGE = Path(pinext.__file__).resolve().parent

#: Lines a module may have (one physical effect, one algorithm: a module a reader takes in).
MAX_LINES = 600

#: Modules above MAX_LINES, each with why it stays one module. A module that falls under the
#: limit leaves the list (the test says so); a new entry needs a reason of the same kind.
LARGE_MODULES = {
    # one algorithm each: line-by-line ports whose parts only make sense together
    "compiled/dop853.py": "one algorithm: Hairer's DOP853 step control, dense output, events",
    "compiled/radau.py": "one algorithm: scipy's Radau IIA step control, dense output, events",
    "contact/impulse.py": "one problem: the simultaneous-impact LCP, frictionless and frictional",
    "flexible/sublinks.py": "one algorithm: a flexible link cut into sublinks (Celentano 2008)",
    "planning/drive_sizing.py": "one computation: drive requirements from a prescribed motion",
    # one physical effect each, with its modes, events and impacts
    "contact/component.py": "one effect: the three-phase contact task (approach, contact, leave)",
    "contact/limits.py": "one effect: joint position limits as unilateral rows with impacts",
    "drives/drive.py": "one effect: the drive component (V&P (20.78)-(20.82)) and its modes",
    # one user-facing object
    "visualization/viewer.py": "one object: the meshcat Viewer, live and as a page",
}


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("pinext", exclude_type_checking_imports=True, cache_dir=None)


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan 1972), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return sorted(cycles)


def _import_lines(graph: grimp.ImportGraph, cycle: list[str]) -> list[str]:
    members = set(cycle)
    lines = []
    for importer in cycle:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            for detail in graph.get_import_details(importer=importer, imported=imported):
                lines.append(f"    {importer}:{detail['line_number']}: {detail['line_contents']}")
    return lines


def test_the_cycle_finder_finds_a_cycle():
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c", "p.d"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")
    graph.add_import(importer="p.d", imported="p.a")
    assert import_cycles(graph) == [["p.a", "p.b", "p.c"]]
    graph.remove_import(importer="p.c", imported="p.a")
    assert import_cycles(graph) == []


def test_no_import_cycle():
    graph = _graph()
    assert "pinext.simulation.system" in graph.modules  # the graph is pinext's
    cycles = import_cycles(graph)
    message = []
    for cycle in cycles:
        message.append(f"modules that import each other: {', '.join(cycle)}")
        message += _import_lines(graph, cycle)
    assert not cycles, "\n".join(
        ["import cycles (imports inside functions count; move code down a layer):", *message]
    )


def test_the_layers_contract_ignores_no_import():
    """Every import of pinext follows the layers of pyproject.toml, with no exception listed."""
    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    assert [c["type"] for c in contracts] == ["layers"]
    assert not contracts[0].get("ignore_imports"), contracts[0].get("ignore_imports")


def _registrations(tree: ast.Module) -> list[str]:
    """Module-level statements that fill a registry: a decorator or a call named
    ``register_*``, or an assignment to an attribute of another object (dunders aside).
    Numba's ``register_jitable`` marks a function that kernels may inline, and its
    ``register_model`` gives a Numba type its data model (:mod:`pinext.compiled.struct`):
    they fill Numba's registries, not pinext's."""
    found = []
    for node in tree.body:
        decorators = getattr(node, "decorator_list", [])
        calls = [d.func if isinstance(d, ast.Call) else d for d in decorators]
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            calls.append(node.value.func)
        for call in calls:
            name = call.attr if isinstance(call, ast.Attribute) else getattr(call, "id", "")
            if name.startswith("register_") and name not in ("register_jitable", "register_model"):
                found.append(f"line {node.lineno}: {name}")
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and not t.attr.startswith("__") for t in node.targets
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_registers_a_plugin_on_import():
    """Plug-ins are listed explicitly (pinext.plugins.PLUGINS, drives.registry.ACTUATORS,
    check.ROWS): no module fills a registry as a side effect of being imported. The one
    hand-over of the plug-in list to System is in pinext/__init__.py."""
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        found = _registrations(ast.parse(path.read_text(encoding="utf-8")))
        if name == "__init__.py":
            assert found == [
                f"line {_line(path, 'System.default_plugins')}: System.default_plugins = PLUGINS"
            ], found
        elif found:
            offenders[name] = found
    assert not offenders, offenders


def _line(path: Path, text: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(text))


def test_the_registration_finder_finds_registrations():
    tree = ast.parse(
        "@register_builder(rank=1)\ndef f(): pass\nregister_check('a', f, 1.0)\n"
        "System.default = ()\nx = 1\ndef g(): register_actuator('p', C)\n"
        "atexit.register(close)\nf.__doc__ = 'x'\n"
    )
    assert _registrations(tree) == [
        "line 2: register_builder",
        "line 3: register_check",
        "line 4: System.default = ()",
    ]


def _module_lines() -> dict[str, int]:
    return {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_modules_stay_small():
    sizes = _module_lines()
    large = {name: n for name, n in sizes.items() if n > MAX_LINES}
    unlisted = sorted(set(large) - set(LARGE_MODULES))
    stale = sorted(name for name in LARGE_MODULES if sizes.get(name, 0) <= MAX_LINES)
    report = "\n".join(f"    {name}: {n} lines" for name, n in sorted(large.items()))
    assert not unlisted, (
        f"modules above {MAX_LINES} lines: {', '.join(unlisted)}; split them, or list them in "
        f"LARGE_MODULES with the one algorithm they hold. Modules above {MAX_LINES}:\n{report}"
    )
    assert not stale, f"LARGE_MODULES lists modules that are small (or gone) now: {stale}"


def test_a_kernel_digest_covers_the_sources_it_inlines():
    """The integrator's cache key covers the ABA and the right-hand side it inlines, and the
    ABA's does not cover the integrator (an edit of the integrator keeps the ABA's code)."""
    from pinext.compiled import _cache

    closure = {p.name for p in _cache._closure(_cache.HERE / "dop853.py")}
    assert {"aba.py", "phase.py", "spatial.py", "dop853.py"} <= closure
    assert "dop853.py" not in {p.name for p in _cache._closure(_cache.HERE / "aba.py")}
