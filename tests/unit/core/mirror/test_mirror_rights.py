"""core/mirror/rights.py: the rights of the mirror commands and of the MirrorMaker they start, and the
line MirrorMaker 2's start gives for a right it was refused."""

from __future__ import annotations

from migrate.core.mirror.plan import authorization_refusals
from migrate.core.mirror.rights import create_topics_needs, mm1_needs, mm2_needs, refusal_message
from migrate.core.permissions import Resource


def _ops(needs, resource):
    return {n.operation for n in needs if n.resource == resource}


def _mirror(engine, internal=None, worker=None):
    """create-topics' needs, and with ``engine`` (its needs: mm2_needs or mm1_needs) those of the MirrorMaker started."""
    src, tgt = create_topics_needs(["orders", "refunds"], ["refunds"], "bk", False)
    if engine is mm2_needs:
        more = mm2_needs(["orders", "refunds"], ["refunds"], ["billing"], internal or {}, worker)
    elif engine is mm1_needs:
        more = mm1_needs(["orders", "refunds"], ["refunds"], worker)
    else:
        more = ([], [])
    return src + more[0], tgt + more[1]


def test_mirror_create_topics_needs_to_read_the_source_and_create_on_the_target():
    src, tgt = _mirror(None)
    assert _ops(src, Resource.topic("orders")) == {"DESCRIBE", "DESCRIBE_CONFIGS"}
    assert [(n.operation, n.exists) for n in tgt if n.resource == Resource.topic("refunds")] == [
        ("CREATE", False), ("DESCRIBE", False)]
    assert _ops(tgt, Resource.topic("orders")) == {"DESCRIBE_CONFIGS"}  # exists: its configs are compared
    assert _ops(tgt, Resource.topic("bk")) == {"CREATE", "DESCRIBE", "READ", "WRITE"}
    assert not any(n.resource.kind == "group" for n in src + tgt), "no MirrorMaker: no group is touched"


def test_mirror_start_adds_what_mirrormaker_2_does_with_the_same_settings():
    src, tgt = _mirror(mm2_needs, {"mm2-offsets.source.internal": True, "heartbeats": False}, "source-mm2")
    assert _ops(src, Resource.topic("refunds")) == {"DESCRIBE", "DESCRIBE_CONFIGS", "READ"}
    assert _ops(src, Resource.group("billing")) == {"DESCRIBE"}
    assert [(n.operation, n.exists) for n in tgt if n.resource == Resource.topic("refunds") and n.operation == "WRITE"] == [
        ("WRITE", False)], "WRITE on a topic created by the same run is asked of the ACLs or after the create"
    assert _ops(tgt, Resource.topic("mm2-offsets.source.internal")) == {"READ", "WRITE"}  # exists: no CREATE
    assert _ops(tgt, Resource.topic("heartbeats")) == {"CREATE", "READ", "WRITE"}
    assert _ops(tgt, Resource.group("billing")) == {"READ"} and _ops(tgt, Resource.group("source-mm2")) == {"READ"}


def test_mirror_start_with_mirrormaker_1_consumes_in_its_group_on_the_source():
    src, tgt = _mirror(mm1_needs, {"heartbeats": False}, "kmigrate-mirrormaker1")
    assert _ops(src, Resource.group("kmigrate-mirrormaker1")) == {"READ"}
    assert not _ops(src, Resource.group("billing")) and not _ops(tgt, Resource.topic("heartbeats"))
    assert _ops(tgt, Resource.topic("orders")) == {"DESCRIBE_CONFIGS", "WRITE"}


def test_refusals_in_mirrormakers_log_become_one_line_with_the_grant():
    log = ("[t] ERROR Unable to claim write privileges for config topic\n"
           "Caused by: org.apache.kafka.common.errors.TransactionalIdAuthorizationException: Transactional Id ...\n"
           "Caused by: org.apache.kafka.common.errors.TransactionalIdAuthorizationException: again\n"
           "Caused by: org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized\n")
    assert authorization_refusals(log) == ["TransactionalIdAuthorizationException", "TopicAuthorizationException"]
    assert authorization_refusals("[t] INFO Finished starting connectors and tasks\n") == []
    line = refusal_message(authorization_refusals(log), "/s/mm2.log", "User:k", "b:9092")
    assert "\n" not in line and "User:k" in line and "--transactional-id source-mm2 --resource-pattern-type prefixed" in line
    assert "--transactional-id connect-cluster-source-mm2" in line and line.endswith("kmigrate mirror start again")
    other = refusal_message(["TopicAuthorizationException"], "/s/mm2.log", None, "b:9092")
    assert "/s/mm2.log names the resource" in other and "transactional" not in other
