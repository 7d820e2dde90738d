"""``kmigrate mirror start --connect-config``: kmigrate's MirrorMaker 2 flow as the three connector configs
of an existing Kafka Connect cluster, rendered from the same :class:`MirrorDefinition` as the dedicated
MirrorMaker's ``mm2.properties``.

The keys are those a dedicated MirrorMaker hands its connectors (``MirrorMakerConfig.connectorBaseConfig``,
Kafka 3.9): the flow's connector keys as they are, each side's client properties as
``source.cluster.*``/``target.cluster.*`` (``consumer.*``, ``producer.*``, ``admin.*`` ones as
``source.*``/``target.*``), the aliases, and ByteArrayConverter for keys, values and headers (a dedicated
MirrorMaker's default; a Connect worker's own would re-encode the records). Secrets of the command
configs are never written: they become ``[hidden]`` placeholders the operator fills (with the value or a
config provider reference such as ``${file:/path/secrets.properties:key}``).
"""

from __future__ import annotations

import re

from migrate.core.mirror.plan import SOURCE_ALIAS, TARGET_ALIAS, MirrorDefinition
from migrate.core.mirror.lint import BYTE_ARRAY_CONVERTER, CHECKPOINT, CONVERTERS, HEARTBEAT, SOURCE

HIDDEN = "[hidden]"
CONNECTOR_PACKAGE = "org.apache.kafka.connect.mirror"
_SECRET = re.compile(r"password|secret|jaas\.config|credentials|token|keystore\.key", re.IGNORECASE)
_CLIENT_PREFIXES = ("consumer.", "producer.", "admin.")


def is_secret(key: str, value: str) -> bool:
    """A client property whose value must not be printed (a config provider reference is no secret)."""
    return bool(_SECRET.search(key)) and not (value.startswith("${") and value.endswith("}"))


def _side(prefix: str, client: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in client.items():
        shown = HIDDEN if is_secret(key, value) else value
        out[f"{prefix}.{key}" if key.startswith(_CLIENT_PREFIXES) else f"{prefix}.cluster.{key}"] = shown
    return out


def connector_name(kind: str) -> str:
    return f"kmigrate-{SOURCE_ALIAS}-{TARGET_ALIAS}-{kind}"


def connector_configs(d: MirrorDefinition) -> list[dict]:
    """The MirrorSourceConnector, MirrorCheckpointConnector and MirrorHeartbeatConnector of the flow, each as
    Connect's REST API takes it (``POST /connectors``: ``{"name": ..., "config": {...}}``)."""
    base = {
        "source.cluster.alias": SOURCE_ALIAS,
        "target.cluster.alias": TARGET_ALIAS,
        "source.cluster.bootstrap.servers": d.source_bootstrap,
        "target.cluster.bootstrap.servers": d.target_bootstrap,
        **_side("source", d.source_client),
        **_side("target", d.target_client),
        **d.connector,
        **{f"source.consumer.{k}": v for k, v in d.source_consumer.items()},
        **d.framework,
        **{k: BYTE_ARRAY_CONVERTER for k in CONVERTERS},
    }
    out = []
    for kind in (SOURCE, CHECKPOINT, HEARTBEAT):
        config = {"connector.class": f"{CONNECTOR_PACKAGE}.{kind}", "name": connector_name(kind), **base}
        if kind == SOURCE:  # refused by a worker without exactly-once support, rather than silently at-least-once
            config["exactly.once.support"] = "required"
        out.append({"name": config["name"], "config": config})
    return out


def hidden_keys(connectors: list[dict]) -> list[str]:
    """The keys whose values are ``[hidden]`` placeholders (the same in every connector)."""
    return [k for k, v in connectors[0]["config"].items() if v == HIDDEN] if connectors else []


def worker_requirements(d: MirrorDefinition) -> dict[str, str]:
    """Connect worker properties the connectors rely on (set in the worker's properties, not in a connector):
    the worker's cluster is the target, exactly-once source support, the flush interval offset syncs keep pace with."""
    return {"bootstrap.servers": d.target_bootstrap, **d.target_worker}
