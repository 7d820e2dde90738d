"""Issue 18, authorisation and refused connections on a real secured cluster.

One SASL_SSL + SCRAM-SHA-512 sandbox for the module (1 ZooKeeper, brokers 1 and 2, spare 3, AclAuthorizer
with no allow-everyone). The sandbox's ``kmigrate`` user starts with no ACL at all; each test grants it
exactly the rights of :mod:`migrate.core.permissions`' table for a command, less one, and checks that the
command names the missing right, the principal and the ``kafka-acls.sh`` command, exits 2 and changed
nothing (no bookkeeping topic, no throttle, no reassignment, no topic created). The same table, with
nothing left out, is enough for ``partitions`` to move a topic and for ``canary`` to run. A wrong
password, an untrusted certificate and a SASL mechanism the brokers do not enable each end in one line
and exit 2 well within the request timeout. Last, the ZooKeeper swap (voter 1 -> joiner 2, brokers
restarted in between) on this ZooKeeper with SASL for the brokers, ``zookeeper.set.acl`` and a digest
super user: refused without authentication (nothing changed), done with ``--zk-auth-file``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

import javaproperties
import pytest
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   ConfigResource, ResourcePatternType, ResourceType)

from migrate.core.permissions import (CLUSTER_OPERATIONS, Need, Resource, allowed, canary_needs, cancel_needs,
                                      create_topic_needs, partitions_needs, verify_needs)
from migrate.errors import BadInput
from migrate.waiting import poll, wait_until
from migrate.sandbox.testing import running_sandbox, unique_topic

from cli_support import run

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1,), spare_zookeeper_ids=(2,), broker_ids=(1, 2), spare_broker_ids=(3,),
               security="sasl_ssl")
USER = "User:kmigrate"
_TYPES = {"cluster": ResourceType.BROKER, "topic": ResourceType.TOPIC, "group": ResourceType.GROUP}


@pytest.fixture(scope="module")
def cluster():
    with running_sandbox(SANDBOX) as sandbox:
        yield sandbox


ADMIN_CONF: dict = {}


@pytest.fixture(scope="module")
def admin(cluster):
    ADMIN_CONF.update(cluster.client_settings(user="admin").confluent(logger=logging.getLogger("test.admin")))
    return AdminClient(ADMIN_CONF)


@pytest.fixture(scope="module")
def kmigrate_settings(cluster):
    return cluster.client_settings(user="kmigrate")


@pytest.fixture(scope="module")
def props(cluster) -> Path:
    """The kmigrate user's client.properties as Kafka's tools take it (a JKS truststore)."""
    return cluster.security.properties_file("kmigrate")


def _bindings(needs: list[Need]) -> set[tuple]:
    return {(_TYPES[n.resource.kind], n.resource.name, n.operation) for n in needs}


def _acls_now(admin) -> set[tuple]:
    f = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, USER, None, AclOperation.ANY,
                         AclPermissionType.ANY)
    return {(b.restype, b.name, b.operation.name) for b in admin.describe_acls(f, request_timeout=30).result()}


def grant_exactly(admin, kmigrate_settings, needs: list[Need], leave_out: Need | None = None) -> None:
    """The kmigrate user's ACLs become exactly ``needs`` less ``leave_out`` (literal, any host), seen by the brokers."""
    wanted = _bindings([n for n in needs if n != leave_out])
    f = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, USER, None, AclOperation.ANY,
                         AclPermissionType.ANY)
    for fut in admin.delete_acls([f], request_timeout=30).values():
        fut.result()
    if wanted:
        made = [AclBinding(t, name, ResourcePatternType.LITERAL, USER, "*", AclOperation[op], AclPermissionType.ALLOW)
                for t, name, op in sorted(wanted, key=repr)]
        for fut in admin.create_acls(made, request_timeout=30).values():
            fut.result()
    wait_until(lambda: _acls_now(admin) == wanted, timeout_s=30, interval_s=0.2, what="the ACLs")
    _wait_seen(kmigrate_settings, [n for n in needs if n != leave_out], set(admin.list_topics(timeout=10).topics))


