"""Kafka protocol messages kafka-python does not ship, declared from Kafka's own JSON schemas (the files beside this
module, copied unchanged from apache/kafka ``clients/src/main/resources/common/message/`` at 3.9.0, commit
dd5272687e8adf9e79e3e329b1b3d2524afb6020; the same on trunk of 2024-10 and still valid on 4.x: each is version 0).

- AddRaftVoter (API key 80) and RemoveRaftVoter (81): KIP-853, Kafka 3.9+; a controller answers them on its
  controller listener, a broker forwards them to the active controller.
- UnregisterBroker (64): KIP-500; retires a broker's registration.

kafka-python 3.0 generates its message classes from such schemas; the metaclass keyword ``load_json=<package>``
makes it read them from this package instead of its own. That keyword, ``ApiMessage`` and the one-connection path
that sends them (:mod:`migrate.adapters.kafka.quorum`) are kafka-python internals, not its public API: pyproject.toml
pins kafka-python to the 3.0 line for them, and ``tests/unit/adapters/kafka/test_voter_messages.py`` encodes and
decodes each message so that a kafka-python that changes them fails in the unit tests, not against a cluster.
"""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

KAFKA_SCHEMA_VERSION = "3.9.0"


class AddRaftVoterRequest(ApiMessage, load_json=__name__): pass
class AddRaftVoterResponse(ApiMessage, load_json=__name__): pass
class RemoveRaftVoterRequest(ApiMessage, load_json=__name__): pass
class RemoveRaftVoterResponse(ApiMessage, load_json=__name__): pass
class UnregisterBrokerRequest(ApiMessage, load_json=__name__): pass
class UnregisterBrokerResponse(ApiMessage, load_json=__name__): pass


__all__ = [
    "AddRaftVoterRequest", "AddRaftVoterResponse", "RemoveRaftVoterRequest", "RemoveRaftVoterResponse",
    "UnregisterBrokerRequest", "UnregisterBrokerResponse",
]
