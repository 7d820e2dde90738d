"""Adapters: the only modules that talk to ZooKeeper, Kafka or Spark."""
