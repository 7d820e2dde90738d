"""``kmigrate mirror start --connect-config``: create the target's topics as ``mirror start`` does, then
hand back the three connector configs for an existing Kafka Connect cluster (no MirrorMaker is started)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from migrate.core.mirror.plan import mirror_definition
from migrate.core.mirror.connect import connector_configs, hidden_keys, worker_requirements
from migrate.files import check_writable, write_whole
from migrate.runner.mirror.clusters import Clusters, Request, read_plan
from migrate.runner.mirror.topics import CreateResult, create_topics


@dataclass(frozen=True)
class ConnectConfigs:
    connectors: list[dict]
    hidden: list[str]  # keys whose values are [hidden] placeholders to fill
    worker: dict[str, str]  # Connect worker properties the connectors rely on
    topics: CreateResult
    out: Path | None

    def text(self) -> str:
        return json.dumps(self.connectors, indent=2) + "\n"

    def to_dict(self) -> dict:
        return {"connectors": self.connectors, "hidden_keys": self.hidden, "worker_properties": self.worker,
                "topics": self.topics.to_dict(), "out": None if self.out is None else str(self.out)}


def connect_configs(req: Request, tasks: int = 2, out: Path | None = None) -> ConnectConfigs:
    """Plan, create the target's topics, render the connector configs (and write them to ``out``)."""
    if out is not None:
        check_writable(out, "--out", "connectors.json")
    clusters = Clusters(req.source, req.target)
    plan = read_plan(req, clusters)
    definition = mirror_definition(plan, clusters.java_properties("source"), clusters.java_properties("target"),
                                   tasks=tasks)
    connectors = connector_configs(definition)
    result = ConnectConfigs(connectors, hidden_keys(connectors), worker_requirements(definition),
                            create_topics(clusters, plan), out)
    if out is not None:
        write_whole(out, result.text(), "the connector configs", "--out")
    return result
