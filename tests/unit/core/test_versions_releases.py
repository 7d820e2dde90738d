"""The Kafka and ZooKeeper releases kmigrate claims: what is accepted and what is refused (exit 2)."""

from __future__ import annotations

import pytest

from migrate.core.versions import (
    check_kafka_version, check_zookeeper_version, parse_version, release_tuple, supports_max_timestamp, version_problem,
)
from migrate.errors import BadInput


@pytest.mark.parametrize("version", ["2.4.0", "2.4.1", "2.8.2", "3.0.0", "3.9.2"])
def test_claimed_kafka_releases_are_accepted(version):
    assert check_kafka_version(version) == version


@pytest.mark.parametrize("version", ["2.3.1", "4.0.0", "3.9", "3.9.2-rc1", "latest", "", "2.4.x"])
def test_other_kafka_releases_are_refused_naming_the_range(version):
    with pytest.raises(BadInput, match=r"--kafka-version .*2\.4\.x to 3\.9\.x"):
        check_kafka_version(version)


@pytest.mark.parametrize("version", ["3.4.14", "3.9.0", "3.8", "x"])
def test_other_zookeeper_releases_are_refused_naming_the_range(version):
    with pytest.raises(BadInput, match=r"--zookeeper-version .*3\.5\.x to 3\.8\.x"):
        check_zookeeper_version(version)
    assert check_zookeeper_version("3.5.7") == "3.5.7"


def test_max_timestamp_is_answered_from_kafka_3_0():
    assert not supports_max_timestamp(release_tuple("2.8"))
    assert supports_max_timestamp(release_tuple("3.0-IV1"))
    assert not supports_max_timestamp(None)


def test_a_sandbox_spec_checks_its_releases():
    from migrate.sandbox.layout import SandboxSpec

    spec = SandboxSpec(zookeeper_ids=(1,), broker_ids=(1, 2), kafka_version="2.4.1", zookeeper_version="3.5.7",
                       broker_kafka_versions={"2": "2.8.2"})
    assert [spec.kafka_version_of(b) for b in (1, 2)] == ["2.4.1", "2.8.2"]
    with pytest.raises(BadInput, match="not a broker id"):
        SandboxSpec(broker_ids=(1, 2), broker_kafka_versions={"7": "2.8.2"})
    with pytest.raises(BadInput, match="--broker-kafka-version 2="):
        SandboxSpec(broker_ids=(1, 2), broker_kafka_versions={"2": "1.1.0"})
    with pytest.raises(BadInput, match="--zookeeper-version"):
        SandboxSpec(zookeeper_version="3.4.14")


def _snapshot(*brokers, zk_versions=None):
    from migrate.core.model import ClusterSnapshot, ZkEnsemble

    return ClusterSnapshot(zookeeper=ZkEnsemble(connect="zk:2181", config_version=None, servers=(),
                                                server_versions=zk_versions or {}), brokers=tuple(brokers))


def _broker(i, version, protocol=None, alive=True):
    from migrate.core.model import Broker

    return Broker(id=i, host=f"h{i}", port=9092, version=version, protocol_version=protocol, alive=alive)


def test_one_release_is_no_finding_and_the_summary_names_each_release_and_what_kmigrate_uses():
    from migrate.core.plan.audit import audit_versions, versions_summary

    snap = _snapshot(_broker(1, "2.4", "2.4-IV1"), _broker(2, "2.4", "2.4-IV1"), zk_versions={1: "3.5.7"})
    assert [f.code for f in audit_versions(snap)] == ["kafka.hidden_broker_rates"]  # Kafka 2.4 hides them
    assert audit_versions(_snapshot(_broker(1, "3.9", "3.9-IV0"), _broker(2, "3.9", "3.9-IV0"))) == []
    line = versions_summary(snap)
    assert line.startswith("Kafka 2.4 (brokers 1, 2); inter.broker.protocol.version 2.4-IV1 (brokers 1, 2); "
                           "ZooKeeper 3.5.7 (server 1): ")
    assert "SET and DELETE" in line
    assert versions_summary(_snapshot(_broker(1, None))) is None


def test_a_rolling_upgrade_half_done_is_a_warning_naming_both_releases_and_protocols():
    from migrate.core.plan.audit import audit_versions

    findings = audit_versions(_snapshot(_broker(1, "2.4", "2.4-IV1"), _broker(2, "2.8", "2.4"), _broker(3, "2.8", "2.8-IV1")))
    codes = {f.code: f for f in findings}
    assert codes["kafka.mixed_versions"].severity == "warning"
    assert "2.4 (broker 1), 2.8 (brokers 2, 3)" in codes["kafka.mixed_versions"].message
    assert "2.8-IV1 (broker 3)" in codes["kafka.protocol_mismatch"].message


def test_a_release_out_of_range_blocks_and_an_unknown_one_warns():
    from migrate.core.plan.audit import audit_versions

    findings = audit_versions(_snapshot(_broker(1, "2.3"), _broker(2, None), _broker(3, "1.1", alive=False)))
    errors = [f for f in findings if f.severity == "error"]
    assert [(f.code, f.subject, f.blocks, f.forceable) for f in errors] == [("kafka.version", "broker 1", "all", False)]
    assert [f.subject for f in findings if f.code == "kafka.version_unknown"] == ["broker 2"]
    assert audit_versions(_snapshot(_broker(1, None))) == []  # a cluster file of an earlier kmigrate: no release read


def test_kafka_4_is_in_range_on_a_kraft_cluster_only():
    """Issue 30: a KRaft cluster (no ZooKeeper read) may run Kafka 4 (KRaft only), up to 4.4; a ZooKeeper one stops at 3.9."""
    from dataclasses import replace

    from migrate.core.plan.audit import audit_versions

    zk = _snapshot(_broker(1, "4.3"))
    kraft = replace(zk, zookeeper=replace(zk.zookeeper, connect=""))
    assert [f.code for f in audit_versions(kraft)] == []
    assert [f.code for f in audit_versions(replace(kraft, brokers=(_broker(1, "4.5"),)))] == ["kafka.version"]
    (error,) = audit_versions(zk)
    assert error.code == "kafka.version" and "2.4 to 3.9, ZooKeeper mode" in error.message


def test_the_cluster_file_keeps_the_protocol_version():
    from migrate.core.model import snapshot_from_json, snapshot_to_json

    snap = _snapshot(_broker(1, "2.8", "2.4-IV1"))
    again = snapshot_from_json(snapshot_to_json(snap))
    assert (again.brokers[0].version, again.brokers[0].protocol_version) == ("2.8", "2.4-IV1")


def test_parse_version():
    assert parse_version("3.8.6") == (3, 8, 6)
    assert parse_version("3.4.14-abc") == (3, 4, 14)
    assert parse_version(None) is None and parse_version("x") is None


def test_version_rule():
    assert version_problem("server 1", "3.4.14-abc") is not None
    assert version_problem("server 1", "3.5.0") is None
    assert version_problem("server 1", "3.8.6-6df2608") is None
