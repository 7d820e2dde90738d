"""``kmigrate mirror translate``: consumer offsets translated by kmigrate, for a mirror that keeps none
(MirrorMaker 1), by timestamp and content (see ``core/mirror/translation.py``), and set on the target
once the group has no member there. The cut-over's gate d of MirrorMaker 1 uses the same translation.

Kill-safety: ``translate`` reads, then sets each group's offsets in one request per group.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from migrate.adapters.kafka import translation as reads
from migrate.adapters.kafka.mirror import MirrorCluster
from migrate.adapters.mirrormaker.mm2 import MirrorMakerProcess
from migrate.core.mirror.cutover import Translation
from migrate.core.mirror.mm1 import DEFAULT_GROUP
from migrate.core.mirror.translation import (PartitionFacts, PartitionTranslation, partitions_not_kept,
                                             translate as translate_partition)
from migrate.errors import BadInput
from migrate.runner.mirror.clusters import Side, Started

TP = tuple[str, int]


@dataclass(frozen=True)
class TranslateResult:
    partitions: tuple[PartitionTranslation, ...]
    applied: bool
    groups: tuple[str, ...]

    @property
    def rereads(self) -> int | None:
        values = [p.rereads for p in self.partitions]
        return None if any(v is None for v in values) else sum(values)

    def to_dict(self) -> dict:
        return {"groups": list(self.groups), "applied": self.applied, "rereads": self.rereads,
                "partitions": [p.to_dict() for p in self.partitions]}


def translate(state_dir: Path, groups: list[str], source: Side | None = None, target: Side | None = None,
              window: int = 10000, dry_run: bool = False) -> TranslateResult:
    """Translate each group's committed source offsets onto the target (see ``core/mirror/translation.py``)
    and, unless ``dry_run``, set them there once the group has no member on the target."""
    if not groups:
        raise BadInput("give at least one --group to translate")
    if window < 1:
        raise BadInput(f"--window {window}: give 1 or more records")
    mirror = Started.open(state_dir, source, target)
    src, tgt = mirror.clusters.source, mirror.clusters.target
    topics = set(mirror.topics or {})
    copy_group = mirror_group(state_dir)
    out: list[PartitionTranslation] = []
    for group in groups:
        committed = {tp: o for tp, o in src.committed_offsets(group, []).items() if not topics or tp[0] in topics}
        if not committed:
            raise BadInput(f"group {group} has no committed offset on the source for the mirrored topics: check --group")
        if not dry_run:
            state, members, _ = tgt.group_members(group)
            if members or state.upper() not in ("EMPTY", "DEAD", "UNKNOWN"):
                raise BadInput(f"group {group} is active on the target ({state}): stop its consumers there first")
        out += _translate_group(src, tgt, group, committed, window, copy_group)
    if not dry_run:
        for group in groups:
            reads.set_group_offsets(tgt, group, {(p.topic, p.partition): p.offset for p in out if p.group == group})
    return TranslateResult(tuple(out), not dry_run, tuple(groups))


def _translate_group(src: MirrorCluster, tgt: MirrorCluster, group: str, committed: dict[tuple[str, int], int],
                     window: int, mirror_group: str) -> list[PartitionTranslation]:
    tps = sorted(committed)
    counts = src.topic_partitions()
    src_ends = src.end_offsets({t: counts[t] for t, _ in tps if t in counts})
    on_target = tgt.topic_partitions()
    _refuse_missing(group, {t for t, _ in tps}, on_target)
    tgt_ends = tgt.end_offsets({t: on_target[t] for t, _ in tps})
    mirror_at = src.committed_offsets(mirror_group, tps)
    scattered = partitions_not_kept({tp: (src_ends[tp][0], mirror_at[tp]) for tp in tps if tp in mirror_at}, tgt_ends)
    if scattered:
        raise BadInput(f"the target holds fewer records than MirrorMaker 1 copied in {', '.join(f'{t}[{p}]' for t, p in scattered)}: "
                       "records are not in the same partitions on both sides (MirrorMaker 1 places unkeyed records "
                       "anywhere), so offsets cannot be translated per partition; nothing set")
    facts = content_facts(src, tgt, group, committed, window)
    return [translate_partition(group, topic, partition, facts[(topic, partition)]) for topic, partition in tps]


def content_facts(src: MirrorCluster, tgt: MirrorCluster, group: str, committed: dict[TP, int], window: int,
                  target_topic: Callable[[str], str] = lambda name: name,
                  lower: dict[TP, int] | None = None) -> dict[TP, PartitionFacts]:
    """What :func:`migrate.core.mirror.translation.translate` needs for each of ``group``'s partitions
    (``committed``: source (topic, partition) -> its committed offset), read with one consumer per step
    for all of them: the source's next records, the target's offsets for their timestamps, then the
    target's records from there (each partition stops at the first record with the same content).
    ``target_topic``: the target's name of a source topic (the engine's replication policy).

    ``lower``: a safe lower bound per partition known otherwise (an exactly-once copy's MirrorMaker offset-sync:
    each record is copied once, so its copy is at or after the copy of an earlier one). It raises the timestamp
    bound, which a transactional copy makes loose: its commit markers carry the time of the copy, later than
    the records', and offsets_for_times stops at the first marker after them (seen: offset 50 for a record at
    8,207, so the read grew with the data)."""
    tps = sorted(committed)
    counts = src.topic_partitions()
    src_ends = src.end_offsets({t: counts[t] for t, _ in tps if t in counts})
    on_target = tgt.topic_partitions()
    names = {t: target_topic(t) for t, _ in tps}
    _refuse_missing(group, set(names.values()), on_target)
    on = {tp: (names[tp[0]], tp[1]) for tp in tps}  # the target's (topic, partition) of a source's
    tgt_ends = tgt.end_offsets({names[t]: on_target[names[t]] for t, _ in tps})
    kept = {t: kind != "LogAppendTime" for t, kind in reads.timestamp_types(tgt, sorted(set(names.values()))).items()}
    firsts = reads.read_records(src, {tp: (max(committed[tp], src_ends[tp][0]), src_ends[tp][1]) for tp in tps}, 1)
    nexts = {tp: recs[0] if recs else None for tp, recs in firsts.items()}
    bounds = reads.offsets_for_times(tgt, {on[tp]: rec.timestamp for tp, rec in nexts.items()
                                           if rec is not None and kept.get(on[tp][0], True)})
    starts: dict[TP, int] = {}
    for tp in tps:
        keeps = kept.get(on[tp][0], True)
        start_at = bounds.get(on[tp]) if keeps else tgt_ends[on[tp]][0]
        if start_at is not None and (lower or {}).get(tp) is not None:
            start_at = max(start_at, min(lower[tp], tgt_ends[on[tp]][1]))  # type: ignore[index]
            if keeps:
                bounds[on[tp]] = start_at
        if nexts[tp] is not None and start_at is not None:
            starts[tp] = start_at
    windows = reads.read_records(tgt, {on[tp]: (s, tgt_ends[on[tp]][1]) for tp, s in starts.items()}, window,
                                 until={on[tp]: nexts[tp].digest for tp in starts})
    out = {}
    for tp in tps:
        t_start, t_end = tgt_ends[on[tp]]
        keeps = kept.get(on[tp][0], True)
        out[tp] = PartitionFacts(committed[tp], src_ends[tp][1], nexts[tp], t_start, t_end,
                                 bounds.get(on[tp]) if keeps else None,
                                 tuple(windows.get(on[tp], ())) if tp in starts else (), keeps)
    return out


def _refuse_missing(group: str, names: set[str], on_target: dict[str, int]) -> None:
    missing = sorted(names - set(on_target))
    if missing:
        raise BadInput(f"group {group} reads {', '.join(missing)}, missing on the target: run kmigrate mirror create-topics")


def mirror_group(state_dir: Path) -> str:
    """The consumer group MirrorMaker 1 copies in, as its start recorded it."""
    return (MirrorMakerProcess(state_dir).read_state() or {}).get("group") or DEFAULT_GROUP


def cutover_translations(src: MirrorCluster, tgt: MirrorCluster, state_dir: Path, groups: tuple[str, ...],
                         committed: dict[str, dict[tuple[str, int], int]], window: int = 10000) -> list[Translation]:
    """Cut-over gate d for MirrorMaker 1: kmigrate's own translation of each group's committed offsets,
    as the cut-over's :class:`migrate.core.mirror.cutover.Translation` (duplicates counted by the cut-over)."""
    out = []
    for group in groups:
        for p in _translate_group(src, tgt, group, committed[group], window, mirror_group(state_dir)):
            out.append(Translation(group, p.topic, p.partition, p.source_committed, p.offset,
                                   "end" if p.how == "at the end" else f"kmigrate ({p.how})",
                                   reason="" if p.confirmed else "not confirmed by content: an earlier safe offset"))
    return out
