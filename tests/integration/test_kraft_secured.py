"""Issue 30, a secured native KRaft cluster moved to new machines as the least-privileged ``kmigrate`` user.

One lean ``sandbox up --kraft --security sasl_ssl`` (Kafka 4.4.0): controller 3000 the one voter, spare controller
3001 an observer, broker 1 and spare broker 2 (empty); brokers on SASL_SSL with SCRAM-SHA-512 (inter-broker too),
controllers on SASL_SSL with PLAIN, StandardAuthorizer everywhere, the ``kmigrate`` user holding only the sandbox's
ACLs. A topic of 2 partitions on broker 1 (200 records, written as ``client``). Then, each a kmigrate subprocess with
the files ``sandbox env`` names: ``verify snapshot``; the broker move (``partitions --mapping 1:2``, broker 1
stopped, ``brokers unregister``); broker 2 rolled to both controllers; the controller move (``controllers --add 3001
--remove 3000``, the old one stopped after its removal); ``canary`` a few seconds; ``verify compare`` clean. Last: no
sandbox password in any output, file the runs wrote, or command line seen while they ran.
"""

from __future__ import annotations

import json
import shlex
import sys
import threading
from contextlib import ExitStack, contextmanager
from typing import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from migrate.adapters.kafka import voters as kv
from migrate.sandbox.kraft_cluster import KraftCluster

from test_controllers import address, kraft_sandbox
from test_security import Runs

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

KAFKA = "4.4.0"
TOPIC = "secured-orders"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return Runs(tmp_path_factory.mktemp("kraft-secured"))


@contextmanager
def sampling(runs: Runs) -> Iterator[None]:
    """The process table sampled into ``runs.command_lines`` meanwhile (the format commands of ``sandbox up``)."""
    stop = threading.Event()
    sampler = threading.Thread(target=runs._sample, args=(stop,), daemon=True)
    sampler.start()
    try:
        yield
    finally:
        stop.set()
        sampler.join()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, runs):
    with ExitStack() as stack:
        with sampling(runs):  # the format commands' lines too
            sandbox = stack.enter_context(kraft_sandbox(tmp_path_factory.mktemp("kraft-secured-sandbox"), (3000,),
                                                        (3001,), (1,), KAFKA, spare_brokers=(2,), security="sasl_ssl"))
        bs = sandbox.bootstrap_servers()
        admin = AdminClient({**sandbox.kafka_settings("admin"), "bootstrap.servers": bs})
        admin.create_topics([NewTopic(TOPIC, 2, replica_assignment=[[1], [1]])])[TOPIC].result(timeout=60)
        p = Producer({**sandbox.kafka_settings("client"), "bootstrap.servers": bs, "acks": "all"})
        for i in range(200):
            p.produce(TOPIC, key=str(i).encode(), value=b"x" * 100, partition=i % 2)
        assert p.flush(60) == 0
        yield sandbox


@pytest.fixture(scope="module")
def env(cluster, runs):
    """``sandbox env``'s exports (paths only)."""
    r = runs.kmigrate("sandbox", "env", "--dir", str(cluster.dir))
    assert r.returncode == 0, r.stderr[-2000:]
    return dict(line[len("export "):].split("=", 1) for line in r.stdout.splitlines() if line.startswith("export "))


def _ok(r, *words: str) -> None:
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    assert all(w in r.stdout + r.stderr for w in words), (r.stdout[-2000:], r.stderr[-2000:])


def test_the_authorizer_holds_the_sandbox_acls_and_the_controllers_take_plain_logins(cluster, env):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    from migrate.errors import BadInput
    from migrate.files import client_settings

    every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
    bs = cluster.bootstrap_servers()
    as_kmigrate, as_client = (AdminClient({**cluster.kafka_settings(u), "bootstrap.servers": bs}) for u in ("kmigrate", "client"))
    assert {a.principal for a in as_kmigrate.describe_acls(every).result(30)} == {"User:kmigrate", "User:client"}
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):  # client: no DESCRIBE_CONFIGS there
        as_client.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "1")])[
            ConfigResource(ConfigResource.Type.BROKER, "1")].result(30)
    controller = address(cluster, 3000)
    kmigrate = client_settings(controller, env["KMIGRATE_CONTROLLER_COMMAND_CONFIG"])
    assert kv.read_quorum([controller], kmigrate)[1].voter_ids == (3000,)
    with pytest.raises(BadInput, match="refused kmigrate's login"):  # the SCRAM file is the brokers' listener's
        kv.read_quorum([controller], client_settings(controller, env["KMIGRATE_COMMAND_CONFIG"]))


