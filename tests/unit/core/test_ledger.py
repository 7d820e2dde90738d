"""The bookkeeping ledger (core/ledger.py): records written by the previous version read the same.

``OLD_RECORDS`` are the exact key and value bytes that kmigrate 94e2d81 (``adapters/bookkeeping.py``,
before the ledger moved to core) wrote for every record kind: a migration started by that version
must resume with this one, so they must decode and fold to the same ledger, and the new code must
write the same bytes for the same record.
"""

import json

from migrate.core.ledger import DEFAULT_TOPIC, KINDS, SCHEMA, Ledger, decode, encode, make_record
from migrate.core.partitions.phases import ReplicaProgress

from ledger_records import OLD_RECORDS  # tests/ is on the path (tests/conftest.py is there)

T = 1700000000.123


# the calls that wrote OLD_RECORDS, in order
REMADE = [
    ("p1", "plan", "plan", T, dict(mapping={"1": 4, "2": 5}, throttle_bytes_per_s=10485760)),
    ("p1", "submitted", "orders", T + 1, dict(topic="orders", partitions={0: [4, 5], 1: [5, 6]})),
    ("p1", "throttle-broker", "4/leader.replication.throttled.rate", T + 2,
     dict(broker=4, config="leader.replication.throttled.rate", value="10485760", prior=None)),
    ("p1", "throttle-broker", "4/leader.replication.throttled.rate", T + 2.5,
     dict(broker=4, config="leader.replication.throttled.rate", value="20971520", prior="10485760")),
    ("p1", "throttle-broker", "5/follower.replication.throttled.rate", T + 3,
     dict(broker=5, config="follower.replication.throttled.rate", value="10485760", prior="5000")),
    ("p1", "throttle-topic", "orders/leader.replication.throttled.replicas", T + 4,
     dict(topic="orders", config="leader.replication.throttled.replicas", entries=["0:1", "1:2"])),
    ("p1", "throttle-topic", "orders/follower.replication.throttled.replicas", T + 4,
     dict(topic="orders", config="follower.replication.throttled.replicas", entries=["0:4", "1:5"])),
    ("p1", "topic-moved", "orders", T + 5, dict(topic="orders", target={0: [4, 5], 1: [5, 6]}, moved_partitions=[0, 1])),
    ("p1", "topic-moved", "orders", T + 5.5, dict(topic="orders", target={0: [4, 5], 1: [5, 6]}, moved_partitions=[0, 1])),
    ("p0", "topic-moved", "payments", T + 6, dict(topic="payments", target={0: [4]}, moved_partitions=[0])),
    ("p1", "cancelled", "stuck", T + 7, dict(topic="stuck", partitions=[0, 2])),
    ("p1", "throttle-cleared", "4/leader.replication.throttled.rate", T + 8,
     dict(scope="broker", broker=4, config="leader.replication.throttled.rate")),
    ("p1", "throttle-cleared", "orders/follower.replication.throttled.replicas", T + 9,
     dict(scope="topic", topic="orders", config="follower.replication.throttled.replicas")),
]


def _ledger() -> Ledger:
    records = [decode(k, v, 0, i) for i, (k, v) in enumerate(OLD_RECORDS)]
    assert all(r is not None for r in records)
    return Ledger(records)


NEW_KINDS = {"run", "cancel-requested", "mirror-step", "mirror-gate", "mirror-offsets", "throttle-auto",
             "mirror-proven"}  # added after the fixture's version (mirror-*: their own topic)


def test_every_kind_is_in_the_fixture():
    assert {decode(k, v).kind for k, v in OLD_RECORDS} == set(KINDS) - NEW_KINDS
    assert SCHEMA == "kmigrate.bookkeeping/1"
    assert DEFAULT_TOPIC == "__kmigrate_migration"


def test_new_code_writes_the_bytes_the_previous_version_wrote():
    assert [encode(make_record(pid, kind, subject, t, **fields)) for pid, kind, subject, t, fields in REMADE] == OLD_RECORDS


def test_old_records_decode_to_the_same_values():
    for i, (k, v) in enumerate(OLD_RECORDS):
        r = decode(k, v, 0, i)
        assert (r.key.encode(), r.partition, r.offset) == (k, 0, i)
        assert encode(r) == (k, v)  # a decoded record re-encodes byte for byte


