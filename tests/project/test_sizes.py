"""No function over 80 lines and no module over 400 lines in bonusd/, simulators/ and
loadtests/: a longer one is split along its seams (options, build, run, report), or a
coherent part moves to a module of its own."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.daemon_helpers import PROJECT

ROOTS = ("bonusd", "simulators", "loadtests")
MAX_FUNCTION_LINES = 80  # from `def` to its last line, decorators excluded
MAX_MODULE_LINES = 400
Function = ast.FunctionDef | ast.AsyncFunctionDef


def _modules() -> list[Path]:
    return sorted(path for root in ROOTS for path in (PROJECT / root).rglob("*.py"))


def _functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, Function]]:
    """Every function under `node` (methods and nested ones too), with its dotted name."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, Function | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if isinstance(child, Function):
                yield name, child
            yield from _functions(child, f"{name}.")
        else:
            yield from _functions(child, prefix)


def _lines(function: Function) -> int:
    assert function.end_lineno is not None
    return function.end_lineno - function.lineno + 1


def test_no_function_is_over_80_lines() -> None:
    long = [
        f"{module.relative_to(PROJECT)}:{function.lineno} {name}: {_lines(function)} lines"
        for module in _modules()
        for name, function in _functions(ast.parse(module.read_text(encoding="utf-8")))
        if _lines(function) > MAX_FUNCTION_LINES
    ]
    assert not long, "functions over 80 lines:\n" + "\n".join(long)


def test_no_module_is_over_400_lines() -> None:
    long = [
        f"{module.relative_to(PROJECT)}: {count} lines"
        for module in _modules()
        if (count := len(module.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, "modules over 400 lines:\n" + "\n".join(long)
