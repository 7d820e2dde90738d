"""``kmigrate mirror --engine mirrormaker1``: pure decisions for Kafka's legacy MirrorMaker 1
(``kafka.tools.MirrorMaker``, deprecated since Kafka 3.0, removed in 4.0).

MirrorMaker 1 is a plain consumer group on the source and a producer on the target (Kafka 3.9's
source): it subscribes to ``--include`` (a Java regular expression), sends each record with the
source's key, value, headers and timestamp but **no partition** (the target producer's partitioner
places it: keyed records land where Java's murmur2 of the key says, unkeyed ones anywhere), flushes
its producer and then commits its consumer offsets every ``--offset.commit.interval.ms``. Killed
between two commits, it copies again what it sent since the last one: duplicates on the target,
never a gap. It translates no consumer offsets: kmigrate does (``core/mirror/translation.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from migrate.errors import BadInput

ENGINE = "mirrormaker1"
MAIN_CLASS = "kafka.tools.MirrorMaker"
DEFAULT_GROUP = "kmigrate-mirrormaker1"
COMMIT_INTERVAL_MS = 5000
DEPRECATION = ("MirrorMaker 1 (kafka.tools.MirrorMaker) is deprecated since Kafka 3.0 and removed in Kafka 4.0; "
               "it translates no consumer offsets (kmigrate does) and copies records again after a crash: "
               "prefer the MirrorMaker 2 engine (kmigrate mirror start without --engine)")
PARTITIONING = ("MirrorMaker 1 does not keep a record's partition: the target's producer places it (keyed "
                "records by Java's murmur2 hash of the key, like Java producers; unkeyed records anywhere)")


def consumer_properties(source_bootstrap: str, source_client: dict[str, str], group: str) -> dict[str, str]:
    """MirrorMaker 1's ``consumer.properties``: its own group, internal topics left out, from the
    earliest record, committed records only (aborted transactions are not copied), partitions spread
    round-robin over the instances. ``source_client``: ``--source-command-config`` (security)."""
    props = {k: v for k, v in sorted(source_client.items()) if k != "bootstrap.servers"}
    props.update({
        "bootstrap.servers": source_bootstrap,
        "group.id": group,
        "exclude.internal.topics": "true",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": "false",
        "isolation.level": "read_committed",
        "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    })
    return props


def producer_properties(target_bootstrap: str, target_client: dict[str, str]) -> dict[str, str]:
    """MirrorMaker 1's ``producer.properties``: every replica acknowledges, idempotent, one request in
    flight per connection (no reordering on a retry; MirrorMaker 1's own safe default), no send
    timeout (MirrorMaker 1 stops rather than drop a record). ``target_client``: ``--target-command-config``."""
    props = {k: v for k, v in sorted(target_client.items()) if k != "bootstrap.servers"}
    props.update({
        "bootstrap.servers": target_bootstrap,
        "acks": "all",
        "enable.idempotence": "true",
        "max.in.flight.requests.per.connection": "1",
        "retries": "2147483647",
        "delivery.timeout.ms": "2147483647",
        "linger.ms": "20",
        "client.id": "kmigrate-mirrormaker1-producer",
    })
    return props


def arguments(consumer_file: str, producer_file: str, include: str) -> list[str]:
    """``kafka.tools.MirrorMaker``'s command line (Kafka 3.9 calls ``--whitelist`` ``--include``)."""
    return ["--consumer.config", consumer_file, "--producer.config", producer_file, "--include", include,
            "--num.streams", "1", "--offset.commit.interval.ms", str(COMMIT_INTERVAL_MS),
            "--abort.on.send.failure", "true"]


def check_instances(instances: int) -> None:
    if instances < 1 or instances > 64:
        raise BadInput(f"--instances {instances}: give 1 to 64 MirrorMaker 1 processes (they share one consumer group)")


# ====================================================================== status


@dataclass(frozen=True)
class GroupLag:
    """One partition of MirrorMaker 1's consumer group, as ``kafka-consumer-groups --describe`` shows it."""

    topic: str
    partition: int
    current_offset: int | None  # the group's committed offset (None: nothing committed yet)
    log_start: int
    log_end_offset: int
    consumer_id: str | None = None
    client_id: str | None = None
    time_lag_ms: int | None = None  # source's newest record timestamp minus the target's, this partition

    @property
    def topic_partition(self) -> tuple[str, int]:
        return self.topic, self.partition

    @property
    def lag(self) -> int:
        position = self.log_start if self.current_offset is None else max(self.current_offset, self.log_start)
        return max(0, self.log_end_offset - position)

    @property
    def end(self) -> int:
        return self.log_end_offset

    COLUMNS: ClassVar[tuple[str, ...]] = ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "TIME-LAG",
                                          "CONSUMER-ID", "CLIENT-ID")

    def cells(self) -> tuple[str, ...]:
        """The row of ``mirror status``'s table (:data:`COLUMNS`, as ``kafka-consumer-groups --describe``)."""
        return (self.topic, str(self.partition), "-" if self.current_offset is None else str(self.current_offset),
                str(self.log_end_offset), str(self.lag), "-" if self.time_lag_ms is None else f"{self.time_lag_ms / 1000:.1f} s",
                self.consumer_id or "-", self.client_id or "-")

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "current_offset": self.current_offset,
                "log_end_offset": self.log_end_offset, "lag": self.lag, "consumer_id": self.consumer_id,
                "client_id": self.client_id, "time_lag_ms": self.time_lag_ms}


def duplicates_note(unclean: tuple[dict, ...] | list[dict]) -> str | None:
    """What ``status`` says after a MirrorMaker 1 ended without a clean stop (SIGKILL, crash)."""
    if not unclean:
        return None
    which = ", ".join(f"instance {u['instance']} (pid {u['pid']})" for u in unclean)
    return (f"{which} ended without a clean stop: the records it copied after its last offset commit "
            f"(every {COMMIT_INTERVAL_MS // 1000} s) were copied again after the restart, so some records may "
            "have been copied twice on the target (verify reports them as duplicates, not as loss)")


def group_lags(ends: dict[tuple[str, int], tuple[int, int]], committed: dict[tuple[str, int], int],
               members: dict[tuple[str, int], tuple[str, str]] | None = None,
               time_lags: dict[tuple[str, int], int] | None = None) -> tuple[GroupLag, ...]:
    """Per source partition (``ends``: (topic, partition) -> (log start, end)) MirrorMaker 1's group
    position and lag; ``members``: (consumer id, client id) of the partition's owner."""
    members, time_lags = members or {}, time_lags or {}
    return tuple(GroupLag(t, p, committed.get((t, p)), lo, hi, *(members.get((t, p)) or (None, None)),
                          time_lags.get((t, p))) for (t, p), (lo, hi) in sorted(ends.items()))
