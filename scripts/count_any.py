"""Count `Any` in the function signatures of app code (parameters and
return annotations of every def in memoryhub, consolidation, reviews and
notifications; migrations excluded). `make lint` prints it: issue 18's
target is under 150 (601 when it was filed)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

APPS = ("memoryhub", "consolidation", "reviews", "notifications")


def _any_in(node: ast.expr | None) -> int:
    if node is None:
        return 0
    return sum(1 for n in ast.walk(node)
               if isinstance(n, ast.Name) and n.id == "Any"
               or isinstance(n, ast.Attribute) and n.attr == "Any"
               or isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.strip() == "Any")


def count(path: Path) -> int:
    tree = ast.parse(path.read_text(), filename=str(path))
    total = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs,
                     *([args.vararg] if args.vararg else []), *([args.kwarg] if args.kwarg else [])]
            total += sum(_any_in(a.annotation) for a in every) + _any_in(node.returns)
    return total


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    per_file = {path: count(path) for app in APPS for path in sorted((root / app).rglob("*.py"))
                if "migrations" not in path.parts}
    total = sum(per_file.values())
    if "-v" in sys.argv:
        for path, n in sorted(per_file.items(), key=lambda item: -item[1])[:20]:
            if n:
                print(f"{n:5d}  {path.relative_to(root)}")
    print(f"Any in function signatures of app code: {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
