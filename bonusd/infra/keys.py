"""Redis key layout. Every key of a site carries the site as its hash tag, `{site}`, so one
casino's atomic scripts run on one Redis Cluster shard while a group's casinos spread out.

    {prefix}:{site}:member:{card}          hash   member record (import)
    {prefix}:{site}:members                set    registered cards
    {prefix}:{site}:member-index           hash   card -> tier|app|excluded|dob|last_visit
    {prefix}:{site}:unregistered           set    cards seen in telemetry but never imported
    {prefix}:{site}:device:{device}        hash   device registry (kind, area, bank, position)
    {prefix}:{site}:session:{card}         hash   where the card is active now
    {prefix}:{site}:at:{device}            string the card active at the device
    {prefix}:{site}:active:{kind}:{area}   zset   active cards, score = since (ms)
    {prefix}:{site}:lastseen               zset   active cards, score = last event (ms)
    {prefix}:{site}:floor-place            hash   active card -> kind\tarea\tdevice\tseat\tbank
    {prefix}:{site}:floor-row              hash   active card -> its RAPS snapshot line for its
                                                  newest gaming day, then that day: card\tkind\t
                                                  area\tdevice\tseat\tbank\tlast_play_ms\t
                                                  spend_cents\ttier\texcluded\tday (apply.lua,
                                                  sweep.lua, member_rows.lua; `floor reindex`)
    {prefix}:{site}:floor-row-seq          string bumped by each script call that changed
                                                  floor-row (lua/rowlog.lua)
    {prefix}:{site}:floor-row-log          zset   card -> the floor-row-seq of its line's last
                                                  change, for the daemons' mirrors
    {prefix}:{site}:floor-row-low          string changes up to it may be gone from the log
    {prefix}:{site}:rules                  string the fingerprint of the promotion rules the
                                                  site runs (also a channel;
                                                  bonusd/promotions/rulesync.py)
    {prefix}:{site}:floor-ended-card       zset   card -> newest event of its ended session (ms)
    {prefix}:{site}:floor-ended-slot       zset   place -> the same, per EGM or table seat
                                                  (late events; pruned past the dedup window)
    {prefix}:{site}:day:{day}:{card}       hash   gaming-day totals of one member
    {prefix}:{site}:dayspend:{day}         hash   card -> the gaming day's spend (cents), for RAPS
    {prefix}:{site}:visits:{day}           set    members with a gaming visit that day
    {prefix}:{site}:seen:{hour}            set    applied event ids by event hour (dedup)
    {prefix}:{site}:deadletters            stream rejected messages
    {prefix}:{site}:stats                  hash   counters (applied, duplicates, ...)
    {prefix}:{site}:audit                  list   the hash-chained audit trail (JSON)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Keys:
    """Builds the keys of one site."""

    prefix: str
    site: str

    @property
    def base(self) -> str:
        """Every key starts with this; the Lua scripts derive their keys from it."""
        return f"{self.prefix}:{{{self.site}}}:"

    def member(self, card: str) -> str:
        return f"{self.base}member:{card}"

    @property
    def members(self) -> str:
        return f"{self.base}members"

    @property
    def member_index(self) -> str:
        """Hash card -> the fields the rules read (`Member.to_index`), for bulk reads."""
        return f"{self.base}member-index"

    @property
    def unregistered(self) -> str:
        return f"{self.base}unregistered"

    def device(self, device: str) -> str:
        return f"{self.base}device:{device}"

    @property
    def devices(self) -> str:
        return f"{self.base}devices"

    def session(self, card: str) -> str:
        return f"{self.base}session:{card}"

    def at(self, device: str) -> str:
        return f"{self.base}at:{device}"

    def active(self, kind: str, area: str) -> str:
        return f"{self.base}active:{kind}:{area}"

    @property
    def active_index(self) -> str:
        """Set of the `active:{kind}:{area}` keys in use, so queries need no SCAN."""
        return f"{self.base}active-index"

    @property
    def floor_row(self) -> str:
        """Hash active card -> its pre-joined RAPS floor line (`FloorSnapshot.of_rows`)."""
        return f"{self.base}floor-row"

    @property
    def floor_place(self) -> str:
        return f"{self.base}floor-place"

    def dayspend(self, day: str) -> str:
        """Hash card -> the gaming day's spend (cents)."""
        return f"{self.base}dayspend:{day}"

    @property
    def lastseen(self) -> str:
        return f"{self.base}lastseen"

    def day(self, day: str, card: str) -> str:
        return f"{self.base}day:{day}:{card}"

    def visits(self, day: str) -> str:
        return f"{self.base}visits:{day}"

    @property
    def deadletters(self) -> str:
        return f"{self.base}deadletters"

    @property
    def active_multipliers(self) -> str:
        """Set of `promotion:multiplier` windows open now (maintained by the scheduler)."""
        return f"{self.base}multipliers-active"

    @property
    def stats(self) -> str:
        return f"{self.base}stats"
