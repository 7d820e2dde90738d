"""Kafka adapter: admin calls through confluent-kafka, and kafka-python for the KIP-455 calls and log dirs.

Every call has a timeout; an unreachable cluster is a ``BadInput`` with the address, not a hang.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
import time
from contextlib import contextmanager
from typing import Iterator

from confluent_kafka.admin import AdminClient, ConfigResource

from migrate.adapters import LIBRDKAFKA_LOG
from migrate.core.clientconfig import ClientSettings
from migrate.errors import BadInput

log = logging.getLogger("kmigrate.kafka")


# Settings for a producer whose acknowledgements are trusted (the bookkeeping writer, the canary):
# idempotent, acks=all, and one produce request in flight per broker. With several in flight,
# librdkafka (2.16 here) can report records as delivered that were never written: the first requests
# to a partition whose leader does not know it yet (a topic just created, a leader just elected) fail
# with UNKNOWN_TOPIC_OR_PART or NOT_LEADER_OR_FOLLOWER; a later request already on the wire succeeds,
# the broker (no state yet for that producer id on the partition) taking its batch as the producer's
# first; librdkafka then counts the failed batches as "implicitly acked by subsequent batch success".
# Seen on a just-created bookkeeping topic in 1 fresh cluster of 8 (the plan record and a write-ahead
# throttle record acknowledged, not in the log); reported for Go as confluent-kafka-go issue 921.
# With one in flight, a later request waits unsent and is taken back when an earlier one fails.
TRUSTED_PRODUCER = {"acks": "all", "enable.idempotence": True, "max.in.flight.requests.per.connection": 1}


@contextmanager
def _private_file(text: str) -> Iterator[str]:
    """A path whose content is ``text`` for the time of the ``with``: an anonymous memory file on Linux
    (never on disk), elsewhere a temporary file of mode 0600 removed on leaving (error and Ctrl-C too)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("kmigrate-client-key", os.MFD_CLOEXEC)
        try:
            os.write(fd, text.encode())
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    fd, path = tempfile.mkstemp(prefix="kmigrate-client-key-", suffix=".pem")  # mode 0600
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        yield path
    finally:
        os.unlink(path)


def ssl_context(settings: ClientSettings) -> ssl.SSLContext:
    """The TLS context of ``settings`` for kafka-python, which cannot take PEM text: CA certificates are
    loaded from memory; the key and its chain through :func:`_private_file`, gone once loaded."""
    ca, chain, key = settings.tls_pem()
    s = settings.settings
    ctx = ssl.create_default_context(cadata=ca) if ca else ssl.create_default_context(cafile=s.get("ssl.ca.location"))
    ctx.check_hostname = settings.check_hostname
    if s.get("enable.ssl.certificate.verification", "true").lower() == "false":
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if chain and key:
        with _private_file(key + chain) as path:
            ctx.load_cert_chain(path)
    elif "ssl.certificate.location" in s:
        ctx.load_cert_chain(s["ssl.certificate.location"], s.get("ssl.key.location"), s.get("ssl.key.password"))
    return ctx


def kafka_python_config(settings: ClientSettings, **extra: object) -> dict[str, object]:
    """kafka-python keyword arguments of ``settings``, with an ``ssl_context`` when its TLS material is in memory."""
    kw = settings.kafka_python(**extra)
    if any(settings.tls_pem()):
        kw["ssl_context"] = ssl_context(settings)
    return kw


def admin_client(settings: ClientSettings, timeout_s: float = 10.0) -> AdminClient:
    """A confluent-kafka AdminClient that has answered a metadata request (BadInput when unreachable)."""
    watch = _AuthenticationWatch(settings.bootstrap_servers)
    admin = AdminClient(settings.confluent(logger=LIBRDKAFKA_LOG, error_cb=watch))
    deadline = time.monotonic() + timeout_s
    while True:  # a second at a time: librdkafka retries a refused login forever; the error callback tells
        left = deadline - time.monotonic()
        try:
            admin.list_topics(timeout=max(0.1, min(1.0, left)))
            watch.done = True
            return admin
        except Exception as exc:  # KafkaException on timeout or auth failure
            admin.poll(0)  # serves the error callback
            if watch.failure is not None:
                watch.done = True
                raise BadInput(watch.failure) from None
            if left <= 1.0:
                watch.done = True
                raise BadInput(
                    f"cannot reach Kafka at {settings.bootstrap_servers} within {timeout_s:.0f} s ({exc}): "
                    "check --bootstrap-server and --command-config"
                ) from None


