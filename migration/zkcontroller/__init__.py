"""The legacy ZooKeeper controller (Kafka's ``kafka.controller``): what the ZooKeeper-mode
broker that won ``/controller`` does -- its context, the leader and ISR rules, the
channel to each broker and the UpdateMetadata/LeaderAndIsr/StopReplica it sends.
Imports :mod:`migration.zk` and below."""
