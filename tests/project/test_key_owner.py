"""One owner per Redis key: every key name is spelled in bonusd/infra/keys.py and nowhere
else in the daemon (the Lua scripts get the site's base and derive theirs, as its
docstring lists). A module that builds a key itself fails here."""

from __future__ import annotations

import re

from bonusd.infra.keys import FAMILIES, Keys, family
from tests.daemon_helpers import PROJECT

OWNER = PROJECT / "bonusd" / "infra" / "keys.py"
# a key built by hand: the base concatenated or formatted, or a family's name as the
# start of a string literal ("pwf:...", f"seed:...")
BUILT = re.compile(r"keys\.base\s*\+|keys\.base\}|\+\s*keys\.base\b")
NAMES = "|".join(re.escape(f) for f in FAMILIES)
SPELLED = re.compile(rf"""(?<!\w)[fr]?["'](?:{NAMES}):""")


def test_no_module_but_the_key_layout_spells_a_key() -> None:
    found = []
    for module in sorted((PROJECT / "bonusd").rglob("*.py")):
        if module == OWNER:
            continue
        for n, line in enumerate(module.read_text(encoding="utf-8").splitlines(), 1):
            if BUILT.search(line) or SPELLED.search(line):
                found.append(f"{module.relative_to(PROJECT)}:{n}: {line.strip()}")
    assert not found, "keys built outside bonusd/infra/keys.py:\n" + "\n".join(found)


def test_every_key_the_layout_makes_has_a_known_family() -> None:
    keys = Keys("bonusd", "gh")
    made = [
        keys.member("1"), keys.day("2026-10-03", "1"), keys.visits("2026-10-03"),
        keys.dayspend("2026-10-03"), keys.audit, keys.notify, keys.ledger("gh.final"),
        keys.token("abc"), keys.tokens, keys.rate("auth", "1.2.3.4", 7), keys.rules,
        keys.window_field("p", "d", "slots_points"), keys.played("p", "d"),
        keys.board("p", "d", "slots"), keys.board_published("p", "d", "slots"),
        keys.board_history("p", "d", "slots"), keys.activations("p", "d"), keys.pool("p", "d"),
        keys.seats("p", "d"), keys.schedule_seed("p"), keys.seed("p.d", "main", "1"),
        keys.poolfile("c0ffee"), keys.raps_floor("p.s#1"), keys.letters, keys.deadlines,
        keys.fired("2026-10-03T17:00:00+02:00:close_bin:p:d"), keys.leader, keys.leader_token,
        keys.leader_fired_by, keys.sms("outbox"), keys.stats, keys.floor_row,
        keys.token_usage, keys.staff("1042"), keys.staff_numbers, keys.staff_sessions("1042"),
    ]  # fmt: skip
    for key in made:
        assert key.startswith("bonusd:{gh}:"), key
        assert family(key.removeprefix(keys.base)) != "other", key