_SUPPORTED = {"cluster": CLUSTER_OPERATIONS,
              "topic": ("READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS")}


def _wait_seen(settings, granted: list[Need], existing_names: set[str]) -> None:
    """Until the kmigrate user's own KIP-430 answers show exactly ``granted`` (with what it implies), from each
    broker in turn (a client bootstrapped on it alone), twice round in a row: each broker's authorizer takes
    the change from ZooKeeper on its own."""
    from migrate.adapters.kafka.acls import authorized_operations

    by_resource: dict[Resource, set[str]] = {Resource.cluster(): set()}
    for n in granted:
        by_resource.setdefault(n.resource, set()).add(n.operation)
    row = [0]

    addresses = settings.bootstrap_servers.split(",")

    def seen() -> bool:
        one = replace(settings, bootstrap_servers=addresses[row[0] % len(addresses)])
        client = AdminClient(one.confluent(logger=logging.getLogger("test.kmigrate")))
        topics = [r.name for r in by_resource if r.kind == "topic"]
        got = authorized_operations(client, topics=topics)
        ok = all((got.get(r) or frozenset()) == frozenset(op for op in _SUPPORTED[r.kind] if allowed(op, ops))
                 for r, ops in by_resource.items() if r.kind == "cluster" or r.name in existing_names)
        row[0] = row[0] + 1 if ok else 0
        return row[0] >= 2 * len(addresses)

    wait_until(seen, timeout_s=60, interval_s=0.2, what="the brokers to apply the ACLs")


def _create_old_topic(admin, name: str) -> None:
    from confluent_kafka.admin import NewTopic

    admin.create_topics([NewTopic(name, num_partitions=2, replica_assignment=[[1, 2], [2, 1]])])[name].result()
    wait_until(lambda: name in admin.list_topics(timeout=10).topics, timeout_s=30, interval_s=0.2, what=name)


def _replicas(admin, name: str) -> dict[int, list[int]]:
    # a topic just created may not be in every broker's metadata yet: ask until the answer has it
    md = wait_until(lambda: admin.list_topics(timeout=10).topics.get(name), timeout_s=30, interval_s=0.2, what=name)
    return {p.id: list(p.replicas) for p in md.partitions.values()}


def _throttles(admin, topic: str) -> dict[str, str]:
    """Every throttle config set on the brokers and the topic (dynamic values only)."""
    found = {}
    resources = [ConfigResource(ConfigResource.Type.BROKER, str(b)) for b in (1, 2, 3)]
    resources.append(ConfigResource(ConfigResource.Type.TOPIC, topic))
    for r in resources:
        entries = admin.describe_configs([r], request_timeout=30)[r].result()
        for name, e in entries.items():
            if "throttled" in name and e.value and not e.is_default:
                found[f"{r.name}:{name}"] = e.value
    return found


def _assert_refused(code: int, err: str, need: Need) -> None:
    line = err.strip()
    assert code == 2, err
    assert "\n" not in line and "Traceback" not in line, err
    option = "--cluster" if need.resource.kind == "cluster" else f"--{need.resource.kind} {need.resource.name}"
    assert f"principal {USER} lacks {need.operation} on {need.resource.describe()}" in line, line
    op = {"DESCRIBE_CONFIGS": "DescribeConfigs", "ALTER_CONFIGS": "AlterConfigs"}.get(need.operation, need.operation.title())
    assert f"--add --allow-principal {USER} --operation {op} {option}" in line, line


# ------------------------------------------------------------------ partitions

PARTITION_TOPIC = "acl-orders"
BOOK = "__kmigrate_acl_book"


def _partitions_table() -> list[Need]:
    return partitions_needs([PARTITION_TOPIC], BOOK, bookkeeping_exists=False)


