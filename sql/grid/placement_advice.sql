-- grid.placement_advice: generated from gold.placement_advice's definition by `gridlake docs`; do not edit.
-- Grain: one row per week, job_type, data_site (a site that ran the job type) and candidate_site (a site that ran it too: the best MAX_CANDIDATES = 10 ranks, the data site itself and candidates without a combined cost, shown as missing).
CREATE OR REPLACE VIEW grid.placement_advice (
  `week` COMMENT 'Monday of the ISO week of the jobs\' end_time (UTC)',
  `job_type` COMMENT 'Job type (evgen, simul, pile, reprocessing, ...)',
  `data_site` COMMENT 'Site holding the input (where the work ran today)',
  `candidate_site` COMMENT 'Site that could run the work',
  `candidate_rank` COMMENT 'Rank by combined cost for the job type, data site and week (1 = cheapest; null without a combined cost)',
  `is_current` COMMENT 'candidate_site = data_site (today\'s placement)',
  `compute_cost_per_1000_events` COMMENT 'The candidate\'s cost_per_1000_events',
  `transfer_seconds_per_event` COMMENT 'input_gb_per_event x cost_seconds_per_gb(data_site -> candidate); 0 when local, null when the path or the input size is unknown',
  `network_core_seconds_per_event` COMMENT 'transfer_seconds_per_event x the job type\'s mean cores (held while reading)',
  `network_cost_per_1000_events` COMMENT 'network_core_seconds_per_event x the candidate\'s price / 3.6',
  `combined_cost_per_1000_events` COMMENT 'compute + network cost per 1,000 events (null when either is unknown)',
  `combined_cost_low` COMMENT 'cost_low of the candidate + the network cost',
  `combined_cost_high` COMMENT 'cost_high of the candidate + the network cost',
  `today_cost_per_1000_events` COMMENT 'cost_per_1000_events at data_site (today\'s placement, input local)',
  `events_per_week` COMMENT 'Events of the job type at data_site in the week',
  `gain_core_hours_per_week` COMMENT 'events_per_week x (today\'s - the candidate\'s core-seconds per event incl. network) / 3600 (positive: the candidate is cheaper)',
  `gain_cost_per_week` COMMENT 'events_per_week / 1000 x (today_cost - combined_cost): the gain in priced units',
  `main_reason` COMMENT 'speed | efficiency | io | failures | network | price: the term contributing most to the difference from today (current for the data site itself)'
)
COMMENT 'Candidate sites for the work of a job type whose input is at data_site: the candidate\'s compute cost (gold.site_workflow_cost) plus the network term (input GB per event x cost_seconds_per_gb from gold.network_cost_matrix x the cores held while it streams in), ranked; the gain over today\'s placement (the work that ran at data_site, reading its input there) and the term that explains most of the difference. Grain: one row per week, job_type, data_site (a site that ran the job type) and candidate_site (a site that ran it too: the best MAX_CANDIDATES = 10 ranks, the data site itself and candidates without a combined cost, shown as missing).'
AS SELECT `week`,
       `job_type`,
       `data_site`,
       `candidate_site`,
       `candidate_rank`,
       `is_current`,
       `compute_cost_per_1000_events`,
       `transfer_seconds_per_event`,
       `network_core_seconds_per_event`,
       `network_cost_per_1000_events`,
       `combined_cost_per_1000_events`,
       `combined_cost_low`,
       `combined_cost_high`,
       `today_cost_per_1000_events`,
       `events_per_week`,
       `gain_core_hours_per_week`,
       `gain_cost_per_week`,
       `main_reason`
FROM gold.placement_advice
