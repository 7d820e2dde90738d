"""How kmigrate logs in to ZooKeeper and secures its sessions, pure: digest credentials (``--zk-auth``),
a SASL login read from a JAAS file (``--zk-jaas-file``), TLS stores (``--zk-client-config``). No value of a
secret is in a repr or an error message."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from migrate.errors import BadInput


def parse_auth(text: str | None, sasl: "ZkSasl | None" = None, tls: "ZkTls | None" = None) -> list:
    """``--zk-auth user:password`` -> kazoo auth_data (digest scheme), then the SASL login of
    ``--zk-jaas-file`` if any (the ZooKeeper session adapter hands it to kazoo's ``sasl_options``)."""
    out: list = []
    if text:
        if ":" not in text or text.startswith(":"):
            raise BadInput("--zk-auth: expected user:password (ZooKeeper digest authentication)")
        out.append(("digest", text))
    out += [x for x in (sasl, tls) if x is not None]
    return out


@dataclass(frozen=True)
class ZkTls:
    """TLS to ZooKeeper's secureClientPort (``--zk-client-config``): PEM text of the trusted CAs and of
    the client certificate and key (opened in memory from JKS, PKCS12 or PEM stores); no repr shows the key."""

    ca_pem: str | None = None
    certificate_pem: str | None = None
    key_pem: str | None = field(default=None, repr=False)
    check_hostname: bool = True

    def __repr__(self) -> str:
        return (f"ZkTls(ca={'yes' if self.ca_pem else 'system'} client_certificate={'yes' if self.certificate_pem else 'no'}"
                f" check_hostname={self.check_hostname})")


# Kafka's --zk-tls-config-file / ZooKeeper client names -> Kafka client store names (migrate.files.open_stores)
_ZK_STORE_SETTINGS = {f"zookeeper.ssl.{k}": f"ssl.{k}" for k in (
    "keystore.location", "keystore.password", "keystore.type", "truststore.location", "truststore.password",
    "truststore.type", "key.password")}
_ZK_IGNORED = ("zookeeper.clientCnxnSocket", "zookeeper.ssl.protocol", "zookeeper.ssl.enabled.protocols",
               "zookeeper.ssl.cipher.suites", "zookeeper.ssl.crl.enable", "zookeeper.ssl.ocsp.enable")


def zk_client_settings(props: dict[str, str], source: str) -> tuple[bool, dict[str, str], bool]:
    """A ``--zk-client-config`` file (Kafka's ``--zk-tls-config-file``) -> (TLS on, store settings under
    Kafka client names, check the host name). Unknown names are refused, one line, never a value."""
    unknown = sorted(k for k in props if k not in _ZK_STORE_SETTINGS and k not in _ZK_IGNORED and k not in (
        "zookeeper.ssl.client.enable", "zookeeper.ssl.endpoint.identification.algorithm",
        "zookeeper.ssl.hostnameVerification"))
    if unknown:
        raise BadInput(f"{source}: unknown setting {unknown[0]}: expected zookeeper.ssl.client.enable, "
                       "zookeeper.ssl.truststore.*, zookeeper.ssl.keystore.* ... as Kafka's --zk-tls-config-file")
    enabled = props.get("zookeeper.ssl.client.enable", "false").strip().lower()
    if enabled not in ("true", "false"):
        raise BadInput(f"{source}: zookeeper.ssl.client.enable must be true or false")
    algorithm = props.get("zookeeper.ssl.endpoint.identification.algorithm", "HTTPS").strip().upper()
    verify = props.get("zookeeper.ssl.hostnameVerification", "true").strip().lower()
    if algorithm not in ("HTTPS", "") or verify not in ("true", "false"):
        raise BadInput(f"{source}: zookeeper.ssl.endpoint.identification.algorithm takes HTTPS or nothing, "
                       "zookeeper.ssl.hostnameVerification true or false")
    stores = {_ZK_STORE_SETTINGS[k]: v for k, v in props.items() if k in _ZK_STORE_SETTINGS}
    return enabled == "true", stores, algorithm == "HTTPS" and verify == "true"


DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
_KERBEROS_MODULES = ("com.sun.security.auth.module.Krb5LoginModule", "com.ibm.security.auth.module.Krb5LoginModule")


@dataclass(frozen=True)
class ZkSasl:
    """A ZooKeeper SASL login (the JAAS ``Client`` section Kafka's tools read). Only DIGEST-MD5 is
    supported; the password is in no repr."""

    username: str
    password: str = field(repr=False)
    mechanism: str = "DIGEST-MD5"

    def __repr__(self) -> str:
        return f"ZkSasl({self.mechanism} username={self.username!r} password=[hidden])"

    def kazoo_options(self) -> dict[str, str]:
        return {"mechanism": self.mechanism, "username": self.username, "password": self.password}


_JAAS_NOISE = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)
_JAAS_SECTION = re.compile(r'([A-Za-z_$][\w$.-]*)\s*\{((?:"(?:\\.|[^"\\])*"|[^{}"])*)\}\s*;', re.S)


def jaas_client_login(text: str, source: str, section: str = "Client") -> ZkSasl:
    """The ZooKeeper SASL login of a JAAS file (``-Djava.security.auth.login.config``), section ``Client``
    as ZooKeeper's Java client reads it (``zookeeper.sasl.clientconfig``). Errors name the file and what
    is wrong, never a value."""
    from migrate.core.clientconfig import parse_jaas

    bare = _JAAS_NOISE.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " ", text)
    sections = {m.group(1): m.group(2) for m in _JAAS_SECTION.finditer(bare)}
    if section not in sections:
        found = ", ".join(sorted(sections)) or "none that parse (Name { Module required key=\"value\"; };)"
        raise BadInput(f"{source}: no {section} section (the one ZooKeeper clients log in with); sections found: {found}")
    entry = parse_jaas(sections[section], f"{source}: section {section}")
    if entry.module in _KERBEROS_MODULES:
        raise BadInput(f"{source}: section {section} logs in with Kerberos ({entry.module}); kmigrate supports "
                       "ZooKeeper SASL DIGEST-MD5 only (DigestLoginModule) or --zk-auth digest authentication")
    if entry.module != DIGEST_LOGIN_MODULE:
        raise BadInput(f"{source}: section {section}: login module {entry.module} is not {DIGEST_LOGIN_MODULE}, "
                       "the only ZooKeeper SASL login kmigrate supports")
    missing = [k for k in ("username", "password") if not entry.options.get(k)]
    if missing:
        raise BadInput(f"{source}: section {section}: {' and '.join(missing)} missing (DigestLoginModule needs both)")
    return ZkSasl(entry.options["username"], entry.options["password"])
