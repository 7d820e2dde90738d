"""The configs of each step of a ZooKeeper-to-KRaft migration (``core/kraft/config``)."""

from __future__ import annotations

import doctest

import javaproperties
import pytest

from migrate.core.kraft import config as kc
from migrate.core.kraft.config import Controller, KraftInputs
from migrate.errors import BadInput

CLUSTER_ID = "q1Sh-9_ISia_zwGINzRvyQ"

# A secured ZooKeeper-mode broker: chroot, ZooKeeper over TLS with ACLs, SASL_SSL between brokers, ACLs.
SECURED = {
    "broker.id": "101",
    "listeners": "SASL_SSL://b101.example:9094",
    "advertised.listeners": "SASL_SSL://b101.example:9094",
    "security.inter.broker.protocol": "SASL_SSL",
    "sasl.enabled.mechanisms": "SCRAM-SHA-512",
    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="pw";',
    "ssl.keystore.location": "/etc/kafka/b101.p12",
    "ssl.keystore.password": "ks",
    "ssl.truststore.location": "/etc/kafka/trust.jks",
    "ssl.truststore.password": "ts",
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:admin;User:broker",
    "allow.everyone.if.no.acl.found": "false",
    "inter.broker.protocol.version": "3.9",
    "log.dirs": "/data/kafka",
    "zookeeper.connect": "zk1:2182,zk2:2182,zk3:2182/prod/kafka",
    "zookeeper.set.acl": "true",
    "zookeeper.ssl.client.enable": "true",
    "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
    "zookeeper.ssl.truststore.location": "/etc/kafka/zk-trust.jks",
    "zookeeper.ssl.truststore.password": "zts",
    "zookeeper.session.timeout.ms": "18000",
}
CONTROLLERS = (Controller(3000, "c1.example", 9093, "/data/kraft"), Controller(3001, "c2.example", 9093, "/data/kraft"),
               Controller(3002, "c3.example", 9093, "/data/kraft"))


def secured_inputs() -> KraftInputs:
    b205 = {**SECURED, "broker.id": "205", "ssl.keystore.location": "/etc/kafka/b205.p12",
            "listeners": "SASL_SSL://b205.example:9094", "advertised.listeners": "SASL_SSL://b205.example:9094"}
    return KraftInputs(CLUSTER_ID, {101: SECURED, 205: b205}, CONTROLLERS)


def test_doctests():
    assert doctest.testmod(kc).failed == 0


def test_controller_config_carries_chroot_zookeeper_tls_and_inter_broker_security():
    assert kc.lines(kc.controller_config(secured_inputs(), 3001)) == [
        "process.roles=controller",
        "node.id=3001",
        "controller.quorum.voters=3000@c1.example:9093,3001@c2.example:9093,3002@c3.example:9093",
        "controller.listener.names=CONTROLLER",
        "listeners=CONTROLLER://c2.example:9093",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL",
        "inter.broker.listener.name=SASL_SSL",
        "sasl.enabled.mechanisms=SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
        "ssl.truststore.location=/etc/kafka/trust.jks",
        "ssl.truststore.password=ts",
        'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule'
        ' required username="broker" password="pw";',
        "log.dirs=/data/kraft",
        "zookeeper.metadata.migration.enable=true",
        "zookeeper.connect=zk1:2182,zk2:2182,zk3:2182/prod/kafka",
        "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
        "zookeeper.session.timeout.ms=18000",
        "zookeeper.set.acl=true",
        "zookeeper.ssl.client.enable=true",
        "zookeeper.ssl.truststore.location=/etc/kafka/zk-trust.jks",
        "zookeeper.ssl.truststore.password=zts",
    ]


def test_controller_notes_name_the_jaas_file_and_the_keystore():
    notes = kc.controller_notes(secured_inputs())
    assert "java.security.auth.login.config" in notes[0] and "NoAuthException" in notes[0]
    assert "ssl.keystore" in notes[1]


def test_plaintext_controller_takes_no_ssl_or_sasl_settings():
    props = {"zookeeper.connect": "z:2181", "ssl.truststore.location": "/t", "sasl.enabled.mechanisms": "PLAIN",
             "inter.broker.listener.name": "INTERNAL", "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SSL"}
    cfg = kc.controller_config(KraftInputs("c", {1: props}, (Controller(9, "h", 1),)), 9)
    assert cfg[kc.PROTOCOL_MAP] == "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT"
    assert cfg["inter.broker.listener.name"] == "INTERNAL"
    assert not [k for k in cfg if k.startswith(("ssl.", "sasl."))]


