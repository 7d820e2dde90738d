"""The controller move's planner (migrate.core.controllers.plan): refusals, the stop order, the next step, and a
simulated move killed at random steps that must converge without ever losing the quorum's majority."""

from __future__ import annotations

import doctest
import random
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.core.controllers import plan as cp
from migrate.core.controllers.plan import (
    ControllerChange, NewController, StepKind, StopOrder, check_request, next_step, quorum_size, stop_order,
    validate_change,
)
from migrate.core.controllers.quorum import Endpoint, Quorum, Reading, Replica
from migrate.errors import BadInput

NOW = 1_000_000


def test_doctests():
    assert doctest.testmod(cp).failed == 0


def change(add=(7, 8, 9), remove=(1, 2, 3)) -> ControllerChange:
    return ControllerChange(tuple(NewController(i, f"c{i}", 9093) for i in add), tuple(remove))


def quorum(voters=(1, 2, 3), observers=(7, 8, 9), leader=1, behind: dict | None = None, silent=()) -> Quorum:
    """Every replica caught up at offset 500 unless ``behind`` says how many records it lags; ``silent`` ids last
    fetched a minute ago."""
    behind = behind or {}

    def rep(i):
        fetched = NOW - 60_000 if i in silent else NOW - 100
        return Replica(i, f"dir-{i}", 500 - behind.get(i, 0), None if i == leader else fetched,
                       NOW if i == leader else fetched)
    nodes = {i: (Endpoint("CONTROLLER", f"c{i}", 9093),) for i in voters}
    return Quorum(leader, 7, 500, tuple(rep(i) for i in voters), tuple(rep(i) for i in observers), nodes)


def reading(q=None, kraft_version=1, release=(4, 1), **kw) -> Reading:
    return Reading(q or quorum(), kraft_version, release, **kw)


# ------------------------------------------------------------------ refusals
def refusal(r: Reading, ch: ControllerChange) -> str:
    with pytest.raises(BadInput) as e:
        check_request(r, ch)
    assert "\n" not in e.value.message
    return e.value.message


def test_counts_that_do_not_pair_are_refused():
    assert "give as many of each" in refusal(reading(), change(add=(7, 8), remove=(1,)))
    assert "give as many of each" in refusal(reading(), change(add=(7,), remove=(1, 2)))


def test_removing_a_majority_at_once_is_refused():
    msg = refusal(reading(), change(add=(), remove=(1, 2)))
    assert "removes a majority at once" in msg and "3 voters need 2" in msg


def test_request_errors():
    with pytest.raises(BadInput, match="both added and removed"):
        validate_change(change(add=(7, 1), remove=(1, 2)))
    with pytest.raises(BadInput, match="nothing to do"):
        validate_change(change(add=(), remove=()))


def test_static_quorum_on_39_and_40_names_the_way_out():
    for release in ((3, 9), (4, 0)):
        msg = refusal(reading(kraft_version=0, release=release), change())
        assert "static" in msg and "4.1" in msg and "kmigrate mirror" in msg


def test_static_quorum_on_41_names_the_upgrade_steps():
    msg = refusal(reading(kraft_version=0, release=(4, 1)), change())
    assert "kraft.version=1" in msg and "controller.quorum.bootstrap.servers" in msg and "roll" in msg
    assert "kmigrate controllers upgrade-kraft-version" in msg and "mirror" not in msg
    assert "kraft.version=1" in refusal(reading(kraft_version=None, release=None), change())
    # the upgrade command repeats how the operator named the controllers
    with pytest.raises(BadInput, match="upgrade-kraft-version --playbook my.yaml "):
        check_request(reading(kraft_version=0, release=(4, 1)), change(), "--playbook my.yaml")


def test_release_before_39_is_refused():
    assert "from Kafka 3.9" in refusal(reading(release=(3, 8)), change())


def test_a_controller_id_that_is_a_broker_id_is_refused():
    msg = refusal(reading(broker_ids={8, 100}), change())
    assert msg.startswith("controller id 8 is already a broker id")


def test_unknown_ids_are_refused():
    assert "neither an observer nor a voter" in refusal(reading(quorum(observers=(7, 8))), change())
    assert "controller 4 is not a voter" in refusal(reading(), change(remove=(1, 2, 4)))


def test_no_leader_is_refused():
    assert "no leader" in refusal(reading(quorum(leader=None)), change())


def test_a_half_done_and_a_finished_move_are_not_refused():
    check_request(reading(quorum(voters=(2, 3, 7, 8), observers=(1, 9), leader=2)), change())
    check_request(reading(quorum(voters=(7, 8, 9), observers=(), leader=8)), change())


