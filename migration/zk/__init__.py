"""Everything zk2kraft knows about ZooKeeper: Kafka's paths and formats, reading, writing."""
