package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// dlqRedisEnv names the environment variable that gives faultline dlq its
// Redis when --redis-url is not passed.
const dlqRedisEnv = "FAULTLINE_REDIS_URL"

// dlqDefaultRedisURL is the Redis of faultline dlq when neither --redis-url
// nor FAULTLINE_REDIS_URL says otherwise.
const dlqDefaultRedisURL = "redis://127.0.0.1:6379/0"

// dlqOutputs are the values --output takes.
var dlqOutputs = []string{"table", "json", "jsonl"}

// dlqGlobal holds the flags every faultline dlq subcommand shares.
type dlqGlobal struct {
	redisURL  string
	namespace string
	by        string
	// layout is --layout: "faultline", or "seed" for the tutorial's lists
	// (dlq_seed.go); prefix is the seed layout's key prefix.
	layout string
	prefix string
	// capacity and overflow are the DLQ's bound and policy as the
	// namespace's workers configure them (the store keeps no copy): what
	// import and migrate obey, and what a flush of held dead letters
	// during them fills up to.
	capacity int
	overflow string
}

func newDLQCommand() *cobra.Command {
	g := &dlqGlobal{}
	c := &cobra.Command{
		Use:   "dlq",
		Short: "Read and reprocess the dead letter queue faultline's Redis store holds",
		Long: `dlq shows and reprocesses the DLQ of one namespace of faultline's Redis store
(reference/store/redisstore): the entries a worker, a drill or the demo dead-lettered.

Reads (stats, list, show) take --output table|json|jsonl. Moves (requeue, delete,
restore, quarantine, purge) are each one guarded step per entry: a requeue that
meets an entry already requeued says so instead of requeueing it twice. Bulk moves
take their cut-off time when the count is shown, so an entry that dies again while
they run is not picked up twice.

Every command that changes data (requeue, delete, restore, quarantine, purge, edit,
import, migrate, upgrade) asks for confirmation on a terminal, stating what it will
do and where; in a script (stdin not a terminal) it needs --yes, else it exits 2,
changing nothing, its message ending "add --yes". --dry-run, where a command has
it, shows what it would do and needs no --yes. (edit in $EDITOR: saving is the
confirmation.)

The namespace defaults to "` + store.DefaultNamespace + `", the reference store's default; ` + "`faultline demo\n--backend redis`" + ` writes into the namespace "demo" (--namespace demo).

A namespace that holds no faultline key at all (a typo in --namespace, another Redis
or database) reads as an empty DLQ: every command but import, migrate and upgrade
says so on stderr, naming the namespaces that do hold keys there (found by a SCAN
bounded to about 100,000 keys), and exits as it would for an empty DLQ (0 for a read).

Exit codes: 0 done; 1 an import stopped at a full DLQ (the message says how many
were imported and the capacity); 2 invalid input (a flag, an unknown ID, a line of an
import over --max-line-bytes, or no --yes without a terminal); 3 an internal error;
4 Redis could not be reached, or was still loading its dataset (LOADING) after ` + defaultLoadingWait.String() + `
of retries.`,
		Example: `  faultline dlq stats --redis-url redis://127.0.0.1:6379/0 --namespace demo
  faultline dlq list --severity high --since 2h --output jsonl
  faultline dlq show ord-42
  faultline dlq requeue --all --task charge --dry-run
  faultline dlq requeue ord-42 ord-43 --yes
  faultline dlq list --layout seed
  faultline dlq migrate --from-layout seed --namespace default`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			err := fmt.Errorf("unknown command %q for %q", args[0], c.CommandPath())
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				err = fmt.Errorf("unknown command %q for %q; did you mean %q?", args[0], c.CommandPath(), s[0])
			}
			return usage(c, err)
		},
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	pf := c.PersistentFlags()
	pf.StringVar(&g.redisURL, "redis-url", "", "the Redis holding the DLQ: a redis:// URL or host:port (default $"+dlqRedisEnv+", else "+dlqDefaultRedisURL+")")
	pf.StringVar(&g.namespace, "namespace", store.DefaultNamespace, "the store's namespace (faultline demo --backend redis uses \"demo\")")
	pf.StringVar(&g.by, "by", "", "who acts, for the entries' status history and the audit stream (default: the OS user)")
	pf.IntVar(&g.capacity, "capacity", store.DefaultDLQCapacity, "the DLQ's bound as the namespace's workers configure it (import and migrate obey it)")
	pf.StringVar(&g.overflow, "overflow", store.Reject.String(), "the DLQ's overflow policy as the workers configure it: reject, evict-oldest (import and migrate obey it)")
	addLayoutFlags(pf, g)
	c.AddCommand(newDLQStatsCommand(g), newDLQListCommand(g), newDLQShowCommand(g), newDLQRequeueCommand(g),
		newDLQDeleteCommand(g), newDLQRestoreCommand(g), newDLQQuarantineCommand(g), newDLQPurgeCommand(g),
		newDLQMigrateCommand(g))
	c.AddCommand(newDLQExportCommand(g))
	c.AddCommand(newDLQImportCommand(g))
	c.AddCommand(newDLQEditCommand(g))
	c.AddCommand(newDLQAuditCommand(g))
	c.AddCommand(newDLQUpgradeCommand(g))
	return c
}

