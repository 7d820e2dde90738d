"""Authorisation (issue 18): what the brokers grant kmigrate's principal, read before any change (see
``migrate.core.permissions``): KIP-430 authorised operations, probes for a topic not created yet, the ACLs
naming a resource, and whether an error is the authorizer refusing."""

from __future__ import annotations

import logging
from typing import Iterable

from confluent_kafka.admin import AdminClient

log = logging.getLogger("kmigrate.kafka")

_AUTH_CODES = ("TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED")


def _ops(operations) -> frozenset[str] | None:
    """KIP-430 operations as names; None when the broker did not say (no authorizer answer, old broker)."""
    if operations is None:
        return None
    return frozenset(op.name for op in operations)


def _error_code_name(exc: BaseException) -> str:
    err = exc.args[0] if getattr(exc, "args", None) else None
    name = getattr(err, "name", None)
    return name() if callable(name) else str(exc)


def refused_by_authorizer(exc: BaseException) -> bool:
    """True when ``exc`` is the brokers refusing a right (topic, cluster or group authorization failed)."""
    return _error_code_name(exc) in _AUTH_CODES


def authorized_operations(admin: AdminClient, topics: Iterable[str] = (), groups: Iterable[str] = (),
                          timeout_s: float = 15.0) -> dict:
    """Resource -> the operation names the broker says the principal may perform (KIP-430), for the
    cluster, each existing topic and each group; None where the broker did not say. A topic the
    principal may not even describe maps to an empty set; a topic that does not exist is left out.
    The cluster's operations come only to a principal with DESCRIBE on it: no answer for the cluster
    while topics or groups are answered for means none is granted."""
    from confluent_kafka import TopicCollection

    from migrate.core.permissions import Resource

    out: dict = {}
    try:
        desc = admin.describe_cluster(include_authorized_operations=True, request_timeout=timeout_s).result(timeout=timeout_s)
        out[Resource.cluster()] = _ops(desc.authorized_operations)
    except Exception as exc:
        if refused_by_authorizer(exc):
            out[Resource.cluster()] = frozenset()
        else:
            raise
    names = sorted(set(topics))
    if names:
        futures = admin.describe_topics(TopicCollection(names), include_authorized_operations=True,
                                        request_timeout=timeout_s)
        for name, fut in futures.items():
            try:
                out[Resource.topic(name)] = _ops(fut.result(timeout=timeout_s).authorized_operations)
            except Exception as exc:
                code = _error_code_name(exc)
                if code in _AUTH_CODES:
                    out[Resource.topic(name)] = frozenset()
                elif code not in ("UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC_OR_PARTITION"):
                    raise
    group_ids = sorted(set(groups))
    if group_ids:
        futures = admin.describe_consumer_groups(group_ids, include_authorized_operations=True,
                                                 request_timeout=timeout_s)
        for gid, fut in futures.items():
            try:
                out[Resource.group(gid)] = _ops(fut.result(timeout=timeout_s).authorized_operations)
            except Exception as exc:
                if refused_by_authorizer(exc):
                    out[Resource.group(gid)] = frozenset()
                elif "is not a consumer group" not in str(exc):
                    raise
                # a group of another protocol (Kafka Connect's workers) is not described by librdkafka:
                # left unchecked
    if out.get(Resource.cluster(), frozenset()) is None and any(v is not None for v in out.values()):
        # brokers (2.4+) answer KIP-430; for the cluster only to a principal that may describe it
        out[Resource.cluster()] = frozenset()
    return out


def may_describe_missing_topic(admin: AdminClient, topic: str, timeout_s: float = 15.0) -> bool | None:
    """Whether the principal may describe a topic that does not exist yet: a metadata request naming it
    (auto-creation off) answers TOPIC_AUTHORIZATION_FAILED when not. None: the topic exists, or no answer."""
    from confluent_kafka import TopicCollection

    fut = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout_s)[topic]
    try:
        fut.result(timeout=timeout_s)
    except Exception as exc:
        code = _error_code_name(exc)
        if code in _AUTH_CODES:
            return False
        if code in ("UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC_OR_PARTITION"):
            return True
    return None


def may_create_topic(admin: AdminClient, topic: str, timeout_s: float = 15.0) -> bool | None:
    """Whether the principal may create ``topic``: a validate-only CreateTopics, authorised by the broker
    as a real one (cluster CREATE, or topic CREATE by a literal or prefixed ACL) and then forgotten.
    None when the answer is about something else (the topic exists, a policy): not an authorisation."""
    from confluent_kafka.admin import NewTopic

    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)], validate_only=True,
                                  request_timeout=timeout_s)
    try:
        futures[topic].result(timeout=timeout_s)
    except Exception as exc:
        return False if refused_by_authorizer(exc) else None
    return True


def acls_naming(admin: AdminClient, resources: Iterable, timeout_s: float = 15.0) -> list | None:
    """Every ACL binding that applies to each resource (a :class:`migrate.core.permissions.Resource`):
    literal, wildcard and prefixed, any principal (DescribeAcls with the MATCH pattern type). None when
    the principal may not describe ACLs (cluster DESCRIBE) or the brokers have no authorizer."""
    from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType,
                                       ResourceType)

    from migrate.core.permissions import Acl

    types = {"cluster": ResourceType.BROKER, "topic": ResourceType.TOPIC, "group": ResourceType.GROUP}
    kinds = {v: k for k, v in types.items()}
    out: set = set()
    for r in sorted(set(resources)):
        f = AclBindingFilter(types[r.kind], r.name, ResourcePatternType.MATCH, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
        try:
            bindings = admin.describe_acls(f, request_timeout=timeout_s).result(timeout=timeout_s)
        except Exception as exc:  # CLUSTER_AUTHORIZATION_FAILED, SECURITY_DISABLED (no authorizer)
            log.debug("cannot list the ACLs of %s: %s", r, exc)
            return None
        for b in bindings:
            out.add(Acl(kinds.get(b.restype, str(b.restype)), b.name, b.resource_pattern_type.name.lower(),
                        b.principal, b.host, b.operation.name, b.permission_type == AclPermissionType.ALLOW))
    return sorted(out, key=repr)
