-- Elang's service tables (seed 003): SQL is the durable truth for jobs and for the
-- replay history of realtime events; Redis only carries wake-up notifications of
-- committed rows. Idempotent: platform:setup runs it on every deploy.

-- One row per event channel; its row lock serialises the channel's id allocation
-- for the whole business transaction that publishes (UPDATE ... last_id + 1).
CREATE TABLE IF NOT EXISTS elang_event_channels (
    name    text   PRIMARY KEY,
    last_id bigint NOT NULL DEFAULT 0 CHECK (last_id >= 0)
);

-- Replay history: events of a channel by their id, kept for the retention period.
CREATE TABLE IF NOT EXISTS elang_events (
    channel    text        NOT NULL,
    id         bigint      NOT NULL CHECK (id > 0),
    payload    bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (channel, id)
);
CREATE INDEX IF NOT EXISTS elang_events_created ON elang_events (created_at);

-- Jobs: the durable queue. A worker claims a ready job (FOR UPDATE SKIP LOCKED),
-- holds it until reserved_until, and finishes it (done), releases it (ready) or,
-- after its last attempt, gives it up (failed, kept for the operator).
CREATE TABLE IF NOT EXISTS elang_jobs (
    id             bigserial   PRIMARY KEY,
    queue          text        NOT NULL,
    payload        bytea       NOT NULL,
    state          text        NOT NULL DEFAULT 'ready' CHECK (state IN ('ready', 'reserved', 'done', 'failed')),
    attempts       integer     NOT NULL DEFAULT 0,
    reserved_until timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    finished_at    timestamptz
);
CREATE INDEX IF NOT EXISTS elang_jobs_ready ON elang_jobs (queue, id) WHERE state IN ('ready', 'reserved');
CREATE INDEX IF NOT EXISTS elang_jobs_finished ON elang_jobs (finished_at) WHERE state = 'done';

-- The outbox: one row per committed event or job, written in the application's own
-- transaction; the relay publishes pending rows (delivered_at IS NULL) in id order
-- and marks them only after Redis accepted. Pruning removes delivered rows only.
CREATE TABLE IF NOT EXISTS elang_outbox (
    id           bigserial   PRIMARY KEY,
    message_id   uuid        NOT NULL UNIQUE DEFAULT gen_random_uuid(),
    kind         text        NOT NULL CHECK (kind IN ('event', 'job')),
    -- what outbox_relay accepts (outbox.CheckName), so no row can stall the relay
    channel      text        NOT NULL CHECK (channel ~ '^[A-Za-z0-9._:-]{1,128}$'),
    ref          bigint      NOT NULL CHECK (ref > 0 AND ref <= 9007199254740991),
    created_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    stream_id    text,
    CHECK ((delivered_at IS NULL) = (stream_id IS NULL))
);
CREATE INDEX IF NOT EXISTS elang_outbox_pending ON elang_outbox (id) WHERE delivered_at IS NULL;
CREATE INDEX IF NOT EXISTS elang_outbox_delivered ON elang_outbox (delivered_at) WHERE delivered_at IS NOT NULL;
-- Prune keeps an event's history while its notification is pending.
CREATE INDEX IF NOT EXISTS elang_outbox_pending_ref ON elang_outbox (kind, channel, ref) WHERE delivered_at IS NULL;
