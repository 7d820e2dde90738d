"""Replication throttles as pure values: the configs, their entries, and what to change.

Throttles are two halves: broker rates (``leader/follower.replication.throttled.rate``) and topic
lists (``leader/follower.replication.throttled.replicas``, ``partition:broker`` entries).
:func:`throttle_entries` gives the entries of moves in flight as Kafka's own tool sets them;
:func:`fill_throttle_lists` keeps each list under :data:`MAX_THROTTLE_CONFIG_CHARS`;
:func:`topic_list_change` says which config operation makes a list hold what kmigrate wants, and
:func:`broker_rate_removal` what to do with a broker rate kmigrate recorded.

    >>> from migrate.core.partitions.moves import PartitionMove
    >>> throttle_entries([PartitionMove("t", 0, (1, 2), (4, 5))])
    (('0:1', '0:2'), ('0:4', '0:5'))
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Sequence

from migrate.core.partitions.moves import PartitionMove

MAX_THROTTLE_CONFIG_CHARS = 50_000
"""Longest ``*.replication.throttled.replicas`` value kmigrate writes for one topic.

Topic configs live in one ZooKeeper znode (``jute.maxbuffer``, 1 MB by default, for all of the
topic's configs) and travel in every config request; a topic with thousands of partitions moved
at once would exceed it. The scheduler limits the partitions in flight per topic instead.
"""

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
TOPIC_THROTTLE_CONFIGS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
BROKER_THROTTLE_CONFIGS = (LEADER_RATE, FOLLOWER_RATE)


def throttle_entries(moves: Iterable[PartitionMove]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(leader entries, follower entries) for moving partitions, as Kafka's own tool sets them:
    leader throttle on every current replica (any may be the source), follower throttle on the
    replicas being added. Sorted by partition then broker, no repeats."""
    leader: set[tuple[int, int]] = set()
    follower: set[tuple[int, int]] = set()
    for m in moves:
        leader.update((m.partition, b) for b in m.current)
        follower.update((m.partition, b) for b in m.adding)
    return tuple(f"{p}:{b}" for p, b in sorted(leader)), tuple(f"{p}:{b}" for p, b in sorted(follower))


def fill_throttle_lists(listed: Sequence[PartitionMove], upcoming: Iterable[PartitionMove],
                        max_chars: int = MAX_THROTTLE_CONFIG_CHARS) -> list[PartitionMove]:
    """``listed`` (moves whose entries a topic's lists must hold), then ``upcoming`` moves in
    order, as long as both lists stay within ``max_chars``. Linear in the moves, for topics with
    thousands of partitions.

    >>> ms = [PartitionMove("t", p, (1,), (4,)) for p in range(3)]
    >>> [m.partition for m in fill_throttle_lists(ms[:1], ms[1:], max_chars=len("0:1,1:1"))]
    [0, 1]
    """
    out = list(listed)
    leader_entries, follower_entries = throttle_entries(out)
    leader, follower = set(leader_entries), set(follower_entries)
    # config_chars of a list = sum(len(entry) + 1) - 1 (no comma after the last entry)
    sizes = [sum(len(e) + 1 for e in leader), sum(len(e) + 1 for e in follower)]
    for m in upcoming:
        adds = ({f"{m.partition}:{b}" for b in m.current} - leader, {f"{m.partition}:{b}" for b in m.adding} - follower)
        grown = [size + sum(len(e) + 1 for e in add) for size, add in zip(sizes, adds)]
        if max(grown) - 1 > max_chars:
            break
        leader |= adds[0]
        follower |= adds[1]
        sizes = grown
        out.append(m)
    return out


def parse_entries(value: str | None) -> tuple[str, ...]:
    """A throttled-replicas config value -> its entries (``"0:1, 1:2"`` -> ``("0:1", "1:2")``).
    ``"*"`` stays ``("*",)``."""
    if not value:
        return ()
    return tuple(e.strip() for e in value.split(",") if e.strip())


def format_entries(entries: Iterable[str]) -> str:
    return ",".join(entries)


def config_chars(entries: Iterable[str]) -> int:
    """Length of the config value the entries make (commas included)."""
    items = list(entries)
    return sum(len(e) for e in items) + max(0, len(items) - 1)


# --------------------------------------------------------------------------- what to change


def list_change(wanted: set[str], ours: set[str], max_chars: int = MAX_THROTTLE_CONFIG_CHARS) -> tuple[set[str], set[str]]:
    """(entries to add, entries to drop) so that a topic's list holds the ``wanted`` entries,
    among the entries kmigrate owns (``ours``).

    Entries of finished partitions are harmless (Kafka throttles only replicas out of sync) and
    cost a config write each: they stay while the topic still wants entries and the list fits
    ``max_chars``; they go with the topic.

    >>> list_change({"0:1"}, {"0:1", "1:1"})
    (set(), set())
    >>> list_change(set(), {"0:1"})
    (set(), {'0:1'})
    """
    adds, drops = wanted - ours, ours - wanted
    if wanted and config_chars(ours | adds) <= max_chars:
        drops = set()
    return adds, drops


def entries_to_append(adds: set[str], present: set[str]) -> set[str]:
    """The entries kmigrate appends (and records as its own): none when someone throttles every
    replica of the topic already (``*``), never one already there (someone else's stays theirs)."""
    if "*" in present:
        return set()
    return adds - present


def list_operation(wanted: set[str], adds: set[str], drops: set[str], present: set[str],
                   ours: set[str]) -> tuple[str, str | None] | None:
    """The one incremental config operation that applies ``adds`` and ``drops`` to a list that
    holds ``present`` now: ``(kind, value)`` with kind ``set`` / ``append`` / ``delete`` /
    ``subtract``, or ``None`` when nothing is to be written. The whole config is deleted only when
    the topic wants nothing and every entry present is kmigrate's.

    A list with no entry is SET, never appended to: Kafka 2.4 to 2.6 fail an APPEND (and a SUBTRACT)
    on a list config with no value (``Cannot invoke "String.split(String)"``), and an empty string
    left behind would be appended to as ``",0:4"``. A SUBTRACT never takes the last entry (that
    leaves an empty string on those releases): the config is deleted instead. One rule for every release.

    >>> list_operation({"0:4"}, {"0:4"}, set(), set(), set())
    ('set', '0:4')
    >>> list_operation({"0:4", "1:4"}, {"1:4"}, set(), {"0:4"}, {"0:4"})
    ('append', '1:4')
    >>> list_operation(set(), set(), {"0:4"}, {"0:4"}, {"0:4"})
    ('delete', None)
    >>> list_operation(set(), set(), {"0:4"}, {"0:4", "1:9"}, {"0:4"})
    ('subtract', '0:4')
    """
    if (adds and drops) or (adds and not present):
        return "set", format_entries(sorted((present - drops) | adds))
    if adds:
        return "append", format_entries(sorted(adds))
    if drops and not wanted and present <= ours:
        return ("delete", None) if present else None
    if drops & present:
        if present <= drops:  # the last entries: delete, never leave an empty string
            return "delete", None
        return "subtract", format_entries(sorted(drops & present))
    return None


def broker_rate_removal(now: str | None, recorded: str, prior: str | None) -> tuple[str, bool]:
    """What to do with a broker rate kmigrate recorded setting to ``recorded`` (``prior``: the
    value before kmigrate), now that it is ``now``: ``(action, restore)``. ``restore``: set the
    config back to ``prior`` (delete it when ``None``). A value someone changed since is left.

    >>> broker_rate_removal("100", "100", None), broker_rate_removal("100", "100", "7")
    (('removed', True), ('restored', True))
    >>> broker_rate_removal("5", "100", None), broker_rate_removal(None, "100", "7")
    (('left (changed by someone else)', False), ('absent', False))
    """
    if now == recorded or (now is None and prior is None):
        # absent may be a broker that has not applied kmigrate's change yet: delete anyway
        return ("restored" if prior is not None else "removed"), True
    if now is not None and now != prior:
        return "left (changed by someone else)", False
    return "absent", False


def list_removal(present: set[str], recorded: set[str]) -> tuple[str, str | None] | None:
    """The operation that takes kmigrate's ``recorded`` entries out of a list holding ``present``:
    delete the config when every entry is kmigrate's, subtract them otherwise; ``None`` when none
    of them is there.

    >>> list_removal({"0:1"}, {"0:1", "1:1"}), list_removal({"0:1", "2:2"}, {"0:1"}), list_removal(set(), {"0:1"})
    (('delete', None), ('subtract', '0:1'), None)
    """
    ours = present & recorded
    if not ours:
        return None
    return ("delete", None) if present <= recorded else ("subtract", format_entries(sorted(ours)))


def needed_by(flights: Mapping[tuple[str, int], Any]) -> tuple[frozenset[str], frozenset[int]]:
    """(topics, brokers) whose throttles the reassignments in flight need (key -> an ``InFlight``):
    the topics of the moves, and every broker a move copies from or to (its replicas listed in
    flight, the original and the target). Whatever else kmigrate set may go.

    >>> from migrate.core.partitions.moves import InFlight
    >>> needed_by({("t", 0): InFlight((4, 1), adding=(4,), removing=(1,))})
    (frozenset({'t'}), frozenset({1, 4}))
    """
    topics: set[str] = set()
    brokers: set[int] = set()
    for (topic, _p), f in flights.items():
        topics.add(topic)
        brokers.update(getattr(f, "replicas", ()))
    return frozenset(topics), frozenset(brokers)


def rates_in_znode(raw: bytes | None, names: tuple[str, ...] = BROKER_THROTTLE_CONFIGS) -> dict[str, str]:
    """The named configs of a broker's dynamic config znode (``/config/brokers/<id>``, JSON
    ``{"version": 1, "config": {...}}``); an absent node sets none.

    >>> rates_in_znode(b'{"version":1,"config":{"leader.replication.throttled.rate":"7","log.cleaner.threads":"2"}}')
    {'leader.replication.throttled.rate': '7'}
    >>> rates_in_znode(None)
    {}
    """
    config = (json.loads(raw) or {}).get("config") or {} if raw else {}
    return {n: str(config[n]) for n in names if n in config}

