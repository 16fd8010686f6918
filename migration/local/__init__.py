"""The child processes behind ``zk2kraft cluster start``, the demo and the tests: a real
ZooKeeper (standalone or an ensemble), a cluster of ZooKeeper-mode brokers and a quorum
of controllers, each a child process with one lifecycle; and real Apache Kafka
(:mod:`.kafka`: the releases `make kafka` installs, its servers and tools) for the tests
that run Kafka itself; and the seeder (:mod:`.seed`), which writes a generated Kafka
cluster's tree into such a ZooKeeper. Imports :mod:`migration.server` and below."""
