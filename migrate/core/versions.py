"""The Kafka and ZooKeeper releases kmigrate supports, and what each can do, as pure values.

kmigrate claims Kafka 2.4 to 3.9 in ZooKeeper mode (2.4 brings the reassignment API, KIP-455;
3.9 is the last release with ZooKeeper) and ZooKeeper 3.5 to 3.8 (3.5 brings dynamic
reconfiguration, :data:`ZOOKEEPER_RECONFIG_FROM`). Every decision that depends on a release reads it here.

    >>> check_kafka_version("2.4.1"), check_zookeeper_version("3.5.7")
    ('2.4.1', '3.5.7')
    >>> kafka_release_of("2.4-IV1"), kafka_release_of("3.9-IV0"), kafka_release_of("0.10.2")
    ('2.4', '3.9', '0.10')
"""

from __future__ import annotations

import re

from typing import Mapping

from migrate.errors import BadInput

KAFKA_RANGE = ((2, 4), (3, 9))
ZOOKEEPER_RECONFIG_FROM = (3, 5, 0)
"""Dynamic reconfiguration (what ``kmigrate zookeeper`` runs) appeared in ZooKeeper 3.5.0, the first release
kmigrate supports (:func:`supports_reconfig`)."""
ZOOKEEPER_RANGE = (ZOOKEEPER_RECONFIG_FROM[:2], (3, 8))
KAFKA_RANGE_TEXT = "2.4.x to 3.9.x"
ZOOKEEPER_RANGE_TEXT = "3.5.x to 3.8.x"

