"""Redis key layout. Every key of a site carries the site as its hash tag, `{site}`, so one
casino's atomic scripts run on one Redis Cluster shard while a group's casinos spread out.
What each family grows with, and what bounds it: docs/architecture.md, "Redis layout".

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
    {prefix}:{site}:devseq                 hash   device -> its contract v2 sequence state
                                                  (epochs, high-water marks, window; dedup)
    {prefix}:{site}:deadletters            stream rejected messages
    {prefix}:{site}:stats                  hash   counters (applied, duplicates, ...)
    {prefix}:{site}:audit                  list   the hash-chained audit trail (JSON)

The families below belong to the packages named; their methods are on `Keys` too, so no
other module spells a key. The short wire names (`pwf`, `pwd`, `pm`, `lb`, kept for the
data already in Redis) are explained here, where they are defined:

    ledger:{subject}                       list   a draw's or RAPS session's records (audit)
    notify                                 channel published with every audit commit
    token:{id}, tokens                     hash, zset  bearer tokens; their index (access)
    rate:{bucket}:{subject}:{window}       string a rate-limit count (access)
    usage                                  hash   machine token id -> its last use, written at most
                                                  once a minute by the token check (access)
    staff:{number}, staff-numbers          hash, set  staff accounts; their index (access)
    staff-sessions:{number}                set    the session token ids of one staff member
    pairing:{id}, pairings                 hash, zset  a floor screen waiting to be paired; the
                                                  ids of those waiting, by expiry (access)
    pairing-code:{code}                    hash   the screen showing a live pairing code
    online:{token id}                      string a screen's socket is open (expires unless
                                                  renewed; bonusd.push.presence)
    pwf:{promotion}:{draw}:{field}         hash   Promotion Window Field: card -> a window
                                                  total (points, plays, reached, visits)
    pwd:{promotion}:{draw}:{card}:{side}   set    Promotion Window Days with play
    pm:{promotion}:{draw}                  set    Promotion Members with play in the window
    lb:{promotion}:{draw}:{side}           zset   the live LeaderBoard
    lbpub:…, lbhist:…                      string, list  the published board; its history
    act:{promotion}:{draw}                 hash   activations (card -> record)
    pool:…, seats:…                        string the frozen entry pool; its seated leaders
    schedule-seed:{promotion}              string the seed of random jackpot times
    multipliers-active                     set    multiplier windows open now
    seed:{subject}:{tombola}:{round}       string a round's seed (draws, raps)
    poolfile:{commitment}                  string an archived pool file
    rapsfloor:{jackpot}                    hash   file:{sha256} -> a floor file; attempt -> its name
    letters, deadlines                     hash, zset  prize letters; claim deadlines
    fired:{instant}:{action}:{ids}         string a timed action's once-marker (service)
    leader, leader:token, leader:fired-by  string, string, hash  the lease (infra)
    layout, layout:lock                    string  the data's layout version; a migration's lock
    sms:cursor, sms:outbox, sms:due, sms:gateway, sms:lease:{id}  the SMS outbox (notices)
"""

from __future__ import annotations

from dataclasses import dataclass

# key families (the part of a key after the site's base up to the first variable part),
# for reports and the retention census; anything else is "other"
FAMILIES = (
    "seen", "day", "dayspend", "visits", "deadletters", "audit", "ledger", "session", "at",
    "active", "active-index", "lastseen", "floor-place", "floor-lastplay", "floor-ended-card",
    "floor-ended-slot", "member", "members", "member-index", "unregistered", "device",
    "devices", "stats", "token", "tokens", "pwf", "pm", "act", "lb", "lbpub", "lbhist",
    "seats", "pool", "poolfile", "rapsfloor", "seed", "fired", "schedule-seed", "sms",
    "deadlines", "letters", "clock", "multipliers-active", "notify", "floor-row", "leader",
    "rate", "pwd", "floor-row-seq", "floor-row-log", "floor-row-low", "rules", "devseq",
    "usage", "staff", "staff-numbers", "staff-sessions", "pairing", "pairings", "pairing-code",
    "online", "layout", "kiosk-visit", "receipts", "lockout",
)  # fmt: skip


