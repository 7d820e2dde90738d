"""core/mirror/plan.py: planning a MirrorMaker 2 migration, its refusals, mm2.properties, and MirrorMaker's records."""

from __future__ import annotations

import io
import json
import struct

import javaproperties
import pytest

from migrate.core.mirror.plan import (AclReading, ClusterReading, TopicReading, config_differences,
                                 heartbeat_timestamp, latest_checkpoints,
                                 mirrored_positions, mm2_properties, parse_checkpoint, parse_connect_offset,
                                 plan_mirror, render_properties, same_configuration, task_states)
from migrate.errors import BadInput

DEFAULTS = {"cleanup.policy": "delete", "min.insync.replicas": "1", "retention.ms": "604800000",
            "unclean.leader.election.enable": "false", "leader.replication.throttled.replicas": ""}


def topic(name: str, partitions: int = 3, rf: int = 3, **overrides: str) -> TopicReading:
    configs = {**DEFAULTS, **{k.replace("_", "."): v for k, v in overrides.items()}}
    defaults = frozenset(k for k in DEFAULTS if k.replace(".", "_") not in overrides)
    return TopicReading(name, partitions, rf, configs, defaults)


def cluster(cid: str, brokers: int, *topics: TopicReading, groups=(), acls=None) -> ClusterReading:
    return ClusterReading(f"{cid}:9092", cid, brokers, {t.name: t for t in topics}, tuple(groups), acls)


SOURCE = cluster("src", 3, topic("orders", 6, 3, min_insync_replicas="2", retention_ms="86400000",
                                 leader_replication_throttled_replicas="0:1"),
                 topic("table", 2, 3, cleanup_policy="compact"), topic("__consumer_offsets", 50, 3),
                 topic("logs", 1, 1), groups=("billing", "console-consumer-1", "reports"))


def test_a_topic_missing_on_the_target_is_created_with_the_source_partitions_and_non_default_configs():
    plan = plan_mirror(SOURCE, cluster("tgt", 3))
    orders = next(t for t in plan.topics if t.name == "orders")
    assert orders.to_create and orders.create_replication_factor == 3
    # throttle lists name the source's broker ids: never copied
    assert orders.create_configs == {"min.insync.replicas": "2", "retention.ms": "86400000"}
    assert orders.never_synced == {"min.insync.replicas": ("2", None)}
    assert [t.name for t in plan.topics] == ["logs", "orders", "table"]
    assert plan.topics_skipped == ("__consumer_offsets",)
    assert plan.to_dict()["topics"][1]["create"] == {"partitions": 6, "replication_factor": 3,
                                                     "configs": {"min.insync.replicas": "2", "retention.ms": "86400000"}}


def test_the_replication_factor_is_capped_by_the_target_brokers_with_a_warning():
    plan = plan_mirror(SOURCE, cluster("tgt", 1))
    orders = next(t for t in plan.topics if t.name == "orders")
    assert orders.create_replication_factor == 1
    assert any("capped to 1" in w for w in orders.warnings)
    assert any("min.insync.replicas=2 is more than its replication factor 1" in w for w in plan.warnings)
    logs = next(t for t in plan.topics if t.name == "logs")
    assert logs.warnings == ()


def test_the_same_cluster_is_refused():
    with pytest.raises(BadInput, match="same cluster"):
        plan_mirror(SOURCE, cluster("src", 3))


def test_a_target_topic_with_fewer_partitions_is_refused():
    with pytest.raises(BadInput, match="orders has 4 partitions on the target but 6"):
        plan_mirror(SOURCE, cluster("tgt", 3, topic("orders", 4)))


def test_bad_regular_expressions_and_empty_selections_are_refused():
    with pytest.raises(BadInput, match="--topics"):
        plan_mirror(SOURCE, cluster("tgt", 3), topics_filter="(")
    with pytest.raises(BadInput, match="--groups"):
        plan_mirror(SOURCE, cluster("tgt", 3), groups_filter="[")
    with pytest.raises(BadInput, match="comma"):
        plan_mirror(SOURCE, cluster("tgt", 3), groups_filter="a{1,3}")
    with pytest.raises(BadInput, match="no topic"):
        plan_mirror(SOURCE, cluster("tgt", 3), topics_filter="nothing")


def test_topic_filter_matches_whole_names():
    with pytest.raises(BadInput, match="no topic"):  # "order" is a prefix of a name, not a whole name
        plan_mirror(SOURCE, cluster("tgt", 3), topics_filter="order")
    plan = plan_mirror(SOURCE, cluster("tgt", 3), topics_filter="orders|table")
    assert [t.name for t in plan.topics] == ["orders", "table"]
    assert plan.topic_filter() == "orders|table"


