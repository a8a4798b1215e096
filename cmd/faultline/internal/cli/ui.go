package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/ui"
)

// uiShutdownTimeout bounds how long faultline ui waits for requests in
// flight when it is stopped.
const uiShutdownTimeout = 10 * time.Second

// uiFlags are faultline ui's flags beyond the DLQ's.
type uiFlags struct {
	listen, tokens, certFile, keyFile string
	insecureHTTP, allowRequeue        bool
	hosts                             []string
}

func newUICommand() *cobra.Command {
	// The UI adds no entries: the DLQ's bound and policy are the store's
	// defaults.
	g := &dlqGlobal{layout: layout.PresetFaultline, overflow: store.Reject.String(), capacity: store.DefaultDLQCapacity}
	var f uiFlags
	c := &cobra.Command{
		Use:   "ui",
		Short: "Serve a web UI and JSON API for the dead letter queue",
		Long: `ui serves the DLQ of one namespace of faultline's Redis store in a browser, and
as a JSON API under /api/v1/: the dashboard, the list with faultline dlq's filters,
an entry's payload and history, and the same moves (requeue, edit, delete, restore,
quarantine, bulk requeue/delete of a filtered set after a confirmation stating the
exact count, with faultline dlq's cut-off rule). Every action is written to the
DLQ's audit stream and as one JSON line to stdout.

It listens on 127.0.0.1:8080 by default. Any other listen address requires named
tokens (--tokens FILE, lines name:token; the name is who acts) and TLS (--tls-cert
and --tls-key) unless --insecure-http says a proxy in front terminates TLS. With
tokens, the browser signs in with a token's name and the token (basic auth) and the
API takes "Authorization: Bearer TOKEN", for reads and moves alike. Without tokens
(loopback only) the pages and the API's reads (GET) need none and the OS user acts;
the API's moves (POST) are refused until --tokens names who may make them.
Requests whose Host header is not the listen host, localhost, 127.0.0.1, [::1]
or a --host name are refused.

With --layout seed it serves the tutorial's dead_letter and dlq:* lists instead
(--prefix names their keys' prefix), read-only: the list with the seed layout's
filters (severity, status, list, error text) and each entry; --allow-requeue adds
faultline dlq requeue --layout seed's safe requeue: one entry only if it is still
the one listed, and the filtered set after a confirmation stating the count, with
its cut-off (entries dead-lettered since are left alone), each move written to the
audit stream of --namespace, as faultline dlq requeue --layout seed writes it.

/metrics serves Prometheus metrics with the drills' names and labels (a bearer
token with --tokens); /api/v1/openapi.json describes the API.`,
		Example: `  faultline ui --namespace demo
  faultline ui --redis-url redis://10.0.0.5:6379/0 --listen 0.0.0.0:8443 --tokens ops-tokens.txt --tls-cert cert.pem --tls-key key.pem
  faultline ui --listen 10.0.0.7:8080 --tokens ops-tokens.txt --insecure-http --host dlq.internal.example
  faultline ui --layout seed --prefix myapp: --allow-requeue`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runUI(c, g, &f) },
	}
	fl := c.Flags()
	fl.StringVar(&g.redisURL, "redis-url", "", "the Redis holding the DLQ: a redis:// URL or host:port (default $"+dlqRedisEnv+", else "+dlqDefaultRedisURL+")")
	fl.StringVar(&g.namespace, "namespace", store.DefaultNamespace, "the store's namespace (faultline demo --backend redis uses \"demo\")")
	fl.StringVar(&f.listen, "listen", ui.DefaultListen, "the address to serve on; off loopback, --tokens and TLS are required")
	fl.StringVar(&f.tokens, "tokens", "", "a file of named tokens, one name:token a line (required off loopback; enables the API's moves)")
	fl.StringVar(&f.certFile, "tls-cert", "", "the TLS certificate (PEM), with --tls-key")
	fl.StringVar(&f.keyFile, "tls-key", "", "the TLS private key (PEM), with --tls-cert")
	fl.BoolVar(&f.insecureHTTP, "insecure-http", false, "serve plain HTTP off loopback: a proxy in front terminates TLS")
	fl.StringVar(&g.layout, "layout", layout.PresetFaultline, "the DLQ's layout: "+layout.PresetFaultline+" (this tool's store), or "+layout.PresetSeed+" (the tutorial's dead_letter and dlq:* lists)")
	fl.StringVar(&g.prefix, "prefix", "", "the seed layout's key prefix, with --layout seed (default none: dead_letter, dlq:*, default)")
	fl.BoolVar(&f.allowRequeue, "allow-requeue", false, "with --layout seed: allow the safe requeue (default read-only)")
	fl.StringSliceVar(&f.hosts, "host", nil, "an extra name the Host header may carry (a proxy's name; repeat or comma-separate)")
	return c
}

