"""The architecture holds: the import contracts of pyproject.toml are kept, a violation
breaks them, and the pure core loads no I/O library."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

from tests.daemon_helpers import PROJECT

LINT = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"]
IO = ("redis", "aiomqtt", "paho", "fastapi", "starlette", "uvicorn", "httpx", "websockets")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(root)}
    return subprocess.run(
        LINT, check=False, cwd=root, capture_output=True, text=True, timeout=120, env=env
    )


def test_the_import_contracts_are_kept() -> None:
    result = _lint(PROJECT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 kept, 0 broken" in result.stdout


def test_a_pure_module_importing_redis_breaks_the_contracts(tmp_path: Path) -> None:
    for part in ("bonusd", "simulators"):
        shutil.copytree(PROJECT / part, tmp_path / part, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(PROJECT / "pyproject.toml", tmp_path)
    clock = tmp_path / "bonusd" / "clocks" / "clock.py"
    clock.write_text(clock.read_text() + "\nimport redis  # noqa\n")
    fairness = tmp_path / "bonusd" / "draws" / "fairness.py"
    fairness.write_text(fairness.read_text() + "\nimport bonusd.service.root  # noqa\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "the pure core imports no I/O library BROKEN" in result.stdout
    assert "bonusd.clocks.clock -> redis" in result.stdout
    assert "bonusd's packages import downwards only BROKEN" in result.stdout


def test_the_pure_core_loads_no_io_library() -> None:
    probe = (
        "import sys, bonusd.draws.fairness, bonusd.draws.book, bonusd.raps.book, "
        "bonusd.push.views, bonusd.clocks.clock, bonusd.floor.telemetry; "
        f"print(sorted(m for m in {IO!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=PROJECT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_no_two_public_classes_share_a_name() -> None:
    defined: dict[str, list[str]] = {}
    for module in sorted((PROJECT / "bonusd").rglob("*.py")):
        for node in ast.parse(module.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                defined.setdefault(node.name, []).append(str(module.relative_to(PROJECT)))
    shared = {name: where for name, where in defined.items() if len(where) > 1}
    assert not shared, shared
