"""A static KRaft quorum made dynamic (KAFKA-16538, Kafka 4.1+), pure: whether to send the upgrade, and what is left.

A static quorum (``controller.quorum.voters`` on every node, finalized ``kraft.version`` 0 or absent) takes no
AddRaftVoter or RemoveRaftVoter. From Kafka 4.1 it becomes dynamic in two steps (Kafka's docs, KRaft "Upgrade"):

1. **kraft.version=1**: UpdateFeatures (``kraft.version``, level 1, type upgrade) to the active controller, as
   ``kafka-features --bootstrap-controller C upgrade --feature kraft.version=1`` sends it. The leader writes the
   voter set to the metadata log, with the directory id and endpoints each voter reported to it (UpdateRaftVoter):
   DescribeQuorum shows the voters' directory ids from then on (none before). Kafka refuses it unless every
   controller and broker supports ``kraft.version`` 1, and unless ``metadata.version`` is at least 3.9-IV0.
2. **The nodes' configs**: on every controller and broker, ``controller.quorum.voters`` replaced with
   ``controller.quorum.bootstrap.servers`` (the controllers' ``host:port``), and each rolled in turn.

:func:`check_upgrade` decides from one :class:`FeatureReading` (BadInput, one line, nothing changed, when Kafka
could not do it; False when the quorum is dynamic already: a rerun changes nothing), :func:`next_steps` says what
is left. Traps, each read from the cluster, never assumed:

- ``kraft.version`` can become 1 behind the operator's back: ``kafka-features upgrade --release-version`` bumps it
  while the nodes still run with ``controller.quorum.voters`` (KAFKA-18979, KAFKA-21426), so "already dynamic" still
  names the nodes that run with ``controller.quorum.voters``;
- only the active controller's word counts: on the Kafka 4.4.0 sandbox an observer controller (formatted with
  ``--no-initial-controllers``) reported a finalized ``kraft.version`` 1 in ApiVersions while the voters and the
  leader reported none (a static quorum);
- the release is read from the controllers (the newest ``metadata.version`` each supports, :func:`release_of_level`),
  the operator's ``--kafka-version`` only where they cannot tell (:func:`resolve_release`).

No I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from migrate.core.controllers.quorum import DYNAMIC, ids_text
from migrate.errors import BadInput

KRAFT_VERSION = "kraft.version"
METADATA_VERSION = "metadata.version"
UPGRADE_FROM = (4, 1)
"""The first release that converts a static quorum (KAFKA-16538); 3.9 and 4.0 cannot."""
MV_3_9_IV0 = 21
"""``metadata.version`` 3.9-IV0's feature level: ``kraft.version`` 1 depends on it (KRaftVersion.dependencies)."""

# metadata.version feature levels and their names (Kafka's MetadataVersion): 1 is 3.0-IV1, 21 is 3.9-IV0, 27 is
# 4.1-IV1 (what a 4.1.2 controller supports at most), 33 is 4.4-IV2 (a 4.4.0 controller's).
_MV_NAMES = (
    "3.0-IV1", "3.1-IV0", "3.2-IV0", "3.3-IV0", "3.3-IV1", "3.3-IV2", "3.3-IV3", "3.4-IV0", "3.5-IV0", "3.5-IV1",
    "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2", "3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0",
    "3.9-IV0", "4.0-IV0", "4.0-IV1", "4.0-IV2", "4.0-IV3", "4.1-IV0", "4.1-IV1", "4.2-IV0", "4.2-IV1", "4.3-IV0",
    "4.4-IV0", "4.4-IV1", "4.4-IV2", "4.5-IV0",
)


def metadata_version_text(level: int | None) -> str:
    """A ``metadata.version`` feature level as Kafka names it.

    >>> metadata_version_text(21), metadata_version_text(27), metadata_version_text(99), metadata_version_text(None)
    ('3.9-IV0', '4.1-IV1', 'level 99', 'unknown')
    """
    if level is None:
        return "unknown"
    return _MV_NAMES[level - 1] if 1 <= level <= len(_MV_NAMES) else f"level {level}"


def release_of_level(level: int | None) -> tuple[int, int] | None:
    """The Kafka release of a node from the newest ``metadata.version`` it supports (ApiVersions' supported
    features; a release supports up to its own versions, unless ``unstable.metadata.versions.enable`` is set): a
    level above the known ones is a release at least as new as the newest known; None when unknown.

    >>> release_of_level(21), release_of_level(25), release_of_level(27), release_of_level(33), release_of_level(40)
    ((3, 9), (4, 0), (4, 1), (4, 4), (4, 5))
    >>> release_of_level(None), release_of_level(0)
    (None, None)
    """
    if level is None or level < 1:
        return None
    name = _MV_NAMES[min(level, len(_MV_NAMES)) - 1]
    major, minor = name.split("-")[0].split(".")
    return int(major), int(minor)