def test_voters_removed_outside_the_move_are_refused():
    msg = refusal(reading(quorum(voters=(3, 7), observers=(8, 9), leader=3)), change())
    assert "changed outside this move" in msg


# ------------------------------------------------------------------ stop order
def test_stop_order_per_release_and_auto_join():
    assert stop_order((3, 9), False) is StopOrder.BEFORE_REMOVAL
    assert stop_order((4, 0), False) is StopOrder.AFTER_REMOVAL
    assert stop_order((4, 2), True) is StopOrder.BEFORE_REMOVAL
    assert stop_order(None, False) is StopOrder.BEFORE_REMOVAL
    assert "KAFKA-19850" in cp.stop_order_reason((4, 2), True)


# ------------------------------------------------------------------ next step
def test_first_step_waits_for_the_lowest_new_controller_then_adds_it():
    step = next_step(reading(), change())
    assert (step.kind, step.node_id, step.directory_id) == (StepKind.WAIT_CATCH_UP, 7, "dir-7")
    step = next_step(reading(), change(), caught_up={7})
    assert (step.kind, step.node_id, step.directory_id, step.endpoint.address) == (StepKind.ADD, 7, "dir-7", "c7:9093")


def test_removals_take_followers_first_and_the_leader_last():
    r = reading(quorum(voters=(1, 2, 3, 7), observers=(8, 9), leader=1))
    step = next_step(r, change())
    assert (step.kind, step.node_id, step.before_removal) == (StepKind.REMOVE, 2, False)
    r = reading(quorum(voters=(1, 7, 8, 9), observers=(), leader=1), stopped_ids={2, 3})
    step = next_step(r, change())
    assert (step.kind, step.node_id) == (StepKind.REMOVE, 1) and "the leader" in step.reason


def test_on_39_an_old_controller_is_stopped_before_its_removal():
    q = quorum(voters=(1, 2, 3, 7), observers=(8, 9), leader=1)
    step = next_step(reading(q, release=(3, 9)), change())
    assert (step.kind, step.node_id, step.before_removal) == (StepKind.STOP, 2, True)
    q = quorum(voters=(1, 2, 3, 7), observers=(8, 9), leader=1, behind={2: 40}, silent=(2,))
    step = next_step(reading(q, release=(3, 9), stopped_ids={2}), change())
    assert (step.kind, step.node_id, step.before_removal) == (StepKind.REMOVE, 2, True)


def test_on_39_the_steps_name_the_leader_when_it_is_stopped_and_a_stopped_voter_as_stopped():
    """The leader stopped before its removal resigns: its stop says it leads, its removal that it is stopped (it was
    said to be "a follower" while the others had elected a new leader)."""
    q = quorum(voters=(1, 7, 8, 9), observers=(), leader=1)
    step = next_step(reading(q, release=(3, 9), stopped_ids={2, 3}), change())
    assert (step.kind, step.node_id) == (StepKind.STOP, 1)
    assert step.reason.startswith("stop controller 1 (the leader: the other voters elect a new one) before its removal")
    q = quorum(voters=(1, 7, 8, 9), observers=(), leader=7, silent=(1,))
    step = next_step(reading(q, release=(3, 9), stopped_ids={1, 2, 3}), change())
    assert (step.kind, step.node_id) == (StepKind.REMOVE, 1)
    assert step.reason.startswith("remove controller 1 (stopped) from the voters"), step.reason
    q = quorum(voters=(1, 2, 3, 7), observers=(8, 9), leader=1)
    step = next_step(reading(q, release=(3, 9)), change())
    assert step.reason.startswith("stop controller 2 before its removal (stop each old controller before its removal: "
                                  "Kafka 3.9 has no pre-vote"), step.reason
    step = next_step(reading(q, release=(3, 9), stopped_ids={2}), change())
    assert step.reason.startswith("remove controller 2 (stopped) from"), step.reason
    steps = [s.describe() for s in cp.preview(reading(q, release=(3, 9), stopped_ids={2}), change(), now_ms=NOW)]
    assert [" ".join(s.split()[:3]) for s in steps if s.startswith(("stop", "remove"))] == [
        "remove controller 2", "stop controller 3", "remove controller 3", "stop controller 1", "remove controller 1"]
    assert "stop controller 1 (the leader: " in "\n".join(steps) and "remove controller 1 (stopped)" in "\n".join(steps)


def test_auto_join_on_the_removed_controller_stops_it_first_on_42():
    q = quorum(voters=(1, 2, 3, 7), observers=(8, 9), leader=1)
    assert next_step(reading(q, release=(4, 2), auto_join_ids={2}), change()).kind is StepKind.STOP
    assert next_step(reading(q, release=(4, 2)), change()).kind is StepKind.REMOVE


