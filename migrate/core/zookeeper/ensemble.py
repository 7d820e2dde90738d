"""ZooKeeper dynamic configuration, pure: parse, render, plan and judge a membership change.

A dynamic config is what ``/zookeeper/config`` holds (ZooKeeper 3.5+)::

    server.1=zk1:2888:3888:participant;0.0.0.0:2181
    server.2=zk2:2888:3888:participant;zk2:2181
    version=100000000

``version`` is the hex zxid of the transaction that committed it; ``reconfig`` wants it back as an
integer (``from_config``) so that a change is applied only to the config it was computed from.

The rules here are the ones that keep a quorum system safe while its voters are replaced:

* joiners start as observers of the last committed config (never as participants: several
  joiners listed as participants can elect a leader of their own, a split brain), with ids
  greater than every current id;
* the target config must be able to form a quorum from servers that are up and in sync;
* done one server at a time (``--step-by-step``), every step keeps a majority of the config it
  leaves and of the config it enters, so the two always share a member that saw every commit.

No I/O, no clock: the adapters read the ensemble, the runner sequences the change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from migrate.core.units import parse_connect, split_host_port
from migrate.errors import BadInput

PARTICIPANT = "participant"
OBSERVER = "observer"
ROLES = (PARTICIPANT, OBSERVER)
MIN_VERSION = (3, 5, 0)  # dynamic reconfiguration appeared in ZooKeeper 3.5.0
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "0:0:0:0:0:0:0:0"})
"""Client hosts that mean "every address": clients then reach the server at its quorum host."""

_SERVER_KEY = re.compile(r"^\s*server\.(\d+)\s*=\s*(.*?)\s*$")
_INLINE = re.compile(r"^\s*(?:server\.)?(\d+)\s*=\s*(.+?)\s*$")


class ConfigError(BadInput, ValueError):
    """A config line, a server spec or a requested change that cannot be used (message says why)."""


class Problem(str):
    """A refusal or a failed check: the one-line sentence an operator reads, with a stable ``code``
    that code decides on (never the wording)."""

    code: str

    def __new__(cls, code: str, message: str) -> "Problem":
        self = super().__new__(cls, message)
        self.code = code
        return self


# ------------------------------------------------------------------ addresses
def bracket(host: str) -> str:
    """An IPv6 address gets its brackets back for ``host:port`` texts; other hosts stay as they are."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def address_key(address: str) -> str:
    """One spelling of ``host:port`` (lower case, IPv6 in brackets, 2181 when no port) to compare addresses."""
    host, port = split_host_port(address.strip(), 2181, "address")
    return f"{bracket(host.lower())}:{port}"


def split_connect(connect: str) -> tuple[str, str]:
    """``h1:2181,h2:2181/kafka`` -> (``h1:2181,h2:2181``, ``/kafka``); hosts without a port get 2181."""
    hosts, chroot = parse_connect(connect, "--zookeeper")
    return ",".join(f"{bracket(h)}:{p}" for h, p in hosts), chroot


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


