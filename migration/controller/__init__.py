"""The quorum controller: Kafka's admin and broker requests turned into metadata records,
committed through Raft, applied to the image; its request handlers and rules, the broker
registry, ``kafka-storage format``'s storage, the gRPC service and its client. Imports
:mod:`migration.bridge` and below; the process around it is :mod:`migration.server`'s."""
