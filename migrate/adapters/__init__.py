"""Adapters: the only modules that talk to ZooKeeper, Kafka or Spark."""

import logging as _logging

# librdkafka's own log lines go to this logger; silent unless a caller configures it.
_logging.getLogger("kmigrate.librdkafka").addHandler(_logging.NullHandler())
