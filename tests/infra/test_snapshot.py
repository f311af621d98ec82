"""A Redis snapshot taken as a replica takes one (bonusd/infra/snapshot.py), against a real
redis-server with a password and an ACL user, and read back by a scratch redis-server."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from bonusd.infra.snapshot import RedisSnapshotError, ScratchRedis, fetch_snapshot
from simulators.local.services import free_port, wait_for_port


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[int]:
    """A redis-server on a spare port with a password, a key, and a user who may read
    keys but not `SYNC`."""
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--requirepass", "s3cret", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_port(port, what="redis-server")
        client = redis.Redis(port=port, password="s3cret")
        client.set("bonusd:{t}:stats", "kept")
        client.acl_setuser(
            "reader", enabled=True, passwords=["+pw"], commands=["+@read"], keys=["*"]
        )
        client.close()
        yield port
    finally:
        server.terminate()
        server.wait()


async def test_a_snapshot_is_read_back_whole(guarded: int, tmp_path: Path) -> None:
    url = f"redis://:s3cret@127.0.0.1:{guarded}/0"
    shown: list[tuple[int, int | None]] = []
    taken = fetch_snapshot(url, tmp_path / "a.rdb", progress=lambda *p: shown.append(p))
    assert taken.size == (tmp_path / "a.rdb").stat().st_size > 0
    assert taken.rdb_version >= 9 and taken.redis_version and taken.taken_at > 0
    assert shown[-1] == (taken.size, taken.size)
    async with ScratchRedis(tmp_path / "a.rdb") as scratch:
        assert await scratch.client(0).get("bonusd:{t}:stats") == b"kept"
        folder = scratch.folder
    assert not folder.exists()  # the scratch server and its folder are gone


def test_a_snapshot_needs_the_password_and_sync(guarded: int, tmp_path: Path) -> None:
    with pytest.raises(RedisSnapshotError, match="refused the credentials"):
        fetch_snapshot(f"redis://:wrong@127.0.0.1:{guarded}/0", tmp_path / "b.rdb")
    with pytest.raises(RedisSnapshotError, match=r"needs \+sync"):
        fetch_snapshot(f"redis://reader:pw@127.0.0.1:{guarded}/0", tmp_path / "c.rdb")
    with pytest.raises(RedisSnapshotError, match="no snapshot from Redis"):
        fetch_snapshot(f"redis://127.0.0.1:{free_port()}/0", tmp_path / "d.rdb")


async def test_a_file_that_is_no_snapshot_is_refused_with_redis_s_reason(
    tmp_path: Path,
) -> None:
    (tmp_path / "x.rdb").write_bytes(b"REDIS0099 not really")
    with pytest.raises(RedisSnapshotError, match="could not load"):
        async with ScratchRedis(tmp_path / "x.rdb"):
            pass
