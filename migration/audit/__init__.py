"""The consistency audit: ZooKeeper against the metadata log at the offset ZooKeeper
holds, as normalized rows diffed on Spark. PySpark is imported only in
:mod:`migration.audit.spark_diff` (and lazily, so the rest of the project never needs
it). Imports :mod:`migration.bridge` and below; the command is :mod:`migration.cli`'s."""