def test_broker_move_as_the_kmigrate_user(cluster, env, runs):
    cc, ccc = env["KMIGRATE_COMMAND_CONFIG"], env["KMIGRATE_CONTROLLER_COMMAND_CONFIG"]
    both = cluster.spec.bootstrap_servers(spare=None)
    _ok(runs.kmigrate("verify", "snapshot", "-o", str(runs.work / "before.json"), "--bootstrap-server", both,
                      "--command-config", cc, "--topic", TOPIC, "--master", "local[1]"))
    _ok(runs.kmigrate("partitions", "--bootstrap-server", both, "--command-config", cc, "--mapping", "1:2",
                      "--throttle", "20MB/s", "-O", "json"))
    cluster.stop("kafka-1")
    r = runs.kmigrate("brokers", "unregister", "--broker-list", "1", "--bootstrap-server",
                      cluster.spec.bootstrap_servers(spare=True), "--bootstrap-controller", address(cluster, 3000),
                      "--command-config", cc, "--controller-command-config", ccc, "-O", "json")
    _ok(r)
    assert json.loads(r.stdout)["unregistered"] == [1], r.stdout


def test_controller_move_as_the_kmigrate_user(cluster, env, runs):
    both = f"{address(cluster, 3000)},{address(cluster, 3001)}"
    _ok(runs.kmigrate("sandbox", "restart-broker", "2", "--controller-quorum-bootstrap-servers", both,
                      "--dir", str(cluster.dir)))
    stop = f"{shlex.quote(sys.executable)} -m migrate sandbox stop controller-{{id}} --dir {shlex.quote(str(cluster.dir))}"
    r = runs.kmigrate("controllers", "--add", "3001", "--remove", "3000", "--bootstrap-controller", both,
                      "--bootstrap-server", cluster.spec.bootstrap_servers(spare=True),
                      "--command-config", env["KMIGRATE_COMMAND_CONFIG"],
                      "--controller-command-config", env["KMIGRATE_CONTROLLER_COMMAND_CONFIG"],
                      "--kafka-version", KAFKA, "--stop-command", stop)
    _ok(r, "moved")
    view = KraftCluster(cluster).quorum()
    assert view.voter_ids == (3001,) and view.leader_id == 3001 and not cluster.is_alive("controller-3000")


def test_canary_then_verify_compare_clean(cluster, env, runs):
    cc, bs = env["KMIGRATE_COMMAND_CONFIG"], cluster.spec.bootstrap_servers(spare=True)
    report = runs.work / "canary.json"
    _ok(runs.kmigrate("canary", "--bootstrap-server", bs, "--command-config", cc, "--topic", "kraft-canary",
                      "--rate", "50", "--duration", "3s", "--report", str(report), "--report-interval", "1s"))
    doc = json.loads(report.read_text())
    assert doc["ok"] is True and doc["lost"] == 0 and doc["acknowledged"] > 0, doc
    r = runs.kmigrate("verify", "compare", str(runs.work / "before.json"), "--bootstrap-server", bs,
                      "--command-config", cc, "--master", "local[1]", "--output", "json")
    _ok(r)
    out = json.loads(r.stdout)
    assert out["ok"] and out["summary"]["partitions"] == 2 and out["summary"]["differing_partitions"] == 0, out
    assert sum(p["after"]["records"] for p in out["partitions"]) == 200


def test_no_sandbox_secret_in_any_output_file_or_command_line(cluster, runs):
    sec = cluster.security
    secrets = sec.secret_values()
    assert len(secrets) >= 4 and all(len(s) >= 16 for s in secrets)
    assert sec.password("kmigrate") in sec.controller_properties_file("kmigrate").read_text()  # the real needles
    texts = list(runs.texts)
    texts += [(f"command line: {line[:80]}", line) for line in runs.command_lines]
    assert any("kafka.Kafka" in line for line in runs.command_lines), "ps saw no Kafka JVM"
    formats = [line for line in runs.command_lines if line.endswith("format.args")]  # java @argument-file
    assert formats, "ps saw no kafka-storage format of a controller"
    for path in runs.work.rglob("*"):
        if path.is_file():
            texts.append((str(path.relative_to(runs.work)), path.read_bytes().decode("utf-8", "replace")))
    for path in cluster.dir.rglob("server.log*"):  # the servers log their configs, passwords hidden
        texts.append((str(path.relative_to(cluster.dir)), path.read_bytes().decode("utf-8", "replace")))
    assert not list(cluster.dir.rglob("format.args")), "the format's argument file was left behind"
    hits = [(name, i) for name, text in texts for i, secret in enumerate(secrets) if secret in text]
    assert hits == [], f"secrets found in: {sorted({name for name, _ in hits})}"
