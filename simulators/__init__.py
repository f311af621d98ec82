"""Casino floor simulator: drives bonusd with realistic telemetry (contract v1) over MQTT.

    from simulators import FloorConfig, build_floor, generate_events, publish_events

    floor = build_floor(FloorConfig(egms=200, tables=10, members=2000), seed=42, as_of=day)
    export_registry(floor, Path("registry"))          # devices.csv, members.csv
    events = generate_events(floor, seed=42, start=start, duration=timedelta(hours=2))
    publish_events(events, mqtt_url="mqtt://127.0.0.1:1883", speed=60, start=start)

Everything is deterministic from the seed; the command line is `python -m simulators`.
"""

from simulators.floor import Device, Floor, FloorConfig, Member, build_floor
from simulators.generator import SimEvent, default_run_id, generate_events
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
    "Device",
    "Encoder",
    "Floor",
    "FloorConfig",
    "Member",
    "MqttTarget",
    "PublishError",
    "SimEvent",
    "build_floor",
    "default_run_id",
    "dump_events",
    "export_registry",
    "generate_events",
    "parse_duration",
    "parse_mqtt_url",
    "publish_events",
    "topic_for",
    "write_devices_csv",
    "write_jsonl",
    "write_members_csv",
]
