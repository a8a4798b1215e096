package adapter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
)

var (
	_ Injector = (*faultlineInjector)(nil)
	_ Reader   = (*faultlineReader)(nil)
)

// listPage is how many DLQ entries the faultline preset's reader asks the
// store for at a time.
const listPage = 500

func newStore(env Env) (*redisstore.Store, error) {
	if env.Redis == nil {
		return nil, fmt.Errorf("the faultline preset: %w: no Redis client", ErrEnv)
	}
	st, err := redisstore.New(env.Redis, store.Config{Namespace: env.Namespace, EventStream: env.EventStream})
	if err != nil {
		return nil, fmt.Errorf("the faultline preset: %w", err)
	}
	return st, nil
}

// faultlineInjector enqueues reference jobs in the namespace's store, the
// way the simulator and a drill's producer make them: the queue named by
// the task.
type faultlineInjector struct {
	st  *redisstore.Store
	env Env
}

func newFaultlineInjector(env Env) (*faultlineInjector, error) {
	st, err := newStore(env)
	if err != nil {
		return nil, fmt.Errorf("inject: %w", err)
	}
	return &faultlineInjector{st: st, env: env}, nil
}

// Inject enqueues the job on the queue named by its task. Its payload is
// the layout.Job's, as bytes.
func (f *faultlineInjector) Inject(ctx context.Context, j layout.Job) error {
	now := f.env.clock().Now()
	rj := job.Job{ID: j.ID, Task: j.Task, Queue: j.Task, IdempotencyKey: j.Key, EnqueuedAt: now}
	if j.Key != "" {
		rj.KeyRecordedAt = now
	}
	if j.Payload != "" {
		rj.Payload = []byte(j.Payload)
	}
	if err := f.st.Enqueue(ctx, rj, now); err != nil {
		return fmt.Errorf("inject into namespace %s: %w", f.st.Config().Namespace, err)
	}
	return nil
}

func (f *faultlineInjector) Close() error { return nil }

// faultlineReader lists the reference DLQ of the namespace.
type faultlineReader struct {
	st     *redisstore.Store
	fields layout.Fields
}

func newFaultlineReader(env Env, fields layout.Fields) (*faultlineReader, error) {
	st, err := newStore(env)
	if err != nil {
		return nil, fmt.Errorf("dlq: %w", err)
	}
	return &faultlineReader{st: st, fields: fields}, nil
}

// Read lists every entry, of every status, in the store's order (newest
// failure first), each as dlq.Encode writes it (a corrupt entry: its
// stored bytes), read with the layout's fields. Its source is "dlq ID".
// A corrupt entry stays corrupt even when its bytes read (a newer
// version's entry), and keeps the ID it is stored under.
func (f *faultlineReader) Read(ctx context.Context) ([]layout.Entry, error) {
	var out []layout.Entry
	cursor := ""
	for {
		page, err := f.st.List(ctx, dlq.Filter{}, cursor, listPage)
		if err != nil {
			return nil, fmt.Errorf("read DLQ of namespace %s: %w", f.st.Config().Namespace, err)
		}
		for _, e := range page.Entries {
			out = append(out, f.entry(e))
		}
		if page.Next == "" {
			return out, nil
		}
		cursor = page.Next
	}
}

func (f *faultlineReader) entry(e dlq.Entry) layout.Entry {
	src := "dlq " + e.ID()
	if e.Corrupt {
		le := layout.ParseEntry(src, e.Raw, f.fields).RequireID()
		if le.Corrupt == "" {
			le.Corrupt = e.DecodeError
		}
		if le.JobID == "" {
			le.JobID = e.ID()
		}
		return le
	}
	raw, err := dlq.Encode(e)
	if err != nil {
		b, _ := json.Marshal(err.Error())
		return layout.Entry{Source: src, Raw: b, JobID: e.ID(), Corrupt: "encode: " + err.Error()}
	}
	return layout.ParseEntry(src, raw, f.fields).RequireID()
}

func (f *faultlineReader) Close() error { return nil }
