"""``kmigrate zookeeper``'s options: --add and --remove, and the change a --plan file gives (pure, no server)."""

from __future__ import annotations

import pytest

from migrate.errors import BadInput
from migrate.core.zookeeper.change import Change, joiner_config, single_reconfig, target_config
from migrate.core.zookeeper.config import Server, parse_config
from tests.unit.core.zookeeper.conftest import COMMITTED


def test_add_option_mixes_ids_and_inline_specs():
    from migrate.commands.zookeeper import parse_add, parse_remove

    items = parse_add(["4=10.0.0.4:2888:3888;2181,5=10.0.0.5:2888:3888;10.0.0.5:2181", "6-7"])
    assert [i.id if isinstance(i, Server) else i for i in items] == [4, 5, 6, 7]
    assert parse_remove(["1,2", "3"]) == (1, 2, 3)
    from migrate.errors import BadInput

    with pytest.raises(BadInput, match="--add"):
        parse_add(["4=host:2888"])
    with pytest.raises(BadInput, match="--remove"):
        parse_remove(["one"])


# ------------------------------------------------------------- --plan
def _plan_with_zookeeper_change():
    from migrate.core.model import ClusterSnapshot, ZkEnsemble
    from migrate.core.plan.planner import build_plan
    from migrate.core.playbook import parse_playbook

    committed = parse_config(COMMITTED)
    snapshot = ClusterSnapshot(cluster_id="c", zookeeper=ZkEnsemble(
        connect="10.0.0.1:2181,10.0.0.2:2181/kafka", config_version=committed.version, servers=committed.servers))
    book = parse_playbook(
        "kafka:\n  bootstrap_servers: b:9092\nzookeeper:\n  connect: \"10.0.0.1:2181,10.0.0.2:2181/kafka\"\n"
        "  add:\n    - id: 4\n      host: 10.0.0.4\n    - id: 5\n      host: 10.0.0.5\n      client_host: 10.0.0.50\n"
        "  remove: [1, 2, 3]\n", "pb.yaml")
    return build_plan(snapshot, book)


def test_plan_s_zookeeper_section_is_what_the_run_computes():
    plan = _plan_with_zookeeper_change()
    zk = plan.zookeeper
    committed = parse_config(COMMITTED)
    change = Change(tuple(j.described() for j in zk.joiners), zk.remove)
    target = target_config(committed, change)
    rc = single_reconfig(committed, target)
    assert zk.reconfig_command == rc.zkcli() == (
        "reconfig -v 100000000 -remove 1,2,3 -add server.4=10.0.0.4:2888:3888:participant;10.0.0.4:2181,"
        "server.5=10.0.0.5:2888:3888:participant;10.0.0.50:2181")
    assert rc.zkcli("zk1:2181") == "zkCli.sh -server zk1:2181 " + rc.zkcli().replace("-add ", "-add '") + "'"
    assert list(zk.reconfig_add) == [s.line() for s in rc.joining]
    assert list(zk.joiner_config) == joiner_config(committed, change.add).lines()
    assert zk.voters_after == target.voter_ids == (4, 5) and zk.connect_after == target.connect_string(chroot="/kafka")


def test_plan_option_gives_the_change_and_refuses_contradicting_flags():
    from migrate.commands.zookeeper import change_from_plan, parse_add
    from migrate.core.plan.document import plan_from_json, plan_to_json

    plan = plan_from_json(plan_to_json(_plan_with_zookeeper_change()))
    connect, adds, removes = change_from_plan(plan, None, (), ())
    assert connect == "10.0.0.1:2181,10.0.0.2:2181/kafka" and removes == (1, 2, 3)
    assert [s.line() for s in adds] == ["server.4=10.0.0.4:2888:3888:participant;10.0.0.4:2181",
                                        "server.5=10.0.0.5:2888:3888:participant;10.0.0.50:2181"]
    # flags that agree with the plan: the same ids or specs, servers of the plan, the plan's chroot
    agree = change_from_plan(plan, "10.0.0.4:2181,10.0.0.50:2181/kafka", parse_add(["4,5"]), (3, 2, 1))
    assert agree == (connect, adds, removes)
    assert change_from_plan(plan, None, parse_add(["4=10.0.0.4:2888:3888;10.0.0.4:2181,5"]), ())[1] == adds
    for flags, needle in [
        (("10.0.0.1:2181/other", (), ()), "--zookeeper 10.0.0.1:2181/other contradicts plan"),
        (("10.0.0.9:2181/kafka", (), ()), "--zookeeper 10.0.0.9:2181/kafka contradicts plan"),
        ((None, parse_add(["4"]), ()), "--add 4 contradicts plan"),
        ((None, parse_add(["4=10.0.0.4:2888:3888;2182,5"]), ()), "its joiners are 4,5"),
        ((None, (), (1, 2)), "--remove 1,2 contradicts plan"),
    ]:
        with pytest.raises(BadInput, match=needle) as info:
            change_from_plan(plan, *flags)
        assert "\n" not in str(info.value.message)


def test_plan_without_zookeeper_change_is_refused():
    from dataclasses import replace

    from migrate.commands.zookeeper import change_from_plan

    with pytest.raises(BadInput, match="has no ZooKeeper change"):
        change_from_plan(replace(_plan_with_zookeeper_change(), zookeeper=None), None, (), ())
