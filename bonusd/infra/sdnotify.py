"""systemd's notification protocol (sd_notify(3)), for a `Type=notify` unit with a
`WatchdogSec=` (`bonusd@.service` in deploy/systemd/): one datagram per message to the socket
systemd names in `NOTIFY_SOCKET` (read into the settings as `notify_socket`).

Without a socket (not started by systemd: a terminal, the tests) every call does nothing.
A lost datagram is never an error: systemd acts on the next one or on its timeouts.
"""

from __future__ import annotations

import logging
import socket

logger = logging.getLogger(__name__)


class SystemdNotifier:
    """Sends `READY=1`, `STATUS=…`, `WATCHDOG=1`, `STOPPING=1`, … to systemd."""

    def __init__(self, address: str) -> None:
        # "@name" is an abstract socket: its address starts with a NUL byte
        self._address = "\0" + address[1:] if address.startswith("@") else address

    @property
    def enabled(self) -> bool:
        return bool(self._address)

    def notify(self, *assignments: str) -> None:
        """Send `assignments` (`"READY=1"`, `"STATUS=waiting for Redis"`) as one message."""
        if not self._address:
            return
        message = "\n".join(a.replace("\n", " ") for a in assignments).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.sendto(message, self._address)
        except OSError as exc:
            logger.debug("systemd notification %r not sent (%s)", assignments, exc)
