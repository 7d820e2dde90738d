"""``--throttle auto --latency-budget`` and the playbook's ``migration.throttle: auto`` (core/throttle/options.py):
one-line refusals, flags over the playbook, the testing hook's tuning."""

import pytest

from migrate.core.playbook import parse_playbook
from migrate.core.throttle.options import CANARY_TOPIC, AutoThrottle, auto_throttle, tuned
from migrate.core.throttle.signals import Budget
from migrate.errors import BadInput

PLAYBOOK = """
kafka: {bootstrap_servers: "h:9092"}
brokers:
  mapping: {1: 4}
migration:
%s
"""


def test_auto_with_a_budget_flag_or_playbook():
    assert auto_throttle("auto", "50ms") == AutoThrottle(Budget(0.05))
    assert auto_throttle("AUTO", "0.2s").budget.seconds == 0.2
    assert auto_throttle(None, None, "auto", "80ms").budget.seconds == 0.08
    assert auto_throttle(None, "30ms", "auto", "80ms").budget.seconds == 0.03  # the flag wins
    assert auto_throttle("20MB/s", None, "auto", "80ms") is None  # a fixed --throttle wins over the playbook's auto
    assert auto_throttle(None, None) is None and auto_throttle("10MB/s", None) is None
    assert auto_throttle("auto", "50ms").canary_topic == CANARY_TOPIC


@pytest.mark.parametrize("args, expected", [
    (("auto", None), "--throttle auto needs --latency-budget"),
    ((None, None, "auto", None), "migration.throttle: auto needs migration.latency_budget"),
    (("10MB/s", "50ms"), "--latency-budget needs --throttle auto"),
    ((None, "50ms"), "--latency-budget needs --throttle auto"),
    ((None, None, None, "50ms"), "migration.latency_budget needs migration.throttle: auto"),
    (("auto", "50"), "has no unit"),
    (("auto", "fast"), "is not a latency"),
    (("auto", "0ms"), "must be more than zero"),
    (("auto", "2m"), "is not a latency"),
])
def test_refusals_are_one_line(args, expected):
    with pytest.raises(BadInput) as err:
        auto_throttle(*args)
    assert expected in err.value.message and "\n" not in err.value.message


def test_the_playbook_takes_auto_and_a_budget():
    pb = parse_playbook(PLAYBOOK % "  throttle: auto\n  latency_budget: 50ms", "p.yaml")
    assert pb.migration.throttle_auto and pb.migration.latency_budget == "50ms"
    fixed = parse_playbook(PLAYBOOK % "  throttle: 20MB/s", "p.yaml")
    assert not fixed.migration.throttle_auto and fixed.migration.latency_budget is None
    assert fixed.migration.throttle_bytes_per_s == 20_000_000


def test_tuning_hook_sets_the_runner_and_law_fields_only():
    auto = tuned(AutoThrottle(Budget(0.05)), '{"baseline_s": 3, "window_s": 1, "start_rate": 2000000, "interval_s": 2}')
    assert (auto.baseline_s, auto.window_s, auto.settings.start_rate, auto.settings.interval_s) == (3, 1, 2_000_000, 2)
    assert tuned(auto, None) is auto
    with pytest.raises(BadInput, match="unknown field 'budget'"):
        tuned(auto, '{"budget": 1}')
    with pytest.raises(BadInput, match="not a JSON object"):
        tuned(auto, "{")
