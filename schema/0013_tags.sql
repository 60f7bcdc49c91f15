-- Tags and the resources that carry them.
create table tags_view (
    org_id      uuid        not null,
    id          uuid        not null,
    name        text        not null,
    color       text,
    archived_at timestamptz,
    created_at  timestamptz not null,
    updated_at  timestamptz not null,
    primary key (org_id, id)
);

create table tag_assignments (
    org_id        uuid not null,
    tag_id        uuid not null,
    resource_type text not null,
    resource_id   uuid not null,
    primary key (org_id, resource_type, resource_id, tag_id)
);
create index tag_assignments_tag on tag_assignments (org_id, tag_id);
