"""The ``zk2kraft`` command line."""
