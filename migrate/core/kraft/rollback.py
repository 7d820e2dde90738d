"""``kmigrate kraft rollback``: back from a ZooKeeper-to-KRaft migration to ZooKeeper mode, before finalize (pure).

Kafka's documented rollback (3.9 docs, "Reverting to ZooKeeper mode During the Migration"), as one resumable
sequence; each run reads where things stand and :func:`next_step` says what comes next:

1. **finalized**: no way back (the controllers no longer write to ZooKeeper): refused.
2. **brokers in KRaft mode** (roll 2 started: out of ``/brokers/ids``): each goes back to its roll-1 config
   (``kmigrate kraft broker-config N --phase migration --full``) first, while the controllers still run; wait until
   each is back in ``/brokers/ids``.
3. **controllers still answering** (DescribeQuorum, or their listener still accepting connections: a controller
   kmigrate cannot talk to is not taken for stopped): the operator stops (deprovisions) them; wait until none does.
4. **the znodes**: in one ZooKeeper transaction, delete ``/controller`` when a KRaft controller holds it (so a
   ZooKeeper-mode broker becomes controller) and ``/migration`` (so the migration can be tried again: KAFKA-17146),
   its content printed first (the docs: "useful for debugging"). **KAFKA-20488**: the dual-write controller writes
   every partition state with the KRaft controller epoch, and a ZooKeeper-mode controller aborts the leader election
   of a partition whose state carries a controller epoch above its own (``PartitionStateMachine``: "Aborted leader
   election ... already written by another controller"): partitions stay offline. The ZooKeeper controller elected
   next takes ``/controller_epoch`` + 1, so when the KRaft epoch in ``/controller`` is not below
   ``/controller_epoch``, the same transaction raises ``/controller_epoch`` to the KRaft epoch + 1 (the docs, after
   kafka-site #860: check that the ZooKeeper controller epoch is greater than the KRaft controller epoch before
   reverting, and set it so when it is not).
5. **brokers with the migration flag**: each restarts with its ZooKeeper-mode config (no
   ``zookeeper.metadata.migration.enable``, ``controller.listener.names``, ``controller.quorum.*`` or CONTROLLER
   listener mapping); done once every broker runs without the flag (DescribeConfigs), a ZooKeeper-mode broker holds
   ``/controller`` and no partition is offline. Until the first broker restarts no broker is controller (a
   migrating broker does not run for it): roll quickly.

A broker formatted or replaced during dual-write carries a ``meta.properties`` of version 1, which a ZooKeeper-mode
broker refuses at startup ("Found unexpected version in .../meta.properties. ZK-based brokers that are not migrating
only support version 0": KAFKA-20762, KIP-1362; kafka PR #22751 proposes ``kafka-storage format
--zk-rollback-compatible``, unreleased). Only the broker's disk shows it, so kmigrate names it for a broker that does
not come back. No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Mapping

from migrate.core.kraft.config import MIGRATION_FLAG


class Step(str, Enum):
    REFUSED = "refused"  # finalized (or nothing to roll back to): one line, exit 2
    BROKERS_TO_MIGRATION = "brokers-to-migration"  # KRaft brokers back to their roll-1 config
    STOP_CONTROLLERS = "stop-controllers"  # the operator stops the KRaft controllers
    DELETE_ZNODES = "delete-znodes"  # kmigrate: /controller (a KRaft one) and /migration, in one transaction
    BROKERS_TO_ZOOKEEPER = "brokers-to-zookeeper"  # every broker back to its ZooKeeper-mode config
    DONE = "done"


@dataclass(frozen=True)
class RollbackView:
    """What one reading shows, for the rollback (filled by ``runner/kraft/rollback``)."""

    brokers: tuple[int, ...]  # every broker of the cluster (in /brokers/ids, in an assignment, or given)
    zk_broker_ids: tuple[int, ...]  # in /brokers/ids (ZooKeeper mode, with or without the migration flag)
    controller: dict | None  # /controller's JSON
    controller_epoch: int | None  # /controller_epoch
    migration: dict | None  # /migration's JSON
    answering_controllers: tuple[int, ...] = ()  # KRaft controllers that answered DescribeQuorum (voters)
    controllers_known: bool = True  # kmigrate had controller addresses to ask
    finalized: bool = False  # phase_of read "finalized"
    finalized_detail: str = ""
    broker_flags: Mapping[int, bool] = field(default_factory=dict)  # broker -> runs with the migration flag
    offline_partitions: tuple[str, ...] | None = None  # "topic-p" without a leader; None: not read
    long_missing: tuple[int, ...] = ()  # brokers out of /brokers/ids or silent to DescribeConfigs for a while (runner)
    accepting_controllers: tuple[str, ...] = ()  # controller listeners (host:port) still accepting connections

    @property
    def kraft_controller_epoch(self) -> int | None:
        """``kraftControllerEpoch`` of ``/controller`` (a KRaft controller holds it); None for a broker (-1) or none."""
        if not self.controller or "kraftControllerEpoch" not in self.controller:
            return None
        epoch = int(self.controller["kraftControllerEpoch"])
        return epoch if epoch >= 0 else None

    @property
    def controller_is_kraft(self) -> bool:
        return self.kraft_controller_epoch is not None

    @property
    def zookeeper_controller(self) -> int | None:
        """The ZooKeeper-mode broker holding ``/controller``, or None."""
        if not self.controller or self.controller_is_kraft:
            return None
        try:
            return int(self.controller["brokerid"])
        except (KeyError, TypeError, ValueError):
            return None

    @property
    def out_of_zookeeper(self) -> tuple[int, ...]:
        """Brokers not in ``/brokers/ids``: KRaft brokers (roll 2), or down."""
        return tuple(b for b in self.brokers if b not in self.zk_broker_ids)


@dataclass(frozen=True)
class ZnodeChange:
    """The one ZooKeeper transaction: delete ``/controller`` (when a KRaft controller holds it) and ``/migration``,
    after raising ``/controller_epoch`` to ``raise_epoch_to`` (KAFKA-20488) when set."""

    delete_controller: bool
    delete_migration: bool
    raise_epoch_to: int | None = None

    @property
    def empty(self) -> bool:
        return not (self.delete_controller or self.delete_migration or self.raise_epoch_to is not None)


@dataclass(frozen=True)
class Decision:
    step: Step
    message: str  # what stands and what to do next (one line)
    brokers: tuple[int, ...] = ()  # the brokers the operator acts on (or waits for)
    controllers: tuple[int, ...] = ()  # the controllers to stop
    change: ZnodeChange | None = None  # DELETE_ZNODES: what kmigrate writes


def _ids(ids) -> str:
    ids = tuple(ids)
    return ", ".join(str(i) for i in ids)


def _s(ids) -> str:
    return "s" if len(tuple(ids)) != 1 else ""


def epoch_to_raise(view: RollbackView) -> int | None:
    """KAFKA-20488: the ``/controller_epoch`` to write before ``/controller`` goes, or None when it is already above
    the KRaft controller epoch (or no KRaft controller holds ``/controller``).

    >>> epoch_to_raise(RollbackView((1,), (1,), {"brokerid": 3000, "kraftControllerEpoch": 7}, 3, None))
    8
    >>> epoch_to_raise(RollbackView((1,), (1,), {"brokerid": 3000, "kraftControllerEpoch": 2}, 3, None)) is None
    True
    """
    kraft = view.kraft_controller_epoch
    if kraft is None:
        return None
    if view.controller_epoch is not None and view.controller_epoch > kraft:
        return None
    return kraft + 1


def znode_change(view: RollbackView) -> ZnodeChange:
    """What the ZooKeeper transaction must do now (empty once done: a rerun after it deletes nothing)."""
    kraft = view.controller_is_kraft
    return ZnodeChange(delete_controller=kraft, delete_migration=view.migration is not None,
                       raise_epoch_to=epoch_to_raise(view) if kraft else None)


def migration_config(broker: int, playbook_hint: str = "") -> str:
    return f"kmigrate kraft broker-config {broker} --phase migration --full{playbook_hint}"


ZOOKEEPER_MODE_LINES = (f"{MIGRATION_FLAG}, controller.listener.names, controller.quorum.voters / "
                        "controller.quorum.bootstrap.servers and the CONTROLLER entry of listener.security.protocol.map")
FORMATTED_HINT = ("if its log says 'Found unexpected version in .../meta.properties', it was formatted during the "
                  "migration (KAFKA-20762): a ZooKeeper-mode broker needs meta.properties version 0")


def _stuck(view: RollbackView, brokers: tuple[int, ...]) -> str:
    """KAFKA-20762's signature, named for the brokers that have not come back for a while."""
    stuck = tuple(b for b in brokers if b in view.long_missing)
    return f"; broker{_s(stuck)} {_ids(stuck)} still not back: {FORMATTED_HINT}" if stuck else ""