def _port(text: str, what: str, context: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ConfigError(f"{context}: {what} {text!r} is not a port number")
    return int(text)


def _split_address(addr: str, context: str) -> tuple[str, list[str]]:
    """``host:p1:p2[:role]`` (host possibly ``[v6]``) -> (host without brackets, [p1, p2, role?])."""
    addr = addr.strip()
    if "|" in addr:
        raise ConfigError(f"{context}: multiple addresses per server (a|b) are not supported by kmigrate")
    if addr.startswith("["):
        end = addr.find("]")
        if end < 0:
            raise ConfigError(f"{context}: unclosed [ in an IPv6 address")
        host, rest = addr[1:end], addr[end + 1 :]
        parts = rest.split(":")[1:] if rest.startswith(":") else None
        if parts is None:
            raise ConfigError(f"{context}: expected [address]:quorumPort:electionPort")
        return host, parts
    head = addr.split(":")
    return head[0], head[1:]


# --------------------------------------------------------------------- server
@dataclass(frozen=True, order=True, slots=True)
class Server:
    """One ZooKeeper server: a ``server.N`` entry of a dynamic config, of a playbook or of a plan.

    ``server.4=10.0.0.4:2888:3888:participant;0.0.0.0:2181`` is
    ``Server(4, "10.0.0.4", 2888, 3888, 2181, "0.0.0.0", "participant")``. Hosts are kept without
    IPv6 brackets (the texts put them back). ``client_port`` None: the line gave no client address.
    ``client_host`` None: the line gave only a port (ZooKeeper then listens on every address);
    clients reach the server at ``host`` in that case, as they do for a wildcard such as ``0.0.0.0``.
    """

    id: int
    host: str
    quorum_port: int = 2888
    election_port: int = 3888
    client_port: int | None = 2181
    client_host: str | None = None
    role: str = PARTICIPANT

    @property
    def is_voter(self) -> bool:
        return self.role == PARTICIPANT

    def line(self) -> str:
        """The config line, e.g. ``server.4=zk4:2888:3888:observer;zk4:2181`` (zkCli's ``-add`` takes it too)."""
        out = f"server.{self.id}={bracket(self.host)}:{self.quorum_port}:{self.election_port}:{self.role}"
        if self.client_port is not None:
            out += f";{bracket(self.client_host)}:{self.client_port}" if self.client_host else f";{self.client_port}"
        return out

    @property
    def client_address(self) -> str | None:
        """Where clients connect: ``host:port`` (the quorum host when the line says 0.0.0.0 or no host)."""
        if self.client_port is None:
            return None
        host = self.client_host
        if host is None or host in WILDCARD_HOSTS:
            host = self.host
        return f"{bracket(host)}:{self.client_port}"

    def with_role(self, role: str) -> "Server":
        return replace(self, role=role)

    def described(self) -> "Server":
        """A server an operator described (playbook, plan): without a client host, its client port
        binds the server's own host, and the lines ZooKeeper gets say so."""
        return self if self.client_host or self.client_port is None else replace(self, client_host=self.host)

    def same_member(self, other: "Server") -> bool:
        """Same id, same addresses and ports (the role may differ)."""
        return (self.id, self.host, self.quorum_port, self.election_port, self.client_port, self.client_address) == (
            other.id, other.host, other.quorum_port, other.election_port, other.client_port, other.client_address
        )


def parse_server_value(server_id: int, value: str, context: str) -> Server:
    """Parse the right side of ``server.N=`` (``host:q:e[:role][;[clientHost:]clientPort]``)."""
    addr, semi, client = value.partition(";")
    host, parts = _split_address(addr, context)
    if not host:
        raise ConfigError(f"{context}: no host before the ports")
    if len(parts) not in (2, 3):
        raise ConfigError(f"{context}: expected host:quorumPort:electionPort[:role]")
    role = parts[2].strip().lower() if len(parts) == 3 else PARTICIPANT
    if role not in ROLES:
        raise ConfigError(f"{context}: role {role!r} is neither participant nor observer")
    quorum = _port(parts[0].strip(), "quorum port", context)
    election = _port(parts[1].strip(), "election port", context)
    client_port = client_host = None
    if semi:
        client = client.strip()
        if client.isdigit():
            client_port = _port(client, "client port", context)
        else:
            try:
                client_host, client_port = split_host_port(client, None, "client address", context)
            except BadInput:
                raise ConfigError(f"{context}: client address {client!r} is not [clientHost:]clientPort "
                                  "with a client port number") from None
    return Server(server_id, host, quorum, election, client_port, client_host, role)


def parse_server_line(line: str) -> Server:
    """Parse ``server.N=host:q:e[:role][;[clientHost:]clientPort]``.

    >>> parse_server_line("server.4=zk4:2888:3888:observer;0.0.0.0:2181").client_address
    'zk4:2181'
    """
    m = _SERVER_KEY.match(line)
    if not m:
        raise ConfigError(f"{line.strip()!r} is not a server.N=... line")
    return parse_server_value(int(m.group(1)), m.group(2), line.strip())


def parse_server_spec(text: str) -> Server:
    """An ``--add`` item in ZooKeeper's syntax: ``4=host:quorumPort:electionPort;[clientHost:]clientPort``.

    ``server.`` in front is accepted; a role, if written, is ignored: kmigrate sets it (observer in a
    joiner's config, participant in the target). The client port is required (clients and kmigrate's
    checks connect there).
    """
    m = _INLINE.match(text)
    if not m:
        raise ConfigError(f"{text.strip()!r}: expected id=host:quorumPort:electionPort;[clientHost:]clientPort")
    server = parse_server_value(int(m.group(1)), m.group(2), text.strip())
    if server.client_port is None:
        raise ConfigError(f"{text.strip()!r}: add the client port after a semicolon, like ;2181 or ;host:2181")
    if server.id <= 0:
        raise ConfigError(f"{text.strip()!r}: server ids are positive integers")
    return server.with_role(PARTICIPANT)


# --------------------------------------------------------------------- config
@dataclass(frozen=True)
class DynamicConfig:
    """The servers of a dynamic config (sorted by id) and its version (None when not known)."""

    servers: tuple[Server, ...]
    version: int | None = None

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.servers, key=lambda s: s.id))
        ids = [s.id for s in ordered]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"server ids repeat in {ids}")
        object.__setattr__(self, "servers", ordered)

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(s.id for s in self.servers)

    @property
    def voters(self) -> tuple[Server, ...]:
        return tuple(s for s in self.servers if s.is_voter)

    @property
    def voter_ids(self) -> tuple[int, ...]:
        return tuple(s.id for s in self.voters)

    @property
    def observer_ids(self) -> tuple[int, ...]:
        return tuple(s.id for s in self.servers if not s.is_voter)

    def get(self, server_id: int) -> Server | None:
        return next((s for s in self.servers if s.id == server_id), None)

    @property
    def version_hex(self) -> str | None:
        return None if self.version is None else format(self.version, "x")

    def lines(self) -> list[str]:
        return [s.line() for s in self.servers]

    def render(self, with_version: bool = True) -> str:
        out = self.lines()
        if with_version and self.version is not None:
            out.append(f"version={self.version_hex}")
        return "\n".join(out) + "\n"

    def members(self) -> frozenset[tuple[int, str]]:
        """(id, role) pairs: what decides whether two configs are the same membership."""
        return frozenset((s.id, s.role) for s in self.servers)

    def same_membership(self, other: "DynamicConfig") -> bool:
        return self.members() == other.members() and all(
            s.same_member(o) for s in self.servers if (o := other.get(s.id)) is not None
        )

    def connect_string(self, voters_only: bool = True, chroot: str = "") -> str:
        """Client connect string of the voters (or all servers), plus a chroot such as ``/kafka``."""
        servers = self.voters if voters_only else self.servers
        return ",".join(s.client_address for s in servers if s.client_address) + chroot


