-- idempotency_records: the durable truth of idempotent calls (seed 000 §4, §9, §10).
-- Redis (han:api:idem:*, han:api:idemlock:*) only accelerates it: a claim here
-- decides who runs a call, and a completed row answers retries and warms Redis
-- after a loss. Unqualified names: the table lands in the first schema of the
-- connection's search_path.
CREATE TABLE IF NOT EXISTS idempotency_records (
    scope        text        NOT NULL,
    user_id      uuid        NOT NULL,
    key_hmac     text        NOT NULL CHECK (key_hmac ~ '^[0-9a-f]{64}$'),
    fingerprint  text        NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
    state        text        NOT NULL CHECK (state IN ('in_progress', 'completed')),
    owner        text,
    lease_until  timestamptz,
    status       integer     CHECK (status BETWEEN 100 AND 599 AND status NOT IN (503, 504)),
    response     bytea       CHECK (octet_length(response) <= 65536),
    resource_id  text        CHECK (octet_length(resource_id) <= 128),
    version      bigint      NOT NULL CHECK (version >= 1),
    created_at   timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz,
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (scope, user_id, key_hmac),
    CHECK (state <> 'in_progress' OR (owner IS NOT NULL AND lease_until IS NOT NULL)),
    CHECK (state <> 'completed' OR (status IS NOT NULL AND response IS NOT NULL AND completed_at IS NOT NULL))
);

CREATE INDEX IF NOT EXISTS idempotency_records_expires_at ON idempotency_records (expires_at);
