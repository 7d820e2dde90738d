"""The KRaft part of the runbook ``kmigrate plan`` prints for a playbook with a ``kraft:`` section. Pure.

Kafka's documented ZooKeeper-to-KRaft procedure (3.9, KIP-866), phases in sequence, never interleaved, each
followed by the gate kmigrate reads from the cluster:

0. (a cluster before 3.9, or with ``inter.broker.protocol.version`` below it) the upgrade to 3.9 as its own
   rolling restarts, first: :func:`upgrade_steps` (the planner puts them right after the audit);
1. the partitions move (the plan's own steps, when the playbook maps brokers), then :func:`kraft_steps`:
   the pre-check, a ``verify`` snapshot, each controller (its config, ``kafka-storage format``, start), the
   quorum gate, broker roll 1 (migration settings) and its gate (dual-write), broker roll 2 (KRaft brokers)
   and its gate, the soak (``kraft status``, ``verify compare``, the canary; ``kmigrate kraft rollback``, Kafka's
   documented rollback, is possible until here), the point of no return, finalize (the controllers' roll without the
   migration flag) and ZooKeeper's retirement.

The commands are :data:`KRAFT_COMMANDS`; steps are :class:`~migrate.core.plan.document.RunbookStep`.
No I/O.
"""

from __future__ import annotations

from typing import Sequence

from migrate.core.kraft.config import format_command
from migrate.core.kraft.prechecks import KRAFT_RELEASE, KRAFT_RELEASE_TEXT
from migrate.core.model import ClusterSnapshot
from migrate.core.plan.document import RunbookStep
from migrate.core.playbook import KraftSettings
from migrate.core.versions import kafka_release_of, release_tuple

KRAFT_COMMANDS = {
    "precheck": "kmigrate kraft precheck --playbook {playbook}",
    "controller_config": "kmigrate kraft controller-config {id} --playbook {playbook}",
    "status": "kmigrate kraft status --playbook {playbook}",
    "gate": "kmigrate kraft status --wait-for {gate} --playbook {playbook}",
    "broker_config": "kmigrate kraft broker-config {id} --phase {phase} --playbook {playbook}",
    "finalize": "kmigrate kraft controller-config {id} --finalize --playbook {playbook}",
    "verify_snapshot": "kmigrate verify snapshot -o before-kraft.json --bootstrap-server {bootstrap}",
    "verify_compare": "kmigrate verify compare before-kraft.json",
    "canary": "kmigrate canary --bootstrap-server {bootstrap} --duration 24h",
    "health": "kmigrate health --bootstrap-server {bootstrap} --wait",
    "rollback": "kmigrate kraft rollback --playbook {playbook}",
}
"""Command templates of the KRaft steps (``{playbook}``, ``{bootstrap}``; ``{id}`` and ``{phase}`` per node)."""

POINT_OF_NO_RETURN = "point of no return: finalize leaves no way back to ZooKeeper"
Step = tuple[str, str, str, str]  # (actor, command, description, check)


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(str(i) for i in ids)


def _commands(playbook_file: str, bootstrap: str, command_config: str | None) -> dict[str, str]:
    c = {k: v.replace("{playbook}", playbook_file).replace("{bootstrap}", bootstrap) for k, v in KRAFT_COMMANDS.items()}
    if command_config:  # commands given no playbook need the Kafka client file too
        for k in ("verify_snapshot", "verify_compare", "canary", "health"):
            c[k] += f" --command-config {command_config}"
    return c


