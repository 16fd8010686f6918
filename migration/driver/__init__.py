"""The migration driver: the ZooKeeper-to-KRaft copy (and, later, the state machine
and the dual-write publisher)."""
