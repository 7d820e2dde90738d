"""``kmigrate mirror lint``: the traps of a MirrorMaker 2 configuration, found before they cost data.

Two forms are read (``migrate.files.read_mirror_config`` opens the files; this module only judges):

- a dedicated MirrorMaker's ``mm2.properties`` (``clusters``, ``A.bootstrap.servers``, ``A->B.enabled``,
  ``A->B.``-prefixed keys). Its three connectors of a flow all get the same keys
  (``MirrorMakerConfig.connectorBaseConfig``): they cannot disagree, so only the converters and the
  flows that write into a flow's source are checked;
- Kafka Connect connector configs (JSON: ``{"name": .., "config": {..}}``, a flat config with
  ``connector.class``, or a list of either) for ``MirrorSourceConnector``,
  ``MirrorCheckpointConnector`` and ``MirrorHeartbeatConnector``: each is configured on its own and
  they come to disagree.

Defaults are MirrorMaker 2's (Kafka 3.9): ``DefaultReplicationPolicy``, separator ``.``, offset syncs
on the source, topics ``.*`` minus ``.*[\\-\\.]internal, .*\\.replica, __.*``, aliases ``source`` and
``target``; a Connect worker's converters apply to a connector that sets none (Kafka's
``connect-distributed.properties`` ships ``JsonConverter``; the header converter defaults to
``SimpleHeaderConverter``).
"""

from __future__ import annotations

from dataclasses import dataclass

from migrate.errors import BadInput

BYTE_ARRAY_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"
DEFAULT_POLICY = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
SOURCE, CHECKPOINT, HEARTBEAT = "MirrorSourceConnector", "MirrorCheckpointConnector", "MirrorHeartbeatConnector"
KINDS = (SOURCE, CHECKPOINT, HEARTBEAT)
CONVERTERS = ("key.converter", "value.converter", "header.converter")
DEFAULTS = {
    "replication.policy.class": DEFAULT_POLICY,
    "replication.policy.separator": ".",
    "offset-syncs.topic.location": "source",
    "topics": ".*",
    "topics.exclude": r".*[\-\.]internal, .*\.replica, __.*",
    "source.cluster.alias": "source",
    "target.cluster.alias": "target",
}
# Keys that must agree between the connectors of one flow, and the connectors that read each.
AGREE = (
    ("replication.policy.separator", KINDS, "separator-mismatch"),
    ("offset-syncs.topic.location", (SOURCE, CHECKPOINT), "offset-syncs-mismatch"),
    ("topics", (SOURCE, CHECKPOINT), "topic-filter-mismatch"),
    ("topics.exclude", (SOURCE, CHECKPOINT), "topic-filter-mismatch"),
)
_HARM = {
    "replication.policy.separator": "the checkpoint connector names the target's topics (and the heartbeat connector "
                                    "its topics) with another separator than the source connector: checkpoints name "
                                    "topics that do not exist and consumer offsets are not translated",
    "offset-syncs.topic.location": "the checkpoint connector reads the offset syncs on another cluster than the one "
                                   "the source connector writes them to: it finds none and translates no offset",
    "topics": "the checkpoint connector translates the offsets of other topics than the source connector copies: "
              "groups on topics it leaves out keep no offset on the target",
    "topics.exclude": "the checkpoint connector translates the offsets of other topics than the source connector "
                      "copies: groups on topics it leaves out keep no offset on the target",
}


@dataclass(frozen=True)
class Finding:
    """One trap: which (``trap``), where (connectors, keys), what MirrorMaker would do wrong, how to fix it."""

    trap: str
    where: str  # file
    connectors: tuple[str, ...]
    keys: tuple[str, ...]
    problem: str
    fix: str

    def to_dict(self) -> dict:
        return {"trap": self.trap, "file": self.where, "connectors": list(self.connectors), "keys": list(self.keys),
                "problem": self.problem, "fix": self.fix}


