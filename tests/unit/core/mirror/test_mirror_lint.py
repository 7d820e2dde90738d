"""core/mirror_lint: each MirrorMaker 2 trap found in a realistic config (written as Kafka's docs and
MirrorMaker's README show them), a clean config left clean, malformed files refused; the command's exit codes."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import javaproperties
import pytest

from migrate.core.mirror.plan import ClusterReading, TopicReading, mm2_properties, plan_mirror, render_properties
from migrate.core.mirror.lint import connectors_from_json, lint_connectors, lint_documents, lint_mm2_properties
from migrate.errors import BadInput
from migrate.files import read_mirror_configs

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
IDENTITY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"


def _connector(kind: str, **extra: str) -> dict:
    """A connector as Connect's REST API takes it (POST /connectors), primary -> backup."""
    config = {
        "connector.class": f"org.apache.kafka.connect.mirror.{kind}",
        "source.cluster.alias": "primary",
        "target.cluster.alias": "backup",
        "source.cluster.bootstrap.servers": "primary-kafka-1:9092,primary-kafka-2:9092",
        "target.cluster.bootstrap.servers": "backup-kafka-1:9092",
        "replication.policy.class": IDENTITY,
        "key.converter": BYTES,
        "value.converter": BYTES,
        "header.converter": BYTES,
        "tasks.max": "4",
    }
    if kind in ("MirrorSourceConnector", "MirrorCheckpointConnector"):
        config.update({"topics": "orders, payments.*", "offset-syncs.topic.location": "target"})
    if kind == "MirrorCheckpointConnector":
        config.update({"groups": ".*", "sync.group.offsets.enabled": "true", "emit.checkpoints.interval.seconds": "5"})
    config.update(extra)
    return {"name": f"primary-{kind}", "config": config}


def _clean() -> list[dict]:
    return [_connector("MirrorSourceConnector"), _connector("MirrorCheckpointConnector"),
            _connector("MirrorHeartbeatConnector")]


def _lint(docs: list[dict]) -> list:
    return lint_connectors(connectors_from_json(docs, "connectors.json"))


def _traps(found) -> list[str]:
    return [f.trap for f in found]


def test_agreeing_connectors_are_clean():
    assert _lint(_clean()) == []


def test_a_different_replication_policy_on_the_heartbeat_connector_is_found():
    docs = _clean()
    docs[2]["config"]["replication.policy.class"] = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
    (f,) = _lint(docs)
    assert f.trap == "policy-mismatch" and f.keys == ("replication.policy.class",)
    assert "primary-MirrorHeartbeatConnector (MirrorHeartbeatConnector)" in f.connectors and "set the same" in f.fix


def test_identity_policy_on_the_source_connector_only_is_found():
    docs = _clean()
    for d in docs[1:]:  # the Strimzi #4498 shape: the checkpoint and heartbeat connectors left on the default
        del d["config"]["replication.policy.class"]
    (f,) = _lint(docs)
    assert f.trap == "identity-on-source-only"
    assert "never translated" in f.problem and IDENTITY in f.fix
    assert len(f.connectors) == 3


def test_a_different_separator_is_found():
    docs = _clean()
    docs[1]["config"]["replication.policy.separator"] = "_"
    (f,) = _lint(docs)
    assert f.trap == "separator-mismatch" and f.keys == ("replication.policy.separator",)
    assert "'_'" in f.problem


def test_offset_syncs_on_another_cluster_for_the_checkpoint_connector_is_found():
    docs = _clean()
    del docs[1]["config"]["offset-syncs.topic.location"]  # default: source
    (f,) = _lint(docs)
    assert f.trap == "offset-syncs-mismatch" and "finds none" in f.problem
    assert len(f.connectors) == 2  # the heartbeat connector does not read offset syncs


