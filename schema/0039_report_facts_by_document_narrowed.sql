-- Only the reports projection looks facts up by document, and only those of sales (a change of fiscal
-- status) and payments (a void). Stock and purchase facts carry their document too, but no one asks for
-- them by it: keep them out of the index, one entry fewer for every fact a movement or purchase writes.
drop index report_facts_by_document;
create index report_facts_by_document on report_facts (org_id, document_id)
    where document_id is not null and report in ('sales', 'payments');
