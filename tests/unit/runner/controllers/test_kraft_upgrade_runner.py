"""``kmigrate controllers upgrade-kraft-version``'s sequencing (migrate.runner.controllers.upgrade) on a fake quorum:
what is sent, to whom, how often, and that kraft.version is read back, never assumed. The adapters are replaced by a
small in-memory cluster; the real ones are exercised by tests/integration/test_controllers_static.py."""

from __future__ import annotations

import pytest

from migrate.adapters.kafka import voters as kv
from migrate.core.controllers.quorum import Endpoint, Quorum, Replica
from migrate.errors import BadInput, StepFailed
from migrate.runner.controllers import upgrade as ru
from migrate.waiting import FakeClock

ADDRESS = {1: "c1:9093", 2: "c2:9093", 3: "c3:9093"}


class FakeCluster:
    """Three static voters; ``leader`` answers DescribeQuorum; ``kraft`` the finalized kraft.version; ``refusals``:
    the errors UpdateFeatures answers, in turn (then it succeeds); ``lose_answer``: it succeeds but no answer comes."""

    def __init__(self, kraft=0, leader=1, mv=27, refusals=(), lose_answer=False, lagging_reads=0):
        self.kraft, self.leader, self.mv = kraft, leader, mv
        self.refusals = list(refusals)
        self.lose_answer = lose_answer
        self.lagging_reads = lagging_reads  # voter reads that still show 0 after the upgrade
        self.sent: list[str] = []
        self.static = {1: "1@c1:9093,2@c2:9093,3@c3:9093", 2: "1@c1:9093,2@c2:9093,3@c3:9093", 3: ""}

    def quorum(self) -> Quorum:
        dirs = {i: (f"d{i}" if self.kraft else None) for i in ADDRESS}
        voters = tuple(Replica(i, dirs[i], 10, 1, 1) for i in ADDRESS)
        return Quorum(self.leader, 3, 10, voters, (), {i: (Endpoint("CONTROLLER", a.split(":")[0], 9093),)
                                                     for i, a in ADDRESS.items()})

    def read_controllers(self, addresses, settings=None, timeout_s=5.0):
        if self.leader is None:
            raise StepFailed("no KRaft leader answered DescribeQuorum")
        return kv.ControllerView(ADDRESS[self.leader], self.quorum(), self.kraft)

    def controller_features(self, address, settings=None, timeout_s=5.0):
        return {"finalized": {"metadata.version": self.mv, **({"kraft.version": 1} if self.kraft else {})},
                "supported": {"metadata.version": (7, self.mv)}}

    def kraft_version(self, address, settings=None, timeout_s=5.0):
        if self.lagging_reads:
            self.lagging_reads -= 1
            return 0
        return self.kraft

    def upgrade_kraft_version(self, leader, *, settings=None, timeout_s=30.0, validate_only=False):
        self.sent.append(leader)
        if leader != ADDRESS[self.leader]:
            raise kv.FeatureUpdateError(f"{leader}: NOT_CONTROLLER", "NOT_CONTROLLER")
        if self.refusals:
            error = self.refusals.pop(0)
            if error == "NOT_CONTROLLER":  # the leadership moved on
                self.leader = 2 if self.leader == 1 else 1
            raise kv.FeatureUpdateError(f"{leader}: {error}", error)
        self.kraft = 1
        if self.lose_answer:
            raise kv.FeatureUpdateError("no answer", "NO_ANSWER")

    def controller_configs(self, address, node_id, names, timeout_s=5.0, settings=None):
        return {"controller.quorum.voters": self.static[node_id]}


@pytest.fixture
def fake(monkeypatch):
    def install(**kw) -> FakeCluster:
        cluster = FakeCluster(**kw)
        for name in ("read_controllers", "controller_features", "kraft_version", "upgrade_kraft_version"):
            monkeypatch.setattr(kv, name, getattr(cluster, name))
        import migrate.adapters.kafka.quorum as kq

        monkeypatch.setattr(kq, "controller_configs", cluster.controller_configs)
        return cluster
    return install


def run(**kw) -> ru.KraftUpgradeResult:
    request = ru.KraftUpgradeRequest(controllers=("c1:9093",), interval_s=1.0, timeout_s=10.0, **kw)
    return ru.KraftUpgrade(request, clock=FakeClock()).run()


def test_sends_once_to_the_active_controller_and_reads_1_back(fake):
    cluster = fake(leader=2)
    result = run()
    assert cluster.sent == ["c2:9093"] and result.action == "upgraded"
    assert (result.kraft_version_before, result.kraft_version_after, result.release) == (0, 1, "4.1")
    assert result.voters == [{"id": i, "directory_id": f"d{i}"} for i in (1, 2, 3)]
    assert result.static_controllers == [1, 2] and result.static_brokers is None
    assert result.bootstrap_servers == "c1:9093,c2:9093,c3:9093"
    assert result.next_steps[0].startswith("on controllers 1 and 2:") and result.next_steps[1].startswith("on every broker")


