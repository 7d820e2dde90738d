"""runner/partitions/throttles under ``--throttle auto``: a broker's rate changes during the run, each
change recorded before it is made; the end of the run still removes it (the first prior stands); a
broker that refuses keeps, recorded, its old rate; a resumed run adopts the last recorded rate."""

from migrate.core.ledger import Ledger, make_record
from migrate.core.partitions.throttles import BROKER_THROTTLE_CONFIGS
from migrate.runner.partitions.throttles import Throttles, clear_recorded_throttles


class Cluster:
    """Brokers' dynamic configs and the bookkeeping topic, in memory; ``refuse``: brokers that fail a change."""

    def __init__(self, configs=None):
        self.configs: dict[int, dict[str, str]] = configs or {}
        self.records = []
        self.refuse: set[int] = set()
        self.hidden_rates, self.read_hidden_rates = set(), None
        self.order = []  # ("record", n) / ("set", broker): what happened first

    def broker_dynamic_configs(self, brokers, names):
        return {b: {n: v for n, v in self.configs.get(b, {}).items() if n in names} for b in brokers}

    def set_brokers_configs(self, values):
        failed = {}
        for b, cfgs in values.items():
            if b in self.refuse:
                failed[b] = "refused"
                continue
            self.order.append(("set", b))
            for cfg, v in cfgs.items():
                if v is None:
                    self.configs.get(b, {}).pop(cfg, None)
                else:
                    self.configs.setdefault(b, {})[cfg] = v
        return failed

    def topic_configs(self, topics, names, dynamic_only=True):
        return {}

    def alter_topic_configs(self, ops):
        pass

    def append(self, records, wait=True):
        self.records.extend(records)
        self.order.append(("record", len(records)))


def rates(cluster, b):
    return {cfg: cluster.configs.get(b, {}).get(cfg) for cfg in BROKER_THROTTLE_CONFIGS}


def test_a_rate_changed_during_the_run_is_recorded_first_and_removed_at_the_end():
    cluster = Cluster({4: {"leader.replication.throttled.rate": "7"}})  # someone's rate before kmigrate
    t = Throttles(cluster, cluster, "p1", 10_000_000, lambda e: None, auto=True)
    t.set_rates({4: 10_000_000, 5: 10_000_000})  # before any move: nothing set yet, only remembered
    assert cluster.configs[4] == {"leader.replication.throttled.rate": "7"}
    t.sync({}, brokers=[4, 5], live=[4, 5])
    t.set_rates({4: 20_000_000}, [make_record("p1", "throttle-auto", "4", 1.0, broker=4, new_rate=20_000_000)])
    assert rates(cluster, 4) == {cfg: "20000000" for cfg in BROKER_THROTTLE_CONFIGS}
    assert rates(cluster, 5) == {cfg: "10000000" for cfg in BROKER_THROTTLE_CONFIGS}
    assert cluster.order[-2:] == [("record", 3), ("set", 4)]  # the decision and both configs, then the change
    assert t.rate_of(4) == "20000000"
    # the end of the run (any later run too): what kmigrate recorded goes, the prior comes back
    clear_recorded_throttles(cluster, cluster, Ledger(list(cluster.records)), "p1", lambda e: None)
    assert rates(cluster, 4) == {"leader.replication.throttled.rate": "7", "follower.replication.throttled.rate": None}
    assert rates(cluster, 5) == {cfg: None for cfg in BROKER_THROTTLE_CONFIGS}


def test_a_broker_that_refuses_a_change_keeps_its_old_rate_recorded_and_removed_at_the_end():
    cluster = Cluster()
    t = Throttles(cluster, cluster, "p1", 10_000_000, lambda e: None, auto=True)
    t.sync({}, brokers=[4], live=[4])
    cluster.refuse = {4}
    assert t.set_rates({4: 5_000_000}) == {4: "refused"}
    assert t.rate_of(4) == "10000000"
    cluster.refuse = set()
    clear_recorded_throttles(cluster, cluster, Ledger(list(cluster.records)), "p1", lambda e: None)
    assert rates(cluster, 4) == {cfg: None for cfg in BROKER_THROTTLE_CONFIGS}


def test_a_resumed_auto_run_adopts_the_rate_in_force_whatever_it_is():
    cluster = Cluster()
    first = Throttles(cluster, cluster, "p1", 10_000_000, lambda e: None, auto=True)
    first.sync({}, brokers=[4], live=[4])
    first.set_rates({4: 35_000_000})
    again = Throttles(cluster, cluster, "p1", 10_000_000, lambda e: None, auto=True)
    clear_recorded_throttles(cluster, cluster, Ledger(list(cluster.records)), "p1", lambda e: None, adopt=again)
    assert again.brokers == {4} and again.rate_of(4) == "35000000"
    assert rates(cluster, 4) == {cfg: "35000000" for cfg in BROKER_THROTTLE_CONFIGS}
    # a fixed-rate run at another rate removes it instead (as before)
    fixed = Throttles(cluster, cluster, "p1", 10_000_000, lambda e: None)
    clear_recorded_throttles(cluster, cluster, Ledger(list(cluster.records)), "p1", lambda e: None, adopt=fixed)
    assert fixed.brokers == set() and rates(cluster, 4) == {cfg: None for cfg in BROKER_THROTTLE_CONFIGS}


def test_a_run_killed_between_a_rate_record_and_its_config_change_still_has_its_rate_removed():
    cluster = Cluster()
    t = Throttles(cluster, cluster, "p1", 10_000_000, lambda e: None, auto=True)
    t.sync({}, brokers=[4], live=[4])
    cluster.refuse = {4}  # as if killed after the records: the config keeps the previous rate
    cluster.append([make_record("p1", "throttle-broker", f"4/{cfg}", 2.0, broker=4, config=cfg, value="20000000",
                                prior=None) for cfg in BROKER_THROTTLE_CONFIGS])
    cluster.refuse = set()
    clear_recorded_throttles(cluster, cluster, Ledger(list(cluster.records)), "p1", lambda e: None)
    assert rates(cluster, 4) == {cfg: None for cfg in BROKER_THROTTLE_CONFIGS}
