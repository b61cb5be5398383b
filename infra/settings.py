"""Settings from an environment mapping: validated, every error names its key.

`Settings` is the stack's: whatever is set is used as is; whatever is not (Redis, S3, SQL) is
started locally by `up`. `ClientSettings` is what the `tilejudge` command and the dev tools need
to reach a server and to find word lists on disk.
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from core.tlog import note

# Re-exported: every setting's error, and the sentinel URL's reading, are asked of this module.
from infra.redis_url import SentinelAddress as SentinelAddress
from infra.redis_url import SettingsError as SettingsError
from infra.redis_url import sentinel_address as sentinel_address

DEFAULT_URL = "http://127.0.0.1:8000"  # where `tilejudge up` serves the API


class SweeperMode(StrEnum):
    """Whether the API's processes run the sweeper (TILEJUDGE_SWEEPER)."""

    ELECTED = "elected"  # each runs one; it sweeps only while it holds the Redis lock
    OFF = "off"  # none does: a `tilejudge sweeper` runs on some host instead


@dataclass(frozen=True)
class Settings:
    home: Path
    api_port: int
    api_workers: int
    admin_token: str | None
    redis_url: str | None
    s3_endpoint: str | None
    s3_bucket: str
    s3_access_key: str
    s3_secret_key: str
    s3_region: str
    database_url: str | None
    workers: int
    standby_workers: int
    worker_nice: int
    max_upload_bytes: int
    rate_limit_per_minute: int
    receipt_key: str | None
    visibility_timeout: int
    task_time_limit: int
    max_attempts: int
    requeue_after: int
    task_events: bool
    # False leaves each worker process to load its own word lists: only for measuring what
    # sharing them saves.
    preload: bool = True
    # When set, `/metrics` answers only this token or the admin token (as a Bearer token).
    metrics_token: str | None = None
    # A request head (request line and headers) not complete this long after the connection
    # opens, or after its first byte on a kept-alive connection, ends the connection: a client
    # sends a head in one or two packets, and one that trickles it holds a connection open.
    header_read_seconds: int = 10
    # Where `tilejudge api` listens: loopback serves this host alone, 0.0.0.0 (or one of the
    # host's addresses) the other hosts too. `up` always listens on loopback.
    api_host: str = "127.0.0.1"
    sweeper: SweeperMode = SweeperMode.ELECTED
    # The sweeper lock's expiry: how long after its holder dies without letting go another
    # sweeper takes over. The holder renews it every third of that.
    sweeper_lock_ttl: int = 10
    # Modules of games from outside the project, each registering its game when imported
    # (`core.games.register`); every process of a deployment must be given the same ones.
    games: tuple[str, ...] = ()
    # The dashboard's session key, given (several API hosts must share one) or read from a
    # mounted file; neither: generated once under the home directory.
    session_key: str | None = None
    session_key_file: Path | None = None
    # The transparency logs' signing key (a note signer key, `PRIVATE+KEY+name+hash+data`),
    # given (several API hosts must share one) or read from a mounted file; neither: generated
    # once under the home directory, named `log_name`.
    log_key: str | None = None
    log_key_file: Path | None = None
    log_name: str = "tilejudge.localhost"
    # The URL browsers reach the API at; https: the session cookie is sent `Secure` even when
    # a proxy that ends TLS speaks plain http to the API.
    public_url: str | None = None
    # The proxy in front of the API (its addresses or networks, comma-separated): uvicorn takes
    # the client's address and scheme from its X-Forwarded-For and -Proto, and from nobody
    # else's (devstack.children.uvicorn_options); unset, from nobody's.
    forwarded_allow_ips: str | None = None
    # Failed dashboard sign-ins a client address may make a minute, and report reads a caller
    # (a team, or the organiser) may make a minute.
    login_failures_per_minute: int = 5
    report_reads_per_minute: int = 30
    # Public requests (leaderboards, contest pages, /metrics, the dashboard's sign-in) each API
    # process starts a second; more wait their turn, up to two seconds, then get 503.
    public_reads_per_second: int = 100
    # Bytes of uploads a team may store per UTC day (0: no quota): 128 uploads at the largest
    # size by default, where the upload rate limit alone would let a team store 170 GiB a day.
    team_bytes_per_day: int = 256 * 1024 * 1024
    # MiB of uploads a worker host keeps on its disk under the home directory, so that a
    # rejudge there reads them without S3 (`infra.upload_cache`); 0 keeps none.
    upload_cache_mb: int = 1024
    # ... each for at most about this long: a file of them is deleted this long after its last
    # write, so a team's bytes that its deletion did not reach go within it (api/privacy.md).
    upload_cache_hours: int = 24
    # The Sentinel master name, where REDIS_URL lists sentinels (`sentinel://…;sentinel://…`).
    redis_master: str = "tilejudge"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = Config(os.environ if environ is None else environ)
        visibility = env.integer("TILEJUDGE_VISIBILITY_TIMEOUT", 300, low=10)
        time_limit = env.integer("TILEJUDGE_TASK_TIME_LIMIT", 120, low=5)
        if time_limit >= visibility:
            raise SettingsError(
                "TILEJUDGE_TASK_TIME_LIMIT must be below TILEJUDGE_VISIBILITY_TIMEOUT, or a "
                "running task would be delivered again"
            )
        cores = usable_cores()  # for the defaults of the processes
        return cls(
            home=Path(env.text("TILEJUDGE_HOME", "./.tilejudge")).resolve(),
            api_port=env.integer("TILEJUDGE_API_PORT", 8000, low=0, high=65535),
            api_workers=env.integer(
                "TILEJUDGE_API_WORKERS", default_api_workers(cores), low=1, high=64
            ),
            admin_token=env.optional("TILEJUDGE_ADMIN_TOKEN"),
            redis_url=env.redis_url("REDIS_URL"),
            s3_endpoint=env.optional("TILEJUDGE_S3_ENDPOINT"),
            s3_bucket=env.text("TILEJUDGE_S3_BUCKET", "tilejudge"),
            s3_access_key=env.text("TILEJUDGE_S3_ACCESS_KEY", "tilejudge"),
            s3_secret_key=env.text("TILEJUDGE_S3_SECRET_KEY", "tilejudge-local"),
            s3_region=env.text("TILEJUDGE_S3_REGION", "us-east-1"),
            database_url=env.optional("TILEJUDGE_DATABASE_URL"),
            workers=env.integer("TILEJUDGE_WORKERS", default_workers(cores), low=1, high=256),
            standby_workers=env.integer("TILEJUDGE_STANDBY_WORKERS", 1, low=0, high=16),
            worker_nice=env.integer("TILEJUDGE_WORKER_NICE", 10, low=0, high=19),
            max_upload_bytes=env.integer("TILEJUDGE_MAX_UPLOAD_BYTES", 2 * 1024 * 1024, low=1),
            rate_limit_per_minute=env.integer("TILEJUDGE_RATE_LIMIT", 60, low=0),
            receipt_key=env.optional("TILEJUDGE_RECEIPT_KEY"),
            visibility_timeout=visibility,
            task_time_limit=time_limit,
            max_attempts=env.integer("TILEJUDGE_MAX_ATTEMPTS", 8, low=1, high=100),
            requeue_after=env.integer("TILEJUDGE_REQUEUE_AFTER", 120, low=1),
            task_events=env.integer("TILEJUDGE_TASK_EVENTS", 0, low=0, high=1) == 1,
            preload=env.integer("TILEJUDGE_PRELOAD", 1, low=0, high=1) == 1,
            metrics_token=env.optional("TILEJUDGE_METRICS_TOKEN"),
            header_read_seconds=env.integer(
                "TILEJUDGE_HEADER_READ_SECONDS", cls.header_read_seconds, low=1, high=300
            ),
            api_host=env.host("TILEJUDGE_API_HOST", cls.api_host),
            forwarded_allow_ips=env.networks("FORWARDED_ALLOW_IPS"),
            sweeper=env.choice("TILEJUDGE_SWEEPER", cls.sweeper),
            sweeper_lock_ttl=env.integer(
                "TILEJUDGE_SWEEPER_LOCK_TTL", cls.sweeper_lock_ttl, low=3, high=600
            ),
            games=env.modules("TILEJUDGE_GAMES"),
            session_key=env.optional("TILEJUDGE_SESSION_KEY"),
            session_key_file=(
                Path(file) if (file := env.optional("TILEJUDGE_SESSION_KEY_FILE")) else None
            ),
            log_key=env.optional("TILEJUDGE_LOG_KEY"),
            log_key_file=Path(file) if (file := env.optional("TILEJUDGE_LOG_KEY_FILE")) else None,
            log_name=env.optional("TILEJUDGE_LOG_NAME") or cls.log_name,
            public_url=(
                env.url("TILEJUDGE_PUBLIC_URL", DEFAULT_URL)
                if env.optional("TILEJUDGE_PUBLIC_URL")
                else None
            ),
            login_failures_per_minute=env.integer(
                "TILEJUDGE_LOGIN_FAILURES", cls.login_failures_per_minute, low=0, high=1000
            ),
            report_reads_per_minute=env.integer(
                "TILEJUDGE_REPORT_READS", cls.report_reads_per_minute, low=0
            ),
            public_reads_per_second=env.integer(
                "TILEJUDGE_PUBLIC_READS", cls.public_reads_per_second, low=0
            ),
            team_bytes_per_day=env.integer(
                "TILEJUDGE_TEAM_BYTES_PER_DAY", cls.team_bytes_per_day, low=0
            ),
            upload_cache_mb=env.integer("TILEJUDGE_UPLOAD_CACHE_MB", cls.upload_cache_mb, low=0),
            upload_cache_hours=env.integer(
                "TILEJUDGE_UPLOAD_CACHE_HOURS", cls.upload_cache_hours, low=1, high=24 * 365
            ),
            redis_master=env.text("TILEJUDGE_REDIS_MASTER", cls.redis_master),
        )

    @property
    def sqlite_url(self) -> str:
        return f"sqlite:///{self.home / 'tilejudge.sqlite3'}"

    def required_redis_url(self) -> str:
        if not self.redis_url:
            raise SettingsError("REDIS_URL is not set (`tilejudge up` starts a local Redis)")
        return self.redis_url

    def redis_sentinels(self) -> SentinelAddress | None:
        """The sentinels REDIS_URL lists, or None where it names one Redis server."""
        return sentinel_address(self.required_redis_url())

    def resolved_database_url(self) -> str:
        return self.database_url or self.sqlite_url

    def secret(self, name: str, given: str | None, make: Callable[[], str] | None = None) -> str:
        """A given secret, or one generated once (by `make`; a random token by default) and
        kept (mode 0600) under the home directory."""
        if given:
            return given
        path = self.home / name
        if path.is_file():
            return path.read_text().strip()
        self.home.mkdir(parents=True, exist_ok=True)
        value = make() if make is not None else secrets.token_urlsafe(32)
        # Written whole under a name of its own, then linked into place: the API's processes
        # start together, and the one that loses the race reads the winner's complete file.
        partial = path.with_name(f"{name}.{secrets.token_hex(8)}.partial")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as file:
                file.write(value + "\n")
            os.link(partial, path)
        except FileExistsError:
            return path.read_text().strip()
        finally:
            partial.unlink(missing_ok=True)
        return value

    def admin_token_value(self) -> str:
        return self.secret("admin-token", self.admin_token)

    def receipt_key_value(self) -> str:
        return self.secret("receipt-key", self.receipt_key)

    def session_key_value(self) -> str:
        """The key dashboard session cookies are signed with: TILEJUDGE_SESSION_KEY, else the
        file TILEJUDGE_SESSION_KEY_FILE names, else one generated under the home directory
        (deleting that file signs every dashboard out at the API's next start)."""
        if self.session_key is None and self.session_key_file is not None:
            return _key_file("TILEJUDGE_SESSION_KEY_FILE", self.session_key_file)
        return self.secret("session-key", self.session_key)

    def log_key_value(self) -> str:
        """The key checkpoints are signed with: TILEJUDGE_LOG_KEY, else the file
        TILEJUDGE_LOG_KEY_FILE names, else one generated under the home directory (losing it
        starts a new key: auditors who pinned the old one must be told)."""
        given = self.log_key
        if given is None and self.log_key_file is not None:
            given = _key_file("TILEJUDGE_LOG_KEY_FILE", self.log_key_file)
        value = self.secret("log-key", given, lambda: note.generate_key(self.log_name)[0])
        try:
            note.Signer.from_key(value)
        except note.NoteError as exc:
            where = (
                "TILEJUDGE_LOG_KEY"
                if self.log_key
                else ("TILEJUDGE_LOG_KEY_FILE" if self.log_key_file else f"{self.home / 'log-key'}")
            )
            raise SettingsError(
                f"{where}: not a note signer key (PRIVATE+KEY+name+hash+data; "
                f"`tilejudge log-key NAME` makes one): {exc}"
            ) from None
        return value


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container's cpuset sets;
    a CPU quota is not seen), at least one."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # a platform without affinity
        return max(1, os.cpu_count() or 1)


