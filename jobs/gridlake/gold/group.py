"""A gold group: the tables one ``analyze`` step writes, what it reads, and how it builds them.

Each family module under ``gridlake.gold`` declares its ``GROUP`` at its end, beside its tables
and transforms; ``gridlake.gold.analyze`` collects them (``FAMILIES``) and everything else (the
Airflow tasks and their order, the CLI's groups, the skip-current fingerprint) is derived from
the declarations. Adding a gold table touches its family's module only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date

from pyspark.sql import DataFrame, SparkSession

from gridlake.settings import Settings
from gridlake.spark import rows_frame
from gridlake.tabledef import Table


@dataclass(frozen=True)
class Inputs:
    """What a group's ``build`` reads, from the warehouse of ``settings``."""

    spark: SparkSession
    settings: Settings
    # tables the caller has ensured in this run (analyze ensures every table of a run at once)
    ensured: frozenset[str] = frozenset()

    def _ensure(self, table: Table) -> None:
        if table.full_name not in self.ensured:
            table.ensure(self.spark, self.settings)

    def read(self, table: Table) -> DataFrame:
        self._ensure(table)
        return self.spark.read.format("delta").load(table.path(self.settings))

    def rules(
        self, table: Table, shipped: Callable[[SparkSession], DataFrame], key: str = "rule_id"
    ) -> DataFrame:
        """The rules that apply: the operator's table plus every shipped rule version it lacks.

        The highest rule_version of a rule applies, so a shipped upgrade (a new version of a
        default rule) takes effect on an existing instance unless the operator has written a
        higher version of their own; the operator's rows are never dropped or changed. The
        result is small (a few rules) and is materialised before the table is rewritten with it.
        """
        from delta.tables import DeltaTable

        self._ensure(table)
        if not DeltaTable.isDeltaTable(self.spark, table.path(self.settings)):
            # not written yet at this storage root (registered for another one): shipped rules
            frame = table.conform(shipped(self.spark))
            return rows_frame(self.spark, frame.collect(), frame.schema)  # a few rules
        existing = self.read(table)
        missing = shipped(self.spark).join(
            existing.select(key, "rule_version"), [key, "rule_version"], "left_anti"
        )
        rows = existing.unionByName(missing.select(*existing.columns)).collect()  # a few rules
        return rows_frame(self.spark, rows, existing.schema)


@dataclass(frozen=True)
class GoldGroup:
    """One step of ``analyze`` and one task of the grid_analytics DAG.

    ``reads``: every table ``build`` reads besides the rule table (silver tables, other groups'
    gold, the network model's runs): a new version of one makes the group's gold stale.
    ``after``: the groups whose gold it reads (they run first). ``rules``: the operator-editable
    rule table it owns (written with the group, its content in the fingerprint)."""

    name: str
    tables: tuple[Table, ...]
    reads: tuple[Table, ...]
    build: Callable[[Inputs], dict[str, DataFrame]]
    after: tuple[str, ...] = ()
    rules: Table | None = None
    # Incremental analyze: the group's tables restricted to some ISO weeks (every table of the
    # group has a ``week`` column, and a week's rows depend only on the silver.jobs rows of that
    # week, plus its attempts' retries where ``retries``). ``analyze`` then replaces just the
    # weeks whose jobs changed.
    build_weeks: Callable[[Inputs, Sequence[date]], dict[str, DataFrame]] | None = None
    # A week's rows also depend on the later attempts that retry its jobs (``retry_of``: the
    # retry waste), so a new retry changes its original's week too. Groups that never read
    # ``retry_of`` leave it False: a Monday's retries of Sunday's jobs then recompute one week
    # of theirs, not two.
    retries: bool = False
    # Tables that ``build_weeks`` still returns whole although they have a ``week`` column
    # (scored from every week's state, so a changed week can move other weeks' rows): written
    # whole, not by ``replaceWhere`` on the changed weeks.
    whole: tuple[Table, ...] = ()
    # The group's relative cost, for an incremental ``analyze``'s start order (a whole
    # recompute keeps the groups' order: see ``analyze``) when groups run side by side:
    # of the groups ready to start, the one with the costliest chain (its weight plus the
    # heaviest chain of the groups that wait on it) starts first, so that the long groups do
    # not start last. The four that read silver.jobs alone carry the seconds of their full
    # recompute at the bench's full scale (31 M jobs, 2026-12-06); the others 1.
    weight: float = 1.0
