"""Kafka client settings: one description, rendered for confluent-kafka (librdkafka) and kafka-python.

Operators hand kmigrate the same ``client.properties`` they give Kafka's own tools
(``--command-config``), written with Java client names (``security.protocol``, ``sasl.mechanism``,
``sasl.jaas.config``, ``ssl.truststore.location`` ...). librdkafka names are accepted too.
Pure: ``migrate.files`` reads the file (and opens the key and trust stores it names, see
``migrate.core.keystores``) and hands its properties here.

Secrets (passwords, JAAS lines, keys) live only in :class:`ClientSettings`' dicts: its ``repr`` and
:func:`redact` show ``[hidden]`` instead.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Mapping

from migrate.errors import BadInput

HIDDEN = "[hidden]"
# Setting names whose values are secrets: shown as [hidden] wherever a setting is printed.
_SECRET_NAME = re.compile(r"password|secret|jaas|token|credential|ssl\.key\.pem|ssl\.keystore\.key$", re.IGNORECASE)

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
    "sasl.kerberos.service.name": ("sasl_kerberos_service_name", False),
    "ssl.ca.location": ("ssl_cafile", False),
    "ssl.certificate.location": ("ssl_certfile", False),
    "ssl.key.location": ("ssl_keyfile", False),
    "ssl.key.password": ("ssl_password", False),
}
# Java store settings: opened by ``migrate.files`` (``migrate.core.keystores``) into the PEM settings.
TRUSTSTORE_SETTINGS = ("ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type",
                       "ssl.truststore.certificates")
KEYSTORE_SETTINGS = ("ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type", "ssl.keystore.key",
                     "ssl.keystore.certificate.chain")
PEM_SETTINGS = ("ssl.ca.pem", "ssl.certificate.pem", "ssl.key.pem")
# Java names Spark's Kafka source takes as they are (``kafka.``-prefixed); librdkafka-only names are not among them.
_SPARK_JAVA = re.compile(r"^(security\.protocol|sasl\.(mechanism|jaas\.config|kerberos\..*|login\..*|client\..*)|"
                         r"ssl\.(truststore|keystore)\..*|ssl\.key\.password|ssl\.endpoint\.identification\.algorithm|"
                         r"ssl\.(protocol|enabled\.protocols|cipher\.suites|provider)|request\.timeout\.ms|client\.id)$")

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
KERBEROS_MODULE = "com.sun.security.auth.module.Krb5LoginModule"


def is_secret(name: str) -> bool:
    """True for a setting whose value must never be shown (passwords, JAAS lines, keys, tokens)."""
    return bool(_SECRET_NAME.search(name))


def redact(settings: Mapping[str, object]) -> dict[str, object]:
    """``settings`` with every secret value replaced by ``[hidden]``: what may be printed or logged."""
    return {k: HIDDEN if is_secret(k) else v for k, v in settings.items()}


@dataclass(frozen=True)
class JaasEntry:
    """One login module of a ``sasl.jaas.config`` line: ``Module flag key="value" ...;``."""

    module: str
    flag: str
    options: Mapping[str, str]

    def __repr__(self) -> str:
        return f"JaasEntry({self.module} {self.flag} {sorted(self.options)})"


_JAAS_FLAGS = ("required", "requisite", "sufficient", "optional")


def parse_jaas(text: str, setting: str = "sasl.jaas.config") -> JaasEntry:
    """Parse a JAAS configuration line as Kafka's clients do (exactly one login module).

    Tokens as Java's JAAS ``ConfigFile`` reads them: words, ``"quoted"`` values with backslash escapes,
    ``=`` and ``;``. The error names the setting and what was expected, never a value.

    >>> parse_jaas('x.Plain required username="u" password="p \\\\"q\\\\"";').options["password"]
    'p "q"'
    """
    lexer = shlex.shlex(text, posix=True, punctuation_chars="=;")
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:
        raise BadInput(f"{setting}: a quoted value is not closed: expected Module required key=\"value\" ...;") from None
    if len(tokens) < 3 or tokens[-1] != ";":
        raise BadInput(f"{setting}: expected one login module: Module required key=\"value\" ...; (ending in ;)")
    module, flag, rest = tokens[0], tokens[1].lower(), tokens[2:-1]
    if not re.fullmatch(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*", module) or flag not in _JAAS_FLAGS:
        raise BadInput(f"{setting}: expected a login module class and a flag ({', '.join(_JAAS_FLAGS)}) first")
    if ";" in rest:
        raise BadInput(f"{setting}: Kafka clients take exactly one login module; the line has more")
    options: dict[str, str] = {}
    for i in range(0, len(rest), 3):
        key, eq, value = (rest[i:i + 3] + ["", "", ""])[:3]
        if eq != "=" or not key or key in ("=", ";") or value in ("=", ";"):
            raise BadInput(f"{setting}: expected key=\"value\" options after the flag (near option {i // 3 + 1})")
        options[key] = value
    return JaasEntry(module, flag, options)


def _jaas_settings(entry: JaasEntry, setting: str) -> dict[str, str]:
    """librdkafka settings of a login module.

    PLAIN and SCRAM: ``username`` / ``password``. Kerberos (GSSAPI, ``Krb5LoginModule``): ``principal`` ->
    ``sasl.kerberos.principal`` and ``keyTab`` -> ``sasl.kerberos.keytab`` (librdkafka runs kinit with them);
    its other options (useKeyTab, storeKey, useTicketCache ...) have no librdkafka counterpart and are not
    passed; Spark gets the line unchanged. OAUTHBEARER is refused; any other module gives its ``username`` and
    ``password``.
    """
    if "oauthbearer" in entry.module.lower():
        raise BadInput(f"{setting}: login module {entry.module} is not supported by kmigrate's clients: use PLAIN, "
                       f"SCRAM-SHA-256/512 or GSSAPI (Krb5LoginModule)")
    if entry.module == KERBEROS_MODULE:
        names = {"principal": "sasl.kerberos.principal", "keyTab": "sasl.kerberos.keytab"}
    else:  # PLAIN, SCRAM and modules of the same shape
        names = {"username": "sasl.username", "password": "sasl.password"}
    return {rd: entry.options[java] for java, rd in names.items() if java in entry.options}


@dataclass(frozen=True, repr=False)
class ClientSettings:
    """Settings in librdkafka's vocabulary (the richer one); ``kafka_python()`` translates.

    ``java``: the Java client properties as the operator wrote them (for Spark's Kafka source and
    MirrorMaker 2, which are Java clients and take them unchanged). ``repr`` hides every secret.
    """

    bootstrap_servers: str
    settings: dict[str, str] = field(default_factory=dict)
    java: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"ClientSettings({self.bootstrap_servers!r}, {redact(self.settings)!r})"

    def confluent(self, **extra: object) -> dict[str, object]:
        """Config dict for confluent-kafka clients."""
        conf: dict[str, object] = {"bootstrap.servers": self.bootstrap_servers}
        conf.update(self.settings)
        conf.update(extra)
        return conf

    def kafka_python(self, **extra: object) -> dict[str, object]:
        """Keyword arguments for kafka-python clients (KafkaAdminClient, KafkaConsumer).

        TLS material held in memory (:data:`PEM_SETTINGS`, from Java stores) is not among them:
        kafka-python reads files, so its adapter builds an ``ssl_context`` from :meth:`tls_pem`."""
        s = self.settings
        kw: dict[str, object] = {"bootstrap_servers": self.bootstrap_servers.split(",")}
        for name, (keyword, upper) in _RDKAFKA_TO_KAFKA_PYTHON.items():
            if name in s:
                kw[keyword] = s[name].upper() if upper else s[name]
        if self.check_hostname is False:
            kw["ssl_check_hostname"] = False
        if "client.id" in s:
            kw["client_id"] = s["client.id"]
        kw.update(extra)
        return kw

    @property
    def check_hostname(self) -> bool:
        """Whether the broker's certificate must name the broker (``ssl.endpoint.identification.algorithm``,
        empty or ``none`` = off; Java's default ``https`` = on)."""
        return self.settings.get("ssl.endpoint.identification.algorithm", "https").lower() not in ("", "none")

    def tls_pem(self) -> tuple[str | None, str | None, str | None]:
        """(CA certificates, certificate chain, private key) held in memory as PEM, each None when absent."""
        s = self.settings
        return s.get("ssl.ca.pem"), s.get("ssl.certificate.pem"), s.get("ssl.key.pem")

    def spark_options(self) -> dict[str, str]:
        """Options for Spark's Kafka source: Java client names prefixed with ``kafka.``.

        The Java properties the operator gave go as they are (JKS stores, the JAAS line); settings
        given in librdkafka's names are translated back."""
        s = self.settings
        out = {"kafka.bootstrap.servers": self.bootstrap_servers}
        if "security.protocol" in s:
            out["kafka.security.protocol"] = s["security.protocol"]
        if "sasl.mechanisms" in s:
            out["kafka.sasl.mechanism"] = s["sasl.mechanisms"]
        if "sasl.username" in s:
            module = SCRAM_MODULE if s.get("sasl.mechanisms", "").upper().startswith("SCRAM") else PLAIN_MODULE
            out["kafka.sasl.jaas.config"] = (
                f'{module} required username="{_jaas_quote(s["sasl.username"])}" '
                f'password="{_jaas_quote(s.get("sasl.password", ""))}";'
            )
        if "ssl.ca.location" in s:
            out["kafka.ssl.truststore.type"] = "PEM"
            out["kafka.ssl.truststore.location"] = s["ssl.ca.location"]
        if "ssl.endpoint.identification.algorithm" in s:
            out["kafka.ssl.endpoint.identification.algorithm"] = s["ssl.endpoint.identification.algorithm"]
        out.update({f"kafka.{k}": v for k, v in self.java.items() if _SPARK_JAVA.match(k)})
        return out