def default_workers(cores: int) -> int:
    """Judging processes besides the standby ones: one a core, as Celery's own default, and at
    least two (docs/performance.md, "Defaults")."""
    return max(2, cores)


def default_api_workers(cores: int) -> int:
    """API processes: a quarter of the cores, at least two. An upload costs the API about a
    fifth of what judging it costs, under one GIL a process (docs/performance.md, "Defaults")."""
    return max(2, cores // 4)


def _key_file(name: str, path: Path) -> str:
    """A secret read from the file a setting names (a mounted secret)."""
    try:
        given = path.read_text().strip()
    except OSError as exc:
        raise SettingsError(f"{name}: cannot read it: {exc}") from None
    if not given:
        raise SettingsError(f"{name}: the file is empty")
    return given


@dataclass(frozen=True)
class ClientSettings:
    """What a client of the API reads from the environment: `tilejudge` commands, the demo loader
    and the load generator (their options, where they have one, take precedence)."""

    url: str | None  # $TILEJUDGE_URL without a trailing slash; None: found as `resolve` says
    team_token: str | None
    admin_token: str | None
    home: Path  # where `up` keeps the admin token it generated and, while it runs, its URL
    lexicon: Path | None  # a word list to judge with instead of the cached one
    lexicon_cache: Path
    lexicon_source: Path | None  # a folder holding the known lists, for machines without internet

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ClientSettings:
        env = Config(os.environ if environ is None else environ)
        lexicon = env.optional("TILEJUDGE_LEXICON")
        source = env.optional("TILEJUDGE_LEXICON_SOURCE")
        # HOME from the mapping, not Path.home() (which reads os.environ), so a test's mapping
        # decides; the password database only when the mapping has none.
        user_home = Path(env.optional("HOME") or pwd.getpwuid(os.getuid()).pw_dir)
        cache_base = Path(env.text("XDG_CACHE_HOME", str(user_home / ".cache")))
        return cls(
            url=env.url("TILEJUDGE_URL", DEFAULT_URL) if env.optional("TILEJUDGE_URL") else None,
            team_token=env.optional("TILEJUDGE_TOKEN"),
            admin_token=env.optional("TILEJUDGE_ADMIN_TOKEN"),
            home=Path(env.text("TILEJUDGE_HOME", "./.tilejudge")).resolve(),
            lexicon=Path(lexicon) if lexicon else None,
            lexicon_cache=Path(env.text("TILEJUDGE_LEXICON_CACHE", str(cache_base / "tilejudge"))),
            lexicon_source=Path(source) if source else None,
        )


Choice = TypeVar("Choice", bound=StrEnum)
_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


class Config:
    """Typed reads from a mapping; a bad value raises SettingsError naming the key."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def optional(self, key: str) -> str | None:
        value = self._environ.get(key, "").strip()
        return value or None

    def redis_url(self, key: str) -> str | None:
        """A Redis URL, or a list of sentinels (`sentinel://…;sentinel://…`), whose parts are
        checked now rather than at the first connection."""
        value = self.optional(key)
        if value is not None:
            sentinel_address(value)
        return value

    def modules(self, key: str) -> tuple[str, ...]:
        """Comma-separated dotted module names."""
        names = tuple(n.strip() for n in (self.optional(key) or "").split(",") if n.strip())
        for name in names:
            if not all(part.isidentifier() for part in name.split(".")):
                raise SettingsError(f"{key}: {name!r} is not a module name")
        return names

    def text(self, key: str, default: str) -> str:
        return self.optional(key) or default

    def integer(
        self, key: str, default: int, low: int | None = None, high: int | None = None
    ) -> int:
        raw = self.optional(key)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise SettingsError(f"{key} must be a whole number, not {raw!r}") from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise SettingsError(f"{key} must be between {low} and {high}, not {value}")
        return value

    def choice(self, key: str, default: Choice) -> Choice:
        """One of the values of `default`'s enum."""
        raw = self.optional(key)
        if raw is None:
            return default
        kind = type(default)
        try:
            return kind(raw.lower())
        except ValueError:
            allowed = " or ".join(repr(member.value) for member in kind)
            raise SettingsError(f"{key} must be {allowed}, not {raw!r}") from None

    def networks(self, key: str) -> str | None:
        """Comma-separated IP addresses or networks (uvicorn's `--forwarded-allow-ips`); "*",
        which would trust any client's forwarded headers, is refused."""
        value = self.optional(key)
        if value is None:
            return None
        for item in value.split(","):
            try:
                ipaddress.ip_network(item.strip(), strict=False)
            except ValueError:
                raise SettingsError(
                    f"{key} must list the proxy's IP addresses or networks, not {item.strip()!r}"
                ) from None
        return value

    def host(self, key: str, default: str) -> str:
        """An IP address or a host name to listen on: no scheme, no port."""
        value = self.text(key, default)
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            if _HOST_NAME.fullmatch(value):
                return value
        raise SettingsError(f"{key} must be an IP address or a host name, not {value!r}")

    def url(self, key: str, default: str) -> str:
        value = self.text(key, default)
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SettingsError(f"{key} must be an http:// or https:// URL, not {value!r}")
        return value.rstrip("/")
