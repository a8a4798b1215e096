package sim

import (
	"bytes"
	"fmt"
	"github.com/faultline/faultline/oracle"
	"reflect"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reports"
)

// InvNoSecretLeaves: see oracle.InvNoSecretLeaves.
const InvNoSecretLeaves = oracle.InvNoSecretLeaves

// secretNote says what a drill cannot see of InvNoSecretLeaves.
const secretNote = "not observable in a drill: its history keeps a notification's summaries only, not its jobs' error texts and payload fields (the summaries and the report were judged and leaked nothing)"

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

// checkNotificationSecrets fails InvNoSecretLeaves for a notification to
// receiver that carries a planted secret, naming the job it is about.
func (w *world) checkNotificationSecrets(receiver string, n alert.Notification) {
	secrets := w.sc.Invariants.Secrets
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
		w.led.Fail(InvNoSecretLeaves, w.led.Job(id), "a notification to receiver %s (alert %s) carries the secret invariants.secrets[%d] in its %s%s: what a page carries must be redacted",
			receiver, a.Fingerprint, k, path, aboutJob(id))
	}
}

func aboutJob(id string) string {
	if id == "" {
		return ""
	}
	return ", about job " + id
}

// checkResultSecrets fails InvNoSecretLeaves for a field of res, as it is
// written, that carries a planted secret, and for a job created with one
// whose stored DLQ payload is not the one it was created with.
func (w *world) checkResultSecrets(res *reports.Result) {
	secrets := w.sc.Invariants.Secrets
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
		w.led.Fail(InvNoSecretLeaves, w.led.Job(id), "the report carries the secret invariants.secrets[%d] in its field %s%s: every report field is redacted before it is written",
			k, path, aboutJob(id))
	}
	for _, id := range w.plantedOrder {
		e, ok := w.entry(id)
		if !ok {
			continue
		}
		if !bytes.Equal(e.Job.Payload, w.planted[id]) {
			w.led.Fail(InvNoSecretLeaves, w.led.Job(id), "job %s's payload in the DLQ is not the one it was created with (%d bytes, %d created): stored data is never redacted, so a requeue sends the job as it was",
				id, len(e.Job.Payload), len(w.planted[id]))
		}
	}
}

// plant notes a job created with a payload that carries a planted secret.
func (w *world) plant(id string, payload []byte) {
	for _, secret := range w.sc.Invariants.Secrets {
		if bytes.Contains(payload, []byte(secret)) {
			if w.planted == nil {
				w.planted = map[string][]byte{}
			}
			if _, ok := w.planted[id]; !ok {
				w.plantedOrder = append(w.plantedOrder, id)
			}
			w.planted[id] = bytes.Clone(payload)
			return
		}
	}
}

// secretResult is InvNoSecretLeaves' line of the report, for a scenario
// that plants secrets.
func (w *world) secretResult(stopped string) (reports.InvariantResult, bool) {
	if len(w.sc.Invariants.Secrets) == 0 {
		return reports.InvariantResult{}, false
	}
	ir := reports.InvariantResult{Name: InvNoSecretLeaves, Verdict: reports.Passed, Violations: w.led.ViolationCount(InvNoSecretLeaves)}
	switch {
	case ir.Violations > 0:
		ir.Verdict = reports.Failed
	case w.judge != nil:
		ir.Verdict, ir.Note = reports.NotObservable, secretNote
	case stopped != "":
		ir.Verdict, ir.Note = reports.Skipped, "not checked to the end: "+stopped
	}
	return ir, true
}
