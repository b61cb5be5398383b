"""The cluster harness of `tests/cluster` and the cluster benchmarks: hosts made of Linux
network namespaces on a private bridge (namespaces.py, network.py), the processes of the
stack's roles in them (processes.py), the highly available database and broker (ha_services.py,
patroni.py, sentinel.py), the cluster itself (roles.py, cluster.py), the uploads sent to it and
the checks made after (corpora.py, uploads.py, checks.py, with `devstack.testing.log_checks`),
and the failover scenarios (failover.py). Needs root."""
