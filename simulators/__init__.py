"""Casino floor simulator: drives bonusd with realistic telemetry (contract v1) over MQTT.

    from simulators import build_floor, generate_events, load_floor, publish_events

    spec = load_floor("montecasino")                  # simulators/floors/*.toml
    floor = build_floor(spec.config, seed=42, as_of=day)
    export_registry(floor, Path("registry"))          # devices.csv, members.csv
    events = generate_events(floor, seed=42, start=start, duration=timedelta(hours=2),
                             granularity="play", promotion=load_promotion(path))
    publish_events(events, mqtt_url="mqtt://127.0.0.1:1883", speed=60, start=start)

`FloorConfig(egms=200, tables=10, members=2000)` is an unnamed floor with every other
knob at its default. Everything is deterministic from the seed; the command line is
`python -m simulators`; docs/simulator.md describes the model.
"""

from simulators.aggregate import Cuts, Interval, fold_games, fold_stream
from simulators.config import AreaPlan, FloorConfig
from simulators.events import Payload, SimEvent
from simulators.floor import Device, Floor, build_floor
from simulators.floorfile import FloorFileError, FloorSpec, floor_names, load_floor, parse_floor
from simulators.generator import Granularity, default_run_id, generate_events
from simulators.outages import Outage, plan_outages
from simulators.population import Member
from simulators.publish import MqttTarget, PublishError, parse_mqtt_url, publish_events
from simulators.registry import (
    DEVICE_COLUMNS,
    MEMBER_COLUMNS,
    export_registry,
    write_devices_csv,
    write_members_csv,
)
from simulators.timefmt import parse_duration
from simulators.wire import Encoder, dump_events, topic_for, write_jsonl

__all__ = [
    "DEVICE_COLUMNS",
    "MEMBER_COLUMNS",
    "AreaPlan",
    "Cuts",
    "Device",
    "Encoder",
    "Floor",
    "FloorConfig",
    "FloorFileError",
    "FloorSpec",
    "Granularity",
    "Interval",
    "Member",
    "MqttTarget",
    "Outage",
    "Payload",
    "PublishError",
    "SimEvent",
    "build_floor",
    "default_run_id",
    "dump_events",
    "export_registry",
    "floor_names",
    "fold_games",
    "fold_stream",
    "generate_events",
    "load_floor",
    "parse_duration",
    "parse_floor",
    "parse_mqtt_url",
    "plan_outages",
    "publish_events",
    "topic_for",
    "write_devices_csv",
    "write_jsonl",
    "write_members_csv",
]
