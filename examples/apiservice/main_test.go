package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hanchat/luagen/examples/apiservice/internal/redisgen/api"
	"github.com/hanchat/luagen/internal/redistest"
)

// service is the handler on its scripts on a real redis-server of its own, behind
// an httptest server.
func service(t *testing.T, l limits) (*handler, *httptest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	scripts, err := api.NewScripts(api.Clients{DB0: srv.Client(api.DB0)})
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(scripts, l)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return h, ts
}

type response struct {
	status   int
	body     string
	replayed bool
}

func post(t *testing.T, ts *httptest.Server, client, idempotencyKey string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/orders", nil)
	if err != nil {
		t.Error(err)
		return response{}
	}
	req.Header.Set("X-Client-ID", client)
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Error(err)
		return response{}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, body: string(b), replayed: res.Header.Get("Idempotent-Replayed") == "true"}
}

// concurrently makes n requests at once and counts the replies by status.
func concurrently(t *testing.T, n int, do func() response) (map[int]int, []response) {
	t.Helper()
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		all    []response
		wg     sync.WaitGroup
		start  = make(chan struct{})
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := do()
			mu.Lock()
			counts[r.status]++
			all = append(all, r)
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return counts, all
}

// 60 requests of one client at once against a burst of 20 (and a rate too
// slow to refill within the test): exactly 20 get past the rate limit (each
// placed its order, or met the client's lock held by another), exactly 40 are
// refused with a Retry-After, and each order placed has a number of its own.
func TestRateLimitAndLockUnderConcurrency(t *testing.T) {
	h, ts := service(t, limits{Rate: api.RateLimitArgs{Limit: 20, Period: time.Hour, Burst: 20, Cost: 1}, Lease: 30 * time.Second, Retention: time.Hour})
	counts, all := concurrently(t, 60, func() response { return post(t, ts, "client-1", "") })
	if counts[http.StatusTooManyRequests] != 40 || counts[http.StatusCreated]+counts[http.StatusConflict] != 20 || len(counts) > 3 {
		t.Fatalf("replies by status %v, want 40 × 429 and 20 × 201 or 409", counts)
	}
	if got := h.orders.Load(); got != int64(counts[http.StatusCreated]) {
		t.Fatalf("%d orders placed, %d replies said so", got, counts[http.StatusCreated])
	}
	seen := map[string]bool{}
	for _, r := range all {
		if r.status == http.StatusCreated {
			if seen[r.body] {
				t.Fatalf("two orders answered %s", r.body)
			}
			seen[r.body] = true
		}
	}
	// Another client has a limit of its own.
	if r := post(t, ts, "client-2", ""); r.status != http.StatusCreated {
		t.Fatalf("another client: %+v", r)
	}
	if r := post(t, ts, "client:*", ""); r.status != http.StatusBadRequest {
		t.Fatalf("a client id that could forge a key: %+v", r)
	}
}

// 30 retries of one POST at once (one Idempotency-Key): one order is placed;
// every other retry meets the client's lock or the running request (409), or
// gets the stored response; once it is done, every retry gets that response.
func TestIdempotentRetriesPlaceOneOrder(t *testing.T) {
	h, ts := service(t, limits{Rate: api.RateLimitArgs{Limit: 1000, Period: time.Second, Burst: 1000, Cost: 1}, Lease: 30 * time.Second, Retention: time.Hour})
	counts, all := concurrently(t, 30, func() response { return post(t, ts, "client-1", "order-7f3a") })
	if counts[http.StatusCreated]+counts[http.StatusConflict] != 30 || counts[http.StatusCreated] < 1 {
		t.Fatalf("replies by status %v, want 201 or 409 only, one 201 at least", counts)
	}
	if got := h.orders.Load(); got != 1 {
		t.Fatalf("%d orders placed for one Idempotency-Key, want 1", got)
	}
	var created string
	for _, r := range all {
		if r.status == http.StatusCreated {
			if created != "" && r.body != created {
				t.Fatalf("two answers to one request: %s and %s", created, r.body)
			}
			created = r.body
		}
	}
	for i := range 5 {
		r := post(t, ts, "client-1", "order-7f3a")
		if r.status != http.StatusCreated || r.body != created || !r.replayed {
			t.Fatalf("retry %d after the request finished: %+v, want the stored %s", i, r, created)
		}
	}
	// The same Idempotency-Key of another client is another request.
	if r := post(t, ts, "client-2", "order-7f3a"); r.status != http.StatusCreated || r.replayed || r.body == created {
		t.Fatalf("another client's key: %+v", r)
	}
	if got := h.orders.Load(); got != 2 {
		t.Fatalf("%d orders, want 2", got)
	}
}

// The Retry-After a refused client gets is the exact wait, rounded up to whole
// seconds.
func TestRetryAfter(t *testing.T) {
	_, ts := service(t, limits{Rate: api.RateLimitArgs{Limit: 1, Period: time.Minute, Burst: 1, Cost: 1}, Lease: 30 * time.Second, Retention: time.Hour})
	if r := post(t, ts, "client-1", ""); r.status != http.StatusCreated {
		t.Fatalf("first: %+v", r)
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/orders", nil)
	req.Header.Set("X-Client-ID", "client-1")
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if res.StatusCode != http.StatusTooManyRequests || err != nil || secs < 59 || secs > 60 {
		t.Fatalf("second: %d, Retry-After %q, want 429 and 59..60 s", res.StatusCode, res.Header.Get("Retry-After"))
	}
}
