"""Retiring a KRaft cluster's brokers, pure: what ``kmigrate brokers unregister`` refuses, what it skips, and the
controllers Kafka keeps registered after their removal."""

from __future__ import annotations

import pytest

from migrate.core.brokers.unregister import Registration, check_unregister, ghost_controllers, replica_counts
from migrate.errors import BadInput

REGS = {1: Registration(1, "h1", 9092, fenced=True), 2: Registration(2, "h2", 9092, fenced=True),
        4: Registration(4, "h4", 9092, fenced=False)}


def test_stopped_empty_brokers_are_unregistered_and_gone_ones_skipped():
    assert check_unregister([2, 1, 9], REGS, replicas={4: 30}) == ((1, 2), (9,))
    assert check_unregister([9], REGS) == ((), (9,))  # a rerun after everything was done


@pytest.mark.parametrize("ids, kwargs, words", [
    ([1, 4], {}, "broker 4 is running (registered and unfenced, at h4:9092): stop it first"),
    ([1], {"listening": [1]}, "broker 1 is fenced but still answers at h1:9092"),
    ([1, 2], {"replicas": {2: 3}}, "broker 2 still hosts 3 replica(s) (or is in a reassignment)"),
    ([9], {"replicas": {9: 1}}, "broker 9 still hosts 1 replica(s)"),  # not registered, yet in an assignment
    ([1, 3000], {"controller_ids": [3000]}, "3000 is a controller's node id, not a broker's"),
    ([], {}, "no broker given: --broker-list"),
])
def test_refusals_are_one_line(ids, kwargs, words):
    with pytest.raises(BadInput) as err:
        check_unregister(ids, REGS, **kwargs)
    line = err.value.message
    assert words in line and "\n" not in line
    if ids:
        assert line.endswith("nothing was unregistered")


def test_replica_counts_include_adding_replicas_once_per_partition():
    assert replica_counts([(1, 2), (1, 2, 3), (3, 3)]) == {1: 2, 2: 2, 3: 2}


def test_ghost_controllers_are_registered_but_not_voters():
    assert ghost_controllers({1: "a", 2: "b", 7: "c", 8: "d"}, voters=[7, 8]) == (1, 2)
    assert ghost_controllers([7], voters=[7]) == ()
