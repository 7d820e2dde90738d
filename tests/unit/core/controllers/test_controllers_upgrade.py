"""A static quorum made dynamic (migrate.core.controllers.upgrade): the refusals, the idempotent rerun, the release
read from the controllers, and what is left to roll."""

from __future__ import annotations

import doctest

import pytest

from migrate.core.controllers import upgrade as cu
from migrate.core.controllers.upgrade import (
    FeatureReading, check_upgrade, metadata_version_text, next_steps, release_of_level, resolve_release, still_static,
)
from migrate.errors import BadInput


def test_doctests():
    assert doctest.testmod(cu).failed == 0


def refusal(reading: FeatureReading) -> str:
    with pytest.raises(BadInput) as e:
        check_upgrade(reading)
    assert "\n" not in e.value.message
    return e.value.message


def test_a_static_quorum_on_41_and_later_is_upgraded():
    for release, mv in (((4, 1), 27), ((4, 4), 33), ((4, 1), 21)):
        assert check_upgrade(FeatureReading(3001, 0, mv, release)) is True


def test_a_dynamic_quorum_is_left_alone_on_every_release():
    """Already dynamic: nothing is sent, whatever the release (a 3.9 cluster formatted dynamic included)."""
    for release in ((3, 9), (4, 0), (4, 1), None):
        assert check_upgrade(FeatureReading(1, 1, 21, release)) is False


def test_39_and_40_cannot_convert():
    for release in ((3, 9), (4, 0)):
        msg = refusal(FeatureReading(1, 0, 21, release))
        assert f"Kafka {release[0]}.{release[1]}" in msg and "KAFKA-16538" in msg and "kmigrate mirror" in msg


def test_metadata_version_below_39_iv0_is_refused_with_the_command_that_raises_it():
    msg = refusal(FeatureReading(1, 0, 20, (4, 1)))
    assert "metadata.version 3.8-IV0" in msg and "3.9-IV0" in msg and "upgrade --metadata 4.1" in msg
    assert "--release-version" not in msg  # it would bump kraft.version too (KAFKA-21426)
    assert "metadata.version unknown" in refusal(FeatureReading(1, 0, None, (4, 1)))


def test_no_leader_and_unreadable_features_are_refused():
    assert "no leader" in refusal(FeatureReading(None, None, None, (4, 1)))
    assert "did not report its finalized features" in refusal(FeatureReading(1, None, None, (4, 1)))


def test_an_unknown_release_asks_for_kafka_version():
    assert "--kafka-version" in refusal(FeatureReading(1, 0, 27, None))


def test_release_of_the_newest_supported_metadata_version():
    assert [release_of_level(lv) for lv in (7, 20, 21, 22, 25, 26, 27, 29, 30, 33, 34, 50)] == [
        (3, 3), (3, 8), (3, 9), (4, 0), (4, 0), (4, 1), (4, 1), (4, 2), (4, 3), (4, 4), (4, 5), (4, 5)]
    assert metadata_version_text(25) == "4.0-IV3" and metadata_version_text(1) == "3.0-IV1"


def test_the_oldest_controller_decides_and_the_cluster_beats_the_flag():
    assert resolve_release([33, 27, None], None) == (4, 1)  # a rolling upgrade half done: its oldest node
    assert resolve_release([], (4, 2)) == (4, 2) and resolve_release([None], None) is None
    assert resolve_release([27], (4, 0)) == (4, 1)  # the flag understated it: the cluster's word
    with pytest.raises(BadInput, match="--kafka-version 4.4, but a controller supports metadata.version up to "
                                       "3.9-IV0"):
        resolve_release([33, 21], (4, 4))


def test_what_is_left_names_the_nodes_still_on_the_static_list():
    steps = next_steps("c1:9093,c2:9093,c3:9093", [1, 3], [101])
    assert len(steps) == 2
    assert steps[0].startswith("on controllers 1 and 3: remove controller.quorum.voters, set "
                               "controller.quorum.bootstrap.servers=c1:9093,c2:9093,c3:9093")
    assert steps[1].startswith("on broker 101: remove controller.quorum.voters") and "health --wait" in steps[1]
    assert next_steps("c1:9093", [2], [])[0].startswith("on controller 2:")
    assert next_steps("c1:9093", [], None)[0].startswith("on every broker:")  # the brokers were not asked
    assert next_steps("c1:9093", [], []) == []


def test_still_static_reads_the_configs_as_the_nodes_report_them():
    assert still_static({3: "1@c1:9093", 1: " ", 2: None, 4: "?"}) == [3, 4]
