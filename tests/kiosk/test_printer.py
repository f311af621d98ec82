"""Receipt printing (`bonusd.kiosk.printer`): the ESC/POS bytes written to a file or sent
to a network printer read back (through a small ESC/POS reader below) as the receipt's
lines and QR payload; bad targets and dead printers give a `PrinterError` an attendant can
act on, within the timeout."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from escpos.capabilities import get_profile  # type: ignore[import-untyped]
from escpos.codepages import CodePages  # type: ignore[import-untyped]

from bonusd.errors import PrinterError
from bonusd.kiosk.printer import (
    Target,
    escpos_bytes,
    parse_target,
    print_receipt,
    qr_svg_data_uri,
)
from bonusd.kiosk.receipt import qr_payload, short_code
from bonusd.kiosk.receipttext import receipt_lines
from tests.kiosk.receipt_helpers import KEY, make_receipt

ESC, GS, LF = 0x1B, 0x1D, 0x0A
CODE_PAGES = {
    int(number): CodePages.get_encoding_name(name)
    for number, name in get_profile("default").codePages.items()
    if name != "Unknown"
}
RECEIPT = make_receipt(tombola_tickets=(("Red", ((1001, 1010),)),), masked_name="Z. Ž****")
LINES = receipt_lines(RECEIPT, 1, short_code(KEY, RECEIPT, 1))
QR = qr_payload(KEY, RECEIPT, 1)


def read_escpos(data: bytes) -> tuple[list[str], list[str], bool]:
    """(text lines, QR payloads, cut at the end) of ESC/POS bytes: ESC and GS sequences
    stripped, text decoded in the code page the last ESC t chose."""
    lines: list[str] = []
    current, qrs, codec, at, cut = "", [], "cp437", 0, False
    while at < len(data):
        byte = data[at]
        cut = False
        if byte == ESC:
            command = data[at + 1]
            if command == ord("@"):
                at += 2
                continue
            if command == ord("t"):
                codec = CODE_PAGES[data[at + 2]]
            at += 3  # ESC t n, ESC d n, ESC a n, ESC E n, ...
        elif byte == GS and data[at + 1] == ord("("):
            size = data[at + 3] + 256 * data[at + 4]
            body = data[at + 5 : at + 5 + size]
            if body[:3] == b"1P0":
                qrs.append(body[3:].decode("utf-8"))
            at += 5 + size
        elif byte == GS and data[at + 1] == ord("V"):
            at += 3 if data[at + 2] in (0, 1, 48, 49) else 4
            cut = True
        elif byte == GS:
            at += 3
        elif byte == LF:
            lines.append(current)
            current, at = "", at + 1
        else:
            current += bytes([byte]).decode(codec)
            at += 1
    assert current == "", "text after the last line feed"
    return lines, qrs, cut


def test_escpos_bytes_read_back_as_the_lines_and_the_qr() -> None:
    lines, qrs, cut = read_escpos(escpos_bytes(LINES, QR))
    assert lines[: len(LINES)] == LINES and all(not line for line in lines[len(LINES) :])
    assert qrs == [QR] and cut
    assert any("••••3456" in line for line in lines) and any("1001–1010" in line for line in lines)


async def test_a_file_target_holds_the_receipt(tmp_path: Path) -> None:
    path = tmp_path / "receipt.bin"
    await print_receipt(parse_target(f"file:{path}"), LINES, QR)
    data = path.read_bytes()
    assert data == escpos_bytes(LINES, QR)
    lines, qrs, cut = read_escpos(data)
    assert lines[: len(LINES)] == LINES and qrs == [QR] and cut


async def test_a_network_printer_receives_the_same_bytes() -> None:
    received: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    async def printer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.set_result(await reader.read())
        writer.close()

    server = await asyncio.start_server(printer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        await print_receipt(parse_target(f"tcp:127.0.0.1:{port}"), LINES, QR)
        data = await asyncio.wait_for(received, 5)
    assert data == escpos_bytes(LINES, QR)


@pytest.fixture
def full_listener() -> Iterator[int]:
    """A port whose accept queue is full: a connection attempt hangs, as to a printer that
    is switched off behind a switch that drops packets."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    held = socket.create_connection(("127.0.0.1", port))
    try:
        yield port
    finally:
        held.close()
        listener.close()


async def test_a_printer_that_does_not_answer_fails_within_the_timeout(full_listener: int) -> None:
    started = time.monotonic()
    with pytest.raises(PrinterError, match=rf"127.0.0.1:{full_listener} did not answer in 0.5 s"):
        await print_receipt(
            parse_target(f"tcp:127.0.0.1:{full_listener}"), LINES, QR, timeout_s=0.5
        )
    assert time.monotonic() - started < 2


async def test_a_refused_connection_says_so() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(PrinterError, match=f"printer 127.0.0.1:{port} refused the connection"):
        await print_receipt(Target("tcp", host="127.0.0.1", port=port), LINES, QR)


async def test_a_blocked_device_times_out_and_a_missing_one_says_so(tmp_path: Path) -> None:
    fifo = tmp_path / "lp0"
    os.mkfifo(fifo)  # opening it for writing blocks until a reader comes: a hung printer
    started = time.monotonic()
    try:
        with pytest.raises(PrinterError, match=rf"printer {fifo} did not answer in 0.3 s"):
            await print_receipt(Target("device", path=str(fifo)), LINES, QR, timeout_s=0.3)
        assert time.monotonic() - started < 2
    finally:
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # releases the stuck thread
        await asyncio.sleep(0.2)
        os.close(reader)
    with pytest.raises(PrinterError, match=r"is not there .* check it is plugged in"):
        await print_receipt(Target("device", path=str(tmp_path / "none")), LINES, QR)
    with pytest.raises(PrinterError, match="check the folder exists"):
        await print_receipt(Target("file", path=str(tmp_path / "no" / "r.bin")), LINES, QR)


def test_targets_parse_and_bad_ones_say_what_is_wrong() -> None:
    assert parse_target("tcp:10.0.0.5:9100") == Target("tcp", host="10.0.0.5", port=9100)
    assert str(parse_target("tcp:printer-3.floor:9100")) == "printer printer-3.floor:9100"
    assert parse_target("device:/dev/usb/lp0") == Target("device", path="/dev/usb/lp0")
    assert parse_target("file:/tmp/receipts/last.bin").path == "/tmp/receipts/last.bin"
    bad = {
        "lpt1": "is not",
        "tcp:10.0.0.5": "expected tcp:HOST:PORT",
        "tcp:10.0.0.5:0": "port must be a number",
        "tcp:10.0.0.5:99999": "port must be a number",
        "tcp::9100": "expected tcp:HOST:PORT",
        "tcp:bad host:9100": "expected tcp:HOST:PORT",
        "device:usb/lp0": "absolute path",
        "file:": "names no path",
    }
    for text, problem in bad.items():
        with pytest.raises(PrinterError, match=problem):
            parse_target(text)


def test_the_qr_as_an_svg_data_uri() -> None:
    uri = qr_svg_data_uri(QR)
    prefix = "data:image/svg+xml;base64,"
    assert uri.startswith(prefix)
    svg = base64.b64decode(uri[len(prefix) :]).decode()
    assert svg.startswith("<svg") and "<path" in svg and QR not in svg


def test_importing_the_printer_leaves_the_log_setup_alone() -> None:
    """python-escpos calls logging.basicConfig() on import; bonusd's commands set their own
    log format (BONUSD_LOG_FORMAT), so the printer module must not leave that handler."""

    code = "import logging; import bonusd.kiosk.printer; print(len(logging.getLogger().handlers))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"
