"""`kubectl phalanx`: queues, why a gang waits, and the topology, read from the live cluster."""