@dataclass(frozen=True)
class Dialing:
    """Where kmigrate reaches each server: its client port, or, with TLS (``--zk-client-config``), its
    secureClientPort. ZooKeeper's dynamic config records only the plaintext client port, so over TLS every
    server is dialled on its own host at the one port of the connect string's servers (``--zookeeper``).

    >>> d = Dialing.of("zk1:2281,zk2:2281", tls=True)
    >>> d.address(parse_server_line("server.4=zk4:2888:3888:observer;0.0.0.0:2181"))
    'zk4:2281'
    >>> Dialing.of("zk1:2181", tls=False).address(parse_server_line("server.4=zk4:2888:3888;2181"))
    'zk4:2181'
    """

    secure_port: int | None = None

    @classmethod
    def of(cls, hosts: str, tls: bool) -> "Dialing":
        if not tls:
            return cls()
        ports = sorted({split_host_port(h, 2181, "--zookeeper")[1] for h in hosts.split(",") if h.strip()})
        if len(ports) != 1:
            raise BadInput(f"--zookeeper {hosts}: with --zk-client-config (TLS) kmigrate reaches every server at the "
                           f"connect string's one secureClientPort, and these servers give {len(ports)} ports "
                           f"({', '.join(map(str, ports))}): give the servers' common secureClientPort")
        return cls(ports[0])

    @property
    def secure(self) -> bool:
        return self.secure_port is not None

    def address(self, server: Server) -> str | None:
        """``host:port`` kmigrate dials for ``server`` (sessions and four-letter words); None when it has none."""
        if self.secure_port is None:
            return server.client_address
        host = server.client_host if server.client_host and server.client_host not in WILDCARD_HOSTS else server.host
        return f"{bracket(host)}:{self.secure_port}"

    def addresses(self, servers) -> list[str]:
        return list(dict.fromkeys(a for s in servers if (a := self.address(s))))

    def connect_string(self, config: DynamicConfig, voters_only: bool = True, chroot: str = "") -> str:
        """The voters' (or all servers') connect string in the form kmigrate dials, plus a chroot."""
        return ",".join(self.addresses(config.voters if voters_only else config.servers)) + chroot