def removable(needs: list[Need]) -> list[Need]:
    """The rights that can be taken away alone: not implied by another of the same resource (ALTER grants
    DESCRIBE, ALTER_CONFIGS grants DESCRIBE_CONFIGS, READ and WRITE grant DESCRIBE)."""
    return [n for n in needs
            if not allowed(n.operation, {m.operation for m in needs if m.resource == n.resource and m != n})]


def _left_out_of_partitions() -> list[Need]:
    # DESCRIBE of the moved topic hides it (nothing matches --topics: exit 2 too, not named)
    return [n for n in removable(_partitions_table()) if n.resource != Resource.topic(PARTITION_TOPIC)
            or n.operation != "DESCRIBE"]


@pytest.mark.parametrize("left_out", _left_out_of_partitions(), ids=lambda n: f"{n.operation}-{n.resource.kind}")
def test_partitions_names_each_missing_right_and_changes_nothing(cluster, admin, kmigrate_settings, props, capsys, left_out):
    if PARTITION_TOPIC not in admin.list_topics(timeout=10).topics:
        _create_old_topic(admin, PARTITION_TOPIC)
    before = _replicas(admin, PARTITION_TOPIC)
    grant_exactly(admin, kmigrate_settings, _partitions_table(), leave_out=left_out)
    code, _out, err = run(capsys, "partitions", "--mapping", "1:3", "--topics", PARTITION_TOPIC,
                          "--bookkeeping-topic", BOOK, "--bootstrap-server", cluster.bootstrap_servers(spare=False),
                          "--command-config", str(props))
    _assert_refused(code, err, left_out)
    assert BOOK not in admin.list_topics(timeout=10).topics, "the bookkeeping topic was created"
    assert _throttles(admin, PARTITION_TOPIC) == {}, _out[-3000:]
    assert _replicas(admin, PARTITION_TOPIC) == before


def test_partitions_moves_the_topic_with_exactly_the_rights_of_the_table(cluster, admin, kmigrate_settings, props, capsys):
    if PARTITION_TOPIC not in admin.list_topics(timeout=10).topics:
        _create_old_topic(admin, PARTITION_TOPIC)
    grant_exactly(admin, kmigrate_settings, _partitions_table())
    code, _out, err = run(capsys, "partitions", "--mapping", "1:3", "--topics", PARTITION_TOPIC,
                          "--bookkeeping-topic", BOOK, "--bootstrap-server", cluster.bootstrap_servers(spare=False),
                          "--command-config", str(props))
    assert code == 0, err
    assert all(1 not in r for r in _replicas(admin, PARTITION_TOPIC).values())
    # removed through ZooKeeper: each broker applies the change when notified, a moment after the answer
    left = poll(lambda: not _throttles(admin, PARTITION_TOPIC), timeout_s=20, interval_s=0.5)
    assert left, (_throttles(admin, PARTITION_TOPIC), _out[-3000:])


# ------------------------------------------------------------------ topics create, canary, verify

@pytest.mark.parametrize("left_out", removable(create_topic_needs("acl-new")), ids=lambda n: n.operation)
def test_topics_create_names_the_missing_right_and_creates_nothing(cluster, admin, kmigrate_settings, props, capsys, left_out):
    grant_exactly(admin, kmigrate_settings, create_topic_needs("acl-new"), leave_out=left_out)
    code, _out, err = run(capsys, "topics", "create", "acl-new", "--partitions", "1", "--replication-factor", "2",
                          "--bootstrap-server", cluster.bootstrap_servers(spare=False), "--command-config", str(props))
    _assert_refused(code, err, left_out)
    assert "acl-new" not in admin.list_topics(timeout=10).topics


CANARY = "acl-canary"


@pytest.mark.parametrize("left_out", removable(canary_needs(CANARY, False)),
                         ids=lambda n: n.operation)
