"""Brokers' zookeeper.connect judged against a ZooKeeper change (plaintext and secureClientPort addresses)."""

from __future__ import annotations

from migrate.core.zookeeper.brokers import BrokerConnect, judge_brokers
from migrate.core.zookeeper.change import Change, target_config
from migrate.core.zookeeper.config import Dialing, parse_config
from tests.unit.core.zookeeper.conftest import COMMITTED, cfg, srv


def test_brokers_pointing_only_at_removed_servers_are_lost():
    committed, target = cfg((1, 2, 3)), cfg((4, 5))
    brokers = [
        BrokerConnect(1, "zk1:2181,zk2:2181,zk3:2181/kafka"),
        BrokerConnect(2, "zk1:2181,zk4:2181/kafka"),
        BrokerConnect(3, "10.9.9.4:2181"),
    ]
    verdicts = {v.broker_id: v for v in judge_brokers(brokers, committed, target, {"zk4:2181": frozenset({"10.9.9.4:2181"})})}
    assert verdicts[1].only_removed and verdicts[1].lost and verdicts[1].removed == (1, 2, 3)
    assert not verdicts[2].lost and verdicts[2].kept == (4,) and verdicts[2].removed == (1,)
    assert not verdicts[3].lost and verdicts[3].kept == (4,)  # matched through the resolved address
    assert BrokerConnect(1, "zk1:2181,zk2:2181/kafka").chroot == "/kafka"
    unknown = judge_brokers([BrokerConnect(9, "other:2181")], committed, target)[0]
    assert unknown.lost and unknown.unknown == ("other:2181",)


def test_brokers_naming_servers_at_the_secure_port_are_judged_by_it():
    committed = parse_config(COMMITTED)
    target = target_config(committed, Change((srv(4),), (1, 2, 3)))
    dial = Dialing.of("10.0.0.1:2281", tls=True)
    secure = BrokerConnect(1, "10.0.0.1:2281,zk4:2281/kafka")
    plain = BrokerConnect(2, "10.0.0.1:2181,zk4:2181/kafka")
    v_secure, v_plain = judge_brokers([secure, plain], committed, target, None, dial)
    assert (v_secure.kept, v_secure.removed, v_secure.unknown, v_secure.secure_port) == ((4,), (1,), (), True)
    assert (v_plain.kept, v_plain.removed, v_plain.unknown, v_plain.secure_port) == ((4,), (1,), (), False)
    # without TLS the secure port names no server
    unknown = judge_brokers([secure], committed, target)[0]
    assert unknown.lost and unknown.unknown == ("10.0.0.1:2281", "zk4:2281")
