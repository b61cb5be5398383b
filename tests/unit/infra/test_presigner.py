"""infra.blobstore.Presigner: the URLs it signs are, to the byte, those the boto3 client's own
`generate_presigned_url` makes for the same call at the same instant."""

from __future__ import annotations

import datetime
import re
import string
from collections.abc import Iterator

import boto3
import pytest
from botocore.config import Config
from hypothesis import given, settings
from hypothesis import strategies as st

from infra.blobstore import (
    _HEADERS,
    PRESIGNED_S,
    Presigner,
    S3BlobStore,
    client_config,
)
from infra.presigned_http import PresignedHttp

BUCKET = "tilejudge-presign"
INSTANT = datetime.datetime(2026, 12, 4, 12, 34, 56)
# The endpoints a deployment may name: SeaweedFS's, AWS's regional one, and none (AWS's own).
ENDPOINTS = [
    ("http://127.0.0.1:8333", "us-east-1"),
    ("https://s3.eu-west-1.amazonaws.com", "eu-west-1"),
    (None, "ap-southeast-2"),
]
PLAIN = string.ascii_letters + string.digits + "_.~-"
segment = st.text(PLAIN, min_size=1, max_size=12).filter(lambda s: s not in (".", ".."))
plain_keys = st.lists(segment, min_size=1, max_size=5).map("/".join)
FIELDS = st.fixed_dictionaries(
    {"Content-Type": st.sampled_from(["text/plain; charset=utf-8", "application/json"])},
    optional={
        "Content-Encoding": st.just("gzip"),
        "Content-MD5": st.text(
            string.ascii_letters + string.digits + "+/=", min_size=24, max_size=24
        ),
    },
)
# put_object's parameter for each header a presigned PUT signs.
PARAMS = {header: field for field, header in _HEADERS.items()}


@pytest.fixture(autouse=True)
def frozen(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Both ways read the signing time from the one function botocore's signers call."""
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: INSTANT)
    yield


def signers(endpoint: str | None, region: str) -> tuple[object, Presigner]:
    session = boto3.Session(
        region_name=region, aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret/key+"
    )
    client = session.client("s3", endpoint_url=endpoint, config=client_config())
    credentials = session.get_credentials()
    assert credentials is not None
    return client, Presigner(client, BUCKET, credentials)


CLIENTS = [signers(endpoint, region) for endpoint, region in ENDPOINTS]


@settings(max_examples=200, deadline=None)
@given(which=st.sampled_from(range(len(CLIENTS))), key=plain_keys, headers=FIELDS)
def test_a_put_url_is_the_clients_own(which: int, key: str, headers: dict[str, str]) -> None:
    client, presigner = CLIENTS[which]
    params = {PARAMS[name]: value for name, value in headers.items()}
    expected = client.generate_presigned_url(  # type: ignore[attr-defined]
        "put_object", Params={"Bucket": BUCKET, "Key": key, **params}, ExpiresIn=PRESIGNED_S
    )

    assert presigner.signs(key)
    assert presigner.url("PUT", key, dict(headers)) == expected


@settings(max_examples=200, deadline=None)
@given(which=st.sampled_from(range(len(CLIENTS))), key=plain_keys)
def test_a_get_url_is_the_clients_own(which: int, key: str) -> None:
    client, presigner = CLIENTS[which]
    expected = client.generate_presigned_url(  # type: ignore[attr-defined]
        "get_object", Params={"Bucket": BUCKET, "Key": key}, ExpiresIn=PRESIGNED_S
    )

    assert presigner.url("GET", key, {}) == expected


def test_the_urls_are_sigv4_for_the_clients_region_and_path_style_bucket() -> None:
    _, presigner = CLIENTS[1]
    url = presigner.url("GET", "uploads/c/t/s", {})

    assert url.startswith(f"https://s3.eu-west-1.amazonaws.com/{BUCKET}/uploads/c/t/s?")
    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in url
    assert re.search(r"X-Amz-Credential=AKIDEXAMPLE%2F20261204%2Feu-west-1%2Fs3%2F", url)
    assert f"X-Amz-Expires={PRESIGNED_S}" in url


@pytest.mark.parametrize(
    "key", ["a b", "a//b", "./a", "a/../b", "a/.", "/a", "a/", "é", "a?b", "a%2Fb", "a+b", ""]
)
def test_a_key_outside_the_plain_alphabet_is_left_to_the_client(key: str) -> None:
    assert not Presigner.signs(key)


def test_the_projects_own_keys_are_signed_without_the_client() -> None:
    for key in ("uploads/c-1/t_2/01JABCDEF", "reports/01JABCDEF/words_alpha.1-default.json"):
        assert Presigner.signs(key)


def test_a_client_whose_urls_are_not_sigv4_keeps_its_own_presigning() -> None:
    session = boto3.Session(
        region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    )
    sigv2 = session.client(
        "s3", endpoint_url="http://127.0.0.1:8333", config=Config(signature_version="s3")
    )
    credentials = session.get_credentials()
    assert credentials is not None
    with pytest.raises(ValueError, match="not a SigV4 presigned URL"):
        Presigner(sigv2, BUCKET, credentials)

    store = S3BlobStore(sigv2, BUCKET, http=PresignedHttp(), credentials=credentials)

    assert store._presigner is None


def test_temporary_credentials_sign_their_session_token_too() -> None:
    session = boto3.Session(
        region_name="eu-west-1",
        aws_access_key_id="ASIAEXAMPLE",
        aws_secret_access_key="secret/key+",
        aws_session_token="token/with+signs=",
    )
    client = session.client("s3", config=client_config())
    credentials = session.get_credentials()
    assert credentials is not None
    presigner = Presigner(client, BUCKET, credentials)
    headers = {"Content-Type": "application/json"}
    expected = client.generate_presigned_url(
        "put_object",
        Params={"Bucket": BUCKET, "Key": "a/b", "ContentType": "application/json"},
        ExpiresIn=PRESIGNED_S,
    )

    assert "X-Amz-Security-Token=token%2Fwith%2Bsigns%3D" in expected
    assert presigner.url("PUT", "a/b", headers) == expected


def test_the_days_signing_key_is_made_again_the_next_day(monkeypatch: pytest.MonkeyPatch) -> None:
    client, presigner = CLIENTS[0]
    presigner.url("GET", "a", {})  # the key of INSTANT's day kept
    tomorrow = INSTANT + datetime.timedelta(days=1)
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: tomorrow)
    expected = client.generate_presigned_url(  # type: ignore[attr-defined]
        "get_object", Params={"Bucket": BUCKET, "Key": "a"}, ExpiresIn=PRESIGNED_S
    )

    assert "X-Amz-Date=20261205T" in expected
    assert presigner.url("GET", "a", {}) == expected
