"""ZooKeeper dynamic configuration, pure: servers, configs and how kmigrate dials them.

A dynamic config is what ``/zookeeper/config`` holds (ZooKeeper 3.5+)::

    server.1=zk1:2888:3888:participant;0.0.0.0:2181
    server.2=zk2:2888:3888:participant;zk2:2181
    version=100000000

``version`` is the hex zxid of the transaction that committed it; ``reconfig`` wants it back as an
integer (``from_config``) so that a change is applied only to the config it was computed from.

:class:`Server` is one ``server.N`` entry, :class:`DynamicConfig` a whole config (parsed by
:func:`parse_config`, rendered by :meth:`DynamicConfig.render`), :class:`Dialing` where kmigrate
reaches each server (its client port, or its secureClientPort over TLS). The change itself is planned
in :mod:`migrate.core.zookeeper.change`. No I/O, no clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from migrate.core.units import parse_connect, split_host_port
from migrate.errors import BadInput

PARTICIPANT = "participant"
OBSERVER = "observer"
ROLES = (PARTICIPANT, OBSERVER)
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "0:0:0:0:0:0:0:0"})
"""Client hosts that mean "every address": clients then reach the server at its quorum host."""

_SERVER_KEY = re.compile(r"^\s*server\.(\d+)\s*=\s*(.*?)\s*$")
_INLINE = re.compile(r"^\s*(?:server\.)?(\d+)\s*=\s*(.+?)\s*$")


class ConfigError(BadInput, ValueError):
    """A config line, a server spec or a requested change that cannot be used (message says why)."""


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