def test_after_removal_on_40_the_removed_controller_is_stopped_before_the_next_add():
    q = quorum(voters=(2, 3, 7), observers=(1, 8, 9), leader=2)
    step = next_step(reading(q), change(), caught_up={8})
    assert (step.kind, step.node_id, step.before_removal) == (StepKind.STOP, 1, False)
    step = next_step(reading(q, stopped_ids={1}), change(), caught_up={8})
    assert (step.kind, step.node_id) == (StepKind.ADD, 8)


def test_a_lagging_voter_holds_the_next_change():
    q = quorum(voters=(1, 2, 3, 7), observers=(8, 9), leader=1, behind={7: 300})
    step = next_step(reading(q), change())
    assert step.kind is StepKind.WAIT_SETTLE and "7" in step.reason


def test_a_voter_paused_a_moment_ago_holds_the_next_removal_though_its_last_fetch_is_recent():
    # voters 1,2,3,7: 7 was added; 2 is paused: its last fetch (100 ms ago) is within the age bound, but stale
    q = quorum(voters=(1, 2, 3, 7), observers=(8, 9), leader=1)
    assert next_step(reading(q), change()).kind is StepKind.REMOVE  # as it looked without the second reading
    step = next_step(reading(q, stale_ids={2}), change())
    assert step.kind is StepKind.WAIT_SETTLE and "2" in step.reason, step


def test_stale_voters_compares_two_readings_a_second_apart_on_the_leader_s_clock():
    from migrate.core.controllers.quorum import STALE_GAP_MS, stale_voters

    def at(now, fetched):  # leader 1 at ``now``; voters 2, 3 last fetched at ``fetched[i]``
        return Quorum(1, 7, 500, (Replica(1, "d1", 500, None, now),) + tuple(
            Replica(i, f"d{i}", 500, f, f) for i, f in fetched.items()), ())

    earlier = at(NOW, {2: NOW - 50, 3: NOW - 80})
    assert stale_voters(earlier, at(NOW + STALE_GAP_MS, {2: NOW + 950, 3: NOW - 80})) == {3}
    assert stale_voters(earlier, at(NOW + STALE_GAP_MS, {2: NOW + 950, 3: NOW + 990})) == set()
    assert stale_voters(earlier, at(NOW + STALE_GAP_MS - 1, {2: NOW - 50, 3: NOW - 80})) is None  # too close
    other = Quorum(2, 8, 500, (Replica(2, "d2", 500, None, NOW + 5_000), Replica(3, "d3", 500, NOW - 80, NOW - 80)), ())
    assert stale_voters(earlier, other) is None  # another leader: the clocks differ


def test_no_leader_waits():
    assert next_step(reading(quorum(leader=None)), change()).kind is StepKind.WAIT_SETTLE


def test_a_stop_that_would_cost_the_majority_is_blocked():
    # voters 1,2,3,7 with 3 already down: stopping 2 would leave 1 and 7 of 4
    q = quorum(voters=(1, 2, 3, 7), observers=(8, 9), leader=1, behind={3: 100}, silent=(3,))
    step = next_step(reading(q, release=(3, 9), stopped_ids={3}), change())
    assert step.kind is StepKind.BLOCKED and "majority" in step.reason


def test_a_removal_that_would_cost_the_majority_is_blocked():
    # 4.1: remove-then-stop; voters 1,2,7 with 7 down: removing 2 leaves 1 running of {1,7}
    q = quorum(voters=(1, 2, 7), observers=(), leader=1, behind={7: 100}, silent=(7,))
    step = next_step(reading(q, stopped_ids={7}), change(add=(7,), remove=(2,)))
    assert step.kind is StepKind.BLOCKED


def test_done_when_every_add_is_a_voter_and_every_removed_controller_stopped():
    q = quorum(voters=(7, 8, 9), observers=(), leader=8)
    assert next_step(reading(q, stopped_ids={1, 2, 3}), change()).kind is StepKind.DONE
    assert next_step(reading(q, stopped_ids={1, 2}), change()).kind is StepKind.STOP


