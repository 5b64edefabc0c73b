"""On-demand benchmarks (not tests): ``python -m benchmarks NAME`` runs ``bench_NAME.py``."""
