"""Whether a role's configuration can work when the stack's parts run on several hosts: the one
pure check `tilejudge api|worker|sweeper|migrate` run before they start."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import parse_qs, urlsplit

from infra.settings import Settings


class Role(StrEnum):
    """A part of the stack that runs on its own, on any number of hosts."""

    API = "api"
    WORKER = "worker"
    SWEEPER = "sweeper"
    MIGRATE = "migrate"


class Service(StrEnum):
    """What a role connects to, named by the variable that says where it is."""

    DATABASE = "TILEJUDGE_DATABASE_URL"
    REDIS = "REDIS_URL"
    S3 = "TILEJUDGE_S3_ENDPOINT"


USES = {
    Role.API: (Service.DATABASE, Service.REDIS, Service.S3),
    Role.WORKER: (Service.DATABASE, Service.REDIS, Service.S3),
    Role.SWEEPER: (Service.DATABASE, Service.REDIS),
    Role.MIGRATE: (Service.DATABASE,),
}
_MISSING = {
    Service.DATABASE: "every host must name the one shared database "
    "(only `tilejudge up` falls back to a SQLite file under TILEJUDGE_HOME)",
    Service.REDIS: "the roles start no Redis of their own (`tilejudge up` does)",
    Service.S3: "the roles start no S3 server of their own (`tilejudge up` does)",
}


@dataclass(frozen=True)
class Address:
    service: Service
    host: str  # "a local socket" or "a file" when it has no network address
    local: bool  # reachable from this host alone: loopback, a Unix socket, a SQLite file


def problems(settings: Settings, role: Role) -> list[str]:
    """Why `role` cannot start with `settings`, one sentence each; empty when it can."""
    found = [
        f"{service.value} is not set: {_MISSING[service]}"
        for service in USES[role]
        if not _configured(settings, service)
    ]
    if role is Role.API and not settings.admin_token:
        found.append(
            "TILEJUDGE_ADMIN_TOKEN is not set: every API host must accept the same organiser "
            "token (only `tilejudge up` generates one)"
        )
    if role is Role.API and settings.api_port == 0:
        found.append("TILEJUDGE_API_PORT is 0: `tilejudge api` listens on the port it is given")
    return found + _unshared(settings, role)


def _unshared(settings: Settings, role: Role) -> list[str]:
    """What the other hosts could not share: a SQLite file, a service on loopback, a receipt
    key each API host would generate for itself."""
    found = []
    addresses = [_address(settings, s) for s in USES[role] if _configured(settings, s)]
    remote = [a for a in addresses if not a.local]
    sqlite = _is_sqlite(settings.database_url or "")
    if sqlite and remote:
        found.append(
            "TILEJUDGE_DATABASE_URL is a SQLite file, which only processes on this host can "
            f"open, while {_where(remote[0])}: use PostgreSQL when the parts run on several hosts"
        )
    elif sqlite and role is Role.API and not is_loopback(settings.api_host):
        found.append(
            "TILEJUDGE_DATABASE_URL is a SQLite file, which only processes on this host can "
            f"open, while TILEJUDGE_API_HOST={settings.api_host} serves other hosts: use "
            "PostgreSQL, or `tilejudge up` on one machine"
        )
    if remote:
        found += [
            f"{a.service.value} is on this host alone ({a.host}) while {_where(remote[0])}: "
            "the other hosts cannot reach it; give its address on the network"
            for a in addresses
            if a.local and not (a.service is Service.DATABASE and sqlite)
        ]
    if role is Role.API and remote and not settings.receipt_key:
        found.append(
            "TILEJUDGE_RECEIPT_KEY is not set: each API host would sign receipts with a key of "
            "its own, and the others would call them invalid"
        )
    return found


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine alone: a loopback address or name. (Listening on the
    unspecified address, 0.0.0.0 or ::, serves every host.)"""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    address = _ip(name)
    return address is not None and address.is_loopback


def _reached_here_only(host: str) -> bool:
    """Whether a service at `host` is reachable from this machine alone; connecting to the
    unspecified address reaches this machine too."""
    address = _ip(host.strip("[]"))
    return is_loopback(host) or (address is not None and address.is_unspecified)


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def _configured(settings: Settings, service: Service) -> bool:
    return bool(_url(settings, service))


def _url(settings: Settings, service: Service) -> str:
    url = {
        Service.DATABASE: settings.database_url,
        Service.REDIS: settings.redis_url,
        Service.S3: settings.s3_endpoint,
    }[service]
    return url or ""


def _address(settings: Settings, service: Service) -> Address:
    url = _url(settings, service)
    if service is Service.DATABASE and _is_sqlite(url):
        return Address(service, "a file", local=True)
    # A list of sentinels (`sentinel://…;sentinel://…`) or of database hosts (`h1:5432,h2:5432`):
    # the first one stands for them all.
    parts = urlsplit(url.split(";", 1)[0])
    listed = parts.netloc.rpartition("@")[2].split(",", 1)[0]
    # libpq also takes the host as a query parameter (a socket directory when it starts with /).
    host = urlsplit(f"//{listed}").hostname or parse_qs(parts.query).get("host", [""])[0]
    if parts.scheme == "unix" or not host or host.startswith("/"):
        return Address(service, "a local socket", local=True)
    return Address(service, host, local=_reached_here_only(host))


def _is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def _where(address: Address) -> str:
    """The host only, never the whole URL: it may hold a password."""
    return f"{address.service.value} is on {address.host}"
