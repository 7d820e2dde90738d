"""The Kafka and ZooKeeper releases kmigrate claims: what is accepted and what is refused (exit 2)."""

from __future__ import annotations

import pytest

from migrate.core.versions import check_kafka_version, check_zookeeper_version, release_tuple, supports_max_timestamp
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
