"""The gates of ``kmigrate kraft status --wait-for`` and why each awaited broker is awaited (``core/kraft/gates``)."""

from __future__ import annotations

import doctest

import pytest

from migrate.core.kraft import gates as kg
from migrate.core.kraft.gates import Gate, GateWatch, finalize_refusal, judge_reading, parse_gate, waiting_reasons
from migrate.core.kraft.phases import Observation, QuorumView

BROKERS = (101, 205, 310)
ZK_CONTROLLER = {"version": 1, "brokerid": 101, "kraftControllerEpoch": -1}
KRAFT_CONTROLLER = {"version": 2, "brokerid": 3000, "kraftControllerEpoch": 1}


def migration(offset: int) -> dict:
    return {"version": 0, "kraft_controller_id": 3000, "kraft_controller_epoch": 1, "kraft_metadata_offset": offset,
            "kraft_metadata_epoch": 1}


def quorum(observers=(), hw=250, voters=(3000,), lag=None, leader=3000) -> QuorumView:
    return QuorumView(leader, 1, hw, tuple(voters), tuple(observers), dict(lag if lag is not None else {v: 0 for v in voters}))


def obs(zk=BROKERS, assigned=BROKERS, controller=ZK_CONTROLLER, offset=None, q=None, known=(), flags=None) -> Observation:
    return Observation("cid", tuple(zk), tuple(assigned), controller, 5, None if offset is None else migration(offset),
                       q, tuple(known), dict(flags or {}))


def test_doctests():
    assert doctest.testmod(kg).failed == 0


def test_gate_names_parse_as_kafka_and_the_enum_spell_them():
    assert parse_gate("dual-write") is Gate.DUAL_WRITE and parse_gate("BROKERS_KRAFT") is Gate.BROKERS_KRAFT
    assert parse_gate("soak") is None


# ---------------------------------------------------------------- why each broker is awaited
def test_each_awaited_broker_has_its_reason():
    """Broker 205 runs in ZooKeeper mode without the migration settings; 999 is a dead id in an assignment (the
    classic WAIT_FOR_BROKERS); 400 was named by the operator and is nowhere; 101 registered."""
    reasons = waiting_reasons(obs(zk=(101, 205), assigned=(101, 205, 999), known=(400,), q=quorum(observers=(101,))))
    assert sorted(reasons) == [205, 400, 999]
    assert "lacks the migration settings or was not restarted" in reasons[205] and "--phase migration" in reasons[205]
    assert reasons[999].startswith("named by partition assignments but not a live broker") and "dead id" in reasons[999]
    assert "start broker 999, or reassign" in reasons[999]
    assert reasons[400].startswith("neither in /brokers/ids nor seen by the quorum")


def test_no_reason_without_a_quorum_reading_names_every_broker():
    assert sorted(waiting_reasons(obs())) == list(BROKERS)


# ---------------------------------------------------------------- controllers-ready
def test_controllers_ready_needs_an_answer_a_leader_and_caught_up_voters():
    none = judge_reading(Gate.CONTROLLERS_READY, obs(), controllers=("c1:9093",))
    assert not none.ok and "no controller answers DescribeQuorum (asked: c1:9093)" in none.missing[0]
    leaderless = judge_reading(Gate.CONTROLLERS_READY, obs(q=quorum(voters=(1, 2, 3), leader=-1)))
    assert leaderless.missing == ("the quorum has no leader (voters 1, 2, 3): a majority of the controllers must run "
                                  "and reach each other on the controller listener",)
    lagging = judge_reading(Gate.CONTROLLERS_READY, obs(q=quorum(voters=(1, 2, 3), leader=1, lag={1: 0, 2: 5, 3: 400})))
    assert lagging.missing == ("voter 3 not caught up (400 records behind the leader)",)
    assert judge_reading(Gate.CONTROLLERS_READY, obs(q=quorum(voters=(1, 2, 3), leader=1, lag={1: 0, 2: 0, 3: 1}))).ok


def test_controllers_ready_holds_over_several_readings():
    watch = GateWatch(Gate.CONTROLLERS_READY, needed=3)
    good = obs(q=quorum(voters=(1, 2, 3), leader=1, lag={1: 0, 2: 0, 3: 0}))
    behind = obs(q=quorum(voters=(1, 2, 3), leader=1, lag={1: 0, 2: 0, 3: 50}))
    assert not watch.observe(good) and not watch.observe(good)
    assert watch.missing == ("3 passing readings in a row (2 so far)",)
    assert not watch.observe(behind) and watch.consecutive == 0  # one bad reading starts the run again
    assert [watch.observe(good) for _ in range(3)] == [False, False, True]
    assert watch.summary() == "phase controllers-ready: gate controllers-ready passed"


def test_controllers_ready_passes_later_in_the_migration_too():
    late = obs(zk=(), controller=KRAFT_CONTROLLER, offset=900, q=quorum(observers=BROKERS, hw=5000), flags={3000: False})
    check = judge_reading(Gate.CONTROLLERS_READY, late)
    assert check.ok and check.past