def test_old_records_fold_to_the_same_ledger():
    ledger = _ledger()
    assert {t: r.offset for t, r in ledger.moved("p1").items()} == {"orders": 7}
    assert ledger.moved_counts("p1") == {"orders": 2}
    assert ledger.foreign_moved("p1") == {"p0": ["payments"]}
    assert {p: dict(v) for p, v in ledger.plans().items()} == {"p1": {
        "kind": "plan", "mapping": {"1": 4, "2": 5}, "plan_id": "p1", "schema": "kmigrate.bookkeeping/1",
        "throttle_bytes_per_s": 10485760, "time": "2023-11-14T22:13:20.123+00:00"}}
    assert ledger.submitted("p1") == ledger.submitted() == {("orders", 0): (4, 5), ("orders", 1): (5, 6)}
    assert ledger.submitted("p0") == {}
    # broker 4 was cleared; broker 5 keeps the prior kmigrate read before setting it
    assert ledger.broker_throttles() == {(5, "follower.replication.throttled.rate"): {"value": "10485760", "prior": "5000", "values": ["10485760"]}}
    assert ledger.topic_throttles() == {("orders", "leader.replication.throttled.replicas"): {"0:1", "1:2"}}


def test_records_kmigrate_did_not_write_are_refused():
    assert decode(None, b"{}") is None
    assert decode(b"p1/x", b"not json") is None
    assert decode(b"p1/x", b'{"schema":"other/1","kind":"plan","plan_id":"p1"}') is None
    assert decode(b"p2/x", OLD_RECORDS[0][1]) is None  # key of another plan id


def test_records_round_trip_and_foreign_records_are_refused():
    rec = make_record("p1", "topic-moved", "orders", 0, topic="orders", target={"0": [4, 5]})
    key, value = encode(rec)
    assert key == b"p1/orders"
    back = decode(key, value)
    assert back is not None and back.value["schema"] == SCHEMA and back.value["topic"] == "orders"
    assert decode(b"p1/orders", b"orders") is None
    assert decode(b"p1/orders", json.dumps({"schema": "other", "kind": "plan", "plan_id": "p1"}).encode()) is None
    assert decode(b"p2/orders", value) is None  # key and plan id disagree
    assert decode(None, value) is None


def test_ledger_trusts_only_its_plan_and_tracks_throttles():
    R = make_record
    ledger = Ledger([
        R("p1", "topic-moved", "a", 0, topic="a", target={}),
        R("p0", "topic-moved", "b", 0, topic="b", target={}),
        R("p1", "topic-moved", "a", 1, topic="a", target={}),
        R("p1", "throttle-broker", "4/x", 0, broker=4, config="x", value="5", prior=None),
        R("p1", "throttle-broker", "4/x", 1, broker=4, config="x", value="5", prior="5"),  # read its own value
        R("p1", "throttle-broker", "5/x", 1, broker=5, config="x", value="5", prior="7"),
        R("p1", "throttle-cleared", "5/x", 2, scope="broker", broker=5, config="x"),
        R("p1", "throttle-topic", "a/l", 0, topic="a", config="l", entries=["0:1"]),
        R("p1", "throttle-topic", "a/l", 0, topic="a", config="l", entries=["1:1"]),
        R("p1", "submitted", "a", 0, topic="a", partitions={"0": [4, 5]}),
    ])
    assert set(ledger.moved("p1")) == {"a"}
    assert ledger.moved_counts("p1") == {"a": 2}
    assert ledger.foreign_moved("p1") == {"p0": ["b"]}
    assert ledger.broker_throttles() == {(4, "x"): {"value": "5", "prior": None, "values": ["5", "5"]}}
    assert ledger.topic_throttles() == {("a", "l"): {"0:1", "1:1"}}
    assert ledger.submitted("p1") == {("a", 0): (4, 5)}
    assert ReplicaProgress(1, 0).reported is False


def test_the_plan_of_a_topics_last_submission():
    ledger = _ledger()
    assert ledger.plan_of_submission("orders") == "p1"
    assert ledger.plan_of_submission("payments") is None


def _plan(pid, mapping, t=T):
    return make_record(pid, "plan", "plan", t, mapping=mapping, throttle_bytes_per_s=1)


