"""The runbook of a KRaft cluster moved to new machines (a playbook with a ``controllers:`` section and no
``zookeeper:`` one): the controller quorum first, then the brokers, as the ZooKeeper ensemble and the brokers are
moved in ZooKeeper mode. Pure.

The order (KIP-853, /A5 of the project's notes: a broker retries only its ``controller.quorum.bootstrap.servers`` when
it loses the leader, so that list never names only controllers that are gone):

1. each new controller started as an observer (``kmigrate controllers controller-config ID --host H`` prints its
   properties and its ``kafka-storage format --no-initial-controllers`` command);
2. the brokers rolled to ``controller.quorum.bootstrap.servers`` = the current and the new controllers;
3. ``kmigrate controllers --add .. --remove ..``: one voter change at a time, the leader last;
4. the brokers (and the new controllers) rolled to the new controllers only;

then the plan's own broker steps (new brokers, ``kmigrate partitions``, ``verify``), and last the retired brokers
stopped and unregistered (``kmigrate brokers unregister``: :func:`retire_steps`), the controllers Kafka keeps
registered after their removal reported.
"""

from __future__ import annotations

from typing import Sequence

from migrate.core.plan.document import ROLL_STALL_HINT, RunbookStep
from migrate.core.playbook import ControllerSettings

Step = tuple[str, str, str, str]  # (actor, command, description, check)

CONTROLLER_COMMANDS = {
    "controller_config": "kmigrate controllers controller-config {id} --host {host} --port {port} "
                         "--bootstrap-controller {now}",
    "upgrade": "kmigrate controllers upgrade-kraft-version --bootstrap-controller {now} --bootstrap-server {bootstrap}",
    "move": "kmigrate controllers {changes} --bootstrap-controller {during} --bootstrap-server {bootstrap}",
    "unregister": "kmigrate brokers unregister --broker-list {ids} --bootstrap-server {bootstrap} "
                  "--bootstrap-controller {after}",
    "health": "kmigrate health --bootstrap-server {bootstrap} --wait",
}
"""Command templates of a KRaft cluster's move."""


def _ids(ids: Sequence[int]) -> str:
    return ",".join(str(i) for i in ids)


