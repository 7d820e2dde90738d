"""Playbook parsing: the shipped playbooks load, and every error is one line naming the field."""

from __future__ import annotations

import textwrap

import pytest

from migrate.errors import BadInput
from migrate.core.zookeeper.config import Server
from migrate.core.playbook import NewBroker, parse_playbook
from migrate.files import load_playbook

BASE = """
kafka: {bootstrap_servers: "h:9092"}
zookeeper: {connect: "z:2181"}
"""


def test_sandbox_playbook_matches_the_sandbox(kb):
    pb = load_playbook(kb.repo / "playbooks" / "sandbox.yaml")
    assert pb.source == str(kb.repo / "playbooks" / "sandbox.yaml")  # as given: the runbook names it
    assert pb.kafka.bootstrap_servers == "127.0.0.1:9092,127.0.0.2:9092,127.0.0.3:9092"
    assert pb.zookeeper.connect == "127.0.0.1:2181,127.0.0.2:2181,127.0.0.3:2181"
    assert pb.zookeeper.add == (
        Server(4, "127.0.0.4", 2888, 3888, 2181, None, "participant"),
        Server(5, "127.0.0.5", 2888, 3888, 2181, None, "participant"),
    )
    assert pb.zookeeper.remove == (1, 2, 3)
    assert pb.brokers.mapping == {1: 4, 2: 5, 3: 6}
    assert pb.brokers.new == {
        4: NewBroker("AD-1", "FD-2"),
        5: NewBroker("AD-2", "FD-2"),
        6: NewBroker("AD-3", "FD-2"),
    }
    assert pb.brokers.new[4].rack() == "AD-1/FD-2"
    assert pb.migration.bookkeeping_topic == "__kmigrate_migration"


def test_procedure_playbook_loads(kb):
    pb = load_playbook(kb.repo / "playbooks" / "procedure-3ad-2fd.yaml")
    assert pb.brokers.mapping == {1: 4, 2: 5, 3: 6}
    assert [s.id for s in pb.zookeeper.add] == [4, 5, 6]
    assert pb.zookeeper.remove == (1, 2, 3)
    assert pb.zookeeper.chroot == "/kafka"
    assert {b: n.rack() for b, n in pb.brokers.new.items()} == {4: "AD-1/FD-2", 5: "AD-2/FD-2", 6: "AD-3/FD-2"}
    assert pb.migration.throttle_bytes_per_s == 50_000_000
    assert pb.migration.max_partition_moves_per_broker == 5
    assert pb.migration.max_partition_moves_cluster == 50


def test_defaults_and_normalised_ids():
    pb = parse_playbook("""
kafka: {bootstrap_servers: "h:9092"}
zookeeper:
  connect: "z:2181/kafka"
  add: [{id: 4, host: z4, client_host: 10.0.0.4}]
brokers:
  mapping: {"1": 4, 2: "5"}
  new: {"4": {availability_domain: AD-1}}
  keep: ["7"]
""", "p.yaml")
    assert pb.brokers.mapping == {1: 4, 2: 5}
    assert pb.brokers.new == {4: NewBroker("AD-1", None)}
    assert pb.brokers.keep == (7,)
    assert pb.zookeeper.add[0] == Server(4, "z4", 2888, 3888, 2181, "10.0.0.4", "participant")
    assert pb.migration.throttle_bytes_per_s == 50_000_000
    assert pb.migration.max_partition_moves_cluster is None
    assert pb.kafka.client_settings() == {"bootstrap.servers": "h:9092"}


