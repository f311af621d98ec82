"""A receipt's printed form: its text lines (`bonusd.kiosk.receipttext`) and QR as ESC/POS
bytes through python-escpos, sent to the kiosk's printer target (`BONUSD_RECEIPT_PRINTERS`:
`file:PATH`, `tcp:HOST:PORT` for a network printer, `device:PATH` for a USB or parallel
printer's device file), and the QR as an SVG data URI for the browser's print page.

The blocking printer I/O runs in a worker thread under a timeout; every failure is a
`PrinterError` naming the printer and what a floor attendant can check.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import logging
import os
import re
import socket
from dataclasses import dataclass
from typing import Any, Literal

import qrcode  # type: ignore[import-untyped]
import qrcode.image.svg  # type: ignore[import-untyped]

from bonusd.errors import PrinterError


def _keeping_log_handlers() -> Any:
    """python-escpos calls `logging.basicConfig()` when imported (escpos/capabilities.py),
    which would put its own handler on the root logger and decide every command's log
    format: import it with the root logger's handlers put back as they were."""
    root = logging.getLogger()
    kept = list(root.handlers)
    import escpos.constants  # type: ignore[import-untyped]  # noqa: PLC0415
    import escpos.exceptions  # type: ignore[import-untyped]  # noqa: PLC0415
    import escpos.printer  # type: ignore[import-untyped]  # noqa: PLC0415

    root.handlers[:] = kept
    return escpos


_escpos = _keeping_log_handlers()
QR_ECLEVEL_M = _escpos.constants.QR_ECLEVEL_M
DeviceNotFoundError = _escpos.exceptions.DeviceNotFoundError
Dummy, File, Network = _escpos.printer.Dummy, _escpos.printer.File, _escpos.printer.Network

logger = logging.getLogger(__name__)

SETTING = "BONUSD_RECEIPT_PRINTERS"
TIMEOUT_S = 5.0
QR_DOT_SIZE = 6  # module size in printer dots: about 2.5 cm for a 200-character payload
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


@dataclass(frozen=True, slots=True)
class Target:
    """Where a kiosk's receipts print: a file (the last receipt, for a demo), a network
    printer (raw TCP, usually port 9100) or a device file (/dev/usb/lp0)."""

    kind: Literal["file", "tcp", "device"]
    path: str = ""
    host: str = ""
    port: int = 0

    def __str__(self) -> str:
        if self.kind == "tcp":
            return f"printer {self.host}:{self.port}"
        if self.kind == "device":
            return f"printer {self.path}"
        return f"receipt file {self.path}"


def parse_target(text: str) -> Target:
    """The target of `file:PATH`, `tcp:HOST:PORT` or `device:PATH`; `PrinterError` saying
    what is wrong otherwise."""
    kind, _, rest = text.strip().partition(":")
    shapes = "file:PATH, tcp:HOST:PORT or device:PATH"
    if kind in ("file", "device"):
        if not rest or rest != rest.strip() or "\x00" in rest:
            raise PrinterError(f"{SETTING}: printer target {text!r} names no path ({shapes})")
        if kind == "device" and not rest.startswith("/"):
            raise PrinterError(
                f"{SETTING}: printer target {text!r}: a device is an absolute path, "
                "such as device:/dev/usb/lp0"
            )
        return Target("file" if kind == "file" else "device", path=rest)
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        if not _HOST.fullmatch(host):
            raise PrinterError(
                f"{SETTING}: printer target {text!r}: expected tcp:HOST:PORT with a host name "
                "or IPv4 address, such as tcp:10.0.0.5:9100"
            )
        if not port.isascii() or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise PrinterError(
                f"{SETTING}: printer target {text!r}: the port must be a number from 1 to "
                "65535 (network receipt printers usually listen on 9100)"
            )
        return Target("tcp", host=host, port=int(port))
    raise PrinterError(f"{SETTING}: printer target {text!r} is not {shapes}")


def _compose(printer: Any, lines: list[str], qr: str) -> None:
    """The receipt's commands: reset, the lines, the QR (rendered by the printer itself,
    so its payload travels in the bytes), feed and cut."""
    printer.hw("INIT")
    for line in lines:
        printer.textln(line)
    if qr:
        printer.qr(qr, ec=QR_ECLEVEL_M, size=QR_DOT_SIZE, native=True)
        printer.textln("")
    printer.cut()


