"""The tests mirror the packages and share through fixtures and helper modules: no test
module imports another test module or a conftest.py (fixtures reach their tests through
pytest; what tests import lives in `helpers.py` modules)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parents[1]


def _imported(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names]
    return names


def test_no_test_module_imports_a_test_module_or_a_conftest() -> None:
    wrong = []
    for path in sorted(TESTS.rglob("*.py")):
        for name in _imported(path):
            last = name.rsplit(".", 1)[-1]
            if name.startswith("tests.") and (last.startswith("test_") or last == "conftest"):
                wrong.append(f"{path.relative_to(TESTS)} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_every_package_has_its_tests_folder() -> None:
    packages = TESTS.parent / "bonusd"
    missing = [
        p.name
        for p in sorted(packages.iterdir())
        if (p / "__init__.py").is_file() and not (TESTS / p.name).is_dir()
    ]
    assert not missing, f"packages without a tests/<package>/ folder: {missing}"
