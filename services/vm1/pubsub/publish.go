package pubsub

import (
	"context"
	"errors"
	"fmt"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/redis/go-redis/v9"
)

// Channel is one realtime channel and its payload limit. Build it with Dialog or
// User.
type Channel struct {
	name     string
	maxBytes int
}

// String is the channel's name in Redis.
func (c Channel) String() string { return c.name }

// MaxBytes is the largest payload the channel carries.
func (c Channel) MaxBytes() int { return c.maxBytes }

// Dialog is han:rt:dialog:{dialog_id}.
func Dialog(dialogID string) (Channel, error) {
	c, err := vm1.NewRTDialogChannel(dialogID)
	if err != nil {
		return Channel{}, err
	}
	return Channel{name: c.String(), maxBytes: vm1.RTDialogChannelMaxBytes}, nil
}

// User is han:rt:user:{user_id}.
func User(userID string) (Channel, error) {
	c, err := vm1.NewRTUserChannel(userID)
	if err != nil {
		return Channel{}, err
	}
	return Channel{name: c.String(), maxBytes: vm1.RTUserChannelMaxBytes}, nil
}

// Publishing is the part of a go-redis client a Publisher uses: PUBLISH.
type Publishing interface {
	Publish(ctx context.Context, channel string, message any) *redis.IntCmd
}

// Publisher publishes events the Contract allows. It is safe for concurrent use.
type Publisher struct {
	c        Publishing
	contract *Contract
}

// NewPublisher returns a Publisher on c (a client of VM1; Pub/Sub ignores the
// database) that encodes events with contract.
func NewPublisher(c Publishing, contract *Contract) *Publisher {
	return &Publisher{c: c, contract: contract}
}

// Publish sends ev on ch and returns how many subscribers received it (zero is
// not an error: delivery is at-most-once). Nothing is sent when ev is invalid,
// not allowed or too large for ch.
func (p *Publisher) Publish(ctx context.Context, ch Channel, ev Event) (int64, error) {
	if ch.name == "" {
		return 0, errors.New("pubsub: publish: empty Channel (build it with Dialog or User)")
	}
	if p.c == nil || p.contract == nil {
		return 0, errors.New("pubsub: publish: the Publisher has no client or no contract (NewPublisher with nil)")
	}
	b, err := p.contract.Encode(ev, ch.maxBytes)
	if err != nil {
		return 0, fmt.Errorf("pubsub: publish: %w", err)
	}
	n, err := p.c.Publish(ctx, ch.name, b).Result()
	if err != nil {
		return 0, fmt.Errorf("pubsub: publish: %w", err)
	}
	return n, nil
}
