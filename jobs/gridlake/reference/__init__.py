"""Reference data: the CPU model table (``cpu_models.csv``, built by ``build_cpu_models.py`` from
the HEPiX benchmark tables) and its lookup (``cpu_models``).
Core layer: imports nothing of gridlake.
"""
