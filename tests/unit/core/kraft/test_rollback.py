"""The KRaft rollback's decisions (``core/kraft/rollback``): which step is next, the refusals, KAFKA-20488."""

from __future__ import annotations

import doctest
from dataclasses import replace

from migrate.core.kraft import rollback as kr
from migrate.core.kraft.rollback import RollbackView, Step, next_step, remaining, znode_change

BROKERS = (101, 205, 310)
KRAFT = {"version": 2, "brokerid": 3000, "timestamp": "1", "kraftControllerEpoch": 1}
ZK_CONTROLLER = {"version": 2, "brokerid": 205, "timestamp": "1", "kraftControllerEpoch": -1}
MIGRATION = {"version": 0, "kraft_controller_id": 3000, "kraft_controller_epoch": 1, "kraft_metadata_offset": 240}
FLAGGED = {b: True for b in BROKERS}
CLEAN = {b: False for b in BROKERS}


def view(zk=BROKERS, controller=KRAFT, epoch=3, migration=MIGRATION, answering=(3000,), flags=FLAGGED, offline=None,
         finalized=False, known=True) -> RollbackView:
    return RollbackView(BROKERS, tuple(zk), controller, epoch, migration, tuple(answering), known, finalized,
                        "controller 3000 runs without the migration flag" if finalized else "", flags, offline)


def test_doctests():
    assert doctest.testmod(kr).failed == 0


def test_finalized_is_refused_with_one_line():
    d = next_step(view(zk=(), flags={}, finalized=True))
    assert d.step == Step.REFUSED and "finalized" in d.message and "nothing was changed" in d.message
    assert "\n" not in d.message


def test_every_broker_kraft_and_no_controller_answering_is_refused():
    """Finalized then stopped, or dual-write with the controllers down: ZooKeeper alone cannot tell them apart."""
    d = next_step(view(zk=(), flags={}, answering=()))
    assert d.step == Step.REFUSED and "cannot tell a finalized migration" in d.message


def test_dual_write_first_stops_the_controllers():
    d = next_step(view())
    assert d.step == Step.STOP_CONTROLLERS and d.controllers == (3000,)
    assert "stop the KRaft controller 3000 now" in d.message


def test_a_controller_still_listening_is_not_taken_for_stopped():
    """A TLS/SASL controller listener kmigrate was given no settings for answers nothing, but its port is open."""
    d = next_step(replace(view(answering=()), accepting_controllers=("c1:9093",)))
    assert d.step == Step.STOP_CONTROLLERS and "listening at c1:9093" in d.message
    assert "--controller-command-config" in d.message


def test_roll_2_started_brokers_back_to_migration_first_while_the_controllers_run():
    d = next_step(view(zk=(101,)), " --playbook pb.yaml")
    assert d.step == Step.BROKERS_TO_MIGRATION and d.brokers == (205, 310)
    assert "kmigrate kraft broker-config 205 --phase migration --full --playbook pb.yaml" in d.message
    assert "KAFKA-20762" not in d.message  # a broker restarting is not stuck yet
    stuck = next_step(replace(view(zk=(101,)), long_missing=(310,)))
    assert "broker 310 still not back" in stuck.message and "KAFKA-20762" in stuck.message  # the formatted-node trap


def test_controllers_stopped_then_the_znodes_in_one_transaction():
    d = next_step(view(answering=()))
    assert d.step == Step.DELETE_ZNODES
    assert d.change.delete_controller and d.change.delete_migration and d.change.raise_epoch_to is None
    assert d.message.startswith("in one ZooKeeper transaction: delete /controller (KRaft controller 3000); delete /migration")