def escpos_bytes(lines: list[str], qr: str) -> bytes:
    """The ESC/POS bytes of a receipt: `lines` (code pages chosen by python-escpos for
    characters such as • and –), then the native QR of `qr`, then a cut."""
    dummy = Dummy()
    _compose(dummy, lines, qr)
    return bytes(dummy.output)


def _open(target: Target, timeout_s: float) -> Any:
    """The escpos printer of `target`, connected. A network printer's socket is opened
    here (escpos's own `open` drops the socket unclosed when the connection fails)."""
    if target.kind == "device" and not os.path.exists(target.path):  # never create it
        raise FileNotFoundError(errno.ENOENT, "no such device")
    if target.kind != "tcp":
        printer = File(target.path)
        printer.open()
        return printer
    connection = socket.create_connection((target.host, target.port), timeout=timeout_s)
    printer = Network(target.host, port=target.port, timeout=timeout_s)
    printer.device = connection
    return printer


def _send(target: Target, lines: list[str], qr: str, timeout_s: float) -> None:
    try:
        printer = _open(target, timeout_s)
    except DeviceNotFoundError as exc:
        cause = exc.__context__ if isinstance(exc.__context__, OSError) else None
        raise PrinterError(_problem(target, cause, timeout_s)) from None
    except OSError as exc:
        raise PrinterError(_problem(target, exc, timeout_s)) from None
    try:
        _compose(printer, lines, qr)
    except OSError as exc:
        raise PrinterError(_problem(target, exc, timeout_s)) from None
    finally:
        try:
            printer.close()
        except OSError:
            logger.debug("closing %s failed", target, exc_info=True)


def _problem(target: Target, cause: OSError | None, timeout_s: float) -> str:
    """What went wrong, in words a floor attendant can act on."""
    reason = (cause.strerror or str(cause)) if cause is not None else "unknown error"
    if target.kind == "tcp":
        if isinstance(cause, TimeoutError):
            return (
                f"{target} did not answer in {timeout_s:g} s: check it is switched on, "
                "connected to the network and has paper; the receipt was not printed"
            )
        if isinstance(cause, ConnectionRefusedError):
            return (
                f"{target} refused the connection: check it is switched on and that "
                f"{target.port} is its port; the receipt was not printed"
            )
        return f"{target} could not be reached ({reason}); the receipt was not printed"
    if target.kind == "device":
        if cause is not None and cause.errno in (errno.ENOENT, errno.ENODEV, errno.ENXIO):
            return (
                f"{target} is not there ({reason}): check it is plugged in and switched on; "
                "the receipt was not printed"
            )
        return (
            f"{target} cannot be written ({reason}): check it is plugged in, switched on and "
            "has paper, and that the daemon's user may write to it; the receipt was not printed"
        )
    return (
        f"{target} cannot be written ({reason}): check the folder exists and the daemon's "
        "user may write there; the receipt was not printed"
    )


async def print_receipt(
    target: Target, lines: list[str], qr: str, *, timeout_s: float = TIMEOUT_S
) -> None:
    """Print a receipt on `target` (blocking escpos I/O in a worker thread). `PrinterError`
    when the printer cannot be reached or written, or does not finish within `timeout_s`."""
    try:
        async with asyncio.timeout(timeout_s):
            await asyncio.to_thread(_send, target, lines, qr, timeout_s)
    except TimeoutError:
        raise PrinterError(
            f"{target} did not answer in {timeout_s:g} s: check it is switched on, connected "
            "and has paper; the receipt was not printed"
        ) from None
    logger.debug("printed a receipt on %s", target)


def qr_svg_data_uri(payload: str) -> str:
    """`data:image/svg+xml;base64,…`: the QR of `payload` as an SVG for the browser print."""
    image = qrcode.make(
        payload,
        image_factory=qrcode.image.svg.SvgPathImage,
        error_correction=qrcode.constants.ERROR_CORRECT_M,
    )
    svg: bytes = image.to_string(encoding="utf-8")
    return "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")
