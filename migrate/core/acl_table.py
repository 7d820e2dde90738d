"""The README's "ACLs each command needs" table, assembled from the rights each command checks: those
of :mod:`migrate.core.permissions` and the mirror's (:mod:`migrate.core.mirror.rights`). The README holds
its text word for word (``tests/unit/test_readme_order.py``)."""

from __future__ import annotations

from migrate.core.mirror.rights import readme_rows
from migrate.core.permissions import (cancel_needs, canary_needs, create_topic_needs, partitions_needs, status_needs,
                                      verify_needs)

_EXAMPLE_TOPIC = "<each topic moved>"


def readme_section() -> str:
    """The README's "ACLs each command needs" section, made from the tables the commands check (one source)."""
    rows = [
        ("kmigrate partitions", partitions_needs([_EXAMPLE_TOPIC], "<bookkeeping topic>", False)),
        ("kmigrate partitions --throttle auto", [n for n in partitions_needs(
            [_EXAMPLE_TOPIC], "<bookkeeping topic>", False, "kmigrate-autothrottle-canary", False)
            if n not in partitions_needs([_EXAMPLE_TOPIC], "<bookkeeping topic>", False)]),
        ("kmigrate partitions --cancel", cancel_needs(["<each topic kmigrate throttled>"], "<bookkeeping topic>")),
        ("kmigrate status", status_needs("<bookkeeping topic>")),
        ("kmigrate topics create", create_topic_needs("<new topic>")),
        ("kmigrate canary", canary_needs("<canary topic>", False)),
        ("kmigrate verify snapshot / compare / clusters", verify_needs(["<each topic verified>"])),
    ]
    rows += readme_rows()
    lines = ["## ACLs each command needs", "",
             "Before it changes anything, each command asks the brokers which operations its principal may "
             "perform (KIP-430) and, for a topic it is about to create, sends a validate-only CreateTopics. "
             "A missing right is one line naming the operation, the resource and the principal, with the "
             "`kafka-acls.sh` command that grants it, exit 2, nothing changed. READ and WRITE on a topic that "
             "does not exist yet cannot be asked of the brokers: kmigrate reads them from the ACLs that name the "
             "topic when it may list ACLs (cluster DESCRIBE, which `partitions` has) and its principal is a SASL "
             "user; otherwise it checks them right after creating the topic, before anything else changes (the "
             "canary: before its first record). CREATE on a topic is granted by cluster CREATE or by CREATE on "
             "the topic (literal or `--resource-pattern-type prefixed`). kmigrate's own consumers commit no offsets: "
             "only the mirror commands need rights on groups. `mirror start` also checks the rights of the "
             "MirrorMaker it starts with the same client settings, except one the brokers cannot be asked "
             "about in advance: MirrorMaker 2's exactly-once needs WRITE and DESCRIBE on the target's transactional "
             "ids prefixed `source-mm2` (its tasks: `kafka-acls.sh ... --transactional-id source-mm2 "
             "--resource-pattern-type prefixed`) and `connect-cluster-source-mm2` (its workers' leader). `start` "
             "waits until MirrorMaker 2's workers have started and, when its log shows a right refused (this one "
             "or another), stops it again and says how to grant it (exit 1). Tested on Kafka 3.9, where WRITE on a topic lets the idempotent writers "
             "(bookkeeping, canary) get their producer id; older brokers may also want IDEMPOTENT_WRITE on the "
             "cluster.", "",
             "| command | operation | resource | why |", "|---|---|---|---|"]
    for command, needs in rows:
        for n in needs:
            where = "cluster" if n.resource.kind == "cluster" else f"{n.resource.kind} `{n.resource.name}`"
            lines.append(f"| {command} | {n.operation} | {where} | {n.why} |")
    return "\n".join(lines) + "\n"
