"""Operations: the command line (``cli``), the long-lived Spark server (``server``), the Airflow
manifest (``orchestration``), maintenance (``maintain``) and the benchmarks (``bench``,
``bench_serving``). The top layer: may import anything, imported by nothing in the package.
"""
