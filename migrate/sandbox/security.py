"""The security of a secured sandbox (``kmigrate sandbox up --security sasl_ssl|mtls|sasl_plaintext``).

What a secured sandbox runs, as a production cluster would:

1. A throwaway certificate authority and one certificate per broker (subject ``CN=broker``, subject
   alternative name = the broker's loopback address), made with ``cryptography``. Brokers read a PKCS12
   keystore and a JKS truststore (written with ``pyjks``: Java ignores certificates without a key in a
   PKCS12 file that carries no Java trust attribute). The CA's key is never written: spares get their
   certificates at ``up`` too.
2. Three Kafka users: ``admin`` (a super user, also the brokers' own inter-broker identity), ``kmigrate``
   (the ACLs of :data:`KMIGRATE_ACLS`) and ``client`` (produce and consume). With SASL they are
   SCRAM-SHA-512 credentials written into ZooKeeper before any broker starts; with mTLS they are client
   certificates (``CN=<user>``, mapped to ``User:<user>`` by ``ssl.principal.mapping.rules``).
3. ``AclAuthorizer`` with ``allow.everyone.if.no.acl.found=false``; inter-broker traffic uses the
   secured listener.
4. ZooKeeper with SASL DIGEST-MD5 for the brokers (JAAS ``Server`` section; the brokers log in with a
   ``Client`` section as ``kafka``), ``zookeeper.set.acl=true`` on the brokers, a digest super user
   (``super``, ``DigestAuthenticationProvider.superDigest`` in zoo.cfg, not on a command line) and no
   ``skipACL``: reconfig needs the super user.

Every password, key and file holding one is mode 0600 in ``<sandbox>/security`` (mode 0700), and no
secret is ever passed on a command line: the JVMs get only file paths.

Files for operators (``kmigrate sandbox env``): ``kmigrate.properties``, ``admin.properties`` and
``client.properties`` as Kafka's own tools take them (``--command-config``: JKS stores with their
passwords), and ``zookeeper-super.auth`` (``super:<password>``, ZooKeeper digest authentication).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import ipaddress
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import javaproperties

from migrate.errors import BadInput
from migrate.files import write_private

SECURITY_CHOICES = ("plaintext", "sasl_plaintext", "sasl_ssl", "mtls")
_PROTOCOL = {"plaintext": "PLAINTEXT", "sasl_plaintext": "SASL_PLAINTEXT", "sasl_ssl": "SASL_SSL", "mtls": "SSL"}
MECHANISM = "SCRAM-SHA-512"
SCRAM_ITERATIONS = 4096
USERS = ("admin", "kmigrate", "client")
ZK_BROKER_USER = "kafka"
ZK_SUPER_USER = "super"
SECRETS_FILE = "secrets.json"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
# A native KRaft sandbox (sandbox up --kraft --security): SCRAM on the brokers' listener, PLAIN on the controller
# listener (a controller cannot check SCRAM: the credentials live in the metadata it serves), StandardAuthorizer.
KRAFT_SECURITY_CHOICES = ("plaintext", "sasl_ssl", "sasl_plaintext")
CONTROLLER_MECHANISM = "PLAIN"
CONTROLLER_USERS = ("admin", "kmigrate")  # who may log in on the controller listener
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

# The Kafka ACLs the sandbox grants: (principal, resource type, resource name, operations).
# kmigrate's list is explicit and generous for now; the README's per-command list is the reference.
KMIGRATE_ACLS = (
    ("kmigrate", "cluster", "kafka-cluster",
     ("DESCRIBE", "DESCRIBE_CONFIGS", "ALTER", "ALTER_CONFIGS", "CREATE", "IDEMPOTENT_WRITE")),
    ("kmigrate", "topic", "*", ("DESCRIBE", "DESCRIBE_CONFIGS", "ALTER", "ALTER_CONFIGS", "CREATE", "DELETE",
                                "READ", "WRITE")),
    ("kmigrate", "group", "*", ("DESCRIBE", "READ", "DELETE")),
    ("client", "topic", "*", ("DESCRIBE", "CREATE", "READ", "WRITE")),
    ("client", "group", "*", ("DESCRIBE", "READ")),
    ("client", "cluster", "kafka-cluster", ("IDEMPOTENT_WRITE",)),
)


def check_security(security: str) -> None:
    if security not in SECURITY_CHOICES:
        raise BadInput(f"--security {security!r}: choose one of {', '.join(SECURITY_CHOICES)}")


def check_kraft_security(security: str) -> None:
    """The securities a native KRaft sandbox supports (``--kraft --security``).

    >>> check_kraft_security("sasl_ssl")
    >>> check_kraft_security("mtls")
    Traceback (most recent call last):
    migrate.errors.BadInput: --security mtls does not go with --kraft: a KRaft sandbox is plaintext, sasl_ssl or sasl_plaintext
    """
    check_security(security)
    if security not in KRAFT_SECURITY_CHOICES:
        raise BadInput(f"--security {security} does not go with --kraft: a KRaft sandbox is "
                       f"{', '.join(KRAFT_SECURITY_CHOICES[:-1])} or {KRAFT_SECURITY_CHOICES[-1]}")


def plain_jaas_line(user: str, password: str, accepted: dict[str, str] | None = None) -> str:
    """A PLAIN login: ``user`` as a client, and on a server the users it accepts (``user_<name>="<password>"``)."""
    users = "".join(f' user_{name}="{pw}"' for name, pw in (accepted or {}).items())
    return f'{PLAIN_MODULE} required username="{user}" password="{password}"{users};'


def protocol(security: str) -> str:
    """Kafka's ``security.protocol`` of a sandbox security mode (``mtls`` -> ``SSL``)."""
    return _PROTOCOL[security]


