"""``kmigrate mirror translate``: consumer offsets translated by kmigrate, for a mirror that keeps none
(MirrorMaker 1), by timestamp and content (see ``core/mirror/translation.py``), and set on the target
once the group has no member there. The cut-over's gate d of MirrorMaker 1 uses the same translation.

Kill-safety: ``translate`` reads, then sets each group's offsets in one request per group.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from migrate.adapters.kafka import translation as reads
from migrate.adapters.kafka.mirror import MirrorCluster
from migrate.adapters.mirrormaker.mm2 import MirrorMakerProcess
from migrate.core.mirror.cutover import Translation
from migrate.core.mirror.mm1 import DEFAULT_GROUP
from migrate.core.mirror.translation import (PartitionFacts, PartitionTranslation, partitions_not_kept,
                                             translate as translate_partition)
from migrate.errors import BadInput
from migrate.runner.mirror.clusters import Side, Started


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
    missing = sorted({t for t, _ in tps if t not in on_target})
    if missing:
        raise BadInput(f"group {group} reads {', '.join(missing)}, missing on the target: run kmigrate mirror create-topics")
    tgt_ends = tgt.end_offsets({t: on_target[t] for t, _ in tps})
    mirror_at = src.committed_offsets(mirror_group, tps)
    scattered = partitions_not_kept({tp: (src_ends[tp][0], mirror_at[tp]) for tp in tps if tp in mirror_at}, tgt_ends)
    if scattered:
        raise BadInput(f"the target holds fewer records than MirrorMaker 1 copied in {', '.join(f'{t}[{p}]' for t, p in scattered)}: "
                       "records are not in the same partitions on both sides (MirrorMaker 1 places unkeyed records "
                       "anywhere), so offsets cannot be translated per partition; nothing set")
    kept = {t: kind != "LogAppendTime" for t, kind in reads.timestamp_types(tgt, sorted({t for t, _ in tps})).items()}
    out = []
    for topic, partition in tps:
        c = committed[(topic, partition)]
        s_start, s_end = src_ends[(topic, partition)]
        t_start, t_end = tgt_ends[(topic, partition)]
        nxt = reads.read_records(src, topic, partition, max(c, s_start), s_end, 1)
        nxt_rec = nxt[0] if nxt else None
        keeps = kept.get(topic, True)
        bound = None
        if nxt_rec is not None and keeps:
            bound = reads.offset_for_time(tgt, topic, partition, nxt_rec.timestamp)
        start_at = bound if keeps else t_start
        win = tuple(reads.read_records(tgt, topic, partition, start_at, t_end, window)) if (
            nxt_rec is not None and start_at is not None) else ()
        facts = PartitionFacts(c, s_end, nxt_rec, t_start, t_end, bound, win, keeps)
        out.append(translate_partition(group, topic, partition, facts))
    return out


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
