"""Time in a cycle: how long gangs may run (runtime limits), who ran past them, and when
waiting gangs are expected to start, played forward from those limits."""
