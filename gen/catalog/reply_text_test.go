package catalog

import (
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
)

// A list whose elements are each one value shows its element type.
func TestReplyTextShowsListElementType(t *testing.T) {
	whole := keyspec.Reply{Value: &keyspec.Field{Name: "counts", Type: keyspec.ReplyList, Of: keyspec.ReplyInt}}
	if got := replyText(whole); got != "counts list of int" {
		t.Errorf("whole reply: %q", got)
	}
	arr := keyspec.Reply{Fields: []*keyspec.Field{{Name: "ids", Type: keyspec.ReplyList, Of: keyspec.ReplyStrings}, {Name: "total", Type: keyspec.ReplyInt}}}
	if got := replyText(arr); got != "[ids list of strings, total int]" {
		t.Errorf("array reply: %q", got)
	}
}
