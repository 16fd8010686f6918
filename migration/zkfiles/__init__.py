"""ZooKeeper's own files on disk, read offline: a data directory's ``version-2`` files
found and decompressed (datafiles), a snapshot file parsed (snapfile), transaction logs
decoded (txnlog) and replayed onto it (replay), as ZooKeeper restores itself at start-up
(datadir), into an in-memory tree (datatree's :class:`OfflineTree`) that answers the
same reads as a live ZooKeeper, so :mod:`migration.zk`'s reader, tree listing and tree
copy read it as they read a live client. No server, no write: the forensic path, for a
tree whose ensemble is down or must not be touched. Sits just above :mod:`migration.zk`
(its jute encoding and read protocol) and imports it; :mod:`migration.zk` never imports
this package. Knows nothing of KRaft."""