ERRORS = [
    # (document, expected message after "playbook bad.yaml")
    (BASE + "brokers: {mapping: {1: four}}", ": brokers.mapping.1: expected an integer broker id, got 'four'"),
    (BASE + "brokers: {mapping: {one: 4}}", ": brokers.mapping: key 'one' is not an integer broker id"),
    (BASE + "brokers: {mapping: {1: -4}}", ": brokers.mapping.1: expected an integer broker id, got -4"),
    (BASE + "brokers: {mapping: {1: true}}", ": brokers.mapping.1: expected an integer broker id, got True"),
    (BASE + "brokers: {mapping: [1, 4]}", ": brokers.mapping: expected a mapping of old broker id to new broker id, got a list"),
    (BASE + "brokers: {new: {4: {fault_domain: FD-1}}}", ": brokers.new.4: missing required field 'availability_domain'"),
    (BASE + "brokers: {new: {4: {availability_domain: AD-1, rack: x}}}", ": brokers.new.4: unknown field 'rack' (allowed: availability_domain, fault_domain)"),
    (BASE + "brokers: {new: {4: {availability_domain: AD/1}}}", ": brokers.new.4.availability_domain: 'AD/1' must be non-empty and must not contain the rack separator '/'"),
    (BASE + "brokers: {keep: [x]}", ": brokers.keep[0]: expected an integer broker id, got 'x'"),
    (BASE + "brokers: {mapping: {1: 4}, keep: [1]}", ": brokers.keep[0]: broker 1 is also a key of brokers.mapping"),
    (BASE + "brokers: {mapping: {1: 4}, new: {1: {availability_domain: A}}}", ": brokers.new.1: broker 1 is also a key of brokers.mapping"),
    (BASE + "brokers: {mapping: {1: 4}, mapings: {}}", ": brokers: unknown field 'mapings' (allowed: keep, mapping, new)"),
    (BASE + "migration: {throttle: 10KB/s}", ": migration.throttle: throttle 10KB/s is 10000 bytes/s, below the 1 MB/s minimum"),
    (BASE + "migration: {throttle: [1]}", ": migration.throttle: expected a replication throttle"),
    (BASE + "migration: {max_partition_moves_per_broker: 0}", ": migration.max_partition_moves_per_broker: expected a positive integer, got 0"),
    (BASE + "migration: {bookkeeping_topic: 'bad topic'}", ": migration.bookkeeping_topic: expected a Kafka topic name"),
    (BASE + "migration: {rack_separator: ''}", ": migration.rack_separator: expected a non-empty separator string"),
    ("zookeeper: {connect: z}", ": top level: missing required field 'kafka'"),
    ("kafka: {bootstrap_servers: h}\nzookeeper: {connect: z}", ": kafka.bootstrap_servers: expected a comma-separated list of host:port, got 'h'"),
    ("kafka: {bootstrap_servers: 'h:1', client: {a: [1]}}\nzookeeper: {connect: z}", ": kafka.client.a: expected a string, number or true/false, got a list"),
    ("kafka: {bootstrap_servers: 'h:1', extra: 1}\nzookeeper: {connect: z}", ": kafka: unknown field 'extra'"),
    ("kafka: {bootstrap_servers: 'h:1'}\nzookeeper: {connect: 'z:99999'}", ": zookeeper.connect: zookeeper connect string 'z:99999': port '99999'"),
    ("kafka: {bootstrap_servers: 'h:1'}\nzookeeper: {connect: 'z', add: [{id: 4}]}", ": zookeeper.add[0]: missing required field 'host'"),
    ("kafka: {bootstrap_servers: 'h:1'}\nzookeeper: {connect: 'z', add: [{id: 0, host: h}]}", ": zookeeper.add[0].id: expected an integer ZooKeeper server id (1-255), got 0"),
    ("kafka: {bootstrap_servers: 'h:1'}\nzookeeper: {connect: 'z', add: [{id: 4, host: 'a b'}]}", ": zookeeper.add[0].host: expected a host name or IP address, got 'a b'"),
    ("kafka: {bootstrap_servers: 'h:1'}\nzookeeper: {connect: 'z', add: [{id: 4, host: h, client_port: 0}]}", ": zookeeper.add[0].client_port: expected a port number (1-65535), got 0"),
    ("kafka: {bootstrap_servers: 'h:1'}\nzookeeper: {connect: 'z', add: [{id: 4, host: h}, {id: 4, host: g}]}", ": zookeeper.add[1].id: server id 4 is listed twice"),
    ("kafka: {bootstrap_servers: 'h:1'}\nzookeeper: {connect: 'z', add: [{id: 4, host: h, quorum_port: 3888}]}", ": zookeeper.add[0]: server 4 uses one port twice"),
    ("kafka: {bootstrap_servers: 'h:1'}\nzookeeper: {connect: 'z', remove: [1, 1]}", ": zookeeper.remove[1]: server id 1 is listed twice"),
    ("kafka: {bootstrap_servers: 'h:1'}\nzookeeper: {connect: 'z', add: [{id: 4, host: h}], remove: [4]}", ": zookeeper.remove[0]: server id 4 is also in zookeeper.add"),
    ("kafka: {bootstrap_servers: 'h:1'}\nzookeeper: {connect: 'z', remove: ['x']}", ": zookeeper.remove[0]: expected an integer ZooKeeper server id (1-255), got 'x'"),
    ("kafka: {bootstrap_servers: 'h:1'}\nzookeeper: {connect: 'z'}\nbrokers: {mapping: {1: 4, '1': 5}}", " is not valid YAML at line 3, column 27: key '1' appears twice"),
    ("kafka: [", " is not valid YAML at line 1"),
    ("- kafka", " is not a YAML mapping (it is a list)"),
    ("just text", " is not a YAML mapping (it is 'just text')"),
    ("", " is empty"),
    ("kafka: {bootstrap_servers: 'h:1'}\nzookeeper: {connect: z}\nbogus: 1", ": unknown field 'bogus' (allowed: brokers, controllers, kafka, kraft, migration, zookeeper)"),
]


