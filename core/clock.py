"""UTC timestamps as fixed-width ISO 8601 text: they sort as strings and read the same everywhere."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def now() -> str:
    return format_time(datetime.now(UTC))


def format_time(moment: datetime) -> str:
    """'YYYY-MM-DDTHH:MM:SS.ffffffZ', the year always four digits: strftime's %Y drops the
    leading zeros of a year before 1000 on some platforms, and text of another width would
    compare wrongly against every other stored time."""
    if moment.tzinfo is None:
        raise ValueError("a time must carry its time zone")
    utc = moment.astimezone(UTC)
    return f"{utc.year:04d}-" + utc.strftime(FORMAT.removeprefix("%Y-"))


def parse_time(text: str) -> datetime:
    """Any ISO 8601 time with a zone (Z or an offset), as an aware UTC datetime."""
    moment = datetime.fromisoformat(text.strip().replace("z", "Z").replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone; give UTC as ...Z")
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{text!r} is outside the years 1 to 9999 in UTC") from None


def ago(text_now: str, seconds: float) -> str:
    return format_time(parse_time(text_now) - timedelta(seconds=seconds))
