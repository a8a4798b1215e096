// Command inject is faultline's inject adapter for the asynq worker: it
// reads job documents, one JSON line each, on stdin and enqueues each as
// an asynq task of type "charge" whose payload is the line, whose task ID
// is the job's id (so the job is found by it in asynq's archive), on queue
// QUEUE with MaxRetry(3). For every line read it prints one line: "ok",
// or the error.
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
	"strings"

	"github.com/hibiken/asynq"
)

// maxLine bounds one job document (faultline's payloads are at most 1 MiB).
const maxLine = 2 << 20

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		log.Printf("inject: %v", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	redisOpt, err := asynq.ParseRedisURI(os.Getenv("REDIS_URL"))
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	queue := os.Getenv("QUEUE")
	if queue == "" {
		queue = "default"
	}
	client := asynq.NewClient(redisOpt)
	defer client.Close()

	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		answer := "ok"
		if err := enqueue(client, queue, line); err != nil {
			answer = strings.ReplaceAll(err.Error(), "\n", " ")
		}
		if _, err := fmt.Fprintln(out, answer); err != nil {
			return fmt.Errorf("write answer: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read jobs: %w", err)
	}
	return nil
}

func enqueue(client *asynq.Client, queue string, line []byte) error {
	var doc struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(line, &doc); err != nil {
		return fmt.Errorf("job document: %w", err)
	}
	if doc.ID == "" {
		return errors.New("job document: no id")
	}
	payload := make([]byte, len(line))
	copy(payload, line)
	_, err := client.Enqueue(asynq.NewTask("charge", payload),
		asynq.TaskID(doc.ID), asynq.Queue(queue), asynq.MaxRetry(3))
	if err != nil {
		return fmt.Errorf("enqueue %s: %w", doc.ID, err)
	}
	return nil
}
