// Command worker is a payment worker on asynq v0.26: it charges each
// "charge" task through PAYMENT_URL, lets asynq retry the transient
// failures and archives the permanent and critical ones at once (asynq's
// archive is its dead letter queue). A 401/403 also posts a Slack alert to
// SLACK_WEBHOOK_URL, at most one a minute.
//
// It is the system under test of examples/asynq/drill.yaml: faultline
// starts it with the environment below and judges it from outside.
//
//	REDIS_URL          redis://host:port/db (asynq.ParseRedisURI)
//	QUEUE              the asynq queue to serve (default "default")
//	PAYMENT_URL        the payment dependency's call URL
//	SLACK_WEBHOOK_URL  where a critical failure is paged (optional)
//	CONCURRENCY        handler goroutines (default 10)
//	PAYMENT_TIMEOUT    the payment call's timeout (default 5s)
//	RETRY_DELAY        the delay before each retry (default 200ms)
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
)

// TaskCharge is the task type the worker handles.
const TaskCharge = "charge"

// alertEvery is the shortest time between two Slack alerts.
const alertEvery = time.Minute

func main() {
	if err := run(); err != nil {
		log.Printf("worker: %v", err)
		os.Exit(1)
	}
}

func run() error {
	redisOpt, err := asynq.ParseRedisURI(os.Getenv("REDIS_URL"))
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	payURL := os.Getenv("PAYMENT_URL")
	if payURL == "" {
		return errors.New("PAYMENT_URL is not set")
	}
	concurrency, err := envInt("CONCURRENCY", 10)
	if err != nil {
		return err
	}
	timeout, err := envDuration("PAYMENT_TIMEOUT", 5*time.Second)
	if err != nil {
		return err
	}
	retryDelay, err := envDuration("RETRY_DELAY", 200*time.Millisecond)
	if err != nil {
		return err
	}
	queue := envOr("QUEUE", "default")

	h := &handler{
		client:  &http.Client{Timeout: timeout},
		payURL:  payURL,
		alerter: &alerter{client: &http.Client{Timeout: 10 * time.Second}, url: os.Getenv("SLACK_WEBHOOK_URL")},
	}
	srv := asynq.NewServer(redisOpt, asynq.Config{
		Concurrency: concurrency,
		Queues:      map[string]int{queue: 1},
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration {
			return retryDelay
		},
		// Quick polling, so that a drill's jobs and retries move at once.
		TaskCheckInterval:        50 * time.Millisecond,
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		ShutdownTimeout:          10 * time.Second,
		LogLevel:                 asynq.ErrorLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(TaskCharge, h.charge)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("start asynq server: %w", err)
	}
	log.Printf("worker: serving queue %q, concurrency %d", queue, concurrency)
	<-ctx.Done()
	srv.Shutdown()
	return nil
}

// job is the job document faultline injects.
type job struct {
	ID             string          `json:"id"`
	Task           string          `json:"task"`
	Payload        json.RawMessage `json:"payload"`
	IdempotencyKey string          `json:"idempotency_key"`
}

type handler struct {
	client  *http.Client
	payURL  string
	alerter *alerter
}

// charge calls the payment dependency once for the task's job. A nil
// error acks the task; an error wrapping asynq.SkipRetry archives it at
// once; any other error makes asynq retry it until MaxRetry, then archive.
func (h *handler) charge(ctx context.Context, t *asynq.Task) error {
	var j job
	if err := json.Unmarshal(t.Payload(), &j); err != nil {
		return fmt.Errorf("bad job document: %w: %w", err, asynq.SkipRetry)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.payURL, bytes.NewReader(t.Payload()))
	if err != nil {
		return fmt.Errorf("build charge request: %w: %w", err, asynq.SkipRetry)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Faultline-Job", j.ID)
	if j.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", j.IdempotencyKey)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		// A timeout or a cut connection: transient (the idempotency key
		// makes the retry safe).
		return fmt.Errorf("charge %s: %w", j.ID, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusPaymentRequired:
		return fmt.Errorf("declined: %s: %w", bytes.TrimSpace(body), asynq.SkipRetry)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		h.alerter.alert(ctx, fmt.Sprintf(":rotating_light: payments: authentication failed (HTTP %d) charging job %s; charges are archived, not retried", code, j.ID))
		return fmt.Errorf("payment auth failed: HTTP %d: %w", code, asynq.SkipRetry)
	case code == http.StatusTooManyRequests || code >= 500:
		return fmt.Errorf("charge %s: transient HTTP %d", j.ID, code)
	default:
		return fmt.Errorf("charge %s: HTTP %d: %s: %w", j.ID, code, bytes.TrimSpace(body), asynq.SkipRetry)
	}
}

// alerter posts Slack-style alerts, at most one every alertEvery.
type alerter struct {
	client *http.Client
	url    string

	mu   sync.Mutex
	last time.Time
}

func (a *alerter) alert(ctx context.Context, text string) {
	if a.url == "" {
		return
	}
	a.mu.Lock()
	now := time.Now()
	if !a.last.IsZero() && now.Sub(a.last) < alertEvery {
		a.mu.Unlock()
		return
	}
	a.last = now
	a.mu.Unlock()
	if err := a.post(ctx, text); err != nil {
		log.Printf("worker: slack alert: %v", err)
		a.mu.Lock()
		a.last = time.Time{} // not delivered: the next failure tries again
		a.mu.Unlock()
	}
}

func (a *alerter) post(ctx context.Context, text string) error {
	body, err := json.Marshal(map[string]string{"text": text})
	if err != nil {
		return fmt.Errorf("encode alert: %w", err)
	}
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build alert request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("post alert: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post alert: HTTP %d", resp.StatusCode)
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a whole number above 0", name, v)
	}
	return n, nil
}

func envDuration(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}
