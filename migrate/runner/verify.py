"""Verify's sequence of side effects: capture offsets, run the Spark job, assemble snapshots, compare.

``take_snapshot``, ``compare_with_cluster`` and ``verify_clusters`` are what the CLI calls. They
take an open SparkSession (:func:`spark_session`) and ``KafkaSide`` objects (:func:`kafka_side`),
and the time as a string (no clock read here). Every read is bounded by offsets captured before
Spark starts reading, so records produced meanwhile are never read into the compared range.

Snapshot files are read and written by ``migrate.files``; their format is ``migrate.core.verify.snapshot``'s.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from migrate.adapters.spark.session import SparkSettings, parse_spark_conf, preflight_unless_running, spark_session
from migrate.adapters.spark.job import digest_alignments, digest_ranges
from migrate.files import client_settings
from migrate.core.verify.compare import Report, alignment_requests, compare_cross, compare_same, taken_at_ms
from migrate.core.verify.snapshot import (ISOLATION_LEVELS, PartitionSnapshot, ReadRange, Snapshot, TopicConfig, plan_ranges,
                                   select_topics)
from migrate.errors import BadInput

if TYPE_CHECKING:  # confluent-kafka loads when a command reads a cluster, not when the CLI starts
    from migrate.adapters.kafka.offsets import KafkaSide

log = logging.getLogger(__name__)

__all__ = ["Scope", "SparkSettings", "compare_with_cluster", "kafka_side", "records_in_scope", "records_of",
           "spark_session", "spark_settings", "take_snapshot", "verify_clusters"]

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Scope:
    """Which topics: named ones, a regex (``--include``), or (neither given) all non-internal topics."""

    topics: tuple[str, ...] = ()
    include: str | None = None


# ---------------------------------------------------------------- engines
def spark_settings(master: str, spark_conf: list[str] | None, jars: str | None, app_name: str) -> SparkSettings:
    """The Spark settings of ``--master``, ``--spark-conf`` and ``--jars``, checked before anything runs."""
    jar_list = tuple(j.strip() for j in jars.split(",") if j.strip()) if jars else None
    if jars is not None and not jar_list:
        raise BadInput("--jars is empty: give comma-separated jar files")
    settings = SparkSettings(master=master, conf=parse_spark_conf(spark_conf or []), jars=jar_list, app_name=app_name)
    preflight_unless_running(settings)
    return settings


def kafka_side(bootstrap: str, command_config: Path | None, timeout_ms: int) -> KafkaSide:
    """One cluster as verify reads it, every request bounded by ``--timeout-ms``."""
    from migrate.adapters.kafka.offsets import KafkaSide

    if timeout_ms <= 0:
        raise BadInput(f"--timeout-ms {timeout_ms}: give a positive number of milliseconds")
    return KafkaSide(client_settings(bootstrap, command_config), timeout_s=timeout_ms / 1000)


# ------------------------------------------------------------------- runs
def _check_isolation(level: str) -> None:
    if level not in ISOLATION_LEVELS:
        raise BadInput(f"--isolation-level {level!r}: choose read_committed or read_uncommitted")


def _snapshot(side: KafkaSide, spark, partitions: list[tuple[str, int]], configs: dict[str, TopicConfig],
              offsets: dict[tuple[str, int], tuple[int, int]], cluster_id: str, taken_at: str, include_offsets: bool,
              isolation_level: str, like: Snapshot | None, progress: Progress) -> tuple[Snapshot, list[ReadRange]]:
    compacted = {t for t, c in configs.items() if "compact" in c.cleanup_policy}
    ranges = plan_ranges(partitions, offsets, compacted, like)
    total = sum(r.end - r.read_from for r in ranges)
    progress(f"reading {len(ranges)} partitions ({total} offsets) of {side.settings.bootstrap_servers} with Spark")
    digests = digest_ranges(spark, side.settings.spark_options(), ranges, include_offsets, isolation_level)
    parts = []
    for r in ranges:
        found = digests[(r.topic, r.partition)]
        log_start, end = offsets[(r.topic, r.partition)]
        grid = (None, None) if r.compacted else (r.chunk_base, r.chunk_size)
        parts.append(PartitionSnapshot(r.topic, r.partition, r.compacted, log_start, end, r.read_from, r.read_to,
                                       found.digest, found.tail, *grid, found.chunks, found.edges))
    snap = Snapshot(cluster_id, side.settings.bootstrap_servers, taken_at, include_offsets, isolation_level,
                    tuple(parts), like.taken_at if like else None,
                    topic_configs={t: configs[t] for t in sorted({tp[0] for tp in partitions}) if t in configs})
    return snap, ranges


def _require_read(side: KafkaSide, topics: list[str]) -> None:
    """BadInput before Spark starts when the principal may not describe or read a topic, or read its configs."""
    from migrate.core.permissions import verify_needs
    from migrate.runner.permissions import require

    require(side.admin, side.settings, verify_needs(topics))


def _in_scope(partitions: dict[str, list[int]], scope: Scope) -> tuple[list[str], list[tuple[str, int]]]:
    """The topics ``scope`` chooses among a cluster's ``partitions`` (topic -> partition ids), and their partitions."""
    topics = select_topics(list(partitions), scope.topics, scope.include)
    return topics, [(t, p) for t in topics for p in partitions[t]]


