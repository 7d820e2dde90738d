"""``kmigrate mirror create-topics`` (and the first step of ``start``): the plan's missing topics created
on the target, after every right this and the MirrorMaker about to start need is checked.

Killing it at any line is safe: topic creation leaves existing topics as they are (a rerun creates
what is missing), and the record of what was created is written after the topics exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from migrate.core.ledger import MIRROR_TOPIC
from migrate.core.mirror.plan import MirrorPlan, source_and_target
from migrate.core.mirror.rights import Needs, create_topics_needs
from migrate.core.permissions import Need
from migrate.runner.mirror.clusters import Clusters
from migrate.runner.permissions import require, require_after_create


@dataclass
class CreateResult:
    created: list[str] = field(default_factory=list)
    would_create: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    differences: dict[str, dict[str, tuple[str | None, str | None]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    specs: list[tuple[str, int, int, dict]] = field(default_factory=list)  # created: name, partitions, rf, configs

    def to_dict(self) -> dict:
        return {"created": self.created, "would_create": self.would_create, "existing": self.existing,
                "config_differences": {t: source_and_target(d) for t, d in self.differences.items()},
                "warnings": self.warnings}


def create_topics(clusters: Clusters, plan: MirrorPlan, dry_run: bool = False,
                  engine_needs: Needs | None = None, record: bool = True) -> CreateResult:
    """Create the plan's missing topics on the target (same partitions, capped replication factor, the
    source's effective non-default configs); report config differences of topics that exist.

    First, every right this needs on both clusters, and with ``engine_needs`` (the engine's
    :meth:`~migrate.runner.mirror.engine.Engine.needs`) the rights of the MirrorMaker about to start
    with the same settings (BadInput naming the first missing one: nothing created, nothing started; a
    dry run lists them as warnings). Rights on topics not created yet that the brokers could not answer
    for are asked again right after they are created. ``record=False``: the caller records what was created
    (:func:`record_created`) once it has started what need not wait for that record (MirrorMaker's JVM)."""
    result = CreateResult(warnings=plan.warnings)
    for t in plan.topics:
        if t.to_create:
            (result.would_create if dry_run else result.created).append(t.name)
        else:
            result.existing.append(t.name)
            if t.config_differences:
                result.differences[t.name] = t.config_differences
    book = clusters.book(plan.source.cluster_id, plan.target.cluster_id)
    on_target = _check_rights(clusters, plan, book.exists(), engine_needs,
                              warn=result.warnings.append if dry_run else None)
    if dry_run or not result.created:
        return result
    result.specs = [(t.name, t.source.partitions, t.create_replication_factor, t.create_configs)
                    for t in plan.to_create()]
    target = clusters.target
    target.create_topics(result.specs)
    require_after_create(target.admin, target.settings, [n for n in on_target if n.resource.name in result.created])
    if record:
        record_created(clusters, plan, result)
    return result


def record_created(clusters: Clusters, plan: MirrorPlan, result: CreateResult) -> None:
    """The ``topics-created`` step in the bookkeeping topic (history only: nothing decides on it)."""
    if result.specs:
        clusters.book(plan.source.cluster_id, plan.target.cluster_id).append(
            "mirror-step", "topics-created", step="topics-created",
            topics={name: {"partitions": n, "replication_factor": rf, "configs": c} for name, n, rf, c in result.specs})


def _check_rights(clusters: Clusters, plan: MirrorPlan, book_exists: bool, engine_needs: Needs | None,
                  warn=None) -> list[Need]:
    """What :func:`create_topics` and the MirrorMaker after it need (:mod:`migrate.core.mirror.rights`);
    the target's needs."""
    on_source, on_target = create_topics_needs([t.name for t in plan.topics], [t.name for t in plan.to_create()],
                                               MIRROR_TOPIC, book_exists)
    if engine_needs is not None:
        on_source, on_target = on_source + engine_needs[0], on_target + engine_needs[1]
    source, target = clusters.source, clusters.target
    require(source.admin, source.settings, on_source, warn=warn)
    require(target.admin, target.settings, on_target, warn=warn)
    return on_target