def uses_sasl(security: str) -> bool:
    return security in ("sasl_plaintext", "sasl_ssl")


def uses_tls(security: str) -> bool:
    return security in ("sasl_ssl", "mtls")


def scram_credential(password: str, salt: bytes, iterations: int = SCRAM_ITERATIONS) -> str:
    """Kafka's stored SCRAM-SHA-512 credential (``salt=..,stored_key=..,server_key=..,iterations=..``, RFC 5802)."""
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    stored_key = hashlib.sha512(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha512).digest()
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return f"salt={b64(salt)},stored_key={b64(stored_key)},server_key={b64(server_key)},iterations={iterations}"


def zookeeper_digest(user: str, password: str) -> str:
    """ZooKeeper's digest of ``user:password`` (``user:base64(sha1(user:password))``)."""
    return f"{user}:" + base64.b64encode(hashlib.sha1(f"{user}:{password}".encode()).digest()).decode()


def jaas_line(user: str, password: str) -> str:
    return f'{SCRAM_MODULE} required username="{user}" password="{password}";'


def _properties_text(props: dict[str, str]) -> str:
    return javaproperties.dumps(props, timestamp=False, sort_keys=True)


@dataclass(frozen=True)
class SandboxSecurity:
    """The security material of a sandbox in ``<sandbox>/security`` (made by :func:`create`)."""

    security: str
    dir: Path

    @property
    def secrets(self) -> dict[str, str]:
        return json.loads((self.dir / SECRETS_FILE).read_text())

    def password(self, user: str) -> str:
        return self.secrets[user]

    # ---------------------------------------------------------------- files
    def properties_file(self, user: str) -> Path:
        """The ``--command-config`` file of a Kafka user, as Kafka's tools take it."""
        return self.dir / f"{user}.properties"

    @property
    def zookeeper_auth_file(self) -> Path:
        return self.dir / "zookeeper-super.auth"

    @property
    def zookeeper_tls_client_file(self) -> Path:
        """``--zk-client-config`` of ``--zookeeper-tls`` (Kafka's ``--zk-tls-config-file``)."""
        return self.dir / "zookeeper-tls-client.properties"

    @property
    def zookeeper_jaas(self) -> Path:
        return self.dir / "zookeeper-jaas.conf"

    @property
    def broker_zookeeper_jaas(self) -> Path:
        return self.dir / "kafka-zookeeper-jaas.conf"

    def zookeeper_auth(self) -> list[tuple[str, str]]:
        """kazoo auth data of ZooKeeper's super user."""
        return [("digest", f"{ZK_SUPER_USER}:{self.password('zk_super')}")]

    # --------------------------------------------------------- server side
    def zoo_cfg_lines(self) -> list[str]:
        """zoo.cfg lines (instead of ``skipACL=yes``): SASL for brokers, a digest super user.

        Unknown zoo.cfg keys become ``zookeeper.``-prefixed system properties, so the super digest
        stays off the command line."""
        return [
            "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
            f"DigestAuthenticationProvider.superDigest={zookeeper_digest(ZK_SUPER_USER, self.password('zk_super'))}",
        ]

    def zookeeper_keystore(self, zk_id: int) -> Path:
        return self.dir / f"zookeeper-{zk_id}.keystore.p12"

    def zookeeper_tls_lines(self, zk_id: int, host: str, secure_port: int) -> list[str]:
        """zoo.cfg lines of ``--zookeeper-tls``: a TLS secureClientPort (Netty) beside the plaintext client
        port, the server's PKCS12 keystore from the sandbox CA, no client certificate asked."""
        return [
            f"secureClientPort={secure_port}",
            f"secureClientPortAddress={host}",
            "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
            f"ssl.keyStore.location={self.zookeeper_keystore(zk_id)}",
            f"ssl.keyStore.password={self.password('store')}",
            "ssl.keyStore.type=PKCS12",
            f"ssl.trustStore.location={self.dir / 'truststore.jks'}",
            f"ssl.trustStore.password={self.password('store')}",
            "ssl.trustStore.type=JKS",
            "ssl.clientAuth=none",
        ]

    def zookeeper_tls_client_config(self) -> dict[str, str]:
        """A ``--zk-client-config`` (Kafka's ``--zk-tls-config-file``) for the sandbox's secureClientPort."""
        return {
            "zookeeper.ssl.client.enable": "true",
            "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
            "zookeeper.ssl.truststore.location": str(self.dir / "truststore.jks"),
            "zookeeper.ssl.truststore.password": self.password("store"),
            "zookeeper.ssl.truststore.type": "JKS",
        }

    def zookeeper_jvm_options(self) -> list[str]:
        return [f"-Djava.security.auth.login.config={self.zookeeper_jaas}"]

    def broker_jvm_options(self) -> list[str]:
        return [f"-Djava.security.auth.login.config={self.broker_zookeeper_jaas}"]

    def broker_properties(self, broker_id: int, address: str) -> dict[str, str]:
        """The security part of a broker's server.properties (the file is written 0600)."""
        proto = protocol(self.security)
        props = {
            "listeners": f"{proto}://{address}",
            "advertised.listeners": f"{proto}://{address}",
            "security.inter.broker.protocol": proto,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "allow.everyone.if.no.acl.found": "false",
            "super.users": "User:admin;User:broker",
            "zookeeper.set.acl": "true",
        }
        if uses_sasl(self.security):
            listener = proto.lower()
            props.update({
                "sasl.enabled.mechanisms": MECHANISM,
                "sasl.mechanism.inter.broker.protocol": MECHANISM,
                f"listener.name.{listener}.{MECHANISM.lower()}.sasl.jaas.config": jaas_line("admin", self.password("admin")),
            })
        if uses_tls(self.security):
            props.update(self._server_stores(broker_id))
        if self.security == "mtls":
            props.update({
                "ssl.client.auth": "required",
                "ssl.principal.mapping.rules": "RULE:^CN=([^,]+)$/$1/,DEFAULT",
            })
        return props

    def _server_stores(self, node_id: int) -> dict[str, str]:
        """A server's own key store (PKCS12) and the sandbox's trust store (JKS), both under the store password."""
        store = self.password("store")
        return {
            "ssl.keystore.location": str(self.dir / f"kafka-{node_id}.keystore.p12"),
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.password": store,
            "ssl.key.password": store,
            "ssl.truststore.location": str(self.dir / "truststore.jks"),
            "ssl.truststore.type": "JKS",
            "ssl.truststore.password": store,
        }

    # ------------------------------------------------ native KRaft (sandbox up --kraft)
    def _kraft_common(self, node_id: int) -> dict[str, str]:
        """What every node of a secured KRaft sandbox runs: StandardAuthorizer (ACLs in the metadata log), ``admin``
        the super user and every node's own identity, PLAIN as admin on the controller listener, the TLS stores."""
        props = {
            "authorizer.class.name": STANDARD_AUTHORIZER,
            "allow.everyone.if.no.acl.found": "false",
            "super.users": "User:admin",
            "sasl.mechanism.controller.protocol": CONTROLLER_MECHANISM,
        }
        if uses_tls(self.security):
            props.update(self._server_stores(node_id))
        return props

    def kraft_controller_properties(self, node_id: int, listener: str = "CONTROLLER") -> dict[str, str]:
        """The security part of a KRaft controller's server.properties: its controller listener SASL_SSL (or
        SASL_PLAINTEXT) with PLAIN, accepting ``admin`` (the nodes themselves) and ``kmigrate``."""
        accepted = {u: self.password(u) for u in CONTROLLER_USERS}
        name = listener.lower()
        return {
            "listener.security.protocol.map": f"{listener}:{protocol(self.security)}",
            **self._kraft_common(node_id),
            f"listener.name.{name}.sasl.enabled.mechanisms": CONTROLLER_MECHANISM,
            f"listener.name.{name}.{CONTROLLER_MECHANISM.lower()}.sasl.jaas.config":
                plain_jaas_line("admin", self.password("admin"), accepted),
        }

    def kraft_broker_properties(self, node_id: int, address: str, listener: str = "CONTROLLER") -> dict[str, str]:
        """The security part of a KRaft broker's server.properties: its one listener SASL_SSL (or SASL_PLAINTEXT)
        with SCRAM-SHA-512, also the inter-broker one (as ``admin``); PLAIN as ``admin`` towards the controllers."""
        proto = protocol(self.security)
        return {
            "listeners": f"{proto}://{address}",
            "advertised.listeners": f"{proto}://{address}",
            "listener.security.protocol.map": f"{proto}:{proto},{listener}:{proto}",
            "inter.broker.listener.name": proto,
            **self._kraft_common(node_id),
            "sasl.enabled.mechanisms": MECHANISM,
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            f"listener.name.{proto.lower()}.{MECHANISM.lower()}.sasl.jaas.config": jaas_line("admin", self.password("admin")),
            f"listener.name.{listener.lower()}.{CONTROLLER_MECHANISM.lower()}.sasl.jaas.config":
                plain_jaas_line("admin", self.password("admin")),
        }

    def scram_arguments(self) -> list[str]:
        """``kafka-storage format --add-scram`` values: every Kafka user's SCRAM-SHA-512 credential, written into the
        metadata log when the quorum starts (secrets: only ever in a 0600 argument file, never on a command line)."""
        return [f"{MECHANISM}=[name={u},password={self.password(u)}]" for u in USERS]

    def controller_properties_file(self, user: str) -> Path:
        """The ``--controller-command-config`` file of ``user`` (``admin`` or ``kmigrate``): PLAIN on the
        controller listener."""
        return self.dir / f"{user}-controller.properties"

    def controller_client_properties(self, user: str) -> dict[str, str]:
        props = {"security.protocol": protocol(self.security), "sasl.mechanism": CONTROLLER_MECHANISM,
                 "sasl.jaas.config": plain_jaas_line(user, self.password(user))}
        if uses_tls(self.security):
            props.update({"ssl.truststore.location": str(self.dir / "truststore.jks"), "ssl.truststore.type": "JKS",
                          "ssl.truststore.password": self.password("store")})
        return props

    def controller_librdkafka(self, user: str = "admin") -> dict[str, str]:
        """``user``'s settings on the controller listener in librdkafka's names (the sandbox's own DescribeQuorum)."""
        conf = {"security.protocol": protocol(self.security), "sasl.mechanisms": CONTROLLER_MECHANISM,
                "sasl.username": user, "sasl.password": self.password(user)}
        if uses_tls(self.security):
            conf["ssl.ca.location"] = str(self.dir / "ca.pem")
        return conf

    # --------------------------------------------------------- client side
    def client_properties(self, user: str) -> dict[str, str]:
        """A Java client's properties for ``user`` (JKS stores, as an operator's client.properties)."""
        props = {"security.protocol": protocol(self.security)}
        if uses_sasl(self.security):
            props["sasl.mechanism"] = MECHANISM
            props["sasl.jaas.config"] = jaas_line(user, self.password(user))
        if uses_tls(self.security):
            store = self.password("store")
            props.update({"ssl.truststore.location": str(self.dir / "truststore.jks"), "ssl.truststore.type": "JKS",
                          "ssl.truststore.password": store})
        if self.security == "mtls":
            store = self.password("store")
            props.update({"ssl.keystore.location": str(self.dir / f"{user}.keystore.jks"), "ssl.keystore.type": "JKS",
                          "ssl.keystore.password": store, "ssl.key.password": store})
        return props

    def librdkafka(self, user: str = "admin") -> dict[str, str]:
        """librdkafka settings of ``user`` (PEM files): the sandbox's own probes and record writers."""
        conf = {"security.protocol": protocol(self.security)}
        if uses_sasl(self.security):
            conf.update({"sasl.mechanisms": MECHANISM, "sasl.username": user, "sasl.password": self.password(user)})
        if uses_tls(self.security):
            conf["ssl.ca.location"] = str(self.dir / "ca.pem")
        if self.security == "mtls":
            conf["ssl.certificate.location"] = str(self.dir / f"{user}.cert.pem")
            conf["ssl.key.location"] = str(self.dir / f"{user}.key.pem")
        return conf

    def secret_values(self) -> list[str]:
        """Every password and private key (PEM body lines) of this sandbox: what must never leak."""
        values = list(self.secrets.values())
        for pem in sorted(self.dir.glob("*.key.pem")):
            values += [ln for ln in pem.read_text().splitlines() if ln and not ln.startswith("-----")]
        return values