def parse_config(text: str) -> DynamicConfig:
    """Parse the content of ``/zookeeper/config`` (or a dynamic config file).

    >>> parse_config("server.1=a:2888:3888:participant;a:2181\\nversion=100000000\\n").version
    4294967296
    """
    servers: list[Server] = []
    version: int | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("version="):
            try:
                version = int(line.split("=", 1)[1].strip(), 16)
            except ValueError:
                raise ConfigError(f"{line!r}: the version is not a hexadecimal number") from None
            continue
        if line.startswith("server."):
            servers.append(parse_server_line(line))
            continue
        # other keys (static settings in a combined config) are not ours to judge
    return DynamicConfig(tuple(servers), version)


# ----------------------------------------------------------------- the change
def quorum_size(voters: int) -> int:
    """Votes a config of ``voters`` participants needs to commit (a strict majority)."""
    return voters // 2 + 1


def tolerated_failures(voters: int) -> int:
    return max(0, voters - quorum_size(voters))


@dataclass(frozen=True)
class Change:
    """What the operator asked for: servers to add as voters, ids to remove."""

    add: tuple[Server, ...]
    remove: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "add", tuple(sorted(self.add, key=lambda s: s.id)))
        object.__setattr__(self, "remove", tuple(sorted(set(self.remove))))

    @property
    def add_ids(self) -> tuple[int, ...]:
        return tuple(s.id for s in self.add)


def validate_change(change: Change) -> None:
    """Errors in the request itself, before looking at any ensemble."""
    if not change.add and not change.remove:
        raise ConfigError("nothing to do: give --add and/or --remove")
    ids = change.add_ids
    if len(set(ids)) != len(ids):
        raise ConfigError(f"--add lists a server id twice: {list(ids)}")
    both = sorted(set(ids) & set(change.remove))
    if both:
        raise ConfigError(f"server {both[0]} is both added and removed: give each id to one of --add/--remove")
    for s in change.add:
        if s.id <= 0:
            raise ConfigError(f"server id {s.id}: ZooKeeper server ids are positive integers")


def target_config(committed: DynamicConfig, change: Change) -> DynamicConfig:
    """The config the change leads to: committed servers not removed, plus the added ones as voters.

    Idempotent: ``target_config(target_config(c, ch), ch)`` has the same membership, so a rerun
    after success (or after a partial step-by-step run) aims at the same config.
    """
    by_id = {s.id: s for s in committed.servers if s.id not in change.remove}
    for s in change.add:
        by_id[s.id] = s.with_role(PARTICIPANT)
    return DynamicConfig(tuple(by_id.values()), None)


def is_reached(committed: DynamicConfig, target: DynamicConfig) -> bool:
    """True when the committed config already is the target membership (same ids, roles, addresses)."""
    return committed.same_membership(target)


