-- grid.ipc_by_microarchitecture: generated from gold.ipc_by_microarchitecture's definition by `gridlake docs`; do not edit.
-- Grain: one row per microarchitecture and job type (where the hosts' counters saw it run).
CREATE OR REPLACE VIEW grid.ipc_by_microarchitecture (
  `microarchitecture` COMMENT 'e.g. Haswell, Zen 2 (the host\'s CPU model\'s)',
  `job_type` COMMENT 'Job type',
  `ipc` COMMENT 'Instructions per cycle of the job type, fitted',
  `ipc_low` COMMENT 'Lower end of the 95% interval (fit standard error)',
  `ipc_high` COMMENT 'Upper end of the 95% interval',
  `samples` COMMENT 'perf samples during which the job type ran',
  `hosts` COMMENT 'Hosts those samples came from',
  `cpu_core_hours` COMMENT 'CPU core-hours of the job type in those samples',
  `fit_samples` COMMENT 'perf samples in the microarchitecture\'s fit'
)
COMMENT 'Instructions per cycle of each job type on each microarchitecture, fitted from the hosts\' hardware counters (perf records: whole-host instructions and cycles per interval) and the jobs that ran on them: a least-squares fit of each interval\'s IPC on the job types\' shares of the host\'s CPU. Only hosts with counters (not VMs) count. Grain: one row per microarchitecture and job type (where the hosts\' counters saw it run).'
AS SELECT `microarchitecture`,
       `job_type`,
       `ipc`,
       `ipc_low`,
       `ipc_high`,
       `samples`,
       `hosts`,
       `cpu_core_hours`,
       `fit_samples`
FROM gold.ipc_by_microarchitecture
