"""Generated protobuf and gRPC code: do not edit; run make proto."""
