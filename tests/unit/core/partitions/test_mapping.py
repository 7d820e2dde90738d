"""The operator's mapping, topic filters and the mapping plan id (core/mapping.py)."""

from __future__ import annotations

import pytest

from migrate.core.partitions.mapping import compile_topic_filter, mapping_plan_id, parse_mapping, select_topics
from migrate.errors import BadInput

MAPPING = {1: 4, 2: 5, 3: 6}


def test_parse_mapping_reads_pairs():
    assert parse_mapping("1:4, 2:5,3:6") == MAPPING
    assert parse_mapping("101=204") == {101: 204}


@pytest.mark.parametrize("text", ["", "1", "1:4,1:5", "1:4,4:6", "1:4,2:4", "a:b", "1:4,"])
def test_parse_mapping_refuses_bad_input(text):
    with pytest.raises(BadInput):
        parse_mapping(text)


def test_topic_filters_match_in_full():
    inc, exc = compile_topic_filter(r"orders.*", r".*\.dlq")
    assert select_topics(["orders", "orders.dlq", "payments", "xorders"], inc, exc) == ["orders"]
    with pytest.raises(BadInput):
        compile_topic_filter("((", None)


def test_mapping_plan_id_is_stable_and_readable():
    assert mapping_plan_id({3: 6, 1: 4}) == mapping_plan_id({1: 4, 3: 6}) == "mapping-1.4-3.6"
