package adapter

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout"
)

// ErrNotReady is matched by a probe's answer that the system is not ready
// yet (as opposed to a probe that could not be asked at all).
var ErrNotReady = errors.New("not ready")

// Probe asks whether the system is ready for its first job.
type Probe interface {
	// Ready returns nil when it is, else why not.
	Ready(ctx context.Context) error
}

// NewProbe returns the probe r describes, its strings expanded by env.
func NewProbe(r layout.Ready, env Env) (Probe, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	switch {
	case r.Command != nil:
		spec, err := newCommandSpec(*r.Command, env)
		if err != nil {
			return nil, fmt.Errorf("ready: %w", err)
		}
		return commandProbe{spec: spec}, nil
	case r.HTTP != nil:
		return httpProbe{client: env.httpClient(), url: env.expand(r.HTTP.URL), header: expandHeader(r.HTTP.Header, env)}, nil
	default:
		if env.Redis == nil {
			return nil, fmt.Errorf("ready: redisKey: %w: no Redis client", ErrEnv)
		}
		return keyProbe{rdb: env.Redis, key: env.expand(r.RedisKey)}, nil
	}
}

// commandProbe runs a command: exit 0 is ready.
type commandProbe struct{ spec commandSpec }

func (c commandProbe) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, CommandReadTimeout)
	defer cancel()
	cmd := c.spec.command(ctx)
	errTail := &tail{}
	cmd.Stderr = c.spec.stderrWriter(errTail)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("command %s: %w: %w%s", c.spec, ErrNotReady, err, stderrNote(errTail))
	}
	return nil
}

// httpProbe GETs a URL: 2xx is ready.
type httpProbe struct {
	client *http.Client
	url    string
	header map[string]string
}

func (h httpProbe) Ready(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", h.url, err)
	}
	for k, v := range h.header {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w: %w", h.url, ErrNotReady, err)
	}
	defer resp.Body.Close()
	if !ok2xx(resp.StatusCode) {
		return fmt.Errorf("%w: %w", ErrNotReady, statusError(http.MethodGet, h.url, resp))
	}
	return nil
}

// keyProbe checks a Redis key exists.
type keyProbe struct {
	rdb redis.UniversalClient
	key string
}

func (k keyProbe) Ready(ctx context.Context) error {
	n, err := k.rdb.Exists(ctx, k.key).Result()
	switch {
	case err != nil:
		return fmt.Errorf("EXISTS %s: %w", k.key, err)
	case n == 0:
		return fmt.Errorf("key %s: %w: it does not exist yet", k.key, ErrNotReady)
	}
	return nil
}
