"""sasl.jaas.config parsed as Java's JAAS reader does; GSSAPI's pass-through; secrets shown as [hidden]."""

import pytest

from migrate.core.clientconfig import ClientSettings, client_settings, parse_jaas, redact, translate
from migrate.errors import BadInput


def test_a_jaas_line_with_quotes_semicolons_and_unquoted_values():
    entry = parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required\n'
                       '  username="a b" password="x;y=\\"z\\"" debug=true ;')
    assert entry.module.endswith("PlainLoginModule") and entry.flag == "required"
    assert entry.options == {"username": "a b", "password": 'x;y="z"', "debug": "true"}


@pytest.mark.parametrize("line, wanted", [
    ('x.Scram required username="u" password="p"', "ending in ;"),
    ('x.Scram required username="u" password="p;', "not closed"),
    ('x.Scram mandatory username="u";', "a flag"),
    ('x.Scram required username "u";', "key=\"value\""),
    ('x.Scram required username="u"; y.Other required a="b";', "exactly one login module"),
])
def test_a_jaas_line_that_does_not_parse_is_one_line_naming_the_setting_never_the_value(line, wanted):
    with pytest.raises(BadInput) as err:
        translate({"sasl.jaas.config": line}, "--command-config c.properties")
    message = str(err.value)
    assert wanted in message and "--command-config c.properties: sasl.jaas.config" in message
    assert '"p' not in message and "\n" not in message


def test_gssapi_passes_service_name_principal_and_keytab_and_nothing_else():
    props = {"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI", "sasl.kerberos.service.name": "kafka",
             "sasl.jaas.config": 'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true '
                                 'keyTab="/etc/security/kmigrate.keytab" principal="kmigrate@EXAMPLE.COM";'}
    s = client_settings("a:9092", props)
    assert s.settings == {"security.protocol": "SASL_SSL", "sasl.mechanisms": "GSSAPI",
                          "sasl.kerberos.service.name": "kafka", "sasl.kerberos.principal": "kmigrate@EXAMPLE.COM",
                          "sasl.kerberos.keytab": "/etc/security/kmigrate.keytab"}
    assert s.kafka_python()["sasl_kerberos_service_name"] == "kafka"
    assert s.spark_options()["kafka.sasl.jaas.config"] == props["sasl.jaas.config"]  # Spark: the line unchanged


def test_oauthbearer_is_refused_with_what_is_supported():
    with pytest.raises(BadInput, match="not supported.*PLAIN, SCRAM-SHA-256/512 or GSSAPI"):
        translate({"sasl.jaas.config":
                   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"})


def test_spark_takes_the_java_settings_as_they_are():
    props = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
             "sasl.jaas.config": 'x.ScramLoginModule required username="u" password="p";',
             "ssl.truststore.location": "/s/t.jks", "ssl.truststore.password": "tp", "ssl.truststore.type": "JKS",
             "ssl.endpoint.identification.algorithm": ""}
    s = client_settings("a:9092", props, pem={"ssl.ca.pem": "-----BEGIN CERTIFICATE-----"})
    opts = s.spark_options()
    assert {k: opts[f"kafka.{k}"] for k in props} == props
    assert not any("pem" in k for k in opts)  # librdkafka's in-memory PEM stays out of Spark


def test_secrets_are_hidden_where_settings_are_shown():
    s = ClientSettings("a:9092", {"sasl.password": "p4ss", "ssl.key.pem": "KEYBYTES", "ssl.key.password": "kp",
                                  "sasl.username": "u"}, {"sasl.jaas.config": "x required password=\"p4ss\";"})
    assert "p4ss" not in repr(s) and "KEYBYTES" not in repr(s) and "kp'" not in repr(s)
    assert redact({"ssl.truststore.password": "t", "sasl.jaas.config": "j", "security.protocol": "SSL"}) == {
        "ssl.truststore.password": "[hidden]", "sasl.jaas.config": "[hidden]", "security.protocol": "SSL"}
