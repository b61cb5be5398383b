"""The shipped proxy names each client by the address that connected to it, and the API trusts
that name from the proxy alone: infra/deploy/compose.yaml's nginx sets X-Forwarded-For (and
X-Real-IP) to `$remote_addr`, replacing whatever a client sent rather than adding to it, and
the API's FORWARDED_ALLOW_IPS is the proxy's fixed address. That uvicorn then takes the header
from that address alone is tests/integration/test_uvicorn_limits.py's. Each check is also shown
to refuse a broken copy."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

COMPOSE = Path(__file__).resolve().parents[3] / "infra" / "deploy" / "compose.yaml"
# `${NAME:-default}` (or `${NAME-default}`) as Compose reads it with NAME unset.
DEFAULTED = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?-([^}]*)\}")
# Headers that name the client to the API: each must be the connecting address alone.
NAMING = ("x-forwarded-for", "x-real-ip")


def with_defaults(value: str) -> str:
    return DEFAULTED.sub(lambda match: match[1], value)


def proxy_problems(text: str) -> list[str]:
    """What lets a client choose the address the API sees, in a copy of compose.yaml."""
    compose: dict[str, Any] = yaml.safe_load(text)
    found = []
    conf = compose["configs"]["proxy-conf"]["content"].replace("$$", "$")
    headers = re.findall(r"proxy_set_header\s+(\S+)\s+([^;]+);", conf)
    values = {name.lower(): value.strip() for name, value in headers}
    if values.get("x-forwarded-for") is None:
        found.append("the proxy does not set X-Forwarded-For")
    for name in NAMING:
        if name in values and values[name] != "$remote_addr":
            found.append(f"the proxy sets {name} to {values[name]}, not the connecting address")
    if len([name for name, _ in headers if name.lower() == "x-forwarded-for"]) > 1:
        found.append("the proxy sets X-Forwarded-For more than once")
    services = compose["services"]
    proxy_address = with_defaults(services["proxy"]["networks"]["edge"]["ipv4_address"])
    trusted = with_defaults(str(services["api"]["environment"].get("FORWARDED_ALLOW_IPS", "")))
    if [item.strip() for item in trusted.split(",")] != [proxy_address]:
        found.append(f"the API trusts forwarded headers from {trusted!r}, not the proxy alone")
    return found


def test_the_shipped_proxy_names_the_connecting_address_and_the_api_trusts_it_alone() -> None:
    assert proxy_problems(COMPOSE.read_text()) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "X-Forwarded-For $$remote_addr;",
            "X-Forwarded-For $$proxy_add_x_forwarded_for;",
        ),  # appends to what the client sent
        ("X-Forwarded-For $$remote_addr;", "X-Forwarded-For $$http_x_forwarded_for;"),
        ("X-Real-IP $$remote_addr;", "X-Real-IP $$http_x_real_ip;"),
        ("FORWARDED_ALLOW_IPS: ${PROXY_ADDRESS:-172.31.250.2}", "FORWARDED_ALLOW_IPS: '*'"),
        (
            "FORWARDED_ALLOW_IPS: ${PROXY_ADDRESS:-172.31.250.2}",
            "FORWARDED_ALLOW_IPS: 172.31.250.0/28",
        ),  # the whole edge network, clients' side included
    ],
)
def test_the_proxy_checks_refuse_a_broken_copy(old: str, new: str) -> None:
    text = COMPOSE.read_text()
    assert old in text
    assert proxy_problems(text.replace(old, new)) != []


def test_the_proxy_checks_refuse_a_copy_that_sets_no_forwarded_header() -> None:
    text = re.sub(r"\n *proxy_set_header X-Forwarded-For [^;]+;", "", COMPOSE.read_text())
    assert proxy_problems(text) == ["the proxy does not set X-Forwarded-For"]
