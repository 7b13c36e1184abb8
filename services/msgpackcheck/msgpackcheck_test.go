package msgpackcheck_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/hanchat/luagen/services/msgpackcheck"
	"github.com/vmihailenco/msgpack/v5"
)

func TestCheck(t *testing.T) {
	good, _ := msgpack.Marshal(map[string]any{"a": []int{1, 2}, "b": "x"})
	if err := msgpackcheck.Check(good, 1024); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"empty":          nil,
		"truncated":      good[:len(good)-1],
		"trailing bytes": append(append([]byte{}, good...), 0x01),
		"two values":     append(append([]byte{}, good...), good...),
		"lying str32":    {0xdb, 0xff, 0xff, 0xff, 0xff, 'x'},
		"lying array32":  {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01},
		"over the limit": make([]byte, 2000),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := msgpackcheck.Check(b, 1024)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, msgpackcheck.ErrMalformed) {
			t.Errorf("%s: err = %v", name, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
			t.Errorf("%s: checking allocated %d bytes", name, grew)
		}
	}
}