def _text(release: tuple[int, int] | None) -> str:
    return "an unknown release" if release is None else f"{release[0]}.{release[1]}"


def resolve_release(supported_levels: Iterable[int | None], given: tuple[int, int] | None) -> tuple[int, int] | None:
    """The controllers' release: the oldest that their supported ``metadata.version`` shows (a rolling upgrade half
    done counts as its oldest node), else ``given`` (``--kafka-version``); BadInput when ``given`` says 4.1+ and the
    controllers show an older one (Kafka would refuse the upgrade: the cluster's word wins).

    >>> resolve_release([27, 33], None), resolve_release([None], (4, 1)), resolve_release([], None)
    ((4, 1), (4, 1), None)
    >>> resolve_release([25], (4, 1))
    Traceback (most recent call last):
    ...
    migrate.errors.BadInput: --kafka-version 4.1, but a controller supports metadata.version up to 4.0-IV3 (Kafka 4.0): upgrade every controller to Kafka 4.1 or later first
    """
    levels = [lv for lv in supported_levels if lv is not None and lv >= 1]
    if not levels:
        return given
    oldest = min(levels)
    seen = release_of_level(oldest)
    if given is not None and given >= UPGRADE_FROM and seen is not None and seen < UPGRADE_FROM:
        raise BadInput(f"--kafka-version {_text(given)}, but a controller supports metadata.version up to "
                       f"{metadata_version_text(oldest)} (Kafka {_text(seen)}): upgrade every controller to Kafka "
                       "4.1 or later first")
    return seen


@dataclass(frozen=True)
class FeatureReading:
    """What the upgrade is decided on, read from the active controller (``leader_id`` None: no leader).

    ``kraft_version`` and ``metadata_version``: the finalized levels the leader reports (``kraft.version`` 0 when it
    reports none: a static quorum), None when it did not answer; ``release``: :func:`resolve_release`'s."""

    leader_id: int | None
    kraft_version: int | None
    metadata_version: int | None
    release: tuple[int, int] | None


def check_upgrade(reading: FeatureReading) -> bool:
    """True when UpdateFeatures ``kraft.version=1`` is to be sent, False when the quorum is dynamic already (nothing
    to send); BadInput (one line, nothing changed) when Kafka could not take it.

    >>> check_upgrade(FeatureReading(1, 0, 27, (4, 1))), check_upgrade(FeatureReading(1, 1, 27, (4, 1)))
    (True, False)
    >>> check_upgrade(FeatureReading(1, 0, 25, (4, 0)))
    Traceback (most recent call last):
    ...
    migrate.errors.BadInput: the controller quorum is static (kraft.version 0) and the controllers run Kafka 4.0: 3.9 and 4.0 cannot make it dynamic (KAFKA-16538, fixed in 4.1): upgrade every controller and broker to Kafka 4.1 or later first, or move to a new KRaft cluster with kmigrate mirror
    """
    if reading.leader_id is None:
        raise BadInput("the quorum has no leader (DescribeQuorum): kraft.version is changed by the active controller; "
                       "bring a majority of the controllers back up and run this again")
    if reading.kraft_version is None:
        raise BadInput(f"the active controller {reading.leader_id} did not report its finalized features "
                       "(ApiVersions): run this again")
    if reading.kraft_version >= DYNAMIC:
        return False
    head = "the controller quorum is static (kraft.version 0)"
    if reading.release is None:
        raise BadInput(f"{head} and the controllers' Kafka release cannot be told (ApiVersions shows no supported "
                       "metadata.version): give --kafka-version (4.1 or later converts it; 3.9 and 4.0 cannot)")
    if reading.release < UPGRADE_FROM:
        raise BadInput(f"{head} and the controllers run Kafka {_text(reading.release)}: 3.9 and 4.0 cannot make it "
                       "dynamic (KAFKA-16538, fixed in 4.1): upgrade every controller and broker to Kafka 4.1 or "
                       "later first, or move to a new KRaft cluster with kmigrate mirror")
    if reading.metadata_version is None or reading.metadata_version < MV_3_9_IV0:
        raise BadInput(f"{head} at metadata.version {metadata_version_text(reading.metadata_version)}: kraft.version "
                       f"1 needs metadata.version 3.9-IV0 or later: upgrade it first (kafka-features.sh "
                       f"--bootstrap-controller C upgrade --metadata {_text(reading.release)}), then run this again")
    return True