def test_canary_names_the_missing_right_and_creates_nothing(cluster, admin, kmigrate_settings, props, capsys, left_out):
    grant_exactly(admin, kmigrate_settings, canary_needs(CANARY, False), leave_out=left_out)
    code, _out, err = run(capsys, "canary", "--topic", CANARY, "--duration", "2s", "--rate", "20",
                          "--replication-factor", "2", "--bootstrap-server", cluster.bootstrap_servers(spare=False),
                          "--command-config", str(props))
    _assert_refused(code, err, left_out)
    if left_out.operation == "CREATE":
        assert CANARY not in admin.list_topics(timeout=10).topics
    else:
        # READ and WRITE of a topic not created yet are read from the ACLs only with cluster DESCRIBE, which
        # the canary does not need: they are checked right after it creates its topic, before any record
        assert _records(admin, CANARY) == 0
        admin.delete_topics([CANARY])[CANARY].result()
        wait_until(lambda: CANARY not in admin.list_topics(timeout=10).topics, timeout_s=60, interval_s=0.5,
                   what="the canary topic deleted")


def _records(admin, topic: str) -> int:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    md = admin.list_topics(timeout=10).topics.get(topic)
    if md is None:
        return 0
    c = Consumer({**ADMIN_CONF, "group.id": "acl-test"})
    try:  # a client new to a topic just created may not know its partitions yet: ask again
        return wait_until(lambda: (sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                                       for p in md.partitions),),
                          timeout_s=30, interval_s=0.5, what=f"the end offsets of {topic}", retry_on=(KafkaException,))[0]
    finally:
        c.close()


def test_canary_runs_with_exactly_the_rights_of_the_table(cluster, admin, kmigrate_settings, props, capsys):
    grant_exactly(admin, kmigrate_settings, canary_needs(CANARY, False))
    code, out, err = run(capsys, "canary", "--topic", CANARY, "--duration", "2s", "--rate", "20",
                         "--replication-factor", "2", "--bootstrap-server", cluster.bootstrap_servers(spare=False),
                         "--command-config", str(props), "--output", "json")
    assert code == 0, err + out
    assert '"lost": 0' in out


@pytest.mark.parametrize("operation", [n.operation for n in removable(verify_needs(["acl-verified"]))])
def test_verify_snapshot_names_the_missing_right_before_reading(cluster, admin, kmigrate_settings, props, operation):
    """The check runs before Spark is asked to read (``spark`` is never touched: None here)."""
    from migrate.runner.verify import Scope, kafka_side, take_snapshot

    topic = "acl-verified"
    if topic not in admin.list_topics(timeout=10).topics:
        _create_old_topic(admin, topic)
    table = verify_needs([topic])
    left_out = next(n for n in table if n.operation == operation)
    grant_exactly(admin, kmigrate_settings, table, leave_out=left_out)
    side = kafka_side(cluster.bootstrap_servers(spare=False), props, 15000)
    with pytest.raises(BadInput) as refused:
        take_snapshot(side, None, Scope((topic,), None), "2026-01-01T00:00:00Z")
    _assert_refused(2, refused.value.message, left_out)


# ------------------------------------------------------------------ partitions --cancel

CANCEL_TOPIC = "acl-cancelled"
CANCEL_BOOK = "__kmigrate_acl_cancel_book"


def _in_flight(admin_settings) -> set[tuple[str, int]]:
    from migrate.adapters.kafka.admin import ReassignmentAdmin

    ra = ReassignmentAdmin(admin_settings)
    try:
        return set(ra.list_reassignments())
    finally:
        ra.close()


