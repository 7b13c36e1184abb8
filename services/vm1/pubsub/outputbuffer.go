package pubsub

import (
	"context"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultSampleEvery is how often the Subscriber samples its connection's
// server-side output buffer when Options.Monitor is set.
const DefaultSampleEvery = 10 * time.Second

// Monitor runs CLIENT LIST for the output-buffer sampler. It must be a client of
// a monitoring user whose ACL allows client|list, such as the generated
// `vm1_monitor` (CLIENT LIST and PING only; `luagen acl` writes it), on
// database 0: api_backend's ACL never grants CLIENT, which would show it every
// other connection of the server.
type Monitor interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// sessionKey marks the context of a session's dials with its Subscriber, so the
// dial hook records the address of that Pub/Sub connection and of no other.
type sessionKey struct{}

// dialRecorder is the hook a Subscriber with a Monitor adds to its client: it
// records the local address of each connection dialled for one of its sessions,
// which CLIENT LIST shows as the connection's addr.
type dialRecorder struct{}

func (dialRecorder) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			if s, ok := ctx.Value(sessionKey{}).(*Subscriber); ok {
				s.connAddr.Store(conn.LocalAddr().String())
			}
		}
		return conn, err
	}
}

func (dialRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (dialRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// sampleLoop samples the output buffer every SampleEvery until ctx ends.
func (s *Subscriber) sampleLoop(ctx context.Context) {
	tick := time.NewTicker(s.o.SampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.sample(ctx)
		}
	}
}

// sample reads the omem of the live session's connection from CLIENT LIST
// TYPE pubsub and sets han_rt_pubsub_output_buffer_bytes.
func (s *Subscriber) sample(ctx context.Context) {
	addr, _ := s.connAddr.Load().(string)
	if addr == "" {
		s.setOutputBuffer(0) // no connection
		return
	}
	sctx, cancel := context.WithTimeout(ctx, s.o.SampleEvery)
	defer cancel()
	list, err := s.o.Monitor.Do(sctx, "client", "list", "type", "pubsub").Text()
	if err != nil {
		s.m.samples.WithLabelValues(sampleError).Inc()
		return
	}
	omem, ok := omemOf(list, addr)
	if !ok {
		s.m.samples.WithLabelValues(sampleNotFound).Inc()
		s.setOutputBuffer(0)
		return
	}
	s.m.samples.WithLabelValues(sampleOK).Inc()
	s.setOutputBuffer(omem)
}

// setOutputBuffer makes v this Subscriber's part of the shared gauge.
func (s *Subscriber) setOutputBuffer(v int64) {
	if prev := s.omem.Swap(v); prev != v {
		s.m.outputBuffer.Add(float64(v - prev))
	}
}

// omemOf finds the client whose addr is addr in CLIENT LIST output and returns
// its omem.
func omemOf(list, addr string) (int64, bool) {
	for _, line := range strings.Split(list, "\n") {
		var found bool
		var omem int64 = -1
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "addr":
				found = v == addr
			case "omem":
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					omem = n
				}
			}
		}
		if found && omem >= 0 {
			return omem, true
		}
	}
	return 0, false
}
