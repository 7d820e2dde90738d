"""Client settings no client can use (an unknown security protocol or SASL mechanism, a file that is not
there) and the connection errors no retry cures (refused credentials, an unsupported mechanism, an
untrusted certificate): one line naming the setting, exit 2."""

from __future__ import annotations

import pytest

from migrate.core.clientconfig import authentication_failure, client_settings
from migrate.errors import BadInput
from migrate.files import client_settings as read_client_settings


@pytest.mark.parametrize("props, named", [
    ({"security.protocol": "SASL_SLL"}, "security.protocol='SASL_SLL'"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-1"}, "sasl.mechanism='SCRAM-SHA-1'"),
])
def test_unknown_choices_are_refused_naming_the_setting(props, named):
    with pytest.raises(BadInput) as err:
        client_settings("b:9092", props)
    assert named in err.value.message and "use one of" in err.value.message and "\n" not in err.value.message


def test_known_choices_in_any_case_pass():
    s = client_settings("b:9092", {"security.protocol": "sasl_ssl", "sasl.mechanism": "scram-sha-512",
                                   "sasl.jaas.config": 'x.ScramLoginModule required username="u" password="p";'})
    assert s.settings["security.protocol"] == "sasl_ssl"


def test_a_pem_file_that_is_not_there_is_named(tmp_path):
    cfg = tmp_path / "client.properties"
    cfg.write_text(f"security.protocol=SSL\nssl.ca.location={tmp_path}/missing-ca.pem\n")
    with pytest.raises(BadInput) as err:
        read_client_settings("b:9092", cfg)
    assert err.value.message == f"--command-config {cfg}: ssl.ca.location {tmp_path}/missing-ca.pem: no such file"


@pytest.mark.parametrize("code, text, expect", [
    ("_AUTHENTICATION", "sasl_ssl://h:9092/bootstrap: SASL authentication error: Authentication failed during "
     "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 (after 332ms in state AUTH_REQ)",
     "refused kmigrate's authentication: SASL authentication error: Authentication failed during authentication due "
     "to invalid credentials with SASL mechanism SCRAM-SHA-512: check the username and password"),
    ("_AUTHENTICATION", "sasl_ssl://h:9092/bootstrap: SASL SCRAM-SHA-256 mechanism handshake failed: Broker: "
     "Unsupported SASL mechanism: broker's supported mechanisms: SCRAM-SHA-512 (after 311ms in state AUTH_HANDSHAKE)",
     "supported mechanisms: SCRAM-SHA-512: set sasl.mechanism"),
    ("_SSL", "sasl_ssl://h:9092/bootstrap: SSL handshake failed: error:0A000086:SSL routines::certificate verify "
     "failed (after 10ms in state SSL_HANDSHAKE)", "the TLS handshake with Kafka at h:9092 failed: SSL handshake failed"),
])
def test_connection_errors_no_retry_cures(code, text, expect):
    line = authentication_failure(code, text, "h:9092")
    assert line is not None and expect in line and "(after" not in line and "bootstrap:" not in line


@pytest.mark.parametrize("code, text", [("_TRANSPORT", "h:9092/bootstrap: Connect to ipv4#h:9092 failed: Connection refused"),
                                        ("_ALL_BROKERS_DOWN", "1/1 brokers are down"),
                                        ("_SSL", "h:9092/bootstrap: SSL connection closed by peer")])
def test_errors_worth_waiting_for_are_not_refusals(code, text):
    assert authentication_failure(code, text, "h:9092") is None
