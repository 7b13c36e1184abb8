-- coord_leases: the PostgreSQL row lease behind each coordination lock (seed 000 §6).
-- The Redis lock han:coord:lock:* only spares PostgreSQL the contention; this row
-- decides who does the work. A claim takes the row with FOR UPDATE SKIP LOCKED
-- when its lease is free or expired and raises fence, which never goes down, so a
-- write fenced by (owner, fence) refuses a holder whose lease was taken over.
-- Unqualified names: the table lands in the first schema of the search_path.
CREATE TABLE IF NOT EXISTS coord_leases (
    name        text        PRIMARY KEY CHECK (octet_length(name) BETWEEN 1 AND 200),
    owner       text        CHECK (octet_length(owner) BETWEEN 1 AND 64),
    lease_until timestamptz,
    fence       bigint      NOT NULL DEFAULT 0 CHECK (fence >= 0),
    CHECK ((owner IS NULL) = (lease_until IS NULL))
);
