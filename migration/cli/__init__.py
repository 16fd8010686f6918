"""The ``zk2kraft`` command line: the top of the layering, it may import every package
and nothing imports it.

Kafka's protocol (kio, through ``migration.kafka`` and ``migration.local``) is
imported only inside the commands that speak it (``broker``, ``cluster start``,
``admin --bootstrap-server``, ``--command-config``, ``demo``, ``migration status
--kafka``), never at module level here: kio registers Hypothesis strategies whenever
Hypothesis is installed (a dev dependency), and Hypothesis then writes ``.hypothesis/``
into the current directory. ``zk2kraft --help`` and every other command leave the
directory they run in alone.
"""