def create(security: str, directory: Path, brokers: list[tuple[int, str]],
           zookeepers: list[tuple[int, str]] = (), kraft: bool = False) -> SandboxSecurity:
    """Make every file of a secured sandbox in ``directory`` for ``brokers`` (id, host; a KRaft sandbox's
    controllers among them); ``kraft``: also the controller listener's client files."""
    (check_kraft_security if kraft else check_security)(security)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    names = (*USERS, "store") if kraft else (*USERS, "store", "zk_kafka", "zk_super")
    passwords = {u: secrets.token_urlsafe(18) for u in names}
    write_private(directory / SECRETS_FILE, json.dumps(passwords, indent=2, sort_keys=True))
    sec = SandboxSecurity(security, directory)
    if not kraft:  # ZooKeeper's logins
        _write_zookeeper_logins(sec, passwords)
    if uses_tls(security):
        _write_certificates(sec, brokers, passwords["store"], zookeepers)
    for user in USERS:
        write_private(sec.properties_file(user), _properties_text(sec.client_properties(user)))
    if kraft:
        for user in CONTROLLER_USERS:
            write_private(sec.controller_properties_file(user), _properties_text(sec.controller_client_properties(user)))
    if zookeepers:  # --zookeeper-tls
        write_private(sec.zookeeper_tls_client_file, _properties_text(sec.zookeeper_tls_client_config()))
    return sec


