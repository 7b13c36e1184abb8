package specedit

// HANRealtime is the edit HAN VM1 spec §9, §14 (R6) foresees: vm1's DB1
// (realtime presence, Pub/Sub, coordination locks, settings snapshots) on a
// redis-server of its own, its two channels with it; DB0 and the legacy DB2
// stay on vm1's own server.
var HANRealtime = Split{
	Instance: "vm1",
	DB:       "db1",
	Server:   "realtime",
	Section: `source: "HAN VM1 spec §9, §14 (R6): DB0 and DB1 become separate instances"
doc: Realtime presence and Pub/Sub, coordination locks, settings snapshots.
persistence:
  mode: none
  source: >-
    HAN VM1 spec §5, §6, §10: presence is rebuilt by heartbeats and REST reconciliation,
    locks only spare PostgreSQL leases work, fencing tokens restart above Redis time,
    snapshots are read again
eviction:
  policy: volatile-lru
  reason: every key here has a TTL, and each is rebuilt after a loss
tbd:
  - "R1/R2 (HAN VM1 spec §14): maxmemory after the realtime load profile"
`,
	Channels: []string{"rt_dialog", "rt_user"},
}
