"""The Kafka reads verify needs before Spark runs: cluster id, topics and partitions, the topics'
cleanup.policy, retention.ms and retention.bytes, each partition's log start and end offsets (captured
once so that every read is bounded) and, for topics with size-based retention, each partition's size.

Adapter code (it talks to Kafka through confluent-kafka's AdminClient, built by
``migrate.adapters.kafka.client.admin_client``, which turns an unreachable cluster into BadInput after a
timeout). The end offset is the high watermark, or the last stable offset for ``read_committed``,
so a reader never waits for an open transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import ConfigResource, OffsetSpec

from migrate.adapters.kafka.client import admin_client
from migrate.core.clientconfig import ClientSettings
from migrate.core.verify.snapshot import TopicConfig
from migrate.errors import BadInput


@dataclass(frozen=True)
class ClusterView:
    cluster_id: str
    partitions: dict[str, tuple[int, ...]]  # topic -> partition ids


class KafkaSide:
    """One cluster as verify reads it. ``timeout_s`` bounds every call."""

    def __init__(self, settings: ClientSettings, timeout_s: float = 15.0):
        self.settings = settings
        self.timeout_s = timeout_s
        self.admin = admin_client(settings, timeout_s=min(timeout_s, 10.0))

    def view(self) -> ClusterView:
        try:
            md = self.admin.list_topics(timeout=self.timeout_s)
        except Exception as exc:
            raise BadInput(f"cannot read topics from Kafka at {self.settings.bootstrap_servers} ({exc})") from None
        parts = {name: tuple(sorted(t.partitions)) for name, t in md.topics.items() if t.error is None}
        return ClusterView(md.cluster_id or "", parts)

    def topic_configs(self, topics: list[str]) -> dict[str, TopicConfig]:
        """Each topic's cleanup.policy, retention.ms and retention.bytes (as the brokers apply them, defaults included)."""
        if not topics:
            return {}
        resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]
        out = {}
        for resource, future in self.admin.describe_configs(resources, request_timeout=self.timeout_s).items():
            try:
                entries = future.result(timeout=self.timeout_s)
            except Exception as exc:
                raise BadInput(f"cannot read the configuration of topic {resource.name} from "
                               f"{self.settings.bootstrap_servers} ({exc})") from None

            def value(name: str, default: str) -> str:
                entry = entries.get(name)
                return default if entry is None or entry.value is None else entry.value

            out[resource.name] = TopicConfig(value("cleanup.policy", "delete"), int(value("retention.ms", "604800000")),
                                             int(value("retention.bytes", "-1")))
        return out

    def compacted(self, topics: list[str]) -> set[str]:
        """Topics whose ``cleanup.policy`` includes ``compact``."""
        return {t for t, c in self.topic_configs(topics).items() if "compact" in c.cleanup_policy}

    def partition_bytes(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Bytes of each partition's largest replica (DescribeLogDirs); a partition no broker reports is left out."""
        if not partitions:
            return {}
        from migrate.adapters.kafka.admin import ReassignmentAdmin

        wanted: dict[str, list[int]] = {}
        for t, p in partitions:
            wanted.setdefault(t, []).append(p)
        md = self.admin.list_topics(timeout=self.timeout_s)
        mover = ReassignmentAdmin(self.settings, self.timeout_s)
        try:
            sizes = mover.replica_sizes(sorted(md.brokers), wanted)
        finally:
            mover.close()
        out: dict[tuple[str, int], int] = {}
        for (t, p, _), size in sizes.items():
            out[(t, p)] = max(out.get((t, p), 0), size)
        return out

    def offsets(self, partitions: list[tuple[str, int]], isolation_level: str) -> dict[tuple[str, int], tuple[int, int]]:
        """``{(topic, partition): (log_start_offset, end_offset)}``, captured now."""
        if not partitions:
            return {}
        level = IsolationLevel.READ_COMMITTED if isolation_level == "read_committed" else IsolationLevel.READ_UNCOMMITTED
        result: dict[tuple[str, int], list[int]] = {tp: [0, 0] for tp in partitions}
        for index, spec in ((0, OffsetSpec.earliest()), (1, OffsetSpec.latest())):
            request = {TopicPartition(t, p): spec for t, p in partitions}
            futures = self.admin.list_offsets(request, isolation_level=level, request_timeout=self.timeout_s)
            for tp, future in futures.items():
                try:
                    info = future.result(timeout=self.timeout_s)
                except Exception as exc:
                    raise BadInput(
                        f"cannot read the offsets of {tp.topic}-{tp.partition} from "
                        f"{self.settings.bootstrap_servers} ({exc}): is the partition online?"
                    ) from None
                result[(tp.topic, tp.partition)][index] = info.offset
        return {tp: (lo, hi) for tp, (lo, hi) in result.items()}