def next_step(view: RollbackView, playbook_hint: str = "") -> Decision:
    """The next step of the rollback from ``view`` (see the module docstring)."""
    if view.finalized:
        return Decision(Step.REFUSED, "the migration is finalized: the controllers no longer write to ZooKeeper and "
                        "Kafka has no way back to ZooKeeper mode after finalize; nothing was changed"
                        + (f" ({view.finalized_detail})" if view.finalized_detail else ""))
    kraft_brokers = view.out_of_zookeeper
    controllers_up = bool(view.answering_controllers)
    if view.brokers and not view.zk_broker_ids and not controllers_up and view.controller_is_kraft:
        return Decision(Step.REFUSED, (
            "every broker is out of /brokers/ids (KRaft mode) and no KRaft controller answers: kmigrate cannot tell a "
            "finalized migration (no way back) from one in dual-write; start the controllers again (or give "
            "--bootstrap-controller / --controller-command-config to reach them) and run it again; nothing was changed"))
    in_migration = controllers_up or view.controller_is_kraft or view.migration is not None
    if kraft_brokers and in_migration and (controllers_up or view.controller_is_kraft):
        cmds = "; ".join(f"`{migration_config(b, playbook_hint)}`" for b in kraft_brokers)
        return Decision(Step.BROKERS_TO_MIGRATION, (
            f"broker{_s(kraft_brokers)} {_ids(kraft_brokers)} not in /brokers/ids (KRaft mode, or down): restart each "
            f"with its roll-1 config, the ZooKeeper-mode config plus the migration lines ({cmds}), the KRaft "
            f"controllers still running; waiting until {'they are' if len(kraft_brokers) > 1 else 'it is'} back in "
            f"/brokers/ids" + _stuck(view, kraft_brokers)), brokers=kraft_brokers)
    if controllers_up or view.accepting_controllers:
        c = view.answering_controllers
        silent = "" if c else (
            f" (listening at {', '.join(view.accepting_controllers)} but not answering kmigrate's DescribeQuorum: a "
            "TLS/SASL controller listener needs --controller-command-config)")
        return Decision(Step.STOP_CONTROLLERS, (
            f"stop the KRaft controller{_s(c) if c else 's'}{' ' + _ids(c) if c else ''} now{silent} (deprovision: "
            "keep their metadata dirs until the rollback is done; a new attempt formats them again); waiting until "
            "none answers or listens"), controllers=c)
    if (view.controller_is_kraft or view.migration is not None) and not view.controllers_known:
        return Decision(Step.REFUSED, (
            "no KRaft controller address to check that the controllers are stopped: give --bootstrap-controller "
            "host:port,... (their controller listeners) or a playbook with a kraft: section; nothing was changed"))
    change = znode_change(view)
    if not change.empty:
        parts = []
        if change.raise_epoch_to is not None:
            parts.append(f"raise /controller_epoch from {view.controller_epoch} to {change.raise_epoch_to}, above the "
                         f"KRaft controller epoch {view.kraft_controller_epoch} (KAFKA-20488: else partitions stay offline)")
        if change.delete_controller:
            parts.append(f"delete /controller (KRaft controller {view.controller.get('brokerid') if view.controller else '?'})")
        if change.delete_migration:
            parts.append("delete /migration")
        return Decision(Step.DELETE_ZNODES, "in one ZooKeeper transaction: " + "; ".join(parts), change=change)
    flagged = tuple(b for b in view.brokers if view.broker_flags.get(b, True))
    if kraft_brokers or flagged:
        waiting = tuple(sorted(set(flagged) | set(kraft_brokers)))
        unknown = tuple(b for b in waiting if b not in view.broker_flags)
        return Decision(Step.BROKERS_TO_ZOOKEEPER, (
            f"restart broker{_s(waiting)} {_ids(waiting)} with {'their' if len(waiting) > 1 else 'its'} ZooKeeper-mode "
            f"config (without {ZOOKEEPER_MODE_LINES}), one at a time"
            + (", now: no broker is controller until the first one restarts" if view.zookeeper_controller is None
               else f" (broker {view.zookeeper_controller} is the ZooKeeper-mode controller)")
            + "; waiting until each runs without the migration flag"
            + (f" (broker{_s(unknown)} {_ids(unknown)} not answering DescribeConfigs yet)" if unknown else "")
            + _stuck(view, unknown)), brokers=waiting)
    if view.zookeeper_controller is None:
        return Decision(Step.BROKERS_TO_ZOOKEEPER, (
            "every broker runs without the migration flag; waiting for a ZooKeeper-mode broker to take /controller"))
    if view.offline_partitions is None or view.offline_partitions:
        offline = view.offline_partitions or ()
        return Decision(Step.BROKERS_TO_ZOOKEEPER, (
            f"broker {view.zookeeper_controller} is the ZooKeeper-mode controller; waiting for "
            + (f"{len(offline)} offline partition{_s(offline)} ({', '.join(offline[:5])}"
               f"{', ...' if len(offline) > 5 else ''}) to get a leader" if offline else "the partitions' leaders")))
    return Decision(Step.DONE, (
        f"ZooKeeper mode again: broker{_s(view.brokers)} {_ids(view.brokers)} in /brokers/ids without the migration flag, "
        f"broker {view.zookeeper_controller} the controller, no partition offline, /migration gone; the KRaft controllers "
        "can be deleted (a new attempt formats them again)"))


