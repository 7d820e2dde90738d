"""Issue 30: the native KRaft sandbox's pure parts (``sandbox up --kraft``): configs per quorum kind and Kafka release,
the format arguments, the spec's refusals, the playbook it writes, the quorum as read, the jars per release."""

from __future__ import annotations

import doctest
import uuid
from pathlib import Path

import javaproperties
import pytest

from migrate.core import versions
from migrate.core.controllers.quorum import Quorum, Replica, directory_id_text, quorum_from_answer
from migrate.core.playbook import parse_playbook
from migrate.errors import BadInput
from migrate.sandbox import kraft_cluster, kraft_layout as kl
from migrate.sandbox.supervisor import NodeState, read_state, write_state

SPEC = kl.kraft_spec((3000, 3001, 3002), (101, 205, 310), spare_controller_ids=(3003, 3004, 3005),
                     spare_broker_ids=(411, 512, 613), ip_prefix="127.0.61")
DIRS = {3000: "AAECAwQFBgcICQoLDA0ODw", 3001: "EBESExQVFhcYGRobHB0eHw", 3002: "ICEiIyQlJicoKSorLC0uLw"}


def test_doctests():
    for module in (kl, kraft_cluster, versions):
        assert doctest.testmod(module).failed == 0, module.__name__


def test_nodes_one_per_address_controllers_and_brokers_share_hosts_on_their_own_ports():
    assert [(c.id, c.address, c.spare) for c in SPEC.controllers] == [
        (3000, "127.0.61.1:9093", False), (3001, "127.0.61.2:9093", False), (3002, "127.0.61.3:9093", False),
        (3003, "127.0.61.4:9093", True), (3004, "127.0.61.5:9093", True), (3005, "127.0.61.6:9093", True)]
    assert SPEC.bootstrap_servers(spare=False) == "127.0.61.1:9092,127.0.61.2:9092,127.0.61.3:9092"
    assert SPEC.bootstrap_controllers(spare=True) == "127.0.61.4:9093,127.0.61.5:9093,127.0.61.6:9093"
    assert SPEC.kraft and not SPEC.zookeepers


