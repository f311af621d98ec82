"""bonusd: real-time casino floor bonusing.

The public surface is small: the settings, the service that runs the daemon, the clocks
and the error hierarchy. Everything else is internal and may change.
"""

from bonusd.clock import Clock, ManualClock, SharedClock, SimulatedClock, WallClock
from bonusd.errors import BonusdError, ConfigError, ImportFileError, NotFoundError
from bonusd.service import Service
from bonusd.settings import Settings, load_settings

__all__ = [
    "BonusdError",
    "Clock",
    "ConfigError",
    "ImportFileError",
    "ManualClock",
    "NotFoundError",
    "Service",
    "Settings",
    "SharedClock",
    "SimulatedClock",
    "WallClock",
    "load_settings",
]