class _AuthenticationWatch:
    """librdkafka's error callback while a client first connects: keeps the first error no retry cures
    (:func:`migrate.core.clientconfig.authentication_failure`); afterwards (``done``) ignores all."""

    def __init__(self, bootstrap_servers: str):
        self.bootstrap_servers = bootstrap_servers
        self.failure: str | None = None
        self.done = False

    def __call__(self, err) -> None:
        from migrate.core.clientconfig import authentication_failure

        if not self.done and self.failure is None:
            self.failure = authentication_failure(err.name(), err.str(), self.bootstrap_servers)


def broker_static_configs(admin: AdminClient, broker_ids: list[int], names: tuple[str, ...],
                          timeout_s: float = 15.0) -> dict[int, dict[str, str | None]]:
    """The named configs of each broker as the broker reports them (``zookeeper.connect`` is static).

    >>> broker_static_configs(admin, [1, 2], ("zookeeper.connect", "broker.rack"))  # doctest: +SKIP
    {1: {"zookeeper.connect": "zk1:2181/kafka", "broker.rack": "AD-1/FD-1"}, ...}
    """
    out: dict[int, dict[str, str | None]] = {}
    for b in broker_ids:  # librdkafka takes one BROKER resource per call
        futures = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, str(b))], request_timeout=timeout_s)
        for resource, future in futures.items():
            entries = future.result(timeout=timeout_s)
            out[int(resource.name)] = {n: (entries[n].value if n in entries else None) for n in names}
    return out


def live_broker_ids(admin: AdminClient, timeout_s: float = 10.0) -> list[int]:
    """Ids of the brokers in the cluster's metadata (the brokers that are up)."""
    return sorted(admin.list_topics(timeout=timeout_s).brokers)


# ====================================================================== partition moves (issue 5)
# Reassignments (KIP-455) and log-dir sizes through kafka-python (librdkafka lacks them);
# metadata, configs (incremental, for throttles) and leader elections through confluent-kafka.

import tenacity  # noqa: E402

from migrate.errors import StepFailed  # noqa: E402
from migrate.core.model import Broker, Partition, Topic  # noqa: E402
from migrate.core.partitions.moves import InFlight  # noqa: E402


def transient_error(exc: BaseException) -> bool:
    """Errors worth another try: controller moved, timeouts, a broker not ready yet."""
    import kafka.errors as kerr
    from confluent_kafka import KafkaException

    names = ("NotControllerError", "RequestTimedOutError", "KafkaTimeoutError", "NodeNotReadyError",
             "KafkaConnectionError", "NoBrokersAvailable", "LeaderNotAvailableError")
    if isinstance(exc, tuple(getattr(kerr, n) for n in names if hasattr(kerr, n))):
        return True
    if isinstance(exc, KafkaException):
        from confluent_kafka import KafkaError

        err = exc.args[0] if exc.args else None
        # a request that timed out (a broker died under it) is worth another, to another broker
        local = (KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError.REQUEST_TIMED_OUT)
        if isinstance(err, KafkaError) and err.code() in local:
            return True
        return bool(getattr(err, "retriable", lambda: False)())
    return False


