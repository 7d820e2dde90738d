"""The Kafka rights of ``kmigrate mirror``: what its commands and the MirrorMaker they start need on each
cluster (in the vocabulary of :mod:`migrate.core.permissions`), and the line MirrorMaker 2's start
gives for a right it was refused. Pure.

``create-topics`` reads both clusters, creates the missing topics on the target and records it
(:func:`create_topics_needs`). ``start`` adds what its engine does with the same client settings
(:func:`mm2_needs`, :func:`mm1_needs`); the cut-over reads both clusters and sets the groups' offsets
(:func:`cutover_needs`). :func:`readme_rows` gives them to the README's table (``core/acl_table.py``).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from migrate.core.ledger import MIRROR_TOPIC
from migrate.core.mirror.mm1 import DEFAULT_GROUP
from migrate.core.mirror.plan import INTERNAL_TOPICS, WORKER_GROUP
from migrate.core.permissions import Need, Resource, bookkeeping_needs, grant_command, verify_needs

Needs = tuple[list[Need], list[Need]]  # (on the source, on the target)


def create_topics_needs(topics: Iterable[str], to_create: Iterable[str], bookkeeping_topic: str,
                        bookkeeping_exists: bool) -> Needs:
    """``kmigrate mirror create-topics`` (and the first part of ``start``): read the topics and their
    configs on the source; on the target, create the missing ones (``to_create``), compare the configs
    of the others, and keep the bookkeeping."""
    topics, to_create = sorted(set(topics)), set(to_create)
    src: list[Need] = []
    tgt: list[Need] = []
    for t in topics:
        r = Resource.topic(t)
        src += [Need(r, "DESCRIBE", "read its partitions"), Need(r, "DESCRIBE_CONFIGS", "read its configs to copy them")]
        if t in to_create:
            tgt += [Need(r, "CREATE", "create it on the target", exists=False),
                    Need(r, "DESCRIBE", "wait until the new topic has leaders", exists=False)]
        else:
            tgt.append(Need(r, "DESCRIBE_CONFIGS", "compare its configs with the source's"))
    tgt += bookkeeping_needs(bookkeeping_topic, bookkeeping_exists)
    return src, tgt


def copy_needs(label: str, topics: Iterable[str], to_create: Iterable[str]) -> Needs:
    """What any MirrorMaker (``label``: its name in words) does: read the topics' records on the source and
    write the copies on the target (WRITE on a topic created by the same run cannot be asked of the
    brokers before it exists)."""
    topics, to_create = sorted(set(topics)), set(to_create)
    return ([Need(Resource.topic(t), "READ", f"let {label} read its records") for t in topics],
            [Need(Resource.topic(t), "WRITE", f"let {label} write the copies", t not in to_create) for t in topics])


def mm2_needs(topics: Iterable[str], to_create: Iterable[str], groups: Iterable[str],
              internal_topics: Mapping[str, bool], worker_group: str | None) -> Needs:
    """MirrorMaker 2 started with kmigrate's client settings: :func:`copy_needs`, then it reads the groups'
    offsets on the source and, on the target, sets their translated offsets, creates (``internal_topics``:
    name -> exists), reads and writes its internal topics and joins its workers' group. Transactional ids
    (its exactly-once) cannot be asked of the brokers before it runs: not checked here (see
    :func:`refusal_message`)."""
    src, tgt = copy_needs("MirrorMaker 2", topics, to_create)
    for g in sorted(set(groups)):
        src.append(Need(Resource.group(g), "DESCRIBE", "let MirrorMaker 2 read the group's committed offsets"))
        tgt.append(Need(Resource.group(g), "READ", "let MirrorMaker 2 set the group's translated offsets"))
    for name, exists in sorted(internal_topics.items()):
        r = Resource.topic(name)
        if not exists:
            tgt.append(Need(r, "CREATE", "let MirrorMaker 2 create its internal topic", exists=False))
        tgt += [Need(r, "READ", "let MirrorMaker 2 read its internal topic", exists),
                Need(r, "WRITE", "let MirrorMaker 2 write its internal topic", exists)]
    if worker_group:
        tgt.append(Need(Resource.group(worker_group), "READ", "let MirrorMaker 2's workers join their group"))
    return src, tgt


def mm1_needs(topics: Iterable[str], to_create: Iterable[str], consumer_group: str | None) -> Needs:
    """MirrorMaker 1 started with kmigrate's client settings: :func:`copy_needs`, consuming in its group
    (``consumer_group``) on the source."""
    src, tgt = copy_needs("MirrorMaker 1", topics, to_create)
    if consumer_group:
        src.append(Need(Resource.group(consumer_group), "READ", "let MirrorMaker 1 consume in its group"))
    return src, tgt


def cutover_needs(groups: Iterable[str], topics: Iterable[str], internal_topics: Iterable[str], bookkeeping_topic: str,
                  bookkeeping_exists: bool) -> Needs:
    """``kmigrate mirror cutover``: (source needs, target needs). Both sides: describe the groups and
    read every record of the mirrored topics (the duplicates are counted, the verify reads them);
    the target: MirrorMaker's internal topics, the groups' offsets written, the bookkeeping."""
    src: list[Need] = []
    tgt: list[Need] = []
    for g in sorted(set(groups)):
        src.append(Need(Resource.group(g), "DESCRIBE", "read the group's members and committed offsets"))
        tgt += [Need(Resource.group(g), "DESCRIBE", "check that the group is not active on the target"),
                Need(Resource.group(g), "READ", "commit the translated offsets (AlterConsumerGroupOffsets)")]
    src += verify_needs(topics)
    tgt += verify_needs(topics)
    for t in sorted(set(internal_topics)):
        tgt.append(Need(Resource.topic(t), "READ", "read MirrorMaker's positions, checkpoints and offset-syncs"))
    return src, tgt + bookkeeping_needs(bookkeeping_topic, bookkeeping_exists)


def proof_needs(topics: Iterable[str], bookkeeping_topic: str, bookkeeping_exists: bool) -> Needs:
    """``kmigrate mirror verify``: (source needs, target needs). Both sides: read the mirrored topics' records
    and configs; the target: the bookkeeping, where the proofs are kept."""
    return verify_needs(topics), verify_needs(topics) + bookkeeping_needs(bookkeeping_topic, bookkeeping_exists)


def refusal_message(refusals: list[str], log_path: str, principal: str | None, target_bootstrap: str) -> str:
    """One line: which rights MirrorMaker 2 was refused at start, how to grant them, what to run next."""
    who = principal or "User:<the target's principal>"

    def grant(transactional_id: str, prefixed: bool = False) -> str:
        need = Need(Resource.transactional_id(transactional_id), "WRITE", "write MirrorMaker 2's transactions")
        return grant_command(need, who, target_bootstrap, also=("DESCRIBE",), prefixed=prefixed)

    if "TransactionalIdAuthorizationException" in refusals:
        how = (f"its exactly-once needs WRITE and DESCRIBE on the target's transactional ids: "
               f"{grant(WORKER_GROUP, prefixed=True)}, and {grant(f'connect-cluster-{WORKER_GROUP}')}")
    else:
        how = f"{log_path} names the resource; the README lists the ACLs mirror start needs"
    return (f"MirrorMaker 2 was refused a right at start ({', '.join(refusals)}) and is stopped again; {how}; "
            "then run kmigrate mirror start again")


def readme_rows() -> list[tuple[str, list[Need]]]:
    """The mirror commands' rows of the README's table: (command, its needs), source then target."""
    mirrored, group = "<each topic mirrored>", "<each group mirrored>"
    base = create_topics_needs([mirrored], [mirrored], MIRROR_TOPIC, False)
    internal = dict.fromkeys(INTERNAL_TOPICS, False)
    rows: list[tuple[str, list[Need]]] = []
    for command, (on_source, on_target) in (
            ("kmigrate mirror create-topics", ([], [])),
            ("kmigrate mirror start", mm2_needs([mirrored], [mirrored], [group], internal, WORKER_GROUP)),
            ("kmigrate mirror start --engine mirrormaker1", mm1_needs([mirrored], [mirrored], DEFAULT_GROUP))):
        rows += [(f"{command} (source)", base[0] + on_source), (f"{command} (target)", base[1] + on_target)]
    cut_source, cut_target = cutover_needs([group], [mirrored], ("<MirrorMaker's internal topics>",),
                                           MIRROR_TOPIC, True)
    proof_source, proof_target = proof_needs([mirrored], MIRROR_TOPIC, True)
    return rows + [("kmigrate mirror verify (source)", proof_source), ("kmigrate mirror verify (target)", proof_target),
                   ("kmigrate mirror cutover (source)", cut_source), ("kmigrate mirror cutover (target)", cut_target)]