def test_roll_1_adds_the_migration_lines_keeping_the_broker_map():
    settings = kc.broker_migration_settings(secured_inputs(), 205)
    assert settings == {
        "zookeeper.metadata.migration.enable": "true",
        "controller.quorum.voters": "3000@c1.example:9093,3001@c2.example:9093,3002@c3.example:9093",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,"
                                          "CONTROLLER:PLAINTEXT",
        # the two follower fetch settings that shorten the rolls' produce stalls: the broker sets neither
        "replica.fetch.backoff.ms": "100", "replica.fetch.wait.max.ms": "100",
    }
    # a broker that sets one keeps its own value: only the other is added
    own = {**SECURED, "replica.fetch.backoff.ms": "500"}
    added = kc.broker_migration_settings(KraftInputs(CLUSTER_ID, {205: own}, CONTROLLERS), 205)
    assert "replica.fetch.backoff.ms" not in added and added["replica.fetch.wait.max.ms"] == "100"
    full = kc.broker_migration_config(secured_inputs(), 205)
    assert full["zookeeper.connect"] == SECURED["zookeeper.connect"] and full["broker.id"] == "205"
    assert full["inter.broker.protocol.version"] == "3.9"  # no IBP change during the migration


def test_roll_2_is_a_kraft_broker_with_the_standard_authorizer():
    cfg = kc.broker_kraft_config(secured_inputs(), 205)
    assert list(cfg)[:2] == ["process.roles", "node.id"] and cfg["node.id"] == "205" and cfg["process.roles"] == "broker"
    assert not [k for k in cfg if k.startswith("zookeeper.")]
    for gone in ("broker.id", "inter.broker.protocol.version", kc.MIGRATION_FLAG):
        assert gone not in cfg
    assert cfg["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert cfg["super.users"] == "User:admin;User:broker"
    assert cfg["ssl.keystore.location"] == "/etc/kafka/b205.p12"
    assert cfg["controller.quorum.voters"].startswith("3000@c1.example:9093,")
    assert cfg[kc.PROTOCOL_MAP].endswith(",CONTROLLER:PLAINTEXT")


def test_roll_2_keeps_another_authorizer():
    props = {"broker.id": "1", "zookeeper.connect": "z", "authorizer.class.name": "com.example.Auth",
             "control.plane.listener.name": "CP", "broker.id.generation.enable": "false"}
    cfg = kc.broker_kraft_config(KraftInputs("c", {1: props}, (Controller(9, "h", 1),)), 1)
    assert cfg["authorizer.class.name"] == "com.example.Auth"
    assert "control.plane.listener.name" not in cfg and "broker.id.generation.enable" not in cfg


def test_finalized_controllers_have_no_zookeeper():
    assert kc.lines(kc.controller_finalized_config(secured_inputs(), 3000)) == [
        "process.roles=controller",
        "node.id=3000",
        "controller.quorum.voters=3000@c1.example:9093,3001@c2.example:9093,3002@c3.example:9093",
        "controller.listener.names=CONTROLLER",
        "listeners=CONTROLLER://c1.example:9093",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT",
        "log.dirs=/data/kraft",
    ]


def test_format_command():
    assert kc.format_command(CLUSTER_ID, "/etc/kafka/c.properties", "/opt/kafka/bin/") == [
        "/opt/kafka/bin/kafka-storage.sh", "format", f"--cluster-id={CLUSTER_ID}", "-c", "/etc/kafka/c.properties"]
    with pytest.raises(BadInput, match="/cluster/id"):
        kc.format_command("", "x")


def test_lines_read_back_as_the_same_properties():
    props = kc.controller_config(secured_inputs(), 3002) | {"odd key": "a\\b\nc", "lead": " x"}
    assert javaproperties.loads("\n".join(kc.lines(props))) == props


@pytest.mark.parametrize("controllers, brokers, message", [
    ((), {1: {}}, "no KRaft controller"),
    ((Controller(1, "h", 1),), {1: {}}, "controller id 1 is also a broker id"),
    ((Controller(7, "h", 1), Controller(7, "g", 2)), {1: {}}, "controller ids repeat"),
])
def test_bad_inputs_say_what_is_wrong(controllers, brokers, message):
    with pytest.raises(BadInput, match=message):
        KraftInputs("c", brokers, controllers)


def test_unknown_ids_and_a_mismatched_broker_id_are_refused():
    ins = secured_inputs()
    with pytest.raises(BadInput, match="broker 7 is not a broker"):
        kc.broker_migration_settings(ins, 7)
    with pytest.raises(BadInput, match="controller 1 is not one of"):
        kc.controller_config(ins, 1)
    with pytest.raises(BadInput, match="broker.id=101"):
        kc.broker_kraft_config(KraftInputs("c", {5: SECURED}, CONTROLLERS), 5)
    with pytest.raises(BadInput, match="no zookeeper.connect"):
        kc.controller_config(KraftInputs("c", {5: {}}, CONTROLLERS), 3000)


def test_one_metadata_dir_default_everywhere():
    """kraft-metadata: the renderer's default, the playbook's, the example playbook's and the command's help."""
    import pathlib

    import yaml

    from migrate.core.playbook import DEFAULT_METADATA_LOG_DIR

    root = pathlib.Path(__file__).resolve().parents[4]
    assert kc.DEFAULT_METADATA_DIR == DEFAULT_METADATA_LOG_DIR == "/var/lib/kafka/kraft-metadata"
    assert kc.Controller(1, "c", 9093).log_dir == DEFAULT_METADATA_LOG_DIR
    example = yaml.safe_load((root / "playbooks" / "kraft.yaml").read_text())
    assert example["kraft"]["metadata_log_dir"] == DEFAULT_METADATA_LOG_DIR
