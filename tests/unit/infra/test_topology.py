"""The refusals of the roles meant for many hosts: what each needs configured, and the mixes of
addresses that cannot work once the parts run on several hosts."""

from __future__ import annotations

import pytest

from infra.settings import Settings, SettingsError
from infra.topology import Role, is_loopback, problems

PG_REMOTE = "postgresql://judge:secret@db.internal:5432/tilejudge"
PG_LOCAL = "postgresql://judge:secret@127.0.0.1:5432/tilejudge"
REMOTE = {
    "TILEJUDGE_DATABASE_URL": PG_REMOTE,
    "REDIS_URL": "redis://10.0.0.5:6379/0",
    "TILEJUDGE_S3_ENDPOINT": "http://s3.internal:8333",
    "TILEJUDGE_ADMIN_TOKEN": "admin-secret",
    "TILEJUDGE_RECEIPT_KEY": "receipt-secret",
}
LOCAL = {
    "TILEJUDGE_DATABASE_URL": "sqlite:////srv/tilejudge/tilejudge.sqlite3",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "TILEJUDGE_S3_ENDPOINT": "http://localhost:8333",
    "TILEJUDGE_ADMIN_TOKEN": "admin-secret",
}


def check(role: Role, env: dict[str, str], **changes: str | None) -> list[str]:
    merged = {**env, **changes}
    return problems(Settings.from_env({k: v for k, v in merged.items() if v is not None}), role)


@pytest.mark.parametrize("role", list(Role))
def test_every_role_starts_when_every_part_is_on_the_network(role: Role) -> None:
    assert check(role, REMOTE) == []


@pytest.mark.parametrize("role", list(Role))
def test_every_role_starts_when_every_part_is_on_this_host(role: Role) -> None:
    assert check(role, LOCAL) == []


@pytest.mark.parametrize("role", list(Role))
def test_a_role_without_a_database_url_is_refused_rather_than_open_a_sqlite_file_of_its_own(
    role: Role,
) -> None:
    [problem] = check(role, REMOTE, TILEJUDGE_DATABASE_URL=None)
    assert problem.startswith("TILEJUDGE_DATABASE_URL is not set")


@pytest.mark.parametrize("role", [Role.API, Role.WORKER, Role.SWEEPER])
def test_a_role_that_talks_to_the_broker_is_refused_without_redis_url(role: Role) -> None:
    [problem] = check(role, REMOTE, REDIS_URL=None)
    assert problem.startswith("REDIS_URL is not set: the roles start no Redis of their own")


def test_migrate_needs_no_redis_and_no_s3() -> None:
    assert check(Role.MIGRATE, REMOTE, REDIS_URL=None, TILEJUDGE_S3_ENDPOINT=None) == []


def test_the_sweeper_needs_no_s3() -> None:
    assert check(Role.SWEEPER, REMOTE, TILEJUDGE_S3_ENDPOINT=None) == []


@pytest.mark.parametrize("role", [Role.API, Role.WORKER])
def test_a_role_that_stores_blobs_is_refused_without_an_s3_endpoint(role: Role) -> None:
    [problem] = check(role, REMOTE, TILEJUDGE_S3_ENDPOINT=None)
    assert problem.startswith("TILEJUDGE_S3_ENDPOINT is not set")


def test_the_api_is_refused_without_an_admin_token() -> None:
    [problem] = check(Role.API, LOCAL, TILEJUDGE_ADMIN_TOKEN=None)
    assert problem.startswith("TILEJUDGE_ADMIN_TOKEN is not set")
    assert check(Role.WORKER, LOCAL, TILEJUDGE_ADMIN_TOKEN=None) == []


def test_the_api_is_refused_on_port_0() -> None:
    [problem] = check(Role.API, LOCAL, TILEJUDGE_API_PORT="0")
    assert problem.startswith("TILEJUDGE_API_PORT is 0")


@pytest.mark.parametrize("role", [Role.API, Role.WORKER])
def test_a_sqlite_database_is_refused_when_the_broker_is_on_another_host(role: Role) -> None:
    sqlite, s3 = check(
        role, LOCAL, REDIS_URL="redis://10.0.0.5:6379/0", TILEJUDGE_RECEIPT_KEY="receipt-secret"
    )
    assert sqlite.startswith("TILEJUDGE_DATABASE_URL is a SQLite file")
    assert "REDIS_URL is on 10.0.0.5" in sqlite
    # The loopback S3 endpoint of the one-host settings cannot be shared either.
    assert s3.startswith("TILEJUDGE_S3_ENDPOINT is on this host alone (localhost)")


def test_the_sweeper_is_refused_a_sqlite_database_when_the_broker_is_on_another_host() -> None:
    [problem] = check(Role.SWEEPER, LOCAL, REDIS_URL="redis://10.0.0.5:6379/0")
    assert problem.startswith("TILEJUDGE_DATABASE_URL is a SQLite file")


def test_a_sqlite_database_is_refused_when_the_blob_store_is_on_another_host() -> None:
    sqlite, redis = check(Role.WORKER, LOCAL, TILEJUDGE_S3_ENDPOINT="https://s3.internal")
    assert "SQLite" in sqlite and "TILEJUDGE_S3_ENDPOINT is on s3.internal" in sqlite
    assert redis.startswith("REDIS_URL is on this host alone (127.0.0.1)")


