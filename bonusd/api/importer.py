"""The daemon's registry imports (`POST /members/import`, `POST /devices/import`), kept off
its event loop.

The body is spooled to a temporary file as it streams in (memory holds 1 MiB of it at
most), every row is checked in a worker thread (`registry.check_file`; seconds for a
45 MB file), and the valid records are written in atomic batches by a worker thread with
its own event loop and its own connection to the daemon's Redis: the same
`FloorStore.import_members`, without a large file's tens of thousands of commands being
packed and parsed on the loop that answers `/health` and the floor. (On a Redis Cluster,
whose client cannot be copied for another loop, the batches are written on the daemon's
loop, 100 members at a time.) One import at a time: the next one's body waits unread
until this one is checked. Figures: docs/benchmarks.md ("Member import").
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aioredis

from bonusd.floor.store import IMPORT_BATCH, FloorStore
from bonusd.registry.files import CheckedFile, check_file
from bonusd.registry.records import Device, Member, Record

SPOOL_BYTES = 1024 * 1024  # of a body kept in memory; the rest goes to a temporary file
LOOP_BATCH = 100  # members per write when written on the daemon's own loop (~15 ms each)


class Importer:
    """Imports into one daemon's floor store."""

    def __init__(self, store: FloorStore) -> None:
        self._store = store
        self._lock = asyncio.Lock()

    async def _check(
        self, model: type[Record], body: AsyncIterator[bytes], source: str
    ) -> CheckedFile[Record]:
        async with self._lock:
            with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
                async for chunk in body:
                    spool.write(chunk)
                spool.seek(0)

                def check() -> CheckedFile[Record]:
                    return check_file(model, spool, source=source)

                return await asyncio.to_thread(check)

    async def members(self, body: AsyncIterator[bytes], *, source: str) -> int:
        """Check the member file `body`, then write it; `ImportFileError` if any row is bad
        (nothing written). Returns how many members were written."""
        checked = await self._check(Member, body, source)
        client = _client_for_a_thread(self._store.redis)
        if client is not None:
            return await asyncio.to_thread(_write_members, client, self._store, checked)
        written = 0
        for batch in checked.batches(LOOP_BATCH):
            written += await self._store.import_members(batch)
        return written

    async def devices(self, body: AsyncIterator[bytes], *, source: str) -> int:
        """Check the device file `body`, then write it in one transaction."""
        checked = await self._check(Device, body, source)
        return await self._store.import_devices(checked.records())


def _client_for_a_thread(client: Any) -> aioredis.Redis | None:
    """A new client with the same connection settings as the daemon's (a client belongs
    to the event loop it first ran on), or None for a cluster client."""
    pool = getattr(client, "connection_pool", None)
    if not isinstance(client, aioredis.Redis) or pool is None:
        return None
    return aioredis.Redis(
        connection_pool=aioredis.ConnectionPool(
            connection_class=pool.connection_class, max_connections=2, **pool.connection_kwargs
        )
    )


def _write_members(client: aioredis.Redis, store: FloorStore, checked: CheckedFile[Member]) -> int:
    """In a worker thread: write every batch on an event loop of its own."""

    async def write() -> int:
        # only the import of this store is used: the ingest's settings do not matter here
        writer = FloorStore(
            client, store.keys, dedup_ttl_s=1, deadletter_maxlen=1, deadletter_payload_bytes=1
        )
        written = 0
        try:
            for batch in checked.batches(IMPORT_BATCH):
                written += await writer.import_members(batch)
        finally:  # the pool is this client's own: close its connections too
            await client.aclose(close_connection_pool=True)
        return written

    return asyncio.run(write())
