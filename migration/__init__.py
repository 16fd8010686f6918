"""zk2kraft: move a ZooKeeper-based Kafka cluster's metadata to a KRaft quorum."""

__version__ = "0.1.0"
