-- Claims take the oldest due deliveries of each endpoint separately, so one endpoint's backlog never
-- hides another endpoint's deliveries.
create index webhook_deliveries_endpoint_due on webhook_deliveries (endpoint_id, next_attempt_at) where status = 'pending';
