"""ZooKeeper as Kafka lays it out (Kafka's ``kafka.zk``): the client (a typed facade over
kazoo, pipelined multi-read, batched multi-write, jute), security, Kafka's paths and the
tree's structure, typed znode values (:mod:`model`), the fence (``/controller`` claim,
``/migration``), a whole tree read into a :class:`ZkSnapshot` and rendered back, and a
whole tree copied into an empty ZooKeeper (the development seeder that renders generated
trees is :mod:`migration.local.seed`). ZooKeeper's own files read offline are
:mod:`migration.zkfiles`, above this package. Knows nothing of KRaft: imports
:mod:`migration.records`, :mod:`migration.observability` and :mod:`migration.common`
only."""
