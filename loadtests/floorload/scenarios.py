"""Named load-test scenarios: a floor, a promotion, an instant, and who uses the daemon.

`saturday-20h` is "Saturday 20h00 at a 10,000-EGM floor": the floor of
`loadtests/floors/mega-10k.toml` on Saturday 25 October 2025 at 20:00, a Festa Fortuna
Saturday draw night (play window 20:00-23:00, entries activated at the kiosks until the
bin closes at 23:00). The MQTT load is the simulator's own stream of that instant, every
game: 10,000 EGMs x 0.8 carded in (peak 0.8 x 1.0 at 20h x 1.0 on a Saturday) x 600
games an hour x the tier pace of who is on the floor (~1.02) ~ 1,360 games/s, plus card
and rating events; the runner counts and reports what the stream really holds.

`smoke` is the same machinery on the simulator's small `ci` floor for a few seconds: the
test suite runs it so the load test cannot silently rot.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    floor: str  # a named floor of the simulator, or a floor file
    promotion: Path
    start: str  # local time of the floor: the stream starts here (the floor fills)
    warmup_s: int  # the first part: its card events set the floor, before locust
    egm_users: int  # MQTT users, each playing a slice of the EGMs (a bank gateway)
    table_users: int  # MQTT users, each rating a slice of the tables (a pit)
    signage: dict[str, int]  # screens per area (websocket /ws/signage)
    crew: int  # handhelds (websocket /ws/crew)
    desk: int  # promotions-desk PCs (HTTP)
    kiosks: int  # eHost kiosks activating entries (HTTP)
    desk_wait: tuple[float, float]
    kiosk_wait: tuple[float, float]
    screen_hold: tuple[float, float]  # seconds a screen stays connected before resuming
    run_time: str  # the whole locust run
    settle_s: int  # its start-up (every user connecting), reported apart from the rest
    baseline_s: int  # the bare MQTT baseline phase; 0: none
    processes: int  # locust worker processes; 0: locust in one process
    seed: int = 42

    @property
    def users(self) -> int:
        return (
            self.egm_users
            + self.table_users
            + sum(self.signage.values())
            + self.crew
            + self.desk
            + self.kiosks
            + 1  # the ingest probe
        )


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            name="saturday-20h",
            title="Saturday 20h00 at a 10,000-EGM floor",
            floor=str(ROOT / "loadtests" / "floors" / "mega-10k.toml"),
            promotion=ROOT / "promotions" / "montecasino-festa-fortuna.toml",
            start="2025-10-25T20:00:00",
            warmup_s=120,
            egm_users=100,
            table_users=20,
            signage={"main": 130, "smoking": 50, "prive": 20},
            crew=30,
            desk=4,
            kiosks=50,
            desk_wait=(5.0, 15.0),
            kiosk_wait=(20.0, 60.0),
            screen_hold=(60.0, 180.0),
            run_time="3m",
            settle_s=30,
            baseline_s=60,
            processes=2,
        ),
        Scenario(
            name="smoke",
            title="Smoke: the ci floor for a few seconds",
            floor="ci",
            promotion=ROOT / "promotions" / "montecasino-festa-fortuna.toml",
            start="2025-10-25T20:00:00",
            warmup_s=120,
            egm_users=2,
            table_users=1,
            signage={"main": 2, "smoking": 1},
            crew=1,
            desk=1,
            kiosks=1,
            desk_wait=(0.5, 1.5),
            kiosk_wait=(0.5, 1.5),
            screen_hold=(3.0, 5.0),
            run_time="12s",
            settle_s=0,
            baseline_s=0,
            processes=0,
        ),
    )
}
# Montecasino's own floor (1,700 EGMs, 80,000 members): the size a traced soak keeps up with
SCENARIOS["montecasino"] = replace(
    SCENARIOS["saturday-20h"],
    name="montecasino",
    title="Montecasino's own floor (1,700 EGMs, 80,000 members): a traced soak's size",
    floor="montecasino",
    egm_users=20,
    table_users=4,
    signage={"main": 20, "smoking": 8, "prive": 4},
    crew=6,
    kiosks=10,
    processes=1,
)