def test_a_different_topic_filter_is_found_but_not_spacing_after_commas():
    docs = _clean()
    docs[1]["config"]["topics"] = "orders,payments.*"
    assert _lint(docs) == []
    docs[1]["config"]["topics"] = "orders"
    (f,) = _lint(docs)
    assert f.trap == "topic-filter-mismatch" and f.keys == ("topics",)


def test_a_different_topic_exclusion_is_found_under_its_deprecated_name_too():
    docs = _clean()
    docs[0]["config"]["topics.blacklist"] = "orders-archive"
    (f,) = _lint(docs)
    assert f.trap == "topic-filter-mismatch" and f.keys == ("topics.exclude",)


def test_converters_other_than_byte_array_or_left_to_the_worker_are_found():
    docs = _clean()
    docs[0]["config"]["value.converter"] = "org.apache.kafka.connect.json.JsonConverter"
    del docs[1]["config"]["header.converter"]
    found = _lint(docs)
    assert _traps(found) == ["converter", "converter"]
    assert found[0].keys == ("value.converter",) and "JsonConverter" in found[0].problem
    assert found[1].keys == ("header.converter",) and "unset" in found[1].problem
    assert BYTES in found[0].fix


def test_a_connector_writing_into_the_source_is_found():
    docs = _clean()
    back = _connector("MirrorSourceConnector", **{
        "source.cluster.alias": "backup", "target.cluster.alias": "primary",
        "source.cluster.bootstrap.servers": "backup-kafka-1:9092",
        "target.cluster.bootstrap.servers": "primary-kafka-2:9092"})
    back["name"] = "backup-to-primary"
    found = _lint(docs + [back])
    assert sorted(set(_traps(found))) == ["reverse-flow"]
    assert any(f.connectors[0] == "primary-MirrorSourceConnector (MirrorSourceConnector)"
               and "backup-to-primary (MirrorSourceConnector)" in f.connectors for f in found)


def test_the_same_cluster_is_told_by_bootstrap_servers_when_aliases_differ():
    docs = _clean()
    hb = _connector("MirrorHeartbeatConnector", **{"source.cluster.alias": "dc2", "target.cluster.alias": "dc1",
                                                   "source.cluster.bootstrap.servers": "backup-kafka-1:9092",
                                                   "target.cluster.bootstrap.servers": "primary-kafka-1:9092"})
    assert _traps(_lint(docs + [hb])) == ["reverse-flow"]