def request_text(leader_id: int | None, address: str) -> str:
    """What kmigrate sends (and a dry run would send), one line.

    >>> request_text(3001, "c2:9093")
    'UpdateFeatures kraft.version=1 (upgrade; kafka-features --bootstrap-controller c2:9093 upgrade --feature kraft.version=1) to the active controller 3001 at c2:9093'
    """
    return (f"UpdateFeatures {KRAFT_VERSION}=1 (upgrade; kafka-features --bootstrap-controller {address} upgrade "
            f"--feature {KRAFT_VERSION}=1) to the active controller {leader_id} at {address}")


def next_steps(bootstrap_servers: str, static_controllers: Sequence[int] | None,
               static_brokers: Sequence[int] | None) -> list[str]:
    """What is left once ``kraft.version`` is 1: each node still on ``controller.quorum.voters`` rolled with
    ``controller.quorum.bootstrap.servers`` (``bootstrap_servers``: the controllers' ``host:port``). ``None``: the
    nodes could not be asked (no ``--bootstrap-server`` for the brokers), so every one of them is named.

    >>> for s in next_steps("c1:9093,c2:9093", [1, 2], None): print(s)
    on controllers 1 and 2: remove controller.quorum.voters, set controller.quorum.bootstrap.servers=c1:9093,c2:9093, and restart each in turn, back in the quorum (kafka-metadata-quorum describe --status) before the next
    on every broker: remove controller.quorum.voters, set controller.quorum.bootstrap.servers=c1:9093,c2:9093 (with the new controllers' host:port too when kmigrate controllers moves the quorum next), and restart each in turn, gated by kmigrate health --wait
    >>> next_steps("c1:9093", [], [])
    []
    """
    value = f"controller.quorum.bootstrap.servers={bootstrap_servers}"
    steps = []
    if static_controllers is None or static_controllers:
        who = "every controller" if static_controllers is None else f"controllers {ids_text(static_controllers)}"
        if static_controllers is not None and len(static_controllers) == 1:
            who = f"controller {static_controllers[0]}"
        steps.append(f"on {who}: remove controller.quorum.voters, set {value}, and restart each in turn, back in "
                     "the quorum (kafka-metadata-quorum describe --status) before the next")
    if static_brokers is None or static_brokers:
        who = "every broker" if static_brokers is None else (
            f"broker {static_brokers[0]}" if len(static_brokers) == 1 else f"brokers {ids_text(static_brokers)}")
        steps.append(f"on {who}: remove controller.quorum.voters, set {value} (with the new controllers' host:port "
                     "too when kmigrate controllers moves the quorum next), and restart each in turn, "
                     "gated by kmigrate health --wait")
    return steps


def unregistered_controllers(observers: Iterable[int], registered_controllers: Iterable[int],
                             broker_ids: Iterable[int]) -> list[int]:
    """Observers of the quorum that are neither brokers nor registered controllers: controllers that joined as
    observers and never registered (seen on 4.1.2 for one started while the quorum was static: its registration timed
    out and Kafka did not try again). Only meaningful with every broker id known.

    >>> unregistered_controllers([1, 2, 3003, 3004], [3000, 3004], [1, 2])
    [3003]
    """
    return sorted(set(observers) - set(registered_controllers) - set(broker_ids))


def restart_unregistered(ids: Sequence[int]) -> str | None:
    """The step for :func:`unregistered_controllers` (None when there is none).

    >>> restart_unregistered([3003])
    'restart controller 3003 (an observer, not registered with the controllers: started while the quorum was static, its registration gave up): a registered controller is what DescribeCluster lists and kmigrate controllers finds by id'
    """
    if not ids:
        return None
    who = f"controller {ids[0]}" if len(ids) == 1 else f"controllers {ids_text(ids)}"
    return (f"restart {who} (an observer, not registered with the controllers: started while the quorum was static, "
            "its registration gave up): a registered controller is what DescribeCluster lists and kmigrate "
            "controllers finds by id")


def still_static(configs: dict[int, str | None]) -> list[int]:
    """The node ids whose ``controller.quorum.voters`` (as each reports it: DescribeConfigs) is set.

    >>> still_static({1: "1@c1:9093", 2: "", 3: None})
    [1]
    """
    return sorted(i for i, value in configs.items() if value and value.strip())
