"""The Kafka ACLs each command needs, and the decision whether what the cluster grants is enough.

Pure: the runner reads what the broker grants (KIP-430 authorized operations of the cluster, of each
topic and group; a validate-only CreateTopics for a topic that does not exist yet) and hands it here.
Each missing right becomes one line naming the operation, the resource and the principal, with the
``kafka-acls.sh`` command that grants it.

What can be checked before any change, and how:

- an existing topic, the cluster, a consumer group (existing or not): the operations the broker says
  the principal may perform on it (KIP-430); a broker that does not say (no authorizer answer,
  a Kafka older than 2.3) leaves the right unchecked;
- CREATE of a topic that does not exist yet (the bookkeeping topic, ``topics create``, the canary
  topic): a validate-only CreateTopics request, which the broker authorises exactly as a real one
  (cluster CREATE, or CREATE on the topic by a literal or prefixed ACL) and then forgets;
- DESCRIBE of a topic that does not exist yet: a metadata request naming it answers
  TOPIC_AUTHORIZATION_FAILED when it is not granted;
- READ and WRITE of a topic that does not exist yet cannot be asked of the broker (KIP-430 answers
  for existing resources only): kmigrate checks them right after creating the topic, before it
  changes anything else.

>>> need = Need(Resource.topic("orders"), "ALTER_CONFIGS", "set the replication throttle lists")
>>> missing([need], {Resource.topic("orders"): frozenset({"DESCRIBE"})}) == [need]
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

CLUSTER_NAME = "kafka-cluster"

# Kafka's operation names (AclOperation) and the spelling kafka-acls.sh takes.
_ACLS_SH = {
    "READ": "Read", "WRITE": "Write", "CREATE": "Create", "DELETE": "Delete", "ALTER": "Alter",
    "DESCRIBE": "Describe", "CLUSTER_ACTION": "ClusterAction", "DESCRIBE_CONFIGS": "DescribeConfigs",
    "ALTER_CONFIGS": "AlterConfigs", "IDEMPOTENT_WRITE": "IdempotentWrite", "ALL": "All",
}
# Rights that imply another (as Kafka's authorizer grants them).
_IMPLIES = {
    "DESCRIBE": ("READ", "WRITE", "DELETE", "ALTER", "ALL"),
    "DESCRIBE_CONFIGS": ("ALTER_CONFIGS", "ALL"),
}


@dataclass(frozen=True, order=True)
class Resource:
    """A Kafka resource an ACL names: ``kind`` is cluster, topic or group."""

    kind: str
    name: str

    @staticmethod
    def cluster() -> "Resource":
        return Resource("cluster", CLUSTER_NAME)

    @staticmethod
    def topic(name: str) -> "Resource":
        return Resource("topic", name)

    @staticmethod
    def group(name: str) -> "Resource":
        return Resource("group", name)

    @staticmethod
    def transactional_id(name: str) -> "Resource":
        return Resource("transactional-id", name)

    def describe(self) -> str:
        return "the cluster" if self.kind == "cluster" else f"{self.kind} {self.name}"

    def acls_option(self) -> str:
        """The resource as ``kafka-acls.sh`` takes it."""
        return "--cluster" if self.kind == "cluster" else f"--{self.kind} {self.name}"


@dataclass(frozen=True, order=True)
class Need:
    """One operation a command performs on one resource, and why (``to ...``)."""

    resource: Resource
    operation: str
    why: str
    exists: bool = True  # False: the resource does not exist yet (a topic kmigrate creates)


def allowed(operation: str, granted: Iterable[str]) -> bool:
    """True when ``granted`` (operation names) includes ``operation`` or a right that implies it.

    >>> allowed("DESCRIBE", {"READ"}), allowed("ALTER", {"DESCRIBE"}), allowed("WRITE", {"ALL"})
    (True, False, True)
    """
    g = {op.upper() for op in granted}
    return operation in g or "ALL" in g or any(op in g for op in _IMPLIES.get(operation, ()))


def missing(needs: Iterable[Need], granted: Mapping[Resource, frozenset[str] | None]) -> list[Need]:
    """The needs not granted, in the order given. A resource absent from ``granted`` or mapped to
    ``None`` was not answered for (unchecked): it is not reported missing."""
    out: list[Need] = []
    for need in needs:
        ops = granted.get(need.resource)
        if ops is not None and not allowed(need.operation, ops) and need not in out:
            out.append(need)
    return out


@dataclass(frozen=True)
class Acl:
    """One ACL binding as the brokers list it (DescribeAcls): ``pattern`` is literal or prefixed."""

    kind: str
    name: str
    pattern: str
    principal: str
    host: str
    operation: str
    allow: bool


def acl_decision(acls: Iterable[Acl], principal: str, resource: Resource, operation: str) -> bool | None:
    """Whether ``principal`` may perform ``operation`` on ``resource`` by these ACLs, as Kafka's
    AclAuthorizer decides (a matching DENY wins; ALL and the implying rights grant): None when the
    ACLs cannot tell (none names the resource: ``allow.everyone.if.no.acl.found`` decides; only
    host-specific ones match: the host the broker sees is not known here).

    >>> acls = [Acl("topic", "kmigrate-", "prefixed", "User:k", "*", "WRITE", True)]
    >>> acl_decision(acls, "User:k", Resource.topic("kmigrate-book"), "DESCRIBE")
    True
    >>> acl_decision(acls, "User:k", Resource.topic("kmigrate-book"), "READ")
    False
    """
    def names(a: Acl) -> bool:
        if a.kind != resource.kind:
            return False
        if a.pattern == "prefixed":
            return resource.name.startswith(a.name)
        return a.name in (resource.name, "*")

    on_resource = [a for a in acls if names(a)]
    if not on_resource:
        return None
    mine = [a for a in on_resource if a.principal in (principal, "User:*")]
    denying = [a for a in mine if not a.allow and a.operation in (operation, "ALL")]
    if any(a.host == "*" for a in denying):
        return False
    granting = [a for a in mine if a.allow and allowed(operation, {a.operation})]
    if denying or (granting and not any(a.host == "*" for a in granting)):
        return None
    return bool(granting)


CLUSTER_OPERATIONS = ("ALTER", "ALTER_CONFIGS", "CLUSTER_ACTION", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS",
                      "IDEMPOTENT_WRITE")


def acls_explain(acls: Iterable[Acl], principal: str, resource: Resource, granted: Iterable[str] | None,
                 operations: Iterable[str] = CLUSTER_OPERATIONS) -> bool:
    """True when the ACLs decide every operation on ``resource`` as the brokers answered (``granted``,
    KIP-430), at least one of them by an ACL naming it. Otherwise something else decides (a super
    user, a custom authorizer or principal builder, ``allow.everyone.if.no.acl.found``) and the
    ACLs cannot be trusted for a resource the brokers cannot answer for.

    >>> acls = [Acl("cluster", "kafka-cluster", "literal", "User:k", "*", "DESCRIBE", True)]
    >>> acls_explain(acls, "User:k", Resource.cluster(), {"DESCRIBE"}), acls_explain(acls, "User:k", Resource.cluster(), {"DESCRIBE", "ALTER"})
    (True, False)
    """
    if granted is None:
        return False
    acls = list(acls)
    decisions = {op: acl_decision(acls, principal, resource, op) for op in operations}
    if all(d is None for d in decisions.values()):
        return False
    return all(d is None or d == allowed(op, granted) for op, d in decisions.items())


def principal_of(settings: Mapping[str, str]) -> str | None:
    """The principal the broker sees for these client settings (librdkafka names), when kmigrate can
    tell: ``User:<name>`` of a SASL PLAIN or SCRAM username. Certificates (mTLS: the subject, after the
    broker's ``ssl.principal.mapping.rules``) and Kerberos are the broker's to map: None."""
    mechanism = settings.get("sasl.mechanisms", "").upper()
    name = settings.get("sasl.username")
    if name and (mechanism in ("PLAIN", "") or mechanism.startswith("SCRAM")):
        return f"User:{name}"
    return None


def grant_command(need: Need, principal: str | None, bootstrap_servers: str, also: Iterable[str] = (),
                  prefixed: bool = False) -> str:
    """The ``kafka-acls.sh`` command that grants ``need`` (run with an administrator's client settings),
    and the operations ``also`` on the same resource; ``prefixed``: every resource whose name starts so.

    >>> grant_command(Need(Resource.cluster(), "ALTER", "x"), "User:kmigrate", "b:9092")
    'kafka-acls.sh --bootstrap-server b:9092 --command-config admin.properties --add --allow-principal User:kmigrate --operation Alter --cluster'
    """
    who = principal or "User:<kmigrate's principal>"
    operations = " ".join(f"--operation {_ACLS_SH.get(op, op)}" for op in (need.operation, *also))
    pattern = " --resource-pattern-type prefixed" if prefixed else ""
    return (f"kafka-acls.sh --bootstrap-server {bootstrap_servers} --command-config admin.properties --add "
            f"--allow-principal {who} {operations} {need.resource.acls_option()}{pattern}")


def missing_line(need: Need, principal: str | None, bootstrap_servers: str, more: int = 0) -> str:
    """One line: what is missing, for what, and the command that grants it (``more``: other rights missing too)."""
    who = f"principal {principal}" if principal else "kmigrate's principal"
    also = f" ({more} more right(s) missing: grant this one and run again to see the next)" if more else ""
    return (f"{who} lacks {need.operation} on {need.resource.describe()}, needed to {need.why}: grant it with "
            f"{grant_command(need, principal, bootstrap_servers)}{also}")


_REFUSALS = ("TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED",
             "TopicAuthorizationFailed", "ClusterAuthorizationFailed", "GroupAuthorizationFailed",
             "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "DELEGATION_TOKEN_AUTHORIZATION_FAILED")


def refusal_line(text: str) -> str | None:
    """The one line for an authorisation refusal met while running (a right revoked meanwhile), or
    None when ``text`` (an error's message) is no such refusal.

    >>> refusal_line("KafkaError{code=TOPIC_AUTHORIZATION_FAILED,val=29}")[:52]
    'the brokers refused a right kmigrate checked or need'
    """
    code = next((c for c in _REFUSALS if c in text), None)
    if code is None:
        return None
    return (f"the brokers refused a right kmigrate checked or needs ({code}): was it revoked while kmigrate ran? "
            f"Grant it again (the README lists the ACLs each command needs) and run the same command again "
            f"(it re-reads the cluster and carries on); details: {' '.join(text.split())[:300]}")


# ===================================================================== what each command needs

def partitions_needs(topics: Iterable[str], bookkeeping_topic: str, bookkeeping_exists: bool,
                     canary_topic: str | None = None, canary_exists: bool = False) -> list[Need]:
    """``kmigrate partitions``: read the cluster, throttle, reassign, elect leaders, keep its records;
    with ``--throttle auto`` (``canary_topic``), run its canary and delete its topic at the end."""
    c = Resource.cluster()
    out = [
        Need(c, "DESCRIBE", "list reassignments and replica sizes (ListPartitionReassignments, DescribeLogDirs)"),
        Need(c, "ALTER", "move partitions and elect preferred leaders (AlterPartitionReassignments, ElectLeaders)"),
        Need(c, "DESCRIBE_CONFIGS", "read the brokers' throttle rates"),
        Need(c, "ALTER_CONFIGS", "set and remove the brokers' replication throttle rates"),
    ]
    for t in sorted(set(topics)):
        r = Resource.topic(t)
        out += [Need(r, "DESCRIBE", "read its partitions"),
                Need(r, "DESCRIBE_CONFIGS", "read its min.insync.replicas and throttle lists"),
                Need(r, "ALTER_CONFIGS", "set and remove its replication throttle lists")]
    out += bookkeeping_needs(bookkeeping_topic, bookkeeping_exists)
    if canary_topic is not None:
        out += canary_needs(canary_topic, canary_exists)
        out.append(Need(Resource.topic(canary_topic), "DELETE", "delete the auto throttle's canary topic at the end",
                        canary_exists))
    return out


def cancel_read_needs(bookkeeping_topic: str, exists: bool = True) -> list[Need]:
    """``kmigrate partitions --cancel`` (and its dry run): what it reads before deciding anything.
    ``exists=False``: before kmigrate knows whether the bookkeeping topic exists (a topic it may not
    describe looks absent: that is asked of the brokers, and READ is left for when it is found)."""
    c = Resource.cluster()
    r = Resource.topic(bookkeeping_topic)
    return [Need(c, "DESCRIBE", "list the reassignments in flight"),
            Need(r, "DESCRIBE", "find the bookkeeping topic", exists)] + (
        [Need(r, "READ", "read which moves and throttles kmigrate started")] if exists else [])


def cancel_needs(throttled_topics: Iterable[str], bookkeeping_topic: str) -> list[Need]:
    """``kmigrate partitions --cancel``: cancel kmigrate's moves, record it, remove the throttles it set
    (the brokers' rates and the throttle lists of ``throttled_topics``, as its records name them)."""
    c = Resource.cluster()
    out = cancel_read_needs(bookkeeping_topic) + [
        Need(c, "ALTER", "cancel the reassignments (AlterPartitionReassignments)"),
        Need(c, "DESCRIBE_CONFIGS", "read the brokers' throttle rates"),
        Need(c, "ALTER_CONFIGS", "remove the brokers' replication throttle rates kmigrate set"),
        Need(Resource.topic(bookkeeping_topic), "WRITE", "record the cancel and the throttles removed"),
    ]
    for t in sorted(set(throttled_topics)):
        r = Resource.topic(t)
        out += [Need(r, "DESCRIBE", "see the topic (the brokers tell what may be done to it only then)"),
                Need(r, "DESCRIBE_CONFIGS", "read its throttle lists"),
                Need(r, "ALTER_CONFIGS", "remove the throttle list entries kmigrate added")]
    return out


def bookkeeping_needs(topic: str, exists: bool) -> list[Need]:
    """The bookkeeping topic: created when missing, read from the beginning, appended to."""
    r = Resource.topic(topic)
    out = [] if exists else [Need(r, "CREATE", "create the bookkeeping topic", exists=False)]
    return out + [Need(r, "DESCRIBE", "find the bookkeeping topic", exists),
                  Need(r, "READ", "read the bookkeeping records", exists),
                  Need(r, "WRITE", "write the bookkeeping records", exists)]


def status_needs(bookkeeping_topic: str) -> list[Need]:
    """``kmigrate status``: reassignments, the brokers' throttle rates, the records (read only)."""
    c = Resource.cluster()
    return [Need(c, "DESCRIBE", "list reassignments"), Need(c, "DESCRIBE_CONFIGS", "read the brokers' throttle rates"),
            Need(Resource.topic(bookkeeping_topic), "READ", "read the bookkeeping records")]


def create_topic_needs(topic: str) -> list[Need]:
    """``kmigrate topics create``: create the topic, then see it in the metadata until it is led."""
    r = Resource.topic(topic)
    return [Need(r, "CREATE", "create the topic", exists=False),
            Need(r, "DESCRIBE", "wait until every partition of the new topic has a leader", exists=False)]


def canary_needs(topic: str, topic_exists: bool) -> list[Need]:
    """``kmigrate canary``: create its topic if missing, write and read it back."""
    r = Resource.topic(topic)
    out = [] if topic_exists else [Need(r, "CREATE", "create the canary topic", exists=False)]
    return out + [Need(r, "DESCRIBE", "find the canary topic's partitions", topic_exists),
                  Need(r, "WRITE", "write the canary records", topic_exists),
                  Need(r, "READ", "read the canary records back", topic_exists)]


def verify_needs(topics: Iterable[str]) -> list[Need]:
    """``kmigrate verify snapshot`` / ``compare`` / ``clusters``: read every record of each topic, and its configs."""
    out: list[Need] = []
    for t in sorted(set(topics)):
        r = Resource.topic(t)
        out += [Need(r, "DESCRIBE", "list its partitions and offsets"), Need(r, "READ", "read its records"),
                Need(r, "DESCRIBE_CONFIGS", "read its configs (cleanup.policy, retention)")]
    return out
