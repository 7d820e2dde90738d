"""``runner/kraft/rollback``: the loop of ``kmigrate kraft rollback`` on canned readings and a fake clock: it names each
operator step once, does the ZooKeeper transaction itself, stops when done, exits 1 with where it stands at the
timeout, changes nothing on --dry-run or a refusal, and names a broker stuck for a while with KAFKA-20762's sign."""

from __future__ import annotations

from dataclasses import replace

import pytest

from migrate.core.clientconfig import ClientSettings
from migrate.core.kraft.rollback import RollbackView
from migrate.errors import BadInput, StepFailed
from migrate.runner.kraft import rollback as rr
from migrate.waiting import FakeClock

BROKERS = (101, 205, 310)
KRAFT = {"brokerid": 3000, "kraftControllerEpoch": 1}
ZK = {"brokerid": 205, "kraftControllerEpoch": -1}
MIGRATION = {"kraft_metadata_offset": 240}
SETTINGS = ClientSettings("b1:9092")


def v(controller=KRAFT, migration=MIGRATION, answering=(3000,), flags=True, zk=BROKERS, offline=None, **kw):
    return RollbackView(BROKERS, tuple(zk), controller, 3, migration, tuple(answering), True,
                        broker_flags={b: flags for b in zk}, offline_partitions=offline, **kw)


DUAL_WRITE = v()
STOPPED = v(answering=())
DELETED = v(controller=None, migration=None, answering=())
ROLLED = v(controller=ZK, migration=None, answering=(), flags=False, offline=())


def fake(monkeypatch, views):
    """read_view answers ``views`` in turn (the last one again); _delete_znodes records its calls."""
    seq, deleted = list(views), []

    def read_view(*args, **kwargs):
        return (seq.pop(0) if len(seq) > 1 else seq[0]), ("c1:9093",)

    monkeypatch.setattr(rr, "read_view", read_view)
    monkeypatch.setattr(rr, "_delete_znodes", lambda connect, auth, view, run, progress: (
        deleted.append(view), run.actions.append("/controller deleted")))
    return deleted


def test_converges_naming_each_operator_step_once(monkeypatch):
    deleted = fake(monkeypatch, [DUAL_WRITE, DUAL_WRITE, STOPPED, DELETED, DELETED, ROLLED])
    said, clock = [], FakeClock()
    run = rr.rollback("zk:2181/kafka", None, SETTINGS, timeout_s=60, progress=said.append, clock=clock)
    assert run.done and run.step == "done" and run.actions == ["/controller deleted"] and len(deleted) == 1
    assert [s.split(" ")[0] for s in said] == ["stop", "restart", "ZooKeeper"]  # once each, though read twice
    assert clock.slept == [2.0] * 4  # a sleep after each reading that waits for the operator, none after the write


def test_timeout_exits_1_with_where_it_stands(monkeypatch):
    fake(monkeypatch, [DUAL_WRITE])
    with pytest.raises(StepFailed, match=r"not done after 10 s; where it stands: stop the KRaft controller 3000 now"):
        rr.rollback("zk:2181/kafka", None, SETTINGS, timeout_s=10, clock=FakeClock())


def test_dry_run_and_refusal_change_nothing(monkeypatch):
    deleted = fake(monkeypatch, [STOPPED])
    run = rr.rollback("zk:2181/kafka", None, SETTINGS, dry_run=True, clock=FakeClock())
    assert run.step == "delete-znodes" and [p["step"] for p in run.plan] == ["delete-znodes", "brokers-to-zookeeper"]
    assert deleted == [] and not run.done
    fake(monkeypatch, [replace(DUAL_WRITE, finalized=True)])
    with pytest.raises(BadInput, match="finalized"):
        rr.rollback("zk:2181/kafka", None, SETTINGS, clock=FakeClock())
    with pytest.raises(BadInput, match="--bootstrap-server"):
        rr.rollback("zk:2181/kafka", None, None, clock=FakeClock())


def test_a_broker_silent_for_90_s_is_named_with_kafka_20762(monkeypatch):
    silent = replace(DELETED, broker_flags={101: False, 205: False})
    fake(monkeypatch, [silent])
    said = []
    with pytest.raises(StepFailed):
        rr.rollback("zk:2181/kafka", None, SETTINGS, timeout_s=120, progress=said.append, clock=FakeClock())
    assert "KAFKA-20762" not in said[0] and "broker 310 still not back" in said[-1] and "KAFKA-20762" in said[-1]
