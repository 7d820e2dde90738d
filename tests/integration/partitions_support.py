"""Helpers of the ``kmigrate partitions`` integration tests: real topics, real data, the real CLI.

Nothing here mocks Kafka: topics are created with hand-placed replicas on the old brokers, data
is produced with ``acks=all``, ``kmigrate`` runs as a subprocess, and the end state is read back
from the cluster.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
from migrate.adapters.kafka.client import TRUSTED_PRODUCER
from migrate.files import client_settings
from migrate.core.partitions.throttles import BROKER_THROTTLE_CONFIGS, TOPIC_THROTTLE_CONFIGS
from migrate.sandbox.testing import produce_waiting
from cluster_waits import wait_for

OLD = (1, 2, 3)
NEW = (4, 5, 6)
MAPPING = "1:4,2:5,3:6"
BOOKKEEPING = "__kmigrate_migration"
PLAN_ID = "mapping-1.4-2.5-3.6"


def admin(cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers(), "socket.timeout.ms": 10000})


def create_topic(cluster, name: str, assignment: list[list[int]], configs: dict[str, str] | None = None) -> None:
    """Create a topic with replicas placed by hand and wait until every partition has a leader."""
    a = admin(cluster)
    a.create_topics([NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment,
                              config=configs or {})])[name].result(timeout=60)

    def led() -> bool:
        t = a.list_topics(name, timeout=10).topics.get(name)
        return t is not None and t.error is None and len(t.partitions) == len(assignment) and all(
            p.leader >= 0 for p in t.partitions.values())

    wait_for(led, what=f"a leader for every partition of topic {name}", timeout_s=60, interval_s=0.2)


def write_playbook(cluster, path, migration: str = "  throttle: 30MB/s\n"):
    """A playbook for this cluster (mapping 1:4,2:5,3:6), ``migration`` its migration section's lines;
    returns ``path``."""
    path.write_text(
        "kafka:\n"
        f"  bootstrap_servers: \"{cluster.bootstrap_servers()}\"\n"
        "zookeeper:\n"
        f"  connect: \"{cluster.zookeeper_connect()}\"\n"
        "brokers:\n"
        "  mapping: {1: 4, 2: 5, 3: 6}\n"
        "migration:\n" + migration
    )
    return path


def old_assignment(partitions: int, rf: int, shift: int = 0) -> list[list[int]]:
    """Round robin over the old brokers only."""
    return [[OLD[(p + r + shift) % len(OLD)] for r in range(rf)] for p in range(partitions)]


def produce(cluster, topic: str, count: int, size: int = 100, prefix: str = "k") -> set[str]:
    """Produce ``count`` records (unique keys) with acks=all; return the keys acknowledged."""
    acked: set[str] = set()

    def cb(err, msg):
        if err is None:
            acked.add(msg.key().decode())

    p = Producer({"bootstrap.servers": cluster.bootstrap_servers(), **TRUSTED_PRODUCER,
                  "linger.ms": 20, "batch.size": 262144, "compression.type": "none"})
    payload = os.urandom(size // 2).hex().encode()[:size]
    for i in range(count):
        produce_waiting(p, topic, f"{prefix}-{i}".encode(), payload, on_delivery=cb)
        if i % 5000 == 0:
            p.poll(0)
    assert p.flush(120) == 0
    return acked


@dataclass
class BackgroundProducer:
    """Writes to several topics with acks=all for as long as it runs; remembers every key acknowledged."""

    cluster: object
    topics: list[str]
    rate_per_s: int = 200
    acked: dict[str, set[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "BackgroundProducer":
        self._thread.start()
        return self

    def _run(self) -> None:
        p = Producer({"bootstrap.servers": self.cluster.bootstrap_servers(), **TRUSTED_PRODUCER,
                      "linger.ms": 5, "message.timeout.ms": 120000})
        for t in self.topics:
            self.acked[t] = set()

        def cb(err, msg):
            if err is None:
                self.acked[msg.topic()].add(msg.key().decode())
            else:
                self.errors.append(str(err))

        i = 0
        while not self._stop.is_set():
            for t in self.topics:
                p.produce(t, key=f"live-{i}".encode(), value=b"v" * 64, on_delivery=cb)
            i += 1
            p.poll(0)
            time.sleep(1.0 / self.rate_per_s)
        p.flush(120)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(180)


def consume_keys(cluster, topic: str, timeout_s: float = 120) -> set[str]:
    """Every key of the topic, read from the beginning up to the current end of each partition."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers(), "group.id": f"verify-{topic}-{time.time()}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "enable.partition.eof": False})
    try:
        md = c.list_topics(topic, timeout=10).topics[topic]
        ends = {}
        for p in md.partitions:
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if hi > lo:
                ends[p] = hi
        if not ends:
            return set()
        c.assign([TopicPartition(topic, p, 0) for p in ends])
        keys: set[str] = set()
        pos = {p: 0 for p in ends}
        deadline = time.monotonic() + timeout_s
        while any(pos[p] < ends[p] for p in ends):
            assert time.monotonic() < deadline, f"reading {topic} timed out at {pos} of {ends}"
            for m in c.consume(1000, timeout=1.0):
                if m.error():
                    continue
                pos[m.partition()] = max(pos[m.partition()], m.offset() + 1)
                if m.key() is not None:
                    keys.add(m.key().decode())
            for tp in c.position([TopicPartition(topic, p) for p in ends]):
                if tp.offset >= 0:
                    pos[tp.partition] = max(pos[tp.partition], tp.offset)
        return keys
    finally:
        c.close()


