"""How `make test` hands tests to its processes (tests/conftest.py)."""

from __future__ import annotations

from tests.conftest import work_unit


def test_a_module_is_one_unit_whatever_its_parameters() -> None:
    module = "tests/unit/judge/test_generator.py"
    assert work_unit(f"{module}::test_a") == work_unit(f"{module}::test_b[x::y]") == module
    assert work_unit("tests/unit/api/test_rejudge.py::test_a") != module


def test_the_cluster_and_fault_suites_are_one_unit() -> None:
    units = {
        work_unit("tests/cluster/test_cluster.py::test_a"),
        work_unit("tests/fault/test_faults.py::test_b"),
        work_unit("tests/fault/test_other.py::test_c"),
    }
    assert units == {"serial-suites"}
    assert work_unit("tests/e2e/test_cluster_like.py::test_a") == "tests/e2e/test_cluster_like.py"
