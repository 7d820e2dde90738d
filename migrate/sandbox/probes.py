"""What a running sandbox cluster says: a ZooKeeper session, the waits until its servers and brokers serve,
and the roles ``sandbox status`` shows."""

from __future__ import annotations

import json
from typing import Callable

from migrate.adapters.zookeeper import fourletter
from migrate.errors import BadInput, StepFailed
from migrate.sandbox.layout import SandboxSpec
from migrate.sandbox.supervisor import NodeState
from migrate.waiting import wait_until

Alive = Callable[[NodeState], bool]


def zookeeper(hosts: str, timeout_s: float, auth: list[tuple[str, str]] | None = None):
    """A ZooKeeper session (``migrate.adapters.zookeeper.client``); BadInput when no server answers in time."""
    from migrate.adapters.zookeeper.client import ZooKeeper  # kazoo loads when a sandbox is asked, not at every start

    return ZooKeeper.connect(hosts, auth=auth, timeout_s=timeout_s)


def committed_config(hosts: str) -> str:
    """The committed dynamic config (``server.N=...`` lines and ``version=``) read from a server of ``hosts``."""
    with zookeeper(hosts, timeout_s=30) as zk:
        return (zk.read("/zookeeper/config") or b"").decode()


def wait_zookeeper(nodes: list[NodeState], spec: SandboxSpec | None, alive: Alive,
                   timeout_s: float = 60) -> dict[str, fourletter.ServerStat]:
    """Wait until each server answers ``srvr`` with a mode (a quorum is formed for it)."""
    ready: dict[str, fourletter.ServerStat] = {}
    if not nodes:
        return ready

    def all_serving() -> dict[str, fourletter.ServerStat] | None:
        for node in nodes:
            if node.name in ready:
                continue
            if not alive(node):
                raise StepFailed(f"{node.name} exited while starting: see {node.dir}/zookeeper.log")
            try:
                ready[node.name] = fourletter.srvr(node.host, spec.zookeeper_client_port, timeout_s=2)
            except (OSError, ValueError):
                pass
        return ready if len(ready) == len(nodes) else None

    def late() -> StepFailed:
        missing = [n.name for n in nodes if n.name not in ready]
        return StepFailed(f"ZooKeeper {', '.join(missing)} not serving after {timeout_s:.0f} s: see their zookeeper.log")

    return wait_until(all_serving, timeout_s=timeout_s, interval_s=0.25, what="ZooKeeper", on_timeout=late)


def wait_brokers(nodes: list[NodeState], spec: SandboxSpec, zookeeper_connect: str, settings: dict[str, str],
                 alive: Alive, timeout_s: float = 120) -> None:
    """Wait until each broker is registered in ``/brokers/ids`` and answers metadata with its own id."""
    from migrate.adapters.kafka.local_cluster import broker_serves

    pending = list(nodes)
    with zookeeper(zookeeper_connect, timeout_s=30) as zk:

        def all_ready() -> bool:
            for node in list(pending):
                if not alive(node):
                    raise StepFailed(f"{node.name} exited while starting: see {node.dir}/server.log")
                if str(node.id) in (zk.children("/brokers/ids") or []) and \
                        broker_serves(f"{node.host}:{spec.kafka_port}", node.id, settings):
                    pending.remove(node)
            return not pending

        wait_until(all_ready, timeout_s=timeout_s, interval_s=0.5, what="brokers", on_timeout=lambda: StepFailed(
            f"{', '.join(n.name for n in pending)} not ready after {timeout_s:.0f} s: see their server.log"))


def wait_serving(nodes: list[NodeState], spec: SandboxSpec, settings: dict[str, str], alive: Alive,
                 timeout_s: float = 120) -> None:
    """Wait until each KRaft broker answers metadata with its own id (it registers with the controllers, not in ZooKeeper)."""
    from migrate.adapters.kafka.local_cluster import broker_serves

    pending = list(nodes)

    def all_ready() -> bool:
        for node in list(pending):
            if not alive(node):
                raise StepFailed(f"{node.name} exited while starting: see {node.dir}/server.log")
            if broker_serves(f"{node.host}:{spec.kafka_port}", node.id, settings):
                pending.remove(node)
        return not pending

    wait_until(all_ready, timeout_s=timeout_s, interval_s=0.5, what="KRaft brokers", on_timeout=lambda: StepFailed(
        f"{', '.join(n.name for n in pending)} not ready after {timeout_s:.0f} s: see their server.log"))


def wait_registration_gone(zookeeper_connect: str, broker_id: int, timeout_s: float = 60) -> None:
    """Wait until a killed broker's ``/brokers/ids/<id>`` is gone before it starts again.

    A broker killed with SIGKILL leaves its ephemeral registration until its ZooKeeper session
    expires (``zookeeper.session.timeout.ms``, 6 s here). A broker that starts before then finds
    the node owned by another session and exits with NodeExistsException.
    """
    try:
        zk = zookeeper(zookeeper_connect, timeout_s=15)
    except BadInput:  # no quorum: the broker will wait for it itself
        return
    with zk:
        wait_until(lambda: zk.read(f"/brokers/ids/{broker_id}") is None, timeout_s=timeout_s, interval_s=0.25,
                   what="the old registration to go", on_timeout=lambda: StepFailed(
                       f"broker id {broker_id} is still registered in ZooKeeper after {timeout_s:.0f} s: "
                       f"is another broker with that id running?"))


