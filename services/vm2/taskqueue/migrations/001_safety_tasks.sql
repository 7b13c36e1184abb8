-- safety_tasks: Message Safety's only queue and lease source (seed 004 §1, §4, §6):
-- workers claim rows with FOR UPDATE SKIP LOCKED under a lease, and each claim
-- raises generation, the fencing token every completion must present. Redis holds
-- none of this; han:safety:wakeup only shortens the workers' poll. A row names
-- what to check (a message or an attachment), never its content. Unqualified
-- names: the table lands in the first schema of the search_path
-- (message_safety in production).
CREATE TABLE IF NOT EXISTS safety_tasks (
    id          uuid        PRIMARY KEY,
    kind        text        NOT NULL CHECK (kind IN ('text', 'file', 'link')),
    subject_id  uuid        NOT NULL,
    state       text        NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'leased', 'done')),
    lease_owner text        CHECK (octet_length(lease_owner) BETWEEN 1 AND 64),
    lease_until timestamptz,
    generation  bigint      NOT NULL DEFAULT 0 CHECK (generation >= 0),
    attempts    integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    done_at     timestamptz,
    CHECK ((state = 'leased') = (lease_owner IS NOT NULL AND lease_until IS NOT NULL)),
    CHECK ((state = 'done') = (done_at IS NOT NULL))
);

CREATE INDEX IF NOT EXISTS safety_tasks_open ON safety_tasks (created_at) WHERE state <> 'done';
