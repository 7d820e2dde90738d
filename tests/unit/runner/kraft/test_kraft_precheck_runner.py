"""The wiring of ``kmigrate kraft precheck`` (runner/kraft/precheck) with its reads faked: the controllers' configs
are rendered from the brokers' static settings and judged; a clash the renderer refuses is reported, not raised."""

from __future__ import annotations

import pytest

from migrate.core.clientconfig import ClientSettings
from migrate.core.model import Broker, ClusterSnapshot, Partition, Topic, ZkEnsemble
from migrate.core.playbook import parse_playbook
from migrate.core.zookeeper.auth import ZkSasl
from migrate.errors import BadInput
from migrate.runner.kraft.precheck import kraft_precheck

BOOK = """
kafka: {bootstrap_servers: "b1:9092"}
zookeeper: {connect: "z1:2181/kafka"}
brokers: {mapping: {1: 4}}
kraft: {controllers: [{id: CTRL, host: c1}]}
"""


@pytest.fixture
def reads(monkeypatch):
    seen: dict = {}
    snap = ClusterSnapshot(
        cluster_id="q1Sh-9_ISia_zwGINzRvyQ", zookeeper=ZkEnsemble(connect="z1:2181/kafka"),
        brokers=tuple(Broker(b, f"b{b}", 9092, version="3.9", protocol_version="3.9-IV0") for b in (1, 2)),
        topics=(Topic("t", partitions=(Partition(0, (1, 2), (1, 2), 1),)),))

    def inspect(settings, connect, auth, timeout_s, sizes, progress):
        seen["inspect"] = (connect, sizes)
        return snap

    def configs(settings, ids, timeout_s):
        seen["configs"] = ids
        return {b: {"broker.id": str(b), "zookeeper.connect": "z1:2181/kafka", "zookeeper.set.acl": "true",
                    "listeners": f"PLAINTEXT://b{b}:9092"} for b in ids}

    def owners(hosts, chroot, auth, ids, timeout_s):
        seen["owners"] = (hosts, chroot, ids)
        return ("kafka",)

    monkeypatch.setattr("migrate.runner.inspect.inspect_cluster", inspect)
    monkeypatch.setattr("migrate.adapters.kafka.quorum.broker_file_configs", configs)
    monkeypatch.setattr("migrate.adapters.zookeeper.client.sasl_owners", owners)
    return seen


def test_the_controllers_are_rendered_and_every_check_passes(reads):
    checks = kraft_precheck(parse_playbook(BOOK.replace("CTRL", "3001")), ClientSettings("b1:9092"), "z1:2181/kafka",
                            [ZkSasl("kafka", "secret")])
    assert all(c.ok for c in checks), checks
    assert reads == {"inspect": ("z1:2181/kafka", False), "configs": [1, 2], "owners": ("z1:2181", "/kafka", [1, 2])}
    assert "zookeeper.set.acl" in checks[5].message and "SASL login 'kafka'" in checks[5].message
    assert "distinct from every broker id (1, 2, 4)" in checks[3].message  # the playbook's new broker 4 too


def test_a_controller_id_the_renderer_refuses_is_a_failed_check_not_an_error(reads):
    checks = kraft_precheck(parse_playbook(BOOK.replace("CTRL", "2")), ClientSettings("b1:9092"), "z1:2181/kafka", None)
    failed = {c.name: c.message for c in checks if not c.ok}
    assert list(failed) == ["controller_ids", "zookeeper_security", "dedicated_controllers"]
    assert failed["controller_ids"].startswith("controller id 2 is also a broker id")
    assert "could not be rendered (controller id 2 is also a broker id" in failed["dedicated_controllers"]


def test_a_playbook_without_kraft_is_bad_input(reads):
    with pytest.raises(BadInput, match="has no kraft: section"):
        kraft_precheck(parse_playbook(BOOK.split("kraft:")[0], "p.yaml"), ClientSettings("b1:9092"), "z1:2181", None)
    assert reads == {}
