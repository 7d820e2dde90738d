"""Topics created and led: one rule for "every partition has a leader" and one helper for create-then-wait
(the bookkeeping topic, the canary topic, the demo's topics, ``kmigrate topics create``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from confluent_kafka.admin import AdminClient

from migrate.errors import StepFailed


def every_partition_led(topic_metadata, partitions: int | None = None) -> bool:
    """True when a topic's confluent-kafka metadata (``None``: not listed) shows no error, at least one
    partition (exactly ``partitions`` when given) and a leader for every partition."""
    return (topic_metadata is not None and topic_metadata.error is None and bool(topic_metadata.partitions)
            and (partitions is None or len(topic_metadata.partitions) == partitions)
            and all(p.leader >= 0 for p in topic_metadata.partitions.values()))


@dataclass(frozen=True)
class NewTopicSpec:
    """A topic to create: replicas assigned by hand (one list per partition) and its configs."""

    name: str
    assignment: list[list[int]]
    configs: Mapping[str, str] = field(default_factory=dict)


def wait_for_leaders(admin: AdminClient, topics: Mapping[str, int | None], *, timeout_s: float,
                     on_timeout: Callable[[str], BaseException] | None = None, clock=None) -> dict[str, int]:
    """Wait until the metadata shows every partition of each topic with a leader (``topics``: name ->
    expected partition count, ``None``: any) and return name -> partition count. The controller's
    answer to a create comes before every broker has the metadata: a client right after must see the
    whole topic. Every topic is listed, never one by name (naming a topic can auto-create it); a
    failing metadata request (a broker restarting) is asked again. At the timeout: ``on_timeout(name)``
    for the first topic not led (a :class:`StepFailed` by default)."""
    from migrate.waiting import SYSTEM_CLOCK, poll

    def check() -> dict[str, int] | None:
        try:
            listed = admin.list_topics(timeout=min(timeout_s, 5.0)).topics
        except Exception:  # a broker restarting: ask again
            return None
        if all(every_partition_led(listed.get(n), count) for n, count in topics.items()):
            return {n: len(listed[n].partitions) for n in topics}
        return None

    got = poll(check, timeout_s=timeout_s, interval_s=0.2, clock=clock or SYSTEM_CLOCK)
    if got is not None or not topics:
        return got or {}
    late = sorted(topics)[0]
    try:
        listed = admin.list_topics(timeout=min(timeout_s, 5.0)).topics
        late = next(n for n in sorted(topics) if not every_partition_led(listed.get(n), topics[n]))
    except Exception:
        pass
    if on_timeout is not None:
        raise on_timeout(late)
    raise StepFailed(f"topic {late} was created but not every partition has a leader after {timeout_s:.0f} s")


def create_topics_and_wait(admin: AdminClient, topics: Iterable[NewTopicSpec], *, timeout_s: float,
                           exist_ok: bool = False,
                           on_create_error: Callable[[str, Exception], BaseException] | None = None,
                           on_timeout: Callable[[str], BaseException] | None = None,
                           clock=None) -> dict[str, int]:
    """Create the topics (one request) and wait until every partition of each has a leader
    (:func:`wait_for_leaders`); return name -> partition count.

    ``exist_ok``: a topic that already exists (``TOPIC_ALREADY_EXISTS``, a concurrent run) is fine and
    waited for with any partition count. Any other refusal raises ``on_create_error(name, exc)``, or the
    client's exception itself when not given.

    >>> create_topics_and_wait(admin, [NewTopicSpec("t", [[1, 2], [2, 3]], {"retention.ms": "-1"})],
    ...                        timeout_s=30)  # doctest: +SKIP
    {'t': 2}
    """
    from confluent_kafka.admin import NewTopic

    specs = list(topics)
    if not specs:
        return {}
    futures = admin.create_topics(
        [NewTopic(t.name, num_partitions=len(t.assignment), replica_assignment=[list(r) for r in t.assignment],
                  config=dict(t.configs)) for t in specs],
        request_timeout=timeout_s)
    expected: dict[str, int | None] = {}
    for t in specs:
        expected[t.name] = len(t.assignment)
        try:
            futures[t.name].result(timeout=timeout_s)
        except Exception as exc:
            if exist_ok and "TOPIC_ALREADY_EXISTS" in str(exc):
                expected[t.name] = None
                continue
            if on_create_error is not None:
                raise on_create_error(t.name, exc) from None
            raise
    return wait_for_leaders(admin, expected, timeout_s=timeout_s, on_timeout=on_timeout, clock=clock)