def _jaas_quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def translate(props: dict[str, str], source: str = "client settings") -> dict[str, str]:
    """Translate Java client properties (or librdkafka ones, kept as they are) to librdkafka names.

    Java store settings are left out: :func:`client_settings` puts the PEM text ``migrate.files``
    opened from them in their place."""
    out: dict[str, str] = {}
    has_keystore = any(k in props for k in KEYSTORE_SETTINGS)
    for key, value in props.items():
        if key == "sasl.jaas.config":
            out.update(_jaas_settings(parse_jaas(value, f"{source}: sasl.jaas.config"), f"{source}: sasl.jaas.config"))
            continue
        if key in TRUSTSTORE_SETTINGS or key in KEYSTORE_SETTINGS or (key == "ssl.key.password" and has_keystore):
            continue
        if key == "bootstrap.servers":
            continue
        out[_JAVA_TO_RDKAFKA.get(key, key)] = value
    return out


def client_settings(bootstrap_servers: str | None, command_config: dict[str, str] | None = None,
                    extra: dict[str, str] | None = None, source: str = "--command-config",
                    pem: Mapping[str, str] | None = None) -> ClientSettings:
    """Build the settings from ``--bootstrap-server`` and the ``--command-config`` properties (and playbook extras).

    ``pem``: the :data:`PEM_SETTINGS` ``migrate.files`` opened from the Java store settings; a store
    setting without them is refused (the stores must be opened by ``migrate.files.client_settings``)."""
    check_bootstrap(bootstrap_servers)
    java = {k: v for k, v in {**(extra or {}), **(command_config or {})}.items() if k != "bootstrap.servers"}
    settings = translate(dict(extra or {}), "playbook kafka.client")
    settings.update(translate(dict(command_config or {}), source))
    pem = dict(pem or {})
    for names, produced in ((TRUSTSTORE_SETTINGS, "ssl.ca.pem"), (KEYSTORE_SETTINGS, "ssl.key.pem")):
        given = [n for n in names if n in java and not n.endswith((".password", ".type"))]
        if given and produced not in pem:
            raise BadInput(f"{source}: {given[0]} is set but the store was not opened: read the settings with "
                           "migrate.files.client_settings")
    settings.update(pem)
    check_choices(settings, source)
    return ClientSettings(bootstrap_servers.strip(), settings, java)


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI")