def test_a_plan_file_and_the_playbook_with_its_mapping_are_one_migration():
    """status --playbook after a run with --plan (and the reverse) reads the same topics recorded."""
    recs = [
        _plan("48f84bddacfd5eae", {"1": 4, "2": 5}),
        make_record("48f84bddacfd5eae", "topic-moved", "orders", T, topic="orders", target={}),
        _plan("other-mapping", {"1": 6}),
        make_record("other-mapping", "topic-moved", "old", T, topic="old", target={}),
    ]
    led = Ledger(recs)
    by_playbook = led.migration("mapping-1.4-2.5", {1: 4, 2: 5})
    assert by_playbook == ("mapping-1.4-2.5", "48f84bddacfd5eae")
    assert set(led.moved(by_playbook)) == {"orders"}
    assert set(led.foreign_moved(by_playbook)) == {"other-mapping"}
    by_plan = led.migration("48f84bddacfd5eae", {1: 4, 2: 5})
    assert set(led.moved(by_plan)) == {"orders"}
    # no plan and no mapping: the latest plan recorded, with the plans of its mapping
    assert led.migration(None) == ("other-mapping",)
    assert Ledger([]).migration(None) == ()
    # a plan id without a plan record and no mapping: only itself
    assert led.migration("unknown") == ("unknown",)


class _Flight:
    def __init__(self, target):
        self.target = tuple(target)


def test_started_by_kmigrate_is_any_run_and_any_plan_with_the_same_target():
    led = Ledger([
        make_record("p1", "submitted", "a", T, topic="a", partitions={0: [4, 5]}),
        make_record("p2", "submitted", "b", T, topic="b", partitions={0: [5], 1: [6]}),
        make_record("p2", "submitted", "a", T, topic="a", partitions={1: [6]}),
    ])
    flights = {("a", 0): _Flight([4, 5]), ("a", 1): _Flight([6]), ("b", 1): _Flight([4]), ("c", 0): _Flight([4])}
    assert led.started_by_kmigrate(flights) == [("a", 0), ("a", 1)]


def test_live_runs_by_pid_here_and_by_heartbeat_elsewhere():
    def run(run_id, host, pid, state, t):
        return make_record("p", "run", run_id, t, run_id=run_id, host=host, pid=pid, state=state, started="s")

    led = Ledger([
        run("r1", "here", 10, "started", T),
        run("r2", "here", 11, "started", T),
        run("r3", "there", 12, "alive", T + 100),
        run("r4", "there", 13, "alive", T),
        run("r5", "here", 14, "started", T),
        run("r5", "here", 14, "ended", T + 1),
    ])
    alive = {10}
    live = led.live_runs(T + 110, "here", lambda pid: pid in alive)
    assert [r["run_id"] for r in live] == ["r1", "r3"]  # r2: pid gone; r4: heartbeat stale; r5: ended
    assert [r["run_id"] for r in led.live_runs(T + 110, "here", lambda pid: pid in alive, but="r1")] == ["r3"]
    cancel = make_record("p", "cancel-requested", "here/99", T, host="here", pid=99)
    assert decode(*encode(cancel)).kind == "cancel-requested"
    assert Ledger([cancel]).cancel_requests() == [cancel]


def test_throttle_decisions_fold_in_order_for_one_migration_only():
    d = dict(broker=4, at_s=1.0, old_rate=10, new_rate=20, moves=2, reason="x", mode="avoidance")
    recs = [make_record("p1", "throttle-auto", "4", T, **d),
            make_record("other", "throttle-auto", "4", T + 1, **{**d, "new_rate": 99}),
            make_record("p2", "throttle-auto", "4", T + 2, **{**d, "new_rate": 40})]
    ledger = Ledger(recs)
    assert [v["new_rate"] for v in ledger.throttle_decisions(("p1", "p2"))] == [20, 40]
    assert ledger.throttle_decisions("nobody") == []
    # a written record reads back as itself
    k, v = encode(recs[0])
    assert decode(k, v).value["new_rate"] == 20 and decode(k, v).key == "p1/~throttle-auto/4"


def test_throttle_decisions_before_a_brokers_rates_were_cleared_are_not_taken_up():
    d = dict(at_s=1.0, old_rate=10, new_rate=20, moves=2, reason="x", mode="avoidance")
    recs = [make_record("p1", "throttle-auto", "4", T, broker=4, **d),
            make_record("p1", "throttle-auto", "5", T, broker=5, **{**d, "new_rate": 30}),
            # the run ended: broker 4's rates removed (broker 5's kept: a move of it was still in flight)
            make_record("p1", "throttle-cleared", "4", T + 1, scope="broker", broker=4,
                        config="leader.replication.throttled.rate", action="removed"),
            make_record("p1", "throttle-auto", "6", T + 2, broker=6, **{**d, "new_rate": 40})]
    assert [(v["broker"], v["new_rate"]) for v in Ledger(recs).throttle_decisions("p1")] == [(5, 30), (6, 40)]
