"""The locustfile of the floor load tests. Run it through the runner, which prepares the
site, the daemon and the config this file reads (`BONUSD_LOADTEST_CONFIG`):

    python loadtests/run_scenario.py saturday-20h --run-time 3m      # = make load

The users live in `floorload/`: MQTT (EGM bank gateways, table pits, the ingest probe),
websockets (signage screens, crew handhelds) and HTTP (the promotions desk, kiosks).
"""

from floorload import phases  # noqa: F401  (the start-up / steady split)
from floorload.http_users import Kiosk, PromotionsDesk
from floorload.mqtt_users import EgmBank, IngestProbe, TablePit
from floorload.push_users import CrewHandheld, SignageScreen

__all__ = [
    "CrewHandheld",
    "EgmBank",
    "IngestProbe",
    "Kiosk",
    "PromotionsDesk",
    "SignageScreen",
    "TablePit",
]
