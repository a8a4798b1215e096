package oracle_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/faultline/faultline/oracle"
)

// FuzzRead: Read never panics on any input; what it refuses matches
// ErrHistory, and what it reads goes through Write and Read again.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"historyVersion":1,"scenario":"s","timeScale":1,"durationMs":1000,"endedMs":1000,"workers":["w1"],"snapshots":[{}]}`))
	f.Add([]byte(`{"historyVersion":2,"records":[` + "\n" + `{"job":{"atMs":0,"id":"a","task":"t","outcome":"ok"}}` + "\n" +
		`,{"event":{"id":"1-0","atMs":1,"from":"none","to":"queued","reason":"enqueued","attempts":0,"i":0}}` + "\n" +
		`,{"snapshot":{"atMs":2,"afterEvents":1,"counts":{},"stats":{}}}` + "\n" +
		`],"history":{"historyVersion":2,"scenario":"s","seed":1,"timeScale":1,"durationMs":1000,"endedMs":1000,"workers":["w1"]}}`))
	f.Add([]byte(`{"historyVersion":2,"records":[{"call":{"i":0}}],"history":{}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := oracle.Read(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, oracle.ErrHistory) {
				t.Fatalf("an error not matching ErrHistory: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := oracle.Write(&out, h); err != nil {
			t.Fatalf("Write of what Read read: %v", err)
		}
		if _, err := oracle.Read(&out); err != nil {
			t.Fatalf("Read of what Write wrote: %v", err)
		}
	})
}