def _write_zookeeper_logins(sec: SandboxSecurity, passwords: dict[str, str]) -> None:
    write_private(sec.zookeeper_auth_file, f"{ZK_SUPER_USER}:{passwords['zk_super']}\n")
    write_private(sec.zookeeper_jaas, "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                                      f'  user_{ZK_BROKER_USER}="{passwords["zk_kafka"]}";\n}};\n')
    write_private(sec.broker_zookeeper_jaas, "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                                             f'  username="{ZK_BROKER_USER}"\n  password="{passwords["zk_kafka"]}";\n}};\n')


def _write_certificates(sec: SandboxSecurity, brokers: list[tuple[int, str]], store_password: str,
                        zookeepers: list[tuple[int, str]] = ()) -> None:
    import jks
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kmigrate sandbox CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=30))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
          .sign(ca_key, hashes.SHA256()))

    def issue(common_name: str, host: str | None):
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
                   .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=30))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True))
        if host is not None:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host)), x509.DNSName("localhost")]),
                critical=False)
        return key, builder.sign(ca_key, hashes.SHA256())

    der = lambda c: c.public_bytes(serialization.Encoding.DER)  # noqa: E731
    (sec.dir / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    trust = jks.KeyStore.new("jks", [jks.TrustedCertEntry.new("kmigrate-sandbox-ca", der(ca))])
    write_private(sec.dir / "truststore.jks", trust.saves(store_password))
    encryption = serialization.BestAvailableEncryption(store_password.encode())
    for broker_id, host in brokers:
        key, cert = issue("broker", host)
        write_private(sec.dir / f"kafka-{broker_id}.keystore.p12",
                      pkcs12.serialize_key_and_certificates(b"broker", key, cert, [ca], encryption))
    for zk_id, host in zookeepers:  # --zookeeper-tls: the secureClientPort's certificate
        key, cert = issue("zookeeper", host)
        write_private(sec.zookeeper_keystore(zk_id),
                      pkcs12.serialize_key_and_certificates(b"zookeeper", key, cert, [ca], encryption))
    if sec.security != "mtls":
        return
    for user in USERS:
        key, cert = issue(user, None)
        pkcs8 = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption())
        store = jks.KeyStore.new("jks", [jks.PrivateKeyEntry.new(user, [der(cert), der(ca)], pkcs8, "pkcs8")])
        write_private(sec.dir / f"{user}.keystore.jks", store.saves(store_password))
        write_private(sec.dir / f"{user}.key.pem", key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        (sec.dir / f"{user}.cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def load(security: str, directory: Path) -> SandboxSecurity | None:
    """The security of an existing sandbox (None for a plaintext one)."""
    return None if security == "plaintext" else SandboxSecurity(security, directory)
