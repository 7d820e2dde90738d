"""Pure ZooKeeper configs: parsing and rendering server lines and dynamic configs, addresses, dialling."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from migrate.errors import BadInput
from migrate.core.zookeeper.auth import parse_auth
from migrate.core.zookeeper.config import (
    OBSERVER,
    PARTICIPANT,
    ConfigError,
    Dialing,
    DynamicConfig,
    Server,
    parse_config,
    parse_server_line,
    parse_server_spec,
    split_connect,
)
from tests.unit.core.zookeeper.conftest import COMMITTED, cfg, srv

ids = st.integers(min_value=1, max_value=40)


# ----------------------------------------------------------------- parsing
def test_parse_committed_config_and_version_as_int():
    c = parse_config(COMMITTED)
    assert c.version == 0x100000000 == 4294967296
    assert c.voter_ids == (1, 2, 3)
    assert c.get(1).client_address == "10.0.0.1:2181"  # 0.0.0.0 means the quorum host
    assert c.get(3).client_host is None and c.get(3).client_address == "10.0.0.3:2181"
    assert c.render() == COMMITTED.replace(";0.0.0.0:2181", ";0.0.0.0:2181")


@pytest.mark.parametrize(
    "line",
    [
        "server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181",
        "server.12=zk-12.example.com:2889:3889:observer;zk-12.example.com:2182",
        "server.7=[2001:db8::7]:2888:3888:participant;[2001:db8::7]:2181",
        "server.3=h:2888:3888:participant;2181",
    ],
)
def test_line_round_trip(line):
    assert parse_server_line(line).line() == line


def test_line_without_role_is_participant_and_without_client_has_no_address():
    s = parse_server_line("server.2=h2:2888:3888")
    assert s.role == PARTICIPANT and s.client_port is None and s.client_address is None


def test_parse_config_of_a_snapshot():
    """Was test_model.test_parse_zookeeper_config: the one parser serves the cluster snapshot too."""
    c = parse_config(
        "server.2=10.0.0.2:2888:3888:participant;0.0.0.0:2181\n"
        "server.1=10.0.0.1:2888:3888:participant;2181\n"
        "server.4=10.0.0.4:2888:3888:observer;10.0.0.4:2181\n"
        "version=100000000\n"
    )
    servers, version = c.servers, c.version
    assert version == 0x100000000
    assert [s.id for s in servers] == [1, 2, 4]
    assert servers[0] == Server(1, "10.0.0.1", 2888, 3888, 2181, None, "participant")
    assert servers[1].client_host == "0.0.0.0" and servers[1].client_address == "10.0.0.2:2181"
    assert servers[2].role == "observer"
    assert servers[2].line() == "server.4=10.0.0.4:2888:3888:observer;10.0.0.4:2181"
    assert servers[2].with_role("participant").line() == "server.4=10.0.0.4:2888:3888:participant;10.0.0.4:2181"


def test_parse_config_errors():
    with pytest.raises(BadInput, match="hexadecimal"):
        parse_config("version=xyz")
    with pytest.raises(BadInput, match="role"):
        parse_config("server.1=h:1:2:boss;2181")


@pytest.mark.parametrize(
    "bad",
    ["server.x=h:1:2", "server.1=h:1", "server.1=h:1:2:leader;2181", "server.1=h:99999:2;2181", "server.1=:1:2;3"],
)
def test_bad_lines_are_refused(bad):
    with pytest.raises(ConfigError):
        parse_server_line(bad)


def test_inline_spec_sets_participant_and_needs_client_port():
    s = parse_server_spec("4=10.0.0.4:2888:3888;2181")
    assert (s.id, s.host, s.quorum_port, s.election_port, s.client_port, s.role) == (4, "10.0.0.4", 2888, 3888, 2181, PARTICIPANT)
    assert parse_server_spec("server.5=h5:1:2:observer;h5c:2181").role == PARTICIPANT  # kmigrate sets the role
    assert parse_server_spec("5=h5:1:2;h5c:2181").client_address == "h5c:2181"
    with pytest.raises(ConfigError, match="client port"):
        parse_server_spec("4=10.0.0.4:2888:3888")
    with pytest.raises(ConfigError):
        parse_server_spec("four=h:1:2;3")


def test_repeated_ids_are_refused():
    with pytest.raises(ConfigError):
        DynamicConfig((srv(1), srv(1, OBSERVER)))


def test_over_tls_every_server_is_dialled_at_the_connect_strings_secure_port():
    committed = parse_config(COMMITTED)
    dial = Dialing.of("10.0.0.1:2281,10.0.0.2:2281", tls=True)
    # 0.0.0.0 and a missing client host fall back to the quorum host; the plaintext port is not used
    assert dial.addresses(committed.servers) == ["10.0.0.1:2281", "10.0.0.2:2281", "10.0.0.3:2281"]
    assert dial.connect_string(committed, chroot="/kafka") == "10.0.0.1:2281,10.0.0.2:2281,10.0.0.3:2281/kafka"
    assert Dialing.of("10.0.0.1:2281,10.0.0.2:2182", tls=False).addresses(committed.servers) == [
        "10.0.0.1:2181", "10.0.0.2:2181", "10.0.0.3:2181"]
    assert Dialing().address(parse_server_line("server.9=h9:2888:3888:participant")) is None
    with pytest.raises(BadInput, match=r"2 ports \(2182, 2281\)"):
        Dialing.of("10.0.0.1:2281,10.0.0.2:2182", tls=True)


@given(st.sets(ids, min_size=1, max_size=9), st.sets(ids, min_size=1, max_size=9))
def test_config_text_round_trip(voters, observers):
    observers = observers - voters
    c = cfg(sorted(voters), sorted(observers), version=0x500000003)
    assert parse_config(c.render()) == c


def test_connect_strings_split_into_hosts_and_chroot():
    from migrate.errors import BadInput

    assert split_connect("zk1:2181,zk2:2182/kafka") == ("zk1:2181,zk2:2182", "/kafka")
    assert split_connect("zk1,[::1]:2181,[::2]") == ("zk1:2181,[::1]:2181,[::2]:2181", "")
    assert split_connect("zk1:2181/") == ("zk1:2181", "")
    assert parse_auth("super:secret") == [("digest", "super:secret")]
    with pytest.raises(BadInput):
        parse_auth("nopassword")
    with pytest.raises(BadInput):
        split_connect(",/kafka")
