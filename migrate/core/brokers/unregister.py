"""Retiring the brokers of a KRaft cluster, pure: which registrations ``kmigrate brokers unregister`` may remove,
and which controllers Kafka keeps registered after their removal from the voters.

A KRaft broker's registration outlives its process: a stopped broker stays registered (fenced) until it is
unregistered (``UnregisterBroker``, as ``kafka-cluster.sh unregister --id N``), and a new ``metadata.version`` is
finalized only when every registration, fenced ones too, supports it. So once ``kmigrate partitions`` emptied the
retired brokers and the operator stopped them, their registrations go. :func:`check_unregister` refuses
(``BadInput``: one line, nothing changed) a broker that still runs (registered and unfenced, or fenced while its
listener still answers), one that still hosts a replica (or is in a reassignment), and an id that is a controller's;
a broker not registered any more is already done (a rerun skips it). No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from migrate.errors import BadInput


@dataclass(frozen=True)
class Registration:
    """A broker's registration as DescribeCluster (v2, fenced brokers included) shows it."""

    id: int
    host: str
    port: int
    fenced: bool

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def ids_text(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in sorted(ids))


def check_unregister(requested: Sequence[int], registrations: Mapping[int, Registration], *,
                     listening: Iterable[int] = (), replicas: Mapping[int, int] | None = None,
                     controller_ids: Iterable[int] = ()) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(to unregister, already gone)`` among ``requested``, or BadInput naming the first reason to refuse.

    ``registrations``: every registered broker (fenced ones too); ``listening``: ids whose broker listener still
    accepts a connection; ``replicas``: broker id -> replicas it hosts or is being given (assignments and
    reassignments); ``controller_ids``: the controllers' node ids (voters, observers, registered ones).

    >>> regs = {1: Registration(1, "h1", 9092, True), 2: Registration(2, "h2", 9092, False)}
    >>> check_unregister([1, 5], regs, replicas={2: 10})
    ((1,), (5,))
    >>> check_unregister([1, 2], regs)
    Traceback (most recent call last):
    ...
    migrate.errors.BadInput: broker 2 is running (registered and unfenced, at h2:9092): stop it first (after kmigrate partitions moved its replicas off); nothing was unregistered
    """
    if not requested:
        raise BadInput("no broker given: --broker-list 1,2,3 (the retired brokers, stopped, hosting no replica)")
    replicas = replicas or {}
    controllers = set(controller_ids)
    listening = set(listening)
    nothing = "nothing was unregistered"
    for bid in requested:
        if bid in controllers:
            raise BadInput(f"{bid} is a controller's node id, not a broker's: a controller leaves the quorum with "
                           f"kmigrate controllers --remove {bid}; {nothing}")
    for bid in requested:
        reg = registrations.get(bid)
        if reg is not None and not reg.fenced:
            raise BadInput(f"broker {bid} is running (registered and unfenced, at {reg.address}): stop it first "
                           f"(after kmigrate partitions moved its replicas off); {nothing}")
        if reg is not None and bid in listening:
            raise BadInput(f"broker {bid} is fenced but still answers at {reg.address}: its process runs; stop it "
                           f"first; {nothing}")
    hosting = [bid for bid in requested if replicas.get(bid, 0) > 0]
    if hosting:
        bid = hosting[0]
        raise BadInput(f"broker {bid} still hosts {replicas[bid]} replica(s) (or is in a reassignment): move them "
                       f"off with kmigrate partitions first (an unregistered broker's replicas stay offline); {nothing}")
    todo = tuple(sorted({b for b in requested if b in registrations}))
    gone = tuple(sorted({b for b in requested if b not in registrations}))
    return todo, gone


def replica_counts(assignments: Iterable[Sequence[int]]) -> dict[int, int]:
    """Broker id -> how many of ``assignments`` (each partition's replicas, adding ones included) name it.

    >>> replica_counts([(1, 2), (2, 3), (2,)])
    {1: 1, 2: 3, 3: 1}
    """
    out: dict[int, int] = {}
    for replicas in assignments:
        for b in set(replicas):
            out[b] = out.get(b, 0) + 1
    return dict(sorted(out.items()))


def ghost_controllers(registered: Iterable[int], voters: Iterable[int]) -> tuple[int, ...]:
    """Controllers still registered that are not voters: those Kafka keeps after their removal from the voters
    (seen on Kafka 4.4.0 too; KIP-1312, KAFKA-20295), and new controllers not added yet. A registration that does not
    support the next metadata.version blocks its upgrade. (DescribeQuorum's observers are no test of a running
    process: it lists a stopped controller as an observer for a while.)

    >>> ghost_controllers([1, 2, 3, 7], voters=[3, 7])
    (1, 2)
    """
    return tuple(sorted(set(registered) - set(voters)))


GHOST_CONTROLLERS_NOTE = ("Kafka keeps a controller registered after its removal from the voters (KAFKA-20295; "
                          "KIP-1312 unregisters them from metadata.version 4.4-IV2): a registration that does not "
                          "support the next metadata.version blocks its upgrade; check kafka-features.sh describe "
                          "before that upgrade")
