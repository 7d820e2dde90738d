"""Pure ZooKeeper config rules: parsing, joiner configs, targets, refusals, and the step-by-step plan."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.errors import BadInput
from migrate.core.zookeeper.ensemble import (
    OBSERVER,
    PARTICIPANT,
    BrokerConnect,
    Change,
    Dialing,
    ConfigError,
    DynamicConfig,
    Outcome,
    Server,
    apply,
    check_change,
    is_reached,
    joiner_config,
    joiner_participant_problem,
    joiners_of,
    judge_brokers,
    keeps_majority,
    next_step,
    outcome_problems,
    parse_auth,
    parse_config,
    parse_server_line,
    parse_server_spec,
    parse_version,
    split_connect,
    quorum_problem,
    single_reconfig,
    step_by_step,
    target_config,
    validate_change,
    version_problem,
    warnings_for,
)

COMMITTED = """server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181
server.2=10.0.0.2:2888:3888:participant;10.0.0.2:2181
server.3=10.0.0.3:2888:3888:participant;2181
version=100000000
"""


def srv(i: int, role: str = PARTICIPANT) -> Server:
    return Server(i, f"zk{i}", 2888, 3888, 2181, f"zk{i}", role)


def cfg(voters, observers=(), version=0x100000000) -> DynamicConfig:
    return DynamicConfig(tuple(srv(i) for i in voters) + tuple(srv(i, OBSERVER) for i in observers), version)


# ----------------------------------------------------------------- parsing
def test_parse_committed_config_and_version_as_int():
    c = parse_config(COMMITTED)
    assert c.version == 0x100000000 == 4294967296
    assert c.voter_ids == (1, 2, 3)
    assert c.get(1).client_address == "10.0.0.1:2181"  # 0.0.0.0 means the quorum host
    assert c.get(3).client_host is None and c.get(3).client_address == "10.0.0.3:2181"
    assert c.render() == COMMITTED.replace(";0.0.0.0:2181", ";0.0.0.0:2181")


@pytest.mark.parametrize(
    "line",
    [
        "server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181",
        "server.12=zk-12.example.com:2889:3889:observer;zk-12.example.com:2182",
        "server.7=[2001:db8::7]:2888:3888:participant;[2001:db8::7]:2181",
        "server.3=h:2888:3888:participant;2181",
    ],
)
def test_line_round_trip(line):
    assert parse_server_line(line).line() == line


def test_line_without_role_is_participant_and_without_client_has_no_address():
    s = parse_server_line("server.2=h2:2888:3888")
    assert s.role == PARTICIPANT and s.client_port is None and s.client_address is None


def test_parse_config_of_a_snapshot():
    """Was test_model.test_parse_zookeeper_config: the one parser serves the cluster snapshot too."""
    c = parse_config(
        "server.2=10.0.0.2:2888:3888:participant;0.0.0.0:2181\n"
        "server.1=10.0.0.1:2888:3888:participant;2181\n"
        "server.4=10.0.0.4:2888:3888:observer;10.0.0.4:2181\n"
        "version=100000000\n"
    )
    servers, version = c.servers, c.version
    assert version == 0x100000000
    assert [s.id for s in servers] == [1, 2, 4]
    assert servers[0] == Server(1, "10.0.0.1", 2888, 3888, 2181, None, "participant")
    assert servers[1].client_host == "0.0.0.0" and servers[1].client_address == "10.0.0.2:2181"
    assert servers[2].role == "observer"
    assert servers[2].line() == "server.4=10.0.0.4:2888:3888:observer;10.0.0.4:2181"
    assert servers[2].with_role("participant").line() == "server.4=10.0.0.4:2888:3888:participant;10.0.0.4:2181"


def test_parse_config_errors():
    with pytest.raises(BadInput, match="hexadecimal"):
        parse_config("version=xyz")
    with pytest.raises(BadInput, match="role"):
        parse_config("server.1=h:1:2:boss;2181")


def test_parse_version():
    assert parse_version("3.8.6") == (3, 8, 6)
    assert parse_version("3.4.14-abc") == (3, 4, 14)
    assert parse_version(None) is None and parse_version("x") is None


@pytest.mark.parametrize(
    "bad",
    ["server.x=h:1:2", "server.1=h:1", "server.1=h:1:2:leader;2181", "server.1=h:99999:2;2181", "server.1=:1:2;3"],
)
def test_bad_lines_are_refused(bad):
    with pytest.raises(ConfigError):
        parse_server_line(bad)


def test_inline_spec_sets_participant_and_needs_client_port():
    s = parse_server_spec("4=10.0.0.4:2888:3888;2181")
    assert (s.id, s.host, s.quorum_port, s.election_port, s.client_port, s.role) == (4, "10.0.0.4", 2888, 3888, 2181, PARTICIPANT)
    assert parse_server_spec("server.5=h5:1:2:observer;h5c:2181").role == PARTICIPANT  # kmigrate sets the role
    assert parse_server_spec("5=h5:1:2;h5c:2181").client_address == "h5c:2181"
    with pytest.raises(ConfigError, match="client port"):
        parse_server_spec("4=10.0.0.4:2888:3888")
    with pytest.raises(ConfigError):
        parse_server_spec("four=h:1:2;3")


def test_repeated_ids_are_refused():
    with pytest.raises(ConfigError):
        DynamicConfig((srv(1), srv(1, OBSERVER)))


# ------------------------------------------------------------ joiner config
def test_joiner_config_of_the_card_example():
    """Voters 1,2,3; joiners 4 and 5: each joiner starts with (1,2,3,4,5), 4 and 5 as observers."""
    committed = cfg((1, 2, 3))
    joined = joiner_config(committed, (srv(4), srv(5)))
    assert joined.ids == (1, 2, 3, 4, 5)
    assert joined.voter_ids == (1, 2, 3)
    assert joined.observer_ids == (4, 5)
    assert joined.lines()[3] == "server.4=zk4:2888:3888:observer;zk4:2181"


def test_joiner_config_keeps_a_joiner_already_committed():
    committed = cfg((1, 2, 3, 4))  # a resumed step-by-step run: 4 is a voter already
    joined = joiner_config(committed, joiners_of(committed, Change((srv(4), srv(5)), (1, 2, 3))))
    assert joined.voter_ids == (1, 2, 3, 4) and joined.observer_ids == (5,)


# ------------------------------------------------------------------ target
def test_target_is_idempotent_and_reached_after_the_change():
    committed = cfg((1, 2, 3))
    change = Change((srv(4), srv(5)), (1, 2, 3))
    target = target_config(committed, change)
    assert target.voter_ids == (4, 5) and target.observer_ids == ()
    assert not is_reached(committed, target)
    assert is_reached(target, target_config(target, change))
    assert check_change(committed, change) == []


def test_refusals():
    committed = cfg((1, 2, 5))
    problems = check_change(committed, Change((srv(4),), (1,)))
    assert problems and "joiner id 4 is not greater than every current id" in problems[0]
    with pytest.raises(ConfigError, match="both added and removed"):
        validate_change(Change((srv(4),), (4,)))
    with pytest.raises(ConfigError, match="nothing to do"):
        validate_change(Change((), ()))
    moved = Server(2, "elsewhere", 2888, 3888, 2181, "elsewhere", PARTICIPANT)
    assert "committed config as" in check_change(cfg((1, 2, 3)), Change((moved,), ()))[0]
    assert "no voter" in check_change(cfg((1,)), Change((), (1,)))[-1]


def test_two_voters_are_warned():
    assert any("2 voters, which tolerate no failure" in w for w in warnings_for(cfg((4, 5))))
    assert warnings_for(cfg((4, 5, 6))) == []
    assert "4 voters" in warnings_for(cfg((4, 5, 6, 7)))[0]


def test_quorum_problem_names_what_is_missing():
    target = cfg((4, 5, 6))
    assert quorum_problem(target, {4, 5}) is None
    problem = quorum_problem(target, {4, 1, 2})
    assert problem and "need 2" in problem and "[5, 6]" in problem
    assert quorum_problem(cfg((4, 5)), {4}) is not None  # two voters need both


def test_version_rule():
    assert version_problem("server 1", "3.4.14-abc") is not None
    assert version_problem("server 1", "3.5.0") is None
    assert version_problem("server 1", "3.8.6-6df2608") is None


def test_joiner_listed_as_participant_in_its_own_config_is_refused():
    committed = cfg((1, 2, 3))
    own = cfg((4, 5))  # joiners started with the target config: an ensemble of their own
    assert "lists 4, 5 as participants" in joiner_participant_problem(4, own, committed, (4, 5))
    assert joiner_participant_problem(4, committed, committed, (4, 5)) is None  # adopted the committed config
    mixed = cfg((1, 2, 3, 4), observers=(5,), version=0)
    assert "lists 4 as participant" in joiner_participant_problem(4, mixed, committed, (4, 5))


def test_single_reconfig_is_the_procedure_s_one_change():
    committed = cfg((1, 2, 3))
    rc = single_reconfig(committed, cfg((4, 5)))
    assert rc.leaving == (1, 2, 3) and [s.id for s in rc.joining] == [4, 5]
    assert rc.from_version == 0x100000000
    assert rc.zkcli("zk1:2181") == (
        "zkCli.sh -server zk1:2181 reconfig -v 100000000 -remove 1,2,3 "
        "-add 'server.4=zk4:2888:3888:participant;zk4:2181,server.5=zk5:2888:3888:participant;zk5:2181'"
    )
    assert apply(committed, rc).same_membership(cfg((4, 5)))


def test_observer_promoted_by_the_change():
    committed = cfg((1, 2, 3), observers=(4,))
    target = target_config(committed, Change((srv(4),), (1,)))
    assert target.voter_ids == (2, 3, 4)
    assert [s.role for s in single_reconfig(committed, target).joining] == [PARTICIPANT]


def test_step_by_step_removes_the_leader_last():
    steps = step_by_step(cfg((1, 2, 3)), cfg((4, 5, 6)), leader_id=1)
    described = [s.describe() for s in steps]
    assert described == ["add 4", "add 5", "add 6", "remove 2", "remove 3", "remove 1"]


def test_outcome_problems():
    target = cfg((4, 5))
    ok = Outcome(cfg((4, 5), version=0x300000002), 5, frozenset({4, 5}))
    assert outcome_problems(ok, target, (1, 2, 3)) == []
    bad = Outcome(cfg((1, 4, 5)), 1, frozenset({5}))
    problems = outcome_problems(bad, target, (1, 2, 3))
    assert any("still in the committed config" in p for p in problems)
    assert any("no leader among the new voters" in p for p in problems)
    assert any("not in sync" in p for p in problems)


# ----------------------------------------------------------------- brokers
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


def test_over_tls_every_server_is_dialled_at_the_connect_strings_secure_port():
    committed = parse_config(COMMITTED)
    dial = Dialing.of("10.0.0.1:2281,10.0.0.2:2281", tls=True)
    # 0.0.0.0 and a missing client host fall back to the quorum host; the plaintext port is not used
    assert dial.addresses(committed.servers) == ["10.0.0.1:2281", "10.0.0.2:2281", "10.0.0.3:2281"]
    assert dial.connect_string(committed, chroot="/kafka") == "10.0.0.1:2281,10.0.0.2:2281,10.0.0.3:2281/kafka"
    assert Dialing.of("10.0.0.1:2281,10.0.0.2:2182", tls=False).addresses(committed.servers) == [
        "10.0.0.1:2181", "10.0.0.2:2181", "10.0.0.3:2181"]
    assert Dialing().address(parse_server_line("server.9=h9:2888:3888:participant")) is None
    with pytest.raises(BadInput, match=r"2 ports \(2182, 2281\)"):
        Dialing.of("10.0.0.1:2281,10.0.0.2:2182", tls=True)


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


# -------------------------------------------------------------- hypothesis
ids = st.integers(min_value=1, max_value=40)


@st.composite
def changes(draw):
    voters = draw(st.sets(ids, min_size=1, max_size=7))
    observers = draw(st.sets(ids.filter(lambda i: i not in voters), max_size=2))
    committed = cfg(sorted(voters), sorted(observers))
    top = max(voters | observers)
    n_add = draw(st.integers(min_value=0, max_value=6))
    adds = tuple(srv(top + k + 1) for k in range(n_add))
    removable = sorted(voters | observers)
    remove = tuple(draw(st.sets(st.sampled_from(removable), max_size=len(removable))))
    leader = draw(st.sampled_from(sorted(voters)))
    return committed, Change(adds, remove), leader


@given(changes())
@settings(max_examples=300, deadline=None)
def test_step_by_step_keeps_a_majority_at_every_step(case):
    committed, change, leader = case
    target = target_config(committed, change)
    if not target.voters:
        assert check_change(committed, change)  # refused
        return
    steps = step_by_step(committed, target, leader)
    current = committed
    for rc in steps:
        assert len(rc.joining) + len(rc.leaving) == 1  # one server per step
        nxt = apply(current, rc)
        assert nxt.voters, "a step never leaves the ensemble without voters"
        if min(len(current.voters), len(nxt.voters)) >= 2:
            assert keeps_majority(current, nxt), (current.voter_ids, nxt.voter_ids)
        current = DynamicConfig(nxt.servers, (current.version or 0) + 1)
    assert is_reached(current, target)
    # adds come before removals: the ensemble never shrinks before every joiner votes
    kinds = ["add" if rc.joining else "remove" for rc in steps]
    assert kinds == sorted(kinds)


@given(changes())
@settings(max_examples=100, deadline=None)
def test_replanning_from_any_intermediate_config_reaches_the_same_target(case):
    """Resuming an interrupted step-by-step run from the committed config converges on the target."""
    committed, change, leader = case
    target = target_config(committed, change)
    if not target.voters:
        return
    current = committed
    for rc in step_by_step(committed, target, leader):
        current = apply(current, rc)
        again = target_config(current, change)
        assert again.same_membership(target)
        rest = step_by_step(current, again, leader)
        end = current
        for r in rest:
            end = apply(end, r)
        assert is_reached(end, target)


@given(changes())
@settings(max_examples=200, deadline=None)
def test_single_reconfig_reaches_the_target_and_joiners_are_greater(case):
    committed, change, _ = case
    target = target_config(committed, change)
    rc = single_reconfig(committed, target)
    assert apply(committed, rc).same_membership(target)
    assert rc.from_version == committed.version
    assert all(j.id > max(committed.ids) for j in change.add)
    assert not [p for p in check_change(committed, change) if "not greater" in p]
    assert next_step(target, target) is None


@given(st.sets(ids, min_size=1, max_size=9), st.sets(ids, min_size=1, max_size=9))
def test_config_text_round_trip(voters, observers):
    observers = observers - voters
    c = cfg(sorted(voters), sorted(observers), version=0x500000003)
    assert parse_config(c.render()) == c


# ------------------------------------------------------- options and addresses
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


def test_connect_strings_split_into_hosts_and_chroot():
    from migrate.errors import BadInput

    assert split_connect("zk1:2181,zk2:2182/kafka") == ("zk1:2181,zk2:2182", "/kafka")
    assert split_connect("zk1,[::1]:2181,[::2]") == ("zk1:2181,[::1]:2181,[::2]:2181", "")
    assert split_connect("zk1:2181/") == ("zk1:2181", "")
    assert parse_auth("super:secret") == [("digest", "super:secret")]
    with pytest.raises(BadInput):
        parse_auth("nopassword")
    with pytest.raises(BadInput):
        split_connect(",/kafka")


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