def test_a_sqlite_database_is_refused_to_an_api_that_serves_other_hosts() -> None:
    [problem] = check(Role.API, LOCAL, TILEJUDGE_API_HOST="0.0.0.0")
    assert "SQLite" in problem and "TILEJUDGE_API_HOST=0.0.0.0 serves other hosts" in problem


def test_an_api_that_serves_other_hosts_from_one_host_with_postgresql_starts() -> None:
    assert check(Role.API, LOCAL, TILEJUDGE_DATABASE_URL=PG_LOCAL, TILEJUDGE_API_HOST="::") == []


def test_migrate_may_upgrade_a_sqlite_file_whatever_else_is_set() -> None:
    # It opens the database alone; the roles that share it are the ones refused.
    assert check(Role.MIGRATE, LOCAL, REDIS_URL="redis://10.0.0.5:6379/0") == []


def test_a_loopback_s3_endpoint_is_refused_when_the_database_is_on_another_host() -> None:
    [problem] = check(
        Role.WORKER, REMOTE, TILEJUDGE_S3_ENDPOINT="http://127.0.0.1:8333", REDIS_URL=None
    )[1:]
    assert problem.startswith("TILEJUDGE_S3_ENDPOINT is on this host alone (127.0.0.1) while")
    assert "the other hosts cannot reach it" in problem


def test_a_loopback_redis_is_refused_when_the_blob_store_is_on_another_host() -> None:
    [problem] = check(Role.SWEEPER, REMOTE, REDIS_URL="redis://localhost:6379/0")
    assert problem.startswith("REDIS_URL is on this host alone (localhost) while")
    assert "TILEJUDGE_DATABASE_URL is on db.internal" in problem


def test_a_redis_at_the_unspecified_address_is_taken_for_this_host() -> None:
    [problem] = check(Role.SWEEPER, REMOTE, REDIS_URL="redis://0.0.0.0:6379/0")
    assert problem.startswith("REDIS_URL is on this host alone (0.0.0.0)")


def test_a_database_on_a_local_socket_is_refused_when_redis_is_on_another_host() -> None:
    socket_url = "postgresql://judge@/tilejudge?host=/var/run/postgresql"
    [problem] = check(Role.SWEEPER, REMOTE, TILEJUDGE_DATABASE_URL=socket_url)
    assert problem.startswith("TILEJUDGE_DATABASE_URL is on this host alone (a local socket)")


def test_every_loopback_service_is_named_when_one_is_remote() -> None:
    found = check(
        Role.API,
        REMOTE,
        REDIS_URL="redis://127.0.0.1:6379/0",
        TILEJUDGE_S3_ENDPOINT="http://[::1]:8333",
    )
    assert [p.split(" ")[0] for p in found] == ["REDIS_URL", "TILEJUDGE_S3_ENDPOINT"]


def test_the_api_is_refused_without_a_receipt_key_when_the_parts_span_hosts() -> None:
    [problem] = check(Role.API, REMOTE, TILEJUDGE_RECEIPT_KEY=None)
    assert problem.startswith("TILEJUDGE_RECEIPT_KEY is not set")
    assert check(Role.API, LOCAL, TILEJUDGE_RECEIPT_KEY=None) == []
    assert check(Role.WORKER, REMOTE, TILEJUDGE_RECEIPT_KEY=None) == []


def test_no_refusal_repeats_a_password_from_a_url() -> None:
    found = check(Role.API, REMOTE, REDIS_URL="redis://:hunter2@127.0.0.1:6379/0")
    assert found and not any("secret" in p or "hunter2" in p for p in found)


def test_every_problem_is_reported_at_once() -> None:
    found = check(Role.API, {})
    assert [p.split(" ")[0] for p in found] == [
        "TILEJUDGE_DATABASE_URL",
        "REDIS_URL",
        "TILEJUDGE_S3_ENDPOINT",
        "TILEJUDGE_ADMIN_TOKEN",
    ]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.5", False),
        ("db.internal", False),
        ("2001:db8::1", False),
    ],
)
def test_loopback_addresses_are_told_from_network_ones(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_the_new_settings_have_their_defaults() -> None:
    settings = Settings.from_env({})
    assert (settings.api_host, settings.sweeper, settings.sweeper_lock_ttl) == (
        "127.0.0.1",
        "elected",
        10,
    )


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("TILEJUDGE_SWEEPER", "sometimes", "TILEJUDGE_SWEEPER must be 'elected' or 'off'"),
        ("TILEJUDGE_SWEEPER_LOCK_TTL", "1", "TILEJUDGE_SWEEPER_LOCK_TTL must be between 3"),
        ("TILEJUDGE_API_HOST", "http://0.0.0.0", "TILEJUDGE_API_HOST must be an IP address"),
        ("TILEJUDGE_API_HOST", "0.0.0.0:8000", "TILEJUDGE_API_HOST must be an IP address"),
    ],
)
def test_a_bad_new_setting_names_its_key(key: str, value: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings.from_env({key: value})


def test_the_sweeper_can_be_switched_off_for_the_api_processes() -> None:
    assert Settings.from_env({"TILEJUDGE_SWEEPER": "OFF"}).sweeper == "off"