def create_offsets_topic(bootstrap: str, settings: dict[str, str], timeout_s: float = 90) -> None:
    """Have the brokers of ``bootstrap`` create ``__consumer_offsets`` now (before spares start: spares hold no partitions)."""
    from migrate.adapters.kafka.local_cluster import KafkaProbe

    probe = KafkaProbe(bootstrap, settings=settings)
    wait_until(probe.offsets_topic_led, timeout_s=timeout_s, interval_s=0.5, what="__consumer_offsets",
               on_timeout=lambda: StepFailed("__consumer_offsets was not created in time: see the brokers' server.log"))


def ensemble_roles(hosts: str) -> dict[int, str] | None:
    """Server id -> participant/observer in the committed dynamic config (None: not readable now)."""
    from migrate.core.zookeeper.config import parse_server_line

    if not hosts:
        return None
    try:
        with zookeeper(hosts, timeout_s=10) as zk:
            lines = (zk.read("/zookeeper/config") or b"").decode().splitlines()
        return {s.id: s.role for s in (parse_server_line(ln) for ln in lines if ln.startswith("server."))}
    except Exception:  # no quorum, or a config kmigrate cannot read: show the servers' own modes
        return None


def controller_id(zookeeper_connect: str) -> int | None:
    """The id of the controller broker (None: no quorum, no controller yet, or not its JSON)."""
    try:
        with zookeeper(zookeeper_connect, timeout_s=10) as zk:
            return int(json.loads(zk.read("/controller") or b"")["brokerid"])
    except Exception:  # no quorum, no controller yet, or not its JSON: no controller to show
        return None


def status_row(node: NodeState, spec: SandboxSpec, alive: bool, controller: int | None,
               members: dict[int, str] | None, quorum=None) -> dict:
    """``sandbox status``'s row of ``node``: name, kind, id, address, pid, running, role (ZooKeeper mode, controller;
    in a native KRaft sandbox, what ``quorum`` (``migrate.core.controllers.quorum.Quorum``) says of the node)."""
    row = {"name": node.name, "kind": node.kind, "id": node.id, "pid": node.pid if alive else None,
           "running": alive, "spare": node.spare}
    if node.kind == "zookeeper":
        row["address"] = f"{node.host}:{spec.zookeeper_client_port}"
        role = "stopped"
        if alive:
            try:
                role = fourletter.srvr(node.host, spec.zookeeper_client_port).mode
            except (OSError, ValueError):
                role = "not serving"
        row["role"] = zookeeper_role(role, node.id, node.spare, members)
    elif node.kind == "controller":  # a KRaft controller (migrate.sandbox.kraft)
        from migrate.sandbox.layout import CONTROLLER_PORT

        row["address"] = f"{node.host}:{CONTROLLER_PORT}"
        if spec.kraft:
            row["role"] = kraft_role(node.id, alive, quorum, "controller")
        else:
            row["role"] = "kraft controller" if alive else "stopped"
    else:
        row["address"] = f"{node.host}:{spec.kafka_port}"
        row["rack"] = next(b.rack for b in spec.brokers if b.id == node.id)
        if spec.kraft:
            row["role"] = kraft_role(node.id, alive, quorum, "broker")
        else:
            row["role"] = ("controller" if controller == node.id else "broker") if alive else "stopped"
    return row


def kraft_role(node_id: int, alive: bool, quorum, kind: str) -> str:
    """A native KRaft sandbox node's role: ``stopped``, or the quorum's word for it (``leader``, ``voter``,
    ``observer``; a broker is always an observer), or ``running`` (no leader answers / not listed yet)."""
    if not alive:
        return "stopped"
    role = quorum.role(node_id) if quorum is not None else None
    if role is None:
        return "running"
    if kind == "controller":
        return {"leader": "controller (leader)", "voter": "controller (voter)", "observer": "controller (observer)"}[role]
    return "broker"


def zookeeper_role(mode: str, server_id: int, joiner: bool, members: dict[int, str] | None) -> str:
    """The role ``sandbox status`` shows: the server's own mode (srvr), unless the committed config says
    more. A joiner (a spare server, started with the committed config plus itself as an observer) follows
    without a vote until a reconfig makes it a participant; srvr calls it a follower. A server the
    committed config no longer lists, and that was no joiner, was removed by a reconfig."""
    if mode == "stopped" or members is None:
        return mode
    role = members.get(server_id)
    if role is None and not joiner:
        return "removed"  # running, often no longer serving: out of the ensemble either way
    if mode == "not serving":
        return mode
    if role is None:
        return "non-voting follower (joiner)"
    if role == "observer":
        return "non-voting follower (joiner)" if joiner else "non-voting follower (observer)"
    return mode
