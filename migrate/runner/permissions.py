"""Check the Kafka rights a command needs before it changes anything (see :mod:`migrate.core.permissions`).

``require(admin, settings, needs)`` reads what the brokers grant and raises :class:`BadInput`
(exit 2) naming the first missing right, the principal and the ``kafka-acls.sh`` command that
grants it. How each right is read:

- on the cluster, an existing topic, a group: KIP-430 authorized operations;
- CREATE of a topic not created yet: a validate-only CreateTopics; its DESCRIBE: a metadata look;
- READ and WRITE of a topic not created yet: the ACLs that name it (DescribeAcls, MATCH), decided as
  the authorizer does, when the principal is known (SASL) and those ACLs explain exactly what the
  brokers granted on the cluster (else a super user, a custom authorizer ... decides: unchecked).
  Whatever stays unchecked is checked again by :func:`require_after_create`, right after kmigrate
  creates the topic and before it changes anything else.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Callable, Iterable

from migrate.adapters.kafka import acls as kafka_acls
from migrate.core.clientconfig import ClientSettings
from migrate.core.permissions import (
    Need, Resource, acl_decision, acls_explain, missing, missing_line, principal_of,
)
from migrate.errors import BadInput

log = logging.getLogger("kmigrate.permissions")


def refused(admin, settings: ClientSettings, needs: Iterable[Need], timeout_s: float = 15.0) -> list[Need]:
    """The needs the brokers refuse, in the order given (the unchecked ones are not in it)."""
    needs = list(needs)
    present = [n for n in needs if n.exists]
    later = [n for n in needs if not n.exists]
    granted = kafka_acls.authorized_operations(
        admin, topics=[n.resource.name for n in present if n.resource.kind == "topic"],
        groups=[n.resource.name for n in present if n.resource.kind == "group"], timeout_s=timeout_s)
    out = missing(present, granted)
    decided = _decide_not_created(admin, settings, later, granted.get(Resource.cluster()), timeout_s)
    out += [n for n in later if decided.get(n) is False]
    unchecked = [n for n in present if granted.get(n.resource) is None] + [n for n in later if decided.get(n) is None]
    for n in unchecked:
        log.info("cannot tell before it is needed whether %s on %s is granted", n.operation, n.resource.describe())
    return sorted(set(out), key=needs.index)


def _decide_not_created(admin, settings: ClientSettings, needs: list[Need], cluster_ops,
                        timeout_s: float) -> dict[Need, bool | None]:
    """Each need on a topic not created yet: granted (True), refused (False) or unchecked (None)."""
    out: dict[Need, bool | None] = {}
    for n in needs:
        if n.resource.kind == "topic" and n.operation == "CREATE":
            out[n] = kafka_acls.may_create_topic(admin, n.resource.name, timeout_s)
        elif n.resource.kind == "topic" and n.operation == "DESCRIBE":
            out[n] = kafka_acls.may_describe_missing_topic(admin, n.resource.name, timeout_s)
    rest = [n for n in needs if out.get(n) is None and n.operation != "CREATE"]
    principal = principal_of(settings.settings)
    if not rest or principal is None:
        return out
    acls = kafka_acls.acls_naming(admin, [Resource.cluster()] + [n.resource for n in rest], timeout_s)
    if acls is None or not acls_explain(acls, principal, Resource.cluster(), cluster_ops):
        return out
    for n in rest:
        out[n] = acl_decision(acls, principal, n.resource, n.operation)
    return out


def require(admin, settings: ClientSettings, needs: Iterable[Need], *, timeout_s: float = 15.0,
            warn: Callable[[str], None] | None = None) -> None:
    """BadInput naming the first right the brokers refuse (``warn``: report each instead, for a dry run)."""
    refusals = refused(admin, settings, needs, timeout_s)
    if not refusals:
        return
    principal = principal_of(settings.settings)
    if warn is not None:
        for n in refusals:
            warn(missing_line(n, principal, settings.bootstrap_servers))
        return
    raise BadInput(missing_line(refusals[0], principal, settings.bootstrap_servers, more=len(refusals) - 1))


def require_after_create(admin, settings: ClientSettings, needs: Iterable[Need], timeout_s: float = 15.0) -> None:
    """:func:`require` for the needs of topics just created (now they exist, KIP-430 answers for them)."""
    require(admin, settings, [replace(n, exists=True) for n in needs if not n.exists and n.operation != "CREATE"],
            timeout_s=timeout_s)