def joiner_config(committed: DynamicConfig, joiners: tuple[Server, ...]) -> DynamicConfig:
    """The dynamic config a joiner starts with: the committed servers plus every joiner as an observer.

    A joiner already in the committed config keeps its committed line.

    >>> c = parse_config("server.1=a:1:2:participant;a:3\\nversion=1")
    >>> joiner_config(c, (Server(4, "d", 1, 2, client_port=3),)).lines()[-1]
    'server.4=d:1:2:observer;3'
    """
    by_id = {s.id: s for s in committed.servers}
    for j in joiners:
        if j.id not in by_id:
            by_id[j.id] = j.with_role(OBSERVER)
    return DynamicConfig(tuple(by_id.values()), None)


def joiners_of(committed: DynamicConfig, change: Change) -> tuple[Server, ...]:
    """Added servers that are not yet voters of the committed config (they must be up and in sync)."""
    return tuple(s for s in change.add if not ((c := committed.get(s.id)) is not None and c.is_voter))


# problem codes: what code decides on (the sentences may change, the codes do not)
CONFLICTING_MEMBER = "conflicting-member"  # an added id is in the committed config with other addresses
JOINER_ID_ORDER = "joiner-id-order"  # a new server's id is not above every current id
NO_VOTER = "no-voter"  # the target has no voter
NOT_TARGET = "not-target"  # the committed config is not the target
REMOVED_STILL_IN = "removed-still-in"
NO_LEADER = "no-leader"  # no leader among the new voters
NOT_IN_SYNC = "not-in-sync"  # voters not in sync with the leader


def low_joiner_ids(current_ids: tuple[int, ...] | list[int], joiner_ids: tuple[int, ...] | list[int]) -> tuple[int, list[int]]:
    """The joiner id rule: a new server's id must be above every id that stays. Returns the highest
    current id that is not a joiner and the new joiners (not in ``current_ids``) at or below it."""
    top = max((i for i in current_ids if i not in joiner_ids), default=0)
    return top, [j for j in joiner_ids if j not in current_ids and j <= top]


def check_change(committed: DynamicConfig, change: Change) -> list[Problem]:
    """Refusals (each a one-line reason with a code) for applying ``change`` to ``committed``; [] when allowed.

    Call only when the target is not already reached (a finished change is not refused).
    """
    problems: list[Problem] = []
    target = target_config(committed, change)
    for s in change.add:
        present = committed.get(s.id)
        if present is not None and not present.same_member(s):
            problems.append(Problem(
                CONFLICTING_MEMBER,
                f"server {s.id} is in the committed config as {present.line()!r}, not {s.line()!r}: "
                "use a new id for a new server, or the same addresses to promote it"
            ))
    top, low = low_joiner_ids(committed.ids, change.add_ids)
    for sid in low:
        problems.append(Problem(
            JOINER_ID_ORDER,
            f"joiner id {sid} is not greater than every current id {list(committed.ids)}: "
            f"give new servers ids above {top}"
        ))
    if not target.voters:
        problems.append(Problem(NO_VOTER, "the change leaves no voter: keep or add at least one server"))
    return problems


def voter_count_risk(voters: int) -> str | None:
    """The voter-count rule: ``none`` (0 voters), ``one``, ``two`` (a quorum needs both), ``even``
    (4, 6...: no more fault tolerance than one voter less), or None (an odd number from 3)."""
    if voters == 0:
        return "none"
    if voters == 1:
        return "one"
    if voters == 2:
        return "two"
    return "even" if voters % 2 == 0 else None


def warnings_for(target: DynamicConfig) -> list[str]:
    """What an operator should know about the target's fault tolerance."""
    n = len(target.voters)
    risk = voter_count_risk(n)
    if risk == "one":
        return ["the new ensemble has 1 voter: it tolerates no failure; add voters soon"]
    if risk == "two":
        return ["the new ensemble has 2 voters, which tolerate no failure (a quorum needs both): add a third voter soon"]
    if risk == "even":
        f = tolerated_failures(n)
        return [f"the new ensemble has {n} voters, which tolerate {f} failure{'s' if f != 1 else ''}, "
                f"no more than {n - 1} voters would: use an odd number of voters"]
    return []


