package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/drill"
	"github.com/faultline/faultline/reference/store"
)

// drillCleanupFlags are the flags of `drill cleanup`.
type drillCleanupFlags struct {
	redisURL    string
	namespace   string
	stale       bool
	force       bool
	dryRun      bool
	allowRemote bool
}

// newDrillCleanupCommand is `drill cleanup`: it removes what a drill that
// could not clean up after itself (SIGKILLed, its machine gone) left in
// Redis. The work is drill.CleanNamespace and drill.CleanStale.
func newDrillCleanupCommand() *cobra.Command {
	var f drillCleanupFlags
	c := &cobra.Command{
		Use:   "cleanup (--namespace NS | --stale) --redis-url URL",
		Short: "Remove the keys a drill left behind when it could not remove them itself (it was SIGKILLed, its machine went down)",
		Long: `Remove a drill's namespace that its drill left behind. A drill removes its keys on every
exit it lives through (the end, Ctrl-C, SIGTERM); after SIGKILL, or a machine that went
down, they stay, and the next drill of that namespace refuses to start. Every drill
claims its namespace first ({faultline:NS}:drill, naming its scenario, pid, host and
start), and cleanup removes a namespace only if that drill is gone: no such process on
this host, or another process of the same pid.

--namespace NS removes NS's keys (and its canary's, NS-canary). It refuses a namespace
whose drill still runs (stop it: it removes its keys itself on SIGTERM), and, unless
--force, one whose claim is of another host (or of an older faultline, which did not
record its host), or one that holds keys and no claim (it may not be a drill's).

--stale finds every drill claim in the database and removes each namespace whose drill
is gone, printing one line per namespace: removed, or kept and why. It never forces.

--dry-run says what would be removed and removes nothing. A Redis off loopback is
refused unless --allow-remote.

Exit codes: 0 done (or nothing to do); 2 invalid input, or the namespace refused;
3 an internal error; 4 Redis could not be reached.`,
		Example: `  faultline drill cleanup --stale --redis-url redis://127.0.0.1:6379/0
  faultline drill cleanup --namespace drill-worker-crash-1a2b3c4d --redis-url 127.0.0.1:6379
  faultline drill cleanup --stale --dry-run --redis-url 127.0.0.1:6379`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage(c, fmt.Errorf("drill cleanup takes no arguments, got %q (use --namespace NS or --stale)", masked(args[0])))
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			return runDrillCleanup(c.Context(), c, c.OutOrStdout(), f)
		},
	}
	addRedisFlag(c, &f.redisURL, "the Redis the drill ran on")
	fl := c.Flags()
	fl.StringVar(&f.namespace, "namespace", "", "remove this drill namespace, if its drill is gone")
	fl.BoolVar(&f.stale, "stale", false, "remove every drill namespace whose drill is gone")
	fl.BoolVar(&f.force, "force", false, "with --namespace: remove it even if its claim is of another host, of an older faultline, or missing (never one whose drill runs here)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "say what would be removed, and remove nothing")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "allow a Redis off loopback")
	return c
}

