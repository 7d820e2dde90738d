"""kmigrate: move a live Kafka cluster and its ZooKeeper ensemble to new nodes, with zero downtime."""

__version__ = "0.1.0"
