"""Every path the docs name exists: a file or folder of the repository that README.md,
docs/ or a module docstring points a reader to is there (a rename that forgets a doc
fails here)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.daemon_helpers import PROJECT

TOP = ("bonusd", "simulators", "loadtests", "tests", "displays", "deploy", "scripts", "docs")
PATH = re.compile(r"(?<![\w/.:-])((?:" + "|".join(TOP) + r")/[\w./-]*[\w/])")
PATTERN = re.compile(r"[*{}<>+#]|\.\.\.")  # a pattern, placeholder or MQTT topic


def _docs() -> list[Path]:
    docs = [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md"))]
    return docs + sorted((PROJECT / "docs").glob("*/*.md"))


def _named(text: str) -> set[str]:
    """The repository paths in `text` (a link relative to the doc's folder counts too)."""
    out = set()
    for m in PATH.finditer(text):
        path = m.group(1).split("::")[0].rstrip(".")
        if not PATTERN.search(text[m.start() : m.end() + 1]):
            out.add(path)
    return out


def test_every_path_a_doc_names_exists() -> None:
    missing = [
        f"{doc.relative_to(PROJECT)}: {path}"
        for doc in _docs()
        for path in sorted(_named(doc.read_text(encoding="utf-8")))
        if not (PROJECT / path).exists() and not (doc.parent / path).exists()
    ]
    assert not missing, "\n".join(missing)


def test_every_path_a_module_docstring_names_exists() -> None:
    missing = []
    for module in sorted((PROJECT / "bonusd").rglob("*.py")):
        text = module.read_text(encoding="utf-8")
        doc = re.match(r'\s*(?:#.*\n)*\s*"""(.*?)"""', text, re.S)
        for path in sorted(_named(doc.group(1) if doc else "")):
            if not (PROJECT / path).exists():
                missing.append(f"{module.relative_to(PROJECT)}: {path}")
    assert not missing, "\n".join(missing)