// dlqConn is an open DLQ: the store, where it is, and what closes it.
type dlqConn struct {
	store     *redisstore.Store
	rdb       *redis.Client
	target    redisTarget
	namespace string
	close     func()
}

// open connects to the DLQ the flags name. A bad flag is invalid input; a
// Redis that cannot be reached is an *UnavailableError naming its address.
// A namespace that holds nothing is noted on stderr (noteIfNothing), but for
// the commands that may write into a new one (writesNew).
func (g *dlqGlobal) open(c *cobra.Command, batch int) (*dlqConn, error) {
	if err := g.faultlineLayout(c); err != nil {
		return nil, err
	}
	if c.Flags().Changed("namespace") && strings.TrimSpace(g.namespace) == "" {
		return nil, usage(c, errors.New("--namespace: empty; leave the flag out for the default namespace "+strconv.Quote(store.DefaultNamespace)))
	}
	cfg := store.Config{Namespace: g.namespace, BatchSize: batch, DLQCapacity: g.capacity}
	switch g.overflow {
	case store.Reject.String():
		cfg.Overflow = store.Reject
	case store.EvictOldest.String():
		cfg.Overflow = store.EvictOldest
	default:
		return nil, usage(c, fmt.Errorf("--overflow: unknown policy %q (allowed: reject, evict-oldest)", masked(g.overflow)))
	}
	if g.capacity < 1 {
		return nil, usage(c, fmt.Errorf("--capacity must be at least 1, got %d", g.capacity))
	}
	if err := cfg.Validate(); err != nil {
		var ce *store.ConfigError
		if errors.As(err, &ce) && ce.Field == "BatchSize" {
			return nil, usage(c, fmt.Errorf("--batch: %s, got %d", ce.Reason, batch))
		}
		if errors.As(err, &ce) && ce.Field == "Namespace" {
			return nil, usage(c, fmt.Errorf("--namespace %q: %s", masked(g.namespace), ce.Reason))
		}
		return nil, usage(c, err)
	}
	t, client, err := g.connect(c)
	if err != nil {
		return nil, err
	}
	s, err := redisstore.New(client, cfg)
	if err != nil {
		_ = client.Close()
		return nil, usage(c, err)
	}
	if err := checkLayout(c, s); err != nil {
		_ = client.Close()
		return nil, err
	}
	d := &dlqConn{store: s, rdb: client, target: t, namespace: cfg.WithDefaults().Namespace, close: func() { _ = client.Close() }}
	// A read or a move in a namespace that holds nothing is most likely a
	// typo in --namespace: said on stderr. Not for the commands that may
	// fill a new namespace.
	if !writesNew[c.Name()] {
		if err := d.noteIfNothing(c); err != nil {
			d.close()
			return nil, err
		}
	}
	return d, nil
}

