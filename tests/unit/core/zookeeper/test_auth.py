"""How kmigrate logs in to ZooKeeper: ``--zk-client-config`` (Kafka's --zk-tls-config-file names) mapped to
TLS stores, pure (the files and the JAAS login are tested through ``migrate.files`` in tests/unit/test_zk_jaas_file.py)."""

from __future__ import annotations

import pytest

from migrate.core.zookeeper.auth import zk_client_settings
from migrate.errors import BadInput


def test_zk_client_settings_map_kafka_names_to_the_stores_and_the_host_check():
    enabled, stores, check = zk_client_settings({
        "zookeeper.ssl.client.enable": "true", "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
        "zookeeper.ssl.truststore.location": "t.jks", "zookeeper.ssl.truststore.password": "pw",
        "zookeeper.ssl.keystore.location": "k.p12", "zookeeper.ssl.keystore.type": "PKCS12",
        "zookeeper.ssl.endpoint.identification.algorithm": ""}, "f")
    assert enabled and not check
    assert stores == {"ssl.truststore.location": "t.jks", "ssl.truststore.password": "pw",
                      "ssl.keystore.location": "k.p12", "ssl.keystore.type": "PKCS12"}
    assert zk_client_settings({}, "f") == (False, {}, True)
    assert zk_client_settings({"zookeeper.ssl.hostnameVerification": "false"}, "f")[2] is False


@pytest.mark.parametrize("props, says", [
    ({"zookeeper.ssl.trustStore.location": "x"}, "unknown setting zookeeper.ssl.trustStore.location"),
    ({"zookeeper.ssl.client.enable": "yes"}, "must be true or false"),
    ({"zookeeper.ssl.endpoint.identification.algorithm": "LDAPS"}, "takes HTTPS or nothing"),
])
def test_bad_zk_client_settings_are_one_line(props, says):
    with pytest.raises(BadInput, match=says):
        zk_client_settings(props, "f")