def upgrade_steps(snapshot: ClusterSnapshot, bootstrap: str = "BOOTSTRAP", command_config: str | None = None) -> tuple[Step, ...]:
    """The upgrade to 3.9 a cluster needs before the migration: a rolling restart onto 3.9.x with
    ``inter.broker.protocol.version`` pinned at the oldest release (when a broker runs an older release),
    then one with ``inter.broker.protocol.version=3.9`` (when a broker has a lower one). Empty when done."""
    health = _commands("", bootstrap, command_config)["health"]
    live = [b for b in snapshot.brokers if b.alive]
    older = [b for b in live if b.version and (release_tuple(b.version) or (0, 0)) < KRAFT_RELEASE]
    low_ibp = [b for b in live if b.protocol_version
               and (release_tuple(kafka_release_of(b.protocol_version)) or (0, 0)) < KRAFT_RELEASE]
    steps: list[Step] = []
    if older:
        oldest = min((b.version or "" for b in older), key=lambda v: release_tuple(v) or (0, 0))
        pinned = min((kafka_release_of(b.protocol_version) for b in live if b.protocol_version),
                     key=lambda v: release_tuple(v) or (0, 0), default=oldest)
        steps.append(("operator", f"rolling upgrade of the brokers to Kafka {KRAFT_RELEASE_TEXT}.x, "
                                  f"inter.broker.protocol.version={pinned}",
                      f"Kafka's ZooKeeper-to-KRaft migration needs {KRAFT_RELEASE_TEXT}.x on every broker; "
                      f"{'broker' if len(older) == 1 else 'brokers'} {_ids([b.id for b in older])} "
                      f"{'runs' if len(older) == 1 else 'run'} {', '.join(sorted({b.version or '' for b in older}))}. Set "
                      f"inter.broker.protocol.version={pinned} in every broker's server.properties (the brokers keep "
                      f"talking the old protocol, so a broker can still go back), install Kafka {KRAFT_RELEASE_TEXT}.x "
                      f"and restart one broker at a time; after each, run `{health}` before the next.",
                      f"every broker reports Kafka {KRAFT_RELEASE_TEXT} (kmigrate inspect); no under-replicated partition"))
    if older or low_ibp:
        steps.append(("operator", f"rolling restart of the brokers with inter.broker.protocol.version={KRAFT_RELEASE_TEXT}",
                      f"Set inter.broker.protocol.version={KRAFT_RELEASE_TEXT} on every broker and restart them one at a "
                      f"time; after each, run `{health}` before the next. After this roll no broker can go back below "
                      f"{KRAFT_RELEASE_TEXT}; the protocol must not change again until the migration is finalized.",
                      f"every broker reports inter.broker.protocol.version {KRAFT_RELEASE_TEXT} (kmigrate inspect)"))
    return tuple(steps)