def test_an_existing_target_topic_reports_its_config_differences_and_more_partitions():
    target = cluster("tgt", 3, topic("orders", 8, 3, retention_ms="3600000"), topic("table", 2, 3, cleanup_policy="compact"))
    plan = plan_mirror(SOURCE, target)
    orders = next(t for t in plan.topics if t.name == "orders")
    assert not orders.to_create
    assert orders.config_differences == {"min.insync.replicas": ("2", "1"), "retention.ms": ("86400000", "3600000")}
    assert orders.never_synced == {"min.insync.replicas": ("2", "1")}
    assert any("8 partitions on the target" in w for w in orders.warnings)
    table = next(t for t in plan.topics if t.name == "table")
    assert table.config_differences == {} and table.warnings == ()


def test_groups_left_out_by_mirrormaker_are_listed_apart():
    plan = plan_mirror(SOURCE, cluster("tgt", 3), groups_filter="billing|console-consumer-.*")
    assert plan.groups == ("billing",)
    assert plan.groups_excluded == ("console-consumer-1",)


def test_acls_say_why_mirrormaker_does_not_copy_them_or_that_there_is_no_authorizer():
    assert plan_mirror(SOURCE, cluster("tgt", 3)).acls_not_copied is None
    acls = (AclReading("GROUP", "billing", "LITERAL", "User:app", "*", "READ", "ALLOW"),
            AclReading("TOPIC", "orders", "LITERAL", "User:app", "*", "WRITE", "ALLOW"),
            AclReading("TOPIC", "ord", "PREFIXED", "User:app", "*", "READ", "ALLOW"),
            AclReading("TOPIC", "orders", "LITERAL", "User:app", "*", "READ", "ALLOW"))
    src = ClusterReading(SOURCE.bootstrap, SOURCE.cluster_id, 3, SOURCE.topics, SOURCE.groups, acls)
    reasons = [n.reason for n in plan_mirror(src, cluster("tgt", 3)).acls_not_copied]
    assert "group ACL" in reasons[0] and "never copies" in reasons[0]
    assert "ALLOW WRITE" in reasons[1]
    assert "only literal" in reasons[2]
    assert "sync.topic.acls.enabled=false" in reasons[3]


def test_mm2_properties_keep_the_connectors_in_agreement_and_read_back_as_java_properties():
    plan = plan_mirror(SOURCE, cluster("tgt", 1), topics_filter="orders|table", groups_filter="billing")
    props = mm2_properties(plan, {"security.protocol": "SASL_SSL", "sasl.jaas.config": 'x required username="a=b";'},
                           {}, rest_port=40123, tasks=2)
    text = render_properties(props, "generated")
    back = javaproperties.load(io.StringIO(text))
    assert back == props
    assert back["replication.policy.class"] == "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
    assert back["topics"] == "orders|table" and back["groups"] == "billing"
    assert back["sync.topic.configs.enabled"] == "false" and back["sync.group.offsets.enabled"] == "true"
    assert back["offset-syncs.topic.location"] == "target"
    assert back["target.exactly.once.source.support"] == "enabled"
    assert back["offset.storage.replication.factor"] == "1" and back["replication.factor"] == "1"
    assert back["source.security.protocol"] == "SASL_SSL"
    assert back["source.sasl.jaas.config"] == 'x required username="a=b";'
    assert back["listeners"] == "http://127.0.0.1:40123"
    # no per-connector keys that could make the connectors disagree
    assert not any(k.startswith(("source->target.replication", "source->target.topics")) for k in back)
    other_port = render_properties(mm2_properties(plan, {"security.protocol": "SASL_SSL", "sasl.jaas.config":
                                                         'x required username="a=b";'}, {}, rest_port=1, tasks=2))
    assert same_configuration(text, other_port)
    assert not same_configuration(text, render_properties(mm2_properties(plan, {}, {}, rest_port=1, tasks=2)))
    with pytest.raises(BadInput):
        mm2_properties(plan, {}, {}, rest_port=1, tasks=0)


def _offset_record(topic: str, partition: int, offset: int | None, cluster: str = "source"):
    key = json.dumps(["MirrorSourceConnector", {"cluster": cluster, "partition": partition, "topic": topic}]).encode()
    return key, None if offset is None else json.dumps({"offset": offset}).encode()


