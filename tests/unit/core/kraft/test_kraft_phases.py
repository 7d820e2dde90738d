"""Where a ZooKeeper-to-KRaft migration stands, from one reading (``core/kraft/phases``)."""

from __future__ import annotations

import doctest

from migrate.core.kraft import phases as kp
from migrate.core.kraft.phases import Observation, Phase, QuorumView, phase_of

BROKERS = (101, 205, 310)
MIGRATION = {"version": 0, "kraft_controller_id": 3000, "kraft_controller_epoch": 1, "kraft_metadata_offset": 240,
             "kraft_metadata_epoch": 1}
KRAFT_CONTROLLER = {"version": 2, "brokerid": 3000, "timestamp": "1", "kraftControllerEpoch": 1}


def quorum(observers=(), hw=250) -> QuorumView:
    return QuorumView(3000, 1, hw, (3000,), tuple(observers))


def obs(zk=BROKERS, assigned=BROKERS, controller=None, migration=None, q=None, known=()) -> Observation:
    return Observation("cid", tuple(zk), tuple(assigned), controller, 5, migration, q, tuple(known))


def test_doctests():
    assert doctest.testmod(kp).failed == 0


def test_no_quorum_is_zookeeper_mode():
    r = phase_of(obs(controller={"version": 1, "brokerid": 101}))
    assert r.phase == Phase.ZOOKEEPER and r.broker_modes(BROKERS) == {101: "zookeeper", 205: "zookeeper", 310: "zookeeper"}


def test_controllers_up_and_no_broker_registered_names_every_broker():
    r = phase_of(obs(controller={"version": 1, "brokerid": 101}, q=quorum()))
    assert r.phase == Phase.CONTROLLERS_READY and r.waiting_for == BROKERS
    assert "101, 205, 310" in r.detail


def test_a_dead_id_in_an_assignment_is_waited_for():
    """The classic WAIT_FOR_BROKERS: broker 999 is in an assignment, not in /brokers/ids, and never registers."""
    r = phase_of(obs(assigned=BROKERS + (999,), q=quorum(observers=BROKERS)))
    assert r.phase == Phase.WAITING_FOR_BROKERS and r.waiting_for == (999,)
    assert "broker 999 to register" in r.detail


def test_roll_1_half_done():
    r = phase_of(obs(q=quorum(observers=(101,))))
    assert r.phase == Phase.WAITING_FOR_BROKERS and r.waiting_for == (205, 310)
    assert r.broker_modes(BROKERS) == {101: "migration", 205: "zookeeper", 310: "zookeeper"}


def test_dual_write_once_copied_with_every_broker_in_zookeeper():
    r = phase_of(obs(controller=KRAFT_CONTROLLER, migration=MIGRATION, q=quorum(observers=BROKERS)))
    assert r.phase == Phase.DUAL_WRITE and "offset 240" in r.detail
    assert set(r.broker_modes(BROKERS).values()) == {"migration"}


def test_not_copied_yet_while_the_offset_is_minus_one():
    r = phase_of(obs(controller=KRAFT_CONTROLLER, migration={**MIGRATION, "kraft_metadata_offset": -1},
                     q=quorum(observers=BROKERS)))
    assert r.phase == Phase.WAITING_FOR_BROKERS and r.waiting_for == ()


def test_roll_2_some_then_all_brokers_kraft():
    r = phase_of(obs(zk=(205, 310), controller=KRAFT_CONTROLLER, migration=MIGRATION, q=quorum(observers=BROKERS)))
    assert r.phase == Phase.BROKERS_KRAFT and r.broker_modes(BROKERS) == {101: "kraft", 205: "migration", 310: "migration"}
    r = phase_of(obs(zk=(), controller=KRAFT_CONTROLLER, migration=MIGRATION, q=quorum(observers=BROKERS)))
    assert r.phase == Phase.BROKERS_KRAFT and set(r.broker_modes(BROKERS).values()) == {"kraft"}


def test_finalized_when_zookeeper_falls_behind_the_metadata_log():
    r = phase_of(obs(zk=(), controller=KRAFT_CONTROLLER, migration=MIGRATION,
                     q=quorum(observers=BROKERS, hw=240 + kp.FINALIZED_LAG + 1)))
    assert r.phase == Phase.FINALIZED


def test_a_stopped_broker_is_unknown_not_kraft():
    r = phase_of(obs(zk=(205, 310), controller=KRAFT_CONTROLLER, migration=MIGRATION, q=quorum(observers=(205, 310))))
    assert r.phase == Phase.DUAL_WRITE and r.broker_modes(BROKERS)[101] == "unknown"


def test_znode_parsing_is_lenient():
    assert kp.parse_json_znode(b"") is None and kp.parse_json_znode(b"{bad") is None and kp.parse_json_znode(b"[1]") is None
    assert kp.parse_int_znode(b"7") == 7 and kp.parse_int_znode(None) is None
    assert kp.assigned_broker_ids({"t": b'{"version":2,"partitions":{"0":[1,2],"1":[3,2]}}', "u": None}) == (1, 2, 3)


