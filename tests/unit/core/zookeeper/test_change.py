"""Pure ZooKeeper change rules: joiner configs, targets, refusals, outcomes, and the step-by-step plan."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.core.zookeeper.change import (
    Change,
    Outcome,
    apply,
    check_change,
    is_reached,
    joiner_config,
    joiner_participant_problem,
    joiners_of,
    keeps_majority,
    next_step,
    outcome_problems,
    quorum_problem,
    single_reconfig,
    step_by_step,
    target_config,
    validate_change,
    warnings_for,
)
from migrate.core.zookeeper.config import PARTICIPANT, ConfigError, DynamicConfig, Server
from tests.unit.core.zookeeper.conftest import cfg, srv


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