// connect parses --redis-url (else $FAULTLINE_REDIS_URL, else the default)
// and pings that Redis. A bad URL is invalid input; a Redis that cannot be
// reached is an *UnavailableError naming its address. A Redis that answers
// LOADING (still loading its dataset) is waited for, up to loadingWait, by
// every command of the client (loadingHook); then it is an *UnavailableError
// too.
func (g *dlqGlobal) connect(c *cobra.Command) (redisTarget, *redis.Client, error) {
	raw := g.redisURL
	if !c.Flags().Changed("redis-url") {
		if env := strings.TrimSpace(os.Getenv(dlqRedisEnv)); env != "" {
			raw = env
		} else {
			raw = dlqDefaultRedisURL
		}
	}
	t, err := parseRedisURL(raw)
	if err != nil {
		return t, nil, usage(c, err)
	}
	client := t.client()
	// A Redis restarted and still loading its dataset answers LOADING: the
	// command waits for it, for a while, instead of failing at once.
	client.AddHook(newLoadingHook(t.addr, loadingWait, c.ErrOrStderr()))
	if err := client.Ping(c.Context()).Err(); err != nil {
		_ = client.Close()
		var (
			ue      *UnavailableError
			refused *RedisRefusedError
		)
		switch {
		case errors.As(err, &refused):
			return t, nil, usage(c, refused)
		case errors.As(err, &ue):
			return t, nil, ue
		case redisRefusedUs(err):
			return t, nil, usage(c, fmt.Errorf("--redis-url: Redis at %s refused: %w", t.printable(), err))
		case connectionLost(err):
			return t, nil, &UnavailableError{Service: "Redis", Addr: t.addr, Op: "connect", Err: err}
		}
		return t, nil, fmt.Errorf("connect to Redis at %s: %w", t.printable(), err)
	}
	return t, client, nil
}

