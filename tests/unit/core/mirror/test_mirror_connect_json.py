"""core/mirror/connect.py: the connector JSONs and mm2.properties come from one definition: they agree key by
key where a dedicated MirrorMaker would hand its connectors the same keys, both lint clean, no secret is printed."""

from __future__ import annotations

import json

import javaproperties

from migrate.core.mirror.plan import ClusterReading, TopicReading, mirror_definition, mm2_properties, plan_mirror, render_properties
from migrate.core.mirror.connect import HIDDEN, connector_configs, hidden_keys, worker_requirements
from migrate.core.mirror.lint import connectors_from_json, lint_connectors, lint_mm2_properties

SOURCE_CLIENT = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                 "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                     'username="kmigrate" password="s3cr3t-source";',
                 "ssl.truststore.location": "/etc/kafka/ca.pem", "ssl.truststore.type": "PEM",
                 "consumer.fetch.max.bytes": "52428800"}
TARGET_CLIENT = {"security.protocol": "SSL", "ssl.keystore.password": "s3cr3t-target",
                 "ssl.key.password": "${file:/etc/kafka/secrets.properties:key.password}"}


def _plan():
    source = ClusterReading("a1:9093,a2:9093", "A", 3, {"orders": TopicReading("orders", 6, 3),
                                                      "payments.eu": TopicReading("payments.eu", 3, 3)},
                            ("billing",))
    return plan_mirror(source, ClusterReading("b1:9093", "B", 3, {}), groups_filter="billing|reports")


def _dedicated_connector_config(props: dict[str, str], source: str, target: str) -> dict[str, str]:
    """What a dedicated MirrorMaker hands each connector of source->target (MirrorMakerConfig.connectorBaseConfig
    and clusterProps, Kafka 3.9), written out independently of kmigrate's code."""
    clusters = [c.strip() for c in props["clusters"].split(",")]
    out = {k: v for k, v in props.items()
           if k != "clusters" and "->" not in k and k.split(".", 1)[0] not in clusters}
    for alias, prefix in ((source, "source"), (target, "target")):
        for key, value in props.items():
            if key.startswith(alias + "."):
                rest = key[len(alias) + 1:]
                client = rest.split(".", 1)[0] in ("consumer", "producer", "admin")
                out[f"{prefix}.{rest}" if client else f"{prefix}.cluster.{rest}"] = value
    out["source.cluster.alias"], out["target.cluster.alias"] = source, target
    out.update({k[len(f"{source}->{target}."):]: v for k, v in props.items() if k.startswith(f"{source}->{target}.")})
    return out


def test_connector_jsons_agree_with_mm2_properties_key_by_key():
    props = javaproperties.loads(render_properties(mm2_properties(_plan(), SOURCE_CLIENT, TARGET_CLIENT, rest_port=4000)))
    dedicated = _dedicated_connector_config(dict(props), "source", "target")
    connectors = connector_configs(mirror_definition(_plan(), SOURCE_CLIENT, TARGET_CLIENT))
    assert [c["config"]["connector.class"].rsplit(".", 1)[1] for c in connectors] == [
        "MirrorSourceConnector", "MirrorCheckpointConnector", "MirrorHeartbeatConnector"]
    for c in connectors:
        config = c["config"]
        overlap = set(config) & set(dedicated)
        # the keys that decide names, offsets and what is copied are in both
        assert {"replication.policy.class", "replication.policy.separator", "offset-syncs.topic.location", "topics",
                "topics.exclude", "groups", "source.cluster.bootstrap.servers", "target.cluster.bootstrap.servers",
                "source.cluster.security.protocol", "source.consumer.isolation.level", "source.consumer.fetch.max.bytes",
                "target.cluster.ssl.keystore.password", "sync.group.offsets.enabled", "tasks.max",
                "transaction.boundary"} <= overlap
        differing = {k: (config[k], dedicated[k]) for k in overlap if config[k] != dedicated[k] and config[k] != HIDDEN}
        assert differing == {}
        # keys only in the JSON: the connector's identity and what a dedicated MirrorMaker sets by default
        assert set(config) - set(dedicated) <= {"connector.class", "name", "key.converter", "value.converter",
                                                "header.converter", "exactly.once.support"}
    assert connectors[0]["config"]["topics"] == "orders|payments\\.eu" and connectors[1]["config"]["groups"] == "billing|reports"


def test_both_forms_lint_clean():
    props = mm2_properties(_plan(), SOURCE_CLIENT, TARGET_CLIENT, rest_port=4000)
    assert lint_mm2_properties(dict(javaproperties.loads(render_properties(props))), "mm2.properties") == []
    connectors = connector_configs(mirror_definition(_plan(), SOURCE_CLIENT, TARGET_CLIENT))
    assert lint_connectors(connectors_from_json(json.loads(json.dumps(connectors)), "connectors.json")) == []


def test_no_secret_is_printed_but_config_provider_references_are_kept():
    connectors = connector_configs(mirror_definition(_plan(), SOURCE_CLIENT, TARGET_CLIENT))
    text = json.dumps(connectors)
    assert "s3cr3t" not in text
    assert hidden_keys(connectors) == ["source.cluster.sasl.jaas.config", "target.cluster.ssl.keystore.password"]
    assert connectors[2]["config"]["target.cluster.ssl.key.password"] == "${file:/etc/kafka/secrets.properties:key.password}"
    assert connectors[0]["config"]["exactly.once.support"] == "required"
    assert "exactly.once.support" not in connectors[1]["config"]  # only source connectors may declare it
    assert worker_requirements(mirror_definition(_plan(), {}, {})) == {
        "bootstrap.servers": "b1:9093", "offset.flush.interval.ms": "5000", "exactly.once.source.support": "enabled"}
