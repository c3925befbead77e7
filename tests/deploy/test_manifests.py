"""manifests/: least-privilege RBAC, a hardened Deployment, parts that agree with each other."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from phalanx.cli.main import COMMANDS
from phalanx.config import load_settings
from phalanx.workloads import WORKLOAD_KINDS

from .rendering import MANIFESTS, REPO, Obj, only, render

NAMESPACE = "phalanx-system"
SERVICE_ACCOUNT = "phalanx"
ROLE_KINDS = ("Role", "ClusterRole")


def rules(objects: list[Obj], kinds: tuple[str, ...] = ROLE_KINDS) -> list[tuple[Obj, Obj]]:
    return [(o, rule) for o in objects if o["kind"] in kinds for rule in o.get("rules", [])]


def grants(objects: list[Obj], kind: str) -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) triples granted by all roles of `kind`."""
    return {
        (group, resource, verb)
        for _, rule in rules(objects, (kind,))
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
        for verb in rule.get("verbs", [])
    }


def pod_spec(objects: list[Obj]) -> Obj:
    spec: Obj = only(objects, "Deployment", "phalanx")["spec"]["template"]["spec"]
    return spec


def container(objects: list[Obj]) -> Obj:
    (operator,) = pod_spec(objects)["containers"]
    result: Obj = operator
    return result


# -- RBAC --------------------------------------------------------------------------------------


def test_no_wildcard_anywhere_in_rbac(rendered: list[Obj]) -> None:
    for role, rule in rules(rendered):
        for field in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
            assert "*" not in str(rule.get(field, [])), f"{role['metadata']['name']}: {rule}"


def test_no_access_to_secrets(rendered: list[Obj]) -> None:
    for role, rule in rules(rendered):
        assert "secrets" not in rule.get("resources", []), role["metadata"]["name"]


def test_configmaps_only_in_a_namespaced_role(rendered: list[Obj]) -> None:
    for role, rule in rules(rendered):
        if "configmaps" in rule.get("resources", []):
            assert role["kind"] == "Role"
            assert role["metadata"]["namespace"] == NAMESPACE


def test_no_privilege_escalation_verbs(rendered: list[Obj]) -> None:
    for _, rule in rules(rendered):
        assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"])
        assert not {
            "roles",
            "clusterroles",
            "rolebindings",
            "clusterrolebindings",
            "serviceaccounts",
            "serviceaccounts/token",
        } & set(rule.get("resources", []))


def test_cluster_role_grants_exactly_what_the_operator_uses(rendered: list[Obj]) -> None:
    # Pinned on purpose: widening the operator's rights must be a visible change here.
    phalanx = "scheduling.phalanx.io"
    expected = (
        {("", "nodes", v) for v in ("get", "list", "watch")}
        | {("scheduling.k8s.io", "priorityclasses", v) for v in ("get", "list", "watch")}
        | {("", "pods", v) for v in ("get", "list", "watch", "patch", "delete")}
        | {
            ("", "pods/binding", "create"),
            ("", "pods/status", "patch"),
            ("", "pods/eviction", "create"),
        }
        | {
            (phalanx, r, v)
            for r in ("podgroups", "queues", "networktopologies")
            for v in ("get", "list", "watch", "patch")
        }
        | {
            (phalanx, r + "/status", v)
            for r in ("podgroups", "queues", "networktopologies")
            for v in ("get", "patch")
        }
        | {
            (phalanx, "queues", "create"),
        }
        | {(phalanx, "podgroups", v) for v in ("create", "delete")}
        | {
            (group, resource, v)
            for group, resource in (
                ("batch", "jobs"),
                ("jobset.x-k8s.io", "jobsets"),
                ("leaderworkerset.x-k8s.io", "leaderworkersets"),
                ("kubeflow.org", "pytorchjobs"),
                ("kubeflow.org", "mpijobs"),
                ("trainer.kubeflow.org", "trainjobs"),
                ("ray.io", "rayclusters"),
                ("scheduling.k8s.io", "podgroups"),
            )
            for v in ("get", "list", "watch")
        }
        | {(group, resource, "patch") for group, resource in (  # stopped at runtime limits
            ("batch", "jobs"), ("jobset.x-k8s.io", "jobsets"), ("kubeflow.org", "pytorchjobs"),
            ("kubeflow.org", "mpijobs"), ("trainer.kubeflow.org", "trainjobs"),
            ("ray.io", "rayclusters"))}
        | {("scheduling.k8s.io", "podgroups/status", v) for v in ("get", "patch")}
        | {
            ("resource.k8s.io", r, v)
            for r in ("resourceslices", "deviceclasses", "resourceclaims", "resourceclaimtemplates")
            for v in ("get", "list", "watch")
        }
        | {("resource.k8s.io", "resourceclaims", "update")}  # the delete-protection finalizer
        | {("resource.k8s.io", "resourceclaims/status", v) for v in ("get", "update")}
        | {("", "namespaces", v) for v in ("get", "list", "watch")}
        | {("", "events", "create")}
        | {("apiextensions.k8s.io", "customresourcedefinitions", v) for v in ("list", "watch")}
    )
    assert grants(rendered, "ClusterRole") == expected


