"""``runner/kraft/observe``: a reading once ZooKeeper is retired (the adapters replaced by fakes; the pure decisions
are tested in tests/unit/core/kraft)."""

from __future__ import annotations

import pytest

from migrate.adapters.kafka import quorum as aq
from migrate.adapters.kraft import brokers as ab
from migrate.adapters.zookeeper import client as zc
from migrate.core.clientconfig import ClientSettings
from migrate.core.kraft.phases import Phase, phase_of
from migrate.errors import BadInput
from migrate.runner.kraft.observe import observe

ANSWER = {"topics": [{"partitions": [{"leader_id": 3000, "leader_epoch": 4, "high_watermark": 900,
                                      "current_voters": [{"replica_id": 3000, "log_end_offset": 900}],
                                      "observers": [{"replica_id": 1}, {"replica_id": 2}]}]}]}


@pytest.fixture
def cluster(monkeypatch):
    asked = {"zookeeper": 0, "configs": []}

    def znodes(hosts, chroot, auth, timeout_s=15.0, probe_s=None):
        asked["zookeeper"] += 1
        asked["probe_s"] = probe_s
        raise zc.Unreachable(f"cannot reach ZooKeeper at {hosts}")

    monkeypatch.setattr(zc, "migration_znodes", znodes)
    monkeypatch.setattr(aq, "describe_quorum", lambda settings, timeout_s=10.0: ANSWER)  # a KRaft broker forwards it
    monkeypatch.setattr(aq, "describe_quorum_at_controller", lambda *a, **k: None)
    monkeypatch.setattr(aq, "configured_voters", lambda settings, ids, timeout_s=10.0: "3000@c1:9093" if ids else None)
    monkeypatch.setattr(aq, "controller_configs", lambda address, node, names, *a, **k:
                        {names[0]: "false"} if address == "c1:9093" else None)

    def configs(settings, ids, names, timeout_s=10.0):
        asked["configs"].append(tuple(ids))
        return {b: {"process.roles": "broker", names[1]: "false"} for b in ids}

    monkeypatch.setattr(ab, "broker_configs", configs)
    monkeypatch.setattr(ab, "listed_brokers", lambda settings, timeout_s=5.0: asked.setdefault("listed", ("cid", (1, 2))))
    return asked


SETTINGS = ClientSettings("k1:9092")


def test_zookeeper_down_the_controllers_are_found_through_a_kraft_broker_and_the_cluster_reads_finalized(cluster):
    obs = observe("zk1:2181/kafka", None, SETTINGS, zookeeper_optional=True)
    assert cluster["zookeeper"] == 1 and cluster["probe_s"] == 3.0  # a stopped ensemble refuses at once
    assert obs.zookeeper_unread == "not reachable" and obs.zookeeper_connect == "zk1:2181/kafka"
    assert obs.controller_migration == {3000: False} and obs.broker_modes_read == {1: "kraft", 2: "kraft"}
    assert phase_of(obs).phase == Phase.FINALIZED


def test_zookeeper_not_given_is_not_asked(cluster):
    obs = observe(None, None, SETTINGS, (7,), zookeeper_optional=True)
    assert cluster["zookeeper"] == 0 and obs.zookeeper_unread == "not given" and obs.zookeeper_connect is None
    assert cluster["configs"] == [(1, 2, 7)]  # the quorum's brokers and the known ones
    assert phase_of(obs).phase == Phase.FINALIZED


def test_without_zookeeper_optional_an_unreachable_zookeeper_stays_bad_input(cluster):
    with pytest.raises(BadInput, match="cannot reach ZooKeeper at zk1:2181"):
        observe("zk1:2181/kafka", None, SETTINGS)
    assert cluster["probe_s"] is None
    with pytest.raises(BadInput, match="no ZooKeeper given"):
        observe(None, None, SETTINGS)


def test_roll_1_brokers_do_not_forward_describe_quorum_the_listed_brokers_name_the_controllers(cluster, monkeypatch):
    """ZooKeeper down in dual-write, no --broker-list: the bootstrap servers' metadata lists the brokers, whose
    controller.quorum.voters names the controllers; the phase is unknown (exit 1 in the command)."""
    monkeypatch.setattr(aq, "describe_quorum", lambda settings, timeout_s=10.0: None)
    monkeypatch.setattr(aq, "describe_quorum_at_controller", lambda address, *a, **k: ANSWER if address == "c1:9093" else None)
    monkeypatch.setattr(aq, "controller_configs", lambda address, node, names, *a, **k: {names[0]: "true"})
    monkeypatch.setattr(ab, "broker_configs", lambda settings, ids, names, timeout_s=10.0:
                        {b: {"process.roles": None, names[1]: "true"} for b in ids})
    obs = observe("zk1:2181/kafka", None, SETTINGS, zookeeper_optional=True)
    assert cluster["listed"] == ("cid", (1, 2)) and obs.cluster_id == "cid" and obs.quorum is not None and obs.controller_migration == {3000: True}
    assert obs.broker_modes_read == {1: "migration", 2: "migration"}
    reading = phase_of(obs)
    assert reading.phase == Phase.UNKNOWN and reading.broker_modes(obs.brokers) == {1: "migration", 2: "migration"}


def test_zookeeper_read_after_roll_2_the_controllers_are_found_through_the_brokers_the_quorum_sees(cluster, monkeypatch):
    """Seen by hand: every broker KRaft (out of /brokers/ids), no --broker-list nor --bootstrap-controller: the
    controllers' flag went unread and --wait-for finalized never passed. The quorum's observers name the brokers."""
    monkeypatch.setattr(zc, "migration_znodes", lambda *a, **k: {
        "ids": [], "topics": {}, "/cluster/id": b'{"id": "cid"}', "/controller": None, "/controller_epoch": None,
        "/migration": b'{"kraft_metadata_offset": 100}'})
    obs = observe("zk1:2181/kafka", None, SETTINGS, zookeeper_optional=True)
    assert obs.zookeeper_unread is None and obs.cluster_id == "cid"
    assert obs.controller_migration == {3000: False} and obs.broker_modes_read == {}
