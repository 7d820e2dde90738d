"""A stopped ZooKeeper is known at once (a TCP probe), not after kazoo's whole timeout; kraft status then reads
without it. A login ZooKeeper refuses stays BadInput (exit 2), not Unreachable."""

from __future__ import annotations

import socket
import time

import pytest

from migrate.adapters.zookeeper.client import Unreachable, any_accepting, migration_znodes
from migrate.errors import BadInput


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_listening_server_accepts_a_closed_port_does_not():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert any_accepting(f"127.0.0.1:{_closed_port()},127.0.0.1:{port}", 1.0)
    assert not any_accepting(f"127.0.0.1:{_closed_port()}", 1.0)
    assert not any_accepting("not a host:x", 1.0)


def test_a_stopped_ensemble_is_unreachable_within_the_probe_not_the_session_timeout():
    started = time.monotonic()
    with pytest.raises(Unreachable, match="cannot reach ZooKeeper at 127.0.0.1:"):
        migration_znodes(f"127.0.0.1:{_closed_port()}", "/kafka", None, timeout_s=30, probe_s=1.0)
    assert time.monotonic() - started < 5
    assert issubclass(Unreachable, BadInput)  # every other caller still reads it as bad input (exit 2)
