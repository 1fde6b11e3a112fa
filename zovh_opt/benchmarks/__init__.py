"""Benchmarks, run as ``python -m zovh_opt.benchmarks <command>``; outside the core path."""
