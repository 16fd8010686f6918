"""Kafka's client protocol, both ends (Kafka's ``clients`` and ``KafkaApis``): the wire
format through kio with every length bounded, the listeners (TLS, SASL, socket limits),
the API handlers, the authorizer, and the client and admin client
``zk2kraft admin --bootstrap-server`` uses. Imports :mod:`migration.controller` (its pure
rules and readers) and below; kio is imported only by the modules that speak the wire."""
