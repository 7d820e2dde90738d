"""runner/partitions/throttles: a resumed run at another rate removes the interrupted run's broker rates, then
sets its own; the prior it records is what it put back, not the removed rate a ZooKeeper-mode broker still
reports for a moment (its DescribeConfigs answers from a cache a ZooKeeper notification updates later).

Found by hand: interrupted at 2MB/s, resumed at 20MB/s, a broker kept 2000000 as "someone else's" rate."""

from migrate.core.ledger import Ledger, make_record
from migrate.core.partitions.throttles import BROKER_THROTTLE_CONFIGS
from migrate.runner.partitions.throttles import Throttles, clear_recorded_throttles

OLD, NEW = "2000000", "20000000"


class LaggingBroker:
    """A broker whose DescribeConfigs answers from a cache updated only at the next read after a change."""

    def __init__(self, plan_id: str):
        self.applied = {cfg: OLD for cfg in BROKER_THROTTLE_CONFIGS}
        self.cache = dict(self.applied)
        self.records = [make_record(plan_id, "throttle-broker", f"7/{cfg}", 1.0, broker=7, config=cfg, value=OLD,
                                    prior=None) for cfg in BROKER_THROTTLE_CONFIGS]
        self.hidden_rates, self.read_hidden_rates = set(), None

    def broker_dynamic_configs(self, brokers, names):
        seen = {n: v for n, v in self.cache.items() if n in names}
        self.cache = dict(self.applied)  # the notification arrives after this answer
        return {7: seen}

    def set_brokers_configs(self, values):
        for cfg, v in values.get(7, {}).items():
            if v is None:
                self.applied.pop(cfg, None)
            else:
                self.applied[cfg] = v
        return {}

    # the bookkeeping topic
    def append(self, records, wait=True):
        self.records.extend(records)


def test_the_rate_a_resumed_run_removed_is_not_restored_when_it_ends():
    cluster = LaggingBroker("p1")
    throttles = Throttles(cluster, cluster, "p1", int(NEW), lambda e: None)
    problems = clear_recorded_throttles(cluster, cluster, Ledger(list(cluster.records)), "p1", lambda e: None,
                                        adopt=throttles)
    assert problems == [] and cluster.applied == {}
    throttles.sync({}, brokers=[7], live=[7])
    assert cluster.applied == {cfg: NEW for cfg in BROKER_THROTTLE_CONFIGS}
    priors = {r.value["config"]: r.value["prior"] for r in cluster.records
              if r.value["kind"] == "throttle-broker" and r.value["value"] == NEW}
    assert priors == {cfg: None for cfg in BROKER_THROTTLE_CONFIGS}
