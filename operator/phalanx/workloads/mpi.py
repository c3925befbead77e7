"""A Kubeflow MPIJob's gang (mpi-operator v2, kubeflow.org/v2beta1): launcher and workers.

mpi-operator's own gang integration (its PodGroup for Volcano or scheduler-plugins) counts
the workers plus one launcher, or `runPolicy.schedulingPolicy.minAvailable`. Phalanx does
the same, except with `launcherCreationPolicy: WaitForWorkersReady`: mpi-operator then
creates the launcher only once every worker is ready, so a gang that waits for the
launcher never starts (mpi-operator issue #608 reports that deadlock with its own
PodGroup). There the gang is the workers alone, and the launcher, when it comes, joins the
same PodGroup as an elastic member, placed next to the running workers. Kueue, which admits
quota rather than placing pods, counts both pod sets in either case.

The roles are mpi-operator's pod label `training.kubeflow.org/job-role`: `launcher` and
`worker`. The priority class is mpi-operator's too: `runPolicy.schedulingPolicy.priorityClass`,
else the launcher's template's, else the workers'.
"""

from __future__ import annotations

from phalanx.core.parse.fields import Reader
from phalanx.workloads.gangs import Gang

LAUNCHER, WORKER = "Launcher", "Worker"  # keys of spec.mpiReplicaSpecs
AT_STARTUP, WAIT_FOR_WORKERS = "AtStartup", "WaitForWorkersReady"


def mpijob_gangs(reader: Reader) -> list[Gang]:
    """One gang: the launcher and the workers, or the workers alone (see the module)."""
    specs = reader.mapping("spec.mpiReplicaSpecs")
    if LAUNCHER not in specs:
        raise reader.error(f"spec.mpiReplicaSpecs.{LAUNCHER}", "missing (an MPIJob has one)")
    launcher = reader.mapping(f"spec.mpiReplicaSpecs.{LAUNCHER}.template")
    workers = reader.integer(f"spec.mpiReplicaSpecs.{WORKER}.replicas", default=0, minimum=0)
    workers = workers or 0
    templates = (launcher, reader.mapping(f"spec.mpiReplicaSpecs.{WORKER}.template"))
    policy = reader.string("spec.launcherCreationPolicy", AT_STARTUP)
    if policy not in (AT_STARTUP, WAIT_FOR_WORKERS):
        message = f"expected {AT_STARTUP!r} or {WAIT_FOR_WORKERS!r}, got {policy!r}"
        raise reader.error("spec.launcherCreationPolicy", message)
    minimum = reader.integer("spec.runPolicy.schedulingPolicy.minAvailable", minimum=1)
    priority = reader.string("spec.runPolicy.schedulingPolicy.priorityClass") or None
    if policy == WAIT_FOR_WORKERS and workers:
        return [Gang(None, minimum or workers, templates, (("worker", workers),), priority)]
    roles = (("launcher", 1), ("worker", workers)) if workers else (("launcher", 1),)
    return [Gang(None, minimum or workers + 1, templates, roles, priority)]
