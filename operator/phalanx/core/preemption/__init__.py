"""Preemption within a queue, reclaim across queues, and starvation reservations:
decided in the cycle, carried out by the shell (see `phalanx.core.preemption.cycle`)."""
