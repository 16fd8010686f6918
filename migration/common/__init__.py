"""The bottom of the house: helpers every package may use, importing nothing of
zk2kraft's but each other -- values quoted in messages (text), files written and read
safely (files), Java ``.properties`` read and edited in place
(properties, properties_edit), JAAS (jaas), TLS and gRPC settings
(tls, rpc), Kafka's error codes and integer limits (kafka_errors, limits), hosts and ports
(ports), bounded JSON input (json_input), and the collector's pause (gc_pause)."""
