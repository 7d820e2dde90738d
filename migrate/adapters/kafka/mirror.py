"""Kafka reads and writes of ``kmigrate mirror`` (confluent-kafka): one cluster's topics, configs,
consumer groups and ACLs as :class:`migrate.core.mirror.plan.ClusterReading`, topic creation on the target,
end offsets, and the records of MirrorMaker's own topics (Connect offsets and status, checkpoints).

Every call has a timeout; an unreachable cluster is a ``BadInput`` naming it.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

from migrate.adapters import LIBRDKAFKA_LOG
from migrate.adapters.kafka.acls import refused_by_authorizer
from migrate.adapters.kafka.client import admin_client
from migrate.adapters.kafka.topics import NewTopicSpec, create_topics_and_wait
from migrate.core.clientconfig import ClientSettings
from migrate.core.mirror.plan import AclReading, ClusterReading, TopicReading
from migrate.core.permissions import Need, Resource, missing_line, principal_of
from migrate.errors import BadInput, StepFailed


class GroupMembers(NamedTuple):
    """A consumer group as :meth:`MirrorCluster.group_members` reads it."""

    state: str
    members: list[str]  # client-id@host
    owners: dict[tuple[str, int], tuple[str, str]]  # (topic, partition) -> (consumer id, client id)


class MirrorCluster:
    """One side of a mirror (source or target)."""

    def __init__(self, settings: ClientSettings, role: str, timeout_s: float = 15.0):
        self.settings = settings
        self.role = role
        self.timeout_s = timeout_s
        try:
            self.admin: AdminClient = admin_client(settings, timeout_s=timeout_s)
        except BadInput:
            raise BadInput(f"cannot reach the {role} cluster at {settings.bootstrap_servers} within {timeout_s:.0f} s: "
                           f"check --{role}-bootstrap and --{role}-command-config") from None

    def _fail(self, what: str, exc: Exception) -> BadInput:
        return BadInput(f"cannot read {what} of the {self.role} cluster at {self.settings.bootstrap_servers} ({exc}): "
                        f"check --{self.role}-bootstrap, --{self.role}-command-config and the client's permissions")

    def read(self, with_groups: bool = True, with_acls: bool = True,
             configs_of: Callable[[str], bool] | None = None, with_release: bool = False) -> ClusterReading:
        """The cluster as a mirror plan needs it; ``configs_of``: the topics whose configs are read (the
        others get none: a least-privileged principal need not describe the configs of topics not mirrored)."""
        try:
            desc = self.admin.describe_cluster(request_timeout=self.timeout_s).result(timeout=self.timeout_s)
            md = self.admin.list_topics(timeout=self.timeout_s)
        except Exception as exc:
            raise self._fail("the metadata", exc) from None
        topics: dict[str, TopicReading] = {}
        names = sorted(n for n, t in md.topics.items() if t.error is None and t.partitions)
        configs = self.topic_configs([n for n in names if configs_of is None or configs_of(n)])
        for name in names:
            parts = md.topics[name].partitions
            rf = max(len(p.replicas) for p in parts.values())
            values, defaults = configs.get(name, ({}, frozenset()))
            topics[name] = TopicReading(name, len(parts), rf, values, defaults)
        return ClusterReading(self.settings.bootstrap_servers, str(desc.cluster_id), len(desc.nodes), topics,
                              self.groups() if with_groups else (), self.acls() if with_acls else None,
                              self.release() if with_release else None)

    def release(self) -> str | None:
        """The brokers' Kafka release as ``major.minor`` (``"4.3"``), told by the API versions they answer
        (ApiVersions, matched by kafka-python; no right needed), or None when it cannot tell. Kafka 4 knows some
        topic configs no more (``ClusterReading.removed_configs``)."""
        from migrate.adapters.kafka.client import kafka_python_admin

        try:
            with kafka_python_admin(self.settings, self.timeout_s) as client:
                release = client._client.check_version()
        except Exception:  # kafka-python raises several kinds; the release is then unknown
            return None
        return ".".join(str(n) for n in release[:2]) if release else None

    def topic_configs(self, names: list[str]) -> dict[str, tuple[dict[str, str], frozenset[str]]]:
        """topic -> (every config with a value, the names whose value is Kafka's built-in default)."""
        out: dict[str, tuple[dict[str, str], frozenset[str]]] = {}
        for i in range(0, len(names), 50):
            resources = [ConfigResource(ConfigResource.Type.TOPIC, n) for n in names[i:i + 50]]
            got: dict = {}
            name = None
            try:
                futures = self.admin.describe_configs(resources, request_timeout=self.timeout_s)
                for r, f in futures.items():
                    name = r.name
                    got[name] = f.result(timeout=self.timeout_s)
            except Exception as exc:
                if name is not None and refused_by_authorizer(exc):  # named as every refused right is
                    need = Need(Resource.topic(name), "DESCRIBE_CONFIGS", f"read its configs on the {self.role} cluster")
                    raise BadInput(missing_line(need, principal_of(self.settings.settings),
                                                self.settings.bootstrap_servers)) from None
                raise self._fail("topic configs", exc) from None
            for name, entries in got.items():
                values = {k: e.value for k, e in entries.items() if e.value is not None and not e.is_sensitive}
                defaults = frozenset(k for k, e in entries.items() if e.source == ConfigSource.DEFAULT_CONFIG.value)
                out[name] = (values, defaults)
        return out

    def groups(self) -> tuple[str, ...]:
        try:
            result = self.admin.list_consumer_groups(request_timeout=self.timeout_s).result(timeout=self.timeout_s)
        except Exception as exc:
            raise self._fail("the consumer groups", exc) from None
        return tuple(sorted(g.group_id for g in result.valid))

    def acls(self) -> tuple[AclReading, ...] | None:
        """Every ACL binding, or ``None`` when the cluster has no authorizer (a broker's
        ``authorizer.class.name`` is empty; librdkafka answers such a cluster with no bindings)."""
        from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

        try:
            broker = min(self.admin.list_topics(timeout=self.timeout_s).brokers)
            futures = self.admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, str(broker))],
                                                  request_timeout=self.timeout_s)
            entries = next(iter(futures.values())).result(timeout=self.timeout_s)
        except Exception as exc:
            raise self._fail("the broker configs", exc) from None
        authorizer = entries.get("authorizer.class.name")
        if authorizer is None or not authorizer.value:
            return None
        flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                               AclPermissionType.ANY)
        try:
            bindings = self.admin.describe_acls(flt, request_timeout=self.timeout_s).result(timeout=self.timeout_s)
        except Exception as exc:
            raise self._fail("the ACLs", exc) from None
        return tuple(sorted((AclReading(b.restype.name, b.name, b.resource_pattern_type.name, b.principal, b.host,
                                        b.operation.name, b.permission_type.name) for b in bindings),
                            key=lambda a: (a.resource_type, a.name, a.principal, a.operation)))

    def create_topics(self, specs: list[tuple[str, int, int, dict[str, str]]]) -> dict[str, int]:
        """Create topics (name, partitions, replication factor, configs), spreading replicas over the
        live brokers, and wait until each has leaders. One that exists already is left as it is."""
        brokers = sorted(self.admin.list_topics(timeout=self.timeout_s).brokers)
        new = []
        for n, (name, partitions, rf, configs) in enumerate(specs):
            assignment = [[brokers[(n + p + r) % len(brokers)] for r in range(rf)] for p in range(partitions)]
            new.append(NewTopicSpec(name, assignment, configs))
        return create_topics_and_wait(
            self.admin, new, timeout_s=max(self.timeout_s, 60.0), exist_ok=True,
            on_create_error=lambda name, exc: StepFailed(f"the target refused to create topic {name}: {exc}"))

    def topic_partitions(self) -> dict[str, int]:
        """topic -> partition count, every topic."""
        try:
            md = self.admin.list_topics(timeout=self.timeout_s)
        except Exception as exc:
            raise self._fail("the metadata", exc) from None
        return {n: len(t.partitions) for n, t in md.topics.items() if t.error is None and t.partitions}

    def _list_offsets(self, tps: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        """(topic, partition) -> (log start, end of the committed records), in two requests."""
        from confluent_kafka import IsolationLevel
        from confluent_kafka.admin import OffsetSpec

        if not tps:
            return {}
        out: dict[tuple[str, int], list[int]] = {tp: [0, 0] for tp in tps}
        for i, spec in enumerate((OffsetSpec.earliest(), OffsetSpec.latest())):
            try:
                futures = self.admin.list_offsets({TopicPartition(t, p): spec for t, p in tps},
                                                  isolation_level=IsolationLevel.READ_COMMITTED,
                                                  request_timeout=self.timeout_s)
                for tp, fut in futures.items():
                    out[(tp.topic, tp.partition)][i] = fut.result(timeout=self.timeout_s).offset
            except Exception as exc:
                raise self._fail("the offsets of " + ", ".join(sorted({t for t, _ in tps})), exc) from None
        return {tp: (lo, hi) for tp, (lo, hi) in out.items()}

    def bounds(self, tps: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        """(topic, partition) -> (log start, end) of the committed records, for the partitions given."""
        return self._list_offsets(tps)

    def end_offsets(self, topics: dict[str, int]) -> dict[tuple[str, int], tuple[int, int]]:
        """(topic, partition) -> (log start, end) of the committed records (read_committed end offset)."""
        return self._list_offsets([(t, p) for t, n in sorted(topics.items()) for p in range(n)])

    def _consumer(self) -> Consumer:
        """A read_committed reader; its reads ``consume`` with a short timeout: ``consume`` returns at its
        count or its timeout, so a long one costs each read of a few records that whole timeout."""
        return Consumer(self.settings.confluent(**{
            "group.id": "kmigrate-mirror-reader", "enable.auto.commit": False, "isolation.level": "read_committed",
            "enable.partition.eof": True, "auto.offset.reset": "earliest", "logger": LIBRDKAFKA_LOG}))

    def read_topic(self, topic: str, last: int | None = None) -> list[tuple[bytes | None, bytes | None]]:
        """Every committed record (key, value) of ``topic`` from its start (``last``: only from that
        many offsets before the end of each partition) to its current end, in order per partition;
        ``[]`` when the topic does not exist."""
        import time

        from confluent_kafka import KafkaError

        partitions = self.topic_partitions().get(topic)
        if not partitions:
            return []
        bounds = self._list_offsets([(topic, p) for p in range(partitions)])
        if last is not None:
            bounds = {tp: (max(lo, hi - last), hi) for tp, (lo, hi) in bounds.items()}
        todo = {p: hi for (_, p), (lo, hi) in bounds.items() if hi > lo}
        if not todo:
            return []
        consumer = self._consumer()
        records: list[tuple[bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 4 * self.timeout_s
        try:
            consumer.assign([TopicPartition(topic, p, bounds[(topic, p)][0]) for p in todo])
            while todo:
                if time.monotonic() > deadline:
                    raise StepFailed(f"reading {topic} of the {self.role} cluster stalled: partitions {sorted(todo)} "
                                     "not read to their end")
                for msg in consumer.consume(1000, timeout=0.1):
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            todo.pop(msg.partition(), None)
                            continue
                        raise StepFailed(f"cannot read {topic} of the {self.role} cluster: {err}")
                    if msg.partition() in todo:
                        records.append((msg.key(), msg.value()))
                        if msg.offset() + 1 >= todo[msg.partition()]:
                            todo.pop(msg.partition())
        finally:
            consumer.close()
        return records

    def next_record_times(self, starts: dict[tuple[str, int], int],
                          ends: dict[tuple[str, int], int]) -> dict[tuple[str, int], int | None]:
        """(topic, partition) -> the timestamp (ms) of the first committed record at or after ``starts``,
        or ``None`` when there is none before ``ends`` (only transaction markers or aborted records
        there: a read_committed consumer reaches the end with nothing). A partition not read in time
        is left out."""
        import time

        from confluent_kafka import KafkaError

        if not starts:
            return {}
        consumer = self._consumer()
        todo = set(starts)
        out: dict[tuple[str, int], int | None] = {}
        deadline = time.monotonic() + 2 * self.timeout_s
        try:
            consumer.assign([TopicPartition(t, p, o) for (t, p), o in starts.items()])
            while todo and time.monotonic() < deadline:
                for msg in consumer.consume(500, timeout=0.1):
                    tp = (msg.topic(), msg.partition())
                    if tp not in todo:
                        continue
                    err = msg.error()
                    if err is None:
                        todo.discard(tp)  # a record to copy: real lag
                        out[tp] = msg.timestamp()[1]
                    elif err.code() == KafkaError._PARTITION_EOF:
                        todo.discard(tp)
                        if msg.offset() >= ends[tp]:
                            out[tp] = None
        finally:
            consumer.close()
        return out

    def without_records(self, starts: dict[tuple[str, int], int], ends: dict[tuple[str, int], int]) -> set[tuple[str, int]]:
        """The partitions with nothing but transaction markers or aborted records between ``starts`` and ``ends``."""
        return {tp for tp, ts in self.next_record_times(starts, ends).items() if ts is None}

    def committed_offsets(self, group: str, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """(topic, partition) -> the group's committed offset (partitions without a commit are absent)."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p) for t, p in tps] or None)
        try:
            result = self.admin.list_consumer_group_offsets([request], request_timeout=self.timeout_s)[group].result(
                timeout=self.timeout_s)
        except Exception as exc:
            raise self._fail(f"the offsets of group {group}", exc) from None
        return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}

    def group_members(self, group: str) -> GroupMembers:
        """A consumer group's state (``EMPTY``, ``STABLE``, ``DEAD`` ...), its members as ``client-id@host``
        (``DEAD`` with none: the group does not exist there) and who owns each partition."""
        try:
            desc = self.admin.describe_consumer_groups([group], request_timeout=self.timeout_s)[group].result(
                timeout=self.timeout_s)
        except Exception as exc:
            raise self._fail(f"the state of group {group}", exc) from None
        owners: dict[tuple[str, int], tuple[str, str]] = {}
        for m in desc.members:
            for tp in (m.assignment.topic_partitions if m.assignment else []):
                owners[(tp.topic, tp.partition)] = (m.member_id, m.client_id)
        return GroupMembers(getattr(desc.state, "name", str(desc.state)),
                            sorted(f"{m.client_id}@{m.host.lstrip('/')}" for m in desc.members), owners)

    def count_records(self, ranges: dict[tuple[str, int], tuple[int, int]]) -> dict[tuple[str, int], int]:
        """(topic, partition) -> the committed records a read_committed consumer reads from ``start``
        to ``end`` (offsets are not dense: transaction markers, aborted records, compaction)."""
        import time

        from confluent_kafka import KafkaError

        counts = {tp: 0 for tp in ranges}
        todo = {tp for tp, (lo, hi) in ranges.items() if hi > lo}
        if not todo:
            return counts
        consumer = self._consumer()
        deadline = time.monotonic() + 4 * self.timeout_s
        try:
            consumer.assign([TopicPartition(t, p, ranges[(t, p)][0]) for t, p in sorted(todo)])
            while todo:
                if time.monotonic() > deadline:
                    raise StepFailed(f"counting records of the {self.role} cluster stalled: "
                                     + ", ".join(f"{t}-{p}" for t, p in sorted(todo)) + " not read to their end")
                for msg in consumer.consume(1000, timeout=0.1):
                    tp = (msg.topic(), msg.partition())
                    if tp not in todo:
                        continue
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            todo.discard(tp)
                            continue
                        raise StepFailed(f"cannot read {tp[0]}-{tp[1]} of the {self.role} cluster: {err}")
                    if msg.offset() < ranges[tp][1]:
                        counts[tp] += 1
                    if msg.offset() + 1 >= ranges[tp][1]:
                        todo.discard(tp)
        finally:
            consumer.close()
        return counts

    def cluster_id(self) -> str:
        try:
            return str(self.admin.describe_cluster(request_timeout=self.timeout_s).result(timeout=self.timeout_s).cluster_id)
        except Exception as exc:
            raise self._fail("the cluster id", exc) from None

    def broker_ids(self) -> list[int]:
        try:
            return sorted(self.admin.list_topics(timeout=self.timeout_s).brokers)
        except Exception as exc:
            raise self._fail("the metadata", exc) from None
