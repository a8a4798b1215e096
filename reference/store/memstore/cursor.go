package memstore

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// cursorKey is what a listing cursor holds: the (LastFailedAt, ID) of the
// last entry of a page. The next page starts strictly after it in the
// listing's order, so that entries written meanwhile neither repeat nor
// shift a page.
type cursorKey struct {
	At time.Time `json:"t"`
	ID string    `json:"id"`
}

// errCursor reports a cursor this store did not make.
var errCursor = errors.New("invalid cursor")

// makeCursor returns the opaque cursor of the page ending with d.
func makeCursor(d *dent) string {
	b, err := json.Marshal(cursorKey{At: d.at, ID: d.id})
	if err != nil { // a time.Time and a string always marshal
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// parseCursor reads a cursor back as a dent holding its key.
func parseCursor(s string) (*dent, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCursor, err)
	}
	var k cursorKey
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("%w: %v", errCursor, err)
	}
	return &dent{at: k.At, id: k.ID}, nil
}
