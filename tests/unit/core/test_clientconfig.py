"""core/clientconfig.py: Java client properties rendered for confluent-kafka and kafka-python."""

import pytest

from migrate.core.clientconfig import ClientSettings, client_settings, translate
from migrate.errors import BadInput

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="svc" password="p w\\"d";'


def test_java_names_become_librdkafka_names():
    out = translate({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": JAAS,
                     "ssl.truststore.type": "PEM", "ssl.truststore.location": "/etc/ca.pem", "request.timeout.ms": "30000",
                     "bootstrap.servers": "ignored:9092"})
    # the store settings are left to migrate.files, which opens them into ssl.ca.pem
    assert out == {"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "svc",
                   "sasl.password": 'p w"d', "socket.timeout.ms": "30000"}


def test_a_store_that_was_not_opened_is_refused():
    with pytest.raises(BadInput, match="ssl.keystore.location is set but the store was not opened"):
        client_settings("a:9092", {"ssl.keystore.location": "/etc/k.jks"}, source="--command-config c.properties")


def test_both_client_libraries_get_the_same_settings():
    s = client_settings("a:9092,b:9093", {"security.protocol": "sasl_ssl", "sasl.mechanism": "plain",
                                          "sasl.jaas.config": 'x required username="u" password="p";',
                                          "ssl.endpoint.identification.algorithm": "", "client.id": "c"})
    assert s.confluent(**{"group.id": "g"}) == {
        "bootstrap.servers": "a:9092,b:9093", "security.protocol": "sasl_ssl", "sasl.mechanisms": "plain",
        "sasl.username": "u", "sasl.password": "p", "ssl.endpoint.identification.algorithm": "", "client.id": "c",
        "group.id": "g"}
    assert s.kafka_python() == {
        "bootstrap_servers": ["a:9092", "b:9093"], "security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "u", "sasl_plain_password": "p", "ssl_check_hostname": False, "client_id": "c"}
    tls = ClientSettings("a:9092", {"ssl.ca.location": "/ca", "ssl.certificate.location": "/c",
                                    "ssl.key.location": "/k", "ssl.key.password": "kp"})
    assert tls.kafka_python() == {"bootstrap_servers": ["a:9092"], "ssl_cafile": "/ca", "ssl_certfile": "/c",
                                  "ssl_keyfile": "/k", "ssl_password": "kp"}


def test_the_playbook_extras_come_before_the_command_config():
    s = client_settings("a:9092", {"client.id": "from-file"}, extra={"client.id": "from-playbook", "acks": "all"})
    assert s.settings == {"client.id": "from-file", "acks": "all"}