def test_dry_run_and_rerun_send_nothing(fake):
    cluster = fake()
    dry = run(dry_run=True)
    assert cluster.sent == [] and dry.action == "dry-run" and "controller 1 at c1:9093" in dry.request
    assert dry.kraft_version_after == 0 and dry.next_steps[0].startswith("run it without --dry-run")
    cluster = fake(kraft=1)
    again = run()
    assert cluster.sent == [] and again.action == "already-dynamic" and again.request == ""


def test_not_controller_sends_again_to_the_new_leader(fake):
    cluster = fake(refusals=["NOT_CONTROLLER"])
    result = run()
    assert cluster.sent == ["c1:9093", "c2:9093"] and result.action == "upgraded" and cluster.kraft == 1


def test_a_lost_answer_is_read_back_not_sent_again(fake):
    cluster = fake(lose_answer=True)
    assert run().action == "upgraded" and cluster.sent == ["c1:9093"]


def test_a_refusal_kafka_will_repeat_stops_with_kraft_version_read_again(fake):
    cluster = fake(refusals=["INVALID_UPDATE_VERSION"])
    with pytest.raises(StepFailed, match=r"INVALID_UPDATE_VERSION \(sent 1 time\(s\)\); kraft.version is still 0"):
        run()
    assert cluster.sent == ["c1:9093"]


def test_retriable_refusals_stop_after_max_tries(fake):
    cluster = fake(refusals=["REQUEST_TIMED_OUT"] * 5)
    with pytest.raises(StepFailed, match="sent 3 time"):
        run()
    assert len(cluster.sent) == ru.MAX_TRIES


def test_waits_until_every_voter_shows_1(fake):
    cluster = fake(lagging_reads=2)
    result = run()
    assert result.action == "upgraded" and cluster.lagging_reads == 0


def test_refusals_send_nothing(fake):
    cluster = fake(mv=25)  # Kafka 4.0 controllers
    with pytest.raises(BadInput, match="Kafka 4.0"):
        run()
    with pytest.raises(BadInput, match="--kafka-version 4.4, but a controller supports"):
        run(release=(4, 4))
    assert cluster.sent == []


def test_no_leader_while_a_controller_answers_is_bad_input(fake):
    cluster = fake(leader=None)
    with pytest.raises(BadInput, match="no leader"):
        run()
    assert cluster.sent == []


def test_brokers_that_do_not_answer_are_bad_input_before_anything_is_sent(fake, monkeypatch):
    from migrate.core.clientconfig import ClientSettings

    cluster = fake()
    monkeypatch.setattr(kv, "broker_finalized_features", lambda settings, timeout_s=10.0: None)
    with pytest.raises(BadInput, match="no broker answered at --bootstrap-server b1:9092"):
        run(broker_settings=ClientSettings("b1:9092"))
    assert cluster.sent == []


def test_an_observer_controller_that_never_registered_is_named_to_restart(fake, monkeypatch):
    """With --bootstrap-server: observers that are neither registered brokers (fenced ones too) nor registered
    controllers are controllers whose registration gave up: the first step left is their restart."""
    from dataclasses import replace

    import migrate.adapters.kafka.client as kc
    import migrate.adapters.kraft.registrations as kr
    from migrate.core.clientconfig import ClientSettings

    cluster = fake()
    observed = replace(cluster.quorum(), observers=tuple(Replica(i, f"d{i}", 10, 1, 1) for i in (101, 102, 7, 8)))
    monkeypatch.setattr(kv, "read_controllers", lambda *a, **k: kv.ControllerView("c1:9093", observed, cluster.kraft))
    monkeypatch.setattr(kv, "broker_finalized_features", lambda settings, timeout_s=10.0: {"kraft.version": cluster.kraft})
    monkeypatch.setattr(kv, "describe_cluster_controllers", lambda address, settings=None, timeout_s=5.0: {
        "cluster_id": "c", "active_id": 1, "controllers": {1: "c1:9093", 2: "c2:9093", 3: "c3:9093", 8: "c8:9093"}})
    monkeypatch.setattr(kr, "broker_registrations", lambda bootstrap, settings=None, timeout_s=10.0: (
        {101: object(), 102: object()}, True))  # 102: fenced, stopped, still observing
    monkeypatch.setattr(kc, "admin_client", lambda settings, timeout_s=10.0: None)
    monkeypatch.setattr(kc, "live_broker_ids", lambda admin, timeout_s=10.0: [101])
    monkeypatch.setattr(kc, "broker_static_configs", lambda admin, ids, names: {101: {}})
    result = run(broker_settings=ClientSettings("b1:9092"))
    assert result.action == "upgraded" and result.static_brokers == []
    assert result.next_steps[0].startswith("restart controller 7 (an observer, not registered"), result.next_steps
    assert not [s for s in result.next_steps if "controller 8" in s or "102" in s]
