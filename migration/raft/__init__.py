"""The KRaft quorum: Raft with Kafka's KIP-595 semantics (pull-based replication,
persisted election state, leader-change records), split into small pieces: the settings,
the persisted election state (Kafka's QuorumStateStore, :mod:`quorum_state_store`), the
log the core writes through, the transport-free core, and the gRPC event loop that runs
it in a process. Imports :mod:`migration.log`, :mod:`migration.observability`,
:mod:`migration.common`."""
