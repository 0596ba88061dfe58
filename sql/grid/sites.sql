-- grid.sites: generated from ops.sites's definition by `gridlake docs`; do not edit.
-- Grain: one row per site.
CREATE OR REPLACE VIEW grid.sites (
  `site` COMMENT 'Site name as in silver.jobs',
  `contacts` COMMENT 'E-mail addresses of the site\'s operations contacts',
  `send_reports` COMMENT 'false: the site\'s weekly report is not e-mailed',
  `updated_at` COMMENT 'When the row was last set (UTC)',
  `updated_by` COMMENT 'The OS user who set it'
)
COMMENT 'Operator-maintained site reference: the contacts each site\'s weekly report is e-mailed to (gridlake report --send, the grid_weekly_site_reports DAG). Set with `gridlake sites set SITE --contacts a@x,b@y`; a site without a row gets no e-mail. Grain: one row per site.'
AS SELECT `site`,
       `contacts`,
       `send_reports`,
       `updated_at`,
       `updated_by`
FROM ops.sites