// actor is who acts: --by, else the OS user.
func (g *dlqGlobal) actor() string {
	if g.by != "" {
		return g.by
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

// dlqOutput checks an --output value.
func dlqOutput(c *cobra.Command, v string) error {
	for _, o := range dlqOutputs {
		if v == o {
			return nil
		}
	}
	return usage(c, fmt.Errorf("--output: unknown value %q (allowed: %s)", masked(v), strings.Join(dlqOutputs, ", ")))
}

func addOutputFlag(c *cobra.Command, p *string) {
	c.Flags().StringVarP(p, "output", "o", "table", "output format: "+strings.Join(dlqOutputs, ", "))
}

// filterFlags are the flags that select entries, shared by list and the bulk
// moves.
type filterFlags struct {
	severities, tasks, classes, errorTypes, statuses []string
	since, until                                     string
	// text is --error-text: a case-insensitive substring of the last error.
	text string
}

func (ff *filterFlags) add(c *cobra.Command) {
	f := c.Flags()
	f.StringSliceVar(&ff.severities, "severity", nil, "only these severities: low, medium, high (repeat or comma-separate)")
	f.StringSliceVar(&ff.tasks, "task", nil, "only these tasks")
	f.StringSliceVar(&ff.classes, "class", nil, "only these classes: transient, rate-limited, indeterminate, permanent, critical, canceled")
	f.StringSliceVar(&ff.errorTypes, "error-type", nil, "only these error types of the last failure, e.g. *failure.HTTPError")
	f.StringSliceVar(&ff.statuses, "status", nil, "only these statuses: failed, requeued, deleted, quarantined")
	f.StringVar(&ff.since, "since", "", "only entries whose last failure is at or after this: RFC 3339 or a duration ago (2h, 30m, 7d)")
	f.StringVar(&ff.until, "until", "", "only entries whose last failure is before this: RFC 3339 or a duration ago")
	f.StringVar(&ff.text, "error-text", "", "only entries whose last error contains this text, case-insensitively (with --layout seed: the error or its type)")
}

// set reports whether any filter flag was given.
func (ff *filterFlags) set() bool {
	return len(ff.severities)+len(ff.tasks)+len(ff.classes)+len(ff.errorTypes)+len(ff.statuses) > 0 ||
		ff.since != "" || ff.until != "" || ff.text != ""
}

// filter reads the flags into a dlq.Filter; a bad value is invalid input
// naming its flag.
func (ff *filterFlags) filter(c *cobra.Command, now time.Time) (dlq.Filter, error) {
	if err := ff.noEmpty(c); err != nil {
		return dlq.Filter{}, err
	}
	spec := ff.spec()
	f, err := spec.Parse(now)
	if fe := (*dlq.FieldError)(nil); errors.As(err, &fe) {
		return f, usage(c, fmt.Errorf("--%s: %w", fe.Field, fe.Err))
	}
	return f, err
}

// noEmpty refuses a filter flag given an empty value: --severity "$SEV"
// with SEV unset must not turn a bulk move into a move of every entry.
func (ff *filterFlags) noEmpty(c *cobra.Command) error {
	empty := func(xs ...string) bool {
		for _, x := range xs {
			if strings.TrimSpace(x) != "" {
				return false
			}
		}
		return true
	}
	for name, v := range map[string][]string{
		dlq.FieldSeverity: ff.severities, dlq.FieldTask: ff.tasks, dlq.FieldClass: ff.classes,
		dlq.FieldErrorType: ff.errorTypes, dlq.FieldStatus: ff.statuses,
		dlq.FieldSince: {ff.since}, dlq.FieldUntil: {ff.until}, dlq.FieldErrorText: {ff.text},
	} {
		if f := c.Flags().Lookup(name); f != nil && f.Changed && empty(v...) {
			return usage(c, fmt.Errorf("--%s: an empty value selects nothing; leave the flag out to select every entry", name))
		}
	}
	return nil
}

// spec is the flags as the filter an operator typed (dlq.FilterSpec: the
// web UI's query parameters are the same fields).
func (ff *filterFlags) spec() dlq.FilterSpec {
	return dlq.FilterSpec{
		Severities: ff.severities, Tasks: ff.tasks, Classes: ff.classes, ErrorTypes: ff.errorTypes,
		Statuses: ff.statuses, Since: ff.since, Until: ff.until, ErrorText: ff.text,
	}
}

// confirmation is how a command that changes data gets its go-ahead: --yes,
// or an answer on a terminal.
type confirmation struct {
	yes, dryRun bool
	// hasDryRun says the command has a --dry-run (its own or add's), for
	// the refusal's hint.
	hasDryRun bool
}

// add adds --yes and --dry-run to c; what says what a dry run shows.
func (cf *confirmation) add(c *cobra.Command, what string) {
	cf.addYes(c, true)
	c.Flags().BoolVar(&cf.dryRun, "dry-run", false, "show what would "+what+" and how many; change nothing")
}

// addYes adds --yes alone to c, for a command with a --dry-run of its own
// (hasDryRun) or none.
func (cf *confirmation) addYes(c *cobra.Command, hasDryRun bool) {
	cf.hasDryRun = hasDryRun
	c.Flags().BoolVarP(&cf.yes, "yes", "y", false, "do not ask for confirmation (required when stdin is not a terminal)")
}

// ask asks the operator, on a terminal, to confirm action (which states
// the exact count and where); without a terminal it refuses, invalid input
// whose message ends "add --yes", unless --yes was passed. It returns false
// when the operator said no: nothing changed, not an error.
func (cf *confirmation) ask(c *cobra.Command, action string) (bool, error) {
	if cf.yes {
		return true, nil
	}
	in, ok := c.InOrStdin().(*os.File)
	if !ok || !isTerminal(in) {
		hint := ""
		if cf.hasDryRun {
			hint = " (--dry-run shows what would change)"
		}
		// No "Try: --help" after it: the message says what to do.
		return false, &InvalidInputError{Err: fmt.Errorf("refusing to %s without confirmation: stdin is not a terminal, so nothing was asked and nothing changed%s; add --yes", action, hint)}
	}
	fmt.Fprintf(c.ErrOrStderr(), "%s? [y/N] ", masked(action))
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read the answer: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	fmt.Fprintln(c.ErrOrStderr(), "nothing changed")
	return false, nil
}

// noArgs refuses arguments to a command that takes none.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usage(c, fmt.Errorf("%s takes no arguments, got %q", c.CommandPath(), args[0]))
	}
	return nil
}

// notFound is the error of an unknown ID: invalid input, exit 2.
func (d *dlqConn) notFound(c *cobra.Command, id string) error {
	return usage(c, fmt.Errorf("no DLQ entry with ID %q in namespace %q at %s", masked(id), d.namespace, d.target.printable()))
}

// withConn opens the DLQ, runs f and closes it.
func (g *dlqGlobal) withConn(c *cobra.Command, batch int, f func(ctx context.Context, d *dlqConn) error) error {
	d, err := g.open(c, batch)
	if err != nil {
		return err
	}
	defer d.close()
	return f(c.Context(), d)
}

// afterBulkCount, when set (by a spec), is called by a bulk move between
// its count and its move.
var afterBulkCount func()