def test_finalized_when_every_controller_runs_without_the_flag():
    base = dict(zk=(), controller=KRAFT_CONTROLLER, migration=MIGRATION, q=quorum(observers=BROKERS))
    o = obs(**base)
    assert phase_of(Observation(**{**o.__dict__, "controller_migration": {3000: False}})).phase == Phase.FINALIZED
    still = phase_of(Observation(**{**o.__dict__, "controller_migration": {3000: True}}))
    assert still.phase == Phase.BROKERS_KRAFT
    lagging = obs(**{**base, "q": quorum(observers=BROKERS, hw=10_000)})  # a lag says nothing once a controller answered
    assert phase_of(Observation(**{**lagging.__dict__, "controller_migration": {3000: True}})).phase == Phase.BROKERS_KRAFT


def test_without_a_quorum_answer_zookeeper_alone_tells_dual_write():
    """ZooKeeper-mode brokers (roll 1 included) do not forward DescribeQuorum: its listeners are broker and
    controller, not zkBroker (seen on 3.9.2)."""
    r = phase_of(obs(controller=KRAFT_CONTROLLER, migration=MIGRATION))
    assert r.phase == Phase.DUAL_WRITE and "--bootstrap-controller" in r.detail
    r = phase_of(obs(zk=(310,), controller=KRAFT_CONTROLLER, migration=MIGRATION))
    assert r.phase == Phase.BROKERS_KRAFT and "brokers 101, 205 out of /brokers/ids" in r.detail


def test_a_zookeeper_controller_writes_minus_one_as_its_kraft_epoch():
    zk_controller = {"version": 2, "brokerid": 310, "kraftControllerEpoch": -1}
    o = obs(controller=zk_controller, migration=None, q=quorum())
    assert o.kraft_controller_epoch is None and phase_of(o).phase == Phase.CONTROLLERS_READY


# ------------------------------------------------------------------ ZooKeeper retired (not reachable, not given)
def no_zk(q=None, flags=None, modes=None, known=(), why=kp.ZOOKEEPER_UNREACHABLE, connect="zk1:2181/kafka") -> Observation:
    return Observation(None, (), (), None, None, None, q, tuple(known), dict(flags or {}), zookeeper_unread=why,
                       zookeeper_connect=connect if why == kp.ZOOKEEPER_UNREACHABLE else None,
                       broker_modes_read=dict(modes or {}))


def test_without_zookeeper_finalized_when_every_controller_is_off_the_flag_and_every_broker_kraft():
    q = QuorumView(3000, 4, 900, (3000,), BROKERS)
    r = phase_of(no_zk(q, {3000: False}, {b: "kraft" for b in BROKERS}))
    assert r.phase == Phase.FINALIZED and r.kraft_brokers == BROKERS
    assert r.broker_modes(BROKERS) == {b: "kraft" for b in BROKERS}
    assert "ZooKeeper not read (not reachable at zk1:2181/kafka): nothing needs it any more" in r.detail
    r = phase_of(no_zk(q, {3000: False}, why=kp.ZOOKEEPER_NOT_GIVEN))  # modes unread: seen by the quorum counts
    assert r.phase == Phase.FINALIZED and "ZooKeeper not read (not given)" in r.detail


def test_without_zookeeper_before_finalize_the_phase_is_unknown_naming_the_connect_string_and_why():
    q = QuorumView(3000, 4, 900, (3000,), BROKERS)
    r = phase_of(no_zk(q, {3000: True}, {101: "kraft", 205: "migration", 310: "zookeeper"}))
    assert r.phase == Phase.UNKNOWN
    assert r.detail.startswith("the phase cannot be known without ZooKeeper (not reachable at zk1:2181/kafka): ")
    assert "controller 3000 still runs with the migration flag" in r.detail
    assert "brokers 205, 310 in ZooKeeper or migration mode" in r.detail


def test_without_zookeeper_a_broker_not_kraft_or_an_unread_flag_or_no_quorum_is_not_finalized():
    q = QuorumView(3000, 4, 900, (3000, 3001), (101, 205))
    r = phase_of(no_zk(q, {3000: False}, {101: "kraft", 205: "kraft"}, known=BROKERS))
    assert r.phase == Phase.UNKNOWN
    assert "the migration flag of controller 3001 could not be read" in r.detail
    assert "broker 310 neither seen by the quorum nor answering" in r.detail
    r = phase_of(no_zk(QuorumView(3000, 4, 900, (3000,), (101,)), {3000: False}, {101: "migration"}))
    assert r.phase == Phase.UNKNOWN and "broker 101 in ZooKeeper or migration mode" in r.detail  # KAFKA-20960
    r = phase_of(no_zk(None, {}))
    assert r.phase == Phase.UNKNOWN and "no KRaft controller quorum answers" in r.detail
    r = phase_of(no_zk(QuorumView(3000, 4, 900, (3000,), ()), {3000: False}))
    assert r.phase == Phase.UNKNOWN and "no broker seen by the quorum" in r.detail


def test_without_zookeeper_the_brokers_are_the_quorum_observers_not_its_voters():
    q = QuorumView(3000, 4, 900, (3000,), (3000, 101))
    o = no_zk(q, {3000: False}, {205: "kraft"}, known=(310,))
    assert o.brokers == (101, 205, 310)
    assert obs(q=q).brokers == BROKERS  # with ZooKeeper read: its brokers, as before


def test_broker_mode_from_process_roles_and_the_flag():
    assert kp.broker_mode("broker", "false") == "kraft"
    assert kp.broker_mode(" controller , broker", None) == "kraft"
    assert kp.broker_mode("", "TRUE") == "migration"
    assert kp.broker_mode("controller", "false") == "zookeeper"