def test_flat_configs_and_other_connectors_are_read():
    flat = [{"name": d["name"], **d["config"]} for d in _clean()]
    other = {"name": "jdbc", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector"}
    conns = connectors_from_json(flat + [other], "x.json")
    assert [c.kind for c in conns] == ["MirrorSourceConnector", "MirrorCheckpointConnector", "MirrorHeartbeatConnector"]
    assert lint_connectors(conns) == []


# ---------------------------------------------------------------- mm2.properties

DOCS_MM2 = """\
# Basic Settings (as in Kafka's docs, ops.html "Configuring Geo-Replication")
clusters = us-west, us-east

us-west.bootstrap.servers = broker3-west:9092
us-east.bootstrap.servers = broker5-east:9092

us-west->us-east.enabled = true
us-west->us-east.topics = foo.*
replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
"""


def _props(text: str) -> dict[str, str]:
    return dict(javaproperties.loads(text))


def test_the_docs_mm2_properties_writes_heartbeats_into_the_source():
    (f,) = lint_mm2_properties(_props(DOCS_MM2), "mm2.properties")
    assert f.trap == "reverse-flow" and "us-east->us-west.emit.heartbeats.enabled = false" in f.fix
    clean = DOCS_MM2 + "us-east->us-west.emit.heartbeats.enabled = false\n"
    assert lint_mm2_properties(_props(clean), "mm2.properties") == []
    assert lint_mm2_properties(_props(DOCS_MM2 + "emit.heartbeats.enabled = false\n"), "mm2.properties") == []


def test_both_directions_enabled_is_found():
    found = lint_mm2_properties(_props(DOCS_MM2 + "us-east->us-west.enabled = true\n"), "mm2.properties")
    assert _traps(found) == ["reverse-flow"]
    assert found[0].keys == ("us-east->us-west.enabled", "us-west->us-east.enabled")


def test_a_json_converter_in_mm2_properties_is_found():
    text = DOCS_MM2 + "us-east->us-west.emit.heartbeats.enabled = false\nus-east.value.converter = org.apache.kafka.connect.json.JsonConverter\n"
    (f,) = lint_mm2_properties(_props(text), "mm2.properties")
    assert f.trap == "converter" and f.keys == ("us-east.value.converter",)


def test_kmigrates_own_mm2_properties_lint_clean():
    source = ClusterReading("a:9092", "A", 3, {"orders": TopicReading("orders", 3, 3)}, ("billing",))
    plan = plan_mirror(source, ClusterReading("b:9092", "B", 3, {}))
    text = render_properties(mm2_properties(plan, {"security.protocol": "SASL_SSL"}, {}, rest_port=40000), "generated")
    assert lint_mm2_properties(_props(text), "mm2.properties") == []


@pytest.mark.parametrize("text, message", [
    ("a = b\n", "no 'clusters'"),
    ("clusters = a, b\na.bootstrap.servers = x:1\n", "no b.bootstrap.servers"),
    ("clusters = a, b\na.bootstrap.servers = x:1\nb.bootstrap.servers = y:1\n", "no replication flow"),
])
def test_what_is_no_mm2_properties_is_refused(text, message):
    with pytest.raises(BadInput, match=message):
        lint_mm2_properties(_props(text), "mm2.properties")


@pytest.mark.parametrize("doc, message", [
    ([1], "not a JSON object"),
    ({"name": "x", "config": {"tasks.max": "1"}}, "no connector.class"),
    ({"connector.class": "MirrorSourceConnector", "topics": ["a"]}, "not a string"),
])
def test_what_is_no_connector_config_is_refused(doc, message):
    with pytest.raises(BadInput, match=message):
        connectors_from_json(doc, "c.json")


def test_files_are_read_as_json_or_properties_and_bad_ones_refused(tmp_path):
    (tmp_path / "c.json").write_text(json.dumps(_clean()[:2]))
    (tmp_path / "h.json").write_text(json.dumps(_clean()[2]))
    (tmp_path / "mm2.properties").write_text(DOCS_MM2)
    props, docs = read_mirror_configs([tmp_path / "c.json", tmp_path / "h.json", tmp_path / "mm2.properties"])
    assert [w for w, _ in docs] == [str(tmp_path / "c.json"), str(tmp_path / "h.json")]
    assert _traps(lint_documents(props, docs)) == ["reverse-flow"]  # the docs' heartbeats; the JSONs are clean
    (tmp_path / "bad.json").write_text('{"name": ')
    with pytest.raises(BadInput, match="not valid JSON"):
        read_mirror_configs([tmp_path / "bad.json"])
    with pytest.raises(BadInput, match="no such file"):
        read_mirror_configs([tmp_path / "missing.json"])
    with pytest.raises(BadInput, match="no MirrorSourceConnector"):
        lint_documents([], [("x.json", {"connector.class": "FileStreamSource"})])


def test_the_command_exits_0_clean_1_with_findings_2_for_a_bad_file(tmp_path):
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps(_clean()))
    docs = copy.deepcopy(_clean())
    del docs[1]["config"]["replication.policy.class"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(docs))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "migrate", "mirror", "lint", *args], capture_output=True,
                              text=True, timeout=60)
    r = run(str(clean))
    assert r.returncode == 0 and "clean" in r.stdout, r.stderr
    r = run(str(bad), "-O", "json")
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    assert not out["clean"] and [f["trap"] for f in out["findings"]] == ["identity-on-source-only"]
    r = run(str(tmp_path / "nope.json"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "no such file" in r.stderr
