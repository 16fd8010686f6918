"""Processes assembled (Kafka's KafkaServer, BrokerServer, ControllerServer over
RaftManager): a controller with its driver, a broker of either mode, the Raft assembly
both share, and each process's metric collectors. Imports anything below it; nothing
below imports it."""
