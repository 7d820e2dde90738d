"""The KIP-853 messages kmigrate declares from Kafka's schemas (migrate.adapters.kafka.messages) encode as Kafka
reads them, and the voters adapter's pure helpers (directory ids, error sentences). A kafka-python that changes the
private schema machinery these rely on fails here, not against a cluster."""

from __future__ import annotations

import doctest
import struct
import uuid

import pytest

from migrate.adapters.kafka import voters
from migrate.adapters.kafka.messages import (
    AddRaftVoterRequest, AddRaftVoterResponse, RemoveRaftVoterRequest, RemoveRaftVoterResponse, UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)
from migrate.core.controllers.quorum import quorum_from_answer
from migrate.errors import BadInput

DIR = uuid.UUID("a6a8e6df-3e64-4f98-93f6-26eb1ddd9a63")


def test_doctests():
    assert doctest.testmod(voters).failed == 0


def test_api_keys_and_versions_are_kafkas():
    assert (AddRaftVoterRequest.API_KEY, RemoveRaftVoterRequest.API_KEY, UnregisterBrokerRequest.API_KEY) == (80, 81, 64)
    for cls in (AddRaftVoterRequest, RemoveRaftVoterRequest, UnregisterBrokerRequest):
        assert cls.max_version == 0 and cls.flexible_version_q(0)


def test_remove_raft_voter_encodes_byte_for_byte():
    request = RemoveRaftVoterRequest(cluster_id=None, voter_id=3, voter_directory_id=DIR)
    request.API_VERSION = 0
    # compact nullable string null (0), int32 voter id, 16 bytes of uuid, no tagged fields (0)
    assert bytes(request.encode()) == b"\x00" + struct.pack(">i", 3) + DIR.bytes + b"\x00"


def test_add_raft_voter_encodes_byte_for_byte():
    request = AddRaftVoterRequest(cluster_id="c", timeout_ms=30000, voter_id=7, voter_directory_id=DIR,
                                  listeners=[AddRaftVoterRequest.Listener(name="CONTROLLER", host="h", port=9093)])
    request.API_VERSION = 0
    expected = (b"\x02c" + struct.pack(">i", 30000) + struct.pack(">i", 7) + DIR.bytes
                + b"\x02" + b"\x0bCONTROLLER" + b"\x02h" + struct.pack(">H", 9093) + b"\x00" + b"\x00")
    assert bytes(request.encode()) == expected


def test_responses_decode():
    for cls in (AddRaftVoterResponse, RemoveRaftVoterResponse, UnregisterBrokerResponse):
        wire = struct.pack(">i", 0) + struct.pack(">h", 126) + b"\x04dup" + b"\x00"
        assert cls.decode(wire, version=0).to_dict() == {"throttle_time_ms": 0, "error_code": 126, "error_message": "dup"}


def test_directory_ids_round_trip_and_refuse_garbage():
    assert voters.parse_kafka_uuid(voters.kafka_uuid(DIR)) == DIR
    with pytest.raises(BadInput, match="not a Kafka id"):
        voters.parse_kafka_uuid("not-an-id")
    # DescribeQuorum's answer as kafka-python decodes it (RFC text or a UUID) read in Kafka's form
    answer = {"topics": [{"partitions": [{"leader_id": 1, "current_voters": [{"replica_id": 1, "replica_directory_id": str(DIR)}],
                                          "observers": [{"replica_id": 7, "replica_directory_id": DIR}]}]}]}
    quorum = quorum_from_answer(answer)
    assert quorum.voter(1).directory_id == quorum.observer(7).directory_id == "pqjm3z5kT5iT9ibrHd2aYw"


def test_errors_are_sentences_and_say_what_to_do():
    for error in ("DUPLICATE_VOTER", "VOTER_NOT_FOUND", "REQUEST_TIMED_OUT", "INVALID_REQUEST", "NO_ANSWER"):
        text = voters._explain(error, "detail", "adding controller 7 to the voters")
        assert text.startswith("adding controller 7 to the voters: ") and "\n" not in text
    assert voters.VoterChangeError("x", "REQUEST_TIMED_OUT").retriable
    assert not voters.VoterChangeError("x", "DUPLICATE_VOTER").retriable