# ------------------------------------------------------------------ the whole move, simulated
@dataclass
class FakeCluster:
    """Kafka's side, as far as the planner can tell: voters, a leader among the running voters, observers."""

    voters: set
    running: set
    leader: int
    release: tuple
    auto_join: set = field(default_factory=set)

    def elect(self):
        live = sorted(self.voters & self.running)
        if self.leader not in live:
            assert len(live) >= quorum_size(len(self.voters)), f"no majority: voters {self.voters}, running {self.running}"
            self.leader = live[0]

    def reading(self) -> Reading:
        def rep(i):
            up = i in self.running
            return Replica(i, f"dir-{i}", 500 if up else 400, None if i == self.leader else (NOW - 100 if up else NOW - 90_000),
                           NOW if i == self.leader else (NOW - 100 if up else NOW - 90_000))
        observers = tuple(rep(i) for i in sorted(self.running - self.voters))
        q = Quorum(self.leader, 3, 500, tuple(rep(i) for i in sorted(self.voters)), observers,
                   {i: (Endpoint("CONTROLLER", f"c{i}", 9093),) for i in self.voters})
        return Reading(q, 1, self.release, frozenset(self.auto_join), frozenset({1, 2, 3, 7, 8, 9} - self.running))

    def apply(self, step):
        majority_before = quorum_size(len(self.voters))
        if step.kind is StepKind.ADD:
            assert step.node_id not in self.voters and step.node_id in self.running
            self.voters.add(step.node_id)
        elif step.kind is StepKind.REMOVE:
            assert step.node_id in self.voters
            self.voters.discard(step.node_id)
            if step.node_id == self.leader:
                self.leader = -1
        elif step.kind is StepKind.STOP:
            self.running.discard(step.node_id)
        if self.leader not in self.voters & self.running:
            self.elect()
        assert len(self.voters & self.running) >= quorum_size(len(self.voters)), (step, self.voters, self.running)
        assert len(self.voters & self.running) >= majority_before - (step.kind is StepKind.ADD)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10_000), release=st.sampled_from([(3, 9), (4, 0), (4, 1), (4, 2)]),
       leader=st.sampled_from([1, 2, 3]), auto_join=st.booleans())
def test_a_move_killed_at_random_steps_converges_and_keeps_a_majority(seed, release, leader, auto_join):
    rnd = random.Random(seed)
    cluster = FakeCluster({1, 2, 3}, {1, 2, 3, 7, 8, 9}, leader, release, {1, 2, 3} if auto_join and release >= (4, 2) else set())
    ch = change()
    caught: set = set()
    kinds = []
    for _ in range(60):
        if rnd.random() < 0.3:
            caught = set()  # kmigrate killed: the next run keeps nothing but what the cluster shows
        r = cluster.reading()
        check_request(r, ch)
        step = next_step(r, ch, caught)
        assert step.kind not in (StepKind.BLOCKED, StepKind.WAIT_SETTLE), step
        if step.kind is StepKind.DONE:
            break
        if step.kind is StepKind.REMOVE:
            pending = [i for i in ch.remove if i in cluster.voters and i != step.node_id]
            assert step.node_id != cluster.leader or not pending, "the leader is removed last"
            assert len(cluster.voters) == 4, "a removal follows its pair's add"
            assert (step.node_id in cluster.running) == (stop_order(release, step.node_id in cluster.auto_join)
                                                         is StopOrder.AFTER_REMOVAL)
        if step.kind is StepKind.WAIT_CATCH_UP:
            caught.add(step.node_id)
        else:
            if rnd.random() < 0.2:
                continue  # killed before the call reached Kafka: nothing happened
            cluster.apply(step)
            kinds.append(step.kind)
        assert len(cluster.voters) in (3, 4)
    else:
        pytest.fail("the move did not converge in 60 steps")
    assert cluster.voters == {7, 8, 9} and cluster.running == {7, 8, 9}
    assert kinds.count(StepKind.ADD) == 3 and kinds.count(StepKind.REMOVE) == 3 and kinds.count(StepKind.STOP) == 3


@pytest.mark.parametrize("release", [(3, 9), (4, 1)])
def test_the_preview_from_any_point_of_the_move_is_the_rest_of_it(release):
    from migrate.core.controllers.plan import apply_step, preview

    start = reading(release=release)
    whole = [s for s in preview(start, change()) if s.kind is not StepKind.WAIT_CATCH_UP]
    assert whole[-1].kind is StepKind.DONE and len(whole) == 10
    current = start
    for i, step in enumerate(whole[:-1]):
        current = apply_step(current, step)
        rest = [s for s in preview(current, change()) if s.kind is not StepKind.WAIT_CATCH_UP]
        assert rest == whole[i + 1:]


def test_the_preview_stops_at_a_controller_not_started():
    from migrate.core.controllers.plan import preview

    steps = preview(reading(quorum(observers=(7, 8))), change())
    assert steps[-1].kind is StepKind.WAIT_CATCH_UP and steps[-1].node_id == 9
