"""The operator shell: watches fill a cache, one debounced loop runs the core on a snapshot
of it, and the core's decisions are carried out as writes.

Data flows one way: watch -> cache -> snapshot -> core -> decisions -> writes.
Nothing here decides where a pod goes, or who waits; the pure core does. By job:

- `kube/`: the API client, the raw list+watch, Kopf's registrations (no policy).
- `cache.py`, `cache_snapshot.py`, `assumed.py`: what the core sees.
- `loop.py`, `scheduler.py`: when cycles run, and one cycle's orchestration.
- `plans.py` (PlanBook): bookkeeping kept from one cycle to the next.
- `compose.py`, `reports.py`: status and Events composed from the decisions.
- `writes.py`, `binder.py`, `background.py`, `events.py`: every write, in the background.
"""