def quorum_problem(target: DynamicConfig, synced_ids: set[int] | frozenset[int]) -> str | None:
    """Why the target cannot form a quorum from the servers that are up and in sync, or None.

    ZooKeeper refuses such a reconfig itself (NewConfigNoQuorum); kmigrate says it first.
    """
    voters = target.voter_ids
    ready = [i for i in voters if i in synced_ids]
    need = quorum_size(len(voters))
    if len(ready) < need:
        missing = [i for i in voters if i not in synced_ids]
        return (
            f"the new config's voters {list(voters)} need {need} up and in sync to form a quorum, "
            f"only {ready or 'none'} are: servers {missing} are missing or behind"
        )
    return None


def keeps_majority(old: DynamicConfig, new: DynamicConfig) -> bool:
    """True when the voters common to both are a majority of each (the single-step safety rule)."""
    common = set(old.voter_ids) & set(new.voter_ids)
    return len(common) >= quorum_size(len(old.voters)) and len(common) >= quorum_size(len(new.voters))


def joiner_participant_problem(
    joiner_id: int, reported: DynamicConfig, committed: DynamicConfig, joiner_ids: tuple[int, ...]
) -> str | None:
    """Why a joiner's own config (its ``conf`` membership) is dangerous, or None.

    A joiner that adopted the committed config reports exactly it. One that reports another
    membership listing joiners as participants was started as (or became) a voter of a config of
    its own: several such joiners can elect a leader among themselves (split brain).
    """
    if reported.same_membership(committed):
        return None
    listed = [s.id for s in reported.voters if s.id in joiner_ids and (committed.get(s.id) is None or not committed.get(s.id).is_voter)]
    if listed:
        return (
            f"joiner {joiner_id} runs with a config that lists {', '.join(map(str, listed))} as "
            f"participant{'s' if len(listed) > 1 else ''} (not the committed config, version "
            f"{committed.version_hex}): joiners must start as observers of the committed config, or they can "
            f"form an ensemble of their own; restart it (with an empty data dir) from "
            f"'kmigrate zookeeper joiner-config {joiner_id}'"
        )
    return None


# --------------------------------------------------------- reconfig requests
@dataclass(frozen=True)
class Reconfig:
    """One incremental reconfig: servers joining (full lines) and ids leaving, guarded by ``from_version``."""

    joining: tuple[Server, ...]
    leaving: tuple[int, ...]
    from_version: int | None = None

    @property
    def joining_arg(self) -> str | None:
        return ",".join(s.line() for s in self.joining) or None

    @property
    def leaving_arg(self) -> str | None:
        return ",".join(str(i) for i in self.leaving) or None

    def zkcli(self, server: str | None = None) -> str:
        """The same reconfig as a zkCli command (``-v`` takes the version in hex, like the config).

        With ``server``, the shell command (``zkCli.sh -server S reconfig ... -add '...'``); without,
        the command as typed at zkCli's prompt (``reconfig ... -add ...``, what a plan shows).
        """
        parts = ["reconfig"] if server is None else [f"zkCli.sh -server {server} reconfig"]
        if self.from_version is not None:
            parts.append(f"-v {self.from_version:x}")
        if self.leaving:
            parts.append(f"-remove {self.leaving_arg}")
        if self.joining:
            parts.append(f"-add {self.joining_arg}" if server is None else f"-add '{self.joining_arg}'")
        return " ".join(parts)

    def describe(self) -> str:
        bits = []
        if self.joining:
            bits.append("add " + ",".join(str(s.id) for s in self.joining))
        if self.leaving:
            bits.append("remove " + ",".join(map(str, self.leaving)))
        return " and ".join(bits) or "no change"


