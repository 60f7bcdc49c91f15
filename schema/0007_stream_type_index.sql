-- Finding an organization's records of one kind (for instance its current default warehouse).
create index events_org_stream_type on events (org_id, stream_type, stream_id, version);