def test_pods_are_never_created_by_the_operator(rendered: list[Obj]) -> None:
    assert ("", "pods", "create") not in grants(rendered, "ClusterRole")


def test_leader_election_role_is_limited_to_its_lease(rendered: list[Obj]) -> None:
    role = only(rendered, "Role", "phalanx-leader-election")
    assert role["metadata"]["namespace"] == NAMESPACE
    settings = load_settings(MANIFESTS / "operator" / "config.yaml", env={})
    for rule in role["rules"]:
        assert rule["apiGroups"] == ["coordination.k8s.io"]
        assert rule["resources"] == ["leases"]
        if rule["verbs"] != ["create"]:  # create cannot be limited by name
            assert rule["resourceNames"] == [settings.leader_election.lease_name]
    verbs = {v for rule in role["rules"] for v in rule["verbs"]}
    assert verbs == {"create", "get", "update"}


def test_bindings_give_the_roles_to_the_operator_service_account(rendered: list[Obj]) -> None:
    account = only(rendered, "ServiceAccount", SERVICE_ACCOUNT)
    assert account["metadata"]["namespace"] == NAMESPACE
    for kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        for binding in (o for o in rendered if o["kind"] == kind):
            only(rendered, role_kind, binding["roleRef"]["name"])
            assert binding["subjects"] == [
                {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
            ]
    assert pod_spec(rendered)["serviceAccountName"] == SERVICE_ACCOUNT


# -- Deployment --------------------------------------------------------------------------------


def test_everything_namespaced_lives_in_phalanx_system(rendered: list[Obj]) -> None:
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                      "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    for obj in rendered:
        if obj["kind"] not in cluster_scoped:
            assert obj["metadata"]["namespace"] == NAMESPACE, obj["kind"]
    labels = only(rendered, "Namespace", NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_deployment_runs_two_replicas_of_the_operator_command(rendered: list[Obj]) -> None:
    deployment = only(rendered, "Deployment", "phalanx")
    assert deployment["spec"]["replicas"] == 2
    operator = container(rendered)
    assert operator["args"][0] in COMMANDS
    assert operator["args"] == ["operator"]


def test_security_context_is_restrictive(rendered: list[Obj]) -> None:
    pod = pod_spec(rendered)["securityContext"]
    ctx = container(rendered)["securityContext"]
    assert pod["runAsNonRoot"] is True and ctx["runAsNonRoot"] is True
    assert pod["runAsUser"] != 0
    assert ctx["readOnlyRootFilesystem"] is True
    assert ctx["allowPrivilegeEscalation"] is False
    assert ctx["capabilities"] == {"drop": ["ALL"]}
    assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}


def test_resources_have_requests_and_limits(rendered: list[Obj]) -> None:
    resources = container(rendered)["resources"]
    for section in ("requests", "limits"):
        assert set(resources[section]) == {"cpu", "memory"}


def test_settings_file_is_the_mounted_configmap_and_is_valid(
    rendered: list[Obj], tmp_path: Path
) -> None:
    operator = container(rendered)
    env = {e["name"]: e.get("value", "") for e in operator["env"]}
    config_path = Path(env["PHALANX_CONFIG"])
    mount = next(m for m in operator["volumeMounts"] if m["mountPath"] == str(config_path.parent))
    volume = next(v for v in pod_spec(rendered)["volumes"] if v["name"] == mount["name"])
    configmap = only(rendered, "ConfigMap", volume["configMap"]["name"])
    text = configmap["data"][config_path.name]
    # Load it as the pod would: the file, overridden by the container's PHALANX_* variables
    # with the downward-API references filled in.
    local = tmp_path / config_path.name
    local.write_text(text)
    pod_values = {"$(POD_NAME)": "phalanx-abc", "$(POD_NAMESPACE)": NAMESPACE}
    pod_env = {k: pod_values.get(v, v) for k, v in env.items() if k.startswith("PHALANX_")}
    pod_env.pop("PHALANX_CONFIG")
    settings = load_settings(local, env=pod_env)
    assert settings.leader_election.identity == "phalanx-abc"
    assert settings.leader_election.lease_namespace == NAMESPACE


def test_probes_service_and_scrape_annotations_use_the_metrics_port(rendered: list[Obj]) -> None:
    settings = load_settings(MANIFESTS / "operator" / "config.yaml", env={})
    operator = container(rendered)
    ports = {p["name"]: p["containerPort"] for p in operator["ports"]}
    assert ports == {"metrics": settings.metrics_port, "webhook": settings.webhook.port}
    assert operator["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert operator["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    service = only(rendered, "Service", "phalanx-metrics")
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"
    annotations = only(rendered, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(settings.metrics_port)


def test_service_and_budget_select_the_operator_pods(rendered: list[Obj]) -> None:
    pod_labels = only(rendered, "Deployment")["spec"]["template"]["metadata"]["labels"]
    selectors = [
        only(rendered, "Service", "phalanx-metrics")["spec"]["selector"],
        only(rendered, "Service", "phalanx-webhook")["spec"]["selector"],
        only(rendered, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
        only(rendered, "Deployment")["spec"]["selector"]["matchLabels"],
    ]
    for selector in selectors:
        assert selector.items() <= pod_labels.items()
    budget = only(rendered, "PodDisruptionBudget")["spec"]
    assert budget["minAvailable"] < only(rendered, "Deployment")["spec"]["replicas"]


# -- CRDs: one source of truth -----------------------------------------------------------------


def test_crds_are_included_from_crds_folder_without_copies(rendered: list[Obj]) -> None:
    crd_files = sorted(p.name for p in (REPO / "crds").glob("*.yaml"))
    listed = yaml.safe_load((REPO / "crds" / "Kustomization").read_text())["resources"]
    assert sorted(listed) == crd_files
    expected = {
        yaml.safe_load((REPO / "crds" / f).read_text())["metadata"]["name"] for f in crd_files
    }
    assert {
        o["metadata"]["name"] for o in rendered if o["kind"] == "CustomResourceDefinition"
    } == expected
    assert not list(MANIFESTS.rglob("*customresourcedefinition*"))


def test_monitoring_overlay_adds_service_monitor_and_dashboard(rendered: list[Obj]) -> None:
    objects = render(MANIFESTS / "monitoring")
    monitor = only(objects, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    service = only(rendered, "Service", "phalanx-metrics")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    dashboard = only(objects, "ConfigMap", "phalanx-grafana-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = (MANIFESTS / "grafana" / "phalanx-dashboard.json").read_text()
    assert dashboard["data"]["phalanx-dashboard.json"] == shipped


# -- Image -------------------------------------------------------------------------------------


def dockerfile_final_stage() -> list[tuple[str, str]]:
    text = (REPO / "Dockerfile").read_text()
    joined = re.sub(r"\\\n", " ", text)
    instructions = [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
        for line in (raw.strip() for raw in joined.splitlines())
        if line and not line.startswith("#")
    ]
    last_from = max(i for i, (op, _) in enumerate(instructions) if op == "FROM")
    return instructions[last_from:]


def pyproject() -> dict[str, Any]:
    import tomllib

    with (REPO / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)


def test_deployment_image_is_the_one_the_dockerfile_builds(rendered: list[Obj]) -> None:
    version = pyproject()["project"]["version"]
    assert container(rendered)["image"] == f"ghcr.io/phalanx-sched/phalanx:{version}"
    assert f"ghcr.io/phalanx-sched/phalanx:{version}" in (REPO / "Dockerfile").read_text()


def test_image_runs_as_the_non_root_user_the_pod_requires(rendered: list[Obj]) -> None:
    stage = dict(dockerfile_final_stage())
    user, _, group = stage["USER"].partition(":")
    assert user.isdigit() and int(user) != 0  # numeric, so runAsNonRoot can verify it
    pod = pod_spec(rendered)["securityContext"]
    assert (pod["runAsUser"], pod["runAsGroup"]) == (int(user), int(group))


def test_image_entrypoint_is_the_packaged_console_script(rendered: list[Obj]) -> None:
    stage = dict(dockerfile_final_stage())
    entrypoint = yaml.safe_load(stage["ENTRYPOINT"])
    assert entrypoint[0] in pyproject()["project"]["scripts"]
    assert "command" not in container(rendered)  # the Deployment keeps the entrypoint
    assert stage["FROM"].split()[0] in ("${PYTHON_IMAGE}", "python:3.11-slim")
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in (REPO / "Dockerfile").read_text()
    assert int(stage["EXPOSE"]) == container(rendered)["ports"][0]["containerPort"]


def test_the_operator_may_watch_every_workload_kind_it_makes_gangs_for(
    rendered: list[Obj],
) -> None:
    granted = grants(rendered, "ClusterRole")
    for kind in WORKLOAD_KINDS:
        assert {(kind.group, kind.plural, v) for v in ("list", "watch")} <= granted, kind.kind
