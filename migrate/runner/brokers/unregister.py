"""``kmigrate brokers unregister``: retire the registrations of stopped, empty brokers of a KRaft cluster.

Reads, refuses or goes on, then looks: the registrations (DescribeCluster v2 at a broker, fenced brokers included),
whether each retired broker's listener still answers, every partition's replicas and reassignments, and the quorum
(the controllers' ids and the active controller); :func:`migrate.core.brokers.unregister.check_unregister` decides;
each registration is removed with UnregisterBroker at the active controller (BROKER_ID_NOT_REGISTERED: already
done), then the registrations are read again until none of them is left. Last, the controllers still registered
that are not voters are reported (Kafka keeps a removed controller registered, KAFKA-20295: seen on 4.4.0 too).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from migrate.core.brokers.unregister import GHOST_CONTROLLERS_NOTE, check_unregister, ghost_controllers, ids_text, replica_counts
from migrate.core.clientconfig import ClientSettings
from migrate.errors import StepFailed

CONFIRM_TIMEOUT_S = 30.0


@dataclass
class UnregisterResult:
    unregistered: tuple[int, ...] = ()
    already_gone: tuple[int, ...] = ()
    registered_after: tuple[int, ...] = ()
    complete: bool = True
    ghost_controllers: tuple[int, ...] = ()
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"unregistered": list(self.unregistered), "already_gone": list(self.already_gone),
                "registered_after": list(self.registered_after), "fenced_brokers_listed": self.complete,
                "ghost_controllers": list(self.ghost_controllers), "notes": self.notes,
                "seconds": round(self.seconds, 1)}


def _assignments(settings: ClientSettings) -> list[tuple[int, ...]]:
    from migrate.adapters.kafka.admin import ReassignmentAdmin

    admin = ReassignmentAdmin(settings, timeout_s=15.0)
    try:
        out = [p.replicas for t in admin.describe().values() for p in t.partitions]
        for flight in admin.list_reassignments().values():
            out.append(tuple(flight.replicas) + tuple(flight.adding))
        return out
    finally:
        admin.close()


def run_unregister(broker_ids: Sequence[int], *, broker_settings: ClientSettings, controllers: Sequence[str],
                   controller_settings: ClientSettings | None, report: Callable[[str], None] = lambda _m: None,
                   confirm_timeout_s: float = CONFIRM_TIMEOUT_S) -> UnregisterResult:
    """Unregister ``broker_ids`` (see the module docstring); BadInput (nothing changed) when one may not go."""
    from migrate.adapters.kraft.registrations import broker_registrations, listening
    from migrate.adapters.kafka.voters import VoterChangeError, describe_cluster_controllers, read_quorum, unregister_broker

    started = time.monotonic()
    bootstrap = [a.strip() for a in broker_settings.bootstrap_servers.split(",") if a.strip()]
    leader, quorum = read_quorum(controllers, controller_settings)
    registered_controllers = describe_cluster_controllers(leader, controller_settings) or {"controllers": {}}
    controller_ids = {v.id for v in quorum.voters} | set(registered_controllers["controllers"])  # observers: brokers too
    regs, complete = broker_registrations(bootstrap, broker_settings)
    requested = tuple(dict.fromkeys(broker_ids))
    alive = {b for b in requested if b in regs and regs[b].fenced and listening(regs[b].address)}
    todo, gone = check_unregister(requested, regs, listening=alive, replicas=replica_counts(_assignments(broker_settings)),
                                  controller_ids=controller_ids)
    result = UnregisterResult(already_gone=gone, complete=complete)
    if not complete:
        result.notes.append("the brokers answer DescribeCluster v1 only (Kafka 3.9): stopped brokers are not listed, "
                            "so kmigrate sends UnregisterBroker for each one given and cannot list what stays "
                            "registered (Kafka answered each UnregisterBroker; BROKER_ID_NOT_REGISTERED counts as done)")
        todo, gone = tuple(sorted(set(todo) | set(gone))), ()
        result.already_gone = ()
    if gone:
        report(f"already unregistered: {ids_text(gone)}")
    done: list[int] = []
    already: list[int] = list(result.already_gone)
    for bid in todo:
        try:
            unregister_broker(controllers, bid, settings=controller_settings)
            report(f"unregistered broker {bid}")
            done.append(bid)
        except VoterChangeError as exc:
            if exc.error != "BROKER_ID_NOT_REGISTERED":
                raise
            report(f"broker {bid} was not registered (already done)")
            already.append(bid)
    result.unregistered, result.already_gone = tuple(done), tuple(sorted(already))
    deadline = time.monotonic() + confirm_timeout_s
    while True:  # the brokers learn the removal from the metadata log: read until it shows there
        regs, complete = broker_registrations(bootstrap, broker_settings)
        left = tuple(sorted(set(requested) & set(regs)))
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    result.registered_after = left
    if left:
        raise StepFailed(f"broker(s) {ids_text(left)} still registered {confirm_timeout_s:g} s after UnregisterBroker "
                         "was accepted: run the same command again")
    _leader, quorum = read_quorum(controllers, controller_settings)
    registered = describe_cluster_controllers(_leader, controller_settings) or {"controllers": {}}
    result.ghost_controllers = ghost_controllers(registered["controllers"], [v.id for v in quorum.voters])
    if result.ghost_controllers:
        result.notes.append(f"controller(s) {ids_text(result.ghost_controllers)} are registered but not voters "
                            f"(removed, or not added yet): {GHOST_CONTROLLERS_NOTE}")
    result.seconds = time.monotonic() - started
    return result