def controller_steps(controllers: ControllerSettings, *, bootstrap: str = "BOOTSTRAP",
                     command_config: str | None = None, kafka_version: str | None = None,
                     kraft_version: int | None = None) -> tuple[Step, ...]:
    """The controller quorum's move: the new controllers started, the first broker roll, the voter change, the second
    roll. Empty when the section adds and removes nothing. ``kafka_version``: the cluster's release when known (it
    decides whether an old controller stops before or after its removal). ``kraft_version`` 0 (a static quorum,
    read from the cluster): the upgrade to a dynamic quorum comes first, before any new controller starts."""
    if not controllers.add and not controllers.remove:
        return ()
    cc = f" --command-config {command_config}" if command_config else ""
    health = CONTROLLER_COMMANDS["health"].format(bootstrap=bootstrap) + cc
    now, during, after = controllers.bootstrap_now, controllers.bootstrap_during, controllers.bootstrap_after
    steps: list[Step] = []
    if kraft_version == 0:
        upgrade = CONTROLLER_COMMANDS["upgrade"].format(now=now, bootstrap=bootstrap) + cc
        steps.append(("kmigrate", upgrade,
                      "The controller quorum is static (kraft.version 0: controller.quorum.voters), and voters can "
                      "only be added to a dynamic one (Kafka 4.1+; 3.9 and 4.0 cannot convert: the audit says so). "
                      "This sends kraft.version=1 to the active controller and reads it back, then names the nodes "
                      "still on controller.quorum.voters: on the current controllers replace it with "
                      f"controller.quorum.bootstrap.servers={now} and restart them one at a time (the brokers get "
                      "theirs in the roll below). Do it before starting any new controller: one started as an "
                      "observer of a static quorum did not register with the controllers until it was restarted "
                      "(seen on Kafka 4.1.2), and kmigrate then finds neither its address nor, through it, the leader.",
                      "the active controller reports kraft.version 1 (kafka-features describe)"))
    for c in controllers.add:
        config = CONTROLLER_COMMANDS["controller_config"].format(id=c.id, host=c.host, port=c.port, now=now) + cc
        steps.append(("operator", f"start the new KRaft controller {c.id} on {c.address} as an observer",
                      f"`{config}` prints its server.properties (process.roles=controller, node.id={c.id}, the "
                      f"{controllers.listener_name} listener on port {c.port}, controller.quorum.bootstrap.servers="
                      f"{now}) and its `kafka-storage format ... --no-initial-controllers` command (the cluster's id); "
                      f"save the file on {c.host}, format once, start it. It joins as an observer, not a voter.",
                      f"controller {c.id} is an observer in DescribeQuorum (kafka-metadata-quorum describe --status) "
                      "with its directory id, fetching"))
    steps.append(("operator", f"rolling restart of the brokers with controller.quorum.bootstrap.servers={during}",
                  "A broker that loses the controller leader retries only this list: before any voter changes, every "
                  "broker must know the current and the new controllers. Restart them one at a time; after each, run "
                  f"`{health}` before the next. " + ROLL_STALL_HINT,
                  "every broker's controller.quorum.bootstrap.servers names a new controller (kmigrate controllers "
                  "checks it before its first change)"))
    changes = " ".join(([f"--add {_ids(c.id for c in controllers.add)}"] if controllers.add else [])
                       + ([f"--remove {_ids(controllers.remove)}"] if controllers.remove else []))
    move = CONTROLLER_COMMANDS["move"].format(changes=changes, during=during, bootstrap=bootstrap) + cc
    if kafka_version:
        move += f" --kafka-version {kafka_version}"
    steps.append(("kmigrate", move,
                  "One voter change at a time: a new controller is added once it is caught up (over several polls), "
                  "then an old one removed (followers first, the leader last), each read back in the voter set. "
                  "Kafka 4.0+: an old controller is stopped after its removal; 3.9 or controller.quorum.auto.join."
                  "enable=true: before it (kmigrate says which, and waits). Killed at any line, run it again.",
                  f"DescribeQuorum lists exactly the voters {_ids(c.id for c in controllers.staying)}; the removed "
                  "controllers are stopped"))
    steps.append(("operator", f"rolling restart of the brokers with controller.quorum.bootstrap.servers={after}",
                  "The removed controllers are gone: set the new list on every broker and on the new controllers, and "
                  f"restart them one at a time (the controllers' leader last); after each, run `{health}` before the "
                  "next.",
                  f"no broker's controller.quorum.bootstrap.servers names a removed controller; `{health}` is clean"))
    return tuple(steps)


def retire_steps(old_brokers: Sequence[int], *, bootstrap: str, bootstrap_controller: str | None,
                 command_config: str | None = None) -> tuple[Step, ...]:
    """The retired brokers of a KRaft cluster stopped, then unregistered (a stale registration, fenced or not, blocks
    the next metadata.version upgrade)."""
    if not old_brokers:
        return ()
    ids = _ids(sorted(old_brokers))
    cc = f" --command-config {command_config}" if command_config else ""
    unregister = CONTROLLER_COMMANDS["unregister"].format(ids=ids, bootstrap=bootstrap,
                                                          after=bootstrap_controller or "CONTROLLERS") + cc
    return (
        ("operator", f"stop brokers {ids}",
         "Once kmigrate partitions reports them empty (no replica, no leader), stop the old brokers; keep their disks "
         "until the next step is done.",
         f"brokers {ids} host no replica and lead nothing; their processes are stopped"),
        ("kmigrate", unregister,
         "Remove their registrations from the controllers (UnregisterBroker), asking brokers that stay: refused, "
         "changing nothing, while one "
         "still runs or hosts a replica; already unregistered ones are skipped. It reports the controllers Kafka keeps "
         "registered after their removal from the voters (KAFKA-20295): they can block the next metadata.version "
         "upgrade." + ("" if bootstrap_controller else " CONTROLLERS: the controllers' listeners, host:port,... (the "
                                                       "playbook's controllers: section gives them)."),
         f"brokers {ids} are gone from DescribeCluster (fenced brokers included)"),
    )


def numbered(rows: Sequence[Step], start: int = 1) -> tuple[RunbookStep, ...]:
    return tuple(RunbookStep(start + i, a, cmd, d, chk) for i, (a, cmd, d, chk) in enumerate(rows))