def family(relative: str) -> str:
    """The family of a key given without its site base: `day:2026-10-03:4000123` -> day."""
    head = relative.split(":", 1)[0]
    return head if head in FAMILIES else "other"


class Relative:
    """Key names without the site's base, as a batch's effects carry them (lua/apply.lua
    puts the base in front)."""

    @staticmethod
    def day(day: str, card: str) -> str:
        return f"day:{day}:{card}"

    @staticmethod
    def visits(day: str) -> str:
        return f"visits:{day}"

    @staticmethod
    def dayspend(day: str) -> str:
        return f"dayspend:{day}"

    @staticmethod
    def window_field(promotion: str, draw: str, name: str) -> str:
        return f"pwf:{promotion}:{draw}:{name}"

    @staticmethod
    def window_days(promotion: str, draw: str, card: str, side: str) -> str:
        return f"pwd:{promotion}:{draw}:{card}:{side}"

    @staticmethod
    def played(promotion: str, draw: str) -> str:
        return f"pm:{promotion}:{draw}"

    @staticmethod
    def board(promotion: str, draw: str, side: str) -> str:
        return f"lb:{promotion}:{draw}:{side}"


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
        return self.base + Relative.dayspend(day)

    @property
    def lastseen(self) -> str:
        return f"{self.base}lastseen"

    def day(self, day: str, card: str) -> str:
        return self.base + Relative.day(day, card)

    def visits(self, day: str) -> str:
        return self.base + Relative.visits(day)

    @property
    def deadletters(self) -> str:
        return f"{self.base}deadletters"

    @property
    def device_sequences(self) -> str:
        """Hash device -> its contract v2 sequence state (lua/seqstate.lua)."""
        return f"{self.base}devseq"

    @property
    def active_multipliers(self) -> str:
        """Set of `promotion:multiplier` windows open now (maintained by the scheduler)."""
        return f"{self.base}multipliers-active"

    @property
    def stats(self) -> str:
        return f"{self.base}stats"

    def absolute(self, relative: str) -> str:
        """The key of a name given without the site's base (`Relative`, an index's member)."""
        return self.base + relative

    @property
    def retired_floor_lastplay(self) -> str:
        """No longer written (`floor-row` holds the last play); deleted by a reindex."""
        return f"{self.base}floor-lastplay"

    def pattern(self, family: str) -> str:
        """A SCAN pattern for every key of a family with variable parts (`visits`, ...)."""
        return f"{self.base}{family}:*"

    # -- audit ------------------------------------------------------------------------

    @property
    def audit(self) -> str:
        return f"{self.base}audit"

    @property
    def notify(self) -> str:
        """The channel published in the same MULTI as every audit commit."""
        return f"{self.base}notify"

    def ledger(self, subject: str) -> str:
        return f"{self.base}ledger:{subject}"

    # -- access -----------------------------------------------------------------------

    def token(self, token_id: str) -> str:
        return f"{self.base}token:{token_id}"

    @property
    def tokens(self) -> str:
        return f"{self.base}tokens"

    def rate(self, bucket: str, subject: str, window: int) -> str:
        return f"{self.base}rate:{bucket}:{subject}:{window}"

    @property
    def token_usage(self) -> str:
        """Hash machine token id -> the ISO time of its last use (access accounting)."""
        return f"{self.base}usage"

    def staff(self, number: str) -> str:
        """Hash of one staff account (`bonusd.access.staff`)."""
        return f"{self.base}staff:{number}"

    @property
    def staff_numbers(self) -> str:
        return f"{self.base}staff-numbers"

    def staff_sessions(self, number: str) -> str:
        """Set of the session token ids of one staff member (`bonusd.access.sessions`)."""
        return f"{self.base}staff-sessions:{number}"

    def pairing(self, pairing_id: str) -> str:
        """Hash of a floor screen waiting to be paired (`bonusd.access.pairing`)."""
        return f"{self.base}pairing:{pairing_id}"

    @property
    def pairings(self) -> str:
        """Zset pairing id -> when its code expires (ms): the screens waiting now."""
        return f"{self.base}pairings"

    def pairing_code(self, code: str) -> str:
        """Hash of a live pairing code: which pairing shows it, until when."""
        return f"{self.base}pairing-code:{code}"

    def online(self, token_id: str) -> str:
        """A screen token's socket is open somewhere (`bonusd.push.presence`)."""
        return f"{self.base}online:{token_id}"

    # -- promotions -------------------------------------------------------------------

    @property
    def rules(self) -> str:
        return f"{self.base}rules"

    def window_field(self, promotion: str, draw: str, name: str) -> str:
        return self.base + Relative.window_field(promotion, draw, name)

    def played(self, promotion: str, draw: str) -> str:
        return self.base + Relative.played(promotion, draw)

    def board(self, promotion: str, draw: str, side: str) -> str:
        return self.base + Relative.board(promotion, draw, side)

    def board_published(self, promotion: str, draw: str, side: str) -> str:
        return f"{self.base}lbpub:{promotion}:{draw}:{side}"

    def board_history(self, promotion: str, draw: str, side: str) -> str:
        return f"{self.base}lbhist:{promotion}:{draw}:{side}"

    def activations(self, promotion: str, draw: str) -> str:
        return f"{self.base}act:{promotion}:{draw}"

    def pool(self, promotion: str, draw: str) -> str:
        return f"{self.base}pool:{promotion}:{draw}"

    def seats(self, promotion: str, draw: str) -> str:
        return f"{self.base}seats:{promotion}:{draw}"

    def schedule_seed(self, promotion: str) -> str:
        return f"{self.base}schedule-seed:{promotion}"

    # -- draws and RAPS ---------------------------------------------------------------

    def seed(self, subject: str, *parts: str) -> str:
        """A round's seed: `seed:{draw subject}:{tombola}:{round}` or, for a RAPS session,
        `seed:{session subject}:raps:{number}`."""
        return f"{self.base}seed:{':'.join((subject, *parts))}"

    def seed_pattern(self) -> str:
        """A SCAN pattern matching every seed key of the site."""
        return f"{self.base}seed:*"

    def poolfile(self, commitment: str) -> str:
        return f"{self.base}poolfile:{commitment}"

    def raps_floor(self, jackpot_id: str) -> str:
        return f"{self.base}rapsfloor:{jackpot_id}"

    @property
    def letters(self) -> str:
        return f"{self.base}letters"

    @property
    def deadlines(self) -> str:
        return f"{self.base}deadlines"

    # -- the daemon's own work ---------------------------------------------------------

    def fired(self, marker: str) -> str:
        """A timed action's once-marker: `fired:{instant}:{action}:{ids}`."""
        return f"{self.base}fired:{marker}"

    @property
    def leader(self) -> str:
        return f"{self.base}leader"

    @property
    def leader_token(self) -> str:
        return f"{self.base}leader:token"

    @property
    def leader_fired_by(self) -> str:
        return f"{self.base}leader:fired-by"

    def layout(self, part: str = "") -> str:
        """The layout version of the site's data; `layout("lock")` (`bonusd.infra.layout`)."""
        return f"{self.base}layout" + (f":{part}" if part else "")

    def sms(self, part: str) -> str:
        """The SMS outbox's keys: `cursor`, `outbox`, `due`, `gateway`, `lease:{id}`."""
        return f"{self.base}sms:{part}"

    # -- the player's side: kiosk visits, receipts, PIN lockouts ------------------------

    def kiosk_visit(self, visit: str) -> str:
        """Hash of one card's visit at a kiosk (`bonusd.kiosk.store`), expiring on its own."""
        return f"{self.base}kiosk-visit:{visit}"

    def receipts(self, part: str) -> str:
        """The printed receipts' keys: `next` (the last number given), `all` (hash number ->
        receipt), `index` (hash `promotion|draw|card` -> number), `prints:{number}`."""
        return f"{self.base}receipts:{part}"

    def lockout(self, scope: str, subject: str) -> str:
        """Wrong-PIN count of one card (`scope` kiosk-pin) or staff number, with its expiry."""
        return f"{self.base}lockout:{scope}:{subject}"
