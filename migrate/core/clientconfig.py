"""Kafka client settings: one description, rendered for confluent-kafka (librdkafka) and kafka-python.

Operators hand kmigrate the same ``client.properties`` they give Kafka's own tools
(``--command-config``), written with Java client names (``security.protocol``, ``sasl.mechanism``,
``sasl.jaas.config``, ``ssl.truststore.location`` ...). librdkafka names are accepted too.
Pure: ``migrate.files`` reads the file and hands its properties here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from migrate.errors import BadInput

_JAAS_KV = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')

# Java client name -> librdkafka name, where they differ.
_JAVA_TO_RDKAFKA = {
    "sasl.mechanism": "sasl.mechanisms",
    "ssl.endpoint.identification.algorithm": "ssl.endpoint.identification.algorithm",
    "client.id": "client.id",
    "request.timeout.ms": "socket.timeout.ms",
}
# librdkafka name -> (kafka-python keyword, upper-cased), in the order kafka-python is handed them.
_RDKAFKA_TO_KAFKA_PYTHON = {
    "security.protocol": ("security_protocol", True),
    "sasl.mechanisms": ("sasl_mechanism", True),
    "sasl.username": ("sasl_plain_username", False),
    "sasl.password": ("sasl_plain_password", False),
    "ssl.ca.location": ("ssl_cafile", False),
    "ssl.certificate.location": ("ssl_certfile", False),
    "ssl.key.location": ("ssl_keyfile", False),
    "ssl.key.password": ("ssl_password", False),
}
# Java settings that librdkafka cannot use as they are (JKS stores): refused with a hint.
_UNSUPPORTED = {
    "ssl.truststore.location": "convert the truststore to PEM and set ssl.ca.location (or ssl.truststore.type=PEM)",
    "ssl.keystore.location": "convert the keystore to PEM and set ssl.certificate.location and ssl.key.location",
}


@dataclass(frozen=True)
class ClientSettings:
    """Settings in librdkafka's vocabulary (the richer one); ``kafka_python()`` translates."""

    bootstrap_servers: str
    settings: dict[str, str] = field(default_factory=dict)

    def confluent(self, **extra: object) -> dict[str, object]:
        """Config dict for confluent-kafka clients."""
        conf: dict[str, object] = {"bootstrap.servers": self.bootstrap_servers}
        conf.update(self.settings)
        conf.update(extra)
        return conf

    def kafka_python(self, **extra: object) -> dict[str, object]:
        """Keyword arguments for kafka-python clients (KafkaAdminClient, KafkaConsumer)."""
        s = self.settings
        kw: dict[str, object] = {"bootstrap_servers": self.bootstrap_servers.split(",")}
        for name, (keyword, upper) in _RDKAFKA_TO_KAFKA_PYTHON.items():
            if name in s:
                kw[keyword] = s[name].upper() if upper else s[name]
        if s.get("ssl.endpoint.identification.algorithm", "https") in ("", "none"):
            kw["ssl_check_hostname"] = False
        if "client.id" in s:
            kw["client_id"] = s["client.id"]
        kw.update(extra)
        return kw

    def spark_options(self) -> dict[str, str]:
        """Options for Spark's Kafka source: Java client names prefixed with ``kafka.``."""
        s = self.settings
        out = {"kafka.bootstrap.servers": self.bootstrap_servers}
        if "security.protocol" in s:
            out["kafka.security.protocol"] = s["security.protocol"]
        if "sasl.mechanisms" in s:
            out["kafka.sasl.mechanism"] = s["sasl.mechanisms"]
        if "sasl.username" in s:
            module = (
                "org.apache.kafka.common.security.scram.ScramLoginModule"
                if s.get("sasl.mechanisms", "").upper().startswith("SCRAM")
                else "org.apache.kafka.common.security.plain.PlainLoginModule"
            )
            out["kafka.sasl.jaas.config"] = (
                f'{module} required username="{s["sasl.username"]}" password="{s.get("sasl.password", "")}";'
            )
        if "ssl.ca.location" in s:
            out["kafka.ssl.truststore.type"] = "PEM"
            out["kafka.ssl.truststore.location"] = s["ssl.ca.location"]
        return out


def translate(props: dict[str, str], source: str = "client settings") -> dict[str, str]:
    """Translate Java client properties (or librdkafka ones, kept as they are) to librdkafka names."""
    out: dict[str, str] = {}
    for key, value in props.items():
        if key == "sasl.jaas.config":
            creds = dict(_JAAS_KV.findall(value))
            if "username" in creds:
                out["sasl.username"] = creds["username"]
            if "password" in creds:
                out["sasl.password"] = creds["password"]
            continue
        if key in _UNSUPPORTED:
            if props.get(key.replace("location", "type"), "").upper() == "PEM":
                out["ssl.ca.location" if "truststore" in key else "ssl.certificate.location"] = value
                continue
            raise BadInput(f"{source}: {key} is a Java keystore, which kmigrate's clients cannot read: {_UNSUPPORTED[key]}")
        if key in ("ssl.truststore.type", "ssl.keystore.type", "bootstrap.servers"):
            continue
        out[_JAVA_TO_RDKAFKA.get(key, key)] = value
    return out


def client_settings(bootstrap_servers: str | None, command_config: dict[str, str] | None = None,
                    extra: dict[str, str] | None = None, source: str = "--command-config") -> ClientSettings:
    """Build the settings from ``--bootstrap-server`` and the ``--command-config`` properties (and playbook extras)."""
    check_bootstrap(bootstrap_servers)
    settings = translate(dict(extra or {}), "playbook kafka.client")
    settings.update(translate(dict(command_config or {}), source))
    return ClientSettings(bootstrap_servers.strip(), settings)


def check_bootstrap(bootstrap_servers: str | None) -> None:
    """Refuse an empty or malformed ``--bootstrap-server`` (host:port[,host:port...])."""
    if not bootstrap_servers or not bootstrap_servers.strip():
        raise BadInput("no Kafka bootstrap servers: give --bootstrap-server host:port (or a playbook with kafka.bootstrap_servers)")
    for server in bootstrap_servers.split(","):
        host, sep, port = server.strip().rpartition(":")
        if not sep or not host or not port.isdigit():  # no default port: Kafka's tools want host:port
            raise BadInput(f"--bootstrap-server {bootstrap_servers!r}: expected host:port[,host:port...]")