_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def _minor(version: str) -> tuple[int, int] | None:
    m = _RELEASE.match(version.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def _check(version: str, low_high: tuple[tuple[int, int], tuple[int, int]], what: str, text: str, example: str,
           option: str) -> str:
    """``version`` stripped when its minor release is within ``low_high``, else BadInput naming ``option``."""
    minor = _minor(version)
    if minor is None or not low_high[0] <= minor <= low_high[1]:
        raise BadInput(f"{option} {version}: {what} version {version!r} is not supported: give a release from {text} "
                       f"(three numbers, like {example})")
    return version.strip()


def check_kafka_version(version: str, option: str = "--kafka-version") -> str:
    """``version`` when it is a Kafka release kmigrate supports (2.4.0 .. 3.9.x), else BadInput.

    >>> check_kafka_version("4.0.0")
    Traceback (most recent call last):
    ...
    migrate.errors.BadInput: --kafka-version 4.0.0: Kafka version '4.0.0' is not supported: give a release from 2.4.x to 3.9.x (three numbers, like 3.9.2)
    """
    return _check(version, KAFKA_RANGE, "Kafka", KAFKA_RANGE_TEXT, "3.9.2", option)


KRAFT_RANGE = ((3, 9), (4, 4))
"""The Kafka releases of a native KRaft sandbox (``kmigrate sandbox up --kraft``): 3.9 brings KIP-853 (a dynamic
quorum, AddRaftVoter/RemoveRaftVoter), 4.4 is the newest on Maven Central when this was written."""
KRAFT_RANGE_TEXT = "3.9.x to 4.4.x"
LOG4J2_FROM = (4, 0)
"""Kafka 4.0 logs through log4j2 (KIP-653, its ``log4j2.yaml``) and has no ZooKeeper mode; 3.9 and earlier log
through log4j 1 (reload4j)."""


def check_kraft_kafka_version(version: str, option: str = "--kafka-version") -> str:
    """``version`` when a native KRaft sandbox can run it (3.9.0 .. 4.4.x), else BadInput.

    >>> check_kraft_kafka_version("4.1.1"), check_kraft_kafka_version("3.9.2")
    ('4.1.1', '3.9.2')
    >>> check_kraft_kafka_version("3.8.1")
    Traceback (most recent call last):
    ...
    migrate.errors.BadInput: --kafka-version 3.8.1: Kafka version '3.8.1' is not supported: give a release from 3.9.x to 4.4.x (three numbers, like 4.1.1)
    """
    return _check(version, KRAFT_RANGE, "Kafka", KRAFT_RANGE_TEXT, "4.1.1", option)


def check_fetchable_kafka_version(version: str, option: str = "--kafka-version") -> str:
    """``version`` when ``kmigrate sandbox fetch`` can fetch it: a ZooKeeper-mode release (2.4.x .. 3.9.x) or a
    KRaft one (3.9.x .. 4.4.x); else BadInput naming both ranges.

    >>> check_fetchable_kafka_version("4.4.0"), check_fetchable_kafka_version("2.4.1")
    ('4.4.0', '2.4.1')
    """
    # the two ranges meet at 3.9: one range from the oldest ZooKeeper-mode release to the newest KRaft one
    return _check(version, (KAFKA_RANGE[0], KRAFT_RANGE[1]), "Kafka",
                  f"{KAFKA_RANGE_TEXT} (ZooKeeper mode) or {KRAFT_RANGE_TEXT} (KRaft)", "4.1.1", option)


def uses_log4j2(version: str) -> bool:
    """True for a Kafka release that logs through log4j2 (4.0 and later): its servers take
    ``-Dlog4j2.configurationFile`` and its jars bring log4j2, not reload4j.

    >>> uses_log4j2("3.9.2"), uses_log4j2("4.0.0"), uses_log4j2("4.4.0")
    (False, True, True)
    """
    minor = _minor(version)
    return minor is not None and minor >= LOG4J2_FROM


def check_zookeeper_version(version: str, option: str = "--zookeeper-version") -> str:
    """``version`` when it is a ZooKeeper release kmigrate supports (3.5.0 .. 3.8.x), else BadInput."""
    return _check(version, ZOOKEEPER_RANGE, "ZooKeeper", ZOOKEEPER_RANGE_TEXT, "3.8.6", option)


def parse_version(text: str) -> tuple[int, ...] | None:
    """``3.8.6-abc`` -> (3, 8, 6); None when unreadable."""
    m = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    if not m:
        return None
    return tuple(int(x) if x is not None else 0 for x in m.groups())


def supports_reconfig(version_text: str | None) -> bool | None:
    """The minimum-version rule: whether a ZooKeeper version can do dynamic reconfiguration
    (3.5.0 or later); None when the version is unknown or unreadable.

    >>> supports_reconfig("3.4.14-abc"), supports_reconfig("3.5.0"), supports_reconfig(None)
    (False, True, None)
    """
    v = parse_version(version_text or "")
    return None if v is None else v >= ZOOKEEPER_RECONFIG_FROM


def version_problem(server: str, version_text: str) -> str | None:
    """Why a server's version cannot do dynamic reconfiguration, or None."""
    if supports_reconfig(version_text) is False:
        return (
            f"ZooKeeper {server} runs {version_text}: dynamic reconfiguration needs 3.5.0 or later; "
            "upgrade the ensemble first (or replace servers one at a time by rolling restarts)"
        )
    return None


def kafka_release_of(protocol_version: str) -> str:
    """The ``major.minor`` of an ``inter.broker.protocol.version`` value (``2.4-IV1`` -> ``2.4``)."""
    parts = protocol_version.strip().split("-", 1)[0].split(".")
    return ".".join(parts[:2])


def release_tuple(release: str) -> tuple[int, int] | None:
    """``"2.8"`` / ``"2.8.2"`` -> ``(2, 8)``; None when it is not a release number."""
    parts = release.strip().split("-", 1)[0].split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        return None
    return int(parts[0]), int(parts[1])


RATES_SHOWN_FROM = (2, 8)
"""DescribeConfigs lists a broker's leader/follower.replication.throttled.rate from Kafka 2.8 on (2.4 does not)."""

HIDDEN_RATES_OVERRIDE = "--ignore-hidden-broker-rates"


def hides_broker_rates(release: str | None) -> bool:
    """True when a broker of this release (``"2.4"``) leaves its throttle rates out of DescribeConfigs;
    an unknown release is taken as showing them (the audit says it is unknown).

    >>> hides_broker_rates("2.4"), hides_broker_rates("2.8"), hides_broker_rates("3.9"), hides_broker_rates(None)
    (True, False, False, False)
    """
    minor = release_tuple(release) if release else None
    return minor is not None and minor < RATES_SHOWN_FROM


def rates_from_zookeeper(releases: Mapping[int, str | None], zookeeper_known: bool, override: bool) -> frozenset[int]:
    """The brokers whose throttle rates kmigrate must read from ZooKeeper (``/config/brokers/<id>``)
    because DescribeConfigs hides them. Without a ZooKeeper connect that is refused (BadInput, nothing
    changed yet) unless the operator chose ``--ignore-hidden-broker-rates``: then none (a rate someone
    else set there is removed with kmigrate's).

    >>> sorted(rates_from_zookeeper({1: "2.4", 2: "2.8"}, True, False)), rates_from_zookeeper({1: "3.9"}, False, False)
    ([1], frozenset())
    >>> rates_from_zookeeper({1: "2.4"}, False, True)
    frozenset()
    """
    hidden = frozenset(b for b, release in releases.items() if hides_broker_rates(release))
    if not hidden or zookeeper_known:
        return hidden
    if override:
        return frozenset()
    ids = ", ".join(str(b) for b in sorted(hidden))
    raise BadInput(f"broker(s) {ids} run Kafka before 2.8, which hides throttle rates from DescribeConfigs: "
                   "give --zookeeper (or a playbook) so kmigrate reads and restores a rate someone else set, "
                   f"or {HIDDEN_RATES_OVERRIDE} to remove such a rate with kmigrate's")


def supports_max_timestamp(release: tuple[int, int] | None) -> bool:
    """ListOffsets ``MAX_TIMESTAMP`` (KIP-734) is answered by brokers from Kafka 3.0 on."""
    return release is not None and release >= (3, 0)