def test_kafka_20488_epoch_raised_above_the_kraft_epoch():
    """The KRaft controller epoch (7) is not below /controller_epoch (5): the ZooKeeper controller elected next would
    take 6 and abort the election of every partition the dual-write wrote with epoch 7."""
    d = next_step(view(controller={**KRAFT, "kraftControllerEpoch": 7}, epoch=5, answering=()))
    assert d.step == Step.DELETE_ZNODES and d.change.raise_epoch_to == 8
    assert "raise /controller_epoch from 5 to 8" in d.message and "KAFKA-20488" in d.message
    equal = next_step(view(controller={**KRAFT, "kraftControllerEpoch": 5}, epoch=5, answering=()))
    assert equal.change.raise_epoch_to == 6
    above = next_step(view(controller={**KRAFT, "kraftControllerEpoch": 4}, epoch=5, answering=()))
    assert above.change.raise_epoch_to is None


def test_a_zookeeper_broker_holding_controller_is_left_alone():
    """Rolled back from controllers-ready: a broker holds /controller; only /migration (offset -1) goes."""
    change = znode_change(view(controller=ZK_CONTROLLER, answering=(), migration={**MIGRATION, "kraft_metadata_offset": -1}))
    assert not change.delete_controller and change.delete_migration and change.raise_epoch_to is None


def test_unknown_controllers_refused_before_any_write():
    d = next_step(view(answering=(), known=False))
    assert d.step == Step.REFUSED and "--bootstrap-controller" in d.message


def test_after_the_transaction_the_brokers_roll_to_zookeeper_mode():
    d = next_step(view(controller=None, migration=None, answering=(), flags={101: False, 205: True, 310: True}))
    assert d.step == Step.BROKERS_TO_ZOOKEEPER and d.brokers == (205, 310)
    assert "zookeeper.metadata.migration.enable" in d.message and "no broker is controller" in d.message
    later = next_step(view(controller=ZK_CONTROLLER, migration=None, answering=(), flags={101: False, 205: False, 310: True}))
    assert later.brokers == (310,) and "broker 205 is the ZooKeeper-mode controller" in later.message
    assert "no broker is controller" not in later.message


def test_a_broker_not_answering_is_waited_for_and_the_trap_named():
    v = view(controller=None, migration=None, answering=(), flags={101: False, 205: False})
    d = next_step(v)
    assert d.step == Step.BROKERS_TO_ZOOKEEPER and d.brokers == (310,) and "broker 310 not answering" in d.message
    assert "KAFKA-20762" in next_step(replace(v, long_missing=(310,))).message


def test_waits_for_a_zookeeper_controller_then_for_no_offline_partition():
    none = next_step(view(controller=None, migration=None, answering=(), flags=CLEAN))
    assert none.step == Step.BROKERS_TO_ZOOKEEPER and "take /controller" in none.message
    offline = next_step(view(controller=ZK_CONTROLLER, migration=None, answering=(), flags=CLEAN, offline=("orders-1",)))
    assert offline.step == Step.BROKERS_TO_ZOOKEEPER and "1 offline partition (orders-1)" in offline.message
    unread = next_step(view(controller=ZK_CONTROLLER, migration=None, answering=(), flags=CLEAN))
    assert unread.step == Step.BROKERS_TO_ZOOKEEPER


def test_done_and_a_rerun_stays_done():
    v = view(controller=ZK_CONTROLLER, migration=None, answering=(), flags=CLEAN, offline=())
    d = next_step(v)
    assert d.step == Step.DONE and "broker 205 the controller" in d.message
    assert znode_change(v).empty  # nothing left to delete: a rerun writes nothing


def test_dry_run_plan_from_the_next_step_on():
    first, steps = remaining(view())
    assert first.step == Step.STOP_CONTROLLERS
    assert [s for s, _, _ in steps] == [Step.STOP_CONTROLLERS, Step.DELETE_ZNODES, Step.BROKERS_TO_ZOOKEEPER]
    first, steps = remaining(view(zk=(101,)))
    assert first.step == Step.BROKERS_TO_MIGRATION and len(steps) == 4
    assert remaining(view(zk=(), flags={}, finalized=True))[1] == ()
