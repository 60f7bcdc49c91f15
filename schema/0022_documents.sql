-- Printed documents (sale vouchers, credit notes, purchases): the blob store every api process reads,
-- and the queue the document workers render from. One row per owner; `input` is what is printed (the
-- renderer's VoucherDocument as JSON), `content` the rendered PDF once ready.
--
-- States: `pending` (to render, or re-render after its input changed), `ready` (content holds the PDF
-- of the current input), `failed` (the renderer failed `attempts` times; still retried, on a slower
-- schedule). A worker claims due rows (`next_attempt_at <= now()`, not ready) with FOR UPDATE SKIP
-- LOCKED and keeps the row locked while it renders, so a change of input waits for it and is never
-- overwritten by the stale rendering.

create table documents (
    org_id          uuid        not null,
    owner_kind      text        not null,
    owner_id        uuid        not null,
    state           text        not null default 'pending' check (state in ('pending', 'ready', 'failed')),
    input           jsonb       not null,
    -- The download's file name, from the input (`factura-a-00001-00000042.pdf`).
    file_name       text        not null,
    content         bytea,
    attempts        integer     not null default 0,
    next_attempt_at timestamptz not null default now(),
    last_error      text,
    created_at      timestamptz not null default now(),
    updated_at      timestamptz not null default now(),
    rendered_at     timestamptz,
    primary key (org_id, owner_kind, owner_id),
    check ((state = 'ready') = (content is not null))
);

-- The workers' claim: the oldest due documents that are not ready.
create index documents_due on documents (next_attempt_at) where state <> 'ready';

-- The key that signs the public download links (api/src/http/documents.rs), like the cursors' key.
insert into service_settings (name, value) values ('document_signing_key', gen_random_bytes(32)) on conflict do nothing;
