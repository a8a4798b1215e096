package ui

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/dlq"
)

// signedPlan is a bulk action as its confirmation (or the API's dry run)
// stated it: the server signs it, the run carries it back, and the server
// runs what it signed, refusing a request that differs from it.
type signedPlan struct {
	Action string `json:"action"`
	// Filter is the canonical filter (dlq.FilterSpec.String()), Query the
	// spec's values (to rebuild it).
	Filter string    `json:"filter"`
	Query  string    `json:"query"`
	IDs    []string  `json:"ids,omitempty"`
	CutOff time.Time `json:"cut_off"`
	Stated int       `json:"stated"`
	Who    string    `json:"who"`
}

// mac is the server's HMAC of msg for purpose.
func (s *server) mac(purpose string, msg []byte) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(purpose + "\x00"))
	m.Write(msg)
	return hex.EncodeToString(m.Sum(nil))
}

// sealText returns msg and its HMAC as one opaque text.
func (s *server) sealText(purpose string, msg []byte) string {
	return base64.RawURLEncoding.EncodeToString(msg) + "." + s.mac(purpose, msg)
}

// openText checks a text sealText returned and gives msg back.
func (s *server) openText(purpose, text string) ([]byte, bool) {
	b64, sig, ok := strings.Cut(text, ".")
	if !ok {
		return nil, false
	}
	msg, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil || !hmac.Equal([]byte(sig), []byte(s.mac(purpose, msg))) {
		return nil, false
	}
	return msg, true
}

// signPlan returns p's plan text, as stated to its operator (p.Opts.By).
func (s *server) signPlan(p *BulkPlan) string {
	sp := signedPlan{Action: p.Action, Filter: p.Spec.String(), Query: p.Spec.Values().Encode(), IDs: p.IDs,
		CutOff: p.CutOff.UTC(), Stated: p.Stated, Who: p.Opts.By}
	if len(p.IDs) > 0 {
		sp.CutOff = time.Time{} // a selection moves its entries: no cut-off applies
	}
	b, _ := json.Marshal(sp) // strings, ints and a time: cannot fail
	return s.sealText("plan", b)
}

// enforcePlan checks the request's plan p against the plan text the
// confirmation issued: a text this server did not sign, another operator's,
// or any field of p that differs is refused (an *InputError naming it). On
// success p is the signed plan (its budget and queue kept).
func (s *server) enforcePlan(p *BulkPlan, text string) error {
	if text == "" {
		return &InputError{Field: "plan", Reason: "required: the plan the confirmation (or the dry run) issued"}
	}
	msg, ok := s.openText("plan", text)
	var sp signedPlan
	if !ok || json.Unmarshal(msg, &sp) != nil {
		return &InputError{Field: "plan", Reason: "not a plan this server issued (altered, or from before a restart): confirm again"}
	}
	if sp.Who != p.Opts.By {
		return &InputError{Field: "plan", Reason: fmt.Sprintf("confirmed by %q, not by %q: confirm it yourself", sp.Who, p.Opts.By)}
	}
	q, err := url.ParseQuery(sp.Query)
	if err != nil {
		return &InputError{Field: "plan", Reason: "its filter cannot be read: confirm again"}
	}
	spec := dlq.FilterSpecFromValues(q)
	changed := func(field, confirmed, got string) error {
		return &InputError{Field: field, Reason: fmt.Sprintf("changed since the confirmation: it confirmed %s, this request says %s; nothing moved, confirm again", confirmed, got)}
	}
	switch {
	case sp.Action != p.Action:
		return changed("action", strconv.Quote(sp.Action), strconv.Quote(p.Action))
	case spec.String() != sp.Filter || p.Spec.String() != sp.Filter:
		return changed("filter", filterText(sp.Filter), filterText(p.Spec.String()))
	case !slices.Equal(sp.IDs, p.IDs):
		return changed("id", strconv.Quote(strings.Join(sp.IDs, " ")), strconv.Quote(strings.Join(p.IDs, " ")))
	case len(sp.IDs) == 0 && !sp.CutOff.Equal(p.CutOff):
		return changed("cut_off", cutOffText(sp.CutOff), cutOffText(p.CutOff))
	case sp.Stated != p.Stated:
		return changed("stated", strconv.Itoa(sp.Stated), strconv.Itoa(p.Stated))
	}
	p.Spec, p.IDs, p.Stated = spec, sp.IDs, sp.Stated
	if len(sp.IDs) == 0 {
		p.CutOff = sp.CutOff
	}
	return nil
}

func filterText(f string) string {
	if f == "" {
		return "no filter (every entry)"
	}
	return strconv.Quote(f)
}

func cutOffText(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
