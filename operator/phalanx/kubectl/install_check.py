"""`kubectl phalanx install-check`: one report on whether Phalanx is installed and working.

Pure: `install_report` turns what `install_facts.read_facts` read from the cluster into
findings (CRDs, webhooks, the operator's leader, workload kinds, nodes, topology levels),
and `format_report` prints them; a FAIL anywhere makes the command exit 1, so a script or
a CI job can gate on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from phalanx import __version__
from phalanx.kubectl.checks import Check, Status
from phalanx.kubectl.node_check import node_checks, topology_checks
from phalanx.kubectl.webhook_check import WARN_DAYS, WebhookConfiguration, webhook_checks
from phalanx.leader.record import parse_lease
from phalanx.workloads.kinds import WORKLOAD_KINDS

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class InstallFacts:
    """What the report reads, as fetched; no judgement yet."""

    expected_crds: Sequence[Obj]  # this plugin's crds/ (empty: not found beside it)
    crds: Mapping[str, Obj] | None  # installed CRDs by name (None: could not be read)
    webhooks: Sequence[WebhookConfiguration]
    lease_name: str  # NAMESPACE/NAME
    lease: Obj | None
    served: Mapping[str, frozenset[str]]  # group/version -> plurals the API server serves
    group_versions: Mapping[str, tuple[str, ...]]  # group -> versions served
    nodes: Sequence[Obj] | None = ()  # None: could not be read
    topologies: Sequence[Obj] | None = ()  # None: could not be read
    lease_read: bool = True  # False: the Lease could not be read (see `unreadable`)
    unreadable: Sequence[tuple[str, str]] = ()  # (area, kubectl's error) of refused reads
    plugin_version: str = __version__
    warn_days: float = field(default=WARN_DAYS)


AREAS = ("CRDs", "webhook", "operator", "workloads", "nodes", "topology")


def install_report(facts: InstallFacts, now: datetime) -> list[Check]:
    node_findings, nodes = node_checks(facts.nodes) if facts.nodes is not None else ([], [])
    checks = [
        *(crd_checks(facts.expected_crds, facts.crds) if facts.crds is not None else []),
        *webhook_checks(facts.webhooks, now, facts.warn_days),
        *([leader_check(facts.lease_name, facts.lease, facts.plugin_version, now)]
          if facts.lease_read else []),
        *workload_checks(facts.served, facts.group_versions),
        *node_findings,
        *(topology_checks(facts.topologies, nodes) if facts.topologies is not None else []),
        *(Check(area, "read", Status.FAIL, f"cannot read: {error}")
          for area, error in facts.unreadable),
    ]
    return sorted(checks, key=lambda check: AREAS.index(check.area))  # stable: by area


def crd_checks(expected: Sequence[Obj], installed: Mapping[str, Obj]) -> list[Check]:
    """Each CRD this plugin ships: installed, its versions served and stored as shipped,
    Established, and the schema equal to the shipped one (else an older install)."""
    if not expected:
        return [Check("CRDs", "crds/", Status.WARN,
                      "not found beside this plugin: installed versions not compared")]
    return [_crd(want, installed.get(_name(want))) for want in expected]


def _crd(want: Obj, have: Obj | None) -> Check:
    name = _name(want)
    if have is None:
        return Check("CRDs", name, Status.FAIL,
                     "not installed (kubectl apply -k manifests/, or the Helm chart)")
    findings: list[tuple[Status, str]] = []
    versions = {str(v.get("name")): v for v in (have.get("spec") or {}).get("versions") or []}
    for wanted in (want.get("spec") or {}).get("versions") or []:
        version = str(wanted.get("name"))
        got = versions.get(version)
        if got is None:
            served = ", ".join(versions) or "none"
            findings.append((Status.FAIL, f"version {version} missing (has {served})"))
            continue
        flags = [word for word in ("served", "storage") if got.get(word)]
        findings.append((Status.OK, f"{version} {' '.join(flags) or 'neither served nor stored'}"))
        if bool(got.get("served")) != bool(wanted.get("served")):
            findings.append((Status.FAIL, f"{version} served is {got.get('served')}"))
        if bool(got.get("storage")) != bool(wanted.get("storage")):
            findings.append((Status.WARN, f"{version} storage is {got.get('storage')}"))
        if _schema(got) != _schema(wanted):
            findings.append((Status.WARN, f"{version} schema differs from this plugin's "
                             "(re-apply crds/: an older or newer Phalanx installed them)"))
    if not _established(have):
        findings.append((Status.FAIL, "not Established"))
    status = max((s for s, _ in findings), default=Status.OK)
    return Check("CRDs", name, status, "; ".join(text for _, text in findings))


def _schema(version: Obj) -> Any:
    return (version.get("schema") or {}).get("openAPIV3Schema")


def _established(crd: Obj) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def leader_check(lease_name: str, lease: Obj | None, plugin_version: str, now: datetime) -> Check:
    """The operator replica that leads, how fresh its lease is, and its version."""
    subject = f"Lease {lease_name}"
    if lease is None:
        return Check("operator", subject, Status.FAIL,
                     "not found: no operator runs with leader election here (a replica "
                     "started without it records nothing the plugin can see)")
    record = parse_lease(lease)
    if not record.holder:
        return Check("operator", subject, Status.FAIL,
                     "no holder: no replica leads (released, none took it over)")
    age = _age(record.renew_time, now)
    version = record.operator_version
    words = f"leader {record.holder}, version {version or 'not recorded'}"
    if age is None:
        return Check("operator", subject, Status.WARN, f"{words}; no renewTime")
    renewed = f"renewed {age:.0f} s ago (lease {record.duration_seconds} s)"
    if age > record.duration_seconds:
        return Check("operator", subject, Status.FAIL,
                     f"{words}; {renewed}: it stopped renewing and no standby took over "
                     "(or this machine's clock is off)")
    if version and version != plugin_version:
        return Check("operator", subject, Status.WARN,
                     f"{words}; {renewed}; this plugin is {plugin_version}")
    if not version:
        return Check("operator", subject, Status.WARN,
                     f"{words} (an operator older than this plugin); {renewed}")
    return Check("operator", subject, Status.OK, f"{words}; {renewed}")


def _age(moment: str, now: datetime) -> float | None:
    if not moment:
        return None
    try:
        then = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (now - then).total_seconds()


def workload_checks(
    served: Mapping[str, frozenset[str]], group_versions: Mapping[str, tuple[str, ...]]
) -> list[Check]:
    """Each kind Phalanx makes gangs of: served at the version it reads, or why not."""
    checks = []
    for kind in WORKLOAD_KINDS:
        subject = f"{kind.kind} ({kind.api_version})"
        if kind.plural in served.get(kind.api_version, frozenset()):
            checks.append(Check("workloads", subject, Status.OK, "served: its jobs get gangs"))
        elif kind.group not in group_versions:
            checks.append(Check("workloads", subject, Status.NOTE, "not installed"))
        else:
            others = ", ".join(group_versions[kind.group])
            checks.append(Check("workloads", subject, Status.WARN,
                                f"{kind.group} served at {others} only: Phalanx reads "
                                f"{kind.version}, so these jobs get no gang"))
    return checks


def failed(checks: Sequence[Check]) -> bool:
    return any(check.status is Status.FAIL for check in checks)


def format_report(checks: Sequence[Check]) -> str:
    """By area, in the order looked at, then one line of counts."""
    lines: list[str] = []
    area = ""
    for check in checks:
        if check.area != area:
            area = check.area
            lines.append(area)
        lines.append(f"  {check.status.word:<4}  {check.subject}: {check.detail}")
    counts = {status: sum(1 for c in checks if c.status is status) for status in Status}
    verdict = "unhealthy" if counts[Status.FAIL] else "healthy"
    lines.append(f"{verdict}: {counts[Status.FAIL]} failed, {counts[Status.WARN]} warnings, "
                 f"{counts[Status.OK]} ok")
    return "\n".join(lines)


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")
