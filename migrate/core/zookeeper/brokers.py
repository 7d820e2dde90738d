"""Brokers' ``zookeeper.connect`` judged against a ZooKeeper change, pure: which servers of the target
each broker still reaches once the change is done (a broker left with none loses ZooKeeper)."""

from __future__ import annotations

from dataclasses import dataclass

from migrate.core.zookeeper.config import Dialing, DynamicConfig, address_key
from migrate.errors import BadInput


@dataclass(frozen=True)
class BrokerConnect:
    """A broker and the ZooKeeper servers its ``zookeeper.connect`` names."""

    broker_id: int
    connect: str | None  # None: not known

    @property
    def hosts(self) -> tuple[str, ...]:
        if not self.connect:
            return ()
        hosts_part = self.connect.split("/", 1)[0]
        return tuple(h.strip().lower() for h in hosts_part.split(",") if h.strip())

    @property
    def chroot(self) -> str:
        if not self.connect or "/" not in self.connect:
            return ""
        return "/" + self.connect.split("/", 1)[1].rstrip("/")


@dataclass(frozen=True)
class BrokerVerdict:
    broker_id: int
    connect: str | None
    kept: tuple[int, ...]  # server ids in the target config the broker points at
    removed: tuple[int, ...]  # server ids being removed that the broker points at
    unknown: tuple[str, ...]  # addresses that match no server of either config
    secure_port: bool = False  # some address names a server at the secureClientPort kmigrate dials over TLS

    @property
    def only_removed(self) -> bool:
        return not self.kept and bool(self.removed)

    @property
    def lost(self) -> bool:
        """The broker would point at no server of the target config after the change."""
        return not self.kept


def judge_brokers(
    brokers: list[BrokerConnect],
    committed: DynamicConfig,
    target: DynamicConfig,
    aliases: dict[str, frozenset[str]] | None = None,
    dialing: Dialing | None = None,
) -> list[BrokerVerdict]:
    """Which servers of the target each broker's ``zookeeper.connect`` reaches.

    ``aliases`` maps a ``host:port`` to other spellings of it (resolved IPs), supplied by the adapter.
    Over TLS (``dialing.secure``) a server is also named by its secureClientPort address, as brokers with
    ``zookeeper.ssl.client.enable=true`` name it.
    """
    aliases = aliases or {}

    def spellings(address: str) -> set[str]:
        try:
            a = address_key(address)
        except BadInput:  # a broker's unreadable entry matches nothing: it is reported as unknown
            return {address.strip().lower()}
        return {a} | {address_key(x) for x in aliases.get(a, frozenset())}

    servers: dict[int, set[str]] = {}
    secure: set[str] = set()
    for s in committed.servers + target.servers:
        if s.client_address:
            servers.setdefault(s.id, set()).update(spellings(s.client_address))
        if dialing is not None and dialing.secure and (address := dialing.address(s)):
            secure |= spellings(address)
            servers.setdefault(s.id, set()).update(spellings(address))
    out = []
    for b in brokers:
        kept, removed, unknown, by_secure = set(), set(), [], False
        for h in b.hosts:
            names = spellings(h)
            matched = [i for i, addrs in servers.items() if addrs & names]
            by_secure = by_secure or bool(matched and names & secure)
            if not matched:
                unknown.append(h)
            for i in matched:
                (kept if target.get(i) is not None else removed).add(i)
        out.append(BrokerVerdict(b.broker_id, b.connect, tuple(sorted(kept)), tuple(sorted(removed)), tuple(unknown),
                                 by_secure))
    return out
