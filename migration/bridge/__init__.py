"""The ZooKeeper⇄KRaft forms (Kafka's migration clients and propagator): ZooKeeper's tree
translated into records (translate), an image as the znodes Kafka would hold (mirror),
the operations from one view to another (plan), the dual-write ZooKeeper writer (writer),
the full sync (sync), and whether a tree is ready to migrate (preflight). Imports
:mod:`migration.zk`, :mod:`migration.image` and below; never a controller or a broker."""
