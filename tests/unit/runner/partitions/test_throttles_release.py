"""runner/throttles.release_throttles: kmigrate's throttles go, except those its moves in flight need.

A small in-memory cluster stands in for the admin client and the bookkeeping topic (the real
thing is exercised by tests/integration/test_partitions_interrupt.py)."""

from migrate.core.ledger import Ledger, make_record
from migrate.core.partitions.moves import InFlight
from migrate.core.partitions.throttles import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS
from migrate.runner.partitions.throttles import release_throttles

RATE = "1000000"


class FakeCluster:
    """Throttle configs, reassignments in flight and the bookkeeping records of one cluster."""

    def __init__(self, flights, records):
        self.admin = object()
        self.flights = flights
        self.records = list(records)
        self.brokers = {b: {LEADER_RATE: RATE, FOLLOWER_RATE: RATE} for b in (1, 2, 4, 5)}
        self.topics = {"moving": {LEADER_REPLICAS: "0:1", FOLLOWER_REPLICAS: "0:4"},
                       "finished": {LEADER_REPLICAS: "0:2", FOLLOWER_REPLICAS: "0:5"}}

    # the admin client
    def list_reassignments(self):
        return dict(self.flights)

    def broker_dynamic_configs(self, brokers, names):
        return {b: {n: v for n, v in self.brokers[b].items() if n in names} for b in brokers if b in self.brokers}

    def set_brokers_configs(self, values):
        for b, cfgs in values.items():
            for n, v in cfgs.items():
                if v is None:
                    self.brokers[b].pop(n, None)
                else:
                    self.brokers[b][n] = v
        return {}

    def topic_configs(self, topics, names, dynamic_only=False):
        return {t: {n: v for n, v in self.topics.get(t, {}).items() if n in names} for t in topics}

    def alter_topic_configs(self, ops):
        for t, changes in ops.items():
            for cfg, op, _value in changes:
                assert op == "delete"
                self.topics[t].pop(cfg)

    # the bookkeeping topic
    def exists(self, _admin):
        return True

    def read(self):
        return Ledger(list(self.records))

    def append(self, records, wait=True):
        self.records.extend(records)


def _recorded():
    out = [make_record("p", "submitted", "moving", 0, topic="moving", partitions={0: [4]}),
           make_record("p", "submitted", "finished", 0, topic="finished", partitions={0: [5]})]
    for b in (1, 2, 4, 5):
        for cfg in (LEADER_RATE, FOLLOWER_RATE):
            out.append(make_record("p", "throttle-broker", f"{b}/{cfg}", 0, broker=b, config=cfg, value=RATE, prior=None))
    for t, entries in (("moving", ("0:1", "0:4")), ("finished", ("0:2", "0:5"))):
        for cfg, entry in zip((LEADER_REPLICAS, FOLLOWER_REPLICAS), entries):
            out.append(make_record("p", "throttle-topic", f"{t}/{cfg}", 0, topic=t, config=cfg, entries=[entry]))
    return out


def test_a_move_in_flight_keeps_its_topic_lists_and_its_brokers_rates():
    fake = FakeCluster({("moving", 0): InFlight((4, 1), adding=(4,), removing=(1,))}, _recorded())
    events = []
    released = release_throttles(fake, fake, "p", events.append)
    assert sorted(released.in_flight) == [("moving", 0)]
    assert (released.topics, released.brokers) == ({"moving"}, {1, 4})
    assert fake.topics == {"moving": {LEADER_REPLICAS: "0:1", FOLLOWER_REPLICAS: "0:4"}, "finished": {}}
    assert {b for b, cfgs in fake.brokers.items() if cfgs} == {1, 4}
    # what stays is still recorded as kmigrate's: the run or --cancel that ends the move removes it
    ledger = fake.read()
    assert set(ledger.topic_throttles()) == {("moving", LEADER_REPLICAS), ("moving", FOLLOWER_REPLICAS)}
    assert {b for b, _ in ledger.broker_throttles()} == {1, 4}
    assert [e.kind for e in events][-1] == "throttles-removed"


def test_a_move_of_someone_else_does_not_count_and_nothing_in_flight_removes_all():
    foreign = {("moving", 0): InFlight((6, 1), adding=(6,), removing=(1,))}  # not the target kmigrate submitted
    fake = FakeCluster(foreign, _recorded())
    released = release_throttles(fake, fake, "p", lambda e: None)
    assert released.in_flight == {} and released.topics == frozenset()
    assert fake.topics == {"moving": {}, "finished": {}}
    assert all(not cfgs for cfgs in fake.brokers.values())
    assert fake.read().topic_throttles() == {} and fake.read().broker_throttles() == {}