def test_dynamic_quorum_every_node_bootstraps_on_the_first_controllers_and_no_voters_line():
    bootstrap = "127.0.61.1:9093,127.0.61.2:9093,127.0.61.3:9093"
    for c in SPEC.controllers:  # the spares too: they find the quorum the same way
        props = kl.controller_properties(SPEC, c, "/m")
        assert props["controller.quorum.bootstrap.servers"] == bootstrap and "controller.quorum.voters" not in props
        assert props["advertised.listeners"] == props["listeners"] == f"CONTROLLER://{c.address}"
        assert props["process.roles"] == "controller" and props["node.id"] == str(c.id)
    broker = kl.broker_properties(SPEC, SPEC.brokers[3], "/d")
    assert broker["controller.quorum.bootstrap.servers"] == bootstrap and "controller.quorum.voters" not in broker
    assert broker["process.roles"] == "broker" and broker["node.id"] == "411" and broker["broker.rack"] == "AD-1/FD-2"
    assert broker["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert not [k for k in broker if k.startswith("zookeeper.") or k in ("broker.id", "reserved.broker.max.id")]
    assert kl.kraft_version(SPEC) == 1


def test_static_quorum_voters_line_on_the_voters_and_brokers_spares_bootstrap_on_them():
    spec = kl.kraft_spec((3000, 3001), (1,), spare_controller_ids=(3002,), static_quorum=True)
    voters = "3000@127.0.0.1:9093,3001@127.0.0.2:9093"
    assert kl.controller_properties(spec, spec.controllers[0], "/m")["controller.quorum.voters"] == voters
    assert kl.broker_properties(spec, spec.brokers[0], "/d")["controller.quorum.voters"] == voters
    spare = kl.controller_properties(spec, spec.controllers[2], "/m")  # not a voter: KafkaConfig refuses it in voters
    assert "controller.quorum.voters" not in spare
    assert spare["controller.quorum.bootstrap.servers"] == "127.0.0.1:9093,127.0.0.2:9093"
    assert kl.kraft_version(spec) == 0


def test_format_arguments_per_node_and_quorum_kind():
    initial = "3000@127.0.61.1:9093:" + DIRS[3000] + ",3001@127.0.61.2:9093:" + DIRS[3001] + ",3002@127.0.61.3:9093:" + DIRS[3002]
    assert kl.format_args(SPEC, 3001, "CID", "f", DIRS) == ["format", "--cluster-id=CID", "-c", "f", "--initial-controllers", initial]
    assert kl.format_args(SPEC, 3004, "CID", "f", DIRS)[-1] == "--no-initial-controllers"
    assert kl.format_args(SPEC, 613, "CID", "f", DIRS) == ["format", "--cluster-id=CID", "-c", "f"]
    static = kl.kraft_spec((3000,), (1,), spare_controller_ids=(3001,), static_quorum=True)
    assert kl.format_args(static, 3000, "CID", "f") == ["format", "--cluster-id=CID", "-c", "f"]
    assert kl.format_args(static, 3001, "CID", "f")[-1] == "--no-initial-controllers"
    with pytest.raises(BadInput, match="no directory id for controller 3002"):
        kl.format_args(SPEC, 3000, "CID", "f", {3000: "x", 3001: "y"})
    with pytest.raises(BadInput, match="node 7 is not a node"):
        kl.format_args(SPEC, 7, "CID", "f", DIRS)


def test_logging_per_release_log4j_until_3_9_log4j2_from_4_0():
    assert kl.logging_file("3.9.2") == "log4j.properties" and kl.logging_file("4.0.0") == "log4j2.properties"
    text = kl.log4j2_properties("/n/server.log")
    props = javaproperties.loads(text)  # log4j2's properties format is java.util.Properties
    assert props["appender.file.fileName"] == "/n/server.log" and props["rootLogger.appenderRef.file.ref"] == "file"
    assert props["appender.file.type"] == "RollingFile" and props["logger.request.level"] == "WARN"
    assert kl.logging_options("4.4.0", "/n/log4j2.properties") == ["-Dlog4j2.configurationFile=/n/log4j2.properties"]


def test_servers_pom_per_release(monkeypatch, tmp_path):
    from migrate.adapters import jars

    fetched = []
    monkeypatch.setattr(jars, "fetch_maven_project", lambda pom, name, props, quiet=True: fetched.append(
        (pom.name, name.split("/")[1].rsplit("_", 1)[0])) or tmp_path)
    jars.ensure_distribution("4.4.0")
    jars.ensure_distribution("3.9.2")
    assert [f for f in fetched if not f[1].startswith("zookeeper")] == [("servers4_pom.xml", "kafka-4.4.0"),
                                                                         ("servers_pom.xml", "kafka-3.9.2")]
    pom = (Path(jars.__file__).with_name("servers4_pom.xml")).read_text()
    assert "<artifactId>slf4j-reload4j</artifactId>" not in pom  # Kafka 4 logs through log4j2


def test_versions_the_kraft_sandbox_and_fetch_take():
    assert versions.check_kraft_kafka_version("4.4.0") == "4.4.0"
    for bad in ("3.8.1", "4.5.0", "4.1"):
        with pytest.raises(BadInput, match="from 3.9.x to 4.4.x"):
            versions.check_kraft_kafka_version(bad)
    assert versions.check_fetchable_kafka_version("4.1.1") == "4.1.1"
    with pytest.raises(BadInput, match=r"2\.4\.x to 3\.9\.x \(ZooKeeper mode\) or 3\.9\.x to 4\.4\.x \(KRaft\)"):
        versions.check_fetchable_kafka_version("5.0.0")
    with pytest.raises(BadInput, match="not supported"):  # the ZooKeeper sandbox stays on 2.4..3.9
        from migrate.sandbox import SandboxSpec
        SandboxSpec(kafka_version="4.0.0")


@pytest.mark.parametrize("kwargs,message", [
    (dict(controllers=(3000,), brokers=(3000,)), "node ids repeat"),
    (dict(controllers=(3000,), brokers=(1,), spare_controller_ids=(1,)), "node ids repeat"),
    (dict(controllers=(3000,), brokers=(1,), kafka_version="3.8.1"), "from 3.9.x to 4.4.x"),
    (dict(controllers=(3000,), brokers=(1,), security="mtls"), "--security mtls does not go with --kraft"),
    (dict(controllers=(3000,), brokers=(1,), chroot="/kafka"), "has no ZooKeeper"),
    (dict(controllers=(3000,), brokers=(), spare_broker_ids=(2,)), "spare brokers need at least one broker"),
    (dict(controllers=(3000,), brokers=(1,), ip_prefix="10.0.0"), "--ip-prefix"),
    (dict(controllers=(3000,), brokers=(1,), broker_kafka_versions={"1": "3.7.0"}), "3.7.0"),
])
def test_spec_refusals(kwargs, message):
    controllers, brokers = kwargs.pop("controllers"), kwargs.pop("brokers")
    with pytest.raises(BadInput, match=message):
        kl.kraft_spec(controllers, brokers, **kwargs)
    with pytest.raises(BadInput, match="spare controllers need at least one controller"):
        from migrate.sandbox import SandboxSpec
        SandboxSpec(zookeeper_ids=(), spare_controller_ids=(3000,))


def test_state_round_trip_keeps_the_kraft_spec(tmp_path):
    nodes = {"controller-3000": NodeState("controller", 3000, "127.0.61.1", str(tmp_path / "c"), pid=None)}
    write_state(tmp_path, SPEC, nodes)
    spec, read = read_state(tmp_path)
    assert spec == SPEC and read == nodes


def test_playbook_parses_without_a_zookeeper_section():
    book = parse_playbook(kraft_cluster.kraft_playbook(SPEC))
    assert book.zookeeper is None and book.kafka.bootstrap_servers == SPEC.bootstrap_servers(spare=False)
    assert dict(book.brokers.mapping) == {101: 411, 205: 512, 310: 613}
    assert book.controllers.bootstrap_now == SPEC.bootstrap_controllers(spare=False)
    assert book.controllers.bootstrap_after == SPEC.bootstrap_controllers(spare=True)
    assert [c.id for c in book.controllers.add] == [3003, 3004, 3005] and book.controllers.remove == (3000, 3001, 3002)
    kept = parse_playbook(kraft_cluster.kraft_playbook(kl.kraft_spec((3000,), (1, 2), static_quorum=True)))
    assert list(kept.brokers.keep) == [1, 2]
    assert [c.id for c in kept.controllers.voters] == [3000] and not kept.controllers.add and not kept.controllers.remove
    fewer = parse_playbook(kraft_cluster.kraft_playbook(kl.kraft_spec((3000, 3001, 3002), (1,), spare_controller_ids=(3003,))))
    assert fewer.controllers.remove == (3000,) and [c.id for c in fewer.controllers.staying] == [3001, 3002, 3003]


def test_uuids_and_the_quorum_as_read():
    ids = {kraft_cluster.random_uuid() for _ in range(200)}
    assert len(ids) == 200 and all(len(i) == 22 and not i.startswith("-") for i in ids)
    raw = uuid.uuid4()
    assert directory_id_text(raw) == kl.kafka_uuid(raw.bytes)
    answer = {"topics": [{"partitions": [{"leader_id": 3000, "leader_epoch": 1, "high_watermark": 50,
              "current_voters": [{"replica_id": i, "replica_directory_id": uuid.UUID(int=i), "log_end_offset": 50,
                                  "last_fetch_timestamp": -1, "last_caught_up_timestamp": -1} for i in (3000, 3001)],
              "observers": [{"replica_id": 3003, "replica_directory_id": uuid.UUID(int=0), "log_end_offset": 49}]}]}]}
    view = quorum_from_answer(answer)
    assert view.voter_ids == (3000, 3001) and view.observer_ids == (3003,)
    assert view.replica(3003).directory_id is None and view.role(3003) == "observer" and view.role(9) is None


def test_status_roles_of_a_kraft_sandbox():
    from migrate.sandbox.probes import kraft_role

    view = Quorum(3001, 1, 10, (Replica(3000, None, 10, 0, 0),), (Replica(3003, None, 10, 0, 0), Replica(1, None, 10, 0, 0)))
    assert kraft_role(3001, True, view, "controller") == "controller (leader)"
    assert kraft_role(3000, True, view, "controller") == "controller (voter)"
    assert kraft_role(3003, True, view, "controller") == "controller (observer)"
    assert kraft_role(1, True, view, "broker") == "broker"
    assert kraft_role(3000, False, view, "controller") == "stopped"
    assert kraft_role(3000, True, None, "controller") == "running"


@pytest.mark.parametrize("args,message", [
    (["--kraft", "--zookeepers", "3"], "--zookeepers does not go with --kraft"),
    (["--kraft", "--security", "mtls"], "--security mtls does not go with --kraft"),
    (["--kraft", "--security", "sasl_ssl", "--zookeeper-tls"], "--zookeeper-tls does not go with --kraft"),
    (["--static-quorum"], "--static-quorum needs --kraft"),
    (["--spare-controllers", "2"], "--spare-controllers needs --kraft"),
    (["--kafka-version", "4.1.2"], "Kafka 4 has no ZooKeeper mode: add --kraft"),
    (["--kraft", "--kafka-version", "3.8.1"], "from 3.9.x to 4.4.x"),
    (["--kraft", "--controller-ids", "1", "--broker-ids", "1"], "node ids repeat"),
    (["--target-kraft"], "--target-kraft needs --target-cluster"),
    (["--target-kafka-version", "4.1.2"], "--target-kafka-version needs --target-cluster"),
    (["--target-cluster", "--target-kafka-version", "4.1.2"], "--target-kafka-version needs --target-kraft"),
    (["--target-cluster", "--target-kraft", "--target-kafka-version", "3.8.1"], "--target-kafka-version 3.8.1"),
    (["--target-cluster", "--target-kraft", "--security", "sasl_ssl"], "--target-kraft does not go with --security"),
    (["--kraft", "--target-kraft"], "--target-kraft does not go with --kraft"),
])
def test_sandbox_up_refusals_are_one_line_exit_2_and_start_nothing(tmp_path, capsys, args, message):
    from migrate.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["sandbox", "up", *args, "--dir", str(tmp_path / "sandbox")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "sandbox").exists()


def test_a_restart_swaps_a_static_nodes_voters_for_the_bootstrap_list():
    """``sandbox restart-broker/restart-controller --controller-quorum-bootstrap-servers`` on a static quorum's node
    (kraft.version 1 first): controller.quorum.voters removed, the bootstrap list set, the rest kept in order."""
    from migrate.sandbox.layout import with_settings

    spec = kl.kraft_spec((3000, 3001), (1,), static_quorum=True, ip_prefix="127.0.61")
    for props in (kl.broker_properties(spec, spec.brokers[0], "/d"), kl.controller_properties(spec, spec.controllers[0], "/m")):
        new = with_settings(props, {"controller.quorum.bootstrap.servers": "127.0.61.1:9093,127.0.61.2:9093",
                                    "controller.quorum.voters": None})
        assert "controller.quorum.voters" in props and "controller.quorum.voters" not in new
        assert new["controller.quorum.bootstrap.servers"] == "127.0.61.1:9093,127.0.61.2:9093"
        assert {k: v for k, v in new.items() if k != "controller.quorum.bootstrap.servers"} == {
            k: v for k, v in props.items() if k != "controller.quorum.voters"}
