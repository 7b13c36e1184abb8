package pubsub_test

import (
	"context"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/services/vm1/pubsub"
	"github.com/redis/go-redis/v9"
)

// MessageCreated is a DTO of the realtime contract: ids and counters only; the
// text is fetched through the API.
type MessageCreated struct {
	DialogID string `msgpack:"d"`
	Seq      int64  `msgpack:"s"`
}

// A gateway subscribes to a dialog, forwards its events, and runs its REST
// reconciliation whenever the Subscriber says events may have been missed.
func ExampleSubscriber() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6380", DB: vm1.DB1})
	contract, err := pubsub.NewContract(pubsub.Allow[MessageCreated]("message.created"))
	if err != nil {
		panic(err)
	}
	dialog, err := pubsub.Dialog("0b7f9a4e-51c2-4d8e-a3f6-2c9d8e7b1a05")
	if err != nil {
		panic(err)
	}
	reconcile := func(ctx context.Context, g pubsub.Gap) error {
		// GET /dialogs/{id}/messages?since=... for each channel of g
		return nil
	}
	sub, err := pubsub.NewSubscriber(client, contract, reconcile, pubsub.Options{Channels: []pubsub.Channel{dialog}})
	if err != nil {
		panic(err)
	}
	go func() { _ = sub.Run(ctx) }()
	for d := range sub.Events() {
		_ = d.Event.DTO.(MessageCreated) // forward to the websocket
	}
}
