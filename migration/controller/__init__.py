"""The quorum controller: Kafka's admin and broker requests turned into metadata
records, committed through Raft, applied to the image; and the controller process."""
