"""The KRaft quorum: Raft with Kafka's KIP-595 semantics (pull-based replication,
persisted election state, leader-change records), split into small pieces: the
settings, the persisted quorum state, the log the core writes through, the
transport-free core, and the gRPC event loop that runs it in a process."""
