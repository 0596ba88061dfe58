"""Serving: what people read. The grid views (``views``), ad hoc SQL (``sqlcli``), the weekly
reports (``report``: queries, site and summary sections, plots, rendering), the Superset
dashboards as code (``superset_assets``)
and the generated table and quality documentation (``docs``, ``quality_docs``). Reads the
catalog and the gold declarations; never imported by the layers below.
"""