# ---------------------------------------------------------------- dual-write
def test_dual_write_names_what_is_missing_before_roll_1_ends():
    check = judge_reading(Gate.DUAL_WRITE, obs(offset=-1, q=quorum(observers=(101,))))
    assert not check.ok
    assert check.missing[0] == ("/controller has no kraftControllerEpoch: the KRaft controller has not taken the "
                                "controllership (held by broker 101)")
    assert check.missing[1].startswith("/migration's metadata offset is -1: the controller has not copied")
    assert check.missing[2:] == ("brokers 205, 310 not registered with KRaft: in ZooKeeper mode without the migration "
                                 "settings (roll 1: kmigrate kraft broker-config ID --phase migration, then restart)",)


def test_dual_write_needs_the_offset_to_advance():
    watch = GateWatch(Gate.DUAL_WRITE, needed=2)
    q = quorum(observers=BROKERS)
    assert not watch.observe(obs(controller=KRAFT_CONTROLLER, offset=240, q=q))
    assert not watch.observe(obs(controller=KRAFT_CONTROLLER, offset=240, q=q))  # two in a row, but standing still
    assert watch.missing[0].startswith("/migration's offset to advance past 240")
    assert watch.observe(obs(controller=KRAFT_CONTROLLER, offset=260, q=q))
    assert watch.summary() == "phase dual-write: gate dual-write passed"


def test_dual_write_gate_a_stuck_controller_times_out_naming_the_dead_id():
    watch = GateWatch(Gate.DUAL_WRITE, needed=1)
    for _ in range(5):
        assert not watch.observe(obs(assigned=BROKERS + (999,), offset=-1, q=quorum(observers=BROKERS)))
    assert ("broker 999 not registered with KRaft: named by assignments but not live (a dead id: start it or reassign "
            "its partitions; kmigrate kraft precheck lists them)") in watch.summary()
    assert watch.summary().startswith("phase waiting-for-brokers: waiting for /controller has no kraftControllerEpoch")


def test_dual_write_during_roll_2_still_passes_and_after_finalize_is_past():
    roll2 = obs(zk=(205, 310), controller=KRAFT_CONTROLLER, offset=300, q=quorum(observers=BROKERS))
    assert judge_reading(Gate.DUAL_WRITE, roll2).ok
    done = obs(zk=(), controller=KRAFT_CONTROLLER, offset=300, q=quorum(observers=BROKERS, hw=9000), flags={3000: False})
    check = judge_reading(Gate.DUAL_WRITE, done)
    assert check.ok and check.past
    watch = GateWatch(Gate.DUAL_WRITE, needed=1)
    assert watch.observe(done) and watch.summary().endswith("(already past it)")  # no advancing asked of a finalized cluster


# ---------------------------------------------------------------- brokers-kraft
def test_brokers_kraft_names_the_zookeeper_brokers_the_unseen_and_offline_partitions():
    check = judge_reading(Gate.BROKERS_KRAFT, obs(zk=(310,), controller=KRAFT_CONTROLLER, offset=300,
                                                  q=quorum(observers=(101, 310))), offline=("orders-0", "orders-2"))
    assert not check.ok
    assert check.missing == (
        "broker 310 in migration mode (roll 1's config), still in /brokers/ids: roll 2, restart it with kmigrate kraft "
        "broker-config ID --phase kraft",
        "broker 205 not seen by the quorum: not in /brokers/ids either (stopped, restarting, or not fetching yet from a "
        "restarted controller? a KRaft broker needs node.id and controller.quorum.voters naming these controllers)",
        "2 offline partitions (no leader): orders-0, orders-2",
    )


def test_brokers_kraft_waits_when_the_partitions_cannot_be_read():
    done = obs(zk=(), controller=KRAFT_CONTROLLER, offset=300, q=quorum(observers=BROKERS))
    assert judge_reading(Gate.BROKERS_KRAFT, done, offline=()).ok
    check = judge_reading(Gate.BROKERS_KRAFT, done, offline=None)
    assert check.missing == ("the partitions' leaders, unread: no broker answered (give --bootstrap-server, the brokers' "
                             "listeners; a broker restarting right now answers again soon)",)


def test_brokers_kraft_not_reached_during_dual_write():
    check = judge_reading(Gate.BROKERS_KRAFT, obs(controller=KRAFT_CONTROLLER, offset=300, q=quorum(observers=BROKERS)), offline=())
    assert not check.ok and check.missing[0].startswith("brokers 101, 205, 310 in migration mode (roll 1's config), still in")


# ---------------------------------------------------------------- finalized
def test_finalized_needs_every_voter_without_the_flag():
    base = dict(zk=(), controller=KRAFT_CONTROLLER, offset=300, q=quorum(observers=BROKERS, voters=(3000, 3001, 3002),
                                                                          lag={3000: 0, 3001: 0, 3002: 0}))
    check = judge_reading(Gate.FINALIZED, obs(**base, flags={3000: False, 3001: True}), offline=())
    assert check.missing == (
        "controller 3001 still runs with the migration flag: roll it with kmigrate kraft controller-config ID --finalize",
        "the migration flag of controller 3002 could not be read (DescribeConfigs on the controller listener; give "
        "--bootstrap-controller)",
    )
    assert judge_reading(Gate.FINALIZED, obs(**base, flags={3000: False, 3001: False, 3002: False}), offline=()).ok


