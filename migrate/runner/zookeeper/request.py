"""What an operator asks of ``kmigrate zookeeper`` (:class:`ZooKeeperRequest`) and what a run answers
(:class:`ZooKeeperResult`, with a :class:`StepRecord` per reconfig), plus the reading of the request's
connect string, credentials and ``--add`` items that every part of the run shares."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from migrate.core.zookeeper.auth import parse_auth
from migrate.core.zookeeper.config import DynamicConfig, Server, split_connect
from migrate.errors import BadInput

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ZooKeeperRequest:
    """What the operator asked for. ``add`` items are Servers or bare ids (resolved from ``known``)."""

    connect: str
    add: tuple[Server | int, ...] = ()
    remove: tuple[int, ...] = ()
    known: tuple[Server, ...] = ()  # servers described elsewhere (the playbook, the plan)
    step_by_step: bool = False
    dry_run: bool = False
    force: bool = False
    bootstrap_servers: str | None = None
    command_config: str | None = None
    kafka_client: dict[str, str] = field(default_factory=dict)
    zk_auth: str | None = None
    zk_sasl: Any = None  # core.zookeeper.auth.ZkSasl of --zk-jaas-file
    zk_tls: Any = None  # core.zookeeper.auth.ZkTls of --zk-client-config: every server dialled at its secureClientPort
    joiner_timeout_s: float = 120.0
    confirm_timeout_s: float = 60.0
    post_timeout_s: float = 90.0
    reconfig_timeout_s: float = 30.0


@dataclass
class StepRecord:
    description: str
    zkcli: str
    from_version: str | None
    to_version: str | None = None
    answer: str = ""  # received | lost-confirmed | already-committed
    seconds: float = 0.0


@dataclass
class ZooKeeperResult:
    status: str  # reconfigured | already-committed | dry-run
    committed_before: str
    committed_after: str | None
    version_before: str | None
    version_after: str | None
    voters_before: list[int]
    voters_after: list[int]
    removed: list[int]
    connect_string: str
    broker_zookeeper_connect: str | None
    steps: list[StepRecord] = field(default_factory=list)
    planned: list[str] = field(default_factory=list)  # zkCli commands (dry-run, or what ran)
    warnings: list[str] = field(default_factory=list)
    brokers: list[dict[str, Any]] = field(default_factory=list)
    registered_brokers: dict[str, list[int]] = field(default_factory=dict)  # chroot -> ids in /brokers/ids
    joiners: dict[str, str] = field(default_factory=dict)  # id -> ready | reason
    write_stall_ms: float | None = None
    write_probe: dict[str, Any] | None = None
    # a client of a server that leaves: its writes wait until that server drops it and it reconnects elsewhere
    leaving_write_stall_ms: float | None = None
    leaving_write_probe: dict[str, Any] | None = None
    checks: dict[str, Any] = field(default_factory=dict)
    next_steps: list[str] = field(default_factory=list)
    decommission: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def resolve_adds(items: Iterable[Server | int], known: tuple[Server, ...], committed: DynamicConfig) -> tuple[Server, ...]:
    out = []
    by_id = {s.id: s for s in known}
    for item in items:
        if isinstance(item, Server):
            out.append(item)
        elif item in by_id:
            out.append(by_id[item])
        elif committed.get(item) is not None:
            out.append(committed.get(item))  # type: ignore[arg-type]
        else:
            raise BadInput(
                f"--add {item}: server {item} is described nowhere: give it inline as "
                f"{item}=host:quorumPort:electionPort;[clientHost:]clientPort, or use --playbook"
            )
    return tuple(out)

def one_line(problems: list[str]) -> str:
    return problems[0] + (f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else "")

def prepare(connect: str, zk_auth: str | None, zk_sasl: Any = None) -> tuple[str, str, list]:
    hosts, chroot = split_connect(connect)
    return hosts, chroot, parse_auth(zk_auth, zk_sasl)