ADMIN_RETRY = tenacity.retry(
    retry=tenacity.retry_if_exception(transient_error),
    stop=tenacity.stop_after_attempt(5),
    wait=tenacity.wait_exponential(multiplier=0.5, max=5),
    reraise=True,
)
"""Named retry policy for admin calls of the partition mover (transient errors only, 5 tries)."""


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

        from kafka.admin import KafkaAdminClient

        out: dict[int, str] = {}
        for b, address in sorted(addresses.items()):
            client = None
            try:
                client = KafkaAdminClient(**kafka_python_config(
                    replace(self.settings, bootstrap_servers=address),
                    request_timeout_ms=int(self.timeout_s * 1000), client_id="kmigrate"))
                release = client._client.check_version()
            except Exception as exc:  # kafka-python raises several kinds; the release is then unknown
                log.debug("ApiVersions of broker %s at %s failed: %s", b, address, exc)
                continue
            finally:
                if client is not None:
                    client.close()
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


# ====================================================================== topics created and led
# One rule for "every partition has a leader" and one helper for create-then-wait (the bookkeeping
# topic, the canary topic, the demo's topics, ``kmigrate topics create``).

from dataclasses import dataclass, field  # noqa: E402
from typing import Callable, Iterable, Mapping  # noqa: E402


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


# ====================================================================== cluster health (issue 16)


def read_cluster_health(admin: AdminClient, timeout_s: float = 10.0):
    """One look at the cluster for ``kmigrate health``: the controller and registered brokers from
    describe_cluster, every topic's replicas, ISR and leader from the metadata
    (a :class:`migrate.core.health.ClusterReading`). A cluster that does not answer (a broker
    restarting under the request) is a reading with ``error`` set, never an exception."""
    from migrate.core.health import ClusterReading

    try:
        desc = admin.describe_cluster(request_timeout=timeout_s).result(timeout=timeout_s)
        md = admin.list_topics(timeout=timeout_s)
    except Exception as exc:  # KafkaException: timeout, transport, all brokers down
        return ClusterReading.unreachable(str(exc) or type(exc).__name__)
    controller = desc.controller.id if desc.controller is not None and desc.controller.id >= 0 else None
    topics = tuple(
        Topic(name=name, internal=name.startswith("__"), partitions=tuple(
            Partition(p.id, tuple(p.replicas), tuple(p.isrs), p.leader if p.leader >= 0 else None)
            for p in sorted(t.partitions.values(), key=lambda x: x.id)))
        for name, t in sorted(md.topics.items()) if t.partitions
    )
    return ClusterReading(controller_id=controller, brokers=frozenset(n.id for n in desc.nodes), topics=topics)


# ====================================================================== authorisation (issue 18)
# What the brokers grant kmigrate's principal, read before any change (see migrate.core.permissions).

_AUTH_CODES = ("TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED")


def _ops(operations) -> frozenset[str] | None:
    """KIP-430 operations as names; None when the broker did not say (no authorizer answer, old broker)."""
    if operations is None:
        return None
    return frozenset(op.name for op in operations)


def _error_code_name(exc: BaseException) -> str:
    err = exc.args[0] if getattr(exc, "args", None) else None
    name = getattr(err, "name", None)
    return name() if callable(name) else str(exc)


def refused_by_authorizer(exc: BaseException) -> bool:
    """True when ``exc`` is the brokers refusing a right (topic, cluster or group authorization failed)."""
    return _error_code_name(exc) in _AUTH_CODES


