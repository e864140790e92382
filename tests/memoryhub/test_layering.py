"""memoryhub is the core: the other apps use it, it imports none of them
(docs/architecture.md). Checked on the source, function-level imports
included: other apps reach memoryhub through hooks they register
(services/sweep.py for erasure, services/audit.py listeners) or through
the caller passing what it read (selectors.dashboard's run figures)."""

from __future__ import annotations

import ast
from pathlib import Path

import memoryhub

OTHER_APPS = {"consolidation", "reviews", "notifications"}


def _imported_apps(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found & OTHER_APPS


def test_it_imports_no_other_app_of_the_project() -> None:
    root = Path(memoryhub.__file__).parent
    offenders = {str(path.relative_to(root.parent)): sorted(apps)
                 for path in sorted(root.rglob("*.py")) if "migrations" not in path.parts
                 if (apps := _imported_apps(path))}
    assert offenders == {}


# --- the services package: one direction of imports ----------------------------------------
# Issue 18: the service modules used to hold each other up by function-level
# imports (changes ⇄ agents, changes ⇄ erasure, memory ⇄ proposals). They now
# import the steps they share from modules below them (services/_write.py,
# services/_change_request.py, policy.py) at the top of the file, where an
# import cycle cannot hide.

ROOT = Path(memoryhub.__file__).parent
FACADE = "memoryhub.services"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The memoryhub modules an import statement of `module` names."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name.split(".")[0] == "memoryhub"}
    if node.level:
        package = module.split(".")
        if MODULES[module].name != "__init__.py":
            package.pop()
        package = package[:len(package) - node.level + 1]
        base = ".".join([*package, *([node.module] if node.module else [])])
    else:
        base = node.module or ""
    if base.split(".")[0] != "memoryhub":
        return set()
    # `from package import submodule` names the submodule; any other name, the module itself.
    return {f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names}


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(module: str) -> tuple[set[str], list[tuple[int, str]]]:
    """(what `module` imports at module level, [(line, module) of imports inside a function or class])."""
    tree = ast.parse(MODULES[module].read_text(), filename=str(MODULES[module]))
    top: set[str] = set()
    seen: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            top |= _targets(module, node)
            seen.add(id(node))
        elif _is_type_checking(node):
            seen |= {id(inner) for inner in ast.walk(node)}
    nested = [(node.lineno, target) for node in ast.walk(tree)
              if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in seen
              for target in sorted(_targets(module, node))]
    return top, nested


def _graph() -> dict[str, set[str]]:
    """Module-level imports between memoryhub modules. Importing a module of
    another package runs that package's __init__ first, so it counts as an
    import of the package too (how memoryhub.search's __init__, which used to
    import the services, closed a loop) -- except for the services package
    itself: its __init__ is the door for the entry points and re-exports
    every service module, so each of them counts as importing only itself.
    A service module importing that door by name is an edge to all of them."""
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        targets, _ = _imports(module)
        edges = {target for target in targets if target in MODULES and target != module}
        for target in list(edges):
            parts = target.split(".")
            edges |= {parent for i in range(2, len(parts)) if (parent := ".".join(parts[:i])) in MODULES
                      and parent != FACADE and not (module == parent or module.startswith(parent + "."))}
        graph[module] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_it_finds_a_cycle_and_a_function_level_import() -> None:
    # The checks below can fail: a made-up loop is found, and so is an import in a def.
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    tree = ast.parse("def f():\n    from memoryhub.services import memory\n")
    node = tree.body[0].body[0]  # type: ignore[attr-defined]
    assert _targets("memoryhub.services.changes", node) == {"memoryhub.services.memory"}


def test_it_has_no_function_level_import_of_memoryhub_in_the_services_or_selectors() -> None:
    checked = [module for module in MODULES if module.startswith(FACADE + ".") or module == "memoryhub.selectors"]
    assert len(checked) > 15
    nested = {f"{MODULES[module].relative_to(ROOT.parent)}:{line}": target
              for module in checked for line, target in _imports(module)[1]}
    assert nested == {}


def test_the_services_import_each_other_in_one_direction_only() -> None:
    graph = _graph()
    assert "memoryhub.services._write" in graph["memoryhub.services.memory"]
    services_in_a_cycle = [cycle for cycle in _cycles(graph)
                           if any(module.startswith(FACADE) for module in cycle)]
    assert services_in_a_cycle == []
