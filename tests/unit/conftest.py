"""Shared builders for the pure unit tests (no server, milliseconds)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Iterable, Mapping

import pytest

from migrate.core.model import Broker, ClusterSnapshot, Partition, Topic, ZkEnsemble
from migrate.core.zookeeper.config import Server
from migrate.core.plan.placement import round_robin
from migrate.core.playbook import parse_playbook

REPO = Path(__file__).resolve().parents[2]

PROCEDURE_RACKS = {
    1: "AD-1/FD-1",
    2: "AD-2/FD-1",
    3: "AD-3/FD-1",
    4: "AD-1/FD-2",
    5: "AD-2/FD-2",
    6: "AD-3/FD-2",
}
OLD_CONNECT = "127.0.0.1:2181,127.0.0.2:2181,127.0.0.3:2181"


def zk_ensemble(
    ids: Iterable[int] = (1, 2, 3),
    *,
    version: str = "3.8.6",
    reconfig: bool | None = True,
    config_version: int | None = 0x100000000,
    observers: Iterable[int] = (),
) -> ZkEnsemble:
    ids = list(ids)
    obs = set(observers)
    servers = tuple(
        Server(i, f"127.0.0.{i}", 2888, 3888, 2181, "0.0.0.0", "observer" if i in obs else "participant") for i in ids
    )
    return ZkEnsemble(
        connect=",".join(f"127.0.0.{i}:2181" for i in ids if i not in obs),
        config_version=config_version,
        servers=servers,
        reconfig_enabled=reconfig,
        server_versions={i: version for i in ids},
        server_modes={i: ("leader" if n == 0 else "follower") for n, i in enumerate(ids)},
    )


def snapshot(
    topics: Mapping[str, Iterable[tuple[int, ...]]] | None = None,
    *,
    racks: Mapping[int, str | None] | None = None,
    alive: Iterable[int] | None = None,
    configs: Mapping[str, Mapping[str, str]] | None = None,
    size: int = 1000,
    zookeeper: ZkEnsemble | None = None,
    broker_connect: str | None = OLD_CONNECT,
    isr: Mapping[tuple[str, int], tuple[int, ...]] | None = None,
    leaders: Mapping[tuple[str, int], int | None] | None = None,
    cluster_id: str = "test-cluster",
) -> ClusterSnapshot:
    """A snapshot; ``topics`` maps a name to its replica tuples (partition i = i-th tuple)."""
    racks = dict(PROCEDURE_RACKS if racks is None else racks)
    live = set(racks if alive is None else alive)
    if topics is None:
        topics = {"orders": round_robin([1, 2, 3], 6, 3)}
    isr = dict(isr or {})
    leaders = dict(leaders or {})
    default_cfg = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false", "cleanup.policy": "delete"}
    tlist = []
    for name, assignments in topics.items():
        parts = []
        for i, reps in enumerate(assignments):
            reps = tuple(reps)
            parts.append(
                Partition(i, reps, isr.get((name, i), reps), leaders.get((name, i), reps[0] if reps else None), size * (i + 1))
            )
        cfg = dict(default_cfg)
        cfg.update((configs or {}).get(name, {}))
        tlist.append(Topic(name, name.startswith("__"), cfg, tuple(parts)))
    brokers = tuple(
        Broker(b, f"10.0.0.{b % 250}", 9092, racks[b], "3.9.0", broker_connect, True) for b in sorted(racks) if b in live
    )
    return ClusterSnapshot(
        cluster_id=cluster_id,
        controller_id=min(live) if live else None,
        zookeeper=zookeeper or zk_ensemble(),
        brokers=brokers,
        topics=tuple(tlist),
    )


PROCEDURE_PLAYBOOK = """
kafka: {bootstrap_servers: "127.0.0.1:9092"}
zookeeper:
  connect: "127.0.0.1:2181,127.0.0.2:2181,127.0.0.3:2181"
  add: [{id: 4, host: 127.0.0.4}, {id: 5, host: 127.0.0.5}, {id: 6, host: 127.0.0.6}]
  remove: [1, 2, 3]
brokers:
  mapping: {1: 4, 2: 5, 3: 6}
  new:
    4: {availability_domain: AD-1, fault_domain: FD-2}
    5: {availability_domain: AD-2, fault_domain: FD-2}
    6: {availability_domain: AD-3, fault_domain: FD-2}
migration: {throttle: 50MB/s}
"""


def playbook(text: str = PROCEDURE_PLAYBOOK, name: str = "test.yaml"):
    return parse_playbook(text, name)


@pytest.fixture(scope="session")
def kb() -> SimpleNamespace:
    """Builders: ``kb.snapshot(...)``, ``kb.playbook(...)``, ``kb.zk(...)``, ``kb.repo``."""
    return SimpleNamespace(
        snapshot=snapshot,
        playbook=playbook,
        zk=zk_ensemble,
        repo=REPO,
        PROCEDURE_PLAYBOOK=PROCEDURE_PLAYBOOK,
        PROCEDURE_RACKS=PROCEDURE_RACKS,
    )