@pytest.fixture(scope="module")
def moving(cluster, admin, kmigrate_settings, props):
    """A move of CANCEL_TOPIC (100 MB, throttled at 1 MB/s: about 100 s) that the kmigrate user started and then died
    right after submitting (KMIGRATE_CRASH_AT=after-submit): in flight, throttled, recorded."""
    import subprocess
    import sys
    import os

    from confluent_kafka import Producer

    _create_old_topic(admin, CANCEL_TOPIC)
    producer = Producer({**ADMIN_CONF, "linger.ms": 20, "batch.size": 1000000, "queue.buffering.max.kbytes": 200000})
    value = b"x" * 100_000
    for i in range(1000):
        producer.produce(CANCEL_TOPIC, key=str(i).encode(), value=value, partition=i % 2)
        producer.poll(0)
    assert producer.flush(60) == 0
    grant_exactly(admin, kmigrate_settings, partitions_needs([CANCEL_TOPIC], CANCEL_BOOK, bookkeeping_exists=False))
    env = {**os.environ, "KMIGRATE_CRASH_AT": "after-submit"}
    done = subprocess.run([sys.executable, "-m", "migrate", "partitions", "--mapping", "1:3", "--topics", CANCEL_TOPIC,
                           "--bookkeeping-topic", CANCEL_BOOK, "--throttle", "1MB/s",
                           "--bootstrap-server", cluster.bootstrap_servers(spare=False), "--command-config", str(props)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == -9, done.stderr  # SIGKILLed by its crash hook once the moves were submitted
    admin_settings = cluster.client_settings(user="admin")
    assert {t for t, _ in _in_flight(admin_settings)} == {CANCEL_TOPIC}, done.stderr
    return admin_settings


def _cancel_table() -> list[Need]:
    return cancel_needs([CANCEL_TOPIC], CANCEL_BOOK)


def _left_out_of_cancel() -> list[Need]:
    # without DESCRIBE of a throttled topic the brokers do not say what may be done to it (unchecked, as for
    # partitions); its config calls need only DESCRIBE_CONFIGS / ALTER_CONFIGS
    return [n for n in removable(_cancel_table()) if (n.resource, n.operation) != (Resource.topic(CANCEL_TOPIC), "DESCRIBE")]


@pytest.mark.parametrize("left_out", _left_out_of_cancel(), ids=lambda n: f"{n.operation}-{n.resource.kind}")
def test_cancel_names_each_missing_right_and_leaves_the_moves_and_throttles(cluster, admin, kmigrate_settings, props,
                                                                            capsys, moving, left_out):
    flights, throttles = _in_flight(moving), _throttles(admin, CANCEL_TOPIC)
    assert flights and throttles
    grant_exactly(admin, kmigrate_settings, _cancel_table(), leave_out=left_out)
    code, _out, err = run(capsys, "partitions", "--cancel", "--bookkeeping-topic", CANCEL_BOOK,
                          "--bootstrap-server", cluster.bootstrap_servers(spare=False), "--command-config", str(props))
    _assert_refused(code, err, left_out)
    assert _in_flight(moving) == flights, "a move was cancelled"
    assert _throttles(admin, CANCEL_TOPIC) == throttles, "a throttle was removed"


def test_cancel_with_exactly_the_rights_of_the_table_reverts_and_removes_the_throttles(
        cluster, admin, kmigrate_settings, props, capsys, moving):
    before = {0: [1, 2], 1: [1, 2]}
    grant_exactly(admin, kmigrate_settings, _cancel_table())
    code, _out, err = run(capsys, "partitions", "--cancel", "--bookkeeping-topic", CANCEL_BOOK,
                          "--bootstrap-server", cluster.bootstrap_servers(spare=False), "--command-config", str(props))
    assert code == 0, err
    assert _in_flight(moving) == set()
    # removed through ZooKeeper: each broker applies the change when notified, a moment after the answer
    assert poll(lambda: not _throttles(admin, CANCEL_TOPIC), timeout_s=20, interval_s=0.5), _throttles(admin, CANCEL_TOPIC)
    # back on the old brokers (Kafka's revert keeps the replica set; its order may change: 1,2 became 2,1)
    assert {p: sorted(r) for p, r in _replicas(admin, CANCEL_TOPIC).items()} == before


# ------------------------------------------------------------------ refused connections

def _variant(props: Path, tmp_path: Path, name: str, change) -> Path:
    with open(props, encoding="utf-8") as f:
        p = dict(javaproperties.load(f))
    change(p)
    out = tmp_path / f"{name}.properties"
    with open(out, "w", encoding="utf-8") as f:
        javaproperties.dump(p, f)
    return out


def _other_ca(tmp_path: Path) -> Path:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "another CA")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    path = tmp_path / "other-ca.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


@pytest.mark.parametrize("case, expect", [
    ("wrong-password", "refused kmigrate's authentication: SASL authentication error"),
    ("wrong-mechanism", "Unsupported SASL mechanism"),
    ("untrusted-certificate", "certificate verify failed"),
])
def test_a_refused_connection_is_one_line_within_the_timeout(cluster, props, tmp_path, capsys, case, expect):
    def change(p: dict) -> None:
        if case == "wrong-password":
            p["sasl.jaas.config"] = p["sasl.jaas.config"].replace('password="', 'password="not-')
        elif case == "wrong-mechanism":
            p["sasl.mechanism"] = "SCRAM-SHA-256"
        else:
            for k in [k for k in p if k.startswith("ssl.truststore.")]:
                del p[k]
            p.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(_other_ca(tmp_path))})

    bad = _variant(props, tmp_path, case, change)
    started = time.monotonic()
    code, _out, err = run(capsys, "status", "--bootstrap-server", cluster.bootstrap_servers(spare=False),
                          "--command-config", str(bad))
    elapsed = time.monotonic() - started
    assert code == 2, err
    assert err.count("\n") == 1 and expect in err and "Traceback" not in err, err
    assert elapsed < 10, f"took {elapsed:.1f} s: the request timeout is 15 s; a refusal should not wait for it"


