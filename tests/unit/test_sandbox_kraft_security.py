"""A secured native KRaft sandbox (``sandbox up --kraft --security sasl_ssl|sasl_plaintext``): its files, what its
controllers and brokers are given, the format's SCRAM arguments, ``sandbox env``; no JVM."""

from __future__ import annotations

import doctest
import stat

import javaproperties
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import pkcs12

from migrate.errors import BadInput
from migrate.sandbox import Sandbox, kraft_cluster
from migrate.sandbox import kraft_layout as kl
from migrate.sandbox import security as sec_mod
from migrate.sandbox.supervisor import NodeState, write_state

SPEC = dict(spare_controller_ids=(3001,), spare_broker_ids=(2,), ip_prefix="127.0.61")


def test_doctests():
    assert doctest.testmod(sec_mod).failed == 0


def _nodes(spec):
    return [(n.id, n.host) for n in (*spec.controllers, *spec.brokers)]


@pytest.mark.parametrize("security", ["sasl_ssl", "sasl_plaintext"])
def test_kraft_files_controller_logins_and_no_zookeeper_files(tmp_path, security):
    spec = kl.kraft_spec((3000,), (1,), security=security, **SPEC)
    sec = sec_mod.create(security, tmp_path / "security", _nodes(spec), kraft=True)
    names = {p.name for p in (tmp_path / "security").iterdir()}
    assert not any("zookeeper" in n for n in names) and set(sec.secrets) == {"admin", "kmigrate", "client", "store"}
    for path in (tmp_path / "security").iterdir():
        if path.name != "ca.pem":
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    # the controller listener takes PLAIN (admin and kmigrate); the brokers' listener SCRAM (kmigrate.properties)
    assert "client-controller.properties" not in names
    props = javaproperties.loads(sec.controller_properties_file("kmigrate").read_text())
    assert props["security.protocol"] == sec_mod.protocol(security) and props["sasl.mechanism"] == "PLAIN"
    assert f'username="kmigrate" password="{sec.password("kmigrate")}"' in props["sasl.jaas.config"]
    assert ("ssl.truststore.location" in props) == (security == "sasl_ssl")
    assert javaproperties.loads(sec.properties_file("kmigrate").read_text())["sasl.mechanism"] == "SCRAM-SHA-512"
    if security == "sasl_ssl":  # every controller and broker, spares too, has its certificate for its address
        for node_id, host in _nodes(spec):
            store = pkcs12.load_pkcs12((tmp_path / "security" / f"kafka-{node_id}.keystore.p12").read_bytes(),
                                       sec.password("store").encode())
            san = store.cert.certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == [host]


def test_mtls_is_refused_for_a_kraft_sandbox(tmp_path):
    with pytest.raises(BadInput, match="--security mtls does not go with --kraft"):
        sec_mod.create("mtls", tmp_path / "security", [(1, "127.0.0.1")], kraft=True)
    assert not (tmp_path / "security").exists()


