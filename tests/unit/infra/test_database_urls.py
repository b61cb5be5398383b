"""How a PostgreSQL URL reaches the driver: libpq's multi-host form finds the primary, and a
host that stops answering is given up on within seconds (`infra.sql.engine.postgres_url`)."""

from __future__ import annotations

from sqlalchemy.engine import make_url

from infra.sql.engine import make_engine, postgres_url


def driver_args(url: str) -> dict[str, object]:
    engine = make_engine(url)
    try:
        args = engine.dialect.create_connect_args(engine.url)[1]
    finally:
        engine.dispose()
    return {k: v for k, v in args.items() if k != "context"}


def test_a_url_of_several_hosts_connects_to_whichever_takes_writes() -> None:
    args = driver_args("postgresql://tilejudge:s3cret@db1:5432,db2:5432,db3:6432/tilejudge")
    assert args["host"] == "db1,db2,db3"
    assert args["port"] == "5432,5432,6432"
    assert args["target_session_attrs"] == "read-write"
    assert (args["user"], args["password"], args["dbname"]) == ("tilejudge", "s3cret", "tilejudge")


def test_what_the_url_says_wins_over_the_defaults() -> None:
    args = driver_args(
        "postgresql://u@db1,db2/t?target_session_attrs=primary&connect_timeout=9&sslmode=require"
    )
    assert (args["target_session_attrs"], args["connect_timeout"]) == ("primary", "9")
    assert args["sslmode"] == "require"


def test_one_host_gets_the_timeouts_but_no_session_attrs() -> None:
    args = driver_args("postgresql://u:p%40ss@db1:5432/t")
    assert args["host"] == "db1"
    assert args["password"] == "p@ss"
    assert "target_session_attrs" not in args
    assert args["connect_timeout"] == "2"
    assert args["tcp_user_timeout"] == "5000"


def test_the_sqlalchemy_form_of_several_hosts_is_taken_as_it_is() -> None:
    url = postgres_url("postgresql+psycopg://u@/t?host=db1:5432&host=db2:5432")
    query = make_url(url).query
    assert query["host"] == ("db1:5432", "db2:5432")
    assert query["target_session_attrs"] == "read-write"
