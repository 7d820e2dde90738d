"""``kmigrate kraft status`` reaching a KRaft controller whose controller listener is SASL_SSL (issue 29): the
connection is kafka-python's own (``KafkaNetClient``: ApiVersions, TLS, SASL PLAIN), with the operator's
``--controller-command-config``.

One sandbox (1 ZooKeeper server, broker 1 under /kafka) and beside it one real Kafka 3.9.2 controller of its own
quorum (node 3000, formatted with a fresh cluster id, not in migration mode: what is tested is the connection, the
migration itself is test_kraft's), its CONTROLLER listener on SASL_SSL with the sandbox's throwaway CA and PLAIN users
``admin`` (the controller's own) and ``kmigrate``. SCRAM is not offered there: a controller listener cannot use it
(the credentials live in the metadata the controller serves).
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from migrate.adapters.kafka.quorum import controller_configs, describe_quorum_at_controller
from migrate.errors import BadInput
from migrate.files import client_settings, write_private
from migrate.sandbox import security
from migrate.sandbox.launch import port_free
from migrate.sandbox.layout import log4j_properties
from migrate.sandbox.testing import free_ip_prefix, running_sandbox, stop_process
from migrate.waiting import wait_until

from cli_support import run, run_json

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PORT = 9093
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


@pytest.fixture(scope="module")
def sandbox():
    with running_sandbox(dict(zookeeper_ids=(1,), broker_ids=(1,), chroot="/kafka")) as sbx:
        yield sbx


@pytest.fixture(scope="module")
def controller(sandbox, tmp_path_factory):
    """(address, the kmigrate user's client.properties, a wrong one, the controller's home)."""
    home = tmp_path_factory.mktemp("secured-controller")
    host = f"{free_ip_prefix(1)}.1"
    assert port_free(host, PORT)
    sec = security.create("sasl_ssl", home / "security", [(3000, host)])
    store, admin, kmigrate = sec.password("store"), sec.password("admin"), sec.password("kmigrate")
    props = {
        "process.roles": "controller", "node.id": "3000", "controller.quorum.voters": f"3000@{host}:{PORT}",
        "listeners": f"CONTROLLER://{host}:{PORT}", "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:SASL_SSL", "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config":
            f'{PLAIN} required username="admin" password="{admin}" user_admin="{admin}" user_kmigrate="{kmigrate}";',
        "ssl.keystore.location": str(sec.dir / "kafka-3000.keystore.p12"), "ssl.keystore.type": "PKCS12",
        "ssl.keystore.password": store, "ssl.key.password": store,
        "ssl.truststore.location": str(sec.dir / "truststore.jks"), "ssl.truststore.type": "JKS",
        "ssl.truststore.password": store, "log.dirs": str(home / "metadata"),
    }
    write_private(home / "server.properties", "".join(f"{k}={v}\n" for k, v in props.items()))
    (home / "log4j.properties").write_text(log4j_properties(str(home / "server.log")))

    def client(password: str, name: str) -> Path:
        path = home / name
        write_private(path, f"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
                            f'sasl.jaas.config={PLAIN} required username="kmigrate" password="{password}";\n'
                            f"ssl.truststore.location={sec.dir / 'truststore.jks'}\nssl.truststore.type=JKS\n"
                            f"ssl.truststore.password={store}\n")
        return path

    jvm = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", f"-Dlog4j.configuration=file:{home / 'log4j.properties'}"]
    fmt = sandbox.dist.java_command("kafka.tools.StorageTool", ["format", "-t", uuid.uuid4().hex[:22],
                                                                 "-c", str(home / "server.properties")], jvm)
    subprocess.run(fmt, check=True, capture_output=True, timeout=120)
    proc = subprocess.Popen(sandbox.dist.java_command("kafka.Kafka", [str(home / "server.properties")], jvm),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        log = home / "server.log"
        wait_until(lambda: proc.poll() is None and log.exists() and "Kafka Server started" in log.read_text(),
                   timeout_s=90, interval_s=0.5, what="the SASL_SSL controller")
        yield f"{host}:{PORT}", client(kmigrate, "kmigrate.properties"), client("wrong", "wrong.properties"), home
    finally:
        stop_process(proc)


def _status(capsys, sandbox, address: str, *extra: str):
    return run_json(capsys, "kraft", "status", "--zookeeper", sandbox.zookeeper_connect(chroot=True),
                    "--bootstrap-controller", address, *extra)


def test_the_adapter_speaks_sasl_ssl_to_the_controller(controller):
    address, good, wrong, _ = controller
    settings = client_settings(address, good)
    answer = describe_quorum_at_controller(address, 10, settings)
    part = answer["topics"][0]["partitions"][0]
    assert part["leader_id"] == 3000 and [v["replica_id"] for v in part["current_voters"]] == [3000]
    assert controller_configs(address, 3000, ("process.roles",), 10, settings) == {"process.roles": "controller"}
    assert describe_quorum_at_controller(address, 3) is None  # PLAINTEXT against a SASL_SSL listener: no answer
    with pytest.raises(BadInput, match=f"controller {address} refused kmigrate's login"):
        describe_quorum_at_controller(address, 10, client_settings(address, wrong))


def test_status_gate_with_controller_command_config(sandbox, controller, capsys):
    address, good, wrong, _ = controller
    code, doc, err = _status(capsys, sandbox, address, "--controller-command-config", str(good),
                             "--wait-for", "controllers-ready", "--interval", "0.5s", "--timeout", "30s")
    assert code == 0 and doc["gate"]["passed"] and doc["quorum"]["leader_id"] == 3000, (doc, err)
    assert doc["controllers_migration_flag"] == {"3000": False}  # DescribeConfigs over SASL_SSL too


def test_without_the_controller_config_the_gate_says_nobody_answers(sandbox, controller, capsys):
    address, _, _, _ = controller
    code, doc, err = _status(capsys, sandbox, address, "--wait-for", "controllers-ready", "--interval", "0.5s",
                             "--timeout", "2s")
    assert code == 1 and doc["quorum"] is None, (doc, err)
    assert doc["gate"]["waiting_for"][0].startswith(f"no controller answers DescribeQuorum (asked: {address})")


def test_a_refused_login_is_one_line_and_exit_2(sandbox, controller, capsys):
    address, _, wrong, _ = controller
    code, out, err = run(capsys, "kraft", "status", "--zookeeper", sandbox.zookeeper_connect(chroot=True),
                         "--bootstrap-controller", address, "--controller-command-config", str(wrong))
    assert code == 2 and out == "", (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kmigrate: error: controller {address} refused kmigrate's login")
    assert "wrong" not in lines[0]  # no secret echoed (the password here is the word itself)
