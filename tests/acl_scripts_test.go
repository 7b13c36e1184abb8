package tests

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/vm1/legacystub"
	"github.com/redis/go-redis/v9"
)

// userClient connects as user through a redis:// URL, the way a service does.
func (a *aclInstance) userClient(t *testing.T, user string, db int) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(a.srv.URL(user, aclPasswords[user], db))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return a.withLoader(t, c)
}

// api_backend, under the generated ACL and config, loads and runs every VM1
// script in its database and reaches every prefix it owns, the settled
// han:settings:snapshot:* (CONTRADICTION 1) and han:legacy:* (CONTRADICTION 4) included.
func TestACLAPIBackendRunsEveryVM1Script(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := startACLInstance(t, "vm1")
	db0, db1, db2 := a.userClient(t, "api_backend", 0), a.userClient(t, "api_backend", 1), a.userClient(t, "api_backend", 2)
	if err := runtime.Preload(ctx, db0, vm1.AllScripts()...); err != nil {
		t.Fatalf("SCRIPT LOAD as api_backend: %v", err)
	}
	s, err := vm1.NewScripts(vm1.Clients{DB0: db0, DB1: db1, DB2: db2})
	if err != nil {
		t.Fatal(err)
	}
	user, conn, task, msg := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	owner, other := scripttest.Nonce(t), scripttest.Nonce(t)
	fp := "f3b1c2a8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6"
	rlUser, _ := vm1.NewAPIRLUserKey(user, vm1.APIRouteMessagesSend, 60)
	rlIP, _ := vm1.NewAPIRLIPKey(testHMACKey.Sum("203.0.113.9"), vm1.APIRoutePublicGet, 60)
	rlService, _ := vm1.NewAPIRLServiceKey("bitrix-sync", vm1.APIRouteInternalInbox, 60)
	marker := vm1.NewAPIJWKSNegativeKey("kid-1")
	record, _ := vm1.NewAPIIdemKey(vm1.IdemScopeMessageSend, user, testHMACKey.Sum("idem-key-1"))
	lock, _ := vm1.NewAPIIdemLockKey(vm1.IdemScopeMessageSend, user, testHMACKey.Sum("idem-key-1"))
	warmRecord, _ := vm1.NewAPIIdemKey(vm1.IdemScopeMessageSend, user, testHMACKey.Sum("idem-key-2"))
	warmLock, _ := vm1.NewAPIIdemLockKey(vm1.IdemScopeMessageSend, user, testHMACKey.Sum("idem-key-2"))
	coordLock, _ := vm1.NewCoordLockDeliveryKey(msg)
	fence, _ := vm1.NewCoordFenceDeliveryKey(msg)
	connKey, _ := vm1.NewRTConnKey(conn)
	userConns, _ := vm1.NewRTUserConnectionsKey(user)
	snapshot, _ := vm1.NewSettingsSnapshotKey(7)
	stubTask, _ := vm1.NewLegacySafetyTaskKey(task)

	slidingNonce := scripttest.Nonce(t)
	var fixedCharge, bucketCharge vm1.RateDecision
	calls := map[string]func() error{
		"rate_limit_sliding": func() error {
			_, err := s.RateLimitSliding(ctx, rlUser, vm1.RateLimitSlidingArgs{Limit: 5, Window: time.Minute, Cost: 1, Nonce: slidingNonce})
			return err
		},
		"rate_limit_fixed": func() error {
			var err error
			fixedCharge, err = s.RateLimitFixed(ctx, rlIP, vm1.RateLimitFixedArgs{Limit: 5, Window: time.Minute, Cost: 2})
			return err
		},
		"rate_limit_token_bucket": func() error {
			var err error
			bucketCharge, err = s.RateLimitTokenBucket(ctx, rlService, vm1.RateLimitTokenBucketArgs{Limit: 5, Window: time.Minute, Cost: 2})
			return err
		},
		"rate_limit_sliding_refund": func() error {
			_, err := s.RateLimitSlidingRefund(ctx, rlUser, vm1.RateLimitSlidingRefundArgs{Cost: 1, Nonce: slidingNonce})
			return err
		},
		"rate_limit_fixed_refund": func() error {
			_, err := s.RateLimitFixedRefund(ctx, rlIP, vm1.RateLimitFixedRefundArgs{Cost: 1, Window: time.Minute, ResetAt: fixedCharge.ResetAt.UnixMilli()})
			return err
		},
		"rate_limit_token_bucket_refund": func() error {
			_, err := s.RateLimitTokenBucketRefund(ctx, rlService, vm1.RateLimitTokenBucketRefundArgs{Limit: 5, Window: time.Minute, Cost: 1, ResetAt: bucketCharge.ResetAt.UnixMilli()})
			return err
		},
		"jwks_negative_mark":  func() error { _, err := s.JWKSNegativeMark(ctx, marker); return err },
		"jwks_negative_check": func() error { _, err := s.JWKSNegativeCheck(ctx, marker); return err },
		"idem_reserve": func() error {
			_, err := s.IdemReserve(ctx, record, lock, vm1.IdemReserveArgs{Fingerprint: fp, Owner: owner})
			return err
		},
		"idem_extend": func() error { _, err := s.IdemExtend(ctx, lock, vm1.IdemExtendArgs{Owner: owner}); return err },
		"idem_complete": func() error {
			_, err := s.IdemComplete(ctx, record, lock, vm1.IdemCompleteArgs{Owner: owner, Fingerprint: fp, Status: 201, Response: []byte{0x90}, ResourceID: msg})
			return err
		},
		"idem_release": func() error {
			_, err := s.IdemRelease(ctx, record, lock, vm1.IdemReleaseArgs{Owner: other})
			return err
		},
		"idem_warm": func() error {
			_, err := s.IdemWarm(ctx, warmRecord, warmLock, vm1.IdemWarmArgs{Owner: owner, Fingerprint: fp, Status: 201, Response: []byte{0x90}, ResourceID: msg, Version: 2, TTL: time.Hour})
			return err
		},
		"lock_acquire": func() error {
			_, err := s.LockAcquire(ctx, coordLock, fence, vm1.LockAcquireArgs{Owner: owner, LockTTL: 30 * time.Second})
			return err
		},
		"lock_extend": func() error {
			_, err := s.LockExtend(ctx, coordLock, vm1.LockExtendArgs{Owner: owner, LockTTL: 30 * time.Second})
			return err
		},
		"lock_release": func() error { _, err := s.LockRelease(ctx, coordLock, vm1.LockReleaseArgs{Owner: owner}); return err },
		"rt_heartbeat": func() error {
			_, err := s.RTHeartbeat(ctx, connKey, userConns, vm1.RTHeartbeatArgs{ConnectionID: conn, UserID: user, Instance: "api-1", Subscriptions: 2})
			return err
		},
		"rt_connections": func() error { _, err := s.RTConnections(ctx, userConns, vm1.RTConnectionsArgs{Limit: 10}); return err },
		"rt_cleanup":     func() error { _, err := s.RTCleanup(ctx, userConns, vm1.RTCleanupArgs{Batch: 10}); return err },
		"rt_disconnect": func() error {
			_, err := s.RTDisconnect(ctx, connKey, userConns, vm1.RTDisconnectArgs{ConnectionID: conn, UserID: user})
			return err
		},
		"settings_snapshot_put": func() error {
			_, err := s.SettingsSnapshotPut(ctx, snapshot, vm1.SettingsSnapshotPutArgs{Value: []byte{0x80}})
			return err
		},
		"settings_snapshot_get": func() error { _, err := s.SettingsSnapshotGet(ctx, snapshot); return err },
		"stub_task_create": func() error {
			_, err := s.StubTaskCreate(ctx, stubTask, vm1.StubTaskCreateArgs{State: "pending"})
			return err
		},
		"stub_task_poll": func() error { _, err := s.StubTaskPoll(ctx, stubTask); return err },
	}
	for _, sc := range vm1.AllScripts() {
		if _, ok := calls[sc.Name()]; !ok {
			t.Errorf("script %s is not exercised: add it to this test", sc.Name())
		}
	}
	// In dependency order: reserve before complete, acquire before extend, ...
	order := []string{"rate_limit_sliding", "rate_limit_fixed", "rate_limit_token_bucket",
		"rate_limit_sliding_refund", "rate_limit_fixed_refund", "rate_limit_token_bucket_refund", "jwks_negative_mark", "jwks_negative_check",
		"idem_reserve", "idem_extend", "idem_release", "idem_complete", "idem_warm", "lock_acquire", "lock_extend", "lock_release",
		"rt_heartbeat", "rt_connections", "rt_cleanup", "rt_disconnect", "settings_snapshot_put", "settings_snapshot_get",
		"stub_task_create", "stub_task_poll"}
	for _, name := range order {
		if err := calls[name](); err != nil {
			t.Errorf("%s as api_backend: %v", name, err)
		}
	}
	if len(order) != len(calls) {
		t.Fatalf("order lists %d scripts, calls %d", len(order), len(calls))
	}
	for db, c := range map[int]*redis.Client{0: a.srv.Client(0, admin), 1: a.srv.Client(1, admin), 2: a.srv.Client(2, admin)} {
		scripttest.AuditTTLs(t, c, vm1.Keys)
		if n := c.DBSize(ctx).Val(); n == 0 {
			t.Errorf("db %d holds no key: the scripts did not write there", db)
		}
	}
	if a.srv.Client(1, admin).Exists(ctx, snapshot.String()).Val() != 1 {
		t.Error("the settings snapshot (han:settings:snapshot:*) was not written")
	}

	// The legacy stub's cutover runs as api_backend too (SCAN and UNLINK are granted
	// while db2 is alive) and leaves no stub key behind.
	stub := legacystub.New(s)
	if _, err := legacystub.Cutover(ctx, stub, db2, legacystub.CutoverOptions{}); err != nil {
		t.Fatalf("cutover as api_backend: %v", err)
	}
	if keys, _ := a.srv.Client(2, admin).Keys(ctx, legacystub.Namespace).Result(); len(keys) != 0 {
		t.Fatalf("stub keys left after the cutover: %v", keys)
	}
}

