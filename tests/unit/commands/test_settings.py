"""Flag > plan > playbook > default, resolved once (commands/settings.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from migrate.commands.settings import Inputs, resolve
from migrate.errors import BadInput


def _playbook(mapping=None, throttle=20_000_000, book="pb-book", per_broker=3, cluster=None, keep=()):
    return SimpleNamespace(
        brokers=SimpleNamespace(mapping=mapping or {}, keep=keep),
        migration=SimpleNamespace(throttle_bytes_per_s=throttle, bookkeeping_topic=book,
                                  max_partition_moves_per_broker=per_broker, max_partition_moves_cluster=cluster))


def _plan(mapping=None, throttle=30_000_000, book="plan-book", per_broker=4, cluster=9, errors=()):
    return SimpleNamespace(plan_id="abc", mapping=mapping or {1: 4}, throttle_bytes_per_s=throttle,
                           bookkeeping_topic=book, max_partition_moves_per_broker=per_broker,
                           max_partition_moves_cluster=cluster, moves=[SimpleNamespace(topic="t", partition=0, target=(4,))],
                           errors=lambda force, step: [e for e in errors if not (force and e.forceable)])


def test_defaults_without_a_plan_or_playbook():
    s = resolve(Inputs(), mapping="1:4,2:5", run=True)
    assert (s.mapping, s.plan_id, s.throttle_bytes_per_s, s.bookkeeping_topic) == (
        {1: 4, 2: 5}, "mapping-1.4-2.5", 50_000_000, "__kmigrate_migration")
    assert (s.max_moves_per_broker, s.max_moves_cluster, s.keep, dict(s.plan_targets)) == (5, None, (), {})
    assert s.caps.per_broker == 5 and s.caps.cluster is None


def test_playbook_over_defaults_plan_over_playbook_flags_over_both():
    pb = _playbook(mapping={1: 4}, keep=(7,))
    s = resolve(Inputs(playbook=pb), run=True)
    assert (s.mapping, s.throttle_bytes_per_s, s.bookkeeping_topic, s.max_moves_per_broker, s.keep) == (
        {1: 4}, 20_000_000, "pb-book", 3, (7,))
    s = resolve(Inputs(playbook=pb, plan=_plan()), run=True)
    assert (s.plan_id, s.throttle_bytes_per_s, s.bookkeeping_topic, s.max_moves_per_broker, s.max_moves_cluster) == (
        "abc", 30_000_000, "plan-book", 4, 9)
    assert dict(s.plan_targets) == {("t", 0): (4,)}
    s = resolve(Inputs(playbook=pb, plan=_plan()), mapping="1:4", throttle="1MB/s", bookkeeping_topic="mine",
                max_moves_per_broker=2, max_moves_cluster=3, run=True)
    assert (s.throttle_bytes_per_s, s.bookkeeping_topic, s.max_moves_per_broker, s.max_moves_cluster) == (
        1_000_000, "mine", 2, 3)


def test_a_run_needs_a_mapping_that_agrees_with_the_plan():
    with pytest.raises(BadInput, match="no broker mapping"):
        resolve(Inputs(playbook=_playbook()), run=True)
    with pytest.raises(BadInput, match="differs from the plan's mapping"):
        resolve(Inputs(plan=_plan()), mapping="1:5", run=True)
    with pytest.raises(BadInput, match="--throttle"):
        resolve(Inputs(), mapping="1:4", throttle="fast", run=True)


def test_a_plan_error_blocks_a_run_unless_forced_when_it_may_be():
    err = SimpleNamespace(message="broker 4 is missing", forceable=True)
    with pytest.raises(BadInput, match="plan abc: broker 4 is missing"):
        resolve(Inputs(plan=_plan(errors=(err,))), run=True)
    assert resolve(Inputs(plan=_plan(errors=(err,))), run=True, force=True).plan_id == "abc"


def test_status_and_cancel_may_have_no_mapping_and_take_the_flag_as_given():
    s = resolve(Inputs())
    assert (s.mapping, s.plan_id, s.bookkeeping_topic) == (None, None, "__kmigrate_migration")
    s = resolve(Inputs(plan=_plan()), mapping="1:5")
    assert (s.mapping, s.plan_id) == ({1: 5}, "abc")