def apply(committed: DynamicConfig, reconfig: Reconfig) -> DynamicConfig:
    """The config a reconfig would produce (version unknown until ZooKeeper commits it)."""
    by_id = {s.id: s for s in committed.servers if s.id not in reconfig.leaving}
    for s in reconfig.joining:
        by_id[s.id] = s
    return DynamicConfig(tuple(by_id.values()), None)


def single_reconfig(committed: DynamicConfig, target: DynamicConfig) -> Reconfig:
    """The one reconfig from ``committed`` to ``target`` (the procedure's ``-remove 1,2,3 -add ...``)."""
    joining = tuple(
        s for s in target.servers if (c := committed.get(s.id)) is None or c.role != s.role or not c.same_member(s)
    )
    leaving = tuple(i for i in committed.ids if target.get(i) is None)
    return Reconfig(joining, leaving, committed.version)


def next_step(committed: DynamicConfig, target: DynamicConfig, leader_id: int | None = None) -> Reconfig | None:
    """The next one-server reconfig of a ``--step-by-step`` run from ``committed``, or None when done.

    Adds come first (the ensemble grows, so it tolerates more while it changes), then removals,
    the current leader last (one leader election instead of several). Observers that are simply
    dropped or servers that change role count as one step each. Every step keeps a majority of
    the config it leaves (see ``keeps_majority``).
    """
    whole = single_reconfig(committed, target)
    if not whole.joining and not whole.leaving:
        return None
    if whole.joining:
        return Reconfig((whole.joining[0],), (), committed.version)
    # observers first (they never count in a quorum), then voters, the leader last
    observers = [i for i in whole.leaving if not committed.get(i).is_voter]  # type: ignore[union-attr]
    first = min(observers) if observers else min(whole.leaving, key=lambda i: (i == leader_id, i))
    return Reconfig((), (first,), committed.version)


def step_by_step(committed: DynamicConfig, target: DynamicConfig, leader_id: int | None = None) -> list[Reconfig]:
    """Every step of a one-server-at-a-time change (as planned now; the runner re-plans from the cluster)."""
    steps: list[Reconfig] = []
    current = committed
    while (step := next_step(current, target, leader_id)) is not None:
        steps.append(step)
        current = apply(current, step)
        if len(steps) > 2 * (len(committed.servers) + len(target.servers)) + 2:
            raise ConfigError("step-by-step plan does not converge")  # defensive: cannot happen
    return steps


# --------------------------------------------------------------- version rule
def parse_version(text: str) -> tuple[int, ...] | None:
    """``3.8.6-abc`` -> (3, 8, 6); None when unreadable."""
    m = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    if not m:
        return None
    return tuple(int(x) if x is not None else 0 for x in m.groups())


def supports_reconfig(version_text: str | None) -> bool | None:
    """The minimum-version rule: whether a ZooKeeper version can do dynamic reconfiguration
    (3.5.0 or later); None when the version is unknown or unreadable."""
    v = parse_version(version_text or "")
    return None if v is None else v >= MIN_VERSION


def version_problem(server: str, version_text: str) -> str | None:
    """Why a server's version cannot do dynamic reconfiguration, or None."""
    if supports_reconfig(version_text) is False:
        return (
            f"ZooKeeper {server} runs {version_text}: dynamic reconfiguration needs 3.5.0 or later; "
            "upgrade the ensemble first (or replace servers one at a time by rolling restarts)"
        )
    return None


# --------------------------------------------------------- brokers' connects
@dataclass(frozen=True)
class BrokerConnect:
    """A broker and the ZooKeeper servers its ``zookeeper.connect`` names."""

    broker_id: int
    connect: str | None  # None: not known

    @property
    def hosts(self) -> tuple[str, ...]:
        if not self.connect:
            return ()
        hosts_part = self.connect.split("/", 1)[0]
        return tuple(h.strip().lower() for h in hosts_part.split(",") if h.strip())

    @property
    def chroot(self) -> str:
        if not self.connect or "/" not in self.connect:
            return ""
        return "/" + self.connect.split("/", 1)[1].rstrip("/")