def kmigrate(*args: str, env: dict[str, str] | None = None, timeout_s: float = 900) -> subprocess.CompletedProcess:
    """Run the real CLI; stdout is JSON lines when ``-O json`` is given."""
    full_env = dict(os.environ)
    full_env.pop("KMIGRATE_CRASH_AT", None)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "migrate", *args], capture_output=True, text=True,
                          timeout=timeout_s, env=full_env)


def kmigrate_background(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    full_env = dict(os.environ)
    full_env.pop("KMIGRATE_CRASH_AT", None)
    full_env.update(env or {})
    return subprocess.Popen([sys.executable, "-m", "migrate", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=full_env, preexec_fn=_ctrl_c_as_at_a_terminal)


def _ctrl_c_as_at_a_terminal() -> None:
    """In the child: SIGINT back to its default, as a command typed at a terminal has it. A suite started in the
    background of a script (``bash .ci/run &``) runs with SIGINT ignored, which every child inherits: kmigrate
    then rightly ignores Ctrl-C too, and a test of what Ctrl-C does would see a run that went on to the end."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def wait_for_event(proc: subprocess.Popen, predicate, timeout_s: float = 300, seen: list | None = None) -> dict:
    """Read JSON events from a running kmigrate until one matches (or fail)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                raise AssertionError(f"kmigrate exited ({proc.returncode}) before the event: {proc.stderr.read()[-2000:]}")
            continue
        if not line.startswith("{"):
            continue
        e = json.loads(line)
        if seen is not None:
            seen.append(e)
        if predicate(e):
            return e
    raise AssertionError("event not seen in time")


def drain(proc: subprocess.Popen, timeout_s: float = 600, seen: list | None = None) -> int:
    """Read the rest of a running kmigrate's events and wait for it to end; return its exit code.

    Through the same file objects :func:`wait_for_event` read from: ``communicate()`` reads the raw pipes, and the
    lines ``readline`` had already buffered would be lost (events a test then never sees)."""
    rest: dict[str, str] = {}

    def read(name: str, stream) -> None:
        rest[name] = stream.read()

    readers = [threading.Thread(target=read, args=(name, stream), daemon=True)
               for name, stream in (("out", proc.stdout), ("err", proc.stderr))]
    for reader in readers:
        reader.start()
    proc.wait(timeout=timeout_s)  # subprocess.TimeoutExpired, as communicate() raised
    for reader in readers:
        reader.join(60)
    if seen is not None:
        seen.extend(events(rest.get("out", "")))
    proc.stderr_text = rest.get("err", "")  # type: ignore[attr-defined]
    return proc.returncode


# ------------------------------------------------------------------------------------- end state


def topics(cluster) -> dict:
    md = admin(cluster).list_topics(timeout=10)
    return {name: t for name, t in md.topics.items() if t.error is None}


def replicas_on(cluster, brokers, names=None) -> list[str]:
    """Partitions (``topic-p``) with a replica on one of ``brokers``."""
    out = []
    for name, t in topics(cluster).items():
        if names is not None and name not in names:
            continue
        for p in t.partitions.values():
            if set(p.replicas) & set(brokers):
                out.append(f"{name}-{p.id}")
    return sorted(out)


def leaders_not_preferred(cluster, names=None) -> list[str]:
    out = []
    for name, t in topics(cluster).items():
        if names is not None and name not in names:
            continue
        for p in t.partitions.values():
            if p.replicas and p.leader != p.replicas[0]:
                out.append(f"{name}-{p.id}")
    return sorted(out)


def under_replicated(cluster) -> list[str]:
    out = []
    for name, t in topics(cluster).items():
        for p in t.partitions.values():
            if set(p.isrs) != set(p.replicas):
                out.append(f"{name}-{p.id}")
    return sorted(out)


def throttles_left(cluster) -> list[str]:
    """Every throttle config present: broker rates on every broker, throttled replicas on every topic."""
    a = admin(cluster)
    left = []
    brokers = sorted(a.list_topics(timeout=10).brokers)
    for b in brokers:
        res = ConfigResource(ConfigResource.Type.BROKER, str(b))
        entries = a.describe_configs([res])[res].result(timeout=30)
        for name in BROKER_THROTTLE_CONFIGS:
            if name in entries and entries[name].value:
                left.append(f"broker {b} {name}={entries[name].value}")
    names = sorted(topics(cluster))
    resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in names]
    for res, fut in a.describe_configs(resources).items():
        entries = fut.result(timeout=30)
        for name in TOPIC_THROTTLE_CONFIGS:
            if name in entries and entries[name].value:
                left.append(f"topic {res.name} {name}={entries[name].value}")
    return left


def in_flight(cluster) -> dict:
    from kafka.admin import KafkaAdminClient

    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers().split(","))
    try:
        return kp.list_partition_reassignments()
    finally:
        kp.close()


def ledger(cluster, topic: str = BOOKKEEPING):
    return BookkeepingTopic(client_settings(cluster.bootstrap_servers()), topic).read()


def wait_until(predicate, timeout_s: float = 30, what: str = "condition"):
    return wait_for(predicate, what=what, timeout_s=timeout_s)
