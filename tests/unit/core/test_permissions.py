"""The permission table (which command needs which rights), the decisions over granted rights and ACLs,
and the one line a missing right gives."""

from __future__ import annotations

import pytest

from migrate.core.permissions import (
    Acl, Need, Resource, acl_decision, acls_explain, allowed, bookkeeping_needs, canary_needs, cancel_needs,
    cancel_read_needs, create_topic_needs,
    grant_command, missing, missing_line, partitions_needs, principal_of, refusal_line, verify_needs,
)

C = Resource.cluster()


def _ops(needs, resource):
    return {n.operation for n in needs if n.resource == resource}


def test_partitions_needs_every_right_its_calls_use():
    needs = partitions_needs(["orders"], "__kmigrate_migration", bookkeeping_exists=False)
    assert _ops(needs, C) == {"DESCRIBE", "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
    assert _ops(needs, Resource.topic("orders")) == {"DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
    book = [n for n in needs if n.resource == Resource.topic("__kmigrate_migration")]
    assert {n.operation for n in book} == {"CREATE", "DESCRIBE", "READ", "WRITE"}
    assert all(not n.exists for n in book), "a bookkeeping topic not created yet cannot be asked about by KIP-430"


def test_an_existing_bookkeeping_topic_needs_no_create():
    needs = bookkeeping_needs("bk", exists=True)
    assert {n.operation for n in needs} == {"DESCRIBE", "READ", "WRITE"} and all(n.exists for n in needs)


def test_cancel_needs_what_it_reads_first_then_what_it_changes():
    first = cancel_read_needs("bk", exists=False)
    assert [(n.resource, n.operation, n.exists) for n in first] == [
        (C, "DESCRIBE", True), (Resource.topic("bk"), "DESCRIBE", False)]  # a hidden topic looks absent: asked
    needs = cancel_needs(["orders", "orders"], "bk")
    assert _ops(needs, C) == {"DESCRIBE", "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
    assert _ops(needs, Resource.topic("bk")) == {"DESCRIBE", "READ", "WRITE"}  # no CREATE: cancel never creates it
    assert _ops(needs, Resource.topic("orders")) == {"DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
    assert len(needs) == len(set(needs))


def test_other_commands():
    assert {n.operation for n in create_topic_needs("t")} == {"CREATE", "DESCRIBE"}
    assert {n.operation for n in canary_needs("c", topic_exists=True)} == {"DESCRIBE", "READ", "WRITE"}
    assert "CREATE" in {n.operation for n in canary_needs("c", topic_exists=False)}
    assert _ops(verify_needs(["a", "a"]), Resource.topic("a")) == {"DESCRIBE", "READ", "DESCRIBE_CONFIGS"}
    assert len(verify_needs(["a", "a"])) == 3, "a topic named twice is checked once"


@pytest.mark.parametrize("op, granted, expected", [
    ("DESCRIBE", {"READ"}, True), ("DESCRIBE", {"WRITE"}, True), ("DESCRIBE", {"ALTER"}, True),
    ("DESCRIBE_CONFIGS", {"ALTER_CONFIGS"}, True), ("ALTER_CONFIGS", {"DESCRIBE_CONFIGS"}, False),
    ("ALTER", {"DESCRIBE"}, False), ("WRITE", {"ALL"}, True), ("READ", set(), False),
])
def test_implied_rights_as_kafka_grants_them(op, granted, expected):
    assert allowed(op, granted) is expected


def test_missing_keeps_order_and_leaves_unanswered_resources_unchecked():
    t = Resource.topic("t")
    needs = [Need(C, "ALTER", "a"), Need(t, "READ", "r"), Need(Resource.topic("u"), "READ", "r"), Need(C, "DESCRIBE", "d")]
    granted = {C: frozenset({"DESCRIBE"}), t: frozenset(), Resource.topic("u"): None}
    assert missing(needs, granted) == [needs[0], needs[1]]
    assert missing(needs, {}) == [], "nothing answered: nothing reported missing"


def test_principal_is_known_for_sasl_users_only():
    assert principal_of({"sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "kmigrate"}) == "User:kmigrate"
    assert principal_of({"sasl.mechanisms": "PLAIN", "sasl.username": "a"}) == "User:a"
    assert principal_of({"sasl.mechanisms": "GSSAPI", "sasl.username": "a"}) is None
    assert principal_of({"security.protocol": "SSL", "ssl.certificate.location": "c.pem"}) is None


def test_the_line_names_right_resource_principal_and_grant_command():
    need = Need(Resource.topic("__kmigrate_migration"), "WRITE", "write the bookkeeping records", exists=False)
    line = missing_line(need, "User:kmigrate", "b1:9092,b2:9092", more=2)
    assert "\n" not in line
    assert line.startswith("principal User:kmigrate lacks WRITE on topic __kmigrate_migration, needed to write")
    assert ("kafka-acls.sh --bootstrap-server b1:9092,b2:9092 --command-config admin.properties --add "
            "--allow-principal User:kmigrate --operation Write --topic __kmigrate_migration") in line
    assert "2 more" in line
    assert "--operation DescribeConfigs --cluster" in grant_command(Need(C, "DESCRIBE_CONFIGS", "x"), None, "b:1")
    assert "--group g" in grant_command(Need(Resource.group("g"), "READ", "x"), "User:u", "b:1")
    assert "kmigrate's principal" in missing_line(Need(C, "ALTER", "x"), None, "b:1")


def _acl(name, op, allow=True, pattern="literal", principal="User:k", host="*", kind="topic"):
    return Acl(kind, name, pattern, principal, host, op, allow)


def test_acl_decision_follows_the_authorizer():
    bk = Resource.topic("__kmigrate_migration")
    assert acl_decision([_acl("__kmigrate_migration", "READ")], "User:k", bk, "WRITE") is False
    assert acl_decision([_acl("__kmigrate_migration", "WRITE")], "User:k", bk, "WRITE") is True
    assert acl_decision([_acl("__kmigrate", "WRITE", pattern="prefixed")], "User:k", bk, "WRITE") is True
    assert acl_decision([_acl("*", "ALL")], "User:k", bk, "WRITE") is True
    assert acl_decision([_acl("*", "WRITE", principal="User:*")], "User:k", bk, "WRITE") is True
    assert acl_decision([_acl("*", "ALL"), _acl("__kmigrate_migration", "WRITE", allow=False)], "User:k", bk, "WRITE") is False
    assert acl_decision([_acl("other", "WRITE")], "User:k", bk, "WRITE") is None, "no ACL names it: the broker's default decides"
    assert acl_decision([_acl("*", "WRITE", host="10.0.0.1")], "User:k", bk, "WRITE") is None, "the host the broker sees is unknown"
    assert acl_decision([_acl("*", "WRITE", principal="User:other")], "User:k", bk, "WRITE") is False


def test_acls_are_trusted_only_when_they_explain_the_cluster_answer():
    acls = [_acl("kafka-cluster", op, kind="cluster") for op in ("DESCRIBE", "ALTER")]
    assert acls_explain(acls, "User:k", C, {"DESCRIBE", "ALTER"})
    # a super user: the brokers grant what no ACL does
    assert not acls_explain(acls, "User:k", C, {"DESCRIBE", "ALTER", "ALTER_CONFIGS", "CREATE"})
    assert not acls_explain([], "User:k", C, {"DESCRIBE"}), "no ACL names the cluster: nothing to trust"
    assert not acls_explain(acls, "User:k", C, None)


def test_a_refusal_met_while_running_is_one_line():
    line = refusal_line('KafkaException: KafkaError{code=CLUSTER_AUTHORIZATION_FAILED,val=31,str="Cluster\nauthorization failed"}')
    assert line is not None and "\n" not in line and "CLUSTER_AUTHORIZATION_FAILED" in line and "run the same command" in line
    assert refusal_line("KafkaError{code=_TIMED_OUT}") is None
