"""Errors about promotion files: each problem names the file, the path inside it and the fix."""

from __future__ import annotations

from collections.abc import Sequence

from bonusd.errors import ConfigError


class PromotionProblem(ConfigError):
    """One thing wrong in a promotion file, e.g.
    `golden-horse.toml: draws.halfway.qualification.threshold: must be > 0, got -5`."""

    def __init__(self, file: str, path: str, problem: str) -> None:
        self.file = file
        self.path = path
        self.problem = problem
        super().__init__(f"{file}: {path}: {problem}")


class PromotionFileError(ConfigError):
    """A promotion file (or a folder of them) was refused; `problems` lists every problem
    found, not only the first."""

    def __init__(self, source: str, problems: Sequence[PromotionProblem]) -> None:
        self.source = source
        self.problems = tuple(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{source}: {len(self.problems)} problem(s), not loaded:\n{lines}")
