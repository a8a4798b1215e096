// Command observe is faultline's DLQ adapter for the asynq worker: it
// prints every archived task of queue QUEUE as one JSON line,
//
//	{"id": ..., "job": <the job document>, "error": ..., "retries": N, "failed_at": RFC 3339, "status": "archived"}
//
// read with asynq's Inspector. A queue asynq does not know yet has an empty
// archive. The archive is read in pages of pageSize, above asynq's cap of
// 10,000 archived tasks, so one page — one Lua script, an atomic read —
// is the whole archive.
//
//	REDIS_URL  redis://host:port/db (asynq.ParseRedisURI)
//	QUEUE      the asynq queue (default "default")
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/hibiken/asynq"
)

// pageSize is the page read at a time.
const pageSize = 20000

// entry is one archived task as faultline reads it.
type entry struct {
	ID       string          `json:"id"`
	Job      json.RawMessage `json:"job"`
	Error    string          `json:"error"`
	Retries  int             `json:"retries"`
	FailedAt string          `json:"failed_at,omitempty"`
	Status   string          `json:"status"`
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Printf("observe: %v", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	redisOpt, err := asynq.ParseRedisURI(os.Getenv("REDIS_URL"))
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	queue := os.Getenv("QUEUE")
	if queue == "" {
		queue = "default"
	}
	insp := asynq.NewInspector(redisOpt)
	defer insp.Close()

	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	for page := 1; ; page++ {
		tasks, err := insp.ListArchivedTasks(queue, asynq.PageSize(pageSize), asynq.Page(page))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("list archived tasks of %q, page %d: %w", queue, page, err)
		}
		for _, t := range tasks {
			if err := enc.Encode(toEntry(t)); err != nil {
				return fmt.Errorf("write entry %s: %w", t.ID, err)
			}
		}
		if len(tasks) < pageSize {
			break
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write entries: %w", err)
	}
	return nil
}

func toEntry(t *asynq.TaskInfo) entry {
	e := entry{ID: t.ID, Error: t.LastErr, Retries: t.Retried, Status: "archived"}
	if json.Valid(t.Payload) {
		e.Job = json.RawMessage(t.Payload)
	} else {
		// Not a job document: keep the bytes, as a JSON string.
		b, _ := json.Marshal(string(t.Payload))
		e.Job = b
	}
	if !t.LastFailedAt.IsZero() {
		e.FailedAt = t.LastFailedAt.UTC().Format(time.RFC3339)
	}
	return e
}
