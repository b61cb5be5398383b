"""A whole tilejudge stack on one machine: local Redis and SeaweedFS, the launcher behind
`tilejudge up`, the demo data and the load generator."""
