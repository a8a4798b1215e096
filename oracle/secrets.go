package oracle

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reports"
)

// secretNote says what a drill cannot see of InvNoSecretLeaves.
const secretNote = "not observable in a drill: its history keeps a notification's summaries only, not its jobs' error texts and payload fields (the summaries and the report were judged and leaked nothing)"

// Secrets is the checker of no-planted-secret-leaves: no text the scenario
// planted as a secret leaves in a notification (Notification) or in the
// report as it is written (Result), and a job created with one keeps its
// payload in the DLQ as created. The engine feeds it every notification
// and the jobs it plants secrets in; the ledger's judge of a drill the
// notifications its history kept (summaries only: InvariantResult says
// the rest is not observable).
type Secrets struct {
	led     *Ledger
	secrets []string
	drill   bool
	// planted are the payloads of the jobs created with a planted secret,
	// by job ID, in plantedOrder.
	planted      map[string][]byte
	plantedOrder []string
}

// NewSecrets returns the checker of secrets (a scenario's
// invariants.secrets; none: it checks nothing), whose violations led
// records; drill says the run is a drill's, whose history keeps only part
// of the texts.
func NewSecrets(led *Ledger, secrets []string, drill bool) *Secrets {
	return &Secrets{led: led, secrets: secrets, drill: drill}
}

// maxSecretDepth bounds the walk of a value for planted secrets.
const maxSecretDepth = 24

// secretsIn returns where in v (a path like "Alerts[0].Jobs[1].Error") the
// first planted secret is, and its index in secrets; "" when none is. skip
// names struct fields not to walk.
func secretsIn(v reflect.Value, secrets []string, skip map[string]bool) (string, int) {
	var walk func(v reflect.Value, path string, depth int) (string, int)
	walk = func(v reflect.Value, path string, depth int) (string, int) {
		if depth > maxSecretDepth || !v.IsValid() {
			return "", -1
		}
		switch v.Kind() {
		case reflect.String:
			return found(v.String(), path, secrets)
		case reflect.Interface, reflect.Pointer:
			if v.IsNil() {
				return "", -1
			}
			return walk(v.Elem(), path, depth+1)
		case reflect.Slice, reflect.Array:
			if v.Type().Elem().Kind() == reflect.Uint8 { // bytes: a payload
				if v.Kind() == reflect.Slice {
					return found(string(v.Bytes()), path, secrets)
				}
				return "", -1
			}
			for i := range v.Len() {
				if p, k := walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1); p != "" {
					return p, k
				}
			}
		case reflect.Map:
			it := v.MapRange()
			for it.Next() {
				key := fmt.Sprint(it.Key())
				if p, k := walk(it.Key(), path+"{key}", depth+1); p != "" {
					return p, k
				}
				if p, k := walk(it.Value(), path+"["+key+"]", depth+1); p != "" {
					return p, k
				}
			}
		case reflect.Struct:
			if v.Type() == reflect.TypeFor[time.Time]() {
				return "", -1
			}
			for i := range v.NumField() {
				f := v.Type().Field(i)
				if !f.IsExported() || (depth == 0 && skip[f.Name]) {
					continue
				}
				name := f.Name
				if path != "" {
					name = path + "." + name
				}
				if p, k := walk(v.Field(i), name, depth+1); p != "" {
					return p, k
				}
			}
		}
		return "", -1
	}
	return walk(v, "", 0)
}

func found(s, path string, secrets []string) (string, int) {
	for i, secret := range secrets {
		if strings.Contains(s, secret) {
			if path == "" {
				path = "the text"
			}
			return path, i
		}
	}
	return "", -1
}

// Notification fails InvNoSecretLeaves for a notification to receiver that
// carries a planted secret, naming the job it is about.
func (c *Secrets) Notification(receiver string, n alert.Notification) {
	secrets := c.secrets
	if len(secrets) == 0 {
		return
	}
	for _, a := range n.Alerts {
		path, k := secretsIn(reflect.ValueOf(a), secrets, nil)
		if path == "" {
			continue
		}
		id := ""
		for i, j := range a.Jobs {
			if strings.HasPrefix(path, fmt.Sprintf("Jobs[%d]", i)) || id == "" {
				id = j.ID
			}
		}
		c.led.Fail(InvNoSecretLeaves, c.led.Job(id), "a notification to receiver %s (alert %s) carries the secret invariants.secrets[%d] in its %s%s: what a page carries must be redacted",
			receiver, a.Fingerprint, k, path, aboutJob(id))
	}
}

func aboutJob(id string) string {
	if id == "" {
		return ""
	}
	return ", about job " + id
}

// Result fails InvNoSecretLeaves for a field of res, as it is written,
// that carries a planted secret, and for a job created with one whose
// stored DLQ payload (entry reads it) is not the one it was created with.
func (c *Secrets) Result(res *reports.Result, entry func(id string) (dlq.Entry, bool)) {
	secrets := c.secrets
	if len(secrets) == 0 {
		return
	}
	written := reports.Redact(res)
	if path, k := secretsIn(reflect.ValueOf(*written), secrets, map[string]bool{"Config": true, "Description": true}); path != "" {
		id := ""
		var idx int // a DLQ entry's field names the entry's job
		if _, err := fmt.Sscanf(path, "DLQ.Entries[%d]", &idx); err == nil && idx < len(res.DLQ.Entries) {
			id = res.DLQ.Entries[idx].JobID
		}
		c.led.Fail(InvNoSecretLeaves, c.led.Job(id), "the report carries the secret invariants.secrets[%d] in its field %s%s: every report field is redacted before it is written",
			k, path, aboutJob(id))
	}
	for _, id := range c.plantedOrder {
		e, ok := entry(id)
		if !ok {
			continue
		}
		if !bytes.Equal(e.Job.Payload, c.planted[id]) {
			c.led.Fail(InvNoSecretLeaves, c.led.Job(id), "job %s's payload in the DLQ is not the one it was created with (%d bytes, %d created): stored data is never redacted, so a requeue sends the job as it was",
				id, len(e.Job.Payload), len(c.planted[id]))
		}
	}
}

// Plant notes a job created with a payload that carries a planted secret.
func (c *Secrets) Plant(id string, payload []byte) {
	for _, secret := range c.secrets {
		if bytes.Contains(payload, []byte(secret)) {
			if c.planted == nil {
				c.planted = map[string][]byte{}
			}
			if _, ok := c.planted[id]; !ok {
				c.plantedOrder = append(c.plantedOrder, id)
			}
			c.planted[id] = bytes.Clone(payload)
			return
		}
	}
}

// InvariantResult is InvNoSecretLeaves' line of the report, for a
// scenario that plants secrets (false otherwise); stopped says where a run
// that stopped early stopped.
func (c *Secrets) InvariantResult(stopped string) (reports.InvariantResult, bool) {
	if len(c.secrets) == 0 {
		return reports.InvariantResult{}, false
	}
	ir := reports.InvariantResult{Name: InvNoSecretLeaves, Verdict: reports.Passed, Violations: c.led.ViolationCount(InvNoSecretLeaves)}
	switch {
	case ir.Violations > 0:
		ir.Verdict = reports.Failed
	case c.drill:
		ir.Verdict, ir.Note = reports.NotObservable, secretNote
	case stopped != "":
		ir.Verdict, ir.Note = reports.Skipped, "not checked to the end: "+stopped
	}
	return ir, true
}
