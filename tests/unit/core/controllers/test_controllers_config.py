"""The configs of a controller move (migrate.core.controllers.config): the new controller's properties and format
command, the brokers' bootstrap list for the two rolls."""

from __future__ import annotations

import doctest

import pytest

from migrate.core.controllers import config as cc
from migrate.core.controllers.config import (
    BrokerRoll, ControllerInputs, broker_bootstrap_servers, format_command, new_controller_config, new_controller_notes,
    voter_endpoints,
)
from migrate.core.controllers.plan import NewController
from migrate.core.controllers.quorum import Endpoint, Quorum, Replica
from migrate.errors import BadInput

VOTERS = (Endpoint("CONTROLLER", "c1", 9093), Endpoint("CONTROLLER", "c2", 9093), Endpoint("CONTROLLER", "c3", 9093))


def test_doctests():
    assert doctest.testmod(cc).failed == 0


def test_new_controller_is_dynamic_and_names_the_current_voters():
    props = new_controller_config(ControllerInputs("CID", VOTERS), NewController(7, "c7", 9093))
    assert props["controller.quorum.bootstrap.servers"] == "c1:9093,c2:9093,c3:9093"
    assert "controller.quorum.voters" not in props
    assert props["process.roles"] == "controller" and props["node.id"] == "7"
    assert props["advertised.listeners"] == props["listeners"] == "CONTROLLER://c7:9093"


def test_security_is_copied_from_an_existing_controller_without_its_keystore():
    template = {"listener.name.controller.ssl.keystore.location": "/etc/c1.jks",
                "listener.name.controller.ssl.truststore.location": "/etc/trust.jks",
                "listener.name.controller.scram-sha-512.sasl.jaas.config": cc.SENSITIVE,
                "sasl.mechanism.controller.protocol": "SCRAM-SHA-512", "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users": "User:admin", "node.id": "1", "log.dirs": "/data/c1"}
    ins = ControllerInputs("CID", VOTERS, protocol="SASL_SSL", template=template)
    new = NewController(7, "c7", 9093)
    props = new_controller_config(ins, new)
    assert props["listener.security.protocol.map"] == "CONTROLLER:SASL_SSL"
    assert props["listener.name.controller.ssl.truststore.location"] == "/etc/trust.jks"
    assert props["sasl.mechanism.controller.protocol"] == "SCRAM-SHA-512" and props["super.users"] == "User:admin"
    assert "listener.name.controller.ssl.keystore.location" not in props
    assert props["node.id"] == "7" and props["log.dirs"] == cc.DEFAULT_METADATA_DIR
    notes = " ".join(new_controller_notes(ins, new))
    assert "a certificate for c7" in notes and "listener.name.controller.scram-sha-512.sasl.jaas.config" in notes


def test_format_command_has_no_initial_controllers():
    assert format_command("CID", "/etc/kafka/c7.properties")[-3:] == ["-c", "/etc/kafka/c7.properties",
                                                                      "--no-initial-controllers"]
    with pytest.raises(BadInput):
        format_command("")


def test_broker_bootstrap_for_the_two_rolls():
    new = (Endpoint("CONTROLLER", "c7", 9093), Endpoint("CONTROLLER", "c8", 9093))
    assert broker_bootstrap_servers(VOTERS, new, BrokerRoll.BEFORE) == "c1:9093,c2:9093,c3:9093,c7:9093,c8:9093"
    assert broker_bootstrap_servers(VOTERS, new, BrokerRoll.AFTER) == "c7:9093,c8:9093"
    assert cc.broker_bootstrap_problem("c1:9093", "c7:9093,c8:9093").startswith("it runs with")


def test_refusals():
    with pytest.raises(BadInput, match="no voter endpoint"):
        ControllerInputs("CID", ())
    with pytest.raises(BadInput, match="protocol"):
        ControllerInputs("CID", VOTERS, protocol="TLS")
    q = Quorum(1, 1, 0, (Replica(1),), (), {1: (Endpoint("INTERNAL", "c1", 9093),)})
    with pytest.raises(BadInput, match="shows no CONTROLLER endpoint .*INTERNAL"):
        voter_endpoints(q, "CONTROLLER")