@dataclass(frozen=True)
class Connector:
    """One MirrorMaker connector's config as a Connect worker is handed it."""

    name: str
    kind: str  # SOURCE, CHECKPOINT or HEARTBEAT
    config: dict[str, str]
    where: str

    def get(self, key: str) -> str:
        value = self.config.get(key)
        if key == "topics.exclude" and value is None:
            value = self.config.get("topics.blacklist")  # the deprecated name, still read by 3.9
        return DEFAULTS.get(key, "") if value is None else value

    def normalized(self, key: str) -> str:
        """A value as MirrorMaker compares it: lists (topic filters) without the spaces around commas."""
        value = self.get(key).strip()
        return ",".join(p.strip() for p in value.split(",")) if key.startswith("topics") else value

    @property
    def source(self) -> tuple[str, str]:
        return self.get("source.cluster.alias"), self.config.get("source.cluster.bootstrap.servers", "")

    @property
    def target(self) -> tuple[str, str]:
        return self.get("target.cluster.alias"), self.config.get("target.cluster.bootstrap.servers", "")


def _string(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def connectors_from_json(doc: object, where: str) -> list[Connector]:
    """The MirrorMaker connectors of a parsed JSON document: one connector (``{"name", "config"}`` as Connect's
    REST API takes it, or a flat config with ``connector.class``) or a list of them. Other connectors are
    left out; :class:`BadInput` for a shape that is no connector config or a file with no MirrorMaker connector."""
    items = doc if isinstance(doc, list) else [doc]
    out: list[Connector] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise BadInput(f"{where}: item {i + 1} is not a JSON object: give a connector config "
                           '({"name": ..., "config": {...}}) or a list of them')
        config = item.get("config", item)
        if not isinstance(config, dict) or "connector.class" not in config:
            raise BadInput(f"{where}: item {i + 1} has no connector.class: give a Kafka Connect connector config "
                           '({"name": ..., "config": {"connector.class": ...}})')
        if any(isinstance(v, (dict, list)) or v is None for v in config.values()):
            raise BadInput(f"{where}: connector {item.get('name', i + 1)} has a value that is not a string, number or "
                           "boolean: Connect configs are flat key/value maps")
        flat = {str(k): _string(v) for k, v in config.items()}
        kind = flat["connector.class"].strip().rsplit(".", 1)[-1]
        if kind not in KINDS:
            continue
        name = _string(item.get("name") or flat.get("name") or f"{kind} (item {i + 1})")
        out.append(Connector(name, kind, flat, where))
    return out


def lint_connectors(connectors: list[Connector]) -> list[Finding]:
    """The traps of MirrorMaker connectors run on a Kafka Connect cluster (all files together: one deployment)."""
    if not connectors:
        raise BadInput("no MirrorSourceConnector, MirrorCheckpointConnector or MirrorHeartbeatConnector config in "
                       "the files given: give the connector JSONs (or an mm2.properties)")
    found: list[Finding] = []
    flows: dict[tuple[str, str], list[Connector]] = {}
    for c in connectors:
        flows.setdefault((c.source[0], c.target[0]), []).append(c)
    for flow in flows.values():
        found += _policy(flow)
        found += _agreement(flow)
    for c in connectors:
        found += _converters(c)
    found += _reverse_connectors(connectors)
    return found


def _where(conns: list[Connector]) -> str:
    return ", ".join(dict.fromkeys(c.where for c in conns))


def _names(conns: list[Connector]) -> tuple[str, ...]:
    return tuple(f"{c.name} ({c.kind})" for c in conns)


def _policy(flow: list[Connector]) -> list[Finding]:
    key = "replication.policy.class"
    sources = [c for c in flow if c.kind == SOURCE]
    others = [c for c in flow if c.kind != SOURCE]
    if any(c.get(key) == IDENTITY_POLICY for c in sources):
        plain = [c for c in others if c.get(key) != IDENTITY_POLICY]
        if any(c.kind == CHECKPOINT for c in plain):
            return [Finding(
                "identity-on-source-only", _where(sources + plain), _names(sources + plain), (key,),
                f"IdentityReplicationPolicy is set on the source connector only: {', '.join(_names(plain))} "
                f"use{'s' if len(plain) == 1 else ''} {plain[0].get(key).rsplit('.', 1)[-1]}, so the checkpoint "
                "connector looks for the topics under renamed ('source.topic') names that do not exist on the "
                "target: consumer group offsets are never translated (Strimzi #4498)",
                f"set {key}={IDENTITY_POLICY} in every MirrorMaker connector of the flow")]
    values = {c.get(key) for c in flow}
    if len(values) > 1:
        return [Finding("policy-mismatch", _where(flow), _names(flow), (key,),
                        "the connectors use different replication policies ("
                        + ", ".join(f"{c.name}: {c.get(key).rsplit('.', 1)[-1]}" for c in flow)
                        + "): topic names on the target, checkpoints and heartbeats do not match up, so offsets "
                        "are not translated and heartbeats land under other names",
                        f"set the same {key} (and replication.policy.separator) in every connector of the flow")]
    return []


def _agreement(flow: list[Connector]) -> list[Finding]:
    found: list[Finding] = []
    for key, kinds, trap in AGREE:
        conns = [c for c in flow if c.kind in kinds]
        if len({c.normalized(key) for c in conns}) > 1:
            found.append(Finding(
                trap, _where(conns), _names(conns), (key,),
                f"{key} differs (" + ", ".join(f"{c.name}: {c.get(key)!r}" for c in conns) + "): " + _HARM[key],
                f"set the same {key} in the connectors (an unset key means {DEFAULTS[key]!r})"))
    return found


def _converters(c: Connector) -> list[Finding]:
    bad = [k for k in CONVERTERS if c.config.get(k, "").strip() != BYTE_ARRAY_CONVERTER]
    if not bad:
        return []
    shown = ", ".join(f"{k}={c.config[k]}" if k in c.config else f"{k} unset (the worker's applies)" for k in bad)
    return [Finding(
        "converter", c.where, _names([c]), tuple(bad),
        f"{shown}: MirrorMaker hands Connect raw bytes; any converter but ByteArrayConverter re-encodes keys, values "
        "or headers on the way (JsonConverter wraps them, SimpleHeaderConverter turns header bytes into text), "
        "so the target's records differ from the source's and MirrorMaker's own checkpoints become unreadable",
        f"set {', '.join(f'{k}={BYTE_ARRAY_CONVERTER}' for k in CONVERTERS)} in the connector config")]


def _same_cluster(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Two (alias, bootstrap servers) name one cluster: by bootstrap servers when both give them, else by alias."""
    if a[1] and b[1]:
        return {s.strip() for s in a[1].split(",")} & {s.strip() for s in b[1].split(",")} != set()
    return a[0] == b[0]


def _reverse_connectors(connectors: list[Connector]) -> list[Finding]:
    found: list[Finding] = []
    for s in (c for c in connectors if c.kind == SOURCE):
        into = [c for c in connectors if c is not s and _same_cluster(c.target, s.source)
                and not _same_cluster(c.source, c.target)]
        if into:
            found.append(Finding(
                "reverse-flow", _where([s, *into]), _names([s, *into]),
                ("source.cluster.alias", "target.cluster.alias", "target.cluster.bootstrap.servers"),
                f"{', '.join(_names(into))} write{'s' if len(into) == 1 else ''} into cluster {s.source[0]!r}, the "
                f"source that {s.name} copies from: a migration's source receives records, heartbeats or "
                "checkpoints, and with IdentityReplicationPolicy the two directions copy each other's records "
                "back and forth forever",
                "delete the connectors whose target is the source cluster (run one direction only until the cut-over)"))
    return found


# ====================================================================== mm2.properties


def lint_mm2_properties(props: dict[str, str], where: str) -> list[Finding]:
    """The traps of a dedicated MirrorMaker's ``mm2.properties`` (as ``javaproperties`` reads it)."""
    clusters = [a.strip() for a in props.get("clusters", "").split(",") if a.strip()]
    if len(clusters) < 2:
        raise BadInput(f"{where}: no 'clusters' with two aliases: not a MirrorMaker 2 properties file "
                       "(it starts with e.g. clusters = source, target)")
    missing = [a for a in clusters if not props.get(f"{a}.bootstrap.servers", "").strip()]
    if missing:
        raise BadInput(f"{where}: cluster {missing[0]!r} has no {missing[0]}.bootstrap.servers: add it")
    enabled = [(a, b) for a in clusters for b in clusters if a != b and _true(props.get(f"{a}->{b}.enabled"))]
    if not enabled:
        raise BadInput(f"{where}: no replication flow is enabled: add e.g. {clusters[0]}->{clusters[1]}.enabled = true")
    found: list[Finding] = []
    for a, b in enabled:
        found += _mm2_converters(props, where, a, b)
        if (b, a) in enabled:
            if (a, b) < (b, a):
                found.append(Finding(
                    "reverse-flow", where, (f"{a}->{b}", f"{b}->{a}"), (f"{a}->{b}.enabled", f"{b}->{a}.enabled"),
                    f"both {a}->{b} and {b}->{a} are enabled: each flow writes into the other's source; with "
                    "IdentityReplicationPolicy each copies the other's records back forever, with the default "
                    "policy the source fills with renamed copies",
                    f"set {b}->{a}.enabled = false (one direction until the cut-over)"))
            continue
        if _heartbeats(props, b, a):
            found.append(Finding(
                "reverse-flow", where, (f"{b}->{a} (heartbeats)",),
                (f"{b}->{a}.emit.heartbeats.enabled", "emit.heartbeats.enabled"),
                f"{b}->{a} is not enabled, but MirrorMaker still starts a {b}->{a} herder for heartbeats (unless run "
                f"with --clusters {b}): it creates and writes 'heartbeats' and mm2-configs/offsets/status.{b}.internal "
                f"in {a}, the source of the migration",
                f"set {b}->{a}.emit.heartbeats.enabled = false (or run MirrorMaker with --clusters {b})"))
    return found


def _true(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"


def _heartbeats(props: dict[str, str], a: str, b: str) -> bool:
    """Whether MirrorMaker starts an a->b herder for heartbeats alone (``MirrorMakerConfig.clusterPairs``)."""
    value = props.get(f"{a}->{b}.emit.heartbeats.enabled", props.get("emit.heartbeats.enabled"))
    return value is None or value.strip().lower() == "true"


def _mm2_converters(props: dict[str, str], where: str, a: str, b: str) -> list[Finding]:
    # connector keys: top level and a->b.*; worker keys: top level, b.* and a->b.worker.* (MirrorMakerConfig)
    bad = {k: props[k] for conv in CONVERTERS for k in (conv, f"{b}.{conv}", f"{a}->{b}.{conv}", f"{a}->{b}.worker.{conv}")
           if k in props and props[k].strip() != BYTE_ARRAY_CONVERTER}
    if not bad:
        return []
    return [Finding(
        "converter", where, (f"{a}->{b}",), tuple(bad),
        ", ".join(f"{k}={v}" for k, v in bad.items()) + ": MirrorMaker uses ByteArrayConverter unless told "
        "otherwise; any other converter re-encodes keys, values or headers on the way, so the target's records "
        "differ from the source's and MirrorMaker's checkpoints become unreadable",
        f"remove {', '.join(bad)} (MirrorMaker then uses ByteArrayConverter)")]


def lint_documents(properties: list[tuple[str, dict[str, str]]], json_docs: list[tuple[str, object]]) -> list[Finding]:
    """Lint every file: each mm2.properties on its own, the connector JSONs together (one Connect deployment)."""
    found: list[Finding] = []
    for where, props in properties:
        found += lint_mm2_properties(props, where)
    if json_docs:
        found += lint_connectors([c for where, doc in json_docs for c in connectors_from_json(doc, where)])
    return found
