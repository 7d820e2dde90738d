"""``inspect_cluster`` without a ZooKeeper connect string reads a KRaft cluster; a broker that runs in ZooKeeper mode
refuses it (kmigrate would otherwise plan without the ensemble that cluster depends on)."""

from __future__ import annotations

import pytest

from migrate.errors import BadInput
from migrate.runner.inspect import _refuse_zookeeper_mode


def test_kraft_brokers_pass():
    _refuse_zookeeper_mode({1: {"process.roles": "broker", "zookeeper.connect": None},
                            4: {"process.roles": "broker"}})


def test_a_zookeeper_mode_broker_is_named_with_its_connect_string():
    with pytest.raises(BadInput) as e:
        _refuse_zookeeper_mode({1: {"process.roles": "broker"}, 2: {"process.roles": None, "zookeeper.connect": "zk1:2181/kafka"},
                                3: {"process.roles": ""}})
    assert str(e.value) == ("broker(s) 2, 3 run in ZooKeeper mode (zookeeper.connect=zk1:2181/kafka): give --zookeeper "
                            "host:port[/chroot] or a playbook with a zookeeper: section")


def test_a_migrating_broker_counts_as_zookeeper_mode():
    """Roll 1 of a ZooKeeper-to-KRaft migration: still zookeeper.connect, no process.roles."""
    with pytest.raises(BadInput, match=r"broker\(s\) 7 run in ZooKeeper mode"):
        _refuse_zookeeper_mode({7: {"zookeeper.connect": "zk:2181", "zookeeper.metadata.migration.enable": "true"}})
