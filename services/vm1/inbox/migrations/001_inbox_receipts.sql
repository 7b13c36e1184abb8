-- inbox_receipts: the durable receipt of every item an internal service delivered
-- to api-backend's internal inbox (seed 000 §10). A delivery is acknowledged only
-- after its row is committed, so no Redis outage can lose it; a sender's retry
-- (same service and delivery id) finds the row and is answered as a duplicate.
-- Unqualified names: the table lands in the first schema of the search_path.
CREATE TABLE IF NOT EXISTS inbox_receipts (
    id           bigserial   PRIMARY KEY,
    service      text        NOT NULL CHECK (service ~ '^[A-Za-z0-9._-]{1,32}$'),
    delivery_id  uuid        NOT NULL,
    kind         text        NOT NULL CHECK (kind ~ '^[a-z0-9._-]{1,64}$'),
    recipient_id uuid        NOT NULL,
    payload      bytea       NOT NULL CHECK (octet_length(payload) <= 65536),
    received_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (service, delivery_id)
);

CREATE INDEX IF NOT EXISTS inbox_receipts_recipient ON inbox_receipts (recipient_id, id);
