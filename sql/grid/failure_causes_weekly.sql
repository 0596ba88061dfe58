-- grid.failure_causes_weekly: generated from gold.failure_causes_weekly's definition by `gridlake docs`; do not edit.
-- Grain: one row per week, site and cause with at least one attempt (cause success included).
CREATE OR REPLACE VIEW grid.failure_causes_weekly (
  `week` COMMENT 'Monday of the ISO week of the attempts\' end_time (UTC)',
  `site` COMMENT 'Grid site',
  `cause` COMMENT 'success or the failure cause (gold.failure_cause_rules)',
  `jobs` COMMENT 'Attempts with this cause',
  `core_hours` COMMENT 'Their core-hours (wall x cores / 3600)',
  `badput_core_hours` COMMENT 'Core-hours of those that failed (0 for success)',
  `site_jobs` COMMENT 'Every attempt of the site in the week',
  `site_badput_core_hours` COMMENT 'Core-hours of every failed attempt of the site in the week',
  `share_of_badput` COMMENT 'badput_core_hours / site_badput_core_hours (null when the site wasted nothing)'
)
COMMENT 'Job attempts per site, ISO week and failure cause (the rules of gold.failure_cause_rules in force at the last analyze), with the core-hours they used and the badput (core-hours of failed attempts); the share of the site\'s weekly badput gives, for evicted_or_preempted, the eviction share of badput. Grain: one row per week, site and cause with at least one attempt (cause success included).'
AS SELECT `week`,
       `site`,
       `cause`,
       `jobs`,
       `core_hours`,
       `badput_core_hours`,
       `site_jobs`,
       `site_badput_core_hours`,
       `share_of_badput`
FROM gold.failure_causes_weekly