def check_choices(settings: Mapping[str, str], source: str) -> None:
    """Refuse a ``security.protocol`` or ``sasl.mechanism`` Kafka's clients do not know (librdkafka would
    raise a traceback at the first client), naming the setting and the choices."""
    protocol = settings.get("security.protocol")
    if protocol is not None and protocol.upper() not in SECURITY_PROTOCOLS:
        raise BadInput(f"{source}: security.protocol={protocol!r} is not a Kafka security protocol: "
                       f"use one of {', '.join(SECURITY_PROTOCOLS)}")
    mechanism = settings.get("sasl.mechanisms")
    if mechanism is not None and mechanism.upper() not in SASL_MECHANISMS:
        raise BadInput(f"{source}: sasl.mechanism={mechanism!r} is not one kmigrate's clients support: "
                       f"use one of {', '.join(SASL_MECHANISMS)} (as the brokers' sasl.enabled.mechanisms)")


def authentication_failure(code: str, text: str, bootstrap_servers: str) -> str | None:
    """The one line for a client error that no retry will cure (``code``: librdkafka's error name):
    refused credentials, a SASL mechanism the brokers do not enable, a broker certificate that is not
    trusted. None for anything else (a broker down, a timeout: worth waiting for).

    >>> authentication_failure("_SSL", "b:9092/bootstrap: SSL handshake failed: certificate verify failed (after 3ms)", "b:9092")[:62]
    'the TLS handshake with Kafka at b:9092 failed: SSL handshake f'
    """
    reason = re.sub(r"^\S*/\S*: ", "", " ".join(text.split()))  # the broker address librdkafka puts first
    reason = re.sub(r" \(after \d+ms in state \w+\)$", "", reason)
    if code == "_AUTHENTICATION":
        if "mechanism" in reason.lower() and "unsupported" in reason.lower():
            hint = "set sasl.mechanism in --command-config to one the brokers enable"
        else:
            hint = "check the username and password in --command-config (sasl.jaas.config)"
        return f"Kafka at {bootstrap_servers} refused kmigrate's authentication: {reason}: {hint}"
    if code == "_SSL" and ("certificate" in reason.lower() or "verify" in reason.lower()):
        return (f"the TLS handshake with Kafka at {bootstrap_servers} failed: {reason}: check the truststore "
                "(ssl.truststore.* or ssl.ca.location) and, for mutual TLS, the keystore in --command-config")
    return None


def check_bootstrap(bootstrap_servers: str | None) -> None:
    """Refuse an empty or malformed ``--bootstrap-server`` (host:port[,host:port...])."""
    if not bootstrap_servers or not bootstrap_servers.strip():
        raise BadInput("no Kafka bootstrap servers: give --bootstrap-server host:port (or a playbook with kafka.bootstrap_servers)")
    for server in bootstrap_servers.split(","):
        host, sep, port = server.strip().rpartition(":")
        if not sep or not host or not port.isdigit():  # no default port: Kafka's tools want host:port
            raise BadInput(f"--bootstrap-server {bootstrap_servers!r}: expected host:port[,host:port...]")
