-- grid.cost_prices: generated from gold.cost_prices's definition by `gridlake docs`; do not edit.
-- Grain: one row per site (or '*') and rule_version.
CREATE OR REPLACE VIEW grid.cost_prices (
  `rule_version` COMMENT 'Version; the highest one of a site applies',
  `site` COMMENT 'Grid site, or * for every site without its own row',
  `price_per_core_hour` COMMENT 'Price of one core-hour (any currency unit)',
  `description` COMMENT 'Where the price comes from'
)
COMMENT 'Prices of a core-hour used by gold.site_workflow_cost and gold.placement_advice: the highest rule_version of a site applies; site \'*\' prices every site without its own row. Insert a row with a higher rule_version to change a price; the next gridlake analyze re-prices all history. Grain: one row per site (or \'*\') and rule_version.'
AS SELECT `rule_version`,
       `site`,
       `price_per_core_hour`,
       `description`
FROM gold.cost_prices