@pytest.mark.parametrize("text, expected", ERRORS, ids=[e[1][:50] for e in ERRORS])
def test_every_error_is_one_line_naming_the_field(text, expected):
    with pytest.raises(BadInput) as exc:
        parse_playbook(textwrap.dedent(text), "bad.yaml")
    msg = exc.value.message
    assert "\n" not in msg
    assert msg.startswith("playbook bad.yaml" + expected), msg


# --------------------------------------------------------------------------- kraft:


def test_a_playbook_without_zookeeper_is_a_kraft_cluster_and_kraft_needs_zookeeper(kb):
    pb = kb.playbook('kafka: {bootstrap_servers: "h:1"}\nbrokers: {mapping: {1: 4}}\n')
    assert pb.zookeeper is None and pb.brokers.mapping == {1: 4}
    with pytest.raises(BadInput) as e:
        kb.playbook('kafka: {bootstrap_servers: "h:1"}\nkraft: {controllers: [{id: 3000, host: c1}]}\n')
    assert str(e.value) == ("playbook test.yaml: kraft: a ZooKeeper-to-KRaft migration needs the zookeeper: section "
                            "(connect: the ensemble the brokers use now, chroot included): add it")


def test_kraft_playbook_loads(kb):
    from migrate.core.playbook import KraftController

    pb = load_playbook(kb.repo / "playbooks" / "kraft.yaml")
    k = pb.kraft
    assert k is not None
    assert k.controllers == (KraftController(3001, "kraft1.ad1.example.internal", 9093),
                             KraftController(3002, "kraft2.ad2.example.internal", 9093),
                             KraftController(3003, "kraft3.ad3.example.internal", 9093))
    assert k.quorum_voters == ("3001@kraft1.ad1.example.internal:9093,3002@kraft2.ad2.example.internal:9093,"
                               "3003@kraft3.ad3.example.internal:9093")
    assert (k.listener_name, k.listener_port, k.security_protocol, k.metadata_log_dir) == (
        "CONTROLLER", 9093, "PLAINTEXT", "/var/lib/kafka/kraft-metadata")
    assert pb.brokers.mapping == {1: 4, 2: 5, 3: 6}
    assert not pb.zookeeper.add and not pb.zookeeper.remove  # ZooKeeper is retired, not swapped
    assert load_playbook(kb.repo / "playbooks" / "sandbox.yaml").kraft is None


def test_kraft_defaults_sorted_ids_and_ipv6():
    pb = parse_playbook(BASE + """
kraft:
  controllers: [{id: 12, host: c2, port: 19093}, {id: 11, host: "[::1]"}]
  listener_port: 9094
  security_protocol: SASL_SSL
  metadata_log_dir: /data/kraft/
""", "p.yaml")
    assert [(c.id, c.address) for c in pb.kraft.controllers] == [(11, "[::1]:9094"), (12, "c2:19093")]
    assert pb.kraft.listener_name == "CONTROLLER" and pb.kraft.security_protocol == "SASL_SSL"
    assert pb.kraft.metadata_log_dir == "/data/kraft"
    assert pb.kraft.controller(12).voter == "12@c2:19093" and pb.kraft.controller(13) is None


