"""The tamper corpus (issue 16, item 5): `bonusd verify-draw` passes the untouched export
of a real draw and fails every tampered one (exit 1, naming the place), also when the
trail was re-hashed into a valid chain; one unreadable pool file is named and the rest of
the draw still verified. The corpus is made in `tests/draws/tampering.py`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from bonusd.cli.main import app
from tests.draws.helpers import HALFWAY, Site
from tests.draws.tampering import TAMPERS, settled_draw, write_corpus

# what each tamper's verification must say (a substring of the output)
SAYS = {
    "pool-byte": "pool",
    "pool-garbage": "FAILED: pool file",
    "claim-prize-rehashed": "does not hold R10000",
    "redraw-removed-rehashed": "not redrawn",
    "winner-swapped-rehashed": "pick 1",
    "seed-replaced-rehashed": "seed",
    "exclusion-after-the-pick-rehashed": "passed over as excluded with no exclusion before",
    "exclusion-unapproved-rehashed": "names no request",
    "exclusion-self-approved-rehashed": "approved by the person who made it",
    "letter-prize-rehashed": "the letter's prize is not the one",
}


INDEPENDENT = Path(__file__).with_name("independent_verifier.py")  # from docs/fairness.md alone


def independent(folder: Path) -> tuple[int, str]:
    args = ["--export", str(folder / "audit.jsonl"), "--pools", str(folder / "pools"), HALFWAY]
    done = subprocess.run(
        [sys.executable, str(INDEPENDENT), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout + done.stderr


def verify_draw(folder: Path) -> tuple[int, str]:
    args = ["verify-draw", HALFWAY, "--from", str(folder / "audit.jsonl")]
    result = CliRunner().invoke(app, [*args, "--pools", str(folder / "pools")])
    return result.exit_code, result.output


async def test_every_tamper_is_caught_and_the_untouched_export_passes(
    small: Site, tmp_path: Path
) -> None:
    records, pools, excluded = await settled_draw(small)
    names = write_corpus(tmp_path, records, pools)
    assert set(SAYS) == set(TAMPERS)
    code, out = verify_draw(tmp_path / "untouched")
    assert code == 0, out
    assert "audit chain: chain intact" in out and "FAILED" not in out
    missed = {}
    for name in names[1:]:
        code, out = verify_draw(tmp_path / name)
        if code != 1 or SAYS[name] not in out:
            missed[name] = (code, out)
        if name.endswith("rehashed"):  # the chain alone is fooled; the draw's checks are not
            assert "audit chain: chain intact" in out, (name, out)
    assert not missed, missed
    # the untouched export really contains what the tampers need
    kinds = {r.kind for r in records}
    assert {"request", "approval", "exclusion", "redraw", "letter", "seed_reveal"} <= kinds
    assert any(excluded in str(r.payload.get("passed_over")) for r in records)


async def test_the_independent_verifier_agrees(small: Site, tmp_path: Path) -> None:
    """The verifier written from docs/fairness.md alone (stdlib only, never reading bonusd's
    code) passes the untouched export and fails every tamper, as `verify-draw` does."""
    records, pools, _ = await settled_draw(small)
    names = write_corpus(tmp_path, records, pools)
    code, out = independent(tmp_path / "untouched")
    assert code == 0 and out.rstrip().endswith("OK"), out
    missed = {}
    for name in names[1:]:
        code, out = independent(tmp_path / name)
        if code != 1 or not out.rstrip().endswith("FAILED"):
            missed[name] = (code, out)
    assert not missed, missed
