"""The partition mover's admin client (:class:`ReassignmentAdmin`): metadata, configs (incremental, for
throttles) and leader elections through confluent-kafka; reassignments (KIP-455) and log-dir sizes through
kafka-python (librdkafka lacks them)."""

from __future__ import annotations

import logging
from typing import Callable, Mapping

from confluent_kafka.admin import AdminClient, ConfigResource

from migrate.adapters import LIBRDKAFKA_LOG
from migrate.adapters.kafka.client import admin_client, kafka_python_admin, kafka_python_config
from migrate.adapters.kafka.retry import ADMIN_RETRY
from migrate.adapters.kafka.topics import NewTopicSpec, create_topics_and_wait
from migrate.core.clientconfig import ClientSettings
from migrate.core.model import Broker, Partition, Topic
from migrate.core.partitions.moves import InFlight
from migrate.errors import BadInput, StepFailed

log = logging.getLogger("kmigrate.kafka")


def _error_name(err: object) -> str | None:
    """None for success; the Kafka error name otherwise (kafka-python classes or confluent KafkaError)."""
    if err is None:
        return None
    if isinstance(err, type):
        return err.__name__
    name = getattr(err, "name", None)
    if callable(name):
        return name()
    return str(err)


class ReassignmentAdmin:
    """The cluster as the partition mover sees it: topics, reassignments, throttle configs,
    replica sizes and leader elections. Every method has a timeout; per-item errors are returned
    or raised as :class:`StepFailed`, never ignored."""

    def __init__(self, settings: ClientSettings, timeout_s: float = 30.0):
        self.settings = settings
        self.timeout_s = timeout_s
        self.admin = admin_client(settings, timeout_s=min(timeout_s, 15.0))
        self._kp = None
        # brokers that hide their dynamic rates from DescribeConfigs (Kafka before 2.8), and what reads
        # them elsewhere (ZooKeeper): broker ids -> {name: value}; set by the runner
        self.hidden_rates: frozenset[int] = frozenset()
        self.read_hidden_rates: Callable[[list[int]], dict[int, dict[str, str]]] | None = None

    @property
    def kp(self):
        """kafka-python admin client, made on first use."""
        if self._kp is None:
            from kafka.admin import KafkaAdminClient

            try:
                self._kp = KafkaAdminClient(**kafka_python_config(
                    self.settings, request_timeout_ms=int(self.timeout_s * 1000), client_id="kmigrate"))
            except Exception as exc:
                raise BadInput(f"cannot reach Kafka at {self.settings.bootstrap_servers} with kafka-python ({exc}): "
                               "check --bootstrap-server and --command-config") from None
        return self._kp

    def broker_releases(self, addresses: Mapping[int, str]) -> dict[int, str]:
        """Each broker's Kafka release as ``major.minor`` (``"2.4"``), told by the API versions it answers
        (ApiVersions, matched by kafka-python against each release's): the protocol names the release, not
        its patch number, and unlike ``inter.broker.protocol.version`` it is not pinned during a rolling
        upgrade. One short client per broker (``addresses``: id -> host:port), bootstrapped on that broker
        alone: a kafka-python client clamps every connection to the version of the broker it bootstrapped
        from. A broker that does not answer is left out."""
        from dataclasses import replace

        out: dict[int, str] = {}
        for b, address in sorted(addresses.items()):
            try:
                with kafka_python_admin(replace(self.settings, bootstrap_servers=address), self.timeout_s) as client:
                    release = client._client.check_version()
            except Exception as exc:  # kafka-python raises several kinds; the release is then unknown
                log.debug("ApiVersions of broker %s at %s failed: %s", b, address, exc)
                continue
            if release:
                out[b] = ".".join(str(n) for n in release[:2])
        return out

    def close(self) -> None:
        if self._kp is not None:
            try:
                self._kp.close()
            except Exception:  # closing is best effort
                pass
            self._kp = None

    # ------------------------------------------------------------------ metadata
    @ADMIN_RETRY
    def _metadata(self, topic: str | None = None):
        from confluent_kafka import KafkaException

        try:
            return self.admin.list_topics(topic=topic, timeout=self.timeout_s)
        except KafkaException:
            # The next try gets a new client. A metadata request was seen timing out (15 s) when
            # the broker it went to was killed under it; a fresh client cannot be waiting on that
            # connection. A precaution: that the old client would have stayed stuck is not shown.
            self.admin = AdminClient(self.settings.confluent(logger=LIBRDKAFKA_LOG))
            raise

    def live_brokers(self) -> dict[int, str]:
        """Broker id -> host:port of every broker the cluster lists as alive."""
        md = self._metadata()
        return {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}

    def controller_id(self) -> int:
        return int(self._metadata().controller_id)

    @ADMIN_RETRY
    def cluster_id(self) -> str | None:
        """The cluster id DescribeCluster gives (ZooKeeper's /cluster/id, or the KRaft metadata's)."""
        desc = self.admin.describe_cluster(request_timeout=self.timeout_s).result(timeout=self.timeout_s)
        return str(desc.cluster_id) if desc.cluster_id else None

    @ADMIN_RETRY
    def brokers(self) -> list:
        """Live brokers as :class:`migrate.core.model.Broker` (id, host, port, rack), sorted by id."""
        desc = self.admin.describe_cluster(request_timeout=self.timeout_s).result(timeout=self.timeout_s)
        return sorted((Broker(n.id, n.host, n.port, n.rack or None) for n in desc.nodes), key=lambda b: b.id)

    def describe(self, names: list[str] | None = None) -> dict[str, Topic]:
        """Topics with their partitions (replicas in order, ISR, leader). ``None``: every topic.
        A topic that does not exist (anymore) is absent from the answer."""
        return self.describe_and_brokers(names)[0]

    def describe_and_brokers(self, names: list[str] | None = None) -> tuple[dict[str, Topic], dict[int, str]]:
        """:meth:`describe` and :meth:`live_brokers` from one metadata answer."""
        md = self._metadata()
        live = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
        out: dict[str, Topic] = {}
        wanted = None if names is None else set(names)
        for name, t in md.topics.items():
            if (wanted is not None and name not in wanted) or t.error is not None:
                continue
            parts = tuple(
                Partition(p.id, tuple(p.replicas), tuple(p.isrs), p.leader if p.leader >= 0 else None)
                for p in sorted(t.partitions.values(), key=lambda x: x.id)
            )
            out[name] = Topic(name=name, internal=name.startswith("__"), partitions=parts)
        return out, live

    # ------------------------------------------------------------------- configs
    @ADMIN_RETRY
    def _describe_configs(self, resources: list) -> dict:
        futures = self.admin.describe_configs(resources, request_timeout=self.timeout_s)
        return {r.name: f.result(timeout=self.timeout_s) for r, f in futures.items()}

    def topic_configs(self, topics: list[str], names: tuple[str, ...], dynamic_only: bool = False) -> dict[str, dict[str, str]]:
        """topic -> {name: value} for the named configs present (``dynamic_only``: set on the topic)."""
        from confluent_kafka.admin import ConfigSource

        out: dict[str, dict[str, str]] = {}
        for i in range(0, len(topics), 100):
            chunk = topics[i:i + 100]
            try:
                got = self._describe_configs([ConfigResource(ConfigResource.Type.TOPIC, t) for t in chunk])
            except Exception:
                got = {}
                for t in chunk:  # one unknown topic fails the batch: ask one by one
                    try:
                        got.update(self._describe_configs([ConfigResource(ConfigResource.Type.TOPIC, t)]))
                    except Exception as exc:
                        if "UNKNOWN_TOPIC" not in str(exc):
                            raise StepFailed(f"cannot read the configs of topic {t}: {exc}") from None
            for t, entries in got.items():
                out[t] = {
                    n: entries[n].value for n in names
                    if n in entries and entries[n].value is not None
                    and (not dynamic_only or entries[n].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
                }
        return out

    def broker_dynamic_configs(self, brokers: list[int], names: tuple[str, ...]) -> dict[int, dict[str, str]]:
        """broker -> {name: value} of the named per-broker dynamic configs that are set.
        A broker that does not answer is absent. One request per broker (librdkafka takes one
        BROKER resource per call), all sent before any answer is awaited. The brokers in
        :attr:`hidden_rates` are read with :attr:`read_hidden_rates` too (what it finds wins)."""
        from confluent_kafka.admin import ConfigSource

        pending = {}
        for b in brokers:
            pending[b] = self.admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, str(b))],
                                                     request_timeout=self.timeout_s)
        out: dict[int, dict[str, str]] = {}
        for b, futures in pending.items():
            try:
                entries = next(iter(futures.values())).result(timeout=self.timeout_s)
            except Exception as exc:
                log.warning("cannot read the dynamic configs of broker %s: %s", b, exc)
                continue
            out[b] = {
                n: entries[n].value for n in names
                if n in entries and entries[n].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
            }
        hidden = sorted(b for b in out if b in self.hidden_rates)
        if hidden and self.read_hidden_rates is not None:
            for b, found in self.read_hidden_rates(hidden).items():
                out[b].update({n: v for n, v in found.items() if n in names})
        return out

    def set_brokers_configs(self, values: dict[int, dict[str, str | None]]) -> dict[int, str]:
        """Per-broker dynamic configs on many brokers at once (one request per broker, sent together):
        a value sets, ``None`` deletes. Returns the brokers that refused or did not answer, with why."""
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

        pending = {}
        for b, configs in values.items():
            res = ConfigResource(ConfigResource.Type.BROKER, str(b), incremental_configs=[
                ConfigEntry(n, v, incremental_operation=AlterConfigOpType.DELETE if v is None else AlterConfigOpType.SET)
                for n, v in configs.items()])
            pending[b] = self.admin.incremental_alter_configs([res], request_timeout=self.timeout_s)
        failed: dict[int, str] = {}
        for b, futures in pending.items():
            try:
                next(iter(futures.values())).result(timeout=self.timeout_s)
            except Exception as exc:
                failed[b] = str(exc)
        return failed

    def alter_topic_configs(self, ops: dict[str, list[tuple[str, str, str | None]]]) -> None:
        """Incremental changes to many topics in one request per 100 topics.

        ``ops``: topic -> [(config, "set" | "append" | "subtract" | "delete", value)], at most one
        operation per config and topic. A topic that no longer exists is skipped; any other
        refusal is a :class:`StepFailed` naming the topic."""
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

        kinds = {"set": AlterConfigOpType.SET, "append": AlterConfigOpType.APPEND,
                 "subtract": AlterConfigOpType.SUBTRACT, "delete": AlterConfigOpType.DELETE}
        items = sorted((t, o) for t, o in ops.items() if o)
        for i in range(0, len(items), 100):
            resources = [
                ConfigResource(ConfigResource.Type.TOPIC, t, incremental_configs=[
                    ConfigEntry(name, value, incremental_operation=kinds[kind]) for name, kind, value in o])
                for t, o in items[i:i + 100]
            ]
            futures = ADMIN_RETRY(self.admin.incremental_alter_configs)(resources, request_timeout=self.timeout_s)
            for res, fut in futures.items():
                try:
                    fut.result(timeout=self.timeout_s)
                except Exception as exc:
                    if "UNKNOWN_TOPIC" in str(exc):
                        continue
                    raise StepFailed(f"cannot change the throttle configs of topic {res.name}: {exc}") from None

    # ------------------------------------------------------------- reassignments
    @ADMIN_RETRY
    def list_reassignments(self) -> dict[tuple[str, int], InFlight]:
        """Every reassignment in flight in the cluster (``ListPartitionReassignments``)."""
        raw = self.kp.list_partition_reassignments(timeout_ms=int(self.timeout_s * 1000))
        return {
            (tp.topic, tp.partition): InFlight(tuple(v["replicas"]), tuple(v["adding_replicas"]), tuple(v["removing_replicas"]))
            for tp, v in raw.items()
        }

    @ADMIN_RETRY
    def alter_reassignments(self, targets: dict[tuple[str, int], tuple[int, ...] | None]) -> dict[tuple[str, int], str | None]:
        """Submit targets (``None`` cancels) and return each partition's error name (``None``: accepted).
        A partition the controller did not answer for is reported as ``NoResponse``."""
        from kafka import TopicPartition

        if not targets:
            return {}
        request = {TopicPartition(t, p): (list(r) if r is not None else None) for (t, p), r in targets.items()}
        raw = self.kp.alter_partition_reassignments(request, timeout_ms=int(self.timeout_s * 1000))
        answers = {(tp.topic, tp.partition): _error_name(err) for tp, err in raw.items()}
        return {key: answers.get(key, "NoResponse") for key in targets}

    # ---------------------------------------------------------------- log dirs
    def replica_sizes(self, brokers: list[int], partitions: dict[str, list[int]]) -> dict[tuple[str, int, int], int]:
        """(topic, partition, broker) -> bytes of that replica (``DescribeLogDirs``), for the given
        brokers. A broker that does not answer is left out (its replicas show no progress)."""
        out: dict[tuple[str, int, int], int] = {}
        if not partitions:
            return out
        for b in brokers:
            try:
                answers = self.kp.describe_log_dirs(topic_partitions={t: list(ps) for t, ps in partitions.items()}, brokers=[b])
            except Exception as exc:
                log.debug("describe_log_dirs on broker %s failed: %s", b, exc)
                continue
            for answer in answers:
                for d in answer.get("log_dirs", ()):
                    if d.get("error_code", 0):
                        continue
                    for t in d.get("topics", ()):
                        for p in t.get("partitions", ()):
                            if p.get("is_future_key"):
                                continue
                            key = (t["name"], int(p["partition_index"]), int(answer["broker"]))
                            out[key] = max(out.get(key, 0), int(p["partition_size"]))
        return out

    def free_disk(self, brokers: list[int]) -> dict[int, float]:
        """Broker -> usable / total bytes of its fullest log dir (``DescribeLogDirs`` asking for no partition: the
        totals alone, Kafka 3.3+, KIP-827). A broker that does not answer, or gives no totals, is left out."""
        out: dict[int, float] = {}
        for b in brokers:
            try:
                answers = self.kp.describe_log_dirs(topic_partitions={}, brokers=[b])
            except Exception as exc:  # noqa: BLE001 - not known this time
                log.debug("describe_log_dirs (totals) on broker %s failed: %s", b, exc)
                continue
            ratios = [int(d["usable_bytes"]) / int(d["total_bytes"]) for answer in answers
                      for d in answer.get("log_dirs", ())
                      if not d.get("error_code", 0) and int(d.get("total_bytes", -1) or -1) > 0
                      and int(d.get("usable_bytes", -1)) >= 0]
            if ratios:
                out[b] = round(min(ratios), 4)
        return out

    # --------------------------------------------------------------- elections
    def elect_preferred(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], str | None]:
        """Preferred leader election; per partition ``None`` when its leader is (now) the first
        replica (``ELECTION_NOT_NEEDED`` counts as success), else the error name."""
        from confluent_kafka import ElectionType
        from confluent_kafka import TopicPartition as CTP

        if not partitions:
            return {}
        try:
            # no request_timeout keyword: confluent-kafka 2.16's binding fails on it ("more argument specifiers")
            result = self.admin.elect_leaders(ElectionType.PREFERRED, [CTP(t, p) for t, p in partitions]).result(
                timeout=self.timeout_s + 5)
        except Exception as exc:
            return {key: f"request failed: {exc}" for key in partitions}
        out: dict[tuple[str, int], str | None] = {}
        for tp, err in result.items():
            name = _error_name(err)
            out[(tp.topic, tp.partition)] = None if name in (None, "ELECTION_NOT_NEEDED", "NO_ERROR") else name
        return out

    def create_topic(self, name: str, assignment: list[list[int]], configs: dict[str, str] | None = None) -> None:
        """Create a topic with replicas assigned by hand, and wait until every partition has a leader."""
        create_topics_and_wait(
            self.admin, [NewTopicSpec(name, assignment, configs or {})], timeout_s=self.timeout_s,
            on_timeout=lambda n: StepFailed(f"topic {n} was created but not every partition has a leader after "
                                            f"{self.timeout_s:.0f} s: check the brokers with kmigrate inspect"))
