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
