"""What the working code measures and how it is shown, as a leaf: progress of long work,
latency samples, the metric catalog (every name, type and meaning), Prometheus families
built from it, and the bounded HTTP endpoint behind ``/metrics``. Imports only
:mod:`migration.common`; the collectors that read processes live in
:mod:`migration.server`."""