// uiConfigError turns a ui.ConfigError into invalid input.
func uiConfigError(c *cobra.Command, err error) error {
	var ce *ui.ConfigError
	if errors.As(err, &ce) {
		// The reason names the flags; "--tokens: ..." would be masked as a
		// secret by the redactor errors are printed through.
		return usage(c, errors.New(ce.Reason))
	}
	return usage(c, err)
}

func runUI(c *cobra.Command, g *dlqGlobal, f *uiFlags) error {
	cfg := ui.Config{Listen: f.listen, Hosts: f.hosts, InsecureHTTP: f.insecureHTTP, User: g.actor(), Log: c.OutOrStdout()}
	if (f.certFile == "") != (f.keyFile == "") {
		return usage(c, errors.New("--tls-cert and --tls-key go together: give both, or neither"))
	}
	var tlsCfg *tls.Config
	if f.certFile != "" {
		cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
		if err != nil {
			return usage(c, fmt.Errorf("--tls-cert/--tls-key: %w", err))
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		cfg.TLS = true
	}
	if f.tokens != "" {
		toks, err := ui.ReadTokens(f.tokens)
		if err != nil {
			return usage(c, err)
		}
		cfg.Tokens = toks
	}
	// Refuse an unsafe configuration before connecting to anything.
	if err := cfg.WithDefaults().ValidateSecurity(); err != nil {
		return uiConfigError(c, err)
	}
	if f.allowRequeue && !g.isSeed() {
		return usage(c, errors.New("--allow-requeue goes with --layout seed (faultline's layout always allows requeue)"))
	}
	if g.isSeed() {
		// With requeue, the moves are audited in --namespace's stream, as
		// faultline dlq requeue --layout seed audits them.
		s, err := g.openSeedAs(c, f.allowRequeue)
		if err != nil {
			return err
		}
		defer func() { _ = s.rdb.Close() }()
		cfg.Seed = &ui.SeedConfig{Client: s.rdb, Prefix: g.prefix, Requeue: f.allowRequeue}
		if s.audit != nil {
			cfg.Seed.Audit = s.audit.store
		}
		cfg.Namespace, cfg.Target = g.prefix, s.target.printable()
	} else {
		d, err := g.open(c, 0)
		if err != nil {
			return err
		}
		defer d.close()
		cfg.Store, cfg.Namespace, cfg.Target = d.store, d.namespace, d.target.printable()
	}
	h, err := ui.New(cfg)
	if err != nil {
		return uiConfigError(c, err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return usage(c, fmt.Errorf("--listen %s: %w", f.listen, err))
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	return serveUI(c.Context(), c, ln, h, cfg)
}

// serveUI serves h on ln until ctx ends, then shuts down gracefully.
func serveUI(ctx context.Context, c *cobra.Command, ln net.Listener, h http.Handler, cfg ui.Config) error {
	// ReadTimeout bounds a slow client's whole request (a payload edit is
	// the largest body); no WriteTimeout, so a long bulk run still answers.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	scheme := "http"
	if cfg.TLS {
		scheme = "https"
	}
	auth := "no tokens: the OS user " + cfg.User + " acts; the API's reads need no token here, its moves need --tokens"
	if len(cfg.Tokens) > 0 {
		auth = fmt.Sprintf("%d named tokens", len(cfg.Tokens))
	}
	fmt.Fprintf(c.ErrOrStderr(), "faultline ui: serving namespace %q at %s on %s://%s/ (%s)\n", cfg.Namespace, cfg.Target, scheme, ln.Addr(), auth)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), uiShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("stop serving: %w", err)
	}
	return nil
}