KRAFT_ERRORS = [
    ("kraft: {}", ": kraft: missing required field 'controllers'"),
    ("kraft: {controllers: []}", ": kraft.controllers: expected a non-empty list of KRaft controllers"),
    ("kraft: {controllers: [{id: -1, host: c}]}", ": kraft.controllers[0].id: expected an integer KRaft node id (0 or more), got -1"),
    ("kraft: {controllers: [{id: x, host: c}]}", ": kraft.controllers[0].id: expected an integer KRaft node id (0 or more), got 'x'"),
    ("kraft: {controllers: [{id: 1}]}", ": kraft.controllers[0]: missing required field 'host'"),
    ("kraft: {controllers: [{id: 1, host: c, rack: x}]}", ": kraft.controllers[0]: unknown field 'rack' (allowed: host, id, port)"),
    ("kraft: {controllers: [{id: 1, host: c}, {id: 1, host: d}]}", ": kraft.controllers[1].id: controller id 1 is listed twice (also kraft.controllers[0])"),
    ("kraft: {controllers: [{id: 1, host: c}, {id: 2, host: c}]}", ": kraft.controllers[1]: c:9093 is also kraft.controllers[0]"),
    ("kraft: {controllers: [{id: 1, host: c}], listener_name: 'CON TROLLER'}", ": kraft.listener_name: expected a listener name such as CONTROLLER"),
    ("kraft: {controllers: [{id: 1, host: c}], listener_port: 0}", ": kraft.listener_port: expected a port number (1-65535), got 0"),
    ("kraft: {controllers: [{id: 1, host: c}], security_protocol: TLS}", ": kraft.security_protocol: expected one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, got 'TLS'"),
    ("kraft: {controllers: [{id: 1, host: c}], metadata_log_dir: data/kraft}", ": kraft.metadata_log_dir: expected an absolute directory path"),
    ("kraft: {controllers: [{id: 1, host: c}], voters: x}", ": kraft: unknown field 'voters' (allowed: controllers, listener_name, listener_port, metadata_log_dir, security_protocol)"),
]


@pytest.mark.parametrize("text, expected", KRAFT_ERRORS, ids=[e[1][:50] for e in KRAFT_ERRORS])
def test_every_kraft_error_is_one_line_naming_the_field(text, expected):
    with pytest.raises(BadInput) as exc:
        parse_playbook(BASE + text, "bad.yaml")
    msg = exc.value.message
    assert "\n" not in msg
    assert msg.startswith("playbook bad.yaml" + expected), msg


def test_controllers_section_voters_add_remove():
    pb = parse_playbook('kafka: {bootstrap_servers: "h:9092"}\ncontrollers:\n'
                        '  voters: [{id: 3, host: c3}, {id: 1, host: c1}, {id: 2, host: "[::1]", port: 9095}]\n'
                        '  add: [{id: 7, host: c7}]\n  remove: [1]\n  listener_name: CTRL\n')
    c = pb.controllers
    assert pb.zookeeper is None and [n.id for n in c.voters] == [1, 2, 3] and c.remove == (1,)
    assert c.listener_name == "CTRL"
    assert c.bootstrap_now == "c1:9093,[::1]:9095,c3:9093"
    assert c.bootstrap_during == "c1:9093,[::1]:9095,c3:9093,c7:9093"
    assert c.bootstrap_after == "[::1]:9095,c3:9093,c7:9093"
    assert parse_playbook('kafka: {bootstrap_servers: "h:9092"}\n').controllers is None


@pytest.mark.parametrize("section, expected", [
    ("controllers: {voters: [{id: 1, host: a}], remove: [2]}",
     "controllers.remove[0]: controller 2 is not in controllers.voters"),
    ("controllers: {voters: [{id: 1, host: a}], add: [{id: 1, host: b}]}",
     "controllers.add[0].id: controller id 1 is listed twice (also controllers.voters[0])"),
    ("controllers: {voters: [{id: 1, host: a}], add: [{id: 2, host: a}]}",
     "controllers.add[0]: a:9093 is also controllers.voters[0]"),
    ("controllers: {voters: [{id: 1, host: a}], remove: [1]}",
     "controllers.remove: removes every voter and adds none"),
    ("controllers: {voters: [{id: 1, host: a}], remove: [1, 1]}", "controllers.remove[1]: controller id 1 is listed twice"),
    ("controllers: {add: [{id: 1, host: a}]}", "controllers: missing required field 'voters'"),
    ("controllers: {voters: [{id: 4, host: a}]}\nbrokers: {keep: [4]}", "controllers: id 4 is both a controller and a broker"),
    ("controllers: {voters: [{id: 1, host: a}]}\nzookeeper: {connect: 'z:2181'}",
     "controllers: moves the controller quorum of a KRaft cluster"),
])
def test_controllers_section_refusals(section, expected):
    with pytest.raises(BadInput) as err:
        parse_playbook('kafka: {bootstrap_servers: "h:9092"}\n' + section + "\n", "p.yaml")
    assert expected in err.value.message and "\n" not in err.value.message, err.value.message
