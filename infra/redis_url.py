"""What a REDIS_URL names: a Redis server, or (`sentinel://…`) the Sentinels that know its
primary; and the error every setting's check raises (`infra.settings`)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit


class SettingsError(ValueError):
    """A setting is missing or invalid; the message names the key."""


@dataclass(frozen=True)
class SentinelAddress:
    """What a `sentinel://` REDIS_URL says: the sentinels (host, port), the password that both
    they and the Redis servers ask for, and the database number."""

    sentinels: tuple[tuple[str, int], ...]
    password: str | None
    username: str | None
    db: int


SENTINEL_PORT = 26379


def sentinel_address(url: str) -> SentinelAddress | None:
    """kombu's form, `sentinel://:pw@h1:26379;sentinel://:pw@h2:26379/0`, read as kombu reads
    it: the password and the database number from the first part that gives them. None for a
    `redis://` (or `rediss://`, `unix://`) URL; SettingsError if the parts disagree."""
    parts = [urlsplit(part.strip()) for part in url.split(";") if part.strip()]
    if not parts or parts[0].scheme != "sentinel":
        return None
    sentinels = []
    passwords, usernames, dbs = set(), set(), set()
    for part in parts:
        if part.scheme != "sentinel" or not part.hostname:
            raise SettingsError(
                "REDIS_URL: every part of a sentinel URL must be sentinel://[:password@]host:port"
            )
        try:
            sentinels.append((part.hostname, part.port or SENTINEL_PORT))
        except ValueError:
            raise SettingsError(
                f"REDIS_URL: a sentinel's port is not a number ({part.hostname})"
            ) from None
        if part.password:
            passwords.add(unquote(part.password))
        if part.username:
            usernames.add(unquote(part.username))
        if part.path.strip("/"):
            dbs.add(part.path.strip("/"))
    if len(passwords) > 1 or len(usernames) > 1 or len(dbs) > 1:
        raise SettingsError(
            "REDIS_URL: the sentinel URL's parts give different credentials or databases"
        )
    db = next(iter(dbs), "0")
    if not db.isdigit():
        raise SettingsError(f"REDIS_URL: the database must be a number, not {db!r}")
    return SentinelAddress(
        tuple(sentinels), next(iter(passwords), None), next(iter(usernames), None), int(db)
    )