PLAN = (
    (Step.BROKERS_TO_MIGRATION, "operator", "brokers in KRaft mode (roll 2 started) back to their roll-1 config "
                                            "(kmigrate kraft broker-config N --phase migration --full), the controllers "
                                            "still running; wait until each is back in /brokers/ids"),
    (Step.STOP_CONTROLLERS, "operator", "stop (deprovision) the KRaft controllers; wait until none answers"),
    (Step.DELETE_ZNODES, "kmigrate", "print /migration, then in one ZooKeeper transaction: /controller_epoch raised "
                                     "above the KRaft controller epoch where needed (KAFKA-20488), /controller deleted "
                                     "(a ZooKeeper-mode broker becomes controller) and /migration deleted (the "
                                     "migration can be tried again)"),
    (Step.BROKERS_TO_ZOOKEEPER, "operator", f"quickly, one at a time: every broker restarted with its ZooKeeper-mode "
                                           f"config (without {ZOOKEEPER_MODE_LINES}); wait until each runs without "
                                           "the flag, a ZooKeeper-mode broker holds /controller and no partition is "
                                           "offline"),
)
"""The whole sequence, for ``--dry-run`` and the runbook: (step, who, what)."""


def remaining(view: RollbackView, playbook_hint: str = "") -> tuple[Decision, tuple[tuple[Step, str, str], ...]]:
    """The next step and the plan's steps from it on (``--dry-run``)."""
    first = next_step(view, playbook_hint)
    order = [s for s, _, _ in PLAN]
    if first.step in order:
        return first, tuple(p for p in PLAN if order.index(p[0]) >= order.index(first.step))
    return first, ()
