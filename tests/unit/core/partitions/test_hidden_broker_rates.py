"""Brokers before Kafka 2.8 hide their throttle rates from DescribeConfigs: which are read from ZooKeeper,
when kmigrate partitions refuses to start, and what a broker's dynamic config znode holds."""

from __future__ import annotations

import pytest

from migrate.core.playbook import ZooKeeperSettings
from migrate.core.partitions.throttles import BROKER_THROTTLE_CONFIGS, rates_in_znode
from migrate.core.versions import HIDDEN_RATES_OVERRIDE, hides_broker_rates, rates_from_zookeeper
from migrate.core.zookeeper.config import parse_server_spec
from migrate.errors import BadInput


@pytest.mark.parametrize("release, hidden", [("2.4", True), ("2.7", True), ("2.8", False), ("3.0", False),
                                             ("3.9", False), ("2.4.1", True), (None, False), ("", False),
                                             ("garbage", False)])
def test_releases_before_2_8_hide_the_rates(release, hidden):
    assert hides_broker_rates(release) is hidden


def test_only_the_older_brokers_are_read_from_zookeeper_in_a_half_done_upgrade():
    assert rates_from_zookeeper({1: "2.4", 2: "2.8", 3: "3.9", 7: "2.7"}, True, False) == frozenset({1, 7})
    assert rates_from_zookeeper({1: "2.4", 2: "2.8"}, True, True) == frozenset({1})  # the override changes nothing then


def test_newer_brokers_need_no_zookeeper():
    assert rates_from_zookeeper({1: "2.8", 2: "3.9"}, False, False) == frozenset()
    assert rates_from_zookeeper({}, False, False) == frozenset()


def test_without_zookeeper_older_brokers_are_refused_in_one_line_naming_them_and_the_way_out():
    with pytest.raises(BadInput) as caught:
        rates_from_zookeeper({4: "2.8", 12: "2.4", 3: "2.4"}, False, False)
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith("broker(s) 3, 12 run Kafka before 2.8")
    assert "--zookeeper" in text and "playbook" in text and HIDDEN_RATES_OVERRIDE in text


def test_the_override_goes_on_without_reading_zookeeper():
    assert rates_from_zookeeper({1: "2.4"}, False, True) == frozenset()


def test_a_znode_gives_only_the_throttle_rates_as_strings():
    raw = (b'{"version":1,"config":{"leader.replication.throttled.rate":"7",'
           b'"follower.replication.throttled.rate":8,"log.cleaner.threads":"2"}}')
    assert rates_in_znode(raw) == {"leader.replication.throttled.rate": "7", "follower.replication.throttled.rate": "8"}
    assert rates_in_znode(b'{"version":1,"config":{}}') == {}
    assert rates_in_znode(None) == {} and rates_in_znode(b"") == {}
    assert set(rates_in_znode(raw)) <= set(BROKER_THROTTLE_CONFIGS)


def test_the_playbooks_connect_for_reading_adds_the_joiners_and_keeps_the_chroot():
    joiner = parse_server_spec("4=zk4:2888:3888;2181")
    zk = ZooKeeperSettings(connect="zk1:2181,zk2:2181/kafka", add=(joiner,))
    assert zk.reading_connect == f"zk1:2181,zk2:2181,{joiner.client_address}/kafka"
    assert ZooKeeperSettings(connect="zk1:2181").reading_connect == "zk1:2181"