def test_connect_offsets_records_give_the_last_copied_offset_per_partition():
    records = [_offset_record("orders", 0, 10), _offset_record("orders", 1, 5), _offset_record("orders", 0, 99),
               _offset_record("orders", 2, 7), _offset_record("orders", 2, None),
               _offset_record("orders", 3, 1, cluster="other"), (b"not json", b"{}"), (None, b"{}"),
               (json.dumps(["MirrorCheckpointConnector", {"cluster": "source"}]).encode(), b"{}")]
    assert parse_connect_offset(*records[0]) == ("orders", 0, 10)
    assert mirrored_positions(records) == {("orders", 0): 99, ("orders", 1): 5}


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def test_checkpoints_are_parsed_and_the_last_per_group_partition_kept():
    key = _s("billing") + _s("orders") + struct.pack(">i", 2)
    first = struct.pack(">hqq", 0, 100, 98) + _s("")
    second = struct.pack(">hqq", 0, 200, 197) + _s("meta")
    assert parse_checkpoint(key, first) == ("billing", "orders", 2, 100, 98)
    assert latest_checkpoints([(key, first), (key, second), (None, None), (b"\x00", b"\x00")]) == {
        ("billing", "orders", 2): (200, 197)}


def test_task_states_from_connect_status_records():
    records = [(b"status-connector-MirrorSourceConnector", b'{"state":"RUNNING","trace":null}'),
               (b"status-task-MirrorSourceConnector-0", b'{"state":"UNASSIGNED"}'),
               (b"status-task-MirrorSourceConnector-0", b'{"state":"FAILED","trace":"boom"}'),
               (b"status-topic-orders:connector-MirrorSourceConnector", b'{"topic":{}}'),
               (b"status-task-MirrorSourceConnector-1", b'{"state":"RUNNING"}'),
               (b"status-task-MirrorSourceConnector-1", None)]
    assert task_states(records) == {"MirrorSourceConnector": "RUNNING", "MirrorSourceConnector-0": "FAILED"}


def test_config_differences_cover_non_default_values_on_either_side_but_not_throttle_lists():
    src = topic("t", retention_ms="1000", leader_replication_throttled_replicas="0:1")
    tgt = topic("t", min_insync_replicas="2", cleanup_policy="delete")
    assert config_differences(src, tgt) == {"min.insync.replicas": ("1", "2"), "retention.ms": ("1000", "604800000")}
    assert config_differences(src, src) == {}


def test_heartbeat_records_give_their_timestamp():
    assert heartbeat_timestamp(struct.pack(">hq", 0, 1_700_000_000_123)) == 1_700_000_000_123
    assert heartbeat_timestamp(None) is None and heartbeat_timestamp(b"\x00") is None


def _legacy_source() -> ClusterReading:
    return cluster("src", 1, topic("legacy", 1, 1, message_format_version="2.8", message_downconversion_enable="false",
                                   message_timestamp_difference_max_ms="60000", retention_ms="3600000"))


def test_a_kafka_4_target_gets_no_topic_config_kafka_4_removed_and_a_warning_names_them():
    target = ClusterReading("tgt:9092", "tgt", 1, {}, release="4.3")
    legacy = plan_mirror(_legacy_source(), target).topics[0]
    # the timestamp bound carried as Kafka 3.6-3.9 read it: both new bounds at their defaults take its value
    assert legacy.create_configs == {"message.timestamp.after.max.ms": "60000", "message.timestamp.before.max.ms": "60000",
                                     "retention.ms": "3600000"}
    assert legacy.never_synced == {}
    assert legacy.source.configs["message.format.version"] == "2.8"  # the plan shows the source as read
    (warning,) = legacy.warnings
    assert warning.startswith("topic legacy: message.downconversion.enable=false, message.format.version=2.8, "
                              "message.timestamp.difference.max.ms=60000 not copied: the target (Kafka 4)")


def test_a_3_x_target_or_one_of_unknown_release_still_gets_them():
    for release in ("3.9", None):
        legacy = plan_mirror(_legacy_source(), ClusterReading("tgt:9092", "tgt", 1, {}, release=release)).topics[0]
        assert legacy.create_configs["message.format.version"] == "2.8"
        assert legacy.create_configs["message.timestamp.difference.max.ms"] == "60000"
        assert legacy.warnings == ()


def test_an_existing_topic_on_a_kafka_4_target_does_not_differ_by_the_configs_it_cannot_have():
    on_target = topic("legacy", 1, 1, retention_ms="3600000", message_timestamp_before_max_ms="60000",
                      message_timestamp_after_max_ms="60000")
    target = ClusterReading("tgt:9092", "tgt", 1, {"legacy": on_target}, release="4.0")
    legacy = plan_mirror(_legacy_source(), target).topics[0]
    assert not legacy.to_create
    assert legacy.config_differences == {} and legacy.never_synced == {} and legacy.warnings == ()