@dataclass(frozen=True)
class BrokerVerdict:
    broker_id: int
    connect: str | None
    kept: tuple[int, ...]  # server ids in the target config the broker points at
    removed: tuple[int, ...]  # server ids being removed that the broker points at
    unknown: tuple[str, ...]  # addresses that match no server of either config
    secure_port: bool = False  # some address names a server at the secureClientPort kmigrate dials over TLS

    @property
    def only_removed(self) -> bool:
        return not self.kept and bool(self.removed)

    @property
    def lost(self) -> bool:
        """The broker would point at no server of the target config after the change."""
        return not self.kept


def judge_brokers(
    brokers: list[BrokerConnect],
    committed: DynamicConfig,
    target: DynamicConfig,
    aliases: dict[str, frozenset[str]] | None = None,
    dialing: Dialing | None = None,
) -> list[BrokerVerdict]:
    """Which servers of the target each broker's ``zookeeper.connect`` reaches.

    ``aliases`` maps a ``host:port`` to other spellings of it (resolved IPs), supplied by the adapter.
    Over TLS (``dialing.secure``) a server is also named by its secureClientPort address, as brokers with
    ``zookeeper.ssl.client.enable=true`` name it.
    """
    aliases = aliases or {}

    def spellings(address: str) -> set[str]:
        try:
            a = address_key(address)
        except BadInput:  # a broker's unreadable entry matches nothing: it is reported as unknown
            return {address.strip().lower()}
        return {a} | {address_key(x) for x in aliases.get(a, frozenset())}

    servers: dict[int, set[str]] = {}
    secure: set[str] = set()
    for s in committed.servers + target.servers:
        if s.client_address:
            servers.setdefault(s.id, set()).update(spellings(s.client_address))
        if dialing is not None and dialing.secure and (address := dialing.address(s)):
            secure |= spellings(address)
            servers.setdefault(s.id, set()).update(spellings(address))
    out = []
    for b in brokers:
        kept, removed, unknown, by_secure = set(), set(), [], False
        for h in b.hosts:
            names = spellings(h)
            matched = [i for i, addrs in servers.items() if addrs & names]
            by_secure = by_secure or bool(matched and names & secure)
            if not matched:
                unknown.append(h)
            for i in matched:
                (kept if target.get(i) is not None else removed).add(i)
        out.append(BrokerVerdict(b.broker_id, b.connect, tuple(sorted(kept)), tuple(sorted(removed)), tuple(unknown),
                                 by_secure))
    return out


@dataclass(frozen=True)
class Outcome:
    """The facts after a change, checked against the target (pure judgement of what adapters read)."""

    committed: DynamicConfig
    leader_id: int | None
    synced_voter_ids: frozenset[int] = field(default_factory=frozenset)


def outcome_problems(outcome: Outcome, target: DynamicConfig, removed: tuple[int, ...]) -> list[Problem]:
    """Post-check failures: not the target, leader not a new voter, voters out of sync, removed servers still in."""
    problems = []
    if not is_reached(outcome.committed, target):
        problems.append(Problem(
            NOT_TARGET,
            f"the committed config (version {outcome.committed.version_hex}) has voters {list(outcome.committed.voter_ids)}, "
            f"not the target's {list(target.voter_ids)}"
        ))
    still = [i for i in removed if outcome.committed.get(i) is not None]
    if still:
        problems.append(Problem(REMOVED_STILL_IN, f"removed servers {still} are still in the committed config"))
    if outcome.leader_id is None or outcome.leader_id not in target.voter_ids:
        problems.append(Problem(NO_LEADER, f"no leader among the new voters {list(target.voter_ids)} (leader: {outcome.leader_id})"))
    behind = [i for i in target.voter_ids if i not in outcome.synced_voter_ids]
    if behind:
        problems.append(Problem(NOT_IN_SYNC, f"voters {behind} are not in sync with the leader"))
    return problems