def kraft_steps(
    kraft: KraftSettings,
    *,
    cluster_id: str | None,
    zookeeper_servers: Sequence[int] = (),
    zookeeper_connect: str = "",
    playbook_file: str = "playbook.yaml",
    bootstrap: str = "BOOTSTRAP",
    command_config: str | None = None,
) -> tuple[Step, ...]:
    """The migration's steps from the pre-check to ZooKeeper's retirement (see the module docstring)."""
    c = _commands(playbook_file, bootstrap, command_config)
    cid = cluster_id or "<cluster id: /cluster/id in ZooKeeper>"
    steps: list[Step] = [
        ("kmigrate", c["precheck"],
         f"Phase 0: every broker on Kafka {KRAFT_RELEASE_TEXT} with inter.broker.protocol.version {KRAFT_RELEASE_TEXT}, "
         "a fixed broker.id each, no broker id in an assignment that is not a live broker, controller ids no broker "
         "uses, no reassignment in flight, the brokers' ZooKeeper security in the controllers' config, dedicated "
         "controllers. It changes nothing.",
         "every check passes (exit 0; exit 2 names the first refusal and its fix)"),
        ("kmigrate", c["verify_snapshot"],
         f"Record every partition's offsets and a digest of its records before leaving ZooKeeper; start the canary "
         f"now and keep it running until ZooKeeper is retired: `{c['canary']}`.",
         "the snapshot covers every partition"),
    ]
    voters = kraft.quorum_voters
    for ctrl in kraft.controllers:
        props = f"controller-{ctrl.id}.properties"
        fmt = " ".join(format_command(cid, props))
        steps.append(("operator", f"start KRaft controller {ctrl.id} on {ctrl.address}",
                      f"`{c['controller_config'].format(id=ctrl.id)} --config-file {props}` prints its config "
                      f"(process.roles=controller, node.id={ctrl.id}, controller.quorum.voters={voters}, "
                      f"{kraft.listener_name} listener on port {ctrl.port} ({kraft.security_protocol}), metadata in "
                      f"{kraft.metadata_log_dir}, zookeeper.metadata.migration.enable=true, the brokers' "
                      f"zookeeper.connect and ZooKeeper security) and its format command; save the config as {props} "
                      f"on {ctrl.host}, run `{fmt}` there (once: never format a controller again during the "
                      f"migration), then `bin/kafka-server-start.sh {props}`.",
                      f"controller {ctrl.id} listens on {ctrl.address}"))
    steps += [
        ("kmigrate", c["gate"].format(gate="controllers-ready"),
         f"The quorum gate: controllers {_ids(kraft.controller_ids)} elected a leader and every one is caught up "
         "(DescribeQuorum). No broker knows the controllers yet: stopping them now changes nothing.",
         "phase controllers-ready: a leader, every controller a caught-up voter"),
        ("operator", "rolling restart of the brokers with the migration settings (roll 1)",
         f"For each broker N, one at a time: add the lines `{c['broker_config'].format(id='N', phase='migration')}` "
         "prints (zookeeper.metadata.migration.enable=true, controller.quorum.voters, controller.listener.names, "
         f"the {kraft.listener_name} protocol, and replica.fetch.backoff.ms and replica.fetch.wait.max.ms at 100 unless "
         "the broker sets them: each leader move of the rolls then stalls acks=all writes about 0.2 s instead of 1 s "
         f"or more) to its server.properties and restart it; after each, run "
         f"`{c['health']}` and `{c['status']}` before the next. No broker added or removed from here until finalize.",
         "each broker registered with the KRaft controller (an observer in DescribeQuorum)"),
        ("kmigrate", c["gate"].format(gate="dual-write"),
         "The migration gate: once every broker registered, the controller copies the metadata from ZooKeeper and "
         "writes to both (dual-write). Stuck in waiting-for-brokers? status names the brokers it waits for.",
         "phase dual-write: /migration written, /controller names the KRaft controller (kraftControllerEpoch)"),
        ("operator", "rolling restart of the brokers as KRaft brokers (roll 2)",
         f"For each broker N, one at a time: replace its server.properties with what "
         f"`{c['broker_config'].format(id='N', phase='kraft')}` prints (process.roles=broker, node.id=N, no "
         "zookeeper.* and no migration flag, StandardAuthorizer in place of AclAuthorizer) and restart it; after "
         f"each, run `{c['health']}` and `{c['status']}` before the next.",
         "each broker gone from /brokers/ids and healthy as a KRaft broker"),
        ("kmigrate", c["gate"].format(gate="brokers-kraft"),
         "The KRaft gate: every broker is a KRaft broker; the controllers still mirror every metadata change to "
         "ZooKeeper (dual-write), so the way back is still open.",
         "phase brokers-kraft with every broker KRaft; /migration's metadata offset advances"),
        ("kmigrate", c["verify_compare"],
         f"Soak as long as you need: `{c['status']}`, the canary, your clients. Until the finalize step "
         f"`{c['rollback']}` takes the cluster back to ZooKeeper mode (Kafka's documented rollback: it names each "
         "operator step, the brokers back to roll 1, the controllers stopped, and the broker roll back, waits for it, "
         "and deletes /controller and /migration itself).",
         "no record lost or changed; the canary lost nothing; /migration's offset still advances"),
        ("operator", POINT_OF_NO_RETURN,
         "After the next step there is no way back: the controllers stop writing to ZooKeeper, no rollback is possible, "
         "and ZooKeeper's copy of the metadata goes stale. Go on only once the soak is clean.",
         "the soak above is clean and you choose to leave ZooKeeper for good"),
        ("operator", "rolling restart of the controllers with the finalized config (finalize)",
         f"For each controller C, the active controller last: `{c['finalize'].format(id='C')}` prints its config "
         "without the migration flag and without zookeeper.* (refused unless every broker is a KRaft broker and "
         "healthy: Kafka itself may finalize too early, KAFKA-20960); save it as C's config, restart C, then run "
         f"`{c['status']}` before the next; after the last, `{c['gate'].format(gate='finalized')}`.",
         "phase finalized: a leader, every controller caught up, no write to ZooKeeper"),
    ]
    zk = f"ZooKeeper servers {_ids(zookeeper_servers)}" if zookeeper_servers else f"the ZooKeeper ensemble ({zookeeper_connect})"
    steps.append(("operator", f"retire {zk}",
                  f"Nothing reads ZooKeeper any more: keep a copy of its data directory, stop {zk}, then stop the "
                  "canary: it must report 0 lost.",
                  f"with ZooKeeper stopped, `{c['status']}` reads phase finalized and says ZooKeeper was not reachable "
                  f"and nothing needs it any more (exit 0; exit 1 and phase unknown if the controllers still run with "
                  f"the migration flag), and `{c['health']}` is clean"))
    return tuple(steps)


def numbered(steps: Sequence[Step], start: int) -> tuple[RunbookStep, ...]:
    """``steps`` as runbook steps numbered from ``start``."""
    return tuple(RunbookStep(start + i, a, cmd, d, chk) for i, (a, cmd, d, chk) in enumerate(steps))