# ------------------------------------------------------------------ ZooKeeper with ACLs and authentication

def _committed(cluster) -> str:
    return "\n".join(ln for ln in cluster.committed_zookeeper_config().splitlines() if ln.startswith("server."))


def test_zookeeper_swap_through_the_digest_super_user_on_a_zookeeper_with_acls(cluster, admin, capsys):
    spec = cluster.spec
    one, two = spec.zookeepers
    old_connect = f"{one.host}:{one.client_port}"
    both = f"{old_connect},{two.host}:{two.client_port}"
    add = f"2={two.host}:{two.quorum_port}:{two.election_port};{two.host}:{two.client_port}"
    kafka = ["--bootstrap-server", cluster.bootstrap_servers(spare=False),
             "--command-config", str(cluster.security.properties_file("admin"))]
    before = _committed(cluster)

    code, _out, err = run(capsys, "zookeeper", "--zookeeper", old_connect, "--add", add, *kafka)
    assert code == 2 and "may not reconfig (NoAuth)" in err and "nothing was changed" in err, err
    assert _committed(cluster) == before

    auth_file = str(cluster.security.zookeeper_auth_file)
    code, out, err = run(capsys, "zookeeper", "--zookeeper", old_connect, "--add", add, "--zk-auth-file", auth_file, *kafka)
    assert code == 0, err + out
    assert "participant" in _committed(cluster).split("server.2=")[1].splitlines()[0]
    password = auth_file and open(auth_file, encoding="utf-8").read().strip().split(":", 1)[1]
    assert password not in out + err
    for b in (1, 2):
        cluster.restart_broker(b, both, health_timeout_s=120)
    code, out, err = run(capsys, "zookeeper", "--zookeeper", both, "--remove", "1", "--zk-auth-file", auth_file, *kafka)
    assert code == 0, err + out
    assert "server.1=" not in _committed(cluster)
    assert admin.list_topics(timeout=10).brokers, "the brokers lost ZooKeeper"
