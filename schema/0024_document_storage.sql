-- A rendered PDF is already deflated: storing it as it comes spares Postgres a compression attempt
-- on every write that would gain nothing (`external` still moves it out of line, uncompressed).
alter table documents alter column content set storage external;