def authorized_operations(admin: AdminClient, topics: Iterable[str] = (), groups: Iterable[str] = (),
                          timeout_s: float = 15.0) -> dict:
    """Resource -> the operation names the broker says the principal may perform (KIP-430), for the
    cluster, each existing topic and each group; None where the broker did not say. A topic the
    principal may not even describe maps to an empty set; a topic that does not exist is left out.
    The cluster's operations come only to a principal with DESCRIBE on it: no answer for the cluster
    while topics or groups are answered for means none is granted."""
    from confluent_kafka import TopicCollection

    from migrate.core.permissions import Resource

    out: dict = {}
    try:
        desc = admin.describe_cluster(include_authorized_operations=True, request_timeout=timeout_s).result(timeout=timeout_s)
        out[Resource.cluster()] = _ops(desc.authorized_operations)
    except Exception as exc:
        if refused_by_authorizer(exc):
            out[Resource.cluster()] = frozenset()
        else:
            raise
    names = sorted(set(topics))
    if names:
        futures = admin.describe_topics(TopicCollection(names), include_authorized_operations=True,
                                        request_timeout=timeout_s)
        for name, fut in futures.items():
            try:
                out[Resource.topic(name)] = _ops(fut.result(timeout=timeout_s).authorized_operations)
            except Exception as exc:
                code = _error_code_name(exc)
                if code in _AUTH_CODES:
                    out[Resource.topic(name)] = frozenset()
                elif code not in ("UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC_OR_PARTITION"):
                    raise
    group_ids = sorted(set(groups))
    if group_ids:
        futures = admin.describe_consumer_groups(group_ids, include_authorized_operations=True,
                                                 request_timeout=timeout_s)
        for gid, fut in futures.items():
            try:
                out[Resource.group(gid)] = _ops(fut.result(timeout=timeout_s).authorized_operations)
            except Exception as exc:
                if refused_by_authorizer(exc):
                    out[Resource.group(gid)] = frozenset()
                elif "is not a consumer group" not in str(exc):
                    raise
                # a group of another protocol (Kafka Connect's workers) is not described by librdkafka:
                # left unchecked
    if out.get(Resource.cluster(), frozenset()) is None and any(v is not None for v in out.values()):
        # brokers (2.4+) answer KIP-430; for the cluster only to a principal that may describe it
        out[Resource.cluster()] = frozenset()
    return out


def may_describe_missing_topic(admin: AdminClient, topic: str, timeout_s: float = 15.0) -> bool | None:
    """Whether the principal may describe a topic that does not exist yet: a metadata request naming it
    (auto-creation off) answers TOPIC_AUTHORIZATION_FAILED when not. None: the topic exists, or no answer."""
    from confluent_kafka import TopicCollection

    fut = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout_s)[topic]
    try:
        fut.result(timeout=timeout_s)
    except Exception as exc:
        code = _error_code_name(exc)
        if code in _AUTH_CODES:
            return False
        if code in ("UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC_OR_PARTITION"):
            return True
    return None


def may_create_topic(admin: AdminClient, topic: str, timeout_s: float = 15.0) -> bool | None:
    """Whether the principal may create ``topic``: a validate-only CreateTopics, authorised by the broker
    as a real one (cluster CREATE, or topic CREATE by a literal or prefixed ACL) and then forgotten.
    None when the answer is about something else (the topic exists, a policy): not an authorisation."""
    from confluent_kafka.admin import NewTopic

    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)], validate_only=True,
                                  request_timeout=timeout_s)
    try:
        futures[topic].result(timeout=timeout_s)
    except Exception as exc:
        return False if refused_by_authorizer(exc) else None
    return True


def acls_naming(admin: AdminClient, resources: Iterable, timeout_s: float = 15.0) -> list | None:
    """Every ACL binding that applies to each resource (a :class:`migrate.core.permissions.Resource`):
    literal, wildcard and prefixed, any principal (DescribeAcls with the MATCH pattern type). None when
    the principal may not describe ACLs (cluster DESCRIBE) or the brokers have no authorizer."""
    from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType,
                                       ResourceType)

    from migrate.core.permissions import Acl

    types = {"cluster": ResourceType.BROKER, "topic": ResourceType.TOPIC, "group": ResourceType.GROUP}
    kinds = {v: k for k, v in types.items()}
    out: set = set()
    for r in sorted(set(resources)):
        f = AclBindingFilter(types[r.kind], r.name, ResourcePatternType.MATCH, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
        try:
            bindings = admin.describe_acls(f, request_timeout=timeout_s).result(timeout=timeout_s)
        except Exception as exc:  # CLUSTER_AUTHORIZATION_FAILED, SECURITY_DISABLED (no authorizer)
            log.debug("cannot list the ACLs of %s: %s", r, exc)
            return None
        for b in bindings:
            out.add(Acl(kinds.get(b.restype, str(b.restype)), b.name, b.resource_pattern_type.name.lower(),
                        b.principal, b.host, b.operation.name, b.permission_type == AclPermissionType.ALLOW))
    return sorted(out, key=repr)
