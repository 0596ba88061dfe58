"""gridlake: grid-wide computing-efficiency analytics on Kafka, Spark and Delta Lake.

The package's folders are its layers, lowest first; a module imports only from its own layer or
lower ones (``tests/test_layout.py`` checks it, and that no import cycle exists):

0. core, at the top of the package: ``settings`` (the one switch between local and cluster),
   ``spark`` (the session), ``deltalog`` (a Delta table's version and commits, read from its
   log without a Spark query), ``tabledef`` (Table, Column, Check), ``contracts`` (the record
   schemas of ``schemas/``), ``quality`` (checks and the gate), ``reference`` (the CPU
   model table), ``alerts`` (``ops.alerts``: what failed and needs a person) and ``contacts``
   (``ops.sites``: where each site's weekly report is e-mailed);
1. ``sources``: adapters of accounting, batch-system, node and network formats to the canonical
   records, the simulator and the demo week, and the producers (``publish``, ``agent``);
2. ``bronze``: Kafka -> bronze tables;
3. ``silver``: bronze -> silver (pure transforms, validation, the refine edge);
4. ``gold``: silver -> gold, one module per table family, run by ``gold.analyze``;
5. ``catalog``: every table of the layers below, collected in one registry;
6. ``serving``: grid views, SQL, weekly reports, Superset dashboards as code, table docs;
7. ``ops``: the command line, the Spark server, the DAG manifest, maintenance, benchmarks.
"""
