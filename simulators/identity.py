"""How a simulated device names its events: telemetry contract v2 (the default) or v1.

v2: each device numbers its events `seq` 1, 2, 3, … within an `epoch` it picks at every
boot: the run id for the boot the run starts in, `{run_id}.{n}` after the n-th outage (an
EGM that was offline boots again). v1: a unique `id`, `{run_id}-{device}-{n}` with a
per-device counter that never restarts. Either way a replay of a run sends the same
identities, so the daemon never applies it twice, and a different run id sends new ones.
"""

from __future__ import annotations

from typing import Literal

from simulators.events import Payload

Contract = Literal["v1", "v2"]
CONTRACTS: tuple[Contract, ...] = ("v1", "v2")
MAX_EPOCH = 64  # characters (docs/telemetry.md)


def contract_of(text: str) -> Contract:
    """`v1` or `v2` (ValueError otherwise)."""
    for contract in CONTRACTS:
        if text == contract:
            return contract
    raise ValueError(f"the telemetry contract is v1 or v2, got {text!r}")


class Identities:
    """The next identity of each device's events, in the order they are sent."""

    __slots__ = ("_boot_at", "_boots", "_count", "contract", "run_id")

    def __init__(self, devices: int, contract: Contract = "v2") -> None:
        contract_of(contract)
        self.contract = contract
        self.run_id = ""
        self._count = [0] * devices  # events sent, over all boots
        self._boots = [0] * devices
        self._boot_at = [0] * devices  # the count when the current boot began

    def start(self, run_id: str) -> None:
        if self.contract == "v2" and not 1 <= len(run_id) <= MAX_EPOCH - 8:
            raise ValueError(
                f"run id {run_id!r}: a v2 epoch is at most {MAX_EPOCH} characters, so the "
                f"run id (its stem) is 1 to {MAX_EPOCH - 8}"
            )
        self.run_id = run_id

    def reboot(self, device: int) -> None:
        """The device boots again: a new epoch, numbered from 1."""
        self._boots[device] += 1
        self._boot_at[device] = self._count[device]

    def next(self, device: int, name: str) -> Payload:
        """The identity fields of the device's next event."""
        count = self._count[device] + 1
        self._count[device] = count
        if self.contract == "v1":
            return {"id": f"{self.run_id}-{name}-{count}"}
        boots = self._boots[device]
        epoch = f"{self.run_id}.{boots}" if boots else self.run_id
        return {"epoch": epoch, "seq": count - self._boot_at[device]}
