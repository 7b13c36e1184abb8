// Command apiservice is luagen's smallest example: an HTTP API with a spec of
// its own (keyspec.yaml here) and five scripts (lua/api): a rate limit per API
// client (GCRA), idempotency keys that make a retried POST safe, and a lock
// around the work. It generates its package into internal/redisgen (go
// generate) and serves POST /orders on the typed wrappers. Run it with
// REDIS_URL set, e.g. REDIS_URL=redis://127.0.0.1:6380/0 ADDR=127.0.0.1:8080.
package main

//go:generate go run github.com/hanchat/luagen/cmd/luagen generate --spec keyspec.yaml --lua lua --out internal/redisgen

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hanchat/luagen/examples/apiservice/internal/redisgen/api"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/redis/go-redis/v9"
)

func main() {
	if err := run(context.Background()); err != nil {
		slog.Error("apiservice", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	// Not redis.ParseURL: its error quotes the URL, password included.
	opts, err := secrets.ParseRedisURL(api.DB0URLEnv, os.Getenv(api.DB0URLEnv))
	if err != nil {
		return err
	}
	client := redis.NewClient(opts)
	defer client.Close()
	scripts, err := api.NewScripts(api.Clients{DB0: client})
	if err != nil {
		return err
	}
	// Under luagen's aclfile the application user runs scripts but may not
	// load them: the deploy step loads them (luagen load), or, as here, the
	// service recovers NOSCRIPT through the loader user's client, for these
	// exact scripts only.
	if raw := os.Getenv("API_LOADER_URL"); raw != "" {
		lopts, err := secrets.ParseRedisURL("API_LOADER_URL", raw)
		if err != nil {
			return err
		}
		loader := redis.NewClient(lopts)
		defer loader.Close()
		runtime.WithLoader(client, loader, api.AllScripts()...)
		if err := runtime.Preload(ctx, client, api.AllScripts()...); err != nil {
			return err
		}
	}
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	srv := &http.Server{Addr: addr, Handler: newHandler(scripts, defaultLimits), ReadHeaderTimeout: 5 * time.Second}
	slog.Info("apiservice: listening", "addr", addr)
	return srv.ListenAndServe()
}

// limits are the service's policy: each client's rate limit, and how long
// a request holds its idempotency key and its lock.
type limits struct {
	Rate      api.RateLimitArgs
	Lease     time.Duration // a running request's hold on its idempotency key and lock
	Retention time.Duration // how long a response is replayed to retries
}

var defaultLimits = limits{
	Rate:      api.RateLimitArgs{Limit: 10, Period: time.Second, Burst: 20, Cost: 1},
	Lease:     30 * time.Second,
	Retention: 24 * time.Hour,
}

// handler serves POST /orders: the client names itself in X-Client-ID and
// may send an Idempotency-Key; each order it places gets the next number.
type handler struct {
	scripts *api.Scripts
	limits  limits
	orders  atomic.Int64 // the orders placed: the work a retry must not repeat
}

func newHandler(scripts *api.Scripts, l limits) *handler {
	return &handler{scripts: scripts, limits: l}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/orders" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	ctx := r.Context()
	client := r.Header.Get("X-Client-ID")
	rate, err := api.NewRateKey(client)
	if err != nil {
		// The builder refused the id (the error names the part, not the value).
		http.Error(w, "bad X-Client-ID", http.StatusBadRequest)
		return
	}
	d, err := h.scripts.RateLimit(ctx, rate, h.limits.Rate)
	if err != nil {
		h.fail(w, "rate limit", err)
		return
	}
	w.Header().Set("RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
	if !d.Allowed {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((d.RetryAfter+time.Second-1)/time.Second), 10))
		http.Error(w, "rate limited", http.StatusTooManyRequests)
		return
	}
	// One order at a time per client, whatever number of this service's
	// processes serve it.
	release, err := h.lock(ctx, "orders."+client)
	if err != nil {
		h.fail(w, "lock", err)
		return
	}
	if release == nil {
		http.Error(w, "another order of this client is being placed", http.StatusConflict)
		return
	}
	defer release()

	header := r.Header.Get("Idempotency-Key")
	if header == "" {
		status, body, err := h.placeOrder()
		h.reply(w, status, body, err)
		return
	}
	idem, err := api.NewIdempotencyKey(client, header)
	if err != nil {
		http.Error(w, "bad X-Client-ID", http.StatusBadRequest)
		return
	}
	owner := token()
	begun, err := h.scripts.IdemBegin(ctx, idem, api.IdemBeginArgs{Owner: owner, Lease: h.limits.Lease})
	switch {
	case err != nil:
		h.fail(w, "idempotency", err)
		return
	case begun.State == api.IdemStateDone:
		w.Header().Set("Idempotent-Replayed", "true")
		h.reply(w, int(begun.Status), begun.Body, nil)
		return
	case begun.State == api.IdemStateRunning:
		// A request with this key started and neither finished nor ran out
		// of its lease (it may have crashed): the client retries later.
		http.Error(w, "a request with this Idempotency-Key is running", http.StatusConflict)
		return
	}
	status, body, err := h.placeOrder()
	if err != nil {
		h.fail(w, "order", err)
		return // no response stored: a retry runs again once the lease ends
	}
	if _, err := h.scripts.IdemFinish(ctx, idem, api.IdemFinishArgs{Owner: owner, Status: int64(status), Body: body, Retention: h.limits.Retention}); err != nil {
		if !errors.Is(err, api.ErrNotOwner) {
			h.fail(w, "idempotency", err)
			return
		}
		// The lease ran out while the order was placed: the response is the
		// caller's, but a retry may have started again.
		slog.Warn("apiservice: idempotency lease lost", "client", client)
	}
	h.reply(w, status, body, nil)
}

// lock takes the lock of resource for the lease; release gives it back, and
// is nil when another holder has it.
func (h *handler) lock(ctx context.Context, resource string) (release func(), err error) {
	key, err := api.NewLockKey(resource)
	if err != nil {
		return nil, err
	}
	owner := token()
	got, err := h.scripts.LockAcquire(ctx, key, api.LockAcquireArgs{Owner: owner, Lease: h.limits.Lease})
	if err != nil || !got {
		return nil, err
	}
	return func() {
		// A context of its own: the lock goes back even when the request's ended.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if _, err := h.scripts.LockRelease(rctx, key, api.LockReleaseArgs{Owner: owner}); err != nil {
			slog.Warn("apiservice: lock release", "err", err)
		}
	}, nil
}

// placeOrder is the work a retry must not repeat: the next order number.
func (h *handler) placeOrder() (int, []byte, error) {
	body, err := json.Marshal(map[string]int64{"order": h.orders.Add(1)})
	return http.StatusCreated, body, err
}

func (h *handler) reply(w http.ResponseWriter, status int, body []byte, err error) {
	if err != nil {
		h.fail(w, "order", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// fail answers 503 for what Redis could not do; the log has the error, which
// names scripts and keys, never a value.
func (h *handler) fail(w http.ResponseWriter, step string, err error) {
	slog.Error("apiservice: "+step, "err", err)
	http.Error(w, "unavailable", http.StatusServiceUnavailable)
}

// token is a random owner token of 22 URL-safe characters.
func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
