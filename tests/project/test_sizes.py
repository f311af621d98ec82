"""No function over 80 lines and no module over 400 lines in bonusd/, simulators/ and
loadtests/: a longer one is split along its seams (options, build, run, report), or a
coherent part moves to a module of its own. And no single-letter names in bonusd/ outside
comprehensions and lambdas: a variable, parameter, loop target or `except`/`with` name
says what it holds (`_`, a TypeVar and an enum member such as `Tier.J` excepted)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.daemon_helpers import PROJECT

ROOTS = ("bonusd", "simulators", "loadtests")
MAX_FUNCTION_LINES = 80  # from `def` to its last line, decorators excluded
MAX_MODULE_LINES = 400
ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}  # from the enum module
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


def _allowed_single_letters(tree: ast.Module) -> set[int]:
    """The ids of the name nodes that may be one letter: comprehension targets, lambda
    parameters, names bound by a `TypeVar(...)` call, and the members of an Enum."""
    allowed: set[int] = set()
    enums: set[str] = set()
    classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    while True:  # a subclass of an Enum of the same module is an Enum too
        found = {c.name for c in classes if any(_is_enum(base, enums) for base in c.bases)}
        if found == enums:
            break
        enums = found
    for node in ast.walk(tree):
        if isinstance(node, ast.comprehension):
            allowed |= {id(name) for name in ast.walk(node.target)}
        elif isinstance(node, ast.Lambda):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            every += [arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
            allowed |= {id(arg) for arg in every}
        elif isinstance(node, ast.Assign) and _is_typevar(node.value):
            allowed |= {id(name) for target in node.targets for name in ast.walk(target)}
        elif isinstance(node, ast.ClassDef) and node.name in enums:
            for statement in node.body:
                if isinstance(statement, ast.Assign | ast.AnnAssign):
                    targets = (
                        statement.targets
                        if isinstance(statement, ast.Assign)
                        else [statement.target]
                    )
                    allowed |= {id(name) for target in targets for name in ast.walk(target)}
    return allowed


def _is_enum(base: ast.expr, enums: set[str]) -> bool:
    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
    return name in ENUM_BASES or name in enums


def _is_typevar(value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) == "TypeVar"


def _single_letter_names(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, name) of every name bound in `tree` that is one letter and not allowed:
    assignment, loop, `with` and walrus targets, parameters and `except ... as` names."""
    allowed = _allowed_single_letters(tree)
    for node in ast.walk(tree):
        if id(node) in allowed:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            name: str | None = node.id
        elif isinstance(node, ast.arg):
            name = node.arg
        elif isinstance(node, ast.ExceptHandler):
            name = node.name
        else:
            continue
        if name is not None and len(name) == 1 and name != "_":
            yield node.lineno, name


def test_no_single_letter_names_in_bonusd() -> None:
    found = [
        f"{module.relative_to(PROJECT)}:{line} {name}"
        for module in sorted((PROJECT / "bonusd").rglob("*.py"))
        for line, name in sorted(
            _single_letter_names(ast.parse(module.read_text(encoding="utf-8")))
        )
    ]
    assert not found, "single-letter names (rename to say what they hold):\n" + "\n".join(found)
