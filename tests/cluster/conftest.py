"""One cluster for the package (devstack/testing/cluster/): three database hosts (Patroni), two
Redis hosts (Sentinel), the services host (SeaweedFS), api1, api2, worker1 and worker2, each a
network namespace of its own on a private bridge. Each test starts from the
cluster as the fixture made it (plus worker3 once a test added it): links up, nothing frozen,
every role running."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.testing.cluster.cluster import Cluster, cluster
from devstack.testing.cluster.namespaces import NotPermitted


@pytest.fixture(scope="package")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir: Path = tmp_path_factory.mktemp("cluster")
    try:
        with cluster(workdir) as made:
            yield made
    except NotPermitted as exc:  # raised before the first namespace exists, so before yield
        pytest.skip(str(exc))


@pytest.fixture
def hosts(running: Cluster) -> Cluster:
    """The module's cluster, whole again after whatever the previous test did to it."""
    running.heal()
    return running
