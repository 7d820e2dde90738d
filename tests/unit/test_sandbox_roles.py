"""The ZooKeeper role ``kmigrate sandbox status`` shows, from a server's own mode and the committed config."""

from migrate.sandbox.probes import zookeeper_role as _zookeeper_role

BEFORE = {1: "participant", 2: "participant", 3: "participant"}
AFTER = {4: "participant", 5: "participant", 6: "participant"}


def test_a_joiner_is_a_non_voting_follower_until_the_reconfig_makes_it_a_voter():
    assert _zookeeper_role("follower", 4, True, BEFORE) == "non-voting follower (joiner)"
    assert _zookeeper_role("observer", 4, True, {**BEFORE, 4: "observer"}) == "non-voting follower (joiner)"
    assert _zookeeper_role("leader", 4, True, AFTER) == "leader"


def test_a_server_the_reconfig_removed_is_removed_whatever_it_answers():
    assert _zookeeper_role("follower", 1, False, AFTER) == "removed"
    assert _zookeeper_role("not serving", 1, False, AFTER) == "removed"
    assert _zookeeper_role("not serving", 4, True, BEFORE) == "not serving"
    assert _zookeeper_role("follower", 1, False, BEFORE) == "follower"


def test_without_a_readable_config_or_a_serving_server_the_mode_stands():
    assert _zookeeper_role("follower", 4, True, None) == "follower"
    assert _zookeeper_role("stopped", 1, False, AFTER) == "stopped"