func runDrillCleanup(ctx context.Context, c *cobra.Command, w io.Writer, f drillCleanupFlags) error {
	switch {
	case f.stale && f.namespace != "":
		return usage(c, errors.New("drill cleanup takes --namespace NS or --stale, not both"))
	case !f.stale && f.namespace == "":
		return usage(c, errors.New("drill cleanup needs --namespace NS (one namespace) or --stale (every namespace whose drill is gone)"))
	case f.stale && f.force:
		return usage(c, errors.New("--force goes with --namespace NS only: --stale removes only namespaces whose drill is known to be gone"))
	}
	if f.namespace != "" {
		if err := (store.Config{Namespace: f.namespace}).Validate(); err != nil {
			return usage(c, fmt.Errorf("--namespace %q: takes 1-64 letters, digits, '-', '_' and '.'", masked(f.namespace)))
		}
	}
	rt, err := parseRedisURL(f.redisURL)
	if err != nil {
		return usage(c, err)
	}
	ns := f.namespace
	if f.stale {
		// --stale touches only the namespaces of drills known to be gone:
		// off loopback it needs no --namespace.
		ns = "(the stale ones)"
	}
	if err := drill.CheckRedisURL(rt.url, f.allowRemote, ns); err != nil {
		return usage(c, err)
	}
	host, err := drill.LocalHost()
	if err != nil {
		return err
	}
	client := rt.client()
	defer client.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = client.Ping(pctx).Err()
	cancel()
	if err != nil {
		return redisError(c, rt, err)
	}
	opts := drill.CleanupOptions{Host: host, Force: f.force, DryRun: f.dryRun}
	verb := "removed"
	if f.dryRun {
		verb = "would remove"
	}
	if f.namespace != "" {
		res, err := drill.CleanNamespace(ctx, client, f.namespace, opts)
		if errors.Is(err, drill.ErrRefused) {
			return &InvalidInputError{Err: fmt.Errorf("drill cleanup: %w", err), Hint: drill.CleanupHint(rt.url, f.allowRemote, res.ClaimStatus)}
		}
		if err != nil {
			return redisError(c, rt, err)
		}
		switch {
		case res.Keys == 0:
			fmt.Fprintf(w, "namespace %s on %s holds no keys: nothing to remove\n", masked(f.namespace), rt.printable())
		default:
			fmt.Fprintf(w, "%s namespace %s on %s (%s%s): %s\n", verb, masked(f.namespace), rt.printable(), keyCount(res.Keys), workDirText(res.Dir), masked(res.Describe()))
		}
		return nil
	}
	results, err := drill.CleanStale(ctx, client, opts)
	for _, r := range results {
		switch {
		case r.Removed:
			fmt.Fprintf(w, "%s %s (%s%s): %s\n", verb, masked(r.Namespace), keyCount(r.Keys), workDirText(r.Dir), masked(r.Describe()))
		case r.Keys == 0:
			fmt.Fprintf(w, "kept %s: it holds no keys\n", masked(r.Namespace))
		case r.Liveness == drill.Running:
			fmt.Fprintf(w, "kept %s (%s): %s\n", masked(r.Namespace), keyCount(r.Keys), masked(r.Describe()))
		default:
			fmt.Fprintf(w, "kept %s (%s): %s. %s\n", masked(r.Namespace), keyCount(r.Keys), masked(r.Describe()), masked(drill.CleanupHint(rt.url, f.allowRemote, r.ClaimStatus)))
		}
	}
	if err != nil {
		return redisError(c, rt, err)
	}
	if len(results) == 0 {
		fmt.Fprintf(w, "no drill claims on %s: nothing to remove\n", rt.printable())
	}
	return nil
}

// redisError is err of a Redis call to rt as the command returns it: a
// refused URL is invalid input, a lost connection *UnavailableError.
func redisError(c *cobra.Command, rt redisTarget, err error) error {
	var (
		ue      *UnavailableError
		refused *RedisRefusedError
	)
	switch {
	case errors.As(err, &refused):
		return usage(c, refused)
	case errors.As(err, &ue):
		return ue
	case redisRefusedUs(err):
		return usage(c, fmt.Errorf("--redis-url: Redis at %s refused: %w", rt.printable(), err))
	case connectionLost(err):
		return &UnavailableError{Service: "Redis", Addr: rt.addr, Op: "connect", Err: err}
	}
	return fmt.Errorf("drill cleanup on %s: %w", rt.printable(), err)
}

// keyCount is "1 key" or "N keys".
func keyCount(n int) string {
	if n == 1 {
		return "1 key"
	}
	return fmt.Sprintf("%d keys", n)
}

// workDirText names the work folder a cleanup removes with the keys.
func workDirText(dir string) string {
	if dir == "" {
		return ""
	}
	return " and its work folder " + masked(dir)
}