def test_finalized_waits_for_every_broker_to_be_seen_again():
    """After the controller roll the restarted controller sees each broker only once it fetches again."""
    q = quorum(observers=(101,))
    check = judge_reading(Gate.FINALIZED, obs(zk=(), controller=KRAFT_CONTROLLER, offset=300, q=q, flags={3000: False}),
                          offline=())
    assert [m.split(":")[0] for m in check.missing] == ["brokers 205, 310 not seen by the quorum"]


def test_a_watch_needs_one_reading_or_more():
    with pytest.raises(ValueError):
        GateWatch(Gate.FINALIZED, needed=0)
    assert GateWatch(Gate.FINALIZED).summary() == "finalized: no reading yet"


# ---------------------------------------------------------------- finalize refused (KAFKA-20960)
def test_finalize_is_refused_naming_each_broker_left_behind_and_the_fix():
    """Roll 2 half done: 101 is KRaft, 205 still runs roll 1's config (migration mode), 310 never got it (ZooKeeper
    mode), and 400 (known from an assignment) is out of /brokers/ids but not seen by the quorum."""
    reading = obs(zk=(205, 310), assigned=BROKERS + (400,), controller=KRAFT_CONTROLLER, offset=500,
                  q=quorum(observers=(101, 205)))
    line = finalize_refusal(reading, offline=())
    assert line.startswith("refusing to finalize, after which there is no way back to ZooKeeper (Kafka would let it "
                           "happen: KAFKA-20960): broker 310 in ZooKeeper mode and broker 205 in migration mode "
                           "(roll 1's config), still in /brokers/ids: roll 2, restart each with kmigrate kraft "
                           "broker-config ID --phase kraft; broker 400 not seen by the quorum: not in /brokers/ids either")
    assert line.endswith("; then kmigrate kraft status --wait-for brokers-kraft, and run this again")
    assert "\n" not in line


def test_finalize_is_refused_while_a_partition_is_offline_or_unread_and_allowed_once_all_is_kraft():
    done = obs(zk=(), controller=KRAFT_CONTROLLER, offset=500, q=quorum(observers=BROKERS))
    assert "1 offline partition (no leader): orders-1" in finalize_refusal(done, offline=("orders-1",))
    assert "the partitions' leaders, unread: no broker answered" in finalize_refusal(done, offline=None)
    assert finalize_refusal(done, offline=()) is None
    finalized = obs(zk=(), controller=KRAFT_CONTROLLER, offset=500, q=quorum(observers=BROKERS, hw=9000), flags={3000: False})
    assert finalize_refusal(finalized, offline=()) is None  # a controller left to roll after the others


def test_finalize_is_refused_without_a_quorum_answer():
    line = finalize_refusal(obs(zk=(), controller=KRAFT_CONTROLLER, offset=500), offline=(), controllers=("c1:9093",))
    assert "no controller answers DescribeQuorum (asked: c1:9093)" in line


# ------------------------------------------------------------------ ZooKeeper retired
def retired(q, flags, modes=None, why="not reachable") -> Observation:
    return Observation(None, (), (), None, None, None, q, (), dict(flags), zookeeper_unread=why,
                       zookeeper_connect="zk1:2181/kafka" if why == "not reachable" else None,
                       broker_modes_read=dict(modes or {}))


def test_finalized_gate_passes_with_zookeeper_stopped_and_the_earlier_gates_are_past():
    o = retired(quorum(BROKERS), {3000: False}, {b: "kraft" for b in BROKERS})
    for gate in Gate:
        check = judge_reading(gate, o, offline=())
        assert check.ok and check.phase.phase.value == "finalized", (gate, check.missing)
        assert check.past == (gate is not Gate.FINALIZED)
    watch = GateWatch(Gate.FINALIZED, needed=2)
    assert not watch.observe(o, ()) and watch.observe(o, ())
    assert not judge_reading(Gate.FINALIZED, o, offline=("t-0",)).ok  # an offline partition still holds it


def test_before_finalize_without_zookeeper_only_controllers_ready_can_pass():
    o = retired(quorum(BROKERS), {3000: True}, {b: "migration" for b in BROKERS})
    assert judge_reading(Gate.CONTROLLERS_READY, o).ok
    for gate in (Gate.DUAL_WRITE, Gate.BROKERS_KRAFT, Gate.FINALIZED):
        check = judge_reading(gate, o, offline=())
        assert not check.ok and check.phase.phase.value == "unknown"
        assert any(m.startswith("ZooKeeper at zk1:2181/kafka to answer: the phase cannot be known without ZooKeeper (not "
                                "reachable at zk1:2181/kafka): controller 3000 still runs with the migration flag")
                   for m in check.missing), check.missing
    check = judge_reading(Gate.CONTROLLERS_READY, retired(None, {}), controllers=("c1:9093",))
    assert not check.ok and "no controller answers DescribeQuorum (asked: c1:9093)" in check.missing[0]
