"""Builders for the pure ZooKeeper tests: a committed config text, servers and configs by id."""

from __future__ import annotations

from migrate.core.zookeeper.config import OBSERVER, PARTICIPANT, DynamicConfig, Server

COMMITTED = """server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181
server.2=10.0.0.2:2888:3888:participant;10.0.0.2:2181
server.3=10.0.0.3:2888:3888:participant;2181
version=100000000
"""


def srv(i: int, role: str = PARTICIPANT) -> Server:
    return Server(i, f"zk{i}", 2888, 3888, 2181, f"zk{i}", role)


def cfg(voters, observers=(), version=0x100000000) -> DynamicConfig:
    return DynamicConfig(tuple(srv(i) for i in voters) + tuple(srv(i, OBSERVER) for i in observers), version)