def records_in_scope(side: KafkaSide, scope: Scope, clusters: int = 1) -> int | None:
    """About how many records a snapshot of ``scope`` reads (end minus log start offsets; times ``clusters`` for a
    verify that reads the same topics on two), asked before Spark starts so that the driver's JIT suits the size
    (``spark_session(records=...)``); None when the cluster does not answer it: the snapshot then asks again and
    says what is wrong in its own words."""
    try:
        _topics, partitions = _in_scope(side.view().partitions, scope)
        offsets = side.offsets(partitions, "read_uncommitted")
    except Exception as exc:  # an estimate only: whatever failed here fails again in the snapshot, and is reported there
        log.debug("no record count before Spark starts: %s", exc)
        return None
    return clusters * sum(max(0, end - start) for start, end in offsets.values())


def records_of(snapshot: Snapshot) -> int:
    """How many offsets a compare against ``snapshot`` reads (up to its ends): ``spark_session(records=...)``."""
    return sum(p.offsets_read for p in snapshot.partitions)


def take_snapshot(side: KafkaSide, spark, scope: Scope, taken_at: str, isolation_level: str = "read_committed",
                  like: Snapshot | None = None, progress: Progress = lambda msg: None) -> Snapshot:
    """Snapshot the cluster's partitions in ``scope`` (or those of ``like``, against its ends)."""
    _check_isolation(isolation_level)
    view = side.view()
    if like is not None:
        if like.cluster_id != view.cluster_id:
            raise BadInput(
                f"the snapshot is of cluster {like.cluster_id} but {side.settings.bootstrap_servers} is cluster "
                f"{view.cluster_id}: point --bootstrap-server at the cluster the snapshot was taken of"
            )
        partitions = [p.key for p in like.partitions if p.topic in view.partitions and p.partition in view.partitions[p.topic]]
        topics = sorted({t for t, _ in partitions})
        isolation_level = like.isolation_level
    else:
        topics, partitions = _in_scope(view.partitions, scope)
    _require_read(side, topics)
    progress(f"capturing offsets of {len(partitions)} partitions in {len(topics)} topics")
    offsets = side.offsets(partitions, isolation_level)
    configs = side.topic_configs(topics)
    snap, _ = _snapshot(side, spark, partitions, configs, offsets, view.cluster_id, taken_at, True,
                        isolation_level, like, progress)
    return snap


def _sizes(side: KafkaSide, snap: Snapshot) -> dict[tuple[str, int], int]:
    """Each partition's size now, for the topics whose retention.bytes may have deleted records."""
    by_size = {t for t, c in snap.topic_configs.items() if c.deletes and c.retention_bytes >= 0}
    return side.partition_bytes([p.key for p in snap.partitions if p.topic in by_size]) if by_size else {}


def compare_with_cluster(before: Snapshot, side: KafkaSide, spark, taken_at: str, fail_on_tail: bool = False,
                         progress: Progress = lambda msg: None) -> tuple[Snapshot, Report]:
    """Snapshot the cluster against ``before``'s ends and compare (the ``verify compare`` form): records
    below a log start that moved are judged by the topics' configs now, at ``taken_at``."""
    after = take_snapshot(side, spark, Scope(), taken_at, before.isolation_level, like=before, progress=progress)
    return after, compare_same(before, after, fail_on_tail, taken_at_ms(taken_at), _sizes(side, after))


def verify_clusters(source: KafkaSide, target: KafkaSide, spark, scope: Scope, taken_at: str,
                    isolation_level: str = "read_committed", fail_on_tail: bool = False,
                    progress: Progress = lambda msg: None, allow_duplicates: bool = False) -> Report:
    """Compare two clusters (source and target of a mirror-based migration), partition by partition.

    Topics are chosen on the source; a chosen topic missing on the target is a difference. Both
    sides' offsets are captured before either is read.
    """
    _check_isolation(isolation_level)
    sview, tview = source.view(), target.view()
    topics, s_parts = _in_scope(sview.partitions, scope)
    t_topics = [t for t in topics if t in tview.partitions]
    t_parts = [(t, p) for t in t_topics for p in tview.partitions[t]]
    _require_read(source, topics)
    _require_read(target, t_topics)
    progress(f"capturing offsets of {len(s_parts)} source and {len(t_parts)} target partitions")
    s_offsets = source.offsets(s_parts, isolation_level)
    t_offsets = target.offsets(t_parts, isolation_level)
    s_configs, t_configs = source.topic_configs(topics), target.topic_configs(t_topics)
    s_snap, s_ranges = _snapshot(source, spark, s_parts, s_configs, s_offsets, sview.cluster_id, taken_at, False,
                                 isolation_level, None, progress)
    t_snap, t_ranges = _snapshot(target, spark, t_parts, t_configs, t_offsets, tview.cluster_id, taken_at, False,
                                 isolation_level, None, progress)
    wanted = alignment_requests(s_snap, t_snap)
    aligned: dict = {"source": {}, "target": {}}
    for label, side, ranges in (("source", source, s_ranges), ("target", target, t_ranges)):
        if wanted[label]:
            progress(f"lining up {len(wanted[label])} {label} partitions whose records differ with the other side's")
            aligned[label] = digest_alignments(spark, side.settings.spark_options(), ranges, wanted[label],
                                               isolation_level)
    sizes = {"source": _sizes(source, s_snap), "target": _sizes(target, t_snap)}
    return compare_cross(s_snap, t_snap, aligned, fail_on_tail, taken_at_ms(taken_at), sizes, allow_duplicates)
