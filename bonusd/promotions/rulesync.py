"""The promotion rules a site's daemons run, kept the same on all of them.

Every daemon reads the promotion files on its own disk. When the rules change
(`POST /promotions/reload` on any daemon) the others must run the new rules too, or the
same play would earn different points depending on which daemon took the message. So:

- the daemon that reloads records each change in the audit trail, then stores the new
  rules' fingerprint (SHA-256 of their canonical form) in `{base}rules` and publishes it
  on `{base}rules`;
- a daemon that starts makes its rules the site's in the same way (restarting with new
  files is how a single daemon changes its rules);
- every daemon, whenever a fingerprint is published or the channel is joined again after
  Redis was away, compares the site's fingerprint with its own; if they differ it reads
  its files again and, if they now give the site's rules, runs them (a rule change reaches
  every daemon without being recorded twice); if they do not, it keeps its rules and logs
  an ERROR naming both fingerprints: its files are not the ones the site runs.

So deploy new files on every daemon first, then reload (or restart) one: the others
follow, and a daemon whose files were missed says so.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from redis.asyncio import Redis

from bonusd.infra.channel import listen
from bonusd.infra.keys import Keys
from bonusd.promotions import Promotion, PromotionFileError, load_promotions

logger = logging.getLogger(__name__)


def fingerprint(promotions: Sequence[Promotion]) -> str:
    """SHA-256 of the rules' canonical form (each promotion as JSON, in id order)."""
    text = "\n".join(p.model_dump_json() for p in sorted(promotions, key=lambda p: p.id))
    return hashlib.sha256(text.encode()).hexdigest()


def site_promotions(folder: Path, site: str) -> tuple[Promotion, ...]:
    """The promotions of `site` in `folder`. A broken file raises `PromotionFileError`
    naming it: running without it would silently miss its points."""
    if not folder.is_dir():
        logger.warning("no promotions folder %s; running the floor without promotions", folder)
        return ()
    mine = tuple(p for p in load_promotions(folder) if p.site == site)
    logger.info(
        "promotions of site %s: %s", site, ", ".join(p.id for p in mine) or "none in " + str(folder)
    )
    return mine


class RuleSync:
    """Keeps this daemon's rules those of the site (see the module docstring)."""

    def __init__(
        self,
        *,
        redis: Redis,
        keys: Keys,
        folder: Path,
        site: str,
        current: Callable[[], Sequence[Promotion]],
        apply: Callable[[tuple[Promotion, ...]], None],
    ) -> None:
        self.redis, self.key = redis, keys.rules
        self._folder, self._site = folder, site
        self._current, self._apply = current, apply
        self._reported = ""  # the mismatch last logged, so it is logged once
        self._started = False

    async def publish(self) -> None:
        """Make this daemon's rules the site's, and tell the other daemons."""
        mine = fingerprint(self._current())
        await self.redis.set(self.key, mine)
        await self.redis.publish(self.key, mine)

    async def run(self, stop: asyncio.Event) -> None:
        """At start, make this daemon's rules the site's (a restart with new files is how
        a single daemon changes its rules); then follow the site's rules until `stop`."""

        async def check(published: str | None) -> None:
            if not self._started:
                await self.publish()
                self._started = True
                return
            site = published or cast(str | None, await self.redis.get(self.key))
            if site is None:  # Redis lost it: this daemon's rules are the site's again
                await self.publish()
            else:
                self.follow(site)

        await listen(self.redis, self.key, stop, check, what="rules")

    def follow(self, site: str) -> None:
        """Run the rules with fingerprint `site` if this daemon's files give them."""
        mine = fingerprint(self._current())
        if mine == site:
            self._reported = ""
            return
        try:
            files = site_promotions(self._folder, self._site)
        except PromotionFileError as exc:  # a broken file: keep the running rules, say why
            self._report(site, mine, f"its promotion files do not load ({exc})")
            return
        if fingerprint(files) != site:
            self._report(site, mine, f"its promotion files give {fingerprint(files)[:12]}")
            return
        self._apply(files)
        self._reported = ""
        logger.warning("promotion rules reloaded to match the site's (%s)", site[:12])

    def _report(self, site: str, mine: str, why: str) -> None:
        if self._reported != site + mine:
            self._reported = site + mine
            logger.error(
                "this daemon runs promotion rules %s but the site runs %s and %s: deploy the "
                "same promotion files on every daemon of the site, then POST /promotions/reload",
                mine[:12],
                site[:12],
                why,
            )