// message_safety, under the generated ACL and config, runs every VM2 script.
func TestACLMessageSafetyRunsEveryVM2Script(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := startACLInstance(t, "vm2")
	c := a.userClient(t, "message_safety", 0)
	if err := runtime.Preload(ctx, c, vm2.AllScripts()...); err != nil {
		t.Fatalf("SCRIPT LOAD as message_safety: %v", err)
	}
	s, err := vm2.NewScripts(vm2.Clients{DB0: c})
	if err != nil {
		t.Fatal(err)
	}
	entry, _ := vm2.NewSafetyDNSKey("0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0", vm2.DNSRRTypeA)
	bucket, _ := vm2.NewSafetyRLServiceKey("api-backend", 60)
	calls := map[string]func() error{
		"cache_set": func() error {
			_, err := s.CacheSet(ctx, entry, vm2.CacheSetArgs{Value: []byte{0x90}, Stamp: 3, TTL: time.Minute, MaxTTL: vm2.SafetyDNSMaxTTL})
			return err
		},
		"cache_get": func() error { _, err := s.CacheGet(ctx, entry, vm2.CacheGetArgs{Stamp: 3}); return err },
		"safety_rate_limit": func() error {
			_, err := s.SafetyRateLimit(ctx, bucket, vm2.SafetyRateLimitArgs{Limit: 5, Window: time.Minute, Cost: 1})
			return err
		},
	}
	for _, sc := range vm2.AllScripts() {
		call, ok := calls[sc.Name()]
		if !ok {
			t.Errorf("script %s is not exercised: add it to this test", sc.Name())
			continue
		}
		if err := call(); err != nil {
			t.Errorf("%s as message_safety: %v", sc.Name(), err)
		}
	}
	scripttest.AuditTTLs(t, a.srv.Client(0, admin), vm2.Keys)
}

// admin connects as the test-only admin user.
func admin(o *redis.Options) { o.Username, o.Password = "luagen_test_admin", "admin-test-password" }