def test_controller_and_broker_properties(tmp_path):
    spec = kl.kraft_spec((3000,), (1,), security="sasl_ssl", **SPEC)
    sec = sec_mod.create("sasl_ssl", tmp_path / "security", _nodes(spec), kraft=True)
    admin, kmigrate, client = (sec.password(u) for u in ("admin", "kmigrate", "client"))
    c = {**kl.controller_properties(spec, spec.controllers[0], "/m"), **sec.kraft_controller_properties(3000)}
    assert c["listener.security.protocol.map"] == "CONTROLLER:SASL_SSL"
    assert c["listeners"] == "CONTROLLER://127.0.61.1:9093"
    assert c["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert c["super.users"] == "User:admin" and c["allow.everyone.if.no.acl.found"] == "false"
    assert c["listener.name.controller.sasl.enabled.mechanisms"] == "PLAIN"
    assert c["sasl.mechanism.controller.protocol"] == "PLAIN"
    jaas = c["listener.name.controller.plain.sasl.jaas.config"]
    assert f'user_admin="{admin}"' in jaas and f'user_kmigrate="{kmigrate}"' in jaas and client not in jaas
    assert c["ssl.keystore.location"].endswith("kafka-3000.keystore.p12")
    b = {**kl.broker_properties(spec, spec.brokers[1], "/d"), **sec.kraft_broker_properties(2, spec.brokers[1].address)}
    assert b["listeners"] == b["advertised.listeners"] == "SASL_SSL://127.0.61.2:9092"
    assert b["listener.security.protocol.map"] == "SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL"
    assert b["inter.broker.listener.name"] == "SASL_SSL" and "security.inter.broker.protocol" not in b
    assert b["sasl.enabled.mechanisms"] == b["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    assert f'username="admin" password="{admin}"' in b["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"]
    assert b["listener.name.controller.plain.sasl.jaas.config"].startswith(sec_mod.PLAIN_MODULE)
    assert "user_" not in b["listener.name.controller.plain.sasl.jaas.config"]  # a broker accepts no PLAIN login
    assert b["authorizer.class.name"] == c["authorizer.class.name"] and b["super.users"] == "User:admin"
    assert not any("PLAINTEXT" in v for k, v in b.items() if "listener" in k)
    plain = sec_mod.SandboxSecurity("sasl_plaintext", sec.dir)
    assert plain.kraft_broker_properties(1, "h:9092")["listener.security.protocol.map"] == \
        "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
    assert "ssl.keystore.location" not in plain.kraft_controller_properties(3000)


def test_scram_arguments_name_every_user_and_stay_off_the_command_line(tmp_path):
    sec = sec_mod.create("sasl_ssl", tmp_path / "security", [(3000, "127.0.61.1")], kraft=True)
    args = sec.scram_arguments()
    assert args == [f"SCRAM-SHA-512=[name={u},password={sec.password(u)}]" for u in ("admin", "kmigrate", "client")]
    text = kraft_cluster.java_argfile(["kafka.tools.StorageTool", "format", *[a for v in args for a in ("--add-scram", v)]])
    # the java launcher's reading of an argument file: one quoted argument a line
    assert [line[1:-1] for line in text.splitlines()][3] == args[0]


def test_env_exports_the_client_files_of_both_listeners(tmp_path):
    spec = kl.kraft_spec((3000,), (1,), security="sasl_ssl", **SPEC)
    sec = sec_mod.create("sasl_ssl", tmp_path / "security", _nodes(spec), kraft=True)
    nodes = {n.name: NodeState(kind, n.id, n.host, str(tmp_path / n.name), spare=n.spare)
             for kind, group in (("controller", spec.controllers), ("kafka", spec.brokers)) for n in group}
    write_state(tmp_path, spec, nodes)
    env = Sandbox(tmp_path).env()
    assert env["KMIGRATE_COMMAND_CONFIG"] == str(sec.properties_file("kmigrate"))
    assert env["KAFKA_ADMIN_COMMAND_CONFIG"] == str(sec.properties_file("admin"))
    assert env["KMIGRATE_CONTROLLER_COMMAND_CONFIG"] == str(sec.controller_properties_file("kmigrate"))
    assert env["KAFKA_BOOTSTRAP_CONTROLLERS"] == "127.0.61.1:9093" and "ZOOKEEPER_CONNECT" not in env
    assert not any(secret in value for secret in sec.secret_values() for value in env.values())


def test_the_secured_playbook_names_the_kmigrate_users_file(tmp_path):
    from migrate.core.playbook import parse_playbook
    from migrate.files import load_playbook

    spec = kl.kraft_spec((3000,), (1,), security="sasl_ssl", **SPEC)
    text = kraft_cluster.kraft_playbook(spec)
    assert parse_playbook(text).kafka.command_config == "security/kmigrate.properties"
    assert "--controller-command-config security/kmigrate-controller.properties" in text
    assert parse_playbook(kraft_cluster.kraft_playbook(kl.kraft_spec((3000,), (1,), **SPEC))).kafka.command_config is None
    sec = sec_mod.create("sasl_ssl", tmp_path / "security", _nodes(spec), kraft=True)
    (tmp_path / "playbook.yaml").write_text(text)  # as sandbox up writes it: the file read relative to its folder
    book = load_playbook(tmp_path / "playbook.yaml")
    assert book.kafka.client_settings()["sasl.mechanism"] == "SCRAM-SHA-512"
    assert sec.password("kmigrate") in book.kafka.client_settings()["sasl.jaas.config"]
